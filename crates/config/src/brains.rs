//! `brains.json`: Brain Model presets. The built-in presets are merged with the user's
//! presets; a user preset replaces the built-in with the same id. Resolving inheritance and
//! checking that the default brain exists is [`braincode_brain::select_brain`]'s job.

use std::path::Path;

use braincode_brain::{BrainPreset, BrainsDocument};

use crate::json_io::{self, FieldPath};
use crate::{ConfigError, Home};

fn validate(doc: &BrainsDocument, path: &Path, text: Option<&str>) -> Result<(), ConfigError> {
    let brains = FieldPath::root().key("brains");
    for (i, preset) in doc.brains.iter().enumerate() {
        if preset.id.trim().is_empty() {
            return Err(json_io::invalid_field(
                path,
                text,
                &brains.index(i).key("id"),
                "the brain id is empty",
                "give every brain preset a non-empty id",
            ));
        }
        if let Some(field) = preset.budget.and_then(|b| b.invalid_field()) {
            return Err(json_io::invalid_field(
                path,
                text,
                &brains.index(i).key("budget").key(field),
                "a budget limit must be a positive number",
                "write e.g. \"budget\": {\"maxTokens\": 2000000, \"maxCostUsd\": 5}, or remove the field for no limit",
            ));
        }
        if let Some(first) = doc.brains[..i].iter().position(|b| b.id == preset.id) {
            return Err(json_io::invalid_field(
                path,
                text,
                &brains.index(i).key("id"),
                format!(
                    "brains[{first}].id and brains[{i}].id are both {:?}",
                    preset.id
                ),
                "give each preset its own id, or remove one of the two",
            ));
        }
    }
    Ok(())
}

/// Reads `brains.json` as written (no built-ins). `Ok(None)` when missing; empty is an error.
pub fn read_brains_file(home: &Home) -> Result<Option<BrainsDocument>, ConfigError> {
    let path = home.brains_path();
    let Some(text) = json_io::read_config_text(&path)? else {
        return Ok(None);
    };
    let (doc, _) = read_brains_text(&path, &text)?;
    let mut doc = doc;
    validate(&doc, &path, Some(&text))?;
    for preset in &mut doc.brains {
        // Older files called the default preset `default`.
        if preset.id == "default" {
            preset.id = braincode_brain::DEFAULT_BRAIN_ID.to_string();
        }
    }
    Ok(Some(doc))
}

/// Parses brains.json text, migrating a TypeScript Braincode file in memory; returns the
/// document and what was migrated.
pub fn read_brains_text(
    path: &Path,
    text: &str,
) -> Result<(BrainsDocument, crate::migrate::Migration), ConfigError> {
    let mut value: serde_json::Value = json_io::parse_json_text(path, text)?;
    let migration = crate::migrate::migrate_brains(&mut value);
    let doc = if migration.is_empty() {
        json_io::parse_json_text(path, text)?
    } else {
        json_io::from_migrated(path, text, value)?
    };
    Ok((doc, migration))
}

/// The built-in presets with the user's presets merged over them by id (same id replaces in
/// place, new ids append). A malformed file is an error with its line, column and field.
pub fn load_brains(home: &Home) -> Result<Vec<BrainPreset>, ConfigError> {
    let user = read_brains_file(home)?
        .map(|doc| doc.brains)
        .unwrap_or_default();
    Ok(merge_brains(user))
}

/// The built-in presets with `user` merged over them by id (same id replaces in place, new
/// ids append): what [`load_brains`] returns for a file holding `user`.
pub fn merge_brains(user: Vec<BrainPreset>) -> Vec<BrainPreset> {
    let mut presets = braincode_brain::default_brains();
    for preset in user {
        match presets.iter_mut().find(|p| p.id == preset.id) {
            Some(existing) => *existing = preset,
            None => presets.push(preset),
        }
    }
    presets
}

/// Validates and writes `brains.json` atomically (mode 0644).
pub fn save_brains(home: &Home, doc: &BrainsDocument) -> Result<(), ConfigError> {
    let path = home.brains_path();
    validate(doc, &path, None)?;
    json_io::write_json_atomic(&path, doc, 0o644)
}
