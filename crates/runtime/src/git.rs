//! Git probes: environment line, patch baseline and patch summary.
//!
//! Every git call has a timeout; a project that is not a git repository (or a git failure)
//! yields `None`, never an error that stops the run.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use braincode_protocol::{
    BaselineEntry, ChangedFile, DiffStats, PatchBaselineRecord, PatchSummary,
};

mod review_diff;
pub use review_diff::review_diff;

const GIT_TIMEOUT: Duration = Duration::from_secs(10);

async fn git(root: &Path, args: &[&str], timeout: Duration) -> Option<String> {
    let answer = braincode_tools::git_host::query(root, args, timeout)
        .await
        .ok()?;
    answer
        .success
        .then(|| String::from_utf8_lossy(&answer.stdout).into_owned())
}

/// Several git queries in one go (one reading of the repository's configuration): their
/// outputs in order, `None` for one that failed (all of them when git could not run).
async fn git_each(root: &Path, commands: &[&[&str]], timeout: Duration) -> Vec<Option<String>> {
    match braincode_tools::git_host::query_many(root, commands, timeout).await {
        Ok(answers) => answers
            .into_iter()
            .map(|answer| {
                answer
                    .success
                    .then(|| String::from_utf8_lossy(&answer.stdout).into_owned())
            })
            .collect(),
        Err(_) => vec![None; commands.len()],
    }
}

/// What one look at the repository says before a run: the environment line (branch and
/// cleanliness) and the patch baseline, from a single `git status` (a process start is most
/// of the cost, and it comes before the first model request).
#[derive(Debug, Clone)]
pub struct RepositoryProbe {
    /// `branch main, clean`, `git repository with no commits yet`, `not a git repository`…
    pub description: String,
    /// The dirty state, or `None` outside a git repository.
    pub baseline: Option<PatchBaseline>,
}

/// Looks at the repository once: see [`RepositoryProbe`].
pub async fn probe_repository(root: &Path) -> RepositoryProbe {
    if braincode_sandbox::helper_sandbox(root).is_err() {
        return RepositoryProbe {
            description:
                "not read (Braincode runs git only inside the OS sandbox, and none is available)"
                    .to_string(),
            baseline: None,
        };
    }
    let Some((header, entries)) = status_entries(root, true).await else {
        return RepositoryProbe {
            description: "not a git repository".to_string(),
            baseline: None,
        };
    };
    let description = describe_header(header.as_deref().unwrap_or_default(), entries.len());
    RepositoryProbe {
        description,
        baseline: Some(PatchBaseline::from_entries(root, entries).await),
    }
}

fn describe_header(header: &str, changed: usize) -> String {
    let branch = header.strip_prefix("## ").unwrap_or(header);
    if branch.starts_with("No commits yet on ") {
        return "git repository with no commits yet".to_string();
    }
    let head = if branch.starts_with("HEAD (no branch)") {
        "detached HEAD".to_string()
    } else {
        // `main...origin/main [ahead 1]`: the local branch is what comes before `...`.
        let name = branch.split("...").next().unwrap_or(branch);
        let name = name.split(' ').next().unwrap_or(name);
        format!("branch {name}")
    };
    match changed {
        0 => format!("{head}, clean"),
        n => format!("{head}, {n} changed file(s)"),
    }
}

/// The working-tree state before a run: every dirty path with its status and content hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchBaseline {
    entries: BTreeMap<String, (String, Option<String>)>,
}

/// `git status -z` entries (path, status), and with `branch` the `## …` header line.
/// The arguments of the `git status` every look at the tree uses.
fn status_args(branch: bool) -> Vec<&'static str> {
    let mut args = vec!["status", "--porcelain=v1", "-z", "--untracked-files=all"];
    if branch {
        args.push("--branch");
    }
    args
}

async fn status_entries(
    root: &Path,
    branch: bool,
) -> Option<(Option<String>, Vec<(String, String)>)> {
    let out = git(root, &status_args(branch), GIT_TIMEOUT).await?;
    Some(parse_status(&out, branch))
}

