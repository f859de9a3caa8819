//! Versioned configuration files: a page reads a file with its version (a hash of its
//! bytes) and a write names the version it was made from. A file that changed on disk since
//! (the CLI, an editor, another tab) is not overwritten: the write gets 409 and the page
//! reloads what is there now.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::AppState;
use crate::api::ApiError;

/// The version of a file: the first 16 hex digits of the SHA-256 of its bytes, or `absent`.
pub(crate) fn version_of(path: &Path) -> Result<String, ApiError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let digest = Sha256::digest(&bytes);
            Ok(braincode_protocol::lower_hex(&digest[..8]))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok("absent".to_string()),
        Err(err) => Err(ApiError::Internal(format!(
            "cannot read {}: {err}",
            path.display()
        ))),
    }
}

/// Runs `write` if `path` is still at version `expected`, holding the panel's write lock and
/// the file's update lock so two requests or processes cannot both pass the check; returns
/// the new version.
pub(crate) async fn write_if_unchanged(
    state: &AppState,
    path: &Path,
    expected: &str,
    write: impl FnOnce() -> Result<(), ApiError>,
) -> Result<String, ApiError> {
    let _held = state.write_lock.lock().await;
    // Other processes (the CLI, another panel) update the same files under the file's
    // update lock: the check and the write happen inside it.
    let _file = braincode_config::lock_for_update(path)
        .map_err(|err| ApiError::Conflict(err.to_string()))?;
    let current = version_of(path)?;
    if current != expected {
        return Err(ApiError::Conflict(format!(
            "{} changed since this page read it (someone else saved it); reload the page to see the current file, then make your change again",
            path.display()
        )));
    }
    write()?;
    version_of(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_follow_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        assert_eq!(version_of(&path).unwrap(), "absent");
        std::fs::write(&path, "{}").unwrap();
        let first = version_of(&path).unwrap();
        assert_eq!(first.len(), 16);
        std::fs::write(&path, "{ }").unwrap();
        assert_ne!(version_of(&path).unwrap(), first);
    }
}
