//! The static prefix's KV state on disk: `<model file>.prefix-<key>.kvstate`, next to the model.
//!
//! llama.cpp's own state files are not safe to read blindly: a truncated or altered file can
//! trip one of its asserts (an abort) or load garbage numbers silently. So the file is ours and
//! llama.cpp only ever sees verified bytes:
//!
//! ```text
//! magic "BCKVST01" | key (32) | token count u32 | state length u64 | SHA-256 of state (32)
//! | tokens (i32 LE each) | state (llama.cpp's sequence-state bytes)
//! ```
//!
//! The key is a SHA-256 over the model file's identity (path, size, mtime), the prefix tokens,
//! their segmentation and the settings that change the numbers. A file whose length, magic,
//! key, tokens or checksum disagree is refused and later replaced. Writes go to a temporary
//! file renamed into place, so readers never see a half-written file.

use std::io::Write;
use std::path::{Path, PathBuf};

use llama_cpp_2::token::LlamaToken;
use sha2::{Digest, Sha256};

use crate::prefix::EvalSettings;

const MAGIC: &[u8; 8] = b"BCKVST01";
const HEADER_LEN: usize = 8 + 32 + 4 + 8 + 32;
/// Bumped whenever the layout or what the key covers changes.
const KEY_VERSION: &str = "braincode-kvstate-1";
/// State files kept per model (each role's prompt has its own); the oldest go first.
const MAX_FILES_PER_MODEL: usize = 8;
const SUFFIX: &str = ".kvstate";

/// Why a state file was not used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateFileError {
    /// There is none (the normal cold start).
    #[error("no state file")]
    Missing,
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Shorter or longer than its header says, or not ours.
    #[error("the file is truncated or not a Braincode state file")]
    Malformed,
    /// Made for another model, prompt or settings.
    #[error("the file belongs to another model, prompt or settings")]
    Mismatch,
    /// The state bytes changed since they were written.
    #[error("the state checksum does not match")]
    Checksum,
}

/// The key of a prefix (see the module docs).
pub(crate) fn key(
    model_identity: &str,
    prefix: &[LlamaToken],
    segments: &[usize],
    settings: EvalSettings,
) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(KEY_VERSION.as_bytes());
    hash.update([0]);
    hash.update(model_identity.as_bytes());
    hash.update([0]);
    hash.update(settings.threads.to_le_bytes());
    hash.update(settings.batch_size.to_le_bytes());
    hash.update(settings.flash_attention.to_le_bytes());
    hash.update((segments.len() as u64).to_le_bytes());
    for end in segments {
        hash.update((*end as u64).to_le_bytes());
    }
    hash.update((prefix.len() as u64).to_le_bytes());
    for token in prefix {
        hash.update(token.0.to_le_bytes());
    }
    hash.finalize().into()
}

fn prefix_of(model_path: &Path) -> Option<(PathBuf, String)> {
    let dir = model_path.parent()?.to_path_buf();
    let name = model_path.file_name()?.to_str()?;
    Some((dir, format!("{name}.prefix-")))
}

/// Where the state file of `key` lives for the model at `model_path`.
pub(crate) fn path_for(model_path: &Path, key: &[u8; 32]) -> PathBuf {
    let mut name = model_path.as_os_str().to_os_string();
    name.push(format!(
        ".prefix-{}{SUFFIX}",
        braincode_protocol::lower_hex(&key[..8])
    ));
    PathBuf::from(name)
}

/// The state files of the model at `model_path`.
pub(crate) fn files_of(model_path: &Path) -> Vec<PathBuf> {
    let Some((dir, start)) = prefix_of(model_path) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&start) && n.ends_with(SUFFIX))
        })
        .map(|e| e.path())
        .collect()
}

/// Reads and verifies the state of `prefix` under `key`.
pub(crate) fn load(
    path: &Path,
    key: &[u8; 32],
    prefix: &[LlamaToken],
) -> Result<Vec<u8>, StateFileError> {
    let mut bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(StateFileError::Missing);
        }
        Err(err) => return Err(err.into()),
    };
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err(StateFileError::Malformed);
    }
    if &bytes[8..40] != key {
        return Err(StateFileError::Mismatch);
    }
    let field = |range: std::ops::Range<usize>| -> Result<u64, StateFileError> {
        let mut buf = [0u8; 8];
        let slice = bytes.get(range).ok_or(StateFileError::Malformed)?;
        buf[..slice.len()].copy_from_slice(slice);
        Ok(u64::from_le_bytes(buf))
    };
    let tokens = usize::try_from(field(40..44)?).map_err(|_| StateFileError::Malformed)?;
    let state_len = usize::try_from(field(44..52)?).map_err(|_| StateFileError::Malformed)?;
    let mut checksum = [0u8; 32];
    checksum.copy_from_slice(&bytes[52..HEADER_LEN]);
    let tokens_end = tokens
        .checked_mul(4)
        .and_then(|n| n.checked_add(HEADER_LEN))
        .ok_or(StateFileError::Malformed)?;
    if tokens_end.checked_add(state_len) != Some(bytes.len()) {
        return Err(StateFileError::Malformed);
    }
    let stored = bytes[HEADER_LEN..tokens_end]
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    if tokens != prefix.len() || !stored.eq(prefix.iter().map(|t| t.0)) {
        return Err(StateFileError::Mismatch);
    }
    let state = bytes.split_off(tokens_end);
    if <[u8; 32]>::from(Sha256::digest(&state)) != checksum {
        return Err(StateFileError::Checksum);
    }
    Ok(state)
}

