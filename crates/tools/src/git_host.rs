//! Braincode's own git queries, served by one confined shell per project.
//!
//! Starting a sandbox costs a few milliseconds, more than the query it wraps, and a run asks
//! git a dozen questions (the environment line, the patch summary, the review's diff, the
//! model's `git_diff`). So each project gets one `sh` in its read-only helper sandbox
//! ([`crate::git_safe`]), started on first use and kept for the life of the process; each
//! query is one line on its standard input:
//!
//! ```text
//! off; git --no-pager status … </dev/null; printf '\n%s %s\n' <marker>-0 "$?"; git …
//! ```
//!
//! `off` re-reads the repository's configuration and switches its programs off before every
//! query (a command may have planted a filter since the last one). The answer is everything
//! the shell prints before `\n<marker>-<n> <exit code>\n`; the marker is 128 random bits
//! drawn for each line, so no repository content can forge the end of an answer. Several
//! queries may share a line (and one reading of the configuration): [`query_many`].
//!
//! One thread owns every shell: it spawned them (the sandbox's death signal is tied to the
//! spawning thread, and this one lives as long as the process), it writes each query and
//! reads the answer with a deadline. A shell that times out, dies or says something that is
//! not an answer is killed and forgotten; the next query starts a new one.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::git_safe::{PRELUDE, command_line, confined_sh, helper};

/// The largest answer kept (a bigger one is an error, and the shell is started anew).
pub const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;
/// The most shells kept at once (a process that looks at many projects, such as the test
/// suite or the control panel, stops the least recently used one).
pub const MAX_SHELLS: usize = 4;

/// What git answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitAnswer {
    /// Whether git exited with 0.
    pub success: bool,
    /// Its standard output (standard error is dropped).
    pub stdout: Vec<u8>,
}

/// Asks git `args` (a subcommand and its arguments) about `root`, confined, every
/// repository-controlled program switched off; `Err` says why there is no answer (no OS
/// sandbox, a timeout, a shell that died).
pub async fn query(root: &Path, args: &[&str], timeout: Duration) -> Result<GitAnswer, String> {
    let mut answers = query_many(root, &[args], timeout).await?;
    answers
        .pop()
        .ok_or_else(|| "git's sandbox gave no answer".to_string())
}

/// Asks several questions in one go (the repository's configuration is read once for all
/// of them): one answer per question, in order.
pub async fn query_many(
    root: &Path,
    commands: &[&[&str]],
    timeout: Duration,
) -> Result<Vec<GitAnswer>, String> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = Job {
        root: root.to_path_buf(),
        commands: commands
            .iter()
            .map(|args| args.iter().map(|arg| (*arg).to_string()).collect())
            .collect(),
        timeout,
        reply,
    };
    host()
        .send(job)
        .map_err(|_| "the git host thread is gone".to_string())?;
    answer
        .await
        .map_err(|_| "the git host thread dropped the query".to_string())?
}

struct Job {
    root: PathBuf,
    commands: Vec<Vec<String>>,
    timeout: Duration,
    reply: tokio::sync::oneshot::Sender<Result<Vec<GitAnswer>, String>>,
}

/// One confined shell.
struct Shell {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    last_used: Instant,
}

