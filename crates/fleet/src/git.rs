//! The worker's own git on a task's checkout: clone, check out, make the patch, commit and
//! push. It runs outside the sandbox, so it must never run what the repository or its run
//! could plant.
//!
//! Two git directories: a bare clone of the task's repository beside the checkout
//! (`.<id>.git`, the worker's), and the checkout's own `.git`, cloned from it, which the run
//! works with. Every call after the run (the patch, the result commit, the push) uses the
//! worker's directory with the checkout as work tree: the checkout's `.git` is never read
//! again, so hooks, `core.fsmonitor`, filter or diff drivers, `remote.*.receivepack` or
//! `core.sshCommand` left in it (its run may not write there; this holds if one ever does)
//! run nothing. What the repository commits (`.gitattributes` naming drivers, `.gitmodules`
//! with commands, hook directories) names programs only configuration could define, and
//! [`HARDENED`] turns off what the worker's own configuration could run on its behalf.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// How long a clone or a push may take.
const NETWORK_GIT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a local git call may take.
const LOCAL_GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings on every git call of the worker: no program runs on its own (hooks, fsmonitor,
/// pagers, external diffs, editors, signing), no submodule is entered, no transport runs a
/// program.
const HARDENED: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("diff.external", ""),
    ("submodule.recurse", "false"),
    ("protocol.ext.allow", "never"),
    ("protocol.fd.allow", "never"),
    ("gpg.program", "false"),
    ("commit.gpgSign", "false"),
];

/// A task's checkout and the worker's git directory for it.
pub(crate) struct Checkout {
    /// The clone the run works in.
    pub work_tree: PathBuf,
    /// The worker's bare clone of the task's repository, beside it.
    git_dir: PathBuf,
}

impl Checkout {
    /// The checkout named `id` (a task's delivery) under `work_dir` (nothing is made yet).
    pub(crate) fn new(work_dir: &Path, id: &str) -> Checkout {
        Checkout {
            work_tree: work_dir.join(id),
            git_dir: work_dir.join(format!(".{id}.git")),
        }
    }

