//! Secrets known to this process, and their redaction wherever text leaves it.
//!
//! Every credential Braincode resolves (auth.json keys, `*_API_KEY`/token environment values)
//! is registered here once; every place text leaves the process — model error messages,
//! tool output sent to a model, journal lines, printed reports — passes it through
//! [`redact_secrets`] *before* clipping it, so a clipped echo cannot leave a prefix behind.
//!
//! This is the one redactor of the product. It finds a key however a command or a model may
//! have turned it: whole, JSON-escaped, reversed, base64-encoded (standard or URL-safe, at any
//! byte alignment), spelled with spaces or line breaks between its characters, or any part of
//! it of [`MIN_SECRET_CHARS`] characters or more. Every [`MIN_SECRET_CHARS`]-character window
//! of every form goes into one Aho-Corasick automaton, matched against the text with its
//! whitespace (and JSON `\n`, `\t`, `\r` escapes) left out; each run of matched characters, with
//! the spacing inside it, becomes one [`REDACTED`].

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use aho_corasick::AhoCorasick;
use base64::Engine as _;

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shortest value treated as a secret (shorter ones, "1" or "true", would redact ordinary
/// text), and the shortest part of a secret that is redacted on its own.
pub const MIN_SECRET_CHARS: usize = 8;

/// The registered secrets and the automaton built from them.
struct Registry {
    secrets: Vec<String>,
    matcher: Option<Arc<AhoCorasick>>,
}

static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    secrets: Vec::new(),
    matcher: None,
});

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

/// The standard and URL-safe base64 of `secret` at each of the three byte alignments it can
/// have inside a longer encoded text, cut to the characters that depend on its bytes alone.
fn base64_forms(secret: &str) -> Vec<String> {
    let mut forms = Vec::new();
    for engine in [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        for (offset, first_own_char) in [(0usize, 0usize), (1, 2), (2, 3)] {
            let mut bytes = vec![0u8; offset];
            bytes.extend_from_slice(secret.as_bytes());
            let encoded = engine.encode(&bytes);
            let total = bytes.len();
            let own_end = total / 3 * 4 + total % 3;
            if let Some(form) = encoded.get(first_own_char..own_end.min(encoded.len())) {
                forms.push(form.to_string());
            }
        }
    }
    forms
}

/// Every form of `secret` the redactor looks for (see the module docs).
fn forms_of(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_string(), secret.chars().rev().collect()];
    // Its JSON-escaped form, for text that is already serialized (journal lines).
    if let Ok(json) = serde_json::to_string(secret) {
        forms.push(json[1..json.len() - 1].to_string());
    }
    forms.extend(base64_forms(secret));
    forms
}

/// The [`MIN_SECRET_CHARS`]-character windows of `form` (the form itself when shorter),
/// with its whitespace left out as the matched text has it.
fn windows(form: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = form.chars().filter(|c| !c.is_whitespace()).collect();
    if chars.len() <= MIN_SECRET_CHARS {
        if !chars.is_empty() {
            out.push(chars.iter().collect());
        }
        return;
    }
    for window in chars.windows(MIN_SECRET_CHARS) {
        out.push(window.iter().collect());
    }
}

fn build_matcher(secrets: &[String]) -> Option<Arc<AhoCorasick>> {
    let mut patterns = Vec::new();
    for secret in secrets {
        for form in forms_of(secret) {
            windows(&form, &mut patterns);
        }
    }
    patterns.sort();
    patterns.dedup();
    if patterns.is_empty() {
        return None;
    }
    // An automaton over a few thousand short patterns cannot fail to build; if it did, the
    // registered secrets are still replaced whole (see `redact_secrets`).
    AhoCorasick::new(&patterns).ok().map(Arc::new)
}

