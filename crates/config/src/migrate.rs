//! Files written by the TypeScript Braincode, read as they are: its legacy roles and fields
//! are migrated in memory when the file is read (the file itself is left alone; `braincode
//! doctor --migrate` writes the migrated form after a backup), and a model whose API we do not
//! speak is set aside as unsupported instead of failing the whole file. Image-generation models
//! (`openai-images`) are kept: they serve the imageMaker role.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::{ConfigError, Home, json_io};

/// Roles the TypeScript Braincode used to have, dropped on read.
const LEGACY_ROLES: [&str; 3] = ["coding", "fastReply", "research"];

/// Model fields of the TypeScript Braincode that Braincode has no use for.
const LEGACY_MODEL_FIELDS: [&str; 4] = ["builtIn", "input", "cost", "reasoning"];

/// A model entry that was read but cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsupportedModel {
    /// Its id (or its position when it has none).
    pub id: String,
    /// The API it names.
    pub api: String,
    /// Why it is not used.
    pub reason: String,
}

/// What migrating one file changed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Migration {
    /// One line per change, for `doctor`.
    pub changes: Vec<String>,
    /// Model entries set aside.
    pub unsupported: Vec<UnsupportedModel>,
}

impl Migration {
    /// Whether the file needed nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && self.unsupported.is_empty()
    }
}

/// The API a model of `provider` speaks when its entry names none (the TypeScript Braincode
/// took it from its provider catalogue).
fn api_for_provider(provider: &str) -> &'static str {
    match provider.to_ascii_lowercase().as_str() {
        "anthropic" => "anthropic-messages",
        "openai" => "openai-responses",
        "google" | "gemini" => "google-generative-ai",
        "azure-openai-responses" | "azure" | "azure-openai" => "azure-openai-responses",
        _ => "openai-completions",
    }
}

/// Why an API name cannot be used, or `None` when Braincode speaks it.
fn unsupported_api(api: &str) -> Option<&'static str> {
    match api {
        "openai-completions"
        | "openai-chat-completions"
        | "openai"
        | "openai-responses"
        | "anthropic-messages"
        | "anthropic"
        | "google-generative-ai"
        | "google"
        | "azure-openai-responses"
        | "mistral-conversations"
        | "mistral"
        | "local"
        | "openai-images" => None,
        "openai-codex-responses" => Some(
            "the ChatGPT subscription (Codex) API needs an OAuth login Braincode does not have; use an OpenAI API key with openai-responses",
        ),
        "google-vertex" => Some(
            "Vertex AI needs Google Cloud credentials; use google-generative-ai with a Gemini API key",
        ),
        "pi-messages" => Some("the Pi agent's own protocol is not spoken by Braincode"),
        _ => Some("Braincode does not speak this API"),
    }
}

/// Migrates a models.json document in place.
pub fn migrate_models(document: &mut Value) -> Migration {
    let mut migration = Migration::default();
    let Some(models) = document.get_mut("models").and_then(Value::as_array_mut) else {
        return migration;
    };
    let mut kept = Vec::with_capacity(models.len());
    for (index, mut entry) in std::mem::take(models).into_iter().enumerate() {
        let Some(object) = entry.as_object_mut() else {
            kept.push(entry);
            continue;
        };
        let id = object
            .get("id")
            .and_then(Value::as_str)
            .map_or_else(|| format!("models[{index}]"), str::to_string);
        for field in LEGACY_MODEL_FIELDS {
            if object.remove(field).is_some() {
                migration
                    .changes
                    .push(format!("{id}: dropped the unused field {field:?}"));
            }
        }
        let image_model = object.remove("supportsImageGeneration") == Some(Value::Bool(true));
        let api = match object.get("api").and_then(Value::as_str) {
            Some(api) => api.to_string(),
            None if image_model => {
                object.insert("api".into(), json!("openai-images"));
                migration.changes.push(format!(
                    "{id}: an image-generation model with no api; it speaks openai-images"
                ));
                "openai-images".to_string()
            }
            None => {
                let provider = object
                    .get("provider")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let api = api_for_provider(&provider);
                object.insert("api".into(), json!(api));
                migration
                    .changes
                    .push(format!("{id}: no api given; {provider:?} speaks {api}"));
                api.to_string()
            }
        };
        let reason = if image_model && api != "openai-images" {
            Some(
                "marked supportsImageGeneration, but image generation speaks only openai-images; set its api to openai-images",
            )
        } else {
            unsupported_api(&api)
        };
        match reason {
            Some(reason) => migration.unsupported.push(UnsupportedModel {
                id,
                api,
                reason: reason.to_string(),
            }),
            None => kept.push(entry),
        }
    }
    *models = kept;
    migration
}

