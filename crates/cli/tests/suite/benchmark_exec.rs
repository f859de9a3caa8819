//! `braincode benchmark exec` through the binary, in mock mode (a scripted model; the checks
//! run for real): the built-in Rust, Python and Node fixtures pass in temporary repositories
//! that are removed afterwards (or kept with `--keep`), a wrong expectation fails with what
//! was expected and got, and `--compare` ranks two brains whose models cost differently.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{BRAIN_ROLES, braincode_env, repo};
use braincode_test_support::TempHome;
use serde_json::{Value, json};

fn leftovers(tmp: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("braincode-benchmark-"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_suite_passes_in_mock_mode_with_real_checks() {
    let home = TempHome::new();
    let repo = repo();
    let tmp = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmp.path().to_str().unwrap())];
    let out = braincode_env(&home, repo.path(), &["benchmark", "exec", "--json"], &env).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 5);
    let languages: Vec<&str> = runs
        .iter()
        .map(|r| r["language"].as_str().unwrap())
        .collect();
    for language in ["rust", "python", "node"] {
        assert!(languages.contains(&language), "{languages:?}");
    }
    let by_id = |id: &str| runs.iter().find(|r| r["task"] == id).unwrap();
    // The Rust fix made `cargo test` pass for real; the auth change brought security in.
    assert_eq!(by_id("rust-failing-test")["checksStatus"], "passed");
    assert_eq!(
        by_id("rust-failing-test")["changedFiles"],
        json!(["src/lib.rs"])
    );
    assert_eq!(by_id("node-auth-change")["checksStatus"], "passed");
    assert_eq!(by_id("python-review-only")["changedFiles"], json!([]));
    for run in runs {
        assert!(run["tokens"].as_u64().unwrap() > 0, "{run}");
        assert!(run["tokensByPhase"]["primary"].as_u64().is_some(), "{run}");
    }
    assert!(
        leftovers(tmp.path()).is_empty(),
        "{:?}",
        leftovers(tmp.path())
    );
    let reports: Vec<String> = std::fs::read_dir(home.path().join("benchmarks/reports"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        reports.iter().any(|r| r.ends_with("-exec.md")),
        "{reports:?}"
    );
    assert!(
        reports.iter().any(|r| r.ends_with("-exec.json")),
        "{reports:?}"
    );
    // The benchmark left no session in the user's list.
    assert!(!home.path().join("sessions").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_expectation_fails_clearly_and_keep_keeps_the_repository() {
    let home = TempHome::new();
    let repo = repo();
    let fixtures = tempfile::tempdir().unwrap();
    let dir = fixtures.path().join("wrong-files");
    std::fs::create_dir_all(dir.join("project")).unwrap();
    std::fs::write(dir.join("project/notes.md"), "# Notes\n").unwrap();
    std::fs::write(
        dir.join("benchmark.json"),
        json!({"id": "wrong-files", "title": "t", "task": "Update notes.md with a todo list",
            "expected": {"changedFiles": ["other.md"], "checksStatus": "skipped",
                "reviewDecision": "approved"},
            "mock": {"edits": [{"path": "notes.md", "content": "# Notes\n\n- [ ] a\n"}],
                "answer": "done"}})
        .to_string(),
    )
    .unwrap();
    let out = braincode_env(
        &home,
        repo.path(),
        &[
            "benchmark",
            "exec",
            "wrong-files",
            "--keep",
            "--fixtures",
            fixtures.path().to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert!(
        out.stdout
            .contains("changed_files: expected [other.md], got [notes.md]"),
        "{}",
        out.stdout
    );
    let out = braincode_env(
        &home,
        repo.path(),
        &[
            "benchmark",
            "exec",
            "wrong-files",
            "--keep",
            "--json",
            "--fixtures",
            fixtures.path().to_str().unwrap(),
        ],
        &[],
    )
    .await;
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    let kept = summary["runs"][0]["keptAt"].as_str().unwrap();
    let notes = std::fs::read_to_string(std::path::Path::new(kept).join("repo/notes.md")).unwrap();
    assert!(notes.contains("- [ ] a"));
    std::fs::remove_dir_all(kept).unwrap();

    let out = braincode_env(&home, repo.path(), &["benchmark", "exec", "nope"], &[]).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("Unknown benchmark task id(s): nope"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_ranks_the_brain_that_does_as_well_for_less_first() {
    let home = TempHome::new();
    let repo = repo();
    let model = |id: &str, input: f64, output: f64| {
        json!({"id": id, "provider": id.split('/').next().unwrap(), "modelId": "m",
            "api": "openai-completions", "baseUrl": "http://127.0.0.1:9/v1",
            "contextWindow": 128000, "supportsTools": true,
            "pricing": {"input": input, "output": output}})
    };
    home.write_json(
        "models.json",
        &json!({"models": [model("cheap/m", 0.1, 0.4), model("dear/m", 10.0, 30.0)]}),
    );
    let brain = |id: &str, model: &str| {
        let roles: serde_json::Map<String, Value> = BRAIN_ROLES
            .iter()
            .map(|r| {
                (
                    (*r).to_string(),
                    json!({"modelId": model, "fallbackModelIds": []}),
                )
            })
            .collect();
        json!({"id": id, "extends": "brain", "planner": {"modelId": model}, "roles": roles})
    };
    home.write_json(
        "brains.json",
        &json!({"brains": [brain("cheap", "cheap/m"), brain("dear", "dear/m")]}),
    );
    let out = braincode_env(
        &home,
        repo.path(),
        &[
            "benchmark",
            "exec",
            "python-readme-edit",
            "python-review-only",
            "--compare",
            "dear",
            "cheap",
            "--json",
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    let ranking = summary["ranking"].as_array().unwrap();
    assert_eq!(ranking[0]["brain"], "cheap", "{summary:#}");
    assert_eq!(ranking[0]["succeeded"], 2);
    assert_eq!(ranking[1]["succeeded"], 2);
    let (cheap, dear) = (
        ranking[0]["costUsd"].as_f64().unwrap(),
        ranking[1]["costUsd"].as_f64().unwrap(),
    );
    assert!(cheap > 0.0 && dear > 50.0 * cheap, "{cheap} vs {dear}");
    // The table says so.
    let out = braincode_env(
        &home,
        repo.path(),
        &[
            "benchmark",
            "exec",
            "python-review-only",
            "--compare",
            "dear",
            "cheap",
        ],
        &[],
    )
    .await;
    assert!(
        out.stdout.contains("cheap did the same tasks for less"),
        "{}",
        out.stdout
    );
}
