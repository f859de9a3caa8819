//! `braincode permissions check` end to end: decisions, reasons, parsed sub-commands, exit
//! codes and tools.json errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

struct Env {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        }
    }

    fn write_tools_json(&self, text: &str) {
        std::fs::write(self.home.path().join("tools.json"), text).unwrap();
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.project.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_braincode"))
            .arg("permissions")
            .arg("check")
            .args(args)
            .arg("--project")
            .arg(self.project.path())
            .env("BRAINCODE_HOME", self.home.path())
            .env_remove("BRAINCODE_LOG")
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let output = self.run(&all);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn denied_command_shows_the_rule_and_sub_commands() {
    let env = Env::new();
    let output = env.run(&[
        "--tool",
        "shell",
        "--command",
        "npm test && sh -c 'git push origin main'",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("decision:   deny"), "{text}");
    assert!(text.contains("message:    Permission policy denied tool call: command git push origin main matched git push"), "{text}");
    assert!(text.contains("    npm test\n"), "{text}");
    assert!(
        text.contains("    sh -c 'git push origin main'\n"),
        "{text}"
    );
    assert!(text.contains("    git push origin main\n"), "{text}");
    assert!(
        text.contains("deny  command git push origin main  (pattern \"git push\", default rule)"),
        "{text}"
    );
    assert!(
        text.contains("rules:      default rules only (no tools.json)"),
        "{text}"
    );
}

#[test]
fn json_output_carries_the_evaluation() {
    let env = Env::new();
    let doc = env.json(&[
        "--tool",
        "exec_command",
        "--command",
        "FOO=1 /usr/bin/git push",
    ]);
    assert_eq!(doc["evaluation"]["decision"], "deny");
    assert_eq!(doc["approvalRequired"], false);
    assert!(doc["denialMessage"].as_str().unwrap().contains("git push"));
    let subs = doc["evaluation"]["commands"][0]["subcommands"]
        .as_array()
        .unwrap();
    assert_eq!(subs[0], "git push");
    let doc = env.json(&["--tool", "shell", "--command", "$CMD push"]);
    assert_eq!(doc["evaluation"]["decision"], "ask");
    assert!(
        !doc["evaluation"]["commands"][0]["uncertain"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn paths_are_resolved_and_review_is_reported() {
    let env = Env::new();
    let output = env.run(&["--tool", "edit_file", "--path", "src/x/../auth/a.ts"]);
    let text = stdout(&output);
    assert!(text.contains("decision:   ask"), "{text}");
    assert!(text.contains("review:     required"), "{text}");
    assert!(text.contains("  src/auth/a.ts\n"), "{text}");
    let doc = env.json(&["--tool", "edit_file", "--path", "/etc/passwd"]);
    assert_eq!(doc["evaluation"]["decision"], "deny");
    let output = env.run(&["--tool", "edit_file", "--path", "src/app.ts"]);
    assert!(
        stdout(&output).contains("decision:   no rule — the tool mode decides: approval required"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn scripts_and_user_rules() {
    let env = Env::new();
    env.write(
        "package.json",
        r#"{"scripts": {"test": "vitest", "deploy": "git push"}}"#,
    );
    env.write("yarn.lock", "");
    env.write_tools_json(r#"{"permissions": {"paths": [{"pattern": "docs/**", "edit": "allow", "reason": "docs are free"}], "commands": [{"pattern": "make *", "policy": "ask", "review": "required"}]}}"#);
    let doc = env.json(&[
        "--tool",
        "run_script",
        "--script",
        "test",
        "--script-arg",
        "--watch",
    ]);
    assert_eq!(doc["evaluation"]["decision"], "allow");
    assert_eq!(
        doc["evaluation"]["commands"][0]["text"],
        "yarn run test -- --watch"
    );
    let doc = env.json(&["--tool", "run_script", "--script", "deploy"]);
    assert_eq!(doc["evaluation"]["decision"], "deny");
    let output = env.run(&["--tool", "edit_file", "--path", "docs/a.md"]);
    let text = stdout(&output);
    assert!(text.contains("decision:   allow"), "{text}");
    assert!(
        text.contains("(pattern \"docs/**\", user rule): docs are free"),
        "{text}"
    );
    assert!(text.contains("rules:      default rules + "), "{text}");
    let doc = env.json(&["--tool", "shell", "--command", "make release"]);
    assert_eq!(doc["evaluation"]["decision"], "ask");
    assert_eq!(doc["evaluation"]["reviewRequired"], true);
    let doc = env.json(&["--tool", "run_script", "--script", "nope"]);
    assert!(
        doc["evaluation"]["notes"][0]
            .as_str()
            .unwrap()
            .contains("unknown script")
    );
}

#[test]
fn patch_files_are_checked() {
    let env = Env::new();
    let patch = env.project.path().join("change.diff");
    std::fs::write(
        &patch,
        "--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n",
    )
    .unwrap();
    let doc = env.json(&["--tool", "apply_patch", "--patch", patch.to_str().unwrap()]);
    assert_eq!(doc["evaluation"]["decision"], "deny");
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new();
    let output = env.run(&["--tool", "shell"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--path, --command, --script or --patch"));
    let output = env.run(&["--tool", "shell", "--path", "a.txt"]);
    assert_eq!(output.status.code(), Some(2), "{}", stdout(&output));
    assert!(stderr(&output).contains("takes nothing from the given options"));
    let output = env.run(&["--tool", "shell", "--command", "ls", "--bogus"]);
    assert_eq!(output.status.code(), Some(2));
    let output = Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args([
            "permissions",
            "check",
            "--tool",
            "shell",
            "--command",
            "ls",
            "--project",
        ])
        .arg(Path::new("/nonexistent/dir"))
        .env("BRAINCODE_HOME", env.home.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn broken_tools_json_exits_1_and_names_the_file() {
    let env = Env::new();
    env.write_tools_json(
        "{\n  \"permissions\": {\n    \"paths\": [ {\"pattern\": \"x\", \"edit\": \"allow\"} \n",
    );
    let output = env.run(&["--tool", "shell", "--command", "ls"]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("tools.json:4:"),
        "file and line: {message}"
    );

    env.write_tools_json(r#"{"permissions": {"paths": [{"pattern": "src/[a", "edit": "deny"}]}}"#);
    let output = env.run(&["--tool", "shell", "--command", "ls"]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(message.contains("tools.json is invalid"), "{message}");
    assert!(
        message.contains("permissions.paths[0].pattern"),
        "{message}"
    );
    assert!(message.contains("src/[a"), "{message}");

    env.write_tools_json(
        r#"{"permissions": {"commands": [{"pattern": "x", "policy": "sometimes"}]}}"#,
    );
    let output = env.run(&["--tool", "shell", "--command", "ls"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("sometimes"), "{}", stderr(&output));
}

#[test]
fn unanalysable_protected_and_sandbox_are_explained() {
    let env = Env::new();
    let output = env.run(&["--tool", "shell", "--command", "c='git push'; $c"]);
    let text = stdout(&output);
    assert!(text.contains("unanalysable: "), "{text}");
    assert!(
        text.contains("never auto-approved outside the OS sandbox"),
        "{text}"
    );
    assert!(text.contains("sandbox:    "), "{text}");
    assert!(
        text.contains("commands run confined") || text.contains("unavailable ("),
        "{text}"
    );

    let output = env.run(&["--tool", "edit_file", "--path", ".git/config"]);
    let text = stdout(&output);
    assert!(text.contains("protected:  "), "{text}");
    assert!(text.contains("only a person can approve it"), "{text}");

    let doc = env.json(&["--tool", "shell", "--command", "eval \"$x\""]);
    assert!(
        !doc["evaluation"]["unanalysable"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{doc}"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args(["permissions", "check", "--tool", "shell", "--command", "ls"])
        .arg("--project")
        .arg(env.project.path())
        .env("BRAINCODE_HOME", env.home.path())
        .env("BRAINCODE_SANDBOX", "off")
        .output()
        .unwrap();
    let text = stdout(&output);
    assert!(
        text.contains("unavailable (") && text.contains("needs a person's approval"),
        "{text}"
    );
}