/// Migrates a brains.json document in place: legacy roles are dropped, the legacy default
/// id and name renamed, and the `pet` and `imageMaker` roles a complete preset lacks are
/// derived from its `summarize` (or `rush`) and `rush` roles.
pub fn migrate_brains(document: &mut Value) -> Migration {
    let mut migration = Migration::default();
    let Some(brains) = document.get_mut("brains").and_then(Value::as_array_mut) else {
        return migration;
    };
    for preset in brains.iter_mut().filter_map(Value::as_object_mut) {
        if preset.get("id").and_then(Value::as_str) == Some("default") {
            preset.insert("id".into(), json!("brain"));
            migration
                .changes
                .push("the brain id \"default\" is now \"brain\"".into());
            if preset.get("name").and_then(Value::as_str) == Some("Default Brain") {
                preset.insert("name".into(), json!("Brain"));
            }
        }
        let id = preset
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let complete = preset.get("extends").is_none_or(Value::is_null);
        let Some(roles) = preset.get_mut("roles").and_then(Value::as_object_mut) else {
            continue;
        };
        for legacy in LEGACY_ROLES {
            if roles.remove(legacy).is_some() {
                migration
                    .changes
                    .push(format!("{id}: dropped the legacy role {legacy:?}"));
            }
        }
        if complete {
            derive_role(
                roles,
                "pet",
                &["summarize", "rush"],
                Some("minimal"),
                &id,
                &mut migration,
            );
            derive_role(roles, "imageMaker", &["rush"], None, &id, &mut migration);
        }
    }
    migration
}

fn derive_role(
    roles: &mut Map<String, Value>,
    role: &str,
    from: &[&str],
    thinking: Option<&str>,
    id: &str,
    migration: &mut Migration,
) {
    if roles.contains_key(role) {
        return;
    }
    let Some((source, policy)) = from
        .iter()
        .find_map(|name| roles.get(*name).map(|policy| (*name, policy.clone())))
    else {
        return;
    };
    let mut policy = policy;
    if let Some(object) = policy.as_object_mut() {
        object.remove("systemPrompt");
        if let Some(level) = thinking {
            object.insert("thinkingLevel".into(), json!(level));
        }
    }
    roles.insert(role.to_string(), policy);
    migration.changes.push(format!(
        "{id}: added the {role} role from its {source} role"
    ));
}

/// A file that reading migrates in memory, and what it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingMigration {
    /// The file.
    pub path: PathBuf,
    /// What reading it changes.
    pub migration: Migration,
}

/// A file rewritten in today's form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedMigration {
    /// The file.
    pub path: PathBuf,
    /// The copy of the file as it was.
    pub backup: PathBuf,
    /// What changed (unsupported models stay only in the backup).
    pub migration: Migration,
}

type Migrator = fn(&mut Value) -> Migration;

fn migrators(home: &Home) -> [(PathBuf, Migrator); 2] {
    [
        (home.models_path(), migrate_models as Migrator),
        (home.brains_path(), migrate_brains as Migrator),
    ]
}

/// Reads `path` and migrates it in memory: `None` when it is missing or needs nothing.
fn migrated(
    path: &std::path::Path,
    migrate: Migrator,
) -> Result<Option<(Value, Migration)>, ConfigError> {
    let Some(text) = json_io::read_config_text(path)? else {
        return Ok(None);
    };
    let mut value: Value = json_io::parse_json_text(path, &text)?;
    let migration = migrate(&mut value);
    Ok((!migration.is_empty()).then_some((value, migration)))
}

/// The files of the home that reading migrates (models.json, brains.json), without writing.
pub fn pending(home: &Home) -> Result<Vec<PendingMigration>, ConfigError> {
    let mut out = Vec::new();
    for (path, migrate) in migrators(home) {
        if let Some((_, migration)) = migrated(&path, migrate)? {
            out.push(PendingMigration { path, migration });
        }
    }
    Ok(out)
}

