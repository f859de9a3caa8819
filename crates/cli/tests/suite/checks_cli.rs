//! `braincode checks list|run` on real projects in temp dirs: what each ecosystem offers,
//! what `.braincode/checks.json` changes (only once the project is trusted; a broken file is
//! named, not fatal), and running the checks the current change selects.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{self, braincode, npm_registry};
use braincode_test_support::{TempHome, TempRepo};
use serde_json::Value;

fn names(list: &Value) -> Vec<String> {
    list["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

fn polyglot() -> TempRepo {
    let repo = TempRepo::new();
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    repo.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n",
    );
    repo.write(".gitignore", "target/\n");
    repo.write(
        "Makefile",
        "test:\n\t@echo make-test-ran\n\ncheck:\n\t@true\n",
    );
    repo.commit("calc");
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_shows_each_ecosystem_and_a_trusted_checks_file_edits_it() {
    let repo = polyglot();
    let home = TempHome::new();
    let list = |out: &run_harness::Output| -> Value {
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    };
    let out = braincode(&home, repo.path(), &["checks", "list", "--json"]).await;
    let found = names(&list(&out));
    for expected in ["cargo check", "cargo test", "make check", "make test"] {
        assert!(found.iter().any(|n| n == expected), "{expected}: {found:?}");
    }
    let human = braincode(&home, repo.path(), &["checks", "list"]).await;
    assert!(human.stdout.contains("cargo test"), "{}", human.stdout);

    // The repository's own checks.json: inert until the project is trusted.
    repo.write(
        ".braincode/checks.json",
        r#"{"disable": ["cargo test"], "timeoutMs": 5000}"#,
    );
    let out = braincode(&home, repo.path(), &["checks", "list", "--json"]).await;
    let untrusted = list(&out);
    assert!(names(&untrusted).contains(&"cargo test".to_string()));
    assert!(out.stderr.contains("braincode trust"), "{}", out.stderr);

    let trusted = braincode(&home, repo.path(), &["trust"]).await;
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let doc = list(&braincode(&home, repo.path(), &["checks", "list", "--json"]).await);
    assert!(!names(&doc).contains(&"cargo test".to_string()), "{doc:#}");
    assert_eq!(doc["timeoutMs"], 5000);

    // A broken file is named with its field; the user's checks still apply.
    repo.write(".braincode/checks.json", r#"{"strategy": "fast"}"#);
    braincode(&home, repo.path(), &["trust"]).await;
    let out = braincode(&home, repo.path(), &["checks", "list", "--json"]).await;
    let doc = list(&out);
    assert!(
        out.stderr.contains(".braincode/checks.json"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("strategy"), "{}", out.stderr);
    assert!(names(&doc).contains(&"cargo test".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_checks_what_the_change_selects_and_fails_with_the_output() {
    let repo = polyglot();
    let home = TempHome::new();
    // The project's checks are its own code: they run once the project is trusted.
    let trusted = braincode(&home, repo.path(), &["trust"]).await;
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    // Nothing changed: nothing selected.
    let out = braincode(&home, repo.path(), &["checks", "run"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("checks skipped"), "{}", out.stdout);

    // A Rust edit that breaks the test: the cargo checks run (not make), the test fails.
    repo.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n",
    );
    let out = braincode(&home, repo.path(), &["checks", "run", "--json"]).await;
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(summary["status"], "failed");
    assert_eq!(summary["patchKind"], "backend");
    let results = summary["results"].as_array().unwrap();
    let ran: Vec<&str> = results
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(ran, ["cargo check", "cargo test"], "{summary:#}");
    assert_eq!(results[0]["passed"], true);
    assert_eq!(results[1]["passed"], false);
    assert!(
        results[1]["outputTail"].as_str().unwrap().contains("adds"),
        "{summary:#}"
    );

    let human = braincode(&home, repo.path(), &["checks", "run"]).await;
    assert_eq!(human.code, 1);
    assert!(
        human.stdout.contains("✗ cargo test (exit 101"),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("✓ cargo check"), "{}", human.stdout);

    // --all runs every check, make included.
    let all = braincode(&home, repo.path(), &["checks", "run", "--all", "--json"]).await;
    let summary: Value = serde_json::from_str(&all.stdout).unwrap();
    let ran_make = summary["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "make test");
    assert!(ran_make, "{summary:#}");
}

/// `checks run --all --json`: its exit code and summary.
async fn run_all(home: &TempHome, repo: &TempRepo) -> (i32, Value) {
    let out = braincode(home, repo.path(), &["checks", "run", "--all", "--json"]).await;
    let summary: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|_| panic!("{}\n{}", out.stdout, out.stderr));
    (out.code, summary)
}

/// Three outcomes, not two: a check whose environment keeps it from running (a test
/// dependency not installed, no network in the sandbox) is "could not run", with the reason
/// and the fix, exit 3; only a failure of the code is "failed", exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_could_not_run_is_told_apart_from_one_that_failed() {
    let repo = TempRepo::new();
    let makefile = |test: &str| format!("check:\n\t@echo checked\n\ntest:\n\t@{test}\n");
    // A test suite whose conftest imports a dependency nobody installed.
    repo.write(
        "Makefile",
        &makefile("echo \"E   ModuleNotFoundError: No module named 'hypothesis'\" >&2; exit 4"),
    );
    repo.commit("tests need hypothesis");
    let home = TempHome::new();
    assert_eq!(braincode(&home, repo.path(), &["trust"]).await.code, 0);
    let (code, summary) = run_all(&home, &repo).await;
    assert_eq!(code, 3, "{summary:#}");
    assert_eq!(summary["status"], "could_not_run", "{summary:#}");
    let test = summary["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "make test")
        .unwrap();
    let cause = test["environment"].as_str().unwrap();
    assert!(cause.contains("`hypothesis` is not installed"), "{cause}");
    assert!(cause.contains("pip install"), "{cause}");
    assert!(
        summary["reason"]
            .as_str()
            .unwrap()
            .contains("could not run: make test"),
        "{summary:#}"
    );

    // The sandbox has no network: a test that needs a host could not run.
    repo.write(
        "Makefile",
        &makefile(
            "python3 -c \"import socket; socket.getaddrinfo('index.crates.io.invalid', 443)\"",
        ),
    );
    let (code, summary) = run_all(&home, &repo).await;
    assert_eq!(code, 3, "{summary:#}");
    let human = braincode(&home, repo.path(), &["checks", "run", "--all"]).await;
    assert!(
        human.stdout.contains("! make test could not run")
            && human.stdout.contains("needed the network"),
        "{}",
        human.stdout
    );

    // A failing assertion is the code's: failed, exit 1.
    repo.write(
        "Makefile",
        &makefile("echo 'AssertionError: 2 != 3' >&2; exit 1"),
    );
    let (code, summary) = run_all(&home, &repo).await;
    assert_eq!(code, 1, "{summary:#}");
    assert_eq!(summary["status"], "failed");
    let test = &summary["results"].as_array().unwrap()[1];
    assert!(test["environment"].is_null(), "{summary:#}");

    // And a passing suite passes.
    repo.write("Makefile", &makefile("echo ok"));
    let (code, summary) = run_all(&home, &repo).await;
    assert_eq!(code, 0, "{summary:#}");
    assert_eq!(summary["status"], "passed");
}

/// `checks run --fetch-deps` on a Node package whose dependency is not installed: `npm ci`
/// runs in the sandbox, its only way out the allowlist proxy, and fetches the package from the
/// (stand-in) registry on the allowlist; then the tests pass. Without it the check could not
/// run; a second `--fetch-deps` does not fetch again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_deps_installs_through_the_registry_allowlist_once() {
    let Some(host) = npm_registry::usable_host() else {
        return;
    };
    let (repo, port, hits) = npm_registry::project_needing_a_package(&host).await;
    let home = TempHome::new();
    home.write_settings(&serde_json::json!({"version": 1, "sandbox": {"networkAllow": [host]}}));
    assert_eq!(braincode(&home, repo.path(), &["trust"]).await.code, 0);

    // Without the dependencies: could not run, and nothing was fetched.
    let (code, summary) = run_all(&home, &repo).await;
    assert_eq!(code, 3, "{summary:#}");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);

    let fetch = |home: &TempHome, repo: &TempRepo| {
        let (home, path) = (home.path().to_path_buf(), repo.path().to_path_buf());
        async move {
            let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_braincode"))
                .args(["checks", "run", "--all", "--json", "--fetch-deps"])
                .current_dir(&path)
                .env("BRAINCODE_HOME", &home)
                .env("npm_config_update_notifier", "false")
                .output()
                .await
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let summary: Value = serde_json::from_str(&stdout)
                .unwrap_or_else(|_| panic!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
            (out.status.code().unwrap_or(-1), summary)
        }
    };
    let (code, summary) = fetch(&home, &repo).await;
    assert_eq!(code, 0, "{summary:#}");
    assert_eq!(summary["status"], "passed", "{summary:#}");
    assert_eq!(summary["setup"][0]["name"], "deps: npm ci", "{summary:#}");
    assert_eq!(summary["setup"][0]["passed"], true, "{summary:#}");
    let network = summary["network"].to_string();
    assert!(
        network.contains(&format!("allowed {host}:{port}")),
        "{network}"
    );
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);

    // Up to date: not fetched again.
    let (code, summary) = fetch(&home, &repo).await;
    assert_eq!(code, 0, "{summary:#}");
    assert!(
        summary["setup"][0]["outputTail"]
            .as_str()
            .unwrap()
            .contains("up to date"),
        "{summary:#}"
    );
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}
