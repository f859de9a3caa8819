//! Tool arguments: typed parsing, unknown fields refused, and each tool's listed fields agreeing with its serde shape.

use super::*;
use serde_json::json;

/// `FIELDS` (what error messages list) and the serde attributes (what is accepted) say the
/// same thing twice; this keeps them in agreement for every tool.
fn fields_agree_with_serde<T: ToolArgs + std::fmt::Debug>() {
    let listed: Vec<&str> = T::FIELDS
        .iter()
        .flat_map(|(name, aliases)| std::iter::once(*name).chain(aliases.iter().copied()))
        .collect();
    for name in &listed {
        let probe = json!({ *name: {"not": "a valid value"} });
        if let Err(error) = serde_json::from_value::<T>(probe) {
            assert!(
                !error.to_string().starts_with("unknown field"),
                "{}: FIELDS lists {name}, serde refuses it: {error}",
                T::TOOL
            );
        }
    }
    let error = serde_json::from_value::<T>(json!({"__no_such_field__": 1}))
        .expect_err("unknown fields are refused")
        .to_string();
    let known = error
        .split_once("expected one of ")
        .or_else(|| error.split_once("expected "))
        .map_or("", |(_, rest)| rest);
    for name in known.split(", ").filter_map(|n| n.split('`').nth(1)) {
        assert!(
            listed.contains(&name),
            "{}: serde accepts {name}, FIELDS does not list it",
            T::TOOL
        );
    }
}

#[test]
fn listed_fields_match_what_serde_accepts() {
    fields_agree_with_serde::<ShellArgs>();
    fields_agree_with_serde::<ExecCommandArgs>();
    fields_agree_with_serde::<WriteStdinArgs>();
    fields_agree_with_serde::<KillBackgroundArgs>();
    fields_agree_with_serde::<ListBackgroundArgs>();
    fields_agree_with_serde::<GetChangedFilesArgs>();
    fields_agree_with_serde::<GitDiffArgs>();
    fields_agree_with_serde::<EditFileArgs>();
    fields_agree_with_serde::<ApplyPatchArgs>();
    fields_agree_with_serde::<RunScriptArgs>();
    fields_agree_with_serde::<ReadFileArgs>();
    fields_agree_with_serde::<ListFilesArgs>();
    fields_agree_with_serde::<SearchFilesArgs>();
}

#[test]
fn aliases_are_one_field() {
    let error = ShellArgs::parse(&json!({"command": "git push", "cmd": "true"})).unwrap_err();
    assert!(error.to_string().contains("duplicate field"), "{error}");
    let error = ExecCommandArgs::parse(&json!({"cmd": "true", "command": "git push"})).unwrap_err();
    assert!(error.to_string().contains("duplicate field"), "{error}");
    let ok = ShellArgs::parse(&json!({"cmd": "ls", "timeout": "2000", "cwd": "src"})).unwrap();
    assert_eq!(ok.command, "ls");
    assert_eq!(ok.timeout_ms, Some(2000));
    assert_eq!(ok.workdir.as_deref(), Some("src"));
}

#[test]
fn unknown_and_mistyped_fields_name_the_field() {
    let error = ShellArgs::parse(&json!({"command": "ls", "env": {"A": "1"}})).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("unknown field `env`"), "{text}");
    assert!(text.contains("Accepted fields: command (or cmd)"), "{text}");
    let error = ShellArgs::parse(&json!({"command": "ls", "timeoutMs": "soon"})).unwrap_err();
    assert_eq!(error.field.as_deref(), Some("timeoutMs"), "{error}");
    let error = ShellArgs::parse(&json!({"command": {"x": 1}})).unwrap_err();
    assert_eq!(error.field.as_deref(), Some("command"), "{error}");
    assert!(ShellArgs::parse(&json!({})).is_err());
}

#[test]
fn lenient_values() {
    let args = ExecCommandArgs::parse(&json!({
        "cmd": ["bash", "-lc", "git status"], "background": "true", "yieldTimeMs": 12.9,
        "timeoutMs": -5, "maxOutputBytes": null
    }))
    .unwrap();
    assert_eq!(args.cmd, "bash -lc 'git status'");
    assert_eq!(args.background, Some(true));
    assert_eq!(args.yield_time_ms, Some(12));
    assert_eq!(args.timeout_ms, Some(0));
    assert_eq!(args.max_output_bytes, None);
    let stdin = WriteStdinArgs::parse(&json!({"session_id": "3", "input": "x"})).unwrap();
    assert_eq!(stdin.session_id, 3);
    let script = RunScriptArgs::parse(&json!({"name": "test", "args": ["-k", 2]})).unwrap();
    assert_eq!(script.args, vec!["-k", "2"]);
    let script = RunScriptArgs::parse(&json!({"script": "test", "args": "-v"})).unwrap();
    assert_eq!(script.args, vec!["-v"]);
    assert!(ListBackgroundArgs::parse(&Value::Null).is_ok());
    assert!(ListBackgroundArgs::parse(&json!({"x": 1})).is_err());
    assert_eq!(check_builtin("mcp__x__y", &json!({"a": 1})), Ok(None));
}
