//! Tool arguments: typed parsing, unknown fields refused, and each tool's advertised schema
//! agreeing with what serde accepts.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use serde_json::json;

/// Every name serde accepts for `T` (canonical names and aliases), from its unknown-field error.
fn serde_names<T: ToolArgs + std::fmt::Debug>() -> Vec<String> {
    let error = serde_json::from_value::<T>(json!({"__no_such_field__": 1}))
        .expect_err("unknown fields are refused")
        .to_string();
    let known = error
        .split_once("expected one of ")
        .or_else(|| error.split_once("expected "))
        .map_or("", |(_, rest)| rest);
    // "expected `a`", "expected `a` or `b`", "expected one of `a`, `b`, `c`".
    known
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// A value of the advertised type that serde must accept.
fn sample(property: &Value) -> Value {
    if let Some(first) = property["enum"].get(0) {
        return first.clone();
    }
    if let Some(first) = property["examples"].get(0) {
        return first.clone();
    }
    match property["type"].as_str() {
        Some("integer") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!(["x"]),
        _ => json!("x"),
    }
}

/// The advertised schema lists exactly the struct's fields under their canonical names: every
/// property is a field serde reads, with a value of the advertised type; every other name serde
/// accepts is an alias of exactly one property, which is that field's canonical name; the
/// `required` list is what serde requires.
fn schema_matches_serde<T: ToolArgs + std::fmt::Debug>() {
    let tool = T::TOOL;
    let schema = T::schema();
    assert_eq!(schema["type"], "object", "{tool}");
    assert!(schema.get("additionalProperties").is_none(), "{tool}");
    let properties = schema["properties"].as_object().expect("properties");
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|name| name.as_str().expect("a name"))
        .collect();
    let samples: BTreeMap<&String, Value> = properties
        .iter()
        .map(|(name, property)| {
            let description = property["description"].as_str().unwrap_or("");
            assert!(
                !description.is_empty() && !description.contains('\n'),
                "{tool}.{name}: one-line description"
            );
            (name, sample(property))
        })
        .collect();
    let names = serde_names::<T>();
    for name in properties.keys() {
        assert!(
            names.contains(name),
            "{tool}: schema lists {name}, serde refuses it"
        );
    }
    for alias in names.iter().filter(|n| !properties.contains_key(*n)) {
        let owners: Vec<&String> = samples
            .iter()
            .filter(|(name, value)| {
                let probe = json!({ (**name).clone(): value, alias.clone(): value });
                serde_json::from_value::<T>(probe).is_err_and(|e| {
                    // serde names a duplicate by its canonical name, never by the alias.
                    e.to_string()
                        .starts_with(&format!("duplicate field `{name}`"))
                })
            })
            .map(|(name, _)| *name)
            .collect();
        assert_eq!(
            owners.len(),
            1,
            "{tool}: {alias} is an alias of one field: {owners:?}"
        );
    }
    let all: serde_json::Map<String, Value> = samples
        .iter()
        .map(|(name, value)| ((*name).clone(), value.clone()))
        .collect();
    T::parse(&Value::Object(all)).unwrap_or_else(|e| panic!("{tool}: every field at once: {e}"));
    let minimal: serde_json::Map<String, Value> = samples
        .iter()
        .filter(|(name, _)| required.contains(&name.as_str()))
        .map(|(name, value)| ((*name).clone(), value.clone()))
        .collect();
    T::parse(&Value::Object(minimal.clone()))
        .unwrap_or_else(|e| panic!("{tool}: serde requires more than the schema: {e}"));
    for name in &required {
        let mut without = minimal.clone();
        without.remove(*name);
        let error = T::parse(&Value::Object(without)).expect_err("required");
        assert!(
            error.message.contains("missing field") || error.message.contains("got nothing"),
            "{tool}: {name} is required in the schema, not by serde: {error}"
        );
    }
}

