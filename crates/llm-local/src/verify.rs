//! SHA-256 verification of the default model, done once per file version.
//!
//! Hashing 98 MB costs a noticeable fraction of a second, so a successful check is remembered
//! in the process (by path, size and modification time) and in a small stamp file next to the
//! model (`<file>.verified`) so that later processes only compare the stamp with the file's
//! metadata. Any change of size or mtime invalidates the stamp.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use crate::pull::DEFAULT_MODEL_SHA256;

/// Size, mtime (ns since the epoch) of a file version.
type Version = (u64, u128);

static VERIFIED: OnceLock<Mutex<HashMap<PathBuf, Version>>> = OnceLock::new();

fn version_of(path: &Path) -> io::Result<Version> {
    let meta = fs::metadata(path)?;
    let mtime = meta
        .modified()?
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    Ok((meta.len(), mtime))
}

fn stamp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".verified");
    path.with_file_name(name)
}

/// Hex SHA-256 of everything `reader` yields, calling `on_bytes` with the running count.
pub(crate) fn sha256_of(
    reader: &mut dyn Read,
    mut on_bytes: impl FnMut(u64),
) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
        on_bytes(total);
    }
    Ok(braincode_protocol::lower_hex(&hasher.finalize()))
}

/// Records that `path`, in its current version, has the default model's checksum (called after
/// a pull wrote and hashed it).
pub(crate) fn remember_verified(path: &Path) {
    let Ok(version) = version_of(path) else {
        return;
    };
    if let Ok(mut map) = VERIFIED.get_or_init(Default::default).lock() {
        map.insert(path.to_path_buf(), version);
    }
    let stamp = format!("{} {} {DEFAULT_MODEL_SHA256}\n", version.0, version.1);
    // A read-only directory only costs a re-hash in the next process.
    let _ = fs::write(stamp_path(path), stamp);
}

/// Checks that `path` is the default model byte for byte. `Ok(())` when it is; `Err` with the
/// actual checksum (or the I/O error) when it is not.
pub(crate) fn check_default_model(path: &Path) -> Result<(), String> {
    let version = version_of(path).map_err(|err| format!("cannot read it: {err}"))?;
    let map = VERIFIED.get_or_init(Default::default);
    if map
        .lock()
        .map(|m| m.get(path) == Some(&version))
        .unwrap_or(false)
    {
        return Ok(());
    }
    let expected_stamp = format!("{} {} {DEFAULT_MODEL_SHA256}", version.0, version.1);
    if fs::read_to_string(stamp_path(path)).is_ok_and(|s| s.trim() == expected_stamp) {
        if let Ok(mut m) = map.lock() {
            m.insert(path.to_path_buf(), version);
        }
        return Ok(());
    }
    let mut file = File::open(path).map_err(|err| format!("cannot open it: {err}"))?;
    let actual = sha256_of(&mut file, |_| {}).map_err(|err| format!("cannot read it: {err}"))?;
    if actual != DEFAULT_MODEL_SHA256 {
        return Err(format!(
            "its sha256 is {actual}, expected {DEFAULT_MODEL_SHA256} (the file is corrupt or incomplete)"
        ));
    }
    remember_verified(path);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_known_input() {
        let digest = sha256_of(&mut &b"abc"[..], |_| {}).unwrap();
        assert_eq!(
            digest,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
