//! `braincode doctor --checks` through the binary, on real repositories: each check the fix
//! loop would run, with whether its program is found and whether the project is trusted to
//! run it — and nothing of the repository is run to find out (its Makefile and package.json
//! scripts would leave marker files).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use crate::run_harness::{Output, braincode, braincode_env};
use braincode_test_support::{TempHome, TempRepo};
use serde_json::Value;

/// A repository whose checks, if anything ran them, would leave marker files.
fn marked_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write(
        "Makefile",
        "test:\n\t@touch MAKE_TEST_RAN\n\ncheck:\n\t@touch MAKE_CHECK_RAN\n",
    );
    repo.write(
        "package.json",
        r#"{"name": "m", "scripts": {"test": "touch NPM_TEST_RAN"}}"#,
    );
    repo.commit("checks that leave markers");
    repo
}

/// A `PATH` of one directory where only `make` is (npm, cargo and the rest are missing).
fn path_with_only_make(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let make = ["/usr/bin/make", "/bin/make", "/usr/local/bin/make"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .expect("make is installed");
    std::os::unix::fs::symlink(make, bin.join("make")).unwrap();
    bin.display().to_string()
}

async fn doctor_checks(home: &TempHome, repo: &TempRepo, path: &str) -> (Output, Value) {
    let out = braincode_env(
        home,
        repo.path(),
        &["doctor", "--checks", "--json"],
        &[("PATH", path)],
    )
    .await;
    let report = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}):\n{}\n{}", out.stdout, out.stderr));
    (out, report)
}

fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {report:#}"))
}

fn messages(report: &Value) -> String {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{} {}: {}", c["status"], c["id"], c["message"]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn no_markers(repo: &TempRepo) {
    for marker in ["MAKE_TEST_RAN", "MAKE_CHECK_RAN", "NPM_TEST_RAN"] {
        assert!(
            !repo.path().join(marker).exists(),
            "{marker}: doctor ran the repository's code"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_lists_each_check_found_and_trusted_without_running_any() {
    let repo = marked_repo();
    let home = TempHome::new();
    let tools = tempfile::tempdir().unwrap();
    let path = path_with_only_make(tools.path());

    // Untrusted: the Makefile's checks are listed, found, and would not run.
    let (out, report) = doctor_checks(&home, &repo, &path).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let all = messages(&report);
    let make_test = check(&report, "check:make test");
    assert_eq!(make_test["status"], "warning", "{all}");
    let message = make_test["message"].as_str().unwrap();
    assert!(message.contains("`make test`"), "{message}");
    assert!(message.contains("make found"), "{message}");
    assert!(message.contains("not trusted"), "{message}");
    assert!(
        make_test["fix"]
            .as_str()
            .unwrap()
            .contains("braincode trust"),
        "{make_test:#}"
    );
    assert!(
        check(&report, "checks")["message"]
            .as_str()
            .unwrap()
            .contains("2 check(s), 0 would run"),
        "{all}"
    );
    // npm is missing: its checks are dropped, and doctor says so.
    assert!(
        all.contains("package.json found but npm is not installed"),
        "{all}"
    );
    no_markers(&repo);

    // Trusted: the same checks would run.
    assert_eq!(braincode(&home, repo.path(), &["trust"]).await.code, 0);
    let (out, report) = doctor_checks(&home, &repo, &path).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let make_test = check(&report, "check:make test");
    assert_eq!(make_test["status"], "ok", "{}", messages(&report));
    assert!(
        make_test["message"]
            .as_str()
            .unwrap()
            .contains("trusted; runs when a change selects it"),
        "{make_test:#}"
    );
    assert!(
        messages(&report).contains("2 check(s), 2 would run"),
        "{}",
        messages(&report)
    );

    // A script the project adds whose program is missing: listed as not found.
    repo.write(".braincode/checks.json", r#"{"add": ["test"]}"#);
    assert_eq!(braincode(&home, repo.path(), &["trust"]).await.code, 0);
    let (_, report) = doctor_checks(&home, &repo, &path).await;
    let npm = check(&report, "check:test");
    assert_eq!(npm["status"], "warning", "{}", messages(&report));
    assert!(
        npm["message"]
            .as_str()
            .unwrap()
            .contains("npm is not found, so the check could not run"),
        "{npm:#}"
    );

    // A broken checks file is named with its field; disabled checks are said to be.
    repo.write(".braincode/checks.json", r#"{"add": ["test"], "bogus": 1}"#);
    assert_eq!(braincode(&home, repo.path(), &["trust"]).await.code, 0);
    let (_, report) = doctor_checks(&home, &repo, &path).await;
    assert!(
        messages(&report).contains("bogus: unknown key"),
        "{}",
        messages(&report)
    );
    repo.write(".braincode/checks.json", r#"{"enabled": false}"#);
    assert_eq!(braincode(&home, repo.path(), &["trust"]).await.code, 0);
    let out = braincode_env(
        &home,
        repo.path(),
        &["doctor", "--checks"],
        &[("PATH", &path)],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("checks are disabled"), "{}", out.stdout);
    assert!(
        out.stdout.contains("`make test` (test): not run"),
        "{}",
        out.stdout
    );
    no_markers(&repo);

    // --checks and --mcp each focus the doctor on one thing: not both.
    let out = braincode(&home, repo.path(), &["doctor", "--checks", "--mcp"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("cannot be used with"), "{}", out.stderr);
}
