//! Path rules: checking and compiling a path pattern (`~` and `$HOME` expanded) and matching
//! it against a written path.

use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobMatcher};

use crate::config::{PathRule, PolicyDecision, ReviewRequirement};
use crate::paths::normalize_path_text;

/// Checks a path pattern; the error explains what is wrong.
pub fn check_path_pattern(pattern: &str) -> Result<(), String> {
    parse_glob(pattern).map(|_| ())
}

/// A path pattern with `~`, `$HOME` or `${HOME}` at its start expanded to the home directory
/// (as written and, when different, with symlinks resolved); other patterns as they are.
pub fn expand_path_pattern(pattern: &str) -> Vec<String> {
    let trimmed = pattern.trim();
    let is_home = ["~/", "$HOME/", "${HOME}/"]
        .iter()
        .any(|prefix| trimmed.starts_with(prefix))
        || matches!(trimmed, "~" | "$HOME" | "${HOME}");
    if !is_home {
        return vec![pattern.to_string()];
    }
    let Some(home) = crate::policy::shell::home_dir() else {
        return vec![pattern.to_string()];
    };
    let mut out = vec![crate::policy::shell::expand_home(trimmed)];
    if let Ok(canonical) = std::fs::canonicalize(&home) {
        let canonical = canonical.display().to_string();
        if canonical != home {
            let rest = out[0].strip_prefix(&home).unwrap_or("").to_string();
            out.push(format!("{}{rest}", canonical.trim_end_matches('/')));
        }
    }
    out
}

/// Parses (and so validates) a path pattern. Compiling it into a matcher is deferred to the
/// first match: it builds a regex, which would otherwise cost every run's start-up.
fn parse_glob(pattern: &str) -> Result<Glob, String> {
    let normalized = normalize_path_text(pattern);
    if normalized.is_empty() {
        return Err("pattern is empty".to_string());
    }
    GlobBuilder::new(&normalized)
        .literal_separator(true)
        .case_insensitive(true)
        .backslash_escape(false)
        .build()
        .map_err(|error| error.kind().to_string())
}

/// A rule ready for matching.
#[derive(Debug, Clone)]
pub struct CompiledPathRule {
    /// Pattern as written.
    pub pattern: String,
    /// Action.
    pub action: PolicyDecision,
    /// Whether a match forces a review.
    pub review: bool,
    /// Why.
    pub reason: String,
    /// Whether this is a built-in rule.
    pub default_rule: bool,
    /// Whether this is the built-in rule for everything outside the project (`../**`), which
    /// commands soften to ask (a log in /tmp) while file tools are denied.
    pub outside_project: bool,
    absolute: bool,
    globs: Vec<Glob>,
    matchers: OnceLock<Vec<GlobMatcher>>,
}

impl CompiledPathRule {
    /// Compiles a rule; `~/`, `$HOME/` and `${HOME}/` patterns are expanded first.
    pub fn new(rule: &PathRule, default_rule: bool) -> Result<Self, String> {
        let expanded = expand_path_pattern(&rule.pattern);
        let globs = expanded
            .iter()
            .map(|pattern| parse_glob(pattern))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            pattern: rule.pattern.clone(),
            action: rule.edit,
            review: rule.review == Some(ReviewRequirement::Required),
            reason: rule.reason.clone().unwrap_or_default(),
            default_rule,
            outside_project: default_rule && rule.pattern == "../**",
            absolute: expanded
                .first()
                .is_some_and(|p| normalize_path_text(p).starts_with('/')),
            globs,
            matchers: OnceLock::new(),
        })
    }

    /// Whether the rule matches a target given by its project-relative form (`../…` when
    /// outside) and its absolute form.
    pub fn matches(&self, relative: &str, absolute: &str) -> bool {
        let matchers = self
            .matchers
            .get_or_init(|| self.globs.iter().map(Glob::compile_matcher).collect());
        let target = if self.absolute { absolute } else { relative };
        matchers.iter().any(|matcher| matcher.is_match(target))
    }
}
