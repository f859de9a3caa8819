//! `braincode fleet worker`: pulls tasks from the shared queue, at most `concurrency` at a
//! time, runs each one, records its one result and only then acknowledges it.
//!
//! While it holds a task the worker sends a progress ack every [`PROGRESS_EVERY`], so a
//! worker that dies (or loses its connection) has its task delivered to another one within
//! [`crate::nats::ACK_WAIT`]; that worker resumes the run from the journal stream, and the
//! run of the delivery it superseded, if that one was alive after all, stops. A NATS error
//! (a cluster electing leaders) is waited out for [`FLEET_PATIENCE`] before a task is given
//! back, since each give-back is a delivery. A task delivered [`crate::nats::MAX_DELIVER`] times without a
//! result is given up ([`crate::dead_letter`]). A message that is not a task gets a `failed`
//! result of its own; the worker goes on.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::AckKind;
use async_nats::jetstream::Message;
use futures::StreamExt;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::budget::{self, Amount, Grant};
use crate::dead_letter::dead_letters;
use crate::nats::{Fleet, PROGRESS_EVERY};
use crate::run::{Control, Delivery, Outcome, RunPlace, run_task};
use crate::task::{TaskMessage, TaskState, TaskStatus, valid_task_id};

/// What a worker prints about its work, a line at a time.
pub type Log = Arc<dyn Fn(String) + Send + Sync>;

/// A worker's settings.
#[derive(Clone)]
pub struct WorkerConfig {
    /// Its name (in task states and logs).
    pub name: String,
    /// Runs at once.
    pub concurrency: usize,
    /// Where and with what it runs tasks.
    pub place: RunPlace,
    /// Where its lines go.
    pub log: Log,
}