/// Rewrites each file that needs it in today's form, after copying it to
/// `<file>.bak-<timestamp>` (`braincode doctor --migrate`).
pub fn apply(home: &Home, timestamp: &str) -> Result<Vec<AppliedMigration>, ConfigError> {
    let mut out = Vec::new();
    for (path, migrate) in migrators(home) {
        // Read, rewritten and written back under the file's update lock (the panel may be
        // saving the same file).
        let _lock = json_io::lock_for_update(&path)?;
        let Some((value, migration)) = migrated(&path, migrate)? else {
            continue;
        };
        let mut backup = path.clone().into_os_string();
        backup.push(format!(".bak-{timestamp}"));
        let backup = PathBuf::from(backup);
        std::fs::copy(&path, &backup).map_err(|source| ConfigError::Write {
            path: backup.clone(),
            source,
        })?;
        json_io::write_json_atomic(&path, &value, 0o644)?;
        out.push(AppliedMigration {
            path,
            backup,
            migration,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typescript_models_are_migrated_and_unsupported_ones_set_aside() {
        let mut doc = json!({"models": [
            {"id": "anthropic/claude-sonnet-4-6", "provider": "anthropic", "modelId": "claude-sonnet-4-6",
             "name": "Claude", "builtIn": true, "contextWindow": 200000, "supportsTools": true},
            {"id": "openai/gpt-image-2", "provider": "openai", "modelId": "gpt-image-2", "name": "Image",
             "api": "openai-images", "supportsImageGeneration": true, "contextWindow": 32000, "supportsTools": false},
            {"id": "pi/x", "provider": "pi", "modelId": "x", "name": "x", "api": "pi-messages",
             "contextWindow": 1000, "supportsTools": true},
            {"id": "lab/qwen", "provider": "lab", "modelId": "qwen", "name": "Qwen",
             "api": "openai-completions", "baseUrl": "http://127.0.0.1:8080/v1", "contextWindow": 32000,
             "supportsTools": true, "supportsImageGeneration": false},
            {"id": "lab/painter", "provider": "lab", "modelId": "painter", "name": "Painter",
             "api": "openai-completions", "supportsImageGeneration": true},
            {"id": "lab/img", "provider": "lab", "modelId": "img", "supportsImageGeneration": true}
        ]});
        let migration = migrate_models(&mut doc);
        let ids: Vec<&str> = doc["models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "anthropic/claude-sonnet-4-6",
                "openai/gpt-image-2",
                "lab/qwen",
                "lab/img"
            ]
        );
        assert_eq!(doc["models"][0]["api"], "anthropic-messages");
        assert!(doc["models"][0].get("builtIn").is_none());
        assert_eq!(doc["models"][1]["api"], "openai-images");
        assert!(doc["models"][1].get("supportsImageGeneration").is_none());
        assert!(doc["models"][2].get("supportsImageGeneration").is_none());
        // An image model without an api speaks the one image API there is.
        assert_eq!(doc["models"][3]["api"], "openai-images");
        let models: Vec<braincode_protocol::ModelDefinition> =
            serde_json::from_value(doc["models"].clone()).unwrap();
        assert!(models[1].is_image_model() && models[3].is_image_model());
        let unsupported: Vec<&str> = migration
            .unsupported
            .iter()
            .map(|u| u.id.as_str())
            .collect();
        assert_eq!(unsupported, ["pi/x", "lab/painter"]);
        assert!(migration.unsupported[1].reason.contains("openai-images"));
        // A second pass finds nothing to do: the migration is idempotent.
        assert!(migrate_models(&mut doc).is_empty());
    }

    #[test]
    fn legacy_roles_go_and_missing_roles_are_derived() {
        let mut doc = json!({"brains": [
            {"id": "default", "name": "Default Brain", "description": "d",
             "planner": {"modelId": "m", "thinkingLevel": "high"},
             "roles": {"coding": {"modelId": "m"}, "fastReply": {"modelId": "m"},
                       "summarize": {"modelId": "s", "thinkingLevel": "low", "systemPrompt": "x"},
                       "rush": {"modelId": "r", "thinkingLevel": "low"}}},
            {"id": "child", "extends": "brain", "roles": {"research": {"modelId": "m"}}}
        ]});
        let migration = migrate_brains(&mut doc);
        assert_eq!(doc["brains"][0]["id"], "brain");
        assert_eq!(doc["brains"][0]["name"], "Brain");
        let roles = &doc["brains"][0]["roles"];
        assert!(roles.get("coding").is_none() && roles.get("fastReply").is_none());
        assert_eq!(
            roles["pet"],
            json!({"modelId": "s", "thinkingLevel": "minimal"})
        );
        assert_eq!(roles["imageMaker"]["modelId"], "r");
        assert!(doc["brains"][1]["roles"].get("research").is_none());
        // A child inherits its parent's roles: nothing is added to it.
        assert!(doc["brains"][1]["roles"].get("pet").is_none());
        assert_eq!(migration.changes.len(), 6, "{:?}", migration.changes);
        assert!(migrate_brains(&mut doc).is_empty());
    }
}
