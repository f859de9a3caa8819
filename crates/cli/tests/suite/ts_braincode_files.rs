//! A user of the TypeScript Braincode copies their `~/.braincode`: its brains.json,
//! models.json, settings.json, tools.json and hooks.json (written here from the reference's
//! schemas) load unchanged, are migrated in memory, run, and `doctor --migrate` rewrites them
//! after a backup. And with no brain chosen, a provider key found picks its brain.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{self, BRAIN_ROLES, braincode, braincode_env, hello_server, repo};
use braincode_test_support::{TempHome, scripted_model_entry};
use serde_json::{Value, json};

/// A TypeScript Braincode home whose roles all use one scripted model.
fn typescript_home(base_url: &str) -> TempHome {
    let home = TempHome::new();
    let scripted = serde_json::to_value(scripted_model_entry("test/any", base_url)).unwrap();
    let mut ts_model = json!({"id": "test/any", "provider": "scripted", "modelId": "any",
        "name": "Scripted", "api": "openai-completions", "baseUrl": scripted["baseUrl"],
        "contextWindow": 128000, "supportsTools": true, "supportsVision": false,
        "supportsImageGeneration": false, "builtIn": false, "defaultThinkingLevel": "off"});
    ts_model["headers"] = json!({});
    home.write_json(
        "models.json",
        &json!({"models": [
            {"id": "anthropic/claude-sonnet-4-6", "provider": "anthropic",
             "modelId": "claude-sonnet-4-6", "name": "Claude Sonnet 4.6", "builtIn": true,
             "contextWindow": 200000, "supportsTools": true, "defaultThinkingLevel": "medium"},
            {"id": "openai/gpt-image-2", "provider": "openai", "modelId": "gpt-image-2",
             "name": "GPT Image 2", "api": "openai-images", "baseUrl": "https://api.openai.com/v1",
             "builtIn": true, "contextWindow": 32000, "supportsTools": false,
             "supportsVision": false, "supportsImageGeneration": true,
             "defaultThinkingLevel": "off"},
            {"id": "pi/agent", "provider": "pi", "modelId": "agent", "name": "Pi",
             "api": "pi-messages", "contextWindow": 100000, "supportsTools": true},
            ts_model
        ], "providers": [{"provider": "scripted", "baseUrl": base_url}]}),
    );
    // The TypeScript default brain: id `default`, legacy roles, no `pet` or `imageMaker`.
    let mut roles: serde_json::Map<String, Value> = BRAIN_ROLES
        .iter()
        .filter(|r| !matches!(**r, "pet" | "imageMaker"))
        .map(|r| {
            (
                (*r).to_string(),
                json!({"modelId": "test/any", "fallbackModelIds": [], "thinkingLevel": "low"}),
            )
        })
        .collect();
    for legacy in ["coding", "fastReply", "research"] {
        roles.insert(
            legacy.into(),
            json!({"modelId": "test/any", "thinkingLevel": "low"}),
        );
    }
    home.write_json(
        "brains.json",
        &json!({"brains": [{
            "id": "default", "name": "Default Brain", "description": "My brain",
            "planner": {"modelId": "test/any", "fallbackModelIds": [], "thinkingLevel": "high"},
            "roles": roles,
            "routing": {"maxParallelAgents": 2, "preferCheapModelForSimpleTasks": true,
                "escalateOnUncertainty": true, "requireReviewForFileEdits": true},
            "context": {"maxInputTokens": 120000, "compaction": "auto", "isolation": "strict"}
        }]}),
    );
    home.write_json(
        "settings.json",
        &json!({"version": 1, "mode": "auto", "theme": "dark",
            "configServer": {"host": "127.0.0.1", "port": 14580},
            "defaultBrainId": "default", "features": {"hooks": true, "dynamicDispatch": true}}),
    );
    home.write_json(
        "tools.json",
        &json!({"tools": [
            {"name": "read_file", "permissions": "read", "risk": "low", "defaultEnabled": true,
             "approvalPolicy": "allow", "enabled": true},
            {"name": "exec_command", "permissions": "execute", "risk": "high",
             "defaultEnabled": true, "approvalPolicy": "confirm-dangerous", "enabled": true}
        ], "permissions": {
            "paths": [{"pattern": "secrets/**", "edit": "deny", "reason": "no secrets"}],
            "commands": [{"pattern": "rm -rf", "policy": "deny"}]
        }}),
    );
    home.write_json(
        "hooks.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "exec_command",
            "hooks": [{"type": "command", "command": "true", "timeout": 5}]}]}}),
    );
    home
}