/// `git status -z` output as entries (path, status), and with `branch` the `## …` header.
fn parse_status(out: &str, branch: bool) -> (Option<String>, Vec<(String, String)>) {
    let mut header = None;
    let mut entries = Vec::new();
    let mut fields = out.split('\0').filter(|f| !f.is_empty());
    while let Some(field) = fields.next() {
        if let Some(line) = field
            .strip_prefix("## ")
            .filter(|_| branch && header.is_none())
        {
            header = Some(format!("## {line}"));
            continue;
        }
        if field.len() < 4 {
            continue;
        }
        let status = field[..2].to_string();
        let path = field[3..].to_string();
        if status.starts_with('R') || status.starts_with('C') {
            // Renames and copies are followed by their source path.
            fields.next();
        }
        entries.push((path, status));
    }
    (header, entries)
}

/// Files larger than this are identified by their size and modification time, not hashed:
/// a run must not read a 1 GB untracked file (twice) to learn whether it changed.
pub const MAX_HASHED_BYTES: u64 = 8 * 1024 * 1024;

/// What identifies the content of each dirty path: the git blob hash of a regular file up to
/// [`MAX_HASHED_BYTES`], `stat:<size>:<mtime>` of a bigger one (read without following a
/// symlink; a change of either counts as a change of the file). Paths that are not regular
/// files get nothing.
async fn content_hashes(root: &Path, paths: &[&str]) -> BTreeMap<String, String> {
    let mut hashes = BTreeMap::new();
    let mut small: Vec<&str> = Vec::new();
    for path in paths {
        match braincode_sandbox::beneath::stat(root, Path::new(path)) {
            Ok(Some(entry)) if entry.kind == braincode_sandbox::beneath::EntryKind::File => {
                if entry.size > MAX_HASHED_BYTES {
                    hashes.insert(
                        (*path).to_string(),
                        format!("stat:{}:{}", entry.size, entry.mtime_ns),
                    );
                } else {
                    small.push(path);
                }
            }
            _ => {}
        }
    }
    for chunk in small.chunks(200) {
        let existing: Vec<&str> = chunk.to_vec();
        if existing.is_empty() {
            continue;
        }
        // `--no-filters`: hashing must not run a clean filter (the sandbox would hold it, but
        // the hash is of the bytes on disk either way).
        let mut args = vec!["hash-object", "--no-filters", "--"];
        args.extend(existing.iter().copied());
        if let Some(out) = git(root, &args, GIT_TIMEOUT).await {
            for (path, hash) in existing.iter().zip(out.lines()) {
                hashes.insert((*path).to_string(), hash.trim().to_string());
            }
        }
    }
    hashes
}

impl PatchBaseline {
    /// Records the current dirty state, or `None` outside a git repository.
    pub async fn capture(root: &Path) -> Option<PatchBaseline> {
        let (_, entries) = status_entries(root, false).await?;
        Some(Self::from_entries(root, entries).await)
    }

    async fn from_entries(root: &Path, entries: Vec<(String, String)>) -> PatchBaseline {
        let paths: Vec<&str> = entries.iter().map(|(p, _)| p.as_str()).collect();
        let hashes = content_hashes(root, &paths).await;
        PatchBaseline {
            entries: entries
                .into_iter()
                .map(|(path, status)| {
                    let hash = hashes.get(&path).cloned();
                    (path, (status, hash))
                })
                .collect(),
        }
    }

