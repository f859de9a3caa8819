//! Rules: the defaults every policy starts with, pattern compilation and matching.
//!
//! Command patterns are matched per simple command, word by word: a deny or ask pattern
//! matches when its words appear as consecutive words of any form of a command (so
//! `sudo rm -rf x` matches `rm -rf`, but `echo "git push is denied"` does not match
//! `git push`: the quoted text is one word). Allow patterns are stricter: they must match at
//! the start of the command as written, so `evil --x cargo test` is not allowed by
//! `cargo test`. A pattern with `*` is a glob over the whole command line.

use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobMatcher};
use regex::Regex;

use super::unwrap::{command_basename, unwrap_command};
use super::words::Word;
use crate::config::{CommandRule, PathRule, PolicyDecision, ReviewRequirement};
use crate::paths::normalize_path_text;

/// Default path rules: asked and reviewed, or denied (writes outside the project).
pub const DEFAULT_PATH_RULES: &[(&str, PolicyDecision, bool, &str)] = &[
    (
        "src/auth/**",
        PolicyDecision::Ask,
        true,
        "authentication code is sensitive: confirm and review changes",
    ),
    (
        "src/payment/**",
        PolicyDecision::Ask,
        true,
        "payment code is sensitive: confirm and review changes",
    ),
    (
        "db/**",
        PolicyDecision::Ask,
        true,
        "database files are sensitive: confirm and review changes",
    ),
    (
        "package.json",
        PolicyDecision::Ask,
        true,
        "package manifest changes affect dependencies and scripts: confirm and review",
    ),
    (
        ".github/workflows/**",
        PolicyDecision::Ask,
        true,
        "CI workflows run with repository secrets: confirm and review changes",
    ),
    (
        "../**",
        PolicyDecision::Deny,
        false,
        "writes outside the project are not allowed",
    ),
];

/// Default command rules.
pub const DEFAULT_COMMAND_RULES: &[(&str, PolicyDecision, &str)] = &[
    ("npm test", PolicyDecision::Allow, "running tests is safe"),
    ("pnpm test", PolicyDecision::Allow, "running tests is safe"),
    ("yarn test", PolicyDecision::Allow, "running tests is safe"),
    ("bun test", PolicyDecision::Allow, "running tests is safe"),
    (
        "npm run test",
        PolicyDecision::Allow,
        "running tests is safe",
    ),
    (
        "pnpm run test",
        PolicyDecision::Allow,
        "running tests is safe",
    ),
    (
        "yarn run test",
        PolicyDecision::Allow,
        "running tests is safe",
    ),
    (
        "bun run test",
        PolicyDecision::Allow,
        "running tests is safe",
    ),
    ("cargo test", PolicyDecision::Allow, "running tests is safe"),
    (
        "git push",
        PolicyDecision::Deny,
        "pushing publishes work outside this machine",
    ),
    (
        "npm publish",
        PolicyDecision::Deny,
        "publishing a package is irreversible",
    ),
    (
        "pnpm publish",
        PolicyDecision::Deny,
        "publishing a package is irreversible",
    ),
    (
        "yarn publish",
        PolicyDecision::Deny,
        "publishing a package is irreversible",
    ),
    (
        "bun publish",
        PolicyDecision::Deny,
        "publishing a package is irreversible",
    ),
    (
        "npm run publish",
        PolicyDecision::Deny,
        "publishing a package is irreversible",
    ),
    (
        "pnpm run publish",
        PolicyDecision::Deny,
        "publishing a package is irreversible",
    ),
    (
        "yarn run publish",
        PolicyDecision::Deny,
        "publishing a package is irreversible",
    ),
    (
        "bun run publish",
        PolicyDecision::Deny,
        "publishing a package is irreversible",
    ),
    (
        "cargo publish",
        PolicyDecision::Deny,
        "publishing a crate is irreversible",
    ),
    (
        "rm -rf",
        PolicyDecision::Deny,
        "recursive forced deletion is not allowed",
    ),
];

/// Checks a path pattern; the error explains what is wrong.
pub fn check_path_pattern(pattern: &str) -> Result<(), String> {
    parse_glob(pattern).map(|_| ())
}

/// Checks a command pattern; the error explains what is wrong.
pub fn check_command_pattern(pattern: &str) -> Result<(), String> {
    if pattern.split_whitespace().next().is_none() {
        return Err("pattern is empty".to_string());
    }
    Ok(())
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
    absolute: bool,
    glob: Glob,
    matcher: OnceLock<GlobMatcher>,
}

impl CompiledPathRule {
    /// Compiles a rule.
    pub fn new(rule: &PathRule, default_rule: bool) -> Result<Self, String> {
        Ok(Self {
            pattern: rule.pattern.clone(),
            action: rule.edit,
            review: rule.review == Some(ReviewRequirement::Required),
            reason: rule.reason.clone().unwrap_or_default(),
            default_rule,
            absolute: normalize_path_text(&rule.pattern).starts_with('/'),
            glob: parse_glob(&rule.pattern)?,
            matcher: OnceLock::new(),
        })
    }