    /// Removes both directories (what an earlier delivery left, or this one's at its end).
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.work_tree);
        let _ = std::fs::remove_dir_all(&self.git_dir);
    }

    /// Clones `repo` and checks `git_ref` (or the default branch) out, detached; the commit.
    pub(crate) async fn clone(&self, repo: &str, git_ref: Option<&str>) -> Result<String, String> {
        let parent = self.work_tree.parent().unwrap_or(&self.work_tree);
        let git_dir = self.git_dir.to_string_lossy().into_owned();
        let work_tree = self.work_tree.to_string_lossy().into_owned();
        git(
            parent,
            &["clone", "--quiet", "--bare", "--", repo, &git_dir],
            &[],
            NETWORK_GIT_TIMEOUT,
        )
        .await
        .map_err(|why| format!("cannot clone {repo}: {why}"))?;
        let wanted = git_ref.unwrap_or("HEAD");
        let commit = git(
            &self.git_dir,
            &[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{wanted}^{{commit}}"),
            ],
            &[],
            LOCAL_GIT_TIMEOUT,
        )
        .await
        .map_err(|_| format!("{repo} has no commit, branch or tag {wanted:?}"))?;
        let commit = String::from_utf8_lossy(&commit).trim().to_string();
        let checkout = async {
            git(
                parent,
                &[
                    "clone",
                    "--quiet",
                    "--no-checkout",
                    "--",
                    &git_dir,
                    &work_tree,
                ],
                &[],
                LOCAL_GIT_TIMEOUT,
            )
            .await?;
            // The run sees the task's repository as its origin, as in a clone of it.
            git(
                &self.work_tree,
                &["remote", "set-url", "origin", repo],
                &[],
                LOCAL_GIT_TIMEOUT,
            )
            .await?;
            git(
                &self.work_tree,
                &["checkout", "--quiet", "--detach", &commit],
                &[],
                LOCAL_GIT_TIMEOUT,
            )
            .await
        };
        checkout
            .await
            .map_err(|why| format!("cannot check {wanted} out of {repo}: {why}"))?;
        Ok(commit)
    }

    /// Everything the run changed against `commit`, untracked files included, as a
    /// binary-safe patch (`git apply` takes it). Made with a temporary index in the worker's
    /// git directory: the checkout's own `.git` is neither read nor changed.
    pub(crate) async fn patch(&self, commit: &str) -> Result<Vec<u8>, String> {
        let index = self.temp_index();
        let env = [("GIT_INDEX_FILE", index.as_str())];
        let result = async {
            self.worker_git(&["read-tree", commit], &env).await?;
            self.worker_git(&["add", "-A", "--", "."], &env).await?;
            self.worker_git(
                &[
                    "diff",
                    "--cached",
                    "--binary",
                    "--no-ext-diff",
                    "--no-textconv",
                    commit,
                ],
                &env,
            )
            .await
        }
        .await
        .map_err(|why| format!("cannot make the run's patch: {why}"));
        let _ = std::fs::remove_file(&index);
        result
    }

    /// Commits what the run changed on top of `commit` and pushes it to `branch` of the
    /// task's repository. Never forced: a branch that exists and is not an ancestor is
    /// refused by the remote, and the task says so.
    pub(crate) async fn push(&self, commit: &str, branch: &str, id: &str) -> Result<(), String> {
        let index = self.temp_index();
        // The result commit is dated like the commit it starts from, so it is the same
        // commit whichever delivery of the task makes it: a task redelivered after its push
        // pushes nothing new instead of being refused as a non-fast-forward. (`log`, not
        // `show`: `show` reads `.gitmodules`, and fails on one with a command in it.)
        let date = self
            .worker_git(&["log", "-1", "--format=%ct", commit], &[])
            .await
            .map(|out| format!("@{} +0000", String::from_utf8_lossy(&out).trim()))?;
        let env = [
            ("GIT_AUTHOR_DATE", date.as_str()),
            ("GIT_COMMITTER_DATE", date.as_str()),
            ("GIT_INDEX_FILE", index.as_str()),
            ("GIT_AUTHOR_NAME", "Braincode fleet"),
            ("GIT_AUTHOR_EMAIL", "fleet@braincode.invalid"),
            ("GIT_COMMITTER_NAME", "Braincode fleet"),
            ("GIT_COMMITTER_EMAIL", "fleet@braincode.invalid"),
        ];
        let result = async {
            self.worker_git(&["read-tree", commit], &env).await?;
            self.worker_git(&["add", "-A", "--", "."], &env).await?;
            let tree = self.worker_git(&["write-tree"], &env).await?;
            let tree = String::from_utf8_lossy(&tree).trim().to_string();
            let message = format!("braincode fleet: task {id}");
            let new = self
                .worker_git(&["commit-tree", &tree, "-p", commit, "-m", &message], &env)
                .await?;
            let new = String::from_utf8_lossy(&new).trim().to_string();
            let refspec = format!("{new}:refs/heads/{branch}");
            // `origin` of the worker's own directory: the task's repository, as cloned.
            git(
                &self.work_tree,
                &[
                    &format!("--git-dir={}", self.git_dir.display()),
                    "push",
                    "--quiet",
                    "origin",
                    &refspec,
                ],
                &env,
                NETWORK_GIT_TIMEOUT,
            )
            .await?;
            Ok(())
        }
        .await
        .map_err(|why: String| format!("cannot push the result to branch {branch}: {why}"));
        let _ = std::fs::remove_file(&index);
        result
    }

    /// A local git call on the checkout's files through the worker's git directory.
    async fn worker_git(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Vec<u8>, String> {
        let git_dir = format!("--git-dir={}", self.git_dir.display());
        let work_tree = format!("--work-tree={}", self.work_tree.display());
        let mut all = vec![git_dir.as_str(), work_tree.as_str()];
        all.extend_from_slice(args);
        git(&self.work_tree, &all, env, LOCAL_GIT_TIMEOUT).await
    }

    /// A temporary index file in the worker's git directory.
    fn temp_index(&self) -> String {
        self.git_dir
            .join(format!("index-{}", uuid::Uuid::new_v4().simple()))
            .to_string_lossy()
            .into_owned()
    }
}

/// `git args…` in `dir`, hardened, with `env`; its output, or why it failed.
async fn git(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut command = tokio::process::Command::new("git");
    for (key, value) in HARDENED {
        command.arg("-c").arg(format!("{key}={value}"));
    }
    command.args(args).current_dir(dir);
    for (name, value) in env {
        command.env(name, value);
    }
    command
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let what = args
        .iter()
        .find(|arg| !arg.starts_with("--"))
        .copied()
        .unwrap_or("git");
    let output = tokio::time::timeout(timeout, command.output())
        .await
        .map_err(|_| format!("git {what} took longer than {timeout:?}"))?
        .map_err(|err| format!("git {what}: {err}"))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(format!(
            "git {what}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}
