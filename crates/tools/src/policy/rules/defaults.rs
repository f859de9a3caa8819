//! The rules every policy starts with: sensitive project paths, secrets and start-up files in
//! the home directory, the Braincode home, and the default command rules.

use super::{CompiledCommandRule, CompiledPathRule};
use crate::config::{CommandRule, PathRule, PolicyDecision, ReviewRequirement};

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
    use crate::policy::rules::check_path_pattern;

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
