//! The patch ledger in the report: the `file_change` records of a run, tallied per file, put
//! on the patch summary's files as line counts.

use braincode_protocol::{ChangedFile, FileChange, PatchSummary};

/// One file's changes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tally {
    path: String,
    first_before: Option<String>,
    last_after: Option<String>,
    added: u64,
    removed: u64,
}

/// Every file the run's `file_change` records name, in the order first changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FileTally {
    files: Vec<Tally>,
}

impl FileTally {
    /// Folds one record in.
    pub(super) fn add(&mut self, change: &FileChange) {
        match self.files.iter_mut().find(|f| f.path == change.path) {
            Some(file) => {
                file.last_after = change.after_hash.clone();
                file.added += change.added;
                file.removed += change.removed;
            }
            None => self.files.push(Tally {
                path: change.path.clone(),
                first_before: change.before_hash.clone(),
                last_after: change.after_hash.clone(),
                added: change.added,
                removed: change.removed,
            }),
        }
    }

    /// Whether a file ends the run other than it started it.
    pub(super) fn changed_any(&self) -> bool {
        self.files.iter().any(|f| f.first_before != f.last_after)
    }

    /// `patch` with each changed file's line counts; files the ledger saw changed that git
    /// does not list (ignored files) are added. Without a patch summary (no git) nothing is
    /// made up.
    pub(super) fn annotate(&self, patch: Option<PatchSummary>) -> Option<PatchSummary> {
        let mut patch = patch?;
        for tally in &self.files {
            match patch
                .changed_files
                .iter_mut()
                .find(|f| f.path == tally.path)
            {
                Some(file) => {
                    file.added = Some(tally.added);
                    file.removed = Some(tally.removed);
                }
                None if tally.first_before != tally.last_after => {
                    let status = match (&tally.first_before, &tally.last_after) {
                        (None, _) => "??",
                        (_, None) => " D",
                        _ => " M",
                    };
                    patch.changed_files.push(ChangedFile {
                        path: tally.path.clone(),
                        status: status.to_string(),
                        added: Some(tally.added),
                        removed: Some(tally.removed),
                    });
                    patch.has_patch_activity = true;
                }
                None => {}
            }
        }
        Some(patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        path: &str,
        before: Option<&str>,
        after: Option<&str>,
        lines: (u64, u64),
    ) -> FileChange {
        FileChange {
            path: path.into(),
            before_hash: before.map(str::to_string),
            after_hash: after.map(str::to_string),
            added: lines.0,
            removed: lines.1,
            undoable: true,
            ..FileChange::default()
        }
    }

    #[test]
    fn counts_land_on_git_files_and_ignored_files_are_added() {
        let mut tally = FileTally::default();
        tally.add(&change("a.rs", Some("1"), Some("2"), (2, 1)));
        tally.add(&change("a.rs", Some("2"), Some("3"), (1, 0)));
        tally.add(&change("out/gen.txt", None, Some("9"), (4, 0)));
        tally.add(&change("same.rs", Some("1"), Some("1"), (1, 1)));
        let patch = PatchSummary {
            changed_files: vec![ChangedFile {
                path: "a.rs".into(),
                status: " M".into(),
                added: None,
                removed: None,
            }],
            ..PatchSummary::default()
        };
        let patch = tally.annotate(Some(patch)).unwrap();
        assert_eq!(patch.changed_files.len(), 2);
        assert_eq!(patch.changed_files[0].added, Some(3));
        assert_eq!(patch.changed_files[0].removed, Some(1));
        assert_eq!(patch.changed_files[1].path, "out/gen.txt");
        assert_eq!(patch.changed_files[1].status, "??");
        assert!(patch.has_patch_activity);
        assert_eq!(tally.annotate(None), None);
    }
}