    /// What changed since the baseline. A file that was already dirty counts as changed by
    /// the run when its content differs from the baseline (so runs in a dirty tree still see
    /// their own edits).
    pub async fn summarize(&self, root: &Path) -> Option<PatchSummary> {
        let status = status_args(false);
        let (entries, diff_stats) = if self.entries.is_empty() {
            // Clean when the run started: `git status` alone first, for a tree still clean
            // has nothing the diff statistics could count (three git processes fewer after a
            // question or a review); a tree that changed gets them next.
            let (_, entries) = parse_status(&git(root, &status, GIT_TIMEOUT).await?, false);
            let stats = if entries.is_empty() {
                Some(DiffStats::default())
            } else {
                diff_stats(
                    git_each(root, &DIFF_STATS_QUERIES, GIT_TIMEOUT)
                        .await
                        .into_iter(),
                )
            };
            (entries, stats)
        } else {
            let mut commands: Vec<&[&str]> = vec![&status];
            commands.extend_from_slice(&DIFF_STATS_QUERIES);
            let mut answers = git_each(root, &commands, GIT_TIMEOUT).await.into_iter();
            let (_, entries) = parse_status(&answers.next().flatten()?, false);
            (entries, diff_stats(answers))
        };
        let paths: Vec<&str> = entries.iter().map(|(p, _)| p.as_str()).collect();
        let hashes = content_hashes(root, &paths).await;
        let mut changed = Vec::new();
        let mut pre_existing = Vec::new();
        for (path, status) in entries {
            let file = ChangedFile {
                path: path.clone(),
                status: status.clone(),
                added: None,
                removed: None,
            };
            match self.entries.get(&path) {
                Some((before_status, before_hash))
                    if *before_status == status && *before_hash == hashes.get(&path).cloned() =>
                {
                    pre_existing.push(file);
                }
                Some(_) | None => changed.push(file),
            }
        }
        // Files the run restored to their committed state also changed.
        for (path, (status, _)) in &self.entries {
            let still_dirty = changed.iter().chain(&pre_existing).any(|f| &f.path == path);
            if !still_dirty {
                changed.push(ChangedFile {
                    path: path.clone(),
                    status: format!("{status}→clean"),
                    added: None,
                    removed: None,
                });
            }
        }
        Some(PatchSummary {
            has_patch_activity: !changed.is_empty(),
            changed_files: changed,
            pre_existing_changed_files: pre_existing,
            diff_stats,
        })
    }
}

/// Most dirty paths a `patch_baseline` record lists (each takes about 100 bytes of a journal
/// line); a larger baseline is not journaled and a resume measures from the tree it finds.
pub const MAX_JOURNALED_BASELINE_ENTRIES: usize = 5_000;

impl PatchBaseline {
    /// Whether `path` was dirty (changed, staged or untracked) before the run.
    pub fn is_dirty(&self, path: &str) -> bool {
        self.entries.contains_key(path)
    }

