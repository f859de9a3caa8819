//! One configuration loader: a `tools.json` that `braincode run` rejects, `braincode doctor`
//! reports invalid with the same message, and one doctor passes, a run accepts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{
    braincode, configure_one_model, doctor_check, hello_server, repo, run_json,
};
use braincode_test_support::TempHome;

/// tools.json texts a run must refuse, and what each message must name.
const REJECTED: [(&str, &str, &str); 4] = [
    (
        "a value of the wrong type",
        "{\"permissions\": {\"commands\": [\n  {\"pattern\": \"x\", \"policy\": \"sometimes\"}]}}",
        "permissions.commands[0].policy",
    ),
    (
        "an invalid glob",
        "{\"permissions\": {\"paths\": [\n  {\"pattern\": \"src/[a\", \"edit\": \"deny\"}]}}",
        "permissions.paths[0].pattern",
    ),
    (
        "a tool listed twice",
        "{\"tools\": [{\"name\": \"shell\"},\n  {\"name\": \"shell\"}]}",
        "tools[1].name",
    ),
    ("malformed JSON", "{\n  \"tools\": [\n", "tools.json:3:"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_rejects_what_run_rejects() {
    let server = hello_server().await;
    let repo = repo();
    for (what, text, names) in REJECTED {
        let home = TempHome::new();
        configure_one_model(&home, &server);
        home.write_file("tools.json", text);

        let run = braincode(&home, repo.path(), &["run", "--heuristic", "hello"]).await;
        let run_output = format!("{}\n{}", run.stdout, run.stderr);
        assert_ne!(run.code, 0, "{what}: the run went ahead:\n{run_output}");
        assert!(run_output.contains(names), "{what}: {run_output}");

        let (code, check) = doctor_check(&home, repo.path(), "tools").await;
        assert_eq!(code, 1, "{what}: {check}");
        assert_eq!(check["status"], "error", "{what}: {check}");
        let message = check["message"].as_str().unwrap();
        assert!(message.contains(names), "{what}: {message}");
        // One reader, one message: the run reports exactly what doctor reports.
        assert!(
            run_output.contains(message),
            "{what}: doctor said {message:?}, the run said:\n{run_output}"
        );
        assert!(
            check["fix"].as_str().unwrap().contains("tools.json"),
            "{what}: {check}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_json_doctor_passes_is_one_run_accepts() {
    let server = hello_server().await;
    let repo = repo();
    let home = TempHome::new();
    configure_one_model(&home, &server);
    // Legacy fields, a custom tool and rules of both kinds: lenient where the format is.
    home.write_file(
        "tools.json",
        r#"{"tools": [{"name": "shell", "requiresApproval": true}, {"name": "my_tool"}],
            "checks": {"timeoutMs": 5, "policies": {"frontend": {"enabled": false}}},
            "permissions": {"paths": [{"pattern": "docs/**", "edit": "allow"}],
                            "commands": [{"pattern": "make *", "policy": "ask", "review": "required"}]}}"#,
    );
    let (_, check) = doctor_check(&home, repo.path(), "tools").await;
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains("tools.json valid (2 tool entries, 1 path rule(s), 1 command rule(s))"),
        "{check}"
    );

    // run_json asserts the run answered (exit 0).
    let report = run_json(&home, repo.path(), &[], "hello", &[]).await;
    assert_ne!(report["status"], "failed", "{report:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tools_json_both_use_the_defaults() {
    let server = hello_server().await;
    let repo = repo();
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let (_, check) = doctor_check(&home, repo.path(), "tools").await;
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["message"].as_str().unwrap().contains("not present"),
        "{check}"
    );
    // run_json asserts the run answered (exit 0).
    let report = run_json(&home, repo.path(), &[], "hello", &[]).await;
    assert_ne!(report["status"], "failed", "{report:#}");
}
