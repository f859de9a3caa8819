//! Merging a writer's change back into the project: a three-way merge per file against the
//! snapshot, all of a writer or nothing.
//!
//! For each file the writer changed (its worktree against the snapshot):
//! - `ours` is the project's file now, `expected` what Braincode knows it holds (the snapshot,
//!   or what an earlier writer's merge wrote, by content hash). When they differ, somebody
//!   changed the file during the run: the writer's merge is refused, never written over an
//!   edit — unless the project already holds exactly the writer's content (a merge cut by a
//!   crash after it wrote the file), which is then left as it is.
//! - the writer's content goes in as is when nobody else changed the file; when an earlier
//!   writer did, the three contents are merged line by line (`diffy`, the diff3 algorithm
//!   git uses); overlapping changes, or a binary file changed on both sides, are a conflict.
//!
//! A writer with a conflict or a refusal writes nothing; its conflicts go to the primary.

use std::collections::HashMap;

use braincode_protocol::{MergeOutcome, MergedFile};

/// One file of a writer's change: its path and the three sides.
#[derive(Debug, Clone)]
pub(crate) struct FileSides {
    /// Project-relative path.
    pub path: String,
    /// At the snapshot (`None`: the file did not exist).
    pub base: Option<Vec<u8>>,
    /// In the project now.
    pub ours: Option<Vec<u8>>,
    /// In the writer's worktree (`None`: the writer deleted it).
    pub theirs: Option<Vec<u8>>,
}

/// What to write for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileAction {
    /// Write these bytes.
    Write(Vec<u8>),
    /// Delete it.
    Delete,
}

/// A file that changed on both sides in the same place.
#[derive(Debug, Clone)]
pub(crate) struct Conflict {
    /// Project-relative path.
    pub path: String,
    /// The three sides, as text (lossy for a binary file).
    pub base: String,
    pub ours: String,
    pub theirs: String,
    /// The merge with conflict markers (empty for a binary file).
    pub marked: String,
}

/// What merging one writer decided.
#[derive(Debug, Clone)]
pub(crate) struct MergePlan {
    pub outcome: MergeOutcome,
    /// The files, in path order, with what happened to each.
    pub files: Vec<MergedFile>,
    /// What to write (only for a clean outcome).
    pub actions: Vec<(String, FileAction)>,
    pub conflicts: Vec<Conflict>,
    /// Why, for a refused outcome.
    pub reason: Option<String>,
    /// What each of the writer's files holds in the project once this merge is written
    /// (content hash; `None`: no file), for the merges after it.
    pub after: Vec<(String, Option<String>)>,
}

/// The content hash merges compare by (`None`: no file).
pub(crate) fn content_hash(bytes: &Option<Vec<u8>>) -> Option<String> {
    bytes.as_deref().map(crate::ledger::sha256_hex)
}

