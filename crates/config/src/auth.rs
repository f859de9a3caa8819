//! `auth.json`: provider credentials, and the order in which an API key is looked up.
//!
//! The file is created with mode 0600 and refused when group or others can read it. Secrets
//! only leave this module inside [`ApiKey`], whose `Debug` and `Display` print `***`.

use std::collections::BTreeMap;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod oauth;

pub use oauth::OauthEntry;

use crate::{ConfigError, Home, json_io};

/// An API key. Printing it (`{}` or `{:?}`) shows `***`; use [`ApiKey::expose`] to send it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself, for the request header and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// What kind of credential a provider has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CredentialKind {
    /// A plain API key.
    ApiKey,
    /// OAuth tokens from a subscription login.
    Oauth,
    /// Something this version does not understand.
    Unknown,
}

impl CredentialKind {
    /// `api-key`, `oauth` or `unknown`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CredentialKind::ApiKey => "api-key",
            CredentialKind::Oauth => "oauth",
            CredentialKind::Unknown => "unknown",
        }
    }

    fn of(value: &Value) -> CredentialKind {
        match value {
            Value::String(key) if !key.trim().is_empty() => CredentialKind::ApiKey,
            Value::Object(map) if map.get("apiKey").is_some_and(Value::is_string) => {
                CredentialKind::ApiKey
            }
            Value::Object(map) if map.get("oauth").is_some_and(Value::is_object) => {
                CredentialKind::Oauth
            }
            _ => CredentialKind::Unknown,
        }
    }
}

/// One provider in [`AuthStatus`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderAuth {
    /// Provider name.
    pub provider: String,
    /// Credential kind.
    pub kind: CredentialKind,
    /// The login that made an OAuth entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth_provider_id: Option<String>,
    /// When an OAuth entry's access token expires (ms since the Unix epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<i64>,
}

/// Which providers have credentials. Never holds a secret.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct AuthStatus {
    /// Providers, sorted by name.
    pub providers: Vec<ProviderAuth>,
}

/// Where an API key was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "name", rename_all = "kebab-case")]
pub enum KeySource {
    /// `auth.json`.
    AuthFile,
    /// An environment variable (named).
    Env(String),
}

impl fmt::Display for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeySource::AuthFile => f.write_str("auth.json"),
            KeySource::Env(name) => write!(f, "${name}"),
        }
    }
}

/// An API key and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedKey {
    /// The key.
    pub key: ApiKey,
    /// Its origin.
    pub source: KeySource,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct AuthFile {
    #[serde(default)]
    providers: BTreeMap<String, Value>,
    #[serde(flatten)]
    rest: BTreeMap<String, Value>,
}

/// `auth.json` access.
#[derive(Debug, Clone)]
pub struct AuthStore {
    path: PathBuf,
}