impl Shell {
    fn start(root: &Path) -> Result<Shell, String> {
        let sandbox = helper(root)?;
        let script = format!("{PRELUDE}while IFS= read -r line; do eval \"$line\"; done\n");
        let mut child = confined_sh(sandbox.as_ref(), root, script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| format!("could not start git's sandbox: {error}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("git's sandbox has no pipes".to_string());
        };
        Ok(Shell {
            child,
            stdin,
            stdout,
            last_used: Instant::now(),
        })
    }

    /// Sends one line of queries and reads their answers until `deadline`.
    fn ask(
        &mut self,
        commands: &[Vec<String>],
        deadline: Instant,
    ) -> Result<Vec<GitAnswer>, String> {
        let marker = random_marker();
        let mut line = String::from("off");
        for (index, args) in commands.iter().enumerate() {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            line.push_str(&format!(
                "; {} </dev/null 2>/dev/null; printf '\\n%s %s\\n' '{marker}-{index}' \"$?\"",
                command_line(&args)
            ));
        }
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|error| format!("git's sandbox stopped listening: {error}"))?;
        let mut answers = Vec::with_capacity(commands.len());
        let mut buffer = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut end = format!("\n{marker}-0 ");
        // Where the search for the end marker resumes: bytes before it were searched already
        // (a 60 MB diff is not searched again at every read).
        let mut searched = 0;
        loop {
            // Every answer complete in the buffer is taken out of it.
            let mut partial = false;
            while let Some(at) = find(&buffer[searched..], end.as_bytes()).map(|at| at + searched) {
                let rest = &buffer[at + end.len()..];
                let Some(newline) = rest.iter().position(|b| *b == b'\n') else {
                    // The marker came, its exit code not yet: look here again.
                    searched = at;
                    partial = true;
                    break;
                };
                searched = 0;
                let success = String::from_utf8_lossy(&rest[..newline]).trim() == "0";
                let consumed = at + end.len() + newline + 1;
                let stdout = buffer[..at].to_vec();
                buffer.drain(..consumed);
                answers.push(GitAnswer { success, stdout });
                if answers.len() == commands.len() {
                    if !buffer.is_empty() {
                        return Err("git's sandbox printed past the end of an answer".into());
                    }
                    return Ok(answers);
                }
                end = format!("\n{marker}-{} ", answers.len());
            }
            if !partial {
                // No marker in what was searched: one can only start in the last bytes.
                searched = searched.max(buffer.len().saturating_sub(end.len()));
            }
            if buffer.len() > MAX_ANSWER_BYTES {
                return Err(format!(
                    "git's answer is larger than {MAX_ANSWER_BYTES} bytes"
                ));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err("git did not answer in time".into());
            }
            let timeout = rustix::event::Timespec {
                tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let mut fds = [rustix::event::PollFd::new(
                &self.stdout,
                rustix::event::PollFlags::IN,
            )];
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(error) => return Err(format!("waiting for git failed: {error}")),
            }
            let read = self
                .stdout
                .read(&mut chunk)
                .map_err(|error| format!("reading git's answer failed: {error}"))?;
            if read == 0 {
                return Err("git's sandbox ended before answering".into());
            }
            buffer.extend_from_slice(&chunk[..read]);
        }
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// 128 random bits as hex (from the standard library's randomly keyed hashers).
fn random_marker() -> String {
    let mut out = String::with_capacity(32);
    for _ in 0..2 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", hasher.finish()));
    }
    out
}

/// The thread that owns the shells, started on first use.
fn host() -> &'static mpsc::Sender<Job> {
    static HOST: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    HOST.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("braincode-git".into())
            .spawn(move || serve(&receiver));
        if let Err(error) = spawned {
            // Queries then fail with "the git host thread is gone".
            tracing::warn!("could not start the git host thread: {error}");
        }
        sender
    })
}

fn serve(jobs: &mpsc::Receiver<Job>) {
    let mut shells: HashMap<PathBuf, Shell> = HashMap::new();
    while let Ok(job) = jobs.recv() {
        let deadline = Instant::now() + job.timeout;
        let answer = answer(&mut shells, &job, deadline);
        let _ = job.reply.send(answer);
    }
    for (_, shell) in shells.drain() {
        shell.stop();
    }
}

