//! One task, run by a worker: a fresh clone of its repository at its commit, an ordinary
//! `braincode run` in it (the worker's own settings, keys and trust; the task's never), the
//! run's journal published line by line as it is written, then the patch and the report in
//! the result store and, when asked, the result pushed to a branch.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use braincode_protocol::FinalReport;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::git::Checkout;
use crate::journal::{self, Publisher};
use crate::nats::Fleet;
use crate::task::TaskSpec;

/// How often the journal is read for new lines while the run goes on (a look costs an open
/// and a read of what is new).
const TAIL_EVERY: Duration = Duration::from_millis(25);
/// The end of the run's standard error kept for an error message.
const STDERR_TAIL: usize = 2_000;

/// What the worker gives a run.
#[derive(Debug, Clone)]
pub struct RunPlace {
    /// The `braincode` program.
    pub program: PathBuf,
    /// The worker's Braincode home (its sessions directory receives the journal).
    pub home: PathBuf,
    /// Where task clones are made.
    pub work_dir: PathBuf,
}

/// How a task's run ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The run's report (none when it did not get as far as one).
    pub report: Option<FinalReport>,
    /// The run's session.
    pub session: String,
    /// The commit it started from.
    pub commit: Option<String>,
    /// The patch of what it changed (binary-safe `git diff`), empty when nothing.
    pub patch: Vec<u8>,
    /// The branch it was pushed to.
    pub pushed_branch: Option<String>,
    /// Why it could not run or finish (the task fails with this).
    pub error: Option<String>,
    /// Why the fleet itself failed it (NATS unreachable, a stream between leaders): the task
    /// is given back to the queue, to be resumed, not failed.
    pub give_back: Option<String>,
    /// Why it stopped for a newer delivery of the same task: nothing is recorded or acked.
    pub abandoned: Option<String>,
}

/// Why a run did not get to its result.
enum Failure {
    /// The task's own (a repository that cannot be cloned, a run that cannot resume): it
    /// fails with this.
    Task(String),
    /// The fleet's (NATS): the task goes back to the queue.
    Fleet(String),
    /// Another delivery of the task took over: this one ends without a result.
    Superseded(String),
}

/// What the worker asks of a running task, as its state changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Go on.
    Run,
    /// `fleet cancel` asked for it: the run is stopped and its journal ended.
    Cancel,
    /// The task was delivered again, to a worker that took this delivery for lost: the run
    /// is killed, and this delivery records nothing.
    Abandon,
}

/// Why a superseded delivery stopped.
const SUPERSEDED: &str = "delivered again meanwhile (its progress acks were lost, as when a cluster elects new leaders); this run stopped, and the newer delivery goes on";

impl From<String> for Failure {
    fn from(why: String) -> Failure {
        Failure::Task(why)
    }
}

impl From<journal::PumpError> for Failure {
    fn from(error: journal::PumpError) -> Failure {
        match error {
            journal::PumpError::Fleet(why) => Failure::Fleet(why),
            journal::PumpError::Superseded => Failure::Superseded(SUPERSEDED.to_string()),
        }
    }
}

/// Which delivery of a task a run is.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The task's id.
    pub id: &'a str,
    /// The run's session (its journal's subject).
    pub session: &'a str,
    /// This delivery's id (the task state's `attempt`): its journal lines carry it.
    pub attempt: &'a str,
    /// Resume the session when the journal stream has its records.
    pub resume: bool,
}

/// Runs `task` as its `delivery` says, resuming the session when asked and the journal
/// stream has its records (a journal that cannot be resumed here, such as one whose changed
/// files are missing from the store, fails the task with the reason).
pub async fn run_task(
    fleet: &Fleet,
    place: &RunPlace,
    task: &TaskSpec,
    delivery: Delivery<'_>,
    control: &tokio::sync::watch::Receiver<Control>,
) -> Outcome {
    let Delivery {
        id,
        session,
        attempt,
        ..
    } = delivery;
    let mut outcome = Outcome {
        session: session.to_string(),
        ..Outcome::default()
    };
    // One checkout per delivery: an earlier delivery of the same task may still be ending on
    // this worker (its ack lost while a server was down), and its cleanup must not remove the
    // clone this delivery works in, nor this one's remove that one's.
    let checkout = Checkout::new(&place.work_dir, &format!("{id}.{attempt}"));
    checkout.remove();
    if let Err(err) = std::fs::create_dir_all(&place.work_dir) {
        outcome.error = Some(format!("cannot make {}: {err}", place.work_dir.display()));
        return outcome;
    }
    let result = run_in(
        fleet,
        place,
        &checkout,
        task,
        delivery,
        control,
        &mut outcome,
    )
    .await;
    match result {
        Ok(()) => {}
        Err(Failure::Task(why)) => outcome.error = Some(why),
        Err(Failure::Fleet(why)) => outcome.give_back = Some(why),
        Err(Failure::Superseded(why)) => outcome.abandoned = Some(why),
    }
    checkout.remove();
    outcome
}

