//! Rules on tool names: `mcp__github__*`, `mcp__db__drop_*`, `exec_command`. `*` matches any
//! run of characters; matching ignores case.

use regex::Regex;

use crate::config::ToolRule;

/// Whether `pattern` is a usable tool-name pattern.
pub fn check_tool_pattern(pattern: &str) -> Result<(), String> {
    let pattern = pattern.trim();
    if pattern.is_empty() {
        return Err("pattern is empty".into());
    }
    if let Some(bad) = pattern
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '.')))
    {
        return Err(format!(
            "{bad:?} is not allowed: tool names use letters, digits, `_`, `-` and `.`, and `*` matches any run"
        ));
    }
    Ok(())
}

/// A tool rule ready to match.
#[derive(Debug, Clone)]
pub struct CompiledToolRule {
    pub(crate) rule: ToolRule,
    matcher: Regex,
}

impl CompiledToolRule {
    /// Compiles `rule`.
    pub fn new(rule: &ToolRule) -> Result<Self, String> {
        check_tool_pattern(&rule.pattern)?;
        let body = rule
            .pattern
            .trim()
            .split('*')
            .map(regex::escape)
            .collect::<Vec<_>>()
            .join(".*");
        let matcher = Regex::new(&format!("(?i)^{body}$")).map_err(|err| err.to_string())?;
        Ok(Self {
            rule: rule.clone(),
            matcher,
        })
    }

    /// Whether the rule covers tool `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::PolicyDecision;

    fn rule(pattern: &str) -> CompiledToolRule {
        CompiledToolRule::new(&ToolRule {
            pattern: pattern.into(),
            policy: PolicyDecision::Deny,
            review: None,
            reason: None,
        })
        .unwrap()
    }

    #[test]
    fn stars_match_runs_and_the_rest_is_literal() {
        assert!(rule("mcp__github__*").matches("mcp__github__create_issue"));
        assert!(rule("mcp__*__delete_*").matches("MCP__db__delete_rows"));
        assert!(!rule("mcp__github__*").matches("mcp__githubx__x"));
        assert!(!rule("exec_command").matches("exec_command2"));
        assert!(rule("mcp__a.b__t").matches("mcp__a.b__t"));
        assert!(!rule("mcp__a.b__t").matches("mcp__aXb__t"));
        assert!(check_tool_pattern("mcp__x__[a]").is_err());
        assert!(check_tool_pattern("  ").is_err());
    }
}
