//! The foundation commands: version, usage errors, the heuristic dry-run, and configuration
//! errors that say where the problem is.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

use braincode_test_support::TempHome;
use serde_json::Value;

fn braincode(home: &TempHome, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args(args)
        .env("BRAINCODE_HOME", home.path())
        .current_dir(home.path())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn version_and_help_work_and_unknown_flags_are_usage_errors() {
    let home = TempHome::new();
    let version = braincode(&home, &["--version"]);
    assert!(version.status.success());
    assert_eq!(
        text(&version.stdout).trim(),
        format!("braincode {}", env!("CARGO_PKG_VERSION"))
    );
    let help = braincode(&home, &["help", "run"]);
    assert!(help.status.success());
    assert!(text(&help.stdout).contains("--dry-run") && text(&help.stdout).contains("Exit codes"));
    for args in [
        &["--bogus"][..],
        &["run", "--bogus", "hi"],
        &["run"],
        &["run", "--json", "--events", "x"],
    ] {
        let out = braincode(&home, args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // No TUI opens with a flag as a prompt, and nothing was written to the home.
    assert!(std::fs::read_dir(home.path()).unwrap().next().is_none());
}

#[test]
fn heuristic_dry_run_previews_the_worked_example() {
    let home = TempHome::new();
    // Four workers are allowed, so the uncapped worked example of the reference holds.
    home.write_brains(&serde_json::json!({"brains": [{"id": "wide", "extends": "brain", "routing": {"maxParallelAgents": 4}}]}));
    let prompt = "implement a secure frontend login flow";
    let out = braincode(
        &home,
        &[
            "run",
            "--dry-run",
            "--heuristic",
            "--json",
            "--brain",
            "wide",
            prompt,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(plan["primary"], "frontend");
    assert_eq!(plan["source"], "heuristic");
    assert_eq!(
        plan["reason"],
        "heuristic diagnostic; router brain not requested"
    );
    let roles: Vec<&str> = plan["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["librarian", "backend", "security", "frontend", "review"]
    );
    let todos: Vec<&str> = plan["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        &todos[..4],
        [
            "map-context",
            "assess-security",
            "build-backend",
            "build-frontend"
        ]
    );
    assert_eq!(plan["requiresReview"], true);
    let mut ids: Vec<&str> = plan["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["contextId"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5, "every worker has its own fresh context");

    let human = braincode(
        &home,
        &["run", "--dry-run", "--heuristic", "--brain", "wide", prompt],
    );
    let shown = text(&human.stdout);
    assert!(
        shown.contains("Routing:   heuristic → primary frontend"),
        "{shown}"
    );
    assert!(
        shown.contains("map-context") && shown.contains("Review:    required"),
        "{shown}"
    );
    assert!(
        std::fs::read_dir(home.path().join("sessions")).is_err(),
        "a dry run saves nothing"
    );
}

#[test]
fn vague_prompts_preview_a_clarification() {
    let home = TempHome::new();
    let out = braincode(
        &home,
        &["run", "--dry-run", "--heuristic", "--json", "改一下"],
    );
    let plan: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(plan["clarification"]["required"], true);
    assert!(plan["clarification"]["options"].as_array().unwrap().len() >= 2);
}

#[test]
fn configuration_errors_name_the_file_line_and_field() {
    let home = TempHome::new();
    home.write_file("brains.json", "{\"brains\": [\n  {\"id\": \"x\", \"extends\": \"brain\",\n   \"roles\": {\"backend\": {\"modelId\": \"m\", \"thinkingLevel\": \"hgh\"}}}\n]}\n");
    let out = braincode(&home, &["run", "--dry-run", "--heuristic", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("brains.json:3:"), "{err}");
    assert!(
        err.contains("thinkingLevel") && err.contains("hgh"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("brains.json"))
            .unwrap()
            .lines()
            .count(),
        4,
        "a malformed file is left untouched"
    );

    let home = TempHome::new();
    let out = braincode(
        &home,
        &[
            "run",
            "--dry-run",
            "--heuristic",
            "--brain",
            "nope",
            "hello",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("nope") && err.contains("brain") && err.contains("openai"),
        "the valid ids are listed: {err}"
    );

    let home = TempHome::new();
    let out = braincode(
        &home,
        &["run", "--dry-run", "--heuristic", "--mode", "wild", "hello"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// A closed standard output (`braincode sessions list | head -1`) never panics: every
/// command that prints ends quietly with 0 or 141, as git does.
#[test]
fn a_closed_stdout_ends_every_printing_command_quietly() {
    let home = TempHome::new();
    for args in [
        &["sessions", "list"][..],
        &["sessions", "list", "--all", "--json"],
        &["usage", "--by", "session"],
        &["models", "list"],
        &["auth", "status"],
        &["trust", "--status"],
        &["--help"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        // The reading end is gone before the command prints anything.
        drop(reader);
        let (name, value) = home.env();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_braincode"))
            .args(args)
            .env(name, value)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 141)),
            "{args:?}: exit {code:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// A run that stops to ask prints its question once (not again as its answer).
#[test]
fn a_clarification_question_is_printed_once() {
    let home = TempHome::new();
    let out = braincode(&home, &["run", "--heuristic", "fix it"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(5),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let question = "What exactly should change, and where?";
    assert_eq!(stdout.matches(question).count(), 1, "{stdout}");
}
