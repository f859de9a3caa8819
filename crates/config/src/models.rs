//! `models.json`: the model catalogue. Built-in models are merged with the user's entries;
//! a user entry replaces the built-in with the same id.

use std::path::Path;

use braincode_protocol::ModelDefinition;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json_io::{self, FieldPath};
use crate::{ConfigError, Home};

/// The contents of `models.json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsDocument {
    /// Model entries.
    #[serde(default)]
    pub models: Vec<ModelDefinition>,
    /// Per-provider defaults (`{provider, baseUrl?, api?}`), kept as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<Value>,
    /// What reading migrated in memory (TypeScript Braincode files), and the entries set
    /// aside because their API is not spoken; empty for a file in today's form.
    #[serde(skip)]
    pub migration: crate::migrate::Migration,
}

/// Checks ids and required names; `text` (the file contents) locates the field.
fn validate(doc: &ModelsDocument, path: &Path, text: Option<&str>) -> Result<(), ConfigError> {
    let models = FieldPath::root().key("models");
    for (i, model) in doc.models.iter().enumerate() {
        for (field, value) in [
            ("id", &model.id),
            ("provider", &model.provider),
            ("modelId", &model.model_id),
        ] {
            if value.trim().is_empty() {
                return Err(json_io::invalid_field(
                    path,
                    text,
                    &models.index(i).key(field),
                    format!("{field} is empty"),
                    "give every model a non-empty id, provider and modelId",
                ));
            }
        }
        if let Some(first) = doc.models[..i].iter().position(|m| m.id == model.id) {
            return Err(json_io::invalid_field(
                path,
                text,
                &models.index(i).key("id"),
                format!(
                    "models[{first}].id and models[{i}].id are both {:?}",
                    model.id
                ),
                "give each model its own id, or remove one of the two entries",
            ));
        }
        if let Some(field) = model.call_settings().invalid_field() {
            return Err(json_io::invalid_field(
                path,
                text,
                &models.index(i).keys(field),
                "0 would fail every call",
                "use a positive number, or remove the field for the default",
            ));
        }
        if let Some(field) = model.pricing.and_then(|p| p.invalid_field()) {
            return Err(json_io::invalid_field(
                path,
                text,
                &models.index(i).key("pricing").key(field),
                "a price must be a number of US dollars per million tokens, 0 or more",
                "write e.g. \"pricing\": {\"input\": 3, \"output\": 15, \"cacheRead\": 0.3}",
            ));
        }
        if model.context_window == 0 {
            return Err(json_io::invalid_field(
                path,
                text,
                &models.index(i).key("contextWindow"),
                "the context window is 0",
                "set contextWindow to the model's context size in tokens",
            ));
        }
    }
    Ok(())
}

/// Reads `models.json` as written (no built-ins). `Ok(None)` when missing; empty is an error.
pub fn read_models_file(home: &Home) -> Result<Option<ModelsDocument>, ConfigError> {
    let path = home.models_path();
    let Some(text) = json_io::read_config_text(&path)? else {
        return Ok(None);
    };
    let mut value: Value = json_io::parse_json_text(&path, &text)?;
    let migration = crate::migrate::migrate_models(&mut value);
    let mut doc: ModelsDocument = if migration.is_empty() {
        json_io::parse_json_text(&path, &text)?
    } else {
        json_io::from_migrated(&path, &text, value)?
    };
    doc.migration = migration;
    validate(&doc, &path, Some(&text))?;
    Ok(Some(doc))
}

/// Merges `user` entries over `builtin` by id: same id replaces in place, new ids append.
pub fn merge_models(
    builtin: Vec<ModelDefinition>,
    user: Vec<ModelDefinition>,
) -> Vec<ModelDefinition> {
    let mut merged = builtin;
    for mut model in user {
        match merged.iter_mut().find(|m| m.id == model.id) {
            Some(existing) => {
                // An entry that restates a built-in model keeps its built-in prices.
                if model.pricing.is_none() && model.model_id == existing.model_id {
                    model.pricing = existing.pricing;
                }
                *existing = model;
            }
            None => merged.push(model),
        }
    }
    merged
}

/// The model catalogue: built-in models merged with `models.json` by id. A malformed file is
/// an error with its line, column and field.
pub fn load_models(home: &Home) -> Result<Vec<ModelDefinition>, ConfigError> {
    let user = read_models_file(home)?
        .map(|doc| doc.models)
        .unwrap_or_default();
    Ok(merge_models(builtin_models(), user))
}

/// Validates and writes `models.json` atomically (mode 0644).
pub fn save_models(home: &Home, doc: &ModelsDocument) -> Result<(), ConfigError> {
    let path = home.models_path();
    validate(doc, &path, None)?;
    json_io::write_json_atomic(&path, doc, 0o644)
}

fn builtin_models() -> Vec<ModelDefinition> {
    braincode_brain::default_models()
}