fn answer(
    shells: &mut HashMap<PathBuf, Shell>,
    job: &Job,
    deadline: Instant,
) -> Result<Vec<GitAnswer>, String> {
    // A shell kept from an earlier query may have died since (its project removed, killed):
    // it is started anew once.
    for attempt in 0..2 {
        let fresh = !shells.contains_key(&job.root);
        if fresh {
            while shells.len() >= MAX_SHELLS {
                let Some(oldest) = shells
                    .iter()
                    .min_by_key(|(_, shell)| shell.last_used)
                    .map(|(root, _)| root.clone())
                else {
                    break;
                };
                if let Some(shell) = shells.remove(&oldest) {
                    shell.stop();
                }
            }
            shells.insert(job.root.clone(), Shell::start(&job.root)?);
        }
        let Some(shell) = shells.get_mut(&job.root) else {
            return Err("git's sandbox could not be kept".into());
        };
        shell.last_used = Instant::now();
        match shell.ask(&job.commands, deadline) {
            Ok(answer) => return Ok(answer),
            Err(error) => {
                if let Some(shell) = shells.remove(&job.root) {
                    shell.stop();
                }
                if fresh || attempt == 1 || Instant::now() >= deadline {
                    return Err(error);
                }
            }
        }
    }
    Err("git's sandbox failed twice".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(root: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .current_dir(root)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    /// Answers come back byte for byte (NUL bytes, quotes and newlines in names), one after
    /// another from the same shell; a failed query says so; a filter planted between two
    /// queries is switched off too.
    #[tokio::test]
    async fn queries_are_answered_in_turn_from_one_shell() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git(&root, &["init", "-q"]);
        let odd = "it's a\nname";
        std::fs::write(root.join(odd), "x\n").unwrap();
        let timeout = Duration::from_secs(20);
        let status = query(&root, &["status", "--porcelain", "-z"], timeout)
            .await
            .unwrap();
        assert!(status.success);
        assert_eq!(status.stdout, format!("?? {odd}\0").as_bytes());
        let hash = query(&root, &["hash-object", "--", odd], timeout)
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&hash.stdout).trim(),
            "587be6b4c3f93f93c489c0111bba5596147a26cb"
        );
        let missing = query(&root, &["show", "HEAD:nothing"], timeout)
            .await
            .unwrap();
        assert!(!missing.success);
        // Planted after the shell started: `off` reads the configuration at every query.
        std::fs::write(root.join(".gitattributes"), "*.txt diff=evil\n").unwrap();
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        git(&root, &["add", "."]);
        git(
            &root,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@e",
                "commit",
                "-qm",
                "c",
            ],
        );
        git(
            &root,
            &["config", "diff.evil.textconv", "echo TEXTCONV_RAN; cat"],
        );
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        let diff = query(&root, &["diff"], timeout).await.unwrap();
        let text = String::from_utf8_lossy(&diff.stdout);
        assert!(
            text.contains("+two") && !text.contains("TEXTCONV_RAN"),
            "{text}"
        );
    }

    /// An answer of many reads (3 MB) comes back whole, and so does the next one.
    #[tokio::test]
    async fn a_big_answer_comes_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git(&root, &["init", "-q"]);
        let body = "a line of a big file that git will print back\n".repeat(65_000);
        std::fs::write(root.join("big.txt"), &body).unwrap();
        git(&root, &["add", "big.txt"]);
        let timeout = Duration::from_secs(30);
        let commands: [&[&str]; 2] = [&["show", ":big.txt"], &["show", ":big.txt"]];
        let answers = query_many(&root, &commands, timeout).await.unwrap();
        assert_eq!(answers.len(), 2);
        for answer in answers {
            assert!(answer.success);
            assert_eq!(answer.stdout.len(), body.len());
            assert!(answer.stdout == body.as_bytes());
        }
    }

    /// A query that hangs times out, and the next query gets a new shell.
    #[tokio::test]
    async fn a_hung_query_times_out_and_the_next_one_is_answered() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git(&root, &["init", "-q"]);
        // An alias the wrapper leaves alone: it sleeps, inside the sandbox.
        git(&root, &["config", "alias.nap", "!sleep 30"]);
        let started = Instant::now();
        let hung = query(&root, &["nap"], Duration::from_millis(500)).await;
        assert!(hung.unwrap_err().contains("in time"));
        assert!(started.elapsed() < Duration::from_secs(20));
        let status = query(&root, &["status", "--porcelain"], Duration::from_secs(20))
            .await
            .unwrap();
        assert!(status.success);
    }
}
