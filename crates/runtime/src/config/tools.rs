//! The one reader of `tools.json`, and the permission policy built from it.

use braincode_config::{FieldPath, Home, JsonLocation, locate_field, read_json_file_with_text};
use braincode_tools::{PermissionPolicy, ToolsConfig};

use super::error::{ConfigError, ToolsProblem};

/// Reads `<home>/tools.json`: `Ok(None)` when it is missing. A syntax or type error names the
/// line, column and field ([`ConfigError::Tools`]); a document that parses but breaks a rule
/// ([`ToolsConfig::validate`]: an invalid glob, a duplicate tool, an unknown patch kind) is
/// [`ConfigError::ToolsRules`], every problem located in the file.
///
/// This is the only function that reads `tools.json`: `run`, `doctor` and `permissions`
/// all go through it, so they accept and reject the same files.
pub fn read_tools_file(home: &Home) -> Result<Option<ToolsConfig>, ConfigError> {
    let path = home.tools_path();
    let Some((config, text)) =
        read_json_file_with_text::<ToolsConfig>(&path).map_err(ConfigError::Tools)?
    else {
        return Ok(None);
    };
    if let Err(errors) = config.validate() {
        let problems = errors
            .problems
            .into_iter()
            .map(|problem| {
                let position = locate_field(&text, &field_path(&problem.location));
                ToolsProblem {
                    location: JsonLocation {
                        line: position.map(|p| p.0),
                        column: position.map(|p| p.1),
                        field: Some(problem.location.clone()),
                    },
                    field: problem.location,
                    message: problem.message,
                }
            })
            .collect();
        return Err(ConfigError::ToolsRules { path, problems });
    }
    Ok(Some(config))
}

/// `tools.json` as [`read_tools_file`] reads it, or the defaults when it is missing.
pub fn load_tools(home: &Home) -> Result<ToolsConfig, ConfigError> {
    Ok(read_tools_file(home)?.unwrap_or_default())
}

/// The permission policy of `tools`: the default rules, the user's rules, and a rule that
/// denies writes to this Braincode home.
pub fn permission_policy(
    home: &Home,
    tools: &ToolsConfig,
) -> Result<PermissionPolicy, ConfigError> {
    PermissionPolicy::new(&tools.permissions)
        .map(|policy| policy.with_braincode_home(home.root()))
        .map_err(|source| ConfigError::Permissions {
            path: home.tools_path(),
            source,
        })
}

/// Turns a dotted field path (`permissions.paths[2].pattern`) into a [`FieldPath`].
pub(crate) fn field_path(dotted: &str) -> FieldPath {
    let mut path = FieldPath::root();
    for part in dotted.split('.') {
        let (key, indices) = match part.find('[') {
            Some(at) => part.split_at(at),
            None => (part, ""),
        };
        if !key.is_empty() {
            path = path.key(key);
        }
        for index in indices.split(['[', ']']).filter(|piece| !piece.is_empty()) {
            match index.parse::<usize>() {
                Ok(index) => path = path.index(index),
                Err(_) => path = path.key(index),
            }
        }
    }
    path
}
