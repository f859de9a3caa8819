//! What the approval panel shows at 80×24 for an edit, a command and a patch.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::render_at_bottom;
use braincode_protocol::{Phase, Role, ToolCallOrigin};
use braincode_runtime::{ApprovalAnswer, ApprovalRequest};
use braincode_tui::approval::{ApprovalPanel, PendingApproval, draw};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use serde_json::{Value, json};
use tokio::sync::oneshot;

fn origin(role: Role, phase: Phase, task: &str) -> ToolCallOrigin {
    ToolCallOrigin {
        role: Some(role),
        phase: Some(phase),
        task_id: Some(task.into()),
        ..ToolCallOrigin::default()
    }
}

/// A panel holding these requests; the reply receivers are kept alive so none is pruned.
fn panel(
    requests: Vec<(&str, Value, &str, ToolCallOrigin)>,
) -> (ApprovalPanel, Vec<oneshot::Receiver<ApprovalAnswer>>) {
    let mut panel = ApprovalPanel::new();
    let mut receivers = Vec::new();
    for (i, (tool, arguments, policy, origin)) in requests.into_iter().enumerate() {
        let (reply, receiver) = oneshot::channel();
        receivers.push(receiver);
        panel.push(PendingApproval {
            request: ApprovalRequest {
                call_id: format!("call-{i}"),
                tool_name: tool.into(),
                arguments,
                policy_summary: policy.into(),
                origin,
                once_only: None,
            },
            reply,
        });
    }
    (panel, receivers)
}

/// The panel at the bottom of an 80×24 screen, as tall as it asks to be.
fn render(panel: &ApprovalPanel) -> Terminal<TestBackend> {
    render_at_bottom(
        |width| panel.height(width),
        |frame, area| draw(frame, area, panel),
    )
}

fn edit() -> Value {
    json!({
        "path": "crates/config/src/home.rs",
        "oldString": "    /// `logs/`.\n    pub fn logs_dir(&self) -> PathBuf {\n        self.root.join(\"logs\")\n    }\n",
        "newString": "    /// `logs/`: one file per day.\n    pub fn logs_dir(&self) -> PathBuf {\n        self.root.join(\"log\")\n    }\n\n    /// `history/`: prompt history per project.\n    pub fn history_dir(&self) -> PathBuf {\n        self.root.join(\"history\")\n    }\n"
    })
}

/// The row of the screen that holds `text`.
fn row_with(terminal: &Terminal<TestBackend>, text: &str) -> (u16, u16) {
    let buffer = terminal.backend().buffer();
    for y in 0..buffer.area.height {
        let line: String = (0..buffer.area.width)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect();
        if let Some(at) = line.find(text) {
            let x = line[..at].chars().count();
            return (u16::try_from(x).unwrap(), y);
        }
    }
    panic!("`{text}` is not on the screen");
}

#[test]
fn an_edit_shows_a_coloured_diff() {
    let (panel, _receivers) = panel(vec![(
        "edit_file",
        edit(),
        "no rule",
        origin(Role::Backend, Phase::Primary, "ctx-primary"),
    )]);
    let terminal = render(&panel);
    insta::assert_snapshot!(terminal.backend());
    let buffer = terminal.backend().buffer();
    let (x, y) = row_with(&terminal, "- ");
    assert_eq!(buffer[(x, y)].fg, Color::Red);
    let (x, y) = row_with(&terminal, "+     /// `history/`");
    assert_eq!(buffer[(x, y)].fg, Color::Green);
}