async fn run_in(
    fleet: &Fleet,
    place: &RunPlace,
    checkout: &Checkout,
    task: &TaskSpec,
    delivery: Delivery<'_>,
    control: &tokio::sync::watch::Receiver<Control>,
    outcome: &mut Outcome,
) -> Result<(), Failure> {
    let Delivery {
        id,
        session,
        attempt,
        resume,
    } = delivery;
    let commit = checkout.clone(&task.repo, task.git_ref.as_deref()).await?;
    let dir = checkout.work_tree.as_path();
    outcome.commit = Some(commit.clone());
    let sessions = place.home.join("sessions");
    let journal_path = sessions.join(format!("{session}.jsonl"));
    let mut resumed = false;
    let mut publisher = Publisher::new(fleet.clone(), session, attempt, &journal_path, dir);
    if resume {
        let (lines, last) = journal::read_with_last(fleet, session)
            .await
            .map_err(Failure::Fleet)?;
        publisher.follow(last);
        match journal::import(fleet, &lines, &journal_path, dir).await {
            Ok(Some(imported)) if imported.report.is_some() => {
                // The run had answered: its answer and its files are the result.
                outcome.report = imported.report;
                return Ok(finish(checkout, &commit, task, id, outcome).await?);
            }
            Ok(Some(imported)) => {
                publisher.skip_imported(imported.lines);
                resumed = true;
            }
            Ok(None) => {}
            Err(why) => {
                return Err(Failure::Task(format!(
                    "the interrupted run of session {session} cannot be resumed here ({why}); run the task again with `braincode fleet submit`"
                )));
            }
        }
    }
    if !resumed {
        let _ = std::fs::remove_file(&journal_path);
    }
    let mut command =
        tokio::process::Command::from(run_command(place, task, dir, session, resumed));
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|err| format!("cannot start {}: {err}", place.program.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        if !resumed {
            stdin
                .write_all(task.prompt.as_bytes())
                .await
                .map_err(|err| format!("cannot give the run its prompt: {err}"))?;
        }
        drop(stdin);
    }
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let read_out = tokio::spawn(async move {
        let mut bytes = Vec::new();
        if let Some(out) = stdout.as_mut() {
            let _ = out.read_to_end(&mut bytes).await;
        }
        bytes
    });
    let read_err = tokio::spawn(async move {
        let mut bytes = Vec::new();
        if let Some(err) = stderr.as_mut() {
            let _ = err.read_to_end(&mut bytes).await;
        }
        bytes
    });
    let mut control = control.clone();
    let mut listening = true;
    let mut cancelled = false;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            () = tokio::time::sleep(TAIL_EVERY) => {
                publisher.pump().await?;
            }
            changed = control.changed(), if listening => {
                if changed.is_err() {
                    listening = false;
                    continue;
                }
                let now = *control.borrow_and_update();
                match now {
                    Control::Run => {}
                    Control::Cancel if cancelled => {}
                    Control::Cancel => {
                        cancelled = true;
                        // The run's own SIGTERM path: commands stop, the journal ends.
                        let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
                        if let Some(pid) = pid.and_then(rustix::process::Pid::from_raw) {
                            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                        }
                    }
                    Control::Abandon => {
                        // Killed as a dying worker's run is, and nothing more of it is
                        // published: the journal goes on with the newer delivery's run.
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                        return Err(Failure::Superseded(SUPERSEDED.to_string()));
                    }
                }
            }
        }
    };
    let status = status.map_err(|err| format!("the run: {err}"))?;
    publisher.pump().await?;
    let stdout = read_out.await.unwrap_or_default();
    let stderr = read_err.await.unwrap_or_default();
    let report = serde_json::from_slice::<FinalReport>(&stdout).ok();
    if report.is_none() {
        let text = String::from_utf8_lossy(&stderr);
        let tail: String = text
            .chars()
            .rev()
            .take(STDERR_TAIL)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(Failure::Task(format!(
            "the run ended ({status}) without a report: {}",
            tail.trim()
        )));
    }
    outcome.report = report;
    Ok(finish(checkout, &commit, task, id, outcome).await?)
}

/// The run's patch, pushed to the task's branch when it names one.
async fn finish(
    checkout: &Checkout,
    commit: &str,
    task: &TaskSpec,
    id: &str,
    outcome: &mut Outcome,
) -> Result<(), String> {
    outcome.patch = checkout.patch(commit).await?;
    if let Some(branch) = &task.push_branch
        && !outcome.patch.is_empty()
    {
        checkout.push(commit, branch, id).await?;
        outcome.pushed_branch = Some(branch.clone());
    }
    Ok(())
}

/// The `braincode run` command of a task.
fn run_command(
    place: &RunPlace,
    task: &TaskSpec,
    dir: &Path,
    session: &str,
    resume: bool,
) -> std::process::Command {
    let mut command = std::process::Command::new(&place.program);
    command.arg("run").arg("--json");
    if resume {
        command.args(["--resume", session, task.permission.flag()]);
    } else {
        command.arg("--project").arg(dir);
        command.args(["--session-id", session, task.permission.flag()]);
        if let Some(brain) = &task.brain {
            command.args(["--brain", brain]);
        }
        if let Some(mode) = &task.mode {
            command.args(["--mode", mode]);
        }
        if let Some(tokens) = task.max_tokens {
            command.arg("--max-tokens").arg(tokens.to_string());
        }
        if let Some(usd) = task.max_cost {
            command.arg("--max-cost").arg(usd.to_string());
        }
        command.arg("-");
    }
    command.current_dir(dir);
    command.env("BRAINCODE_HOME", &place.home);
    // Killed with the worker (SIGKILL included): its task is then redelivered, not run twice.
    braincode_sandbox::die_with_parent(&mut command);
    command
}
