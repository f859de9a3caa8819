//! The BrainPet's model over real HTTP: the brain's `pet` chain is called with the snapshot,
//! its JSON becomes the status, its tokens land in the session journal with their cost, and
//! every failure (bad reply, error status, silence, no pet model) is an error the TUI turns
//! into its deterministic status.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use braincode_config::{Home, read_journal};
use braincode_protocol::{ModelPricing, Phase, Record, Role, SessionId, Usage};
use braincode_runtime::{PetModel, PetSnapshot};
use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, scripted_model_entry,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const PET_JSON: &str =
    r#"{"status": "reading auth.rs", "lines": ["one file so far", "no surprises yet"]}"#;

fn snapshot() -> PetSnapshot {
    PetSnapshot {
        items: vec![
            "user: fix the login bug".into(),
            "tool read_file src/auth.rs: running".into(),
        ],
        state: "running tools".into(),
        queued: 1,
        active_tools: vec!["read_file".into()],
        active_workers: vec!["security: check the token handling".into()],
    }
}

/// A home whose brain `petty` (the offline brain with a remote pet) calls `server` for the
/// pet: first `pet-a`, then `pet-b` as its fallback.
fn home_with_pet(server: &ScriptedServer) -> TempHome {
    let home = TempHome::new();
    let mut a = scripted_model_entry("scripted/pet-a", &server.base_url());
    a.pricing = Some(ModelPricing {
        input: 1.0,
        output: 4.0,
        cache_read: None,
        cache_write: None,
    });
    let b = scripted_model_entry("scripted/pet-b", &server.base_url());
    home.write_models(&[a, b]);
    home.write_brains(&json!({"brains": [{
        "id": "petty",
        "extends": "brain",
        "roles": {"pet": {"modelId": "scripted/pet-a", "fallbackModelIds": ["scripted/pet-b"]}}
    }]}));
    home
}

fn pet_records(home: &Home, session: &SessionId) -> Vec<braincode_protocol::TokenUsage> {
    let path = home.session_path(session);
    if !path.exists() {
        return Vec::new();
    }
    read_journal(&path)
        .unwrap()
        .entries
        .into_iter()
        .filter_map(|e| match e.record {
            Record::TokenUsage(usage) => Some(usage),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_pet_model_answers_and_its_tokens_are_journaled_with_their_cost() {
    let usage = Usage {
        input: 1_000,
        output: 50,
        total: 1_050,
        ..Usage::default()
    };
    let server = ScriptedServer::start(Script::replies([Reply::text(format!(
        "```json\n{PET_JSON}\n```"
    ))
    .with_usage(usage)]))
    .await;
    let home = home_with_pet(&server);
    let home = Home::at(home.path());
    let pet = PetModel::load(&home, Some("petty"), None).unwrap();
    assert_eq!(pet.model_ids(), ["scripted/pet-a", "scripted/pet-b"]);
    let session = SessionId::new("pet-session-1").unwrap();

    let reply = pet
        .ask(&snapshot(), &session, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.status, "reading auth.rs");
    assert_eq!(reply.lines, ["one file so far", "no surprises yet"]);

    // What the model was told: the pet prompt, the snapshot, the small budget.
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert!(request.system_prompt().contains("status companion"));
    let told = request.last_user_text();
    assert!(told.contains("user: fix the login bug"), "{told}");
    assert!(told.contains("Active tools: read_file"), "{told}");
    assert!(told.contains("Queued prompts: 1"), "{told}");
    assert!(request.tool_names().is_empty());
    assert_eq!(request.body["max_tokens"], json!(160));
    assert_eq!(request.body["temperature"], json!(0.2));

    let records = pet_records(&home, &session);
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record.role, Some(Role::Pet));
    assert_eq!(record.phase, Some(Phase::Pet));
    assert_eq!(record.brain_id.as_deref(), Some("petty"));
    assert_eq!(record.model_id.as_deref(), Some("scripted/pet-a"));
    assert_eq!(record.usage.input, 1_000);
    // 1,000 × $1/M + 50 × $4/M = $0.0012.
    assert_eq!(record.cost_micro_usd, Some(1_200));
}

#[tokio::test]
async fn a_failing_pet_model_falls_back_and_a_bad_reply_is_an_error() {
    let server = ScriptedServer::start(
        Script::new()
            .always(
                Matcher::model("pet-a"),
                Reply::http_error(
                    400,
                    r#"{"error":{"message":"model overloaded","type":"invalid_request_error"}}"#,
                ),
            )
            .when(
                Matcher::model("pet-b"),
                [Reply::text("I am looking at files."), Reply::text(PET_JSON)],
            ),
    )
    .await;
    let home = home_with_pet(&server);
    let home = Home::at(home.path());
    let pet = PetModel::load(&home, Some("petty"), None).unwrap();
    let session = SessionId::new("pet-session-2").unwrap();
    let cancel = CancellationToken::new();

    let err = pet.ask(&snapshot(), &session, &cancel).await.unwrap_err();
    assert!(
        err.contains("scripted/pet-b") && err.contains("not JSON"),
        "{err}"
    );
    let reply = pet.ask(&snapshot(), &session, &cancel).await.unwrap();
    assert_eq!(reply.status, "reading auth.rs");
    let tried: Vec<_> = server
        .chat_requests()
        .iter()
        .map(|r| r.model().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        tried,
        ["pet-a", "pet-b", "pet-a", "pet-b"],
        "the chain is tried in order on every call"
    );
    assert!(
        !cancel.is_cancelled(),
        "the caller's token is never fired by the pet"
    );
}

#[tokio::test]
async fn a_silent_pet_model_times_out_and_is_stopped() {
    let server = ScriptedServer::start(Script::replies([Reply::stall()])).await;
    let home = home_with_pet(&server);
    let home = Home::at(home.path());
    let pet = PetModel::load(&home, Some("petty"), None)
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    let session = SessionId::new("pet-session-3").unwrap();
    let started = Instant::now();
    let err = pet
        .ask(&snapshot(), &session, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.contains("did not answer within 0.3 s"), "{err}");
    // A guard against hanging, not a timing assertion.
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(pet_records(&home, &session).is_empty());
}

#[test]
fn the_offline_brain_has_no_pet_model_and_says_why() {
    let home = TempHome::new();
    let home = Home::at(home.path());
    let err = PetModel::load(&home, None, None).unwrap_err();
    assert!(err.0.contains("no usable remote pet model"), "{}", err.0);
    let err = PetModel::load(&home, Some("no-such-brain"), None).unwrap_err();
    assert!(err.0.contains("no-such-brain"), "{}", err.0);
}

#[test]
fn the_keyed_presets_spend_nothing_on_the_pet() {
    let home = TempHome::new();
    home.write_auth_keys(&[("openai", "sk-test"), ("anthropic", "sk-ant-test")]);
    let home = Home::at(home.path());
    for brain in ["openai", "anthropic"] {
        let err = PetModel::load(&home, Some(brain), None).unwrap_err();
        assert!(
            err.0.contains("no usable remote pet model"),
            "{brain}: {}",
            err.0
        );
    }
}
