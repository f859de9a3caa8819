//! Secret environment variables: recognising them by name and removing them from a child's
//! environment.
//!
//! The sandbox hides secret *files*; this module keeps secret *values* that Braincode itself
//! holds in its environment (API keys, tokens) out of the commands it runs. Recognition is by
//! name only and case-insensitive, so it errs on the side of removing a variable.

use std::ffi::OsStr;
use std::process::Command;

/// Whether an environment variable name holds a secret; one definition for the whole
/// product (the same names are redacted from text that leaves the process).
pub use braincode_protocol::secrets::is_secret_env_name;

fn is_secret_env_os_name(name: &OsStr) -> bool {
    // A name that is not UTF-8 cannot be matched reliably: treat it as a secret.
    name.to_str().is_none_or(is_secret_env_name)
}

/// Removes every secret-named variable from the command's environment (call on every spawned
/// child).
///
/// Covers both the variables the child would inherit from this process and the ones set
/// explicitly on `command`. Call it again after adding variables to the command.
pub fn scrub_secret_env(command: &mut Command) {
    let explicit: Vec<_> = command
        .get_envs()
        .filter(|(name, value)| value.is_some() && is_secret_env_os_name(name))
        .map(|(name, _)| name.to_os_string())
        .collect();
    let inherited = std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| is_secret_env_os_name(name));
    for name in inherited.chain(explicit) {
        command.env_remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_recognised_case_insensitively() {
        for name in [
            "OPENAI_API_KEY",
            "anthropic_api_key",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "gitlab_token",
            "NPM_TOKEN",
            "CARGO_REGISTRY_TOKEN",
            "HF_TOKEN",
            "GHTOKEN",
            "CLIENT_SECRET",
            "MY_SECRETS_FILE",
            "DB_PASSWORD",
            "PGPASSWORD",
            "MYSQL_PWD",
            "SSH_PASSPHRASE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_DEVOPS_PAT",
            "STRIPE_APIKEY",
            "SIGNING_PRIVATE_KEY",
            "FOO_API_KEY",
        ] {
            assert!(is_secret_env_name(name), "{name} should be a secret");
        }
    }

    #[test]
    fn ordinary_names_are_not_secrets() {
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "TERM",
            "LANG",
            "TMPDIR",
            "RUST_LOG",
            "CARGO_HOME",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD_LAYOUT",
            "SSH_AUTH_SOCK",
            "PATHEXT",
        ] {
            assert!(!is_secret_env_name(name), "{name} should not be a secret");
        }
    }

    #[test]
    fn scrub_removes_explicit_secret_variables_only() {
        let mut command = Command::new("true");
        command.env("FOO_API_KEY", "x").env("KEEP_ME", "y");
        scrub_secret_env(&mut command);
        let envs: Vec<_> = command.get_envs().collect();
        assert!(envs.contains(&(OsStr::new("FOO_API_KEY"), None)));
        assert!(envs.contains(&(OsStr::new("KEEP_ME"), Some(OsStr::new("y")))));
    }
}
