//! The sandbox of Braincode's own helper processes (its git queries): they read bytes the
//! repository controls (`.git/config` can name programs for git to run), so they run confined
//! like a command, with the project read-only as well. One sandbox per project is built on
//! first use and kept for the life of the process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::{Sandbox, SandboxError, SandboxPolicy};

/// The Braincode home the helpers must not read: `BRAINCODE_HOME` when set and not empty,
/// else `~/.braincode`.
fn braincode_home(user_home: Option<&Path>) -> Option<PathBuf> {
    match std::env::var_os("BRAINCODE_HOME").filter(|home| !home.is_empty()) {
        Some(home) => Some(PathBuf::from(home)),
        None => user_home.map(|home| home.join(".braincode")),
    }
}

/// The read-only helper sandbox of `project_root` (see
/// [`SandboxPolicy::read_only_helper`]), with the backend [`crate::status`] picks. `Err` when
/// no backend works here: the caller must then not run the helper at all (fail closed).
pub fn helper_sandbox(project_root: &Path) -> Result<Arc<Sandbox>, SandboxError> {
    static CACHE: Mutex<Option<HashMap<PathBuf, Arc<Sandbox>>>> = Mutex::new(None);
    let root = std::fs::canonicalize(project_root).map_err(|source| SandboxError::Setup {
        what: format!("resolving the project root {}", project_root.display()),
        source,
    })?;
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some(sandbox) = cache.get(&root) {
        return Ok(Arc::clone(sandbox));
    }
    let user_home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    let braincode_home = braincode_home(user_home.as_deref())
        .unwrap_or_else(|| PathBuf::from("/nonexistent-braincode-home"));
    let policy = SandboxPolicy::read_only_helper(&root, user_home.as_deref(), &braincode_home);
    let sandbox = Arc::new(Sandbox::new(policy)?);
    cache.insert(root, Arc::clone(&sandbox));
    Ok(sandbox)
}