#[test]
fn a_command_shows_the_rule_that_asked_and_the_queue() {
    let (panel, _receivers) = panel(vec![
        (
            "exec_command",
            json!({"cmd": "git push --force-with-lease origin feature/approvals", "workdir": "crates/tui", "timeoutMs": 60000}),
            "ask: ask command `git push --force-with-lease origin feature/approvals` matched `git push*`: pushing publishes commits to the shared remote; unanalysable: the shell expands `$(git branch --show-current)`",
            origin(Role::Devops, Phase::Support, "ctx-devops"),
        ),
        ("edit_file", edit(), "no rule", ToolCallOrigin::default()),
        (
            "read_file",
            json!({"path": "a"}),
            "no rule",
            ToolCallOrigin::default(),
        ),
    ]);
    let terminal = render(&panel);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn a_patch_and_a_long_body_scroll() {
    let mut patch = String::from(
        "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,30 +1,30 @@\n",
    );
    for i in 0..30 {
        patch.push_str(&format!("-let old_{i} = {i};\n+let new_{i} = {i} + 1;\n"));
    }
    let (mut panel, _receivers) = panel(vec![(
        "apply_patch",
        json!({"patch": patch}),
        "no rule",
        origin(Role::Frontend, Phase::Primary, "ctx-primary"),
    )]);
    for _ in 0..5 {
        panel.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    let terminal = render(&panel);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn the_reason_field() {
    let (mut panel, _receivers) = panel(vec![(
        "shell",
        json!({"command": "rm -rf target"}),
        "no rule",
        origin(Role::Qa, Phase::Review, "ctx-review"),
    )]);
    panel.handle_key(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::NONE));
    for c in "keep the build cache".chars() {
        panel.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    let mut terminal = render(&panel);
    insta::assert_snapshot!(terminal.backend());
    let (x, y) = row_with(&terminal, "reason for the model: ");
    let end = x + u16::try_from("reason for the model: keep the build cache".len()).unwrap();
    assert_eq!(
        terminal.get_cursor_position().unwrap(),
        ratatui::layout::Position::new(end, y)
    );
}

#[test]
fn a_protected_call_says_a_approves_it_once() {
    let mut panel = ApprovalPanel::new();
    let (reply, _receiver) = oneshot::channel();
    panel.push(PendingApproval {
        request: ApprovalRequest {
            call_id: "call-p".into(),
            tool_name: "edit_file".into(),
            arguments: json!({"path": ".agents/hooks.json", "content": "{}\n"}),
            // As the gate writes it: why a person is asked, then what the rules said.
            policy_summary: "changes agent configuration `.agents/hooks.json` (protected): only a person can approve this\nask (review required): protected: changes agent configuration `.agents/hooks.json` (protected)".into(),
            origin: origin(Role::Backend, Phase::Primary, "ctx-primary"),
            once_only: Some("a protected call is approved per call, never for the session".into()),
        },
        reply,
    });
    let terminal = render(&panel);
    insta::assert_snapshot!(terminal.backend());
    let screen = format!("{:?}", terminal.backend());
    assert!(screen.contains("a once only"), "{screen}");
    assert!(screen.contains("esc deny"), "{screen}");
    assert!(!screen.contains("askask") && !screen.contains("askno rule"));
    assert_eq!(screen.matches("(protected)").count(), 1, "{screen}");
}

#[test]
fn the_dependency_question_names_the_commands_and_the_hosts() {
    let (panel, _receivers) = panel(vec![(
        "dependency_setup",
        json!({
            "command": "npm ci && python3 -m venv .venv && .venv/bin/pip install -e .[tests]",
            "network": "the package registries only",
            "hosts": ["registry.npmjs.org", "pypi.org", "files.pythonhosted.org"],
        }),
        "Set the project's dependencies up before its checks, once, in the sandbox, the network limited to the package registries? Your answer is kept for this project (checks.fetchDependencies in tools.json changes it).",
        ToolCallOrigin::default(),
    )]);
    let terminal = render(&panel);
    insta::assert_snapshot!(terminal.backend());
    let screen = format!("{:?}", terminal.backend());
    assert!(
        screen.contains("Set the project's dependencies up"),
        "{screen}"
    );
    assert!(screen.contains("registry.npmjs.org"), "{screen}");
    assert!(screen.contains("$ npm ci"), "{screen}");
}
