//! Checks of the machine around Braincode: the home directory and git.

use std::path::Path;
use std::process::{Command, Stdio};

use braincode_config::Home;

use super::checks::Checks;

pub(super) fn check_home(home: &Home, checks: &mut Checks) {
    let root = home.root();
    match std::fs::metadata(root) {
        Ok(meta) if meta.is_dir() => match std::fs::read_dir(root) {
            // Runs write journals here: a home that can be read but not written loses them.
            // An unnamed temporary file tests that and leaves nothing behind.
            Ok(_) => match tempfile::tempfile_in(root) {
                Ok(_) => checks.ok(
                    "home",
                    format!("{} is readable and writable", root.display()),
                ),
                Err(err) => checks.error(
                    "home",
                    format!(
                        "{} is read-only ({err}): runs cannot save their sessions",
                        root.display()
                    ),
                    format!(
                        "make it writable (chmod u+w {}) or point BRAINCODE_HOME at a writable directory",
                        root.display()
                    ),
                ),
            },
            Err(err) => checks.error(
                "home",
                format!("{} cannot be read: {err}", root.display()),
                format!("chmod u+rwx {}", root.display()),
            ),
        },
        Ok(_) => checks.error(
            "home",
            format!("{} is not a directory", root.display()),
            format!(
                "move {} away, or set BRAINCODE_HOME to a directory",
                root.display()
            ),
        ),
        Err(_) => checks.ok(
            "home",
            format!(
                "{} does not exist yet (it is created on the first write; defaults are used)",
                root.display()
            ),
        ),
    }
}

fn git_output(args: &[&str], dir: &Path) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

pub(super) fn check_git(project: &Path, checks: &mut Checks) {
    let dir = if project.is_dir() {
        project
    } else {
        Path::new(".")
    };
    match git_output(&["--version"], dir) {
        Some(version) => checks.ok("git", version),
        None => {
            checks.warn(
                "git",
                "git is not installed or not on PATH: no patch summaries, checks or review of changes",
                "install git",
            );
            return;
        }
    }
    match git_output(&["rev-parse", "--show-toplevel"], dir) {
        Some(top) => checks.ok(
            "project",
            format!(
                "{} is a git repository (top level {top})",
                project.display()
            ),
        ),
        None => checks.warn(
            "project",
            format!(
                "{} is not a git repository: changes cannot be summarized or reviewed",
                project.display()
            ),
            format!("git init {}", project.display()),
        ),
    }
    check_leftover_writers(project, checks);
}

/// Parallel writers' worktrees that a run killed before its cleanup left in the project.
fn check_leftover_writers(project: &Path, checks: &mut Checks) {
    let left = braincode_runtime::leftover_writers(project);
    if left.is_empty() {
        return;
    }
    let worktrees: usize = left.iter().map(|l| l.worktrees).sum();
    let bytes: u64 = left.iter().map(|l| l.bytes).sum();
    let dirs: Vec<String> = left.iter().map(|l| l.dir.display().to_string()).collect();
    checks.warn(
        "writers",
        format!(
            "{} run(s) stopped before removing their parallel writers' worktrees ({worktrees} worktree(s), {:.1} MB): {}",
            left.len(),
            bytes as f64 / 1e6,
            dirs.join(", ")
        ),
        format!(
            "the next run with parallel writers removes them; or now: rm -rf {} && git -C {} worktree prune",
            dirs.join(" "),
            project.display()
        ),
    );
}
