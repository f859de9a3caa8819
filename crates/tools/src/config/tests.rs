//! `tools.json` parsing and validation.

use super::*;
use serde_json::json;

#[test]
fn parses_legacy_and_custom_entries() {
    let config: ToolsConfig = serde_json::from_value(json!({
        "tools": [
            {"name": "shell", "requiresApproval": false},
            {"name": "read_file", "enabled": false},
            {"name": "my_tool", "permissions": "read", "risk": "low", "defaultEnabled": false}
        ]
    }))
    .unwrap();
    assert_eq!(config.tools[0].approval_policy, ApprovalPolicy::Allow);
    assert_eq!(config.tools[0].permissions, ToolPermission::Execute);
    assert!(!config.tools[1].enabled);
    assert!(!config.is_enabled("read_file"));
    assert!(config.is_enabled("list_files"));
    assert!(!config.tools[2].is_builtin());
    assert!(!config.tools[2].enabled, "enabled follows defaultEnabled");
    assert!(config.validate().is_ok());
    let round_trip: ToolsConfig =
        serde_json::from_value(serde_json::to_value(&config).unwrap()).unwrap();
    assert_eq!(round_trip, config);
}

#[test]
fn default_lists_every_builtin_tool() {
    let config = ToolsConfig::default();
    assert_eq!(config.tools.len(), 13);
    let mut partial: ToolsConfig =
        serde_json::from_value(json!({"tools": [{"name": "custom"}]})).unwrap();
    assert!(partial.add_missing_builtin_entries());
    assert_eq!(partial.tools.len(), 14);
    assert_eq!(partial.tools[0].name, "custom");
    assert!(!partial.add_missing_builtin_entries());
}

#[test]
fn checks_are_clamped() {
    let config: ToolsConfig = serde_json::from_value(json!({
        "checks": {"timeoutMs": 5, "maxOutputBytes": 10_000_000, "strategy": "all"}
    }))
    .unwrap();
    let checks = config.checks_or_default();
    assert_eq!(checks.timeout_ms, 1_000);
    assert_eq!(checks.max_output_bytes, 512_000);
    assert_eq!(checks.strategy, CheckStrategy::All);
    assert!(checks.enabled);
    assert_eq!(
        ToolsConfig::default().checks_or_default().timeout_ms,
        180_000
    );
}

#[test]
fn validation_names_the_rule_and_pattern() {
    let config: ToolsConfig = serde_json::from_value(json!({
        "tools": [{"name": "shell"}, {"name": "shell"}, {"name": ""}],
        "checks": {"policies": {"frontend": {}, "weird": {}}, "scripts": [" "]},
        "permissions": {
            "paths": [{"pattern": "src/**", "edit": "allow"}, {"pattern": "src/[a", "edit": "deny"}],
            "commands": [{"pattern": "", "policy": "deny"}, {"pattern": "git push", "policy": "ask", "review": "required"}]
        }
    }))
    .unwrap();
    let errors = config.validate().unwrap_err();
    let locations: Vec<_> = errors
        .problems
        .iter()
        .map(|p| p.location.as_str())
        .collect();
    assert_eq!(
        locations,
        [
            "tools[1].name",
            "tools[2].name",
            "checks.scripts[0]",
            "checks.policies.weird",
            "permissions.paths[1].pattern",
            "permissions.commands[0].pattern",
        ]
    );
    assert!(errors.problems[4].message.contains("\"src/[a\""));
    assert!(errors.to_string().contains("permissions.paths[1].pattern"));
}

#[test]
fn bad_values_are_serde_errors_with_positions() {
    let error = ToolsConfig::from_json_str(
        "{\n  \"permissions\": {\"paths\": [{\"pattern\": \"x\", \"edit\": \"maybe\"}]}\n}",
    )
    .unwrap_err();
    assert_eq!(error.line(), 2);
    assert!(error.to_string().contains("maybe"));
}
