//! Compaction of a long agent loop, end to end through the binary: a scripted primary on a
//! model with a small context window reads large files until its conversation is compacted,
//! survives one "context length exceeded" from the provider with a harder compaction, and
//! still ends with one answer. The request and the system prompt reach every later call
//! unchanged; the summary is a marked block of the system prompt, never a user turn.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{self, BRAIN_ROLES, braincode, journal};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo};
use serde_json::{Value, json};

const TASK: &str = "Summarise the data files in data/";

fn read(path: &str) -> Reply {
    Reply::tool_call("read_file", json!({"path": path}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_loop_is_compacted_survives_an_overflow_and_answers_once() {
    let repo = TempRepo::new();
    for n in 0..8 {
        let body: String = (0..300)
            .map(|line| format!("setting_{n}_{line} = value {line}\n"))
            .collect();
        repo.write(&format!("data/file{n}.conf"), &body);
    }
    repo.commit("data");
    let overflow = Reply::http_error(
        400,
        r#"{"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}"#,
    );
    // The provider overflows early (it counts differently); later the estimate triggers.
    let mut replies: Vec<Reply> = (0..2)
        .map(|n| read(&format!("data/file{n}.conf")))
        .collect();
    replies.push(overflow);
    replies.extend((2..8).map(|n| read(&format!("data/file{n}.conf"))));
    replies.push(Reply::text("Eight configuration files, one per service."));
    let server = ScriptedServer::start(Script::new().when(Matcher::model("small"), replies)).await;

    let home = TempHome::new();
    let mut model = braincode_test_support::scripted_model_entry("test/small", &server.base_url());
    model.context_window = 12_000;
    home.write_models(&[model]);
    let roles: serde_json::Map<String, Value> = BRAIN_ROLES
        .iter()
        .map(|role| {
            (
                (*role).to_string(),
                json!({"modelId": "test/small", "fallbackModelIds": []}),
            )
        })
        .collect();
    home.write_brains(&json!({"brains": [{
        "id": "test", "extends": "brain", "name": "Test brain",
        "planner": {"modelId": "test/small", "fallbackModelIds": []},
        "roles": roles,
    }]}));
    // PreCompact/PostCompact hooks log their payloads (hooks run in the OS sandbox: the log
    // directory is made writable for them).
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("compact.jsonl");
    let logger = format!(
        "tr -d '\\n' >> '{}'; echo >> '{}'",
        log.display(),
        log.display()
    );
    home.write_json(
        "hooks.json",
        &json!({"hooks": {
            "PreCompact": [{"matcher": "auto", "hooks": [{"command": logger, "trusted": true}]}],
            "PostCompact": [{"hooks": [{"command": logger, "trusted": true}]}]
        }}),
    );
    home.write_settings(&json!({
        "version": 1, "mode": "auto", "defaultBrainId": "test",
        "sandbox": {"writablePaths": [logs.path().display().to_string()]}
    }));

    let out = braincode(&home, repo.path(), &["run", "--json", "--heuristic", TASK]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        report["modelSummary"],
        "Eight configuration files, one per service."
    );

    let entries = journal(&home, report["sessionId"].as_str().unwrap());
    let compactions: Vec<&Value> = entries
        .iter()
        .filter(|r| r["type"] == "compaction")
        .collect();
    assert!(
        compactions
            .iter()
            .any(|c| c["trigger"] == "auto" && c["applied"] == true),
        "{compactions:#?}"
    );
    let overflow = compactions
        .iter()
        .find(|c| c["trigger"] == "overflow")
        .expect("the overflow was answered with a compaction");
    assert_eq!(overflow["applied"], true, "{overflow:#}");
    for compaction in &compactions {
        if compaction["applied"] == true {
            assert!(
                compaction["tokensAfter"].as_u64() < compaction["tokensBefore"].as_u64(),
                "{compaction:#}"
            );
            assert!(
                compaction["summary"]
                    .as_str()
                    .unwrap()
                    .contains("read_file(data/file0.conf)")
            );
        }
    }

    // Each applied compaction fired PreCompact then PostCompact, the latter with the summary.
    let fired: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let applied = compactions.iter().filter(|c| c["applied"] == true).count();
    assert_eq!(fired.len(), 2 * applied, "{fired:#?}");
    for pair in fired.chunks(2) {
        assert_eq!(pair[0]["hook_event_name"], "PreCompact");
        assert_eq!(pair[0]["trigger"], "auto");
        assert_eq!(pair[0]["agent_type"], report["routing"]["primaryRole"]);
        assert_eq!(pair[1]["hook_event_name"], "PostCompact");
        assert!(
            pair[1]["compact_summary"]
                .as_str()
                .unwrap()
                .contains("read_file(data/file0.conf)")
        );
    }

    // Every call kept the request and the role prompt; compacted calls carry the marked
    // summary in the system prompt and no summary in any user turn.
    let requests = server.chat_requests();
    let first_system = requests[0].system_prompt();
    let mut summarised = 0;
    for request in &requests {
        assert!(request.all_text().contains(TASK));
        let system = request.system_prompt();
        assert!(system.starts_with(&first_system), "the role prompt changed");
        if system.contains("## Summary of earlier turns") {
            summarised += 1;
        }
        for text in request.texts_of("user") {
            assert!(!text.contains("Summary of earlier turns"), "{text}");
        }
    }
    assert!(summarised > 0);
    let last = requests.last().unwrap();
    assert!(
        last.all_text().len() < 60_000,
        "the last request still carries every file: {} bytes",
        last.all_text().len()
    );

    // A replay compacts where the run did, serves the hooks' results and runs none.
    let session = report["sessionId"].as_str().unwrap();
    run_harness::replay_check(&home, repo.path(), session, &[]).await;
    let after = std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(after, fired.len(), "a replay ran a compaction hook");
}