/// Serves the queue until `shutdown` completes; then takes no new task and waits for the
/// running ones to finish.
pub async fn serve(
    fleet: Fleet,
    config: WorkerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let consumer = fleet.consumer().await?;
    let dead_letters = tokio::spawn(dead_letters(fleet.clone(), config.clone()));
    let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let mut running = JoinSet::new();
    (config.log)(format!(
        "worker {} serving {} ({} at a time)",
        config.name,
        fleet.url,
        config.concurrency.max(1)
    ));
    tokio::pin!(shutdown);
    loop {
        while running.try_join_next().is_some() {}
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        // One task per free slot: a message is taken only when it can start at once.
        let fetched = tokio::select! {
            fetched = consumer.fetch().max_messages(1).expires(Duration::from_secs(2)).messages() => fetched,
            () = &mut shutdown => break,
        };
        let mut messages = match fetched {
            Ok(messages) => messages,
            Err(err) => {
                (config.log)(format!("fetching a task from {}: {err}", fleet.url));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let message = tokio::select! {
            message = messages.next() => message,
            () = &mut shutdown => break,
        };
        match message {
            Some(Ok(message)) => {
                let (fleet, config) = (fleet.clone(), config.clone());
                running.spawn(async move {
                    Box::pin(handle(&fleet, &config, message)).await;
                    drop(permit);
                });
            }
            Some(Err(err)) => {
                (config.log)(format!("receiving a task from {}: {err}", fleet.url));
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            None => {}
        }
    }
    (config.log)(format!(
        "worker {} stopping: no new task; waiting for {} running",
        config.name,
        running.len()
    ));
    while running.join_next().await.is_some() {}
    dead_letters.abort();
    Ok(())
}

/// How long a worker retries a NATS operation that a task's start or result needs before it
/// gives the task back to the queue. A cluster that lost a server refuses reads and writes
/// while it elects new leaders (the task bucket's writes for up to ~10 s on a loaded
/// machine); each give-back is one of the task's [`crate::nats::MAX_DELIVER`] deliveries, so a worker
/// that gave back at the first error burns them all within one election and the task fails.
/// It waits the election out instead, holding the delivery with its progress acks.
pub const FLEET_PATIENCE: Duration = Duration::from_secs(60);
/// How long a task given back stays out of the queue.
const GIVE_BACK_DELAY: Duration = Duration::from_secs(5);
/// Progress ticks between two heartbeats in a running task's state.
const HEARTBEAT_TICKS: u64 = 5;

/// Retries `attempt`, a NATS operation, until it succeeds or [`FLEET_PATIENCE`] is over (its
/// last error then).
pub(crate) async fn patiently<T, F, Fut>(mut attempt: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + FLEET_PATIENCE;
    let mut pause = Duration::from_millis(250);
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(why) if tokio::time::Instant::now() + pause >= deadline => return Err(why),
            Err(_) => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// A spawned task that ends with the scope that holds it (every return of [`handle`]).
struct Aborting(tokio::task::JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The message is done with: its task's result is recorded.
async fn ack(message: &Message) {
    let _ = message.double_ack().await;
}

/// The message goes back to the queue, for this worker or another (one delivery spent).
async fn give_back(message: &Message, config: &WorkerConfig, what: &str, why: &str) {
    (config.log)(format!("{what}: {why}; it will be delivered again"));
    let _ = message.ack_with(AckKind::Nak(Some(GIVE_BACK_DELAY))).await;
}

/// One delivered message, to its end: a result recorded, then the ack.
async fn handle(fleet: &Fleet, config: &WorkerConfig, message: Message) {
    let log = &config.log;
    let (sequence, delivered) = match message.info() {
        Ok(info) => (info.stream_sequence, info.delivered.max(1) as u64),
        Err(_) => (0, 1),
    };
    // The delivery is this worker's for as long as it works on it, waits on NATS included.
    let message = Arc::new(message);
    let _progress = Aborting(tokio::spawn({
        let message = message.clone();
        async move {
            loop {
                tokio::time::sleep(PROGRESS_EVERY).await;
                let _ = message.ack_with(AckKind::Progress).await;
            }
        }
    }));
    let parsed = serde_json::from_slice::<TaskMessage>(&message.payload)
        .map_err(|err| format!("message {sequence} on the task queue is not a task: {err}"))
        .and_then(|task| {
            if valid_task_id(&task.id) {
                Ok(task)
            } else {
                Err(format!(
                    "message {sequence} on the task queue has an invalid id {:?} (letters, digits, - and _)",
                    task.id
                ))
            }
        });
    let task = match parsed {
        Ok(task) => task,
        Err(why) => {
            log(format!("{why}; recorded as task invalid-{sequence}"));
            let mut state = TaskState::failed(&format!("invalid-{sequence}"), why);
            state.worker = Some(config.name.clone());
            match patiently(|| fleet.create_state(&state)).await {
                Ok(_) => ack(&message).await,
                Err(not) => give_back(&message, config, &state.id, &not).await,
            }
            return;
        }
    };
    let id = task.id.as_str();
    let what = format!("task {id}");
    let known = match patiently(|| fleet.state(id)).await {
        Ok(known) => known,
        Err(why) => return give_back(&message, config, &what, &why).await,
    };
    let state = match known {
        Some((state, _)) => state,
        None => {
            // Published without `fleet submit`: it gets its state now.
            let state = TaskState::queued(id, task.task.clone());
            if let Err(why) = patiently(|| fleet.create_state(&state)).await {
                return give_back(&message, config, &what, &why).await;
            }
            state
        }
    };
    if state.status.is_final() {
        // Its result is recorded: this is a delivery whose ack was lost.
        return ack(&message).await;
    }
    if state.cancel_requested {
        let cancelled = patiently(|| {
            fleet.update(id, |s| {
                s.status = TaskStatus::Cancelled;
                s.error = Some("cancelled before it started".to_string());
            })
        })
        .await;
        return match cancelled {
            Ok(_) => ack(&message).await,
            Err(why) => give_back(&message, config, &what, &why).await,
        };
    }
    if let Err(why) = task.task.check() {
        return match finish_failed(fleet, id, &config.name, why).await {
            Ok(()) => ack(&message).await,
            Err(not) => give_back(&message, config, &what, &not).await,
        };
    }
    let resume = state.session.is_some() && state.deliveries > 0;
    let session = state.session.clone().unwrap_or_else(new_session_id);
    let attempt = uuid::Uuid::new_v4().simple().to_string();
    let started = {
        let (session, attempt) = (&session, &attempt);
        patiently(move || {
            fleet.update(id, move |s| {
                s.status = TaskStatus::Running;
                s.worker = Some(config.name.clone());
                s.deliveries = delivered;
                s.attempt = Some(attempt.clone());
                s.session = Some(session.clone());
                s.sequence = Some(sequence);
                s.heartbeat_at = Some(crate::task::now());
            })
        })
        .await
    };
    match started {
        Ok(Some(_)) => {}
        // It ended meanwhile (cancelled, or another delivery's result): nothing to run.
        Ok(None) => return ack(&message).await,
        // Not recorded as started: the queue keeps it, for this worker or another.
        Err(why) => return give_back(&message, config, &what, &why).await,
    }
    log(format!(
        "task {id}: {} session {session} (delivery {delivered})",
        if resume { "resuming" } else { "running" }
    ));
    let (control_tx, control) = watch::channel(Control::Run);
    let _watch = Aborting(tokio::spawn(watch_state(
        fleet.clone(),
        id.to_string(),
        attempt.clone(),
        control_tx,
    )));
    // Tokens are reserved under the shared budgets before the run starts; the grant is the
    // run's own budget, so workers together cannot spend more than the budgets hold.
    let budget_keys = budget::keys(task.task.submitter.as_deref());
    let wanted = Amount {
        tokens: task.task.max_tokens,
        micro_usd: task.task.max_cost.map(|usd| (usd * 1e6).round() as u64),
    };
    let grant = loop {
        match patiently(|| budget::reserve(fleet, &budget_keys, id, wanted)).await {
            Ok(Grant::Wait) => {
                let now = *control.borrow();
                match now {
                    Control::Run => tokio::time::sleep(Duration::from_millis(500)).await,
                    Control::Cancel => break Grant::Wait,
                    Control::Abandon => {
                        return log(format!(
                            "task {id}: delivered again meanwhile; the newer delivery goes on"
                        ));
                    }
                }
            }
            Ok(grant) => break grant,
            Err(why) => return give_back(&message, config, &what, &why).await,
        }
    };
    let mut spec = task.task.clone();
    match grant {
        Grant::Spent(why) => {
            log(format!("task {id}: {why}"));
            return match finish_failed(fleet, id, &config.name, why).await {
                Ok(()) => ack(&message).await,
                Err(not) => give_back(&message, config, &what, &not).await,
            };
        }
        Grant::Granted(amount) => {
            spec.max_tokens = amount.tokens;
            spec.max_cost = amount.micro_usd.map(|micro| micro as f64 / 1e6);
        }
        // Only when the task was cancelled while it waited for budget.
        Grant::Wait => {
            let cancelled = patiently(|| {
                fleet.update(id, |s| {
                    s.status = TaskStatus::Cancelled;
                    s.error = Some("cancelled while it waited for budget".to_string());
                })
            })
            .await;
            return match cancelled {
                Ok(_) => ack(&message).await,
                Err(why) => give_back(&message, config, &what, &why).await,
            };
        }
    }
    let delivery = Delivery {
        id,
        session: &session,
        attempt: &attempt,
        resume,
    };
    let outcome = run_task(fleet, &config.place, &spec, delivery, &control).await;
    if let Some(why) = &outcome.abandoned {
        // The newer delivery owns the message now: no ack, no result from this one.
        return log(format!("task {id}: {why}"));
    }
    if let Some(why) = &outcome.give_back {
        // The fleet failed the run, not the task: another delivery resumes it (its budget
        // reservation stays with it).
        return give_back(&message, config, &what, why).await;
    }
    let now = *control.borrow();
    if let Err(why) = record(fleet, config, id, &budget_keys, &outcome, now).await {
        return give_back(&message, config, &what, &why).await;
    }
    if let Err(err) = message.double_ack().await {
        log(format!(
            "task {id}: its ack was not confirmed ({err}); a redelivery finds its result"
        ));
    }
}

/// Watches a running task's state every [`PROGRESS_EVERY`] (and writes its heartbeat now and
/// then, for the sweep of abandoned tasks): a cancellation is passed on; so is a newer
/// delivery of the same task, started by a worker that took this one for lost.
async fn watch_state(fleet: Fleet, id: String, attempt: String, control: watch::Sender<Control>) {
    for tick in 1u64.. {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let state = if tick % HEARTBEAT_TICKS == 0 {
            fleet
                .update(&id, |s| {
                    if s.attempt.as_deref().is_none_or(|a| a == attempt) {
                        s.heartbeat_at = Some(crate::task::now());
                    }
                })
                .await
                .ok()
                .flatten()
        } else {
            fleet
                .state(&id)
                .await
                .ok()
                .flatten()
                .map(|(state, _)| state)
        };
        let Some(state) = state else { continue };
        // (A state without one was rewritten by an older worker or CLI: not a newer run.)
        if state.attempt.as_deref().is_some_and(|a| a != attempt) {
            let _ = control.send(Control::Abandon);
            return;
        }
        if state.cancel_requested {
            control.send_if_modified(|now| {
                let change = *now == Control::Run;
                if change {
                    *now = Control::Cancel;
                }
                change
            });
        }
    }
}

/// Records a run's result: its report and patch in the result store, then the task's final
/// state, then the budgets it used. `Err`: not recorded (the task goes back to the queue).
async fn record(
    fleet: &Fleet,
    config: &WorkerConfig,
    id: &str,
    keys: &[String],
    outcome: &Outcome,
    control: Control,
) -> Result<(), String> {
    if let Some(report) = &outcome.report
        && let Ok(json) = serde_json::to_vec_pretty(report)
    {
        let name = format!("{id}/report.json");
        patiently(|| fleet.put_object(&name, &json)).await?;
    }
    if !outcome.patch.is_empty() {
        let name = format!("{id}/patch.diff");
        patiently(|| fleet.put_object(&name, &outcome.patch)).await?;
    }
    let cancelled = control == Control::Cancel;
    let recorded = patiently(move || {
        fleet.update(id, move |s| {
            s.session = Some(outcome.session.clone());
            s.commit.clone_from(&outcome.commit);
            s.patch_bytes = Some(outcome.patch.len() as u64);
            s.pushed_branch.clone_from(&outcome.pushed_branch);
            if let Some(report) = &outcome.report {
                s.run_status = serde_json::to_value(report.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string));
                s.answer = Some(report.model_summary.clone());
                s.tokens = report.metrics.as_ref().map(|m| m.tokens.total.total);
                s.cost_micro_usd = report.metrics.as_ref().map(|m| m.tokens.cost_micro_usd);
                s.error.clone_from(&report.error);
            }
            s.status = if cancelled {
                TaskStatus::Cancelled
            } else if let Some(why) = &outcome.error {
                s.error = Some(why.clone());
                TaskStatus::Failed
            } else {
                TaskStatus::Done
            };
        })
    })
    .await?;
    // Counted once: the reservation goes with the first release, and a later one (a worker
    // that finished the same task) finds none and counts nothing.
    let metrics = outcome.report.as_ref().and_then(|r| r.metrics.as_ref());
    let used = Amount {
        tokens: metrics.map(|m| m.tokens.total.total),
        micro_usd: metrics.map(|m| m.tokens.cost_micro_usd),
    };
    if let Err(why) = patiently(|| budget::release(fleet, keys, id, used)).await {
        (config.log)(format!("task {id}: {why}"));
    }
    match recorded {
        Some(state) => (config.log)(format!(
            "task {id}: {}{}",
            state.status.as_str(),
            state.error.map(|e| format!(" ({e})")).unwrap_or_default()
        )),
        None => (config.log)(format!(
            "task {id}: another worker recorded its result first"
        )),
    }
    Ok(())
}

/// A task that cannot run: its `failed` result (`Err`: not recorded).
pub(crate) async fn finish_failed(
    fleet: &Fleet,
    id: &str,
    worker: &str,
    why: String,
) -> Result<(), String> {
    patiently(|| {
        fleet.update(id, |s| {
            s.status = TaskStatus::Failed;
            s.worker = Some(worker.to_string());
            s.error = Some(why.clone());
        })
    })
    .await
    .map(|_| ())
}

/// A session id in Braincode's form (`YYYYMMDD-HHMMSS-xxxxxx`).
fn new_session_id() -> String {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{stamp}-{}", &random[..6])
}
