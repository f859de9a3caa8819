//! OAuth entries of `auth.json`: `{oauth: {providerId, credentials: {refresh, access, expires,
//! …}}}`, written by a subscription login and rewritten by a refresh.

use braincode_protocol::OauthCredentials;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AuthStore, validate_provider};
use crate::ConfigError;
use crate::json_io::{self, FieldPath, UpdateLock};

/// One provider's OAuth entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OauthEntry {
    /// The login that made it (`github-copilot`, `openai-codex`).
    pub provider_id: String,
    /// Its tokens.
    pub credentials: OauthCredentials,
}

impl AuthStore {
    /// Takes the update lock of auth.json: a refresh reads, asks the provider and writes back
    /// under it, so two runs never both spend the same refresh token.
    pub fn lock(&self) -> Result<UpdateLock, ConfigError> {
        json_io::lock_for_update(&self.path)
    }

    /// The OAuth entry of `provider`, if it has one. A malformed entry is an error naming
    /// its field.
    pub fn oauth(&self, provider: &str) -> Result<Option<OauthEntry>, ConfigError> {
        let file = self.read()?;
        let Some(Value::Object(map)) = file.providers.get(provider) else {
            return Ok(None);
        };
        let Some(oauth) = map.get("oauth") else {
            return Ok(None);
        };
        serde_json::from_value::<OauthEntry>(oauth.clone())
            .map(Some)
            .map_err(|err| {
                json_io::invalid_field(
                    &self.path,
                    None,
                    &FieldPath::root()
                        .key("providers")
                        .key(provider)
                        .key("oauth"),
                    format!("not an OAuth entry: {err}"),
                    format!("run `braincode auth login {provider}` again"),
                )
            })
    }

    /// Stores the OAuth credentials of `provider` (refresh, access and expires are required).
    pub fn set_oauth(&self, provider: &str, entry: &OauthEntry) -> Result<(), ConfigError> {
        let lock = self.lock()?;
        self.set_oauth_locked(&lock, provider, entry)
    }

    /// [`AuthStore::set_oauth`] for a caller that already holds [`AuthStore::lock`].
    pub fn set_oauth_locked(
        &self,
        _lock: &UpdateLock,
        provider: &str,
        entry: &OauthEntry,
    ) -> Result<(), ConfigError> {
        let provider = validate_provider(provider)?;
        let creds = &entry.credentials;
        if creds.refresh.trim().is_empty() || creds.access.trim().is_empty() || creds.expires <= 0 {
            return Err(ConfigError::Rejected {
                message: format!(
                    "the login of {provider:?} gave no refresh token, access token or expiry; nothing was saved"
                ),
            });
        }
        let value = serde_json::to_value(entry).map_err(|err| ConfigError::Rejected {
            message: format!("the credentials of {provider:?} cannot be written: {err}"),
        })?;
        let mut file = self.read()?;
        file.providers
            .insert(provider.to_string(), serde_json::json!({ "oauth": value }));
        self.write(&file)
    }
}
