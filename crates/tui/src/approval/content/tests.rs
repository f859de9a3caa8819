use super::*;

#[test]
fn diff_keeps_common_lines() {
    let diff = line_diff("a\nb\nc\nd", "a\nB\nc\nd\ne");
    assert_eq!(
        diff,
        vec![
            (Tag::Same, "a"),
            (Tag::Removed, "b"),
            (Tag::Added, "B"),
            (Tag::Same, "c"),
            (Tag::Same, "d"),
            (Tag::Added, "e"),
        ]
    );
}

#[test]
fn policy_summary_is_split_per_rule() {
    assert_eq!(
        policy_lines("ask: ask command `git push` matched `git push*`: remote; unanalysable: eval"),
        vec![
            "· ask command `git push` matched `git push*`: remote".to_string(),
            "· unanalysable: eval".into()
        ]
    );
    assert_eq!(
        policy_lines("ask (review required): ask path `a` matched `a`"),
        vec![
            "· ask path `a` matched `a`".to_string(),
            "· an independent review will follow this change".into()
        ]
    );
    assert_eq!(policy_lines("ask"), vec!["ask".to_string()]);
    // The gate's summary for a protected call: the reason a person is asked, then what
    // the rules said — each on its own line, the protected reason said once.
    let protected = "creates a symbolic link (protected): only a person can approve this\n\
                     ask: protected: creates a symbolic link (protected)";
    assert_eq!(
        policy_lines(protected),
        vec!["creates a symbolic link (protected): only a person can approve this".to_string()]
    );
    let unsandboxed = "the OS sandbox is not available: shell would run unconfined, so only a person can approve it\nno rule";
    assert_eq!(
        policy_lines(unsandboxed),
        vec!["the OS sandbox is not available: shell would run unconfined, so only a person can approve it".to_string()]
    );
    let reviewed = "a PreToolUse hook asked that a person approve shell (audit)\nask (review required): ask command `make` matched `make*`";
    assert_eq!(
        policy_lines(reviewed),
        vec![
            "· a PreToolUse hook asked that a person approve shell (audit)".to_string(),
            "· ask command `make` matched `make*`".into(),
            "· an independent review will follow this change".into(),
        ]
    );
    for line in policy_lines(reviewed) {
        assert!(
            !line.contains("askask") && !line.contains("askno rule"),
            "{line}"
        );
    }
    assert!(policy_lines("no rule")[0].starts_with("no permission rule matched"));
}

#[test]
fn other_tools_show_their_arguments_clipped_and_cleaned() {
    let long: Vec<String> = (0..1000).map(|i| format!("item {i}")).collect();
    let request = ApprovalRequest {
        call_id: "c".into(),
        tool_name: "mcp__db__query".into(),
        arguments: serde_json::json!({"sql": "select 1\u{1b}[2J", "items": long}),
        policy_summary: String::new(),
        origin: ToolCallOrigin::default(),
        once_only: None,
    };
    let lines: Vec<String> = body_lines(&request)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(lines.len(), MAX_BODY_LINES + 1);
    assert_eq!(lines[0], "{");
    assert!(lines[1].contains("select 1\\u001b[2J"), "{}", lines[1]);
    assert_eq!(lines[MAX_BODY_LINES], "… 605 more lines");
    assert_eq!(title(&request), "Allow mcp__db__query?");
    assert_eq!(facts(&request)[0].value, "the run");
}

#[test]
fn checks_say_what_runs_and_why() {
    let request = ApprovalRequest {
        call_id: "patch-checks:s:0".into(),
        tool_name: braincode_runtime::CHECK_TOOL.into(),
        arguments: serde_json::json!({
            "command": "cargo check --all-targets && cargo test",
            "scripts": ["cargo check", "cargo test"],
            "patchKind": "ci-risk",
        }),
        policy_summary: String::new(),
        origin: ToolCallOrigin::default(),
        once_only: None,
    };
    assert_eq!(title(&request), "Run the project's checks on this change?");
    let facts = facts(&request);
    let shown: Vec<(&str, &str)> = facts.iter().map(|f| (f.label, f.value.as_str())).collect();
    assert!(
        shown.contains(&("checks", "cargo check, cargo test")),
        "{shown:?}"
    );
    assert!(
        shown.contains(&("command", "$ cargo check --all-targets && cargo test")),
        "{shown:?}"
    );
    assert!(shown.contains(&("change", "ci-risk")), "{shown:?}");
}

#[test]
fn control_keys_are_visible() {
    assert_eq!(visible_keys("q\u{3}ls\n"), "q^Cls⏎");
}
