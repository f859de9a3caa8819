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
        return Err(ApiError::Conflict(crate::i18n::tf(
            crate::api::E::Changed,
            &[&path.display()],
        )));
    }
    write()?;
    version_of(path)
}

/// Changes the file at `path` in its text: `edit` gets its text (`empty` when there is no file
/// yet) and returns the new text, or `None` when it cannot follow it. The result is written
/// atomically (mode `mode`) and must pass `check` (the file's own loader), or the file is put
/// back as it was and `check`'s error is returned.
pub(crate) fn edit_in_place(
    path: &Path,
    empty: &str,
    mode: u32,
    edit: impl FnOnce(&str) -> Option<String>,
    check: impl FnOnce() -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    let before = match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => {
            return Err(ApiError::Internal(format!(
                "cannot read {}: {err}",
                path.display()
            )));
        }
    };
    let text = match &before {
        Some(bytes) => String::from_utf8(bytes.clone()).map_err(|_| {
            ApiError::Conflict(format!(
                "{} is not UTF-8 text; fix the file first",
                path.display()
            ))
        })?,
        None => empty.to_string(),
    };
    let edited = edit(&text).ok_or_else(|| {
        ApiError::Conflict(format!(
            "{} is not a JSON document this panel can follow; fix the file first, then reload",
            path.display()
        ))
    })?;
    braincode_config::write_bytes_atomic(path, edited.as_bytes(), mode)
        .map_err(|err| ApiError::Internal(err.to_string()))?;
    if let Err(err) = check() {
        // Never leave a file the loader refuses: put back what was there.
        let _restored = match &before {
            Some(bytes) => braincode_config::write_bytes_atomic(path, bytes, mode).is_ok(),
            None => std::fs::remove_file(path).is_ok(),
        };
        return Err(err);
    }
    Ok(())
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
