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

/// Default deny rules for secrets and start-up files in the user's home (`~` is the home
/// directory, also when written `$HOME`): commands may not write there either.
pub const DEFAULT_HOME_PATH_RULES: &[(&str, &str)] = &[
    ("~/.ssh/**", "SSH keys and authorized_keys are off limits"),
    ("~/.aws/**", "cloud credentials are off limits"),
    ("~/.gnupg/**", "GnuPG keys are off limits"),
    ("~/.config/gcloud/**", "cloud credentials are off limits"),
    ("~/.kube/**", "cluster credentials are off limits"),
    ("~/.docker/**", "registry credentials are off limits"),
    ("~/.netrc", "stored passwords are off limits"),
    (
        "~/.git-credentials",
        "stored git credentials are off limits",
    ),
    (
        "~/.gitconfig",
        "the user's git configuration (aliases run programs) is off limits",
    ),
    (
        "~/.config/git/**",
        "the user's git configuration is off limits",
    ),
    (
        "~/.npmrc",
        "the user's npm configuration (tokens, script-shell) is off limits",
    ),
    (
        "~/.cargo/config*",
        "the user's cargo configuration (runners) is off limits",
    ),
    (
        "~/.cargo/credentials*",
        "cargo registry tokens are off limits",
    ),
    ("~/.bashrc", "shell start-up files are off limits"),
    ("~/.bash_profile", "shell start-up files are off limits"),
    ("~/.profile", "shell start-up files are off limits"),
    ("~/.zshrc", "shell start-up files are off limits"),
    ("~/.zshenv", "shell start-up files are off limits"),
    ("~/.config/fish/**", "shell start-up files are off limits"),
];

/// Reason of the deny rule over the Braincode home.
pub const BRAINCODE_HOME_REASON: &str =
    "the Braincode home (credentials, settings, sessions) is off limits";

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
    let Some(home) = super::shell::home_dir() else {
        return vec![pattern.to_string()];
    };
    let mut out = vec![super::shell::expand_home(trimmed)];
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
                        } else if same_word(&word.text, expected) {
                            true
                        } else if !anchored
                            && word.text.contains('/')
                            && !expected.contains('/')
                            && command_basename(&word.text) == *expected
                        {
                            // `chrt -o 0 /usr/bin/curl`: a program named by its path.
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

/// Whether a word equals a (lower-case) pattern word, ignoring case.
fn same_word(word: &str, expected: &str) -> bool {
    if word.is_ascii() {
        word.eq_ignore_ascii_case(expected)
    } else {
        word.to_lowercase() == expected
    }
}

/// Whether an unquoted glob word could expand to `expected`.
fn glob_word_matches(word: &str, expected: &str) -> bool {
    GlobBuilder::new(&word.to_lowercase())
        .literal_separator(true)
        .build()
        .is_ok_and(|glob| glob.compile_matcher().is_match(expected))
}

/// The loose texts a deny pattern is searched in when a command cannot be fully analysed:
/// quotes removed (`g""it push`), quotes as separators (`env -S'git push'`), and `=`, `,`, `:`
/// and the script's own `IFS` characters as separators (`c=git push`, `IFS=,; c=rm,-rf,x`).
pub fn loose_variants(raw: &str, separators: &str) -> Vec<String> {
    let quotes_apart: String = raw
        .chars()
        .map(|c| if c == '"' || c == '\'' { ' ' } else { c })
        .collect();
    let split: String = raw
        .chars()
        .map(|c| {
            if matches!(c, '=' | ',' | ':') || separators.contains(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    let mut out = Vec::new();
    for text in [
        loose_text(raw),
        loose_text(&quotes_apart),
        loose_text(&split),
    ] {
        if !out.contains(&text) {
            out.push(text);
        }
    }
    out
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

/// The default path rules as compiled rules: [`DEFAULT_PATH_RULES`],
/// [`DEFAULT_HOME_PATH_RULES`] and the Braincode home (`BRAINCODE_HOME`, else
/// `~/.braincode`).
pub fn default_path_rules() -> Vec<CompiledPathRule> {
    let mut rules: Vec<CompiledPathRule> = DEFAULT_PATH_RULES
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
        .collect();
    for (pattern, reason) in DEFAULT_HOME_PATH_RULES {
        rules.extend(deny_rule(pattern, reason));
    }
    let braincode_home = std::env::var("BRAINCODE_HOME")
        .ok()
        .filter(|home| !home.trim().is_empty())
        .unwrap_or_else(|| "~/.braincode".to_string());
    rules.extend(directory_deny_rule(&braincode_home, BRAINCODE_HOME_REASON));
    rules
}

/// A built-in deny rule.
fn deny_rule(pattern: &str, reason: &str) -> Option<CompiledPathRule> {
    CompiledPathRule::new(
        &PathRule {
            pattern: pattern.to_string(),
            edit: PolicyDecision::Deny,
            review: None,
            reason: Some(reason.to_string()),
        },
        true,
    )
    .ok()
}

/// Built-in deny rules for a directory and everything in it (as given and, when it exists,
/// with symlinks resolved).
pub fn directory_deny_rule(directory: &str, reason: &str) -> Vec<CompiledPathRule> {
    let base = directory.trim_end_matches('/');
    let mut patterns = vec![base.to_string()];
    if base.starts_with('/')
        && let Ok(canonical) = std::fs::canonicalize(base)
    {
        let canonical = canonical.display().to_string();
        if canonical != base {
            patterns.push(canonical);
        }
    }
    patterns
        .iter()
        .flat_map(|base| [base.clone(), format!("{base}/**")])
        .filter_map(|pattern| deny_rule(&pattern, reason))
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
        assert!(rules.len() > DEFAULT_PATH_RULES.len() + DEFAULT_HOME_PATH_RULES.len());
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
