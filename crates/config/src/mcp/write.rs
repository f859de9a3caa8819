//! Adding a server to the user's `<home>/mcp.json` (`braincode mcp add`), and the Tavily web
//! search server as the TypeScript panel wrote it: its key lives in auth.json (0600) and the
//! entry refers to it as `${BRAINCODE_AUTH:tavily}`, so mcp.json never holds the secret.

use serde_json::{Map, Value, json};

use crate::{ConfigError, Home, json_io};

/// The provider name the Tavily key is stored under in auth.json (and the server's name).
pub const TAVILY: &str = "tavily";

/// The Tavily MCP server's entry: `npx -y tavily-mcp@latest` with `TAVILY_API_KEY` from
/// auth.json. It needs the network (web search), which a user-level entry must ask for.
pub fn tavily_server_entry() -> Value {
    json!({
        "command": "npx",
        "args": ["-y", "tavily-mcp@latest"],
        "env": {"TAVILY_API_KEY": format!("${{BRAINCODE_AUTH:{TAVILY}}}")},
        "network": true,
    })
}

/// What to do when the file already has a server of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnExisting {
    /// Refuse, changing nothing.
    Refuse,
    /// Replace the entry.
    Replace,
}

/// What [`add_user_server`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// There was no server of that name.
    New,
    /// An entry of that name was replaced.
    Replaced,
}

/// Adds `entry` as server `name` of `<home>/mcp.json`, keeping every other server and key of
/// the file; under the file's update lock, written atomically, mode 0600 (entries may carry
/// headers and environment). The servers' key is the file's own (`mcpServers`, or `servers`
/// in a file that uses it). An existing entry of that name is refused unless `on_existing`
/// replaces it; a file that is not a JSON object is refused, never overwritten.
pub fn add_user_server(
    home: &Home,
    name: &str,
    entry: Value,
    on_existing: OnExisting,
) -> Result<Added, ConfigError> {
    update_user_servers(home, |servers, path| {
        let added = match (servers.contains_key(name), on_existing) {
            (false, _) => Added::New,
            (true, OnExisting::Replace) => Added::Replaced,
            (true, OnExisting::Refuse) => {
                return Err(ConfigError::Rejected {
                    message: format!(
                        "{} already has a server named {name:?}; nothing was changed (--force replaces it)",
                        path.display()
                    ),
                });
            }
        };
        servers.insert(name.to_string(), entry);
        Ok(added)
    })
}

/// Where the Tavily key of [`setup_tavily`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TavilyKey<'a> {
    /// A key given now (from a flag, the environment or the panel's form): it is saved.
    Given(&'a str),
    /// The key auth.json already has (refused when it has none).
    Stored,
}

/// Sets up Tavily web search, as `braincode mcp add tavily` and the panel's quick setup do:
/// the server entry goes to the user's mcp.json (referring to the key, never holding it) and a
/// given key to auth.json (0600). An empty key, or no key at all, is refused before anything
/// is written.
pub fn setup_tavily(
    home: &Home,
    key: TavilyKey<'_>,
    on_existing: OnExisting,
) -> Result<Added, ConfigError> {
    let store = crate::AuthStore::new(home);
    let key = match key {
        TavilyKey::Given(key) if key.trim().is_empty() => {
            return Err(ConfigError::Rejected {
                message: "the Tavily API key given is empty; nothing was changed (get a key at https://app.tavily.com)".into(),
            });
        }
        TavilyKey::Given(key) => Some(key.trim()),
        TavilyKey::Stored if store.api_key(TAVILY)?.is_none() => {
            return Err(ConfigError::Rejected {
                message: format!(
                    "no Tavily API key: pass --key KEY (or --key - to type it), or set {}; get one at https://app.tavily.com. Nothing was changed",
                    crate::provider_env_var(TAVILY)
                ),
            });
        }
        TavilyKey::Stored => None,
    };
    let added = add_user_server(home, TAVILY, tavily_server_entry(), on_existing)?;
    if let Some(key) = key {
        store.set_api_key(TAVILY, key).map_err(|err| ConfigError::Rejected {
            message: format!(
                "the server entry was written to {} but the key was not saved ({err}); run `braincode auth set {TAVILY}`",
                home.mcp_path().display()
            ),
        })?;
    }
    Ok(added)
}