/// Checks a built-in tool's struct against its schema; the schema, `None` for an unknown name.
fn checked_schema(tool: &str) -> Option<Value> {
    fn check<T: ToolArgs + std::fmt::Debug>() -> Option<Value> {
        schema_matches_serde::<T>();
        Some(T::schema())
    }
    match tool {
        "shell" => check::<ShellArgs>(),
        "exec_command" => check::<ExecCommandArgs>(),
        "write_stdin" => check::<WriteStdinArgs>(),
        "kill_background" => check::<KillBackgroundArgs>(),
        "list_background" => check::<ListBackgroundArgs>(),
        "get_changed_files" => check::<GetChangedFilesArgs>(),
        "git_diff" => check::<GitDiffArgs>(),
        "edit_file" => check::<EditFileArgs>(),
        "apply_patch" => check::<ApplyPatchArgs>(),
        "run_script" => check::<RunScriptArgs>(),
        "read_file" => check::<ReadFileArgs>(),
        "list_files" => check::<ListFilesArgs>(),
        "search_files" => check::<SearchFilesArgs>(),
        "generate_image" => check::<GenerateImageArgs>(),
        _ => None,
    }
}

#[test]
fn every_builtin_schema_is_its_struct() {
    let tools = crate::registry::builtin_tools(
        crate::registry::ToolMode::All,
        &crate::config::ToolsConfig::default(),
        Arc::new(crate::exec::ExecSessions::default()),
    );
    assert_eq!(tools.len(), crate::registry::BUILTIN_TOOLS.len());
    for tool in tools {
        let definition = tool.definition();
        let schema = checked_schema(&definition.name)
            .unwrap_or_else(|| panic!("{} has an argument struct", definition.name));
        assert_eq!(
            definition.parameters, schema,
            "{} advertises its struct",
            definition.name
        );
    }
}

#[test]
fn aliases_are_not_advertised() {
    let schema = ReadFileArgs::schema();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the project root."},
                "offset": {"type": "integer", "description": "Byte offset to start at."},
                "limit": {"type": "integer", "description": "Bytes to read."}
            },
            "required": ["path"]
        })
    );
    assert!(ReadFileArgs::parse(&json!({"file_path": "a.rs"})).is_ok());
    let search = SearchFilesArgs::schema();
    assert_eq!(
        search["properties"]["mode"]["enum"],
        json!(["content", "path"])
    );
    let exec = ExecCommandArgs::schema();
    assert_eq!(
        exec["properties"]["shell"]["enum"],
        json!(crate::exec::SHELLS)
    );
    let script = RunScriptArgs::schema();
    assert_eq!(
        script["properties"]["args"]["items"],
        json!({"type": "string"})
    );
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
    assert!(
        text.contains("Accepted fields: command, timeoutMs, workdir"),
        "{text}"
    );
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

#[test]
fn generate_image_needs_a_prompt_and_a_real_size() {
    let ok =
        GenerateImageArgs::parse(&json!({"prompt": "  a fox  ", "size": "1536X1024"})).unwrap();
    assert_eq!(ok.prompt, "a fox");
    assert_eq!(ok.size.as_deref(), Some("1536x1024"));
    let blank = GenerateImageArgs::parse(&json!({"prompt": "   "})).unwrap_err();
    assert_eq!(blank.field.as_deref(), Some("prompt"));
    assert!(blank.message.contains("must not be empty"), "{blank}");
    for bad in ["big", "1024", "1024x", "0x10", "100000x2", "1024*1024"] {
        let error = GenerateImageArgs::parse(&json!({"prompt": "p", "size": bad})).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("size"), "{bad}");
        assert!(error.message.contains("WIDTHxHEIGHT"), "{bad}: {error}");
    }
    let missing = GenerateImageArgs::parse(&json!({"size": "1024x1024"})).unwrap_err();
    assert!(missing.message.contains("missing field"), "{missing}");
    assert!(checked_schema("generate_image").is_some());
}