    /// The paths whose state differs between `earlier` and this look (changed, appeared or
    /// gone), sorted.
    pub fn changed_since(&self, earlier: &PatchBaseline) -> Vec<String> {
        let mut paths: Vec<String> = (self.entries.iter())
            .filter(|(path, state)| earlier.entries.get(*path) != Some(state))
            .map(|(path, _)| path.clone())
            .chain(
                (earlier.entries.keys())
                    .filter(|path| !self.entries.contains_key(*path))
                    .cloned(),
            )
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// Takes `paths` as they are in `now` into this baseline: what someone other than the
    /// agent wrote (the checks) is then not the run's change.
    pub fn absorb(&mut self, now: &PatchBaseline, paths: &[String]) {
        for path in paths {
            match now.entries.get(path) {
                Some(state) => {
                    self.entries.insert(path.clone(), state.clone());
                }
                None => {
                    self.entries.remove(path);
                }
            }
        }
    }

    /// The baseline as its journal record, or `None` when it has more than
    /// [`MAX_JOURNALED_BASELINE_ENTRIES`] paths (a line of the journal cannot hold it whole).
    pub fn to_record(&self) -> Option<PatchBaselineRecord> {
        if self.entries.len() > MAX_JOURNALED_BASELINE_ENTRIES {
            return None;
        }
        Some(PatchBaselineRecord {
            entries: (self.entries.iter())
                .map(|(path, (status, hash))| BaselineEntry {
                    path: path.clone(),
                    status: status.clone(),
                    hash: hash.clone(),
                })
                .collect(),
        })
    }

    /// The baseline a journal record holds (a resumed run measures its changes from it).
    pub fn from_record(record: &PatchBaselineRecord) -> PatchBaseline {
        PatchBaseline {
            entries: (record.entries.iter())
                .map(|e| (e.path.clone(), (e.status.clone(), e.hash.clone())))
                .collect(),
        }
    }
}

/// The content of `path` in the last commit, or `None` when it has none (a new file, no
/// commit yet, not a repository, a git failure). For a file that was clean when a run
/// started, that is its content then — also when the run staged its edit since (the index
/// would hold the edit).
pub async fn committed_content(root: &Path, path: &str) -> Option<Vec<u8>> {
    let spec = format!("HEAD:{path}");
    let answer = braincode_tools::git_host::query(root, &["show", &spec], GIT_TIMEOUT)
        .await
        .ok()?;
    answer.success.then_some(answer.stdout)
}

/// The questions [`diff_stats`] reads the answers of.
const DIFF_STATS_QUERIES: [&[&str]; 3] = [
    &["diff", "--numstat"],
    &["diff", "--cached", "--numstat"],
    &["ls-files", "--others", "--exclude-standard"],
];

/// The diff statistics from the answers to [`DIFF_STATS_QUERIES`], in order.
fn diff_stats(mut answers: impl Iterator<Item = Option<String>>) -> Option<DiffStats> {
    let (unstaged, staged, untracked) = (
        answers.next().flatten(),
        answers.next().flatten(),
        answers.next().flatten(),
    );
    let mut stats = DiffStats::default();
    for out in [unstaged?, staged?] {
        for line in out.lines() {
            let mut parts = line.split('\t');
            let added = parts
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            let removed = parts
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            stats.files += 1;
            stats.insertions += added;
            stats.deletions += removed;
        }
    }
    stats.untracked = untracked?.lines().count() as u64;
    Some(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command as StdCommand;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let ok = StdCommand::new("git")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(
                ok.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&ok.stderr)
            );
        };
        run(&["init", "-q"]);
        run(&["config", "user.email", "t@example.com"]);
        run(&["config", "user.name", "t"]);
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "two\n").unwrap();
        run(&["add", "."]);
        run(&["commit", "-qm", "init"]);
        dir
    }

    #[tokio::test]
    async fn run_changes_are_separated_from_pre_existing_ones() {
        let dir = repo();
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "dirty before\n").unwrap();
        std::fs::write(root.join("b.txt"), "dirty before too\n").unwrap();
        let baseline = PatchBaseline::capture(root).await.unwrap();

        std::fs::write(root.join("b.txt"), "edited by the run\n").unwrap();
        std::fs::write(root.join("new.rs"), "fn main() {}\n").unwrap();
        let summary = baseline.summarize(root).await.unwrap();
        let changed: Vec<&str> = summary
            .changed_files
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(changed, vec!["b.txt", "new.rs"]);
        assert_eq!(summary.pre_existing_changed_files.len(), 1);
        assert!(summary.has_patch_activity);
        let stats = summary.diff_stats.unwrap();
        assert_eq!(stats.untracked, 1);
        assert_eq!(stats.files, 2);
    }

    /// A big untracked file is known by its size and time, never read: unchanged it stays
    /// the user's, changed it is the run's.
    #[tokio::test]
    async fn a_big_untracked_file_is_compared_by_its_stat_not_hashed() {
        let dir = repo();
        let root = dir.path().canonicalize().unwrap();
        let big = root.join("big.bin");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_HASHED_BYTES + 1)
            .unwrap();
        let baseline = PatchBaseline::capture(&root).await.unwrap();
        let record = baseline.to_record().unwrap();
        let entry = record.entries.iter().find(|e| e.path == "big.bin").unwrap();
        assert!(
            entry.hash.as_deref().unwrap().starts_with("stat:"),
            "{entry:?}"
        );
        let summary = baseline.summarize(&root).await.unwrap();
        assert!(summary.changed_files.is_empty(), "{summary:?}");
        assert_eq!(summary.pre_existing_changed_files.len(), 1);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&big)
            .unwrap()
            .set_len(MAX_HASHED_BYTES + 2)
            .unwrap();
        let summary = baseline.summarize(&root).await.unwrap();
        assert_eq!(summary.changed_files.len(), 1, "{summary:?}");
        assert_eq!(summary.changed_files[0].path, "big.bin");
    }

    #[tokio::test]
    async fn the_baseline_round_trips_through_its_record_and_commits_are_readable() {
        let dir = repo();
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "dirty\n").unwrap();
        std::fs::write(root.join("new.txt"), "new\n").unwrap();
        let baseline = PatchBaseline::capture(root).await.unwrap();
        let record = baseline.to_record().unwrap();
        assert_eq!(record.entries.len(), 2);
        assert!(record.entries.iter().all(|e| e.hash.is_some()));
        assert_eq!(PatchBaseline::from_record(&record), baseline);
        assert!(baseline.is_dirty("a.txt") && !baseline.is_dirty("b.txt"));
        assert_eq!(committed_content(root, "a.txt").await.unwrap(), b"one\n");
        assert_eq!(committed_content(root, "new.txt").await, None);
    }

    /// From a clean tree, the statistics are those of the whole batch: zero while it stays
    /// clean, counted once it changed.
    #[tokio::test]
    async fn a_run_from_a_clean_tree_counts_what_it_changed() {
        let dir = repo();
        let root = dir.path();
        let baseline = PatchBaseline::capture(root).await.unwrap();
        let clean = baseline.summarize(root).await.unwrap();
        assert_eq!(clean.diff_stats, Some(DiffStats::default()));
        assert!(clean.changed_files.is_empty() && clean.pre_existing_changed_files.is_empty());

        std::fs::write(root.join("a.txt"), "one\nmore\n").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        StdCommand::new("git")
            .args(["add", "b.txt"])
            .current_dir(root)
            .status()
            .unwrap();
        std::fs::write(root.join("new.rs"), "fn main() {}\n").unwrap();
        let summary = baseline.summarize(root).await.unwrap();
        assert_eq!(summary.changed_files.len(), 3, "{summary:?}");
        let stats = summary.diff_stats.unwrap();
        assert_eq!(
            (
                stats.files,
                stats.insertions,
                stats.deletions,
                stats.untracked
            ),
            (2, 1, 1, 1)
        );
    }

    /// The environment section's line: branch and cleanliness, or why there is none.
    async fn describe_repository(root: &Path) -> String {
        probe_repository(root).await.description
    }

    #[tokio::test]
    async fn no_change_means_no_activity_and_non_repos_have_no_summary() {
        let dir = repo();
        let baseline = PatchBaseline::capture(dir.path()).await.unwrap();
        let summary = baseline.summarize(dir.path()).await.unwrap();
        assert!(!summary.has_patch_activity);
        assert!(describe_repository(dir.path()).await.ends_with("clean"));

        let plain = tempfile::tempdir().unwrap();
        assert!(PatchBaseline::capture(plain.path()).await.is_none());
        assert_eq!(
            describe_repository(plain.path()).await,
            "not a git repository"
        );
    }

    #[tokio::test]
    async fn the_repository_line_names_the_branch_changes_and_odd_states() {
        let dir = repo();
        let branch = describe_repository(dir.path()).await;
        assert!(branch.starts_with("branch "), "{branch}");
        std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "new\n").unwrap();
        assert!(
            describe_repository(dir.path())
                .await
                .ends_with(", 2 changed file(s)")
        );
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap()
        };
        git(&["checkout", "-q", "--detach"]);
        assert!(
            describe_repository(dir.path())
                .await
                .starts_with("detached HEAD")
        );

        let empty = tempfile::tempdir().unwrap();
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(empty.path())
            .output()
            .unwrap();
        assert_eq!(
            describe_repository(empty.path()).await,
            "git repository with no commits yet"
        );
    }
}