/// Switches server `name` of `<home>/mcp.json` on or off (`disabled`; Codex's `enabled`
/// switch, if the entry has one, is dropped so the two never disagree), keeping the rest of
/// the file as it is. A name the file does not have is refused, naming the ones it has.
pub fn set_user_server_enabled(home: &Home, name: &str, enabled: bool) -> Result<(), ConfigError> {
    update_user_servers(home, |servers, path| {
        let known: Vec<String> = servers.keys().cloned().collect();
        let Some(Value::Object(entry)) = servers.get_mut(name) else {
            return Err(ConfigError::Rejected {
                message: format!(
                    "{} has no server named {name:?} (it has: {}); nothing was changed",
                    path.display(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            });
        };
        entry.remove("enabled");
        if enabled {
            entry.remove("disabled");
        } else {
            entry.insert("disabled".into(), Value::Bool(true));
        }
        Ok(())
    })
}

/// Reads `<home>/mcp.json` under its update lock, lets `change` edit its servers (the file's
/// own key, `mcpServers` or `servers`), then writes it back atomically, mode 0600. A file or a
/// servers value that is not a JSON object is refused, never overwritten; nothing is written
/// when `change` fails.
fn update_user_servers<T>(
    home: &Home,
    change: impl FnOnce(&mut Map<String, Value>, &std::path::Path) -> Result<T, ConfigError>,
) -> Result<T, ConfigError> {
    let path = home.mcp_path();
    let _lock = json_io::lock_for_update(&path)?;
    let mut file: Map<String, Value> = match json_io::read_json_file::<Value>(&path)? {
        None => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(ConfigError::Rejected {
                message: format!(
                    "{} is not a JSON object; nothing was written (fix or move the file, then try again)",
                    path.display()
                ),
            });
        }
    };
    let key = if file.contains_key("mcpServers") || !file.contains_key("servers") {
        "mcpServers"
    } else {
        "servers"
    };
    let servers = file.entry(key).or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(ConfigError::Rejected {
            message: format!(
                "\"{key}\" in {} is not an object; nothing was written",
                path.display()
            ),
        });
    };
    let done = change(servers, &path)?;
    json_io::write_json_atomic(&path, &Value::Object(file), 0o600)?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_added_beside_the_others_and_not_replaced_unasked() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        std::fs::write(
            home.mcp_path(),
            r#"{"servers": {"docs": {"url": "http://127.0.0.1:9/mcp"}}, "note": "mine"}"#,
        )
        .unwrap();
        let added = add_user_server(&home, TAVILY, tavily_server_entry(), OnExisting::Refuse);
        assert_eq!(added.unwrap(), Added::New);
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(home.mcp_path()).unwrap()).unwrap();
        assert_eq!(file["note"], "mine");
        assert!(file["servers"]["docs"].is_object());
        assert_eq!(
            file["servers"]["tavily"]["env"]["TAVILY_API_KEY"],
            "${BRAINCODE_AUTH:tavily}"
        );
        let again = add_user_server(&home, TAVILY, json!({"command": "x"}), OnExisting::Refuse);
        let message = again.unwrap_err().to_string();
        assert!(
            message.contains("already has a server named \"tavily\""),
            "{message}"
        );
        let replaced = add_user_server(&home, TAVILY, json!({"command": "x"}), OnExisting::Replace);
        assert_eq!(replaced.unwrap(), Added::Replaced);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.mcp_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_file_that_is_not_an_object_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        std::fs::write(home.mcp_path(), "[1, 2]").unwrap();
        let err = add_user_server(&home, TAVILY, tavily_server_entry(), OnExisting::Replace);
        assert!(err.unwrap_err().to_string().contains("not a JSON object"));
        assert_eq!(std::fs::read_to_string(home.mcp_path()).unwrap(), "[1, 2]");
    }

    #[test]
    fn a_server_is_switched_off_and_on_and_an_unknown_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        std::fs::write(
            home.mcp_path(),
            r#"{"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp", "enabled": true}}}"#,
        )
        .unwrap();
        let read = || -> Value {
            serde_json::from_str(&std::fs::read_to_string(home.mcp_path()).unwrap()).unwrap()
        };
        set_user_server_enabled(&home, "docs", false).unwrap();
        assert_eq!(read()["mcpServers"]["docs"]["disabled"], true);
        assert!(read()["mcpServers"]["docs"].get("enabled").is_none());
        set_user_server_enabled(&home, "docs", true).unwrap();
        assert!(read()["mcpServers"]["docs"].get("disabled").is_none());
        assert_eq!(
            read()["mcpServers"]["docs"]["url"],
            "http://127.0.0.1:9/mcp"
        );
        let before = std::fs::read_to_string(home.mcp_path()).unwrap();
        let err = set_user_server_enabled(&home, "doc", false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no server named \"doc\" (it has: docs)"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(home.mcp_path()).unwrap(), before);
    }
}
