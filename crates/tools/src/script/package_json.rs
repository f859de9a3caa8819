//! package.json scripts: the package manager a project's lockfile names, the `scripts` table,
//! and the script text one script runs (its pre/post hooks and the scripts it calls).

use std::collections::BTreeMap;
use std::path::Path;

use super::resolve::{MAX_SCRIPT_NESTING, ScriptBody, ScriptError};

/// The package manager a JavaScript project uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageManager {
    /// `bun.lock` / `bun.lockb`.
    Bun,
    /// `pnpm-lock.yaml`.
    Pnpm,
    /// `yarn.lock`.
    Yarn,
    /// `package-lock.json`, or no lockfile.
    Npm,
}

impl PackageManager {
    /// The executable name.
    pub fn program(self) -> &'static str {
        match self {
            Self::Bun => "bun",
            Self::Pnpm => "pnpm",
            Self::Yarn => "yarn",
            Self::Npm => "npm",
        }
    }
}
/// The package manager named by the project's lockfile (npm when there is none).
pub fn detect_package_manager(root: &Path) -> PackageManager {
    if root.join("bun.lockb").exists() || root.join("bun.lock").exists() {
        PackageManager::Bun
    } else if root.join("pnpm-lock.yaml").exists() {
        PackageManager::Pnpm
    } else if root.join("yarn.lock").exists() {
        PackageManager::Yarn
    } else {
        PackageManager::Npm
    }
}

/// The `scripts` of package.json (empty when there is no package.json).
pub fn package_json_scripts(root: &Path) -> Result<BTreeMap<String, String>, ScriptError> {
    let path = root.join("package.json");
    let Some(text) = crate::paths::read_project_text(root, "package.json") else {
        return Ok(BTreeMap::new());
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| ScriptError::InvalidPackageJson {
            path: path.display().to_string(),
            message: error.to_string(),
        })?;
    Ok(value
        .get("scripts")
        .and_then(serde_json::Value::as_object)
        .map(|scripts| {
            scripts
                .iter()
                .filter_map(|(name, body)| Some((name.clone(), body.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default())
}
/// The script, its pre/post hooks, and scripts its text calls, transitively.
pub(super) fn package_bodies(scripts: &BTreeMap<String, String>, name: &str) -> Vec<ScriptBody> {
    let mut bodies: Vec<ScriptBody> = Vec::new();
    let mut queue = vec![(name.to_string(), 0usize)];
    while let Some((current, depth)) = queue.pop() {
        for hooked in [
            format!("pre{current}"),
            current.clone(),
            format!("post{current}"),
        ] {
            let Some(text) = scripts.get(&hooked) else {
                continue;
            };
            if bodies.iter().any(|body| body.name == hooked) {
                continue;
            }
            bodies.push(ScriptBody {
                name: hooked.clone(),
                text: text.clone(),
            });
            if depth < MAX_SCRIPT_NESTING {
                for word in text.split(|c: char| c.is_whitespace() || ";&|()'\"".contains(c)) {
                    if word != hooked && scripts.contains_key(word) {
                        queue.push((word.to_string(), depth + 1));
                    }
                }
            }
        }
    }
    bodies
}
