//! A downstream writer starts from its upstream writers' work: before it runs, what they
//! changed in their worktrees is copied into its own and committed there as its starting point,
//! so it builds on their code (not only on their result summaries), and what it changes itself
//! is measured from that commit: its merge writes only its own change, and `undo --writer`
//! of it leaves theirs.

use std::path::Path;

use super::MAX_MERGE_FILE_BYTES;
use braincode_tools::LazyFiles;

use super::sparse::SparseWorktree;
use super::worktree::{IDENTITY, Worktrees};

impl Worktrees {
    /// Copies what the writers in `upstream` (their worktrees, in merge order, each with its
    /// changed paths as read when it completed, or `None` to read them now) changed into
    /// `into` and commits it there on top of the snapshot. Returns the paths carried (none:
    /// nothing to carry, or `into` already starts past the snapshot, as a resumed writer's
    /// worktree does). No link is followed on either side.
    pub async fn carry(
        &self,
        into: &SparseWorktree,
        upstream: &[(&SparseWorktree, Option<Vec<String>>)],
    ) -> Result<Vec<String>, String> {
        let lazy = into;
        let into = lazy.path();
        if lazy.head().await? != self.snapshot() {
            return Ok(Vec::new());
        }
        let mut carried = Vec::new();
        for (from, changed) in upstream {
            let changed = match changed {
                Some(paths) => paths.clone(),
                None => from.changed_files().await?,
            };
            let from = from.path();
            // On disk first (a sparse worktree's file is not), so that git sees the carried
            // change, a deletion included.
            lazy.materialize(&changed).await?;
            for path in changed {
                let relative = Path::new(&path);
                let stat = braincode_sandbox::beneath::stat(from, relative)
                    .map_err(|err| format!("{path}: {err}"))?;
                let written = match stat {
                    None => match braincode_sandbox::beneath::stat(into, relative) {
                        Ok(Some(_)) => braincode_sandbox::beneath::remove_file(into, relative),
                        Ok(None) => Ok(()),
                        Err(err) => Err(err),
                    },
                    Some(entry) => {
                        braincode_sandbox::beneath::read_file(from, relative, MAX_MERGE_FILE_BYTES)
                            .and_then(|bytes| {
                                braincode_sandbox::beneath::write_file(
                                    into,
                                    relative,
                                    &bytes,
                                    entry.mode & 0o7777,
                                )
                            })
                    }
                };
                written.map_err(|err| format!("{path}: {err}"))?;
                carried.push(path);
            }
        }
        if carried.is_empty() {
            return Ok(carried);
        }
        self.git_in(into, &["add", "-A", "--", "."], &[]).await?;
        let tree = self.git_in(into, &["write-tree"], &[]).await?;
        let snapshot = self.snapshot().to_string();
        let args = [
            "commit-tree",
            tree.trim(),
            "-p",
            snapshot.as_str(),
            "-m",
            "braincode: the upstream writers' change",
        ];
        let commit = self.git_in(into, &args, &IDENTITY).await?;
        let args = ["update-ref", "--no-deref", "HEAD", commit.trim()];
        self.git_in(into, &args, &[]).await?;
        lazy.moved_to(commit.trim());
        carried.sort();
        carried.dedup();
        Ok(carried)
    }

    async fn git_in(
        &self,
        worktree: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<String, String> {
        let out = self.git_at(worktree, args, env, None).await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}
