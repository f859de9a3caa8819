//! What runs killed before their cleanup left of their writers: directories under
//! `.git/braincode-writers/` whose lock nobody holds. `braincode doctor` lists them; the next
//! run with writers removes them.

use std::path::{Path, PathBuf};

use super::worktree::{LOCK_FILE, WRITERS_DIR, is_real_dir};

/// What a run killed before its cleanup left of its writers in a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftoverWriters {
    /// `<project>/.git/braincode-writers/<run>`.
    pub dir: PathBuf,
    /// Its writers' worktrees (directories in it).
    pub worktrees: usize,
    /// The bytes of the files in it.
    pub bytes: u64,
}

/// The writers directories of `project` whose run is gone (`braincode doctor` lists them; the
/// next run with writers removes them). Reads only; no git process.
pub fn leftover_writers(project: &Path) -> Vec<LeftoverWriters> {
    let writers = project.join(".git").join(WRITERS_DIR);
    stale_runs(&writers, &writers)
        .into_iter()
        .map(|dir| {
            let worktrees = std::fs::read_dir(&dir)
                .map(|entries| entries.flatten().filter(|e| is_real_dir(&e.path())).count())
                .unwrap_or(0);
            let bytes = ignore::WalkBuilder::new(&dir)
                .standard_filters(false)
                .build()
                .flatten()
                .filter_map(|entry| entry.metadata().ok())
                .filter(std::fs::Metadata::is_file)
                .map(|meta| meta.len())
                .sum();
            LeftoverWriters {
                dir,
                worktrees,
                bytes,
            }
        })
        .collect()
}

/// The writers directories under `writers` (other than `ours`) whose run is gone: nobody
/// holds their lock.
pub(super) fn stale_runs(writers: &Path, ours: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(writers) else {
        return Vec::new();
    };
    (entries.flatten())
        .map(|entry| entry.path())
        .filter(|dir| dir != ours && is_real_dir(dir))
        .filter(|dir| {
            // A link or a FIFO planted as the lock is not opened (nor waited on): not ours.
            braincode_sandbox::beneath::open_file(dir, Path::new(LOCK_FILE))
                .map(|file| file.try_lock().is_ok())
                // No lock file: a directory from before its lock was made, or not ours.
                .unwrap_or(true)
        })
        .collect()
}
