//! What the ledger reads and keeps: a file's state (bytes, hash, mode) and the
//! content-addressed store of before contents, `<home>/undo/<session>/<sha256>`.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Files larger than this are hashed, not kept: their changes are journaled without a diff
/// and cannot be undone.
pub const MAX_SNAPSHOT_BYTES: u64 = 8 * 1024 * 1024;

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A path's state at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// Nothing there.
    Missing,
    /// A regular file.
    File {
        /// SHA-256 hex of the content.
        hash: String,
        /// Permission bits.
        mode: u32,
        /// The content, unless the file is over [`MAX_SNAPSHOT_BYTES`].
        bytes: Option<Vec<u8>>,
    },
    /// A directory, a symbolic link or something unreadable: not tracked.
    Other,
}

impl FileState {
    /// Reads `path` (a symbolic link is not followed).
    pub fn read(path: &Path) -> FileState {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return FileState::Missing;
        };
        if !meta.is_file() {
            return FileState::Other;
        }
        let mode = meta.permissions().mode() & 0o7777;
        if meta.len() > MAX_SNAPSHOT_BYTES {
            return match hash_file(path) {
                Some(hash) => FileState::File {
                    hash,
                    mode,
                    bytes: None,
                },
                None => FileState::Other,
            };
        }
        match std::fs::read(path) {
            Ok(bytes) => FileState::File {
                hash: sha256_hex(&bytes),
                mode,
                bytes: Some(bytes),
            },
            Err(_) => FileState::Other,
        }
    }

    /// The content hash (`None`: no file).
    pub fn hash(&self) -> Option<&str> {
        match self {
            FileState::File { hash, .. } => Some(hash),
            FileState::Missing | FileState::Other => None,
        }
    }
}

/// SHA-256 of a file, streamed (for files too big to keep).
pub fn hash_file(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer).ok()?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Some(hex(&hasher.finalize()))
}

/// The before contents of one session's changes, named by their SHA-256.
#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
}

impl BlobStore {
    /// The store of session `session_id` under `home_root` (`<home>/undo/<session>`).
    pub fn new(home_root: &Path, session_id: &str) -> BlobStore {
        BlobStore {
            dir: home_root.join("undo").join(session_id),
        }
    }

    /// Where the blob `hash` is (or would be).
    pub fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(hash)
    }

    /// Keeps `bytes` (whose hash is `hash`), atomically and private (0600 in a 0700
    /// directory); a blob already kept is not written again.
    pub fn save(&self, hash: &str, bytes: &[u8]) -> Result<(), String> {
        let path = self.path(hash);
        if path.is_file() {
            return Ok(());
        }
        braincode_config::write_bytes_atomic(&path, bytes, 0o600).map_err(|err| err.to_string())
    }

    /// The blob `hash`, checked against its name.
    pub fn load(&self, hash: &str) -> Result<Vec<u8>, String> {
        let path = self.path(hash);
        let bytes = std::fs::read(&path)
            .map_err(|err| format!("the saved content {} cannot be read: {err}", path.display()))?;
        if sha256_hex(&bytes) != hash {
            return Err(format!(
                "the saved content {} does not match its hash (it was changed or damaged)",
                path.display()
            ));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_hashes_and_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        assert_eq!(FileState::read(&file), FileState::Missing);
        std::fs::write(&file, b"hello").unwrap();
        let state = FileState::read(&file);
        assert_eq!(state.hash(), Some(sha256_hex(b"hello").as_str()));
        assert_eq!(hash_file(&file).as_deref(), state.hash());
        assert_eq!(FileState::read(dir.path()), FileState::Other);

        let store = BlobStore::new(dir.path(), "s1");
        let hash = sha256_hex(b"hello");
        store.save(&hash, b"hello").unwrap();
        assert_eq!(store.load(&hash).unwrap(), b"hello");
        let mode = std::fs::metadata(dir.path().join("undo/s1"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(store.path(&hash), b"tampered").unwrap();
        assert!(store.load(&hash).unwrap_err().contains("does not match"));
        assert!(store.load("00").unwrap_err().contains("cannot be read"));
    }
}
