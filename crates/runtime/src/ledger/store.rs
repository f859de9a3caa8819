//! What the ledger reads and keeps: a file's state (bytes, hash, mode) and the
//! content-addressed store of before contents, `<home>/undo/<session>/<sha256>`.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Files larger than this are hashed, not kept: their changes are journaled without a diff
/// and cannot be undone.
pub const MAX_SNAPSHOT_BYTES: u64 = 8 * 1024 * 1024;

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    braincode_protocol::lower_hex(&Sha256::digest(bytes))
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
    /// Reads `root/relative` through the capability-safe layer: a symbolic link is never
    /// followed, at any component, so a link planted in the project cannot make the ledger
    /// read (and journal) a file outside it. A link, a directory or a path reached through
    /// a link is [`FileState::Other`].
    pub fn read(root: &Path, relative: &str) -> FileState {
        use braincode_sandbox::beneath::{self, EntryKind};
        let relative = Path::new(relative);
        let entry = match beneath::stat(root, relative) {
            Ok(None) => return FileState::Missing,
            Ok(Some(entry)) => entry,
            Err(_) => return FileState::Other,
        };
        if entry.kind != EntryKind::File {
            return FileState::Other;
        }
        let mode = entry.mode;
        if entry.size > MAX_SNAPSHOT_BYTES {
            return match hash_file(root, relative) {
                Some(hash) => FileState::File {
                    hash,
                    mode,
                    bytes: None,
                },
                None => FileState::Other,
            };
        }
        match beneath::read_file(root, relative, MAX_SNAPSHOT_BYTES) {
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

/// SHA-256 of the regular file `root/relative`, streamed (for files too big to keep), reached
/// without following a symlink.
pub fn hash_file(root: &Path, relative: &Path) -> Option<String> {
    let mut file = braincode_sandbox::beneath::open_file(root, relative).ok()?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer).ok()?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Some(braincode_protocol::lower_hex(&hasher.finalize()))
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
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn states_hashes_and_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        assert_eq!(FileState::read(dir.path(), "a.txt"), FileState::Missing);
        std::fs::write(&file, b"hello").unwrap();
        let state = FileState::read(dir.path(), "a.txt");
        assert_eq!(state.hash(), Some(sha256_hex(b"hello").as_str()));
        assert_eq!(
            hash_file(dir.path(), Path::new("a.txt")).as_deref(),
            state.hash()
        );
        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert_eq!(FileState::read(dir.path(), "d"), FileState::Other);
        // A file reached through a link (in the last component or a parent) is not read.
        std::os::unix::fs::symlink(&file, dir.path().join("link.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("up")).unwrap();
        assert_eq!(FileState::read(dir.path(), "link.txt"), FileState::Other);
        assert_eq!(FileState::read(dir.path(), "up/a.txt"), FileState::Other);

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
