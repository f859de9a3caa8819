//! A model server already running on this machine is found and used with no configuration:
//! a stand-in Ollama on 127.0.0.1:11434 (its documented `GET /api/tags` listing and its
//! OpenAI-compatible chat endpoint) answers the first run, which says so; `models discover`
//! and `doctor` name it. Alone in its test binary: while it listens, any run without a key
//! would use it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::process::Command;

use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo, scripted_model_entry,
};

fn braincode(home: &TempHome, cwd: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args(args)
        .current_dir(cwd)
        .env("BRAINCODE_HOME", home.path())
        .env("BRAINCODE_MODEL_CACHE", home.path().join("no-model-cache"))
        .env_remove("BRAINCODE_LOCAL_SERVERS")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_ollama_is_found_and_answers_the_first_run() {
    let script = Script::new().always(
        Matcher::model("qwen2.5-coder:7b"),
        Reply::text("Hello from the model on this machine."),
    );
    let Ok(server) = ScriptedServer::start_at("127.0.0.1:11434", script).await else {
        eprintln!("skipped: 127.0.0.1:11434 is taken (a real Ollama?)");
        return;
    };
    let home = TempHome::new();
    let repo = TempRepo::new();
    repo.write("README.md", "# demo\n");
    repo.commit("demo");

    let (code, stdout, stderr) = braincode(&home, repo.path(), &["run", "hello"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Hello from the model on this machine."),
        "{stdout}\n{stderr}"
    );
    let said = format!("{stdout}\n{stderr}");
    assert!(said.contains("local-server"), "{said}");
    assert!(said.contains("Ollama answers on 127.0.0.1:11434"), "{said}");
    let chats = server.chat_requests();
    assert!(!chats.is_empty());
    assert!(chats.iter().all(|r| r.model() == Some("qwen2.5-coder:7b")));
    // The journal says which brain and model answered.
    let sessions = std::fs::read_dir(home.path().join("sessions")).unwrap();
    let journal: String = sessions
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(journal.contains(r#""id":"local-server""#), "{journal}");
    assert!(journal.contains("ollama/qwen2.5-coder:7b"), "{journal}");

    let (code, stdout, _) = braincode(&home, repo.path(), &["models", "discover"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("Ollama on 127.0.0.1:11434"), "{stdout}");
    assert!(
        stdout.contains("ollama/qwen2.5-coder:7b  ← used"),
        "{stdout}"
    );
    let (_, stdout, stderr) = braincode(&home, repo.path(), &["doctor"]);
    assert!(
        format!("{stdout}{stderr}").contains("Ollama answers on 127.0.0.1:11434"),
        "{stdout}\n{stderr}"
    );

    // A brain named in settings.json whose every model is in the catalogue needs no server
    // of this machine: the run does not probe (the stand-in Ollama gets no request at all).
    let remote = ScriptedServer::start(Script::new().always(
        Matcher::model("remote"),
        Reply::text("From the named brain."),
    ))
    .await;
    home.write_models(&[scripted_model_entry("scripted/remote", &remote.base_url())]);
    let on_remote = serde_json::json!({"modelId": "scripted/remote"});
    let roles: serde_json::Map<String, serde_json::Value> = (braincode_protocol::Role::ALL.iter())
        .map(|role| (role.as_str().to_string(), on_remote.clone()))
        .collect();
    home.write_brains(&serde_json::json!({"brains": [{
        "id": "named", "extends": "brain", "name": "Named",
        "planner": on_remote, "roles": roles
    }]}));
    home.write_settings(&serde_json::json!({"defaultBrainId": "named"}));
    let seen_by_ollama = server.requests().len();
    let (code, stdout, stderr) = braincode(&home, repo.path(), &["run", "hello"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("From the named brain."),
        "{stdout}\n{stderr}"
    );
    assert_eq!(
        server.requests().len(),
        seen_by_ollama,
        "the run probed this machine's model servers though its brain needs none"
    );
    // Asked for by name, the server's brain is still found (the probe runs then).
    let (code, stdout, stderr) = braincode(
        &home,
        repo.path(),
        &["run", "--brain", "local-server", "hello"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Hello from the model on this machine."),
        "{stdout}\n{stderr}"
    );

    // Turned off, the probe finds nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args(["models", "discover"])
        .env("BRAINCODE_HOME", home.path())
        .env("BRAINCODE_LOCAL_SERVERS", "0")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no local model server answers"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
