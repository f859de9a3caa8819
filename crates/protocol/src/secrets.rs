//! Secrets known to this process, and their redaction wherever text leaves it.
//!
//! Every credential Braincode resolves (auth.json keys, `*_API_KEY`/token environment values)
//! is registered here once; every place text leaves the process — model error messages,
//! tool output sent to a model, journal lines, printed reports — passes it through
//! [`redact_secrets`] *before* clipping it, so a clipped echo cannot leave a prefix behind.

use std::borrow::Cow;
use std::sync::RwLock;

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shortest value treated as a secret: shorter ones ("1", "true") would redact ordinary text.
pub const MIN_SECRET_CHARS: usize = 8;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Words that mark a secret wherever they appear in a name (`PGPASSWORD`, `CLIENT_SECRETS`).
const SECRET_SUBSTRINGS: &[&str] = &[
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
];

/// Words that mark a secret when they are a whole `_`-separated part of the name
/// (`GITHUB_TOKEN`, `X_AUTH_TOKEN_FILE`, but not `TOKENIZERS_PARALLELISM`).
const SECRET_WORDS: &[&str] = &["TOKEN", "PAT", "APIKEY", "SESSIONKEY", "AUTHKEY"];

/// Names that are secrets although no rule above catches them.
const SECRET_NAMES: &[&str] = &[
    "MYSQL_PWD",
    "DOCKER_AUTH_CONFIG",
    "NETRC",
    "GH_ENTERPRISE_TOKEN",
    "VAULT_TOKEN",
];

/// Whether an environment variable name holds a secret (`*_API_KEY`, `*_TOKEN`, `*_SECRET*`,
/// `*PASSWORD*`, `*_ACCESS_KEY*`, `AWS_SESSION_TOKEN`, `GITHUB_TOKEN`, …). Case-insensitive;
/// harmless names such as `PATH`, `PWD`, `HOME` or `TOKENIZERS_PARALLELISM` are not secrets.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if SECRET_NAMES.contains(&upper.as_str()) {
        return true;
    }
    if SECRET_SUBSTRINGS.iter().any(|word| upper.contains(word)) {
        return true;
    }
    upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|part| SECRET_WORDS.contains(&part) || part.ends_with("TOKEN"))
}

/// Registers a secret value (trimmed; ignored when shorter than [`MIN_SECRET_CHARS`]).
pub fn register_secret(value: &str) {
    let value = value.trim();
    if value.chars().count() < MIN_SECRET_CHARS {
        return;
    }
    let mut forms = vec![value.to_string()];
    // Its JSON-escaped form, for text that is already serialized (journal lines).
    if let Ok(json) = serde_json::to_string(value) {
        let inner = &json[1..json.len() - 1];
        if inner != value {
            forms.push(inner.to_string());
        }
    }
    let mut secrets = match SECRETS.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    for form in forms {
        if !secrets.contains(&form) {
            secrets.push(form);
        }
    }
    // Longest first, so a secret that contains another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// Registers the value of every secret-named variable of this process's environment.
pub fn register_environment_secrets() {
    for (name, value) in std::env::vars_os() {
        if let (Some(name), Some(value)) = (name.to_str(), value.to_str())
            && is_secret_env_name(name)
        {
            register_secret(value);
        }
    }
}

/// `text` with every registered secret replaced by [`REDACTED`].
pub fn redact_secrets(text: &str) -> Cow<'_, str> {
    let secrets = match SECRETS.read() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for name in [
            "OPENAI_API_KEY",
            "anthropic_api_key",
            "GITHUB_TOKEN",
            "MY_SERVICE_TOKEN",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "STRIPE_SECRET_KEY",
        ] {
            assert!(is_secret_env_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "TOKENIZERS_PARALLELISM",
            "KEYMAP",
            "LANG",
            "PWD",
        ] {
            assert!(!is_secret_env_name(name), "{name}");
        }
    }

    #[test]
    fn registered_secrets_are_redacted_whole_and_short_values_ignored() {
        register_secret("sk-test-0123456789abcdef");
        register_secret("sk-test-0123456789abcdef-longer");
        register_secret("short");
        register_secret("with\"quote-secret");
        let text = "key sk-test-0123456789abcdef-longer and sk-test-0123456789abcdef; short stays";
        assert_eq!(
            redact_secrets(text),
            "key [redacted] and [redacted]; short stays"
        );
        assert_eq!(
            redact_secrets(r#"{"k":"with\"quote-secret"}"#),
            r#"{"k":"[redacted]"}"#
        );
        assert!(matches!(redact_secrets("nothing here"), Cow::Borrowed(_)));
    }
}