fn checks(report: &Value, id: &str) -> Vec<Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == id)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_files_load_migrate_run_and_are_rewritten_on_request() {
    let server = hello_server().await;
    let home = typescript_home(&server.base_url());
    let repo = repo();
    let originals: Vec<(String, Vec<u8>)> = ["models.json", "brains.json"]
        .iter()
        .map(|name| {
            (
                name.to_string(),
                std::fs::read(home.path().join(name)).unwrap(),
            )
        })
        .collect();

    // Doctor: nothing is an error; the migration and the unused models are named.
    let out = braincode(&home, repo.path(), &["doctor", "--json"]).await;
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let errors: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let migration = checks(&report, "migration");
    assert_eq!(migration.len(), 2, "{migration:#?}");
    let text = serde_json::to_string(&migration).unwrap();
    assert!(
        text.contains("dropped the legacy role \\\"coding\\\""),
        "{text}"
    );
    assert!(text.contains("added the pet role"), "{text}");
    let unused = serde_json::to_string(&checks(&report, "models")).unwrap();
    assert!(
        !unused.contains("openai/gpt-image-2") && unused.contains("pi/agent"),
        "{unused}"
    );
    // The image model is kept; the migrated imageMaker (derived from rush) has none bound.
    let image_maker = serde_json::to_string(&checks(&report, "imageMaker")).unwrap();
    assert!(
        image_maker.contains("imageMaker cannot generate images"),
        "{image_maker}"
    );

    // The catalogue lists what it cannot use instead of failing.
    let out = braincode(&home, repo.path(), &["models", "list", "--json"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<&str> = list["unsupported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["pi/agent"]);
    let image = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "openai/gpt-image-2")
        .unwrap();
    assert_eq!(image["api"], "openai-images");
    let claude = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "anthropic/claude-sonnet-4-6")
        .unwrap();
    assert_eq!(claude["api"], "anthropic-messages");

    // A run on the migrated brain answers.
    let out = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", "hello"],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let run: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(run["brain"]["id"], "brain");
    assert_eq!(run["modelSummary"], "hello!");
    // Reading never rewrote the user's files.
    for (name, bytes) in &originals {
        assert_eq!(
            &std::fs::read(home.path().join(name)).unwrap(),
            bytes,
            "{name}"
        );
    }

    // --migrate: each file rewritten after a byte-for-byte backup; nothing pending after.
    let out = braincode(&home, repo.path(), &["doctor", "--migrate"]).await;
    assert!(out.stdout.contains("migrated"), "{}", out.stdout);
    for (name, bytes) in &originals {
        let backup = std::fs::read_dir(home.path())
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{name}.bak-"))
            })
            .unwrap_or_else(|| panic!("no backup of {name}"));
        assert_eq!(&std::fs::read(backup.path()).unwrap(), bytes, "{name}");
    }
    let brains: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("brains.json")).unwrap())
            .unwrap();
    assert_eq!(brains["brains"][0]["id"], "brain");
    assert!(brains["brains"][0]["roles"].get("coding").is_none());
    let out = braincode(&home, repo.path(), &["doctor", "--json"]).await;
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(checks(&report, "migration").is_empty(), "{report:#}");
    let out = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", "hello"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_found_picks_its_providers_brain_and_says_so() {
    let home = TempHome::new();
    let repo = repo();
    let plan = |out: &run_harness::Output| -> Value {
        assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let dry = ["run", "--dry-run", "--heuristic", "--json", "hello"];

    // No key: the offline brain, and the run says why.
    let out = braincode_env(&home, repo.path(), &dry, &[]).await;
    assert_eq!(plan(&out)["brainId"], "brain");
    let out = braincode_env(
        &home,
        repo.path(),
        &["run", "--dry-run", "--heuristic", "hello"],
        &[],
    )
    .await;
    assert!(
        out.stderr.contains("no OpenAI or Anthropic key found"),
        "{}",
        out.stderr
    );

    // An OpenAI key in the environment.
    let openai = [("OPENAI_API_KEY", "sk-test-openai")];
    let out = braincode_env(&home, repo.path(), &dry, &openai).await;
    assert_eq!(plan(&out)["brainId"], "openai");
    let out = braincode_env(
        &home,
        repo.path(),
        &["run", "--dry-run", "--heuristic", "hello"],
        &openai,
    )
    .await;
    assert!(
        out.stderr
            .contains("using brain \"openai\": OPENAI_API_KEY is set"),
        "{}",
        out.stderr
    );
    let out = braincode_env(&home, repo.path(), &["doctor", "--json"], &openai).await;
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let brain = serde_json::to_string(&checks(&report, "brain")).unwrap();
    assert!(brain.contains("runs use brain \\\"openai\\\""), "{brain}");
    assert!(brain.contains("OPENAI_API_KEY is set"), "{brain}");

    // An Anthropic key in auth.json; with both, Anthropic's brain, and the other is named.
    home.write_auth_keys(&[("anthropic", "sk-ant-test")]);
    let out = braincode_env(&home, repo.path(), &dry, &[]).await;
    assert_eq!(plan(&out)["brainId"], "anthropic");
    let out = braincode_env(
        &home,
        repo.path(),
        &["run", "--dry-run", "--heuristic", "hello"],
        &openai,
    )
    .await;
    assert!(
        out.stderr.contains(
            "using brain \"anthropic\": a key in auth.json (and OPENAI_API_KEY is set: `--brain openai`"
        ),
        "{}",
        out.stderr
    );

    // A brain the user chose wins over any key: --brain, or defaultBrainId in settings.json.
    let out = braincode_env(
        &home,
        repo.path(),
        &[
            "run",
            "--dry-run",
            "--heuristic",
            "--json",
            "--brain",
            "brain",
            "hello",
        ],
        &openai,
    )
    .await;
    assert_eq!(plan(&out)["brainId"], "brain");
    home.write_settings(&json!({"version": 1, "defaultBrainId": "brain"}));
    let out = braincode_env(&home, repo.path(), &dry, &openai).await;
    assert_eq!(plan(&out)["brainId"], "brain");
}