/// Decides one writer's merge. `expected` holds the content hashes earlier merges of this run
/// wrote (a path absent from it is expected to hold its snapshot content).
pub(crate) fn plan_merge(
    sides: &[FileSides],
    expected: &HashMap<String, Option<String>>,
) -> MergePlan {
    let mut files = Vec::new();
    let mut actions = Vec::new();
    let mut conflicts = Vec::new();
    let mut refused = Vec::new();
    let mut after = Vec::new();
    for side in sides {
        let (base, ours, theirs) = (
            content_hash(&side.base),
            content_hash(&side.ours),
            content_hash(&side.theirs),
        );
        let expected_now = expected.get(&side.path).unwrap_or(&base);
        let status = if &ours != expected_now {
            if ours == theirs {
                // The writer's content is there already: nothing to write, nothing lost.
                after.push((side.path.clone(), ours.clone()));
                "already_in_project"
            } else {
                refused.push(side.path.clone());
                "changed_in_project"
            }
        } else if &theirs == expected_now {
            "unchanged"
        } else if *expected_now == base {
            // Nobody else touched it: the writer's content as is.
            after.push((side.path.clone(), theirs.clone()));
            actions.push((side.path.clone(), action_for(side.theirs.clone())));
            if side.theirs.is_some() {
                "written"
            } else {
                "deleted"
            }
        } else {
            match three_way(side) {
                Ok(merged) => {
                    after.push((side.path.clone(), Some(crate::ledger::sha256_hex(&merged))));
                    actions.push((side.path.clone(), FileAction::Write(merged)));
                    "written"
                }
                Err(conflict) => {
                    let status = if side.ours.is_none() != side.theirs.is_none() {
                        // Renamed or deleted on one side, edited on the other.
                        "deleted_on_one_side"
                    } else if conflict.marked.is_empty() {
                        "binary_conflict"
                    } else {
                        "conflict"
                    };
                    conflicts.push(conflict);
                    status
                }
            }
        };
        files.push(MergedFile {
            path: side.path.clone(),
            status: status.to_string(),
        });
    }
    let outcome = if !refused.is_empty() {
        MergeOutcome::Refused
    } else if !conflicts.is_empty() {
        MergeOutcome::Conflict
    } else if actions.is_empty() && after.is_empty() {
        // Nothing to write and nothing of the writer's already there: it changed nothing.
        MergeOutcome::Empty
    } else {
        MergeOutcome::Clean
    };
    let reason = match outcome {
        MergeOutcome::Refused => Some(format!(
            "{} changed in the project during the run; the writer's change was not written over it",
            refused.join(", ")
        )),
        MergeOutcome::Conflict => Some(format!(
            "{} changed on both sides in the same place",
            conflicts
                .iter()
                .map(|c| c.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        MergeOutcome::Clean | MergeOutcome::Empty | MergeOutcome::Failed => None,
    };
    if outcome != MergeOutcome::Clean {
        actions.clear();
    }
    if !matches!(outcome, MergeOutcome::Clean | MergeOutcome::Empty) {
        after.clear();
    }
    MergePlan {
        outcome,
        files,
        actions,
        conflicts,
        reason,
        after,
    }
}

fn action_for(content: Option<Vec<u8>>) -> FileAction {
    match content {
        Some(bytes) => FileAction::Write(bytes),
        None => FileAction::Delete,
    }
}

/// The line merge of a file an earlier writer changed too.
fn three_way(side: &FileSides) -> Result<Vec<u8>, Conflict> {
    let text = |bytes: &Option<Vec<u8>>| -> Option<String> {
        match bytes {
            None => Some(String::new()),
            Some(bytes) if bytes.contains(&0) => None,
            Some(bytes) => String::from_utf8(bytes.clone()).ok(),
        }
    };
    let lossy = |bytes: &Option<Vec<u8>>| {
        bytes
            .as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    let conflict = |marked: String| Conflict {
        path: side.path.clone(),
        base: lossy(&side.base),
        ours: lossy(&side.ours),
        theirs: lossy(&side.theirs),
        marked,
    };
    let (Some(base), Some(ours), Some(theirs)) =
        (text(&side.base), text(&side.ours), text(&side.theirs))
    else {
        return Err(conflict(String::new()));
    };
    // A deletion on one side and an edit on the other is a conflict, not an empty file.
    if side.ours.is_none() != side.theirs.is_none() {
        return Err(conflict(String::new()));
    }
    match diffy::merge(&base, &ours, &theirs) {
        Ok(merged) => Ok(merged.into_bytes()),
        Err(marked) => Err(conflict(marked)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(bytes: &[u8]) -> Option<String> {
        content_hash(&Some(bytes.to_vec()))
    }

    fn side(path: &str, base: Option<&str>, ours: Option<&str>, theirs: Option<&str>) -> FileSides {
        let bytes = |s: Option<&str>| s.map(|s| s.as_bytes().to_vec());
        FileSides {
            path: path.into(),
            base: bytes(base),
            ours: bytes(ours),
            theirs: bytes(theirs),
        }
    }

    #[test]
    fn a_file_only_the_writer_changed_is_written_as_is() {
        let plan = plan_merge(
            &[
                side("a.rs", Some("a\n"), Some("a\n"), Some("b\n")),
                side("new.rs", None, None, Some("new\n")),
                side("gone.rs", Some("x\n"), Some("x\n"), None),
            ],
            &HashMap::new(),
        );
        assert_eq!(plan.outcome, MergeOutcome::Clean);
        assert_eq!(
            plan.actions,
            vec![
                ("a.rs".into(), FileAction::Write(b"b\n".to_vec())),
                ("new.rs".into(), FileAction::Write(b"new\n".to_vec())),
                ("gone.rs".into(), FileAction::Delete),
            ]
        );
    }

    #[test]
    fn an_edit_made_in_the_project_during_the_run_refuses_the_whole_writer() {
        let plan = plan_merge(
            &[
                side("a.rs", Some("a\n"), Some("a\n"), Some("b\n")),
                side(
                    "user.rs",
                    Some("u\n"),
                    Some("user typed\n"),
                    Some("writer\n"),
                ),
            ],
            &HashMap::new(),
        );
        assert_eq!(plan.outcome, MergeOutcome::Refused);
        assert!(
            plan.actions.is_empty(),
            "nothing of a refused writer is written"
        );
        assert!(
            plan.reason
                .unwrap()
                .contains("user.rs changed in the project")
        );
    }

    #[test]
    fn two_writers_on_different_lines_of_one_file_merge_and_on_the_same_line_conflict() {
        let base = "fn a() {}\n\nfn b() {}\n\nfn c() {}\n";
        let first = "fn a() { 1 }\n\nfn b() {}\n\nfn c() {}\n";
        let mut expected = HashMap::new();
        expected.insert("m.rs".to_string(), hash(first.as_bytes()));
        let clean = plan_merge(
            &[side(
                "m.rs",
                Some(base),
                Some(first),
                Some("fn a() {}\n\nfn b() {}\n\nfn c() { 3 }\n"),
            )],
            &expected,
        );
        assert_eq!(clean.outcome, MergeOutcome::Clean);
        assert_eq!(
            clean.actions[0].1,
            FileAction::Write(b"fn a() { 1 }\n\nfn b() {}\n\nfn c() { 3 }\n".to_vec())
        );
        let clash = plan_merge(
            &[side(
                "m.rs",
                Some(base),
                Some(first),
                Some("fn a() { 2 }\n\nfn b() {}\n\nfn c() {}\n"),
            )],
            &expected,
        );
        assert_eq!(clash.outcome, MergeOutcome::Conflict);
        assert!(clash.actions.is_empty());
        assert!(clash.conflicts[0].marked.contains("<<<<<<<"));
    }

    #[test]
    fn two_writers_creating_the_same_file_or_a_binary_clash_are_conflicts() {
        let mut expected = HashMap::new();
        expected.insert("new.rs".to_string(), hash(b"one\n"));
        expected.insert("logo.png".to_string(), hash(&[0, 1, 2]));
        let plan = plan_merge(
            &[
                side("new.rs", None, Some("one\n"), Some("two\n")),
                FileSides {
                    path: "logo.png".into(),
                    base: Some(vec![0, 9]),
                    ours: Some(vec![0, 1, 2]),
                    theirs: Some(vec![0, 3, 4]),
                },
            ],
            &expected,
        );
        assert_eq!(plan.outcome, MergeOutcome::Conflict);
        let statuses: Vec<&str> = plan.files.iter().map(|f| f.status.as_str()).collect();
        assert_eq!(statuses, ["conflict", "binary_conflict"]);
    }

    /// One writer renamed `old.rs` to `new.rs` (merged first: `old.rs` is gone, `new.rs` has
    /// its content); the next writer edited `old.rs`. Its edit has no file to land in: a
    /// conflict for the primary, never a silently recreated `old.rs` nor a lost edit.
    #[test]
    fn a_rename_on_one_side_and_an_edit_on_the_other_is_a_conflict() {
        let mut expected = HashMap::new();
        expected.insert("old.rs".to_string(), None);
        expected.insert("new.rs".to_string(), hash(b"fn f() {}\n"));
        let plan = plan_merge(
            &[side(
                "old.rs",
                Some("fn f() {}\n"),
                None,
                Some("fn f() { edited() }\n"),
            )],
            &expected,
        );
        assert_eq!(plan.outcome, MergeOutcome::Conflict);
        assert!(plan.actions.is_empty());
        assert_eq!(plan.files[0].status, "deleted_on_one_side");
        let conflict = &plan.conflicts[0];
        assert_eq!(conflict.ours, "");
        assert!(conflict.theirs.contains("edited()"), "{conflict:?}");
        assert!(plan.reason.unwrap().contains("old.rs"));
    }

    /// A merge cut by a crash after it wrote a file: run again, the file already holds the
    /// writer's content. It is neither refused nor written twice, the rest is written, and
    /// the merges after it expect the writer's content there.
    #[test]
    fn a_file_that_already_holds_the_writers_content_is_left_as_it_is() {
        let plan = plan_merge(
            &[
                side("a.rs", Some("a\n"), Some("b\n"), Some("b\n")),
                side("c.rs", Some("c\n"), Some("c\n"), Some("d\n")),
            ],
            &HashMap::new(),
        );
        assert_eq!(plan.outcome, MergeOutcome::Clean);
        assert_eq!(
            plan.actions,
            vec![("c.rs".into(), FileAction::Write(b"d\n".to_vec()))]
        );
        assert_eq!(plan.files[0].status, "already_in_project");
        assert_eq!(
            plan.after,
            vec![("a.rs".into(), hash(b"b\n")), ("c.rs".into(), hash(b"d\n"))]
        );
        // All of it there already: the writer's change is in, nothing is written.
        let plan = plan_merge(
            &[side("a.rs", Some("a\n"), Some("b\n"), Some("b\n"))],
            &HashMap::new(),
        );
        assert_eq!(plan.outcome, MergeOutcome::Clean);
        assert!(plan.actions.is_empty());
        // Something else than the writer's content there: refused, as before.
        let plan = plan_merge(
            &[side("a.rs", Some("a\n"), Some("mine\n"), Some("b\n"))],
            &HashMap::new(),
        );
        assert_eq!(plan.outcome, MergeOutcome::Refused);
        assert!(plan.after.is_empty());
    }

    #[test]
    fn a_writer_that_changed_nothing_is_empty() {
        let plan = plan_merge(
            &[side("a.rs", Some("a\n"), Some("a\n"), Some("a\n"))],
            &HashMap::new(),
        );
        assert_eq!(plan.outcome, MergeOutcome::Empty);
    }
}
