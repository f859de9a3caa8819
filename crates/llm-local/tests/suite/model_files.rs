//! Broken model files give clear configuration errors (naming the file and the fix) instead of
//! reaching llama.cpp, and a local definition resolves to the right file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use crate::common::model_path;
use braincode_llm::ErrorKind;
use braincode_llm_local::{
    DEFAULT_MODEL_FILE, LocalModel, LocalModelOptions, cached_default_model, resolve_model_path,
};
use braincode_protocol::ModelDefinition;

fn load_error(path: &Path) -> braincode_llm::ModelError {
    LocalModel::load(path, &LocalModelOptions::default()).expect_err("the file must be refused")
}

fn assert_clear(err: &braincode_llm::ModelError, path: &Path, needle: &str) {
    assert_eq!(err.kind, ErrorKind::Config, "{err}");
    assert!(
        err.message.contains(&path.display().to_string()),
        "names the file: {}",
        err.message
    );
    assert!(
        err.message.contains(needle),
        "says {needle:?}: {}",
        err.message
    );
    assert!(
        err.message.contains("braincode models pull"),
        "says how to fix it: {}",
        err.message
    );
}

/// Copies the first `len` bytes of the real model to `to`.
fn copy_prefix(to: &Path, len: u64) {
    let mut source = File::open(model_path()).unwrap();
    let mut out = File::create(to).unwrap();
    io::copy(&mut (&mut source).take(len), &mut out).unwrap();
}

#[test]
fn a_file_that_is_not_gguf_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.gguf");
    fs::write(&path, "these are not model weights\n").unwrap();
    assert_clear(&load_error(&path), &path, "GGUF magic");
    let empty = dir.path().join("empty.gguf");
    fs::write(&empty, "").unwrap();
    assert_clear(&load_error(&empty), &empty, "too short");
}

#[test]
fn a_truncated_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("half.gguf");
    copy_prefix(&path, 40_000_000);
    assert_clear(&load_error(&path), &path, "truncated");
    // Cut inside the header (the vocabulary) too.
    let header_cut = dir.path().join("header.gguf");
    copy_prefix(&header_cut, 300_000);
    assert_clear(&load_error(&header_cut), &header_cut, "truncated");
}

#[test]
fn a_corrupt_header_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.gguf");
    copy_prefix(&path, 4_000_000);
    let mut file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    // The length of the first metadata key: claim a terabyte.
    file.seek(SeekFrom::Start(24)).unwrap();
    file.write_all(&(1u64 << 40).to_le_bytes()).unwrap();
    drop(file);
    assert_clear(&load_error(&path), &path, "length");
}

#[test]
fn a_default_model_with_a_flipped_byte_fails_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(DEFAULT_MODEL_FILE);
    fs::copy(model_path(), &path).unwrap();
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    file.seek(SeekFrom::Start(60_000_000)).unwrap();
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte).unwrap();
    file.seek(SeekFrom::Start(60_000_000)).unwrap();
    file.write_all(&[byte[0] ^ 0x55]).unwrap();
    drop(file);
    assert_clear(&load_error(&path), &path, "sha256");
}

#[test]
fn a_missing_file_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.gguf");
    assert_clear(&load_error(&path), &path, "does not exist");
    let err = LocalModel::shared(&path, LocalModelOptions::default()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Config);
}

#[test]
fn the_shared_model_is_loaded_once_per_file() {
    let first = LocalModel::shared(&model_path(), LocalModelOptions::default()).unwrap();
    let second = LocalModel::shared(&model_path(), LocalModelOptions::default()).unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert!(first.trained_context() >= 2048);
}

fn local_definition(path: Option<&Path>) -> ModelDefinition {
    let mut value = serde_json::json!({
        "id": "local/smollm2",
        "provider": "local",
        "modelId": "smollm2",
        "api": "local",
        "threads": 2
    });
    if let Some(path) = path {
        value["path"] = serde_json::json!(path);
    }
    serde_json::from_value(value).unwrap()
}

#[test]
fn local_definitions_resolve_path_then_home_then_cache() {
    let home_models = tempfile::tempdir().unwrap();
    // Explicit path wins, and must exist.
    let explicit = local_definition(Some(&model_path()));
    assert_eq!(
        resolve_model_path(&explicit, home_models.path()).unwrap(),
        model_path()
    );
    let missing = local_definition(Some(&home_models.path().join("nope.gguf")));
    let err = resolve_model_path(&missing, home_models.path()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(err.message.contains("nope.gguf"), "{}", err.message);
    // No path: the machine cache when the home has no pulled model…
    let default = local_definition(None);
    assert_eq!(
        resolve_model_path(&default, home_models.path()).unwrap(),
        cached_default_model().unwrap()
    );
    // …and the home's pulled model when it has one.
    let pulled = home_models.path().join(DEFAULT_MODEL_FILE);
    fs::hard_link(model_path(), &pulled)
        .or_else(|_| fs::copy(model_path(), &pulled).map(|_| ()))
        .unwrap();
    assert_eq!(
        resolve_model_path(&default, home_models.path()).unwrap(),
        pulled
    );
}