    /// Whether the rule matches a target given by its project-relative form (`../…` when
    /// outside) and its absolute form.
    pub fn matches(&self, relative: &str, absolute: &str) -> bool {
        let matcher = self.matcher.get_or_init(|| self.glob.compile_matcher());
        if self.absolute {
            matcher.is_match(absolute)
        } else {
            matcher.is_match(relative)
        }
    }
}

#[derive(Debug, Clone)]
enum CommandMatcher {
    Words(Vec<String>),
    Glob(Regex),
}

/// How a command rule matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchStrength {
    /// Every pattern word matched a known word.
    Certain,
    /// A word only known at run time stood in for a pattern word.
    Possible,
}

/// A command rule ready for matching.
#[derive(Debug, Clone)]
pub struct CompiledCommandRule {
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
    matcher: CommandMatcher,
}

impl CompiledCommandRule {
    /// Compiles a rule.
    pub fn new(rule: &CommandRule, default_rule: bool) -> Result<Self, String> {
        check_command_pattern(&rule.pattern)?;
        let normalized = rule
            .pattern
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        let matcher = if normalized.contains('*') {
            let body = normalized
                .split('*')
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(".*");
            CommandMatcher::Glob(
                Regex::new(&format!("(?s)^{body}$")).map_err(|error| error.to_string())?,
            )
        } else {
            // Spell the pattern the way commands are normalized (`rm -fr` → `rm -rf`).
            let words: Vec<Word> = normalized.split(' ').map(Word::literal).collect();
            let unwrapped = unwrap_command(&words);
            let form = unwrapped.forms.last().cloned().unwrap_or(words);
            let mut parts: Vec<String> = form.into_iter().map(|w| w.text).collect();
            if let Some(first) = parts.first_mut() {
                *first = command_basename(first);
            }
            CommandMatcher::Words(parts)
        };
        Ok(Self {
            pattern: rule.pattern.clone(),
            action: rule.action_or_policy(),
            review: rule.review == Some(ReviewRequirement::Required),
            reason: rule.reason.clone().unwrap_or_default(),
            default_rule,
            matcher,
        })
    }

    /// Matches one form of a command. Allow rules only match at the start of the command as
    /// written (`anchored`) and only on known words.
    pub fn matches(&self, form: &[Word], anchored: bool) -> Option<MatchStrength> {
        match &self.matcher {
            CommandMatcher::Glob(regex) => {
                let line = form
                    .iter()
                    .map(|w| w.text.to_lowercase())
                    .collect::<Vec<_>>()
                    .join(" ");
                if !regex.is_match(&line) {
                    return None;
                }
                if form.iter().any(|w| w.dynamic) {
                    Some(MatchStrength::Possible)
                } else {
                    Some(MatchStrength::Certain)
                }
            }
            CommandMatcher::Words(pattern) => {
                if pattern.len() > form.len() {
                    return None;
                }
                let starts: Vec<usize> = if anchored {
                    vec![0]
                } else {
                    (0..=form.len() - pattern.len()).collect()
                };
                let mut best = None;
                for start in starts {
                    let mut strength = MatchStrength::Certain;
                    let all = pattern.iter().enumerate().all(|(offset, expected)| {
                        let word = &form[start + offset];
                        if word.dynamic {
                            strength = MatchStrength::Possible;
                            !anchored
                        } else if word.text.to_lowercase() == *expected {
                            true
                        } else if word.glob && glob_word_matches(&word.text, expected) {
                            // `git pus?` runs `git push` when a file named push exists.
                            strength = MatchStrength::Possible;
                            !anchored
                        } else {
                            false
                        }
                    });
                    if all {
                        if strength == MatchStrength::Certain {
                            return Some(strength);
                        }
                        best = Some(strength);
                    }
                }
                best
            }
        }
    }

    /// Whether the pattern occurs in loosely normalized text (used when a command could not
    /// be parsed: quotes, escapes and shell punctuation are dropped first).
    pub fn matches_loose_text(&self, loose: &str) -> bool {
        match &self.matcher {
            CommandMatcher::Glob(regex) => {
                let words: Vec<&str> = loose.split(' ').collect();
                (0..words.len()).any(|start| regex.is_match(&words[start..].join(" ")))
            }
            CommandMatcher::Words(pattern) => {
                let needle = format!(" {} ", pattern.join(" "));
                format!(" {loose} ").contains(&needle)
            }
        }
    }
}

impl CommandRule {
    fn action_or_policy(&self) -> PolicyDecision {
        self.policy
    }
}

/// Whether an unquoted glob word could expand to `expected`.
fn glob_word_matches(word: &str, expected: &str) -> bool {
    GlobBuilder::new(&word.to_lowercase())
        .literal_separator(true)
        .build()
        .is_ok_and(|glob| glob.compile_matcher().is_match(expected))
}

