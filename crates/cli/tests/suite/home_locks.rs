//! Concurrent updates of the home's files keep every update: 32 `braincode trust` processes
//! started at once on 32 projects leave 32 trusted projects, and 32 `braincode auth set`
//! leave 32 credentials (each process reads, changes and writes back the whole file, so
//! without the update lock most of them would overwrite the others).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Stdio};

use braincode_test_support::TempHome;

const WRITERS: usize = 32;

fn braincode(home: &TempHome) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_braincode"));
    let (name, value) = home.env();
    command
        .env(name, value)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Starts every command before waiting for any, then checks they all succeeded.
fn all_at_once(mut commands: Vec<Command>, input: impl Fn(usize) -> Option<String>) {
    let children: Vec<_> = commands
        .iter_mut()
        .enumerate()
        .map(|(index, command)| {
            if input(index).is_some() {
                command.stdin(Stdio::piped());
            }
            command.spawn().unwrap()
        })
        .collect();
    let mut children = children;
    // Every input is given before any process is waited for, so they all race.
    for (index, child) in children.iter_mut().enumerate() {
        if let (Some(text), Some(mut stdin)) = (input(index), child.stdin.take()) {
            stdin.write_all(text.as_bytes()).unwrap();
        }
    }
    for (index, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "writer {index}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn concurrent_trusts_keep_every_project() {
    let home = TempHome::new();
    let projects: Vec<tempfile::TempDir> =
        (0..WRITERS).map(|_| tempfile::tempdir().unwrap()).collect();
    let commands = projects
        .iter()
        .map(|project| {
            let mut command = braincode(&home);
            command.arg("trust").arg(project.path());
            command
        })
        .collect();
    all_at_once(commands, |_| None);
    let store: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("trust.json")).unwrap())
            .unwrap();
    let trusted = store["projects"].as_object().unwrap();
    assert_eq!(trusted.len(), WRITERS, "{store:#}");
    for project in &projects {
        let key = project.path().canonicalize().unwrap().display().to_string();
        assert!(trusted.contains_key(&key), "{key} was lost");
    }
}

#[test]
fn concurrent_credentials_are_all_kept() {
    let home = TempHome::new();
    let commands = (0..WRITERS)
        .map(|index| {
            let mut command = braincode(&home);
            command.args(["auth", "set", &format!("provider{index}")]);
            command
        })
        .collect();
    all_at_once(commands, |index| Some(format!("sk-key-number-{index}\n")));
    let out = braincode(&home).args(["auth", "status"]).output().unwrap();
    let status = String::from_utf8_lossy(&out.stdout);
    for index in 0..WRITERS {
        assert!(
            status.contains(&format!("provider{index}")),
            "provider{index} was lost: {status}"
        );
    }
}
