//! Tool modes, tools.json filtering, definitions and the approval decision.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use braincode_tools::{
    ExecSessions, PermissionPolicy, PermissionRequest, ToolDefinition, ToolMode, ToolPermission,
    ToolRisk, ToolsConfig, builtin_tools, requires_approval,
};
use serde_json::{Value, json};

fn names(mode: ToolMode, config: &ToolsConfig) -> Vec<String> {
    builtin_tools(mode, config, Arc::new(ExecSessions::default()))
        .iter()
        .map(|tool| tool.definition().name.clone())
        .collect()
}

#[test]
fn modes_and_disabled_tools() {
    let config = ToolsConfig::default();
    assert_eq!(
        names(ToolMode::ReadOnly, &config),
        [
            "list_files",
            "read_file",
            "search_files",
            "git_diff",
            "get_changed_files"
        ]
    );
    assert_eq!(names(ToolMode::ReadWrite, &config).len(), 7);
    assert!(names(ToolMode::ReadWrite, &config).contains(&"apply_patch".to_string()));
    assert_eq!(names(ToolMode::All, &config).len(), 13);
    let config: ToolsConfig = serde_json::from_value(json!({"tools": [
        {"name": "shell", "enabled": false},
        {"name": "read_file", "permissions": "write", "enabled": true}
    ]}))
    .unwrap();
    let all = names(ToolMode::All, &config);
    assert_eq!(all.len(), 12);
    assert!(!all.contains(&"shell".to_string()));
    assert!(
        names(ToolMode::ReadOnly, &config).contains(&"read_file".to_string()),
        "built-in classes come from code"
    );
}

fn check_schema(schema: &Value, name: &str) {
    assert_eq!(schema["type"], "object", "{name}");
    let properties = schema["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("{name}: properties"));
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        assert!(
            properties.contains_key(required.as_str().unwrap()),
            "{name}: {required}"
        );
    }
    for (property, spec) in properties {
        assert!(spec["type"].is_string(), "{name}.{property} has a type");
        assert!(
            spec.get("description").is_some(),
            "{name}.{property} is described"
        );
    }
}

#[test]
fn definitions_are_valid_and_described() {
    for tool in builtin_tools(
        ToolMode::All,
        &ToolsConfig::default(),
        Arc::new(ExecSessions::default()),
    ) {
        let definition = tool.definition();
        assert!(!definition.description.is_empty());
        assert!(
            definition.description.len() < 500,
            "{} is concise",
            definition.name
        );
        check_schema(&definition.parameters, &definition.name);
        let spec = braincode_tools::registry::builtin_spec(&definition.name).unwrap();
        assert_eq!(definition.permission, spec.permission);
    }
}

fn definition(name: &str, permission: ToolPermission) -> ToolDefinition {
    ToolDefinition {
        name: name.to_string(),
        description: String::new(),
        parameters: json!({"type": "object"}),
        permission,
        risk: ToolRisk::Low,
    }
}

#[test]
fn approval_decision() {
    let dir = tempfile::tempdir().unwrap();
    let policy = PermissionPolicy::default();
    let evaluate = |tool: &str, args: &Value| {
        policy.evaluate(&PermissionRequest {
            tool_name: tool,
            arguments: args,
            project_root: dir.path(),
            session_history: None,
        })
    };
    let cases: Vec<(&str, ToolPermission, Value, bool)> = vec![
        (
            "read_file",
            ToolPermission::Read,
            json!({"path": "a"}),
            false,
        ),
        (
            "search_files",
            ToolPermission::Read,
            json!({"query": "git push"}),
            false,
        ),
        (
            "edit_file",
            ToolPermission::Write,
            json!({"path": "a.rs"}),
            true,
        ),
        (
            "edit_file",
            ToolPermission::Write,
            json!({"path": "src/auth/a.rs"}),
            true,
        ),
        (
            "shell",
            ToolPermission::Execute,
            json!({"command": "cargo test"}),
            false,
        ),
        (
            "shell",
            ToolPermission::Execute,
            json!({"command": "cargo build"}),
            true,
        ),
        (
            "shell",
            ToolPermission::Execute,
            json!({"command": "$X"}),
            true,
        ),
        (
            "web_search",
            ToolPermission::Read,
            json!({"q": "rm -rf"}),
            false,
        ),
        ("mcp__connect", ToolPermission::Execute, json!({}), false),
        // An MCP tool runs without a person only when its server marks it read-only
        // (`readOnlyHint`, a Read definition), and then not if its name has a mutating verb.
        (
            "mcp__github__get_issue",
            ToolPermission::Write,
            json!({}),
            true,
        ),
        (
            "mcp__github__get_issue",
            ToolPermission::Read,
            json!({}),
            false,
        ),
        (
            "mcp__github__delete_issue",
            ToolPermission::Read,
            json!({}),
            true,
        ),
        (
            "mcp__github__create_issue",
            ToolPermission::Execute,
            json!({}),
            true,
        ),
        (
            "mcp__db__query",
            ToolPermission::Execute,
            json!({"sql": "DROP TABLE users"}),
            true,
        ),
        (
            "custom_reader",
            ToolPermission::Read,
            json!({"x": "sudo reboot"}),
            true,
        ),
        (
            "custom_reader",
            ToolPermission::Read,
            json!({"x": "hello"}),
            false,
        ),
    ];
    for (name, permission, args, expected) in cases {
        let evaluation = evaluate(name, &args);
        assert_eq!(
            requires_approval(&definition(name, permission), &args, &evaluation),
            expected,
            "{name} {args}"
        );
    }
}
