//! `braincode bench writers`, part 2: writer worktrees on a generated repository of many
//! files — the snapshot, worktrees made at once and removed, a command's first run in one
//! (the whole tree written out), and the disk one writer's worktree takes.

use std::path::Path;
use std::time::Instant;

use braincode_runtime::WriterWorktrees;
use braincode_tools::LazyFiles;
use serde::Serialize;

use super::median;
use super::overhead::git_commit_all;

/// A git repository of `files` small files in nested directories (100 per directory, 10
/// directories per parent), committed.
fn big_repo(root: &Path, files: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(root)?;
    for n in 0..files {
        let dir = root
            .join(format!("d{:02}", n / 1000))
            .join(format!("s{:02}", n / 100 % 10));
        if n % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        std::fs::write(
            root.join(big_repo_file(n)),
            format!("file {n}\nline two of file {n}\nthe end\n"),
        )?;
    }
    git_commit_all(root, true, "many files")
}

/// The path of file `n` of [`big_repo`], relative to its root.
fn big_repo_file(n: usize) -> String {
    format!("d{:02}/s{:02}/f{n:05}.txt", n / 1000, n / 100 % 10)
}

/// Bytes and files under `dir`, recursively (links counted by their own size, not followed);
/// `skip` names top-level entries left out.
fn tree_size(dir: &Path, skip: &[&str]) -> std::io::Result<(u64, u64)> {
    let (mut bytes, mut files) = (0, 0);
    let mut stack = vec![(dir.to_path_buf(), true)];
    while let Some((dir, top)) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if top && skip.iter().any(|s| entry.file_name() == *s) {
                continue;
            }
            let meta = entry.path().symlink_metadata()?;
            if meta.is_dir() {
                stack.push((entry.path(), false));
            } else {
                bytes += meta.len();
                files += 1;
            }
        }
    }
    Ok((bytes, files))
}

/// Worktree timings and one writer's disk on the big repository.
#[derive(Serialize)]
pub(super) struct WorktreeFigures {
    pub(super) files: usize,
    pub(super) start_median_ms: f64,
    pub(super) add_median_ms: [f64; 3],
    pub(super) add_3_at_once_median_ms: f64,
    pub(super) remove_all_3_median_ms: f64,
    /// A command's first run in a worktree: every file written out.
    pub(super) materialize_all_median_ms: f64,
    pub(super) worktree_bytes: u64,
    pub(super) worktree_files: u64,
    pub(super) worktree_git_metadata_bytes: u64,
    pub(super) working_tree_bytes: u64,
    pub(super) working_tree_files: u64,
}

pub(super) async fn measure_worktrees(
    runs: usize,
    files: usize,
) -> anyhow::Result<WorktreeFigures> {
    let dir = tempfile::Builder::new()
        .prefix("braincode-bench-writers-")
        .tempdir()?;
    let repo = dir.path().join("repo");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home)?;
    big_repo(&repo, files)?;
    let (working_tree_bytes, working_tree_files) = tree_size(&repo, &[".git"])?;
    let mut starts = Vec::new();
    let mut adds: [Vec<f64>; 3] = Default::default();
    let mut adds_all = Vec::new();
    let mut removes = Vec::new();
    let mut whole = Vec::new();
    let mut disk = None;
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
    for index in 0..=runs {
        let timed = index > 0;
        let t = Instant::now();
        let worktrees = WriterWorktrees::start(&repo, &home, &format!("bench-{index}"))
            .await
            .map_err(|why| anyhow::anyhow!("WriterWorktrees::start: {why}"))?;
        let start_ms = ms(t);
        // As a run asks for them: all at once.
        let t = Instant::now();
        let made = futures::future::join_all((0..3).map(|n| {
            let worktrees = &worktrees;
            async move {
                let t = Instant::now();
                let made = worktrees.add(&format!("writer-{n}")).await;
                (made, ms(t))
            }
        }))
        .await;
        let all_ms = ms(t);
        let mut trees = Vec::new();
        for ((made, took), times) in made.into_iter().zip(adds.iter_mut()) {
            trees.push(made.map_err(|why| anyhow::anyhow!("WriterWorktrees::add: {why}"))?);
            if timed {
                times.push(took);
            }
        }
        if timed {
            adds_all.push(all_ms);
        }
        // A writer that reads and edits one file has that one on disk.
        let touched = [big_repo_file(0)];
        (trees[0].materialize(&touched).await)
            .map_err(|why| anyhow::anyhow!("materialize: {why}"))?;
        // A writer that runs a command has the whole tree on disk first.
        let t = Instant::now();
        (trees[1].materialize_all().await)
            .map_err(|why| anyhow::anyhow!("materialize_all: {why}"))?;
        if timed {
            whole.push(ms(t));
        }
        if disk.is_none() {
            let metadata = tree_size(&repo.join(".git/worktrees"), &[])?.0;
            // git's metadata under .git/worktrees: the 3 worktrees', a third each.
            disk = Some((tree_size(trees[0].path(), &[])?, metadata / 3));
        }
        let t = Instant::now();
        worktrees.remove_all().await;
        if timed {
            starts.push(start_ms);
            removes.push(ms(t));
        }
    }
    let ((worktree_bytes, worktree_files), worktree_git_metadata_bytes) = disk.unwrap_or_default();
    let [a, b, c] = &mut adds;
    Ok(WorktreeFigures {
        files,
        start_median_ms: median(&mut starts),
        add_median_ms: [median(a), median(b), median(c)],
        add_3_at_once_median_ms: median(&mut adds_all),
        remove_all_3_median_ms: median(&mut removes),
        materialize_all_median_ms: median(&mut whole),
        worktree_bytes,
        worktree_files,
        worktree_git_metadata_bytes,
        working_tree_bytes,
        working_tree_files,
    })
}