/// Text with quotes, escapes and shell punctuation replaced by spaces, lower-cased and
/// whitespace-collapsed; `rm` flag spellings are normalized too.
pub fn loose_text(raw: &str) -> String {
    let replaced: String = raw
        .chars()
        .map(|c| match c {
            '"' | '\'' | '\\' => '\0',
            ';' | '&' | '|' | '(' | ')' | '`' | '{' | '}' | '<' | '>' | '$' | '\n' | '\r'
            | '\t' => ' ',
            other => other,
        })
        .filter(|c| *c != '\0')
        .collect();
    let words: Vec<String> = replaced
        .split_whitespace()
        .map(|w| command_basename_if_path(&w.to_lowercase()))
        .collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut index = 0;
    while index < words.len() {
        out.push(words[index].clone());
        if words[index] == "rm" {
            // Collect the flag run after rm and re-spell it when it means -rf.
            let mut end = index + 1;
            let (mut recursive, mut force) = (false, false);
            while end < words.len() && words[end].starts_with('-') {
                let flag = &words[end];
                recursive |=
                    flag == "--recursive" || (!flag.starts_with("--") && flag.contains('r'));
                force |= flag == "--force" || (!flag.starts_with("--") && flag.contains('f'));
                end += 1;
            }
            if recursive && force {
                out.push("-rf".to_string());
                index = end;
                continue;
            }
        }
        index += 1;
    }
    out.join(" ")
}

fn command_basename_if_path(word: &str) -> String {
    if word.starts_with('/') && !word.ends_with('/') {
        command_basename(word)
    } else {
        word.to_string()
    }
}

/// The default path rules as compiled rules.
pub fn default_path_rules() -> Vec<CompiledPathRule> {
    DEFAULT_PATH_RULES
        .iter()
        .filter_map(|(pattern, action, review, reason)| {
            CompiledPathRule::new(
                &PathRule {
                    pattern: (*pattern).to_string(),
                    edit: *action,
                    review: review.then_some(ReviewRequirement::Required),
                    reason: Some((*reason).to_string()),
                },
                true,
            )
            .ok()
        })
        .collect()
}

/// The default command rules as compiled rules.
pub fn default_command_rules() -> Vec<CompiledCommandRule> {
    DEFAULT_COMMAND_RULES
        .iter()
        .filter_map(|(pattern, action, reason)| {
            CompiledCommandRule::new(
                &CommandRule {
                    pattern: (*pattern).to_string(),
                    policy: *action,
                    review: None,
                    reason: Some((*reason).to_string()),
                },
                true,
            )
            .ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str) -> CompiledCommandRule {
        CompiledCommandRule::new(
            &CommandRule {
                pattern: pattern.into(),
                policy: PolicyDecision::Deny,
                review: None,
                reason: None,
            },
            false,
        )
        .unwrap()
    }

    fn form(text: &str) -> Vec<Word> {
        text.split(' ')
            .map(|w| {
                if w.starts_with('$') {
                    Word::dynamic(w)
                } else {
                    Word::literal(w)
                }
            })
            .collect()
    }

    #[test]
    fn word_matching() {
        let push = rule("git   PUSH");
        assert_eq!(
            push.matches(&form("git push origin"), false),
            Some(MatchStrength::Certain)
        );
        assert_eq!(
            push.matches(&form("xargs git push"), false),
            Some(MatchStrength::Certain)
        );
        assert_eq!(push.matches(&form("xargs git push"), true), None);
        assert_eq!(
            push.matches(&form("git $x"), false),
            Some(MatchStrength::Possible)
        );
        assert_eq!(push.matches(&form("git status"), false), None);
        assert_eq!(
            push.matches(&[Word::literal("echo"), Word::literal("git push")], false),
            None
        );
        assert_eq!(
            rule("rm -fr").matches(&form("rm -rf /"), false),
            Some(MatchStrength::Certain)
        );
        assert_eq!(
            rule("npm run *").matches(&form("npm run build"), true),
            Some(MatchStrength::Certain)
        );
        assert_eq!(
            rule("npm run *").matches(&form("npx npm run build"), true),
            None
        );
    }

    #[test]
    fn loose_text_matching() {
        assert_eq!(
            loose_text("g\"\"it push; rm -r -f x ("),
            "git push rm -rf x"
        );
        assert!(rule("git push").matches_loose_text(&loose_text("echo 'git push' | sh")));
        assert!(!rule("git push").matches_loose_text(&loose_text("git pushx")));
        assert!(rule("git push*").matches_loose_text("echo git pushed"));
    }

    #[test]
    fn path_patterns() {
        let rules = default_path_rules();
        assert_eq!(rules.len(), 6);
        assert!(rules[0].matches("src/auth/a.ts", "/p/src/auth/a.ts"));
        assert!(rules[0].matches("SRC/Auth/a.ts", "/p/SRC/Auth/a.ts"));
        assert!(!rules[0].matches("src/authx/a.ts", "/p/src/authx/a.ts"));
        assert!(rules[3].matches("package.json", "/p/package.json"));
        assert!(!rules[3].matches("web/package.json", "/p/web/package.json"));
        assert!(rules[5].matches("../../etc/passwd", "/etc/passwd"));
        assert!(check_path_pattern("src/[a").is_err());
        assert!(check_path_pattern("").is_err());
    }
}