/// Writes the state of `prefix` under `key` atomically, then prunes the model's oldest files.
pub(crate) fn save(
    path: &Path,
    key: &[u8; 32],
    prefix: &[LlamaToken],
    state: &[u8],
) -> Result<(), StateFileError> {
    let mut header = Vec::with_capacity(HEADER_LEN + prefix.len() * 4);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(key);
    let count = u32::try_from(prefix.len()).map_err(|_| StateFileError::Malformed)?;
    header.extend_from_slice(&count.to_le_bytes());
    header.extend_from_slice(&(state.len() as u64).to_le_bytes());
    header.extend_from_slice(&Sha256::digest(state));
    for token in prefix {
        header.extend_from_slice(&token.0.to_le_bytes());
    }
    // A per-process temporary name: two processes saving the same prefix never interleave.
    let mut temp = path.as_os_str().to_os_string();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(&header)?;
        file.write_all(state)?;
        file.sync_data()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(err) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(err.into());
    }
    prune(path);
    Ok(())
}

/// Keeps the newest [`MAX_FILES_PER_MODEL`] state files of the model `path` belongs to.
fn prune(path: &Path) {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let Some((model_name, _)) = name.rsplit_once(".prefix-") else {
        return;
    };
    let model = path.with_file_name(model_name);
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = files_of(&model)
        .into_iter()
        .filter_map(|p| {
            let modified = std::fs::metadata(&p).and_then(|m| m.modified()).ok()?;
            Some((modified, p))
        })
        .collect();
    if files.len() <= MAX_FILES_PER_MODEL {
        return;
    }
    files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    for (_, old) in files.into_iter().skip(MAX_FILES_PER_MODEL) {
        if old != path {
            let _ = std::fs::remove_file(old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().copied().map(LlamaToken::new).collect()
    }

    const SETTINGS: EvalSettings = EvalSettings {
        threads: 2,
        batch_size: 512,
        flash_attention: -1,
    };

    #[test]
    fn a_saved_state_loads_and_every_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        let prefix = toks(&[1, 2, 3]);
        let key = key("m", &prefix, &[3], SETTINGS);
        let path = path_for(&model, &key);
        assert!(matches!(
            load(&path, &key, &prefix),
            Err(StateFileError::Missing)
        ));
        save(&path, &key, &prefix, b"state bytes").unwrap();
        assert_eq!(load(&path, &key, &prefix).unwrap(), b"state bytes");
        assert_eq!(files_of(&model), vec![path.clone()]);

        let good = std::fs::read(&path).unwrap();
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(matches!(
            load(&path, &key, &prefix),
            Err(StateFileError::Malformed)
        ));
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(matches!(
            load(&path, &key, &prefix),
            Err(StateFileError::Checksum)
        ));
        let other = key_of_other(&prefix);
        std::fs::write(&path, &good).unwrap();
        assert!(matches!(
            load(&path, &other, &prefix),
            Err(StateFileError::Mismatch)
        ));
        assert!(matches!(
            load(&path, &key, &toks(&[1, 2, 4])),
            Err(StateFileError::Mismatch)
        ));
    }

    fn key_of_other(prefix: &[LlamaToken]) -> [u8; 32] {
        key(
            "m",
            prefix,
            &[3],
            EvalSettings {
                threads: 4,
                ..SETTINGS
            },
        )
    }

    #[test]
    fn old_files_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        for i in 0..(MAX_FILES_PER_MODEL as i32 + 3) {
            let prefix = toks(&[i]);
            let key = key("m", &prefix, &[1], SETTINGS);
            save(&path_for(&model, &key), &key, &prefix, b"s").unwrap();
        }
        assert_eq!(files_of(&model).len(), MAX_FILES_PER_MODEL);
    }
}
