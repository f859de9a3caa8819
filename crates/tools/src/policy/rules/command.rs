//! Command rules: compiling a command pattern (words spelled the way commands are normalized,
//! or a `*` glob over the whole line) and matching it against one form of a simple command
//! or against loose text.

use globset::GlobBuilder;
use regex::Regex;

use crate::config::{CommandRule, PolicyDecision, ReviewRequirement};
use crate::policy::unwrap::{command_basename, unwrap_command};
use crate::policy::words::Word;

/// Checks a command pattern; the error explains what is wrong.
pub fn check_command_pattern(pattern: &str) -> Result<(), String> {
    if pattern.split_whitespace().next().is_none() {
        return Err("pattern is empty".to_string());
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::rules::loose_text;

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
}