/// Registers a secret value (trimmed; ignored when shorter than [`MIN_SECRET_CHARS`]).
pub fn register_secret(value: &str) {
    let value = value.trim();
    if value.chars().count() < MIN_SECRET_CHARS {
        return;
    }
    let mut registry = match REGISTRY.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    if registry.secrets.iter().any(|s| s == value) {
        return;
    }
    registry.secrets.push(value.to_string());
    registry.matcher = build_matcher(&registry.secrets);
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

/// `text` without whitespace and JSON whitespace escapes, and for each byte kept its offset
/// in `text`.
fn squeeze(text: &str) -> (String, Vec<usize>) {
    let mut squeezed = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        }
        if c == '\\' {
            match bytes.get(at + 1) {
                Some(b'n' | b't' | b'r') => {
                    chars.next();
                    continue;
                }
                Some(b'\\') => {
                    // An escaped backslash: both characters are text.
                    squeezed.push_str("\\\\");
                    origin.extend([at, at + 1]);
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        squeezed.push(c);
        origin.extend((0..c.len_utf8()).map(|i| at + i));
    }
    (squeezed, origin)
}

/// `text` with every registered secret, in every form the module docs list, replaced by
/// [`REDACTED`]. Borrows when nothing was found.
pub fn redact_secrets(text: &str) -> Cow<'_, str> {
    let matcher = {
        let registry = match REGISTRY.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        match &registry.matcher {
            Some(matcher) => Arc::clone(matcher),
            None if registry.secrets.is_empty() => return Cow::Borrowed(text),
            None => {
                let mut out = Cow::Borrowed(text);
                for secret in &registry.secrets {
                    if out.contains(secret.as_str()) {
                        out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
                    }
                }
                return out;
            }
        }
    };
    let (squeezed, origin) = squeeze(text);
    // Runs of matched bytes of the squeezed text, merged when they touch.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for found in matcher.find_overlapping_iter(squeezed.as_str()) {
        let (start, end) = (found.start(), found.end());
        match runs.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => runs.push((start, end)),
        }
    }
    if runs.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (start, end) in runs {
        let (Some(&from), Some(&last)) = (origin.get(start), origin.get(end - 1)) else {
            continue;
        };
        // `last` is the final byte of a character: matches end on character boundaries.
        let to = last + 1;
        if from < copied {
            continue;
        }
        out.push_str(&text[copied..from]);
        out.push_str(REDACTED);
        copied = to;
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// [`redact_secrets`], also for `extra` (a key about to be used): registered when it is long
/// enough to be a secret, replaced where it occurs whole otherwise (from 4 characters).
pub fn redact_secrets_with(text: &str, extra: Option<&str>) -> String {
    let text = match extra.map(str::trim) {
        Some(extra) if extra.chars().count() >= MIN_SECRET_CHARS => {
            register_secret(extra);
            Cow::Borrowed(text)
        }
        Some(extra) if extra.len() >= 4 && text.contains(extra) => {
            Cow::Owned(text.replace(extra, REDACTED))
        }
        _ => Cow::Borrowed(text),
    };
    redact_secrets(&text).into_owned()
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

    #[test]
    fn reversed_spaced_encoded_and_partial_forms_are_redacted() {
        let key = "sk-live-Zq81bWt4Lx0vRk27";
        register_secret(key);
        let reversed: String = key.chars().rev().collect();
        let spaced: String = key.chars().map(|c| format!("{c} ")).collect();
        for text in [
            format!("reversed {reversed} here"),
            format!("spaced {spaced}here"),
            format!("lines {}\n{} here", &key[..10], &key[10..]),
            format!("json {}\\n{} here", &key[..10], &key[10..]),
            format!("partial {} here", &key[5..15]),
            format!("tail {} here", &key[key.len() - 8..]),
        ] {
            let out = redact_secrets(&text);
            assert!(
                out.contains(REDACTED) && !out.contains(&key[8..16]),
                "{text} -> {out}"
            );
            assert!(out.ends_with(" here"), "{text} -> {out}");
        }
        for prefix in ["", "x", "xy", "API_KEY="] {
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE,
            ] {
                let encoded = engine.encode(format!("{prefix}{key}\n"));
                let out = redact_secrets(&encoded);
                assert!(out.contains(REDACTED), "{prefix:?} {encoded} -> {out}");
            }
        }
        // Seven characters of it are not a secret: ordinary text stays.
        let seven = &key[3..10];
        assert_eq!(redact_secrets(seven), seven);
    }

    #[test]
    fn an_extra_key_is_redacted_even_when_short() {
        assert_eq!(
            redact_secrets_with("key abcd1 leaked", Some("abcd1")),
            "key [redacted] leaked"
        );
        assert_eq!(
            redact_secrets_with("key 0a1b2c3d4e5f leaked", Some("0a1b2c3d4e5f")),
            "key [redacted] leaked"
        );
        assert_eq!(redact_secrets_with("nothing", None), "nothing");
    }
}