impl AuthStore {
    /// The store of `home`.
    pub fn new(home: &Home) -> Self {
        Self {
            path: home.auth_path(),
        }
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_permissions(&self) -> Result<bool, ConfigError> {
        match std::fs::metadata(&self.path) {
            Ok(meta) if !meta.is_file() => Err(ConfigError::Read {
                path: self.path.clone(),
                source: std::io::Error::other(
                    "it is not a regular file (a directory?): remove it, then `braincode auth set <provider>`",
                ),
            }),
            Ok(meta) => {
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(ConfigError::InsecurePermissions {
                        path: self.path.clone(),
                        mode,
                    });
                }
                Ok(true)
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(ConfigError::Read {
                path: self.path.clone(),
                source,
            }),
        }
    }

    fn read(&self) -> Result<AuthFile, ConfigError> {
        if !self.check_permissions()? {
            return Ok(AuthFile::default());
        }
        Ok(json_io::read_json_file::<AuthFile>(&self.path)?.unwrap_or_default())
    }

    fn write(&self, file: &AuthFile) -> Result<(), ConfigError> {
        json_io::write_json_atomic(&self.path, file, 0o600)
    }

    /// Stores an API key for `provider` (trimmed). An empty key is refused: use
    /// [`AuthStore::remove`] to delete a credential.
    pub fn set_api_key(&self, provider: &str, key: &str) -> Result<(), ConfigError> {
        let provider = validate_provider(provider)?;
        let key = key.trim();
        if key.is_empty() {
            return Err(ConfigError::Rejected {
                message: format!(
                    "the API key for {provider:?} is empty; nothing was saved (to delete the credential run `braincode auth remove {provider}`)"
                ),
            });
        }
        let _lock = json_io::lock_for_update(&self.path)?;
        let mut file = self.read()?;
        file.providers
            .insert(provider.to_string(), Value::String(key.to_string()));
        self.write(&file)
    }

    /// Deletes the credential of `provider`. Returns whether there was one.
    pub fn remove(&self, provider: &str) -> Result<bool, ConfigError> {
        let provider = validate_provider(provider)?;
        let _lock = json_io::lock_for_update(&self.path)?;
        let mut file = self.read()?;
        if file.providers.remove(provider).is_none() {
            return Ok(false);
        }
        self.write(&file)?;
        Ok(true)
    }

    /// Which providers have credentials, and of what kind.
    pub fn status(&self) -> Result<AuthStatus, ConfigError> {
        let file = self.read()?;
        Ok(AuthStatus {
            providers: file
                .providers
                .iter()
                .map(|(provider, value)| {
                    let oauth = value.get("oauth");
                    ProviderAuth {
                        provider: provider.clone(),
                        kind: CredentialKind::of(value),
                        oauth_provider_id: oauth
                            .and_then(|o| o.get("providerId"))
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        expires: oauth
                            .and_then(|o| o.get("credentials"))
                            .and_then(|c| c.get("expires"))
                            .and_then(Value::as_i64),
                    }
                })
                .collect(),
        })
    }

    /// The stored API key of `provider` (a string entry or `{apiKey}`), if any. OAuth entries
    /// give no key here.
    pub fn api_key(&self, provider: &str) -> Result<Option<ApiKey>, ConfigError> {
        let file = self.read()?;
        let key = match file.providers.get(provider) {
            Some(Value::String(key)) => Some(key.trim().to_string()),
            Some(Value::Object(map)) => map
                .get("apiKey")
                .and_then(Value::as_str)
                .map(|k| k.trim().to_string()),
            _ => None,
        };
        Ok(key.filter(|k| !k.is_empty()).map(ApiKey))
    }
}

fn validate_provider(provider: &str) -> Result<&str, ConfigError> {
    let provider = provider.trim();
    if provider.is_empty() || provider.chars().any(char::is_whitespace) {
        return Err(ConfigError::Rejected {
            message: format!(
                "{provider:?} is not a provider name; use the provider of a model (e.g. openai, anthropic, openrouter)"
            ),
        });
    }
    Ok(provider)
}

/// The environment variable that holds the API key of `provider` when a model does not name
/// one with `apiKeyEnv`:
///
/// * `openai` → `OPENAI_API_KEY`
/// * `anthropic` → `ANTHROPIC_API_KEY`
/// * any other provider → `<PROVIDER>_API_KEY`, the name upper-cased with every character
///   that is not an ASCII letter or digit replaced by `_` (`openrouter` → `OPENROUTER_API_KEY`,
///   `my-lab` → `MY_LAB_API_KEY`).
pub fn provider_env_var(provider: &str) -> String {
    let upper: String = provider
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{upper}_API_KEY")
}

/// Looks up the API key of `provider`, in this order:
///
/// 1. the provider's entry in `auth.json` (a string or `{"apiKey": ...}`);
/// 2. the variable named by the model's `apiKeyEnv`, when given;
/// 3. the provider's conventional variable, see [`provider_env_var`].
///
/// Empty values are skipped. An unreadable or insecure auth.json is an error (so the user
/// learns about it instead of silently falling back to the environment).
pub fn resolve_api_key_with_source(
    home: &Home,
    provider: &str,
    api_key_env: Option<&str>,
) -> Result<Option<ResolvedKey>, ConfigError> {
    if let Some(key) = AuthStore::new(home).api_key(provider)? {
        return Ok(Some(ResolvedKey {
            key,
            source: KeySource::AuthFile,
        }));
    }
    Ok(env_api_key(provider, api_key_env))
}

/// Steps 2 and 3 of [`resolve_api_key_with_source`]: the environment only.
pub fn env_api_key(provider: &str, api_key_env: Option<&str>) -> Option<ResolvedKey> {
    let env_names = api_key_env
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .into_iter()
        .chain(std::iter::once(provider_env_var(provider)));
    for name in env_names {
        if let Ok(value) = std::env::var(&name) {
            let value = value.trim();
            if !value.is_empty() {
                return Some(ResolvedKey {
                    key: ApiKey(value.to_string()),
                    source: KeySource::Env(name),
                });
            }
        }
    }
    None
}

/// Logs a problem once per process: every model client resolves its key, and one broken
/// auth.json should be one warning, not one per client.
fn warn_once(message: &str) {
    static WARNED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut warned = match WARNED.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    if !warned.iter().any(|m| m == message) {
        warned.push(message.to_string());
        tracing::warn!("{message}");
    }
}

/// [`resolve_api_key_with_source`] without the source; an auth.json problem is logged (without
/// any secret) and counts as "no key in the file".
pub fn resolve_api_key(home: &Home, provider: &str, api_key_env: Option<&str>) -> Option<ApiKey> {
    match resolve_api_key_with_source(home, provider, api_key_env) {
        Ok(found) => found.map(|r| r.key),
        Err(err) => {
            warn_once(&err.to_string());
            env_api_key(provider, api_key_env).map(|r| r.key)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_var_rule() {
        assert_eq!(provider_env_var("openai"), "OPENAI_API_KEY");
        assert_eq!(provider_env_var("anthropic"), "ANTHROPIC_API_KEY");
        assert_eq!(provider_env_var("openrouter"), "OPENROUTER_API_KEY");
        assert_eq!(provider_env_var("my-lab"), "MY_LAB_API_KEY");
        assert_eq!(provider_env_var("a.b/c"), "A_B_C_API_KEY");
    }

    #[test]
    fn secrets_never_print() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key}"), "***");
        assert_eq!(format!("{key:?}"), "ApiKey(***)");
        let resolved = ResolvedKey {
            key,
            source: KeySource::AuthFile,
        };
        assert!(!format!("{resolved:?}").contains("secret"));
    }

    #[test]
    fn kinds_are_classified() {
        assert_eq!(
            CredentialKind::of(&Value::String("k".into())),
            CredentialKind::ApiKey
        );
        assert_eq!(
            CredentialKind::of(&serde_json::json!({"apiKey": "k"})),
            CredentialKind::ApiKey
        );
        assert_eq!(
            CredentialKind::of(&serde_json::json!({"oauth": {"access": "a"}})),
            CredentialKind::Oauth
        );
        assert_eq!(
            CredentialKind::of(&serde_json::json!(3)),
            CredentialKind::Unknown
        );
    }
}
