//! `braincode fleet worker`: pulls tasks from the shared queue, at most `concurrency` at a
//! time, runs each one, records its one result and only then acknowledges it.
//!
//! While a task runs the worker sends a progress ack every [`PROGRESS_EVERY`], so a worker
//! that dies (or loses its connection) has its task delivered to another one within
//! [`ACK_WAIT`]; that worker resumes the run from the journal stream. A task delivered
//! [`MAX_DELIVER`] times without a result is given up: the server's max-deliveries advisory
//! reaches every worker, one of them records a `failed` result (a task's result is written
//! compare-and-set, once) and removes the message. A message that is not a task gets a
//! `failed` result of its own; the worker goes on.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::AckKind;
use async_nats::jetstream::Message;
use futures::StreamExt;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::budget::{self, Amount, Grant};
use crate::nats::{ACK_WAIT, Fleet, MAX_DELIVER, PROGRESS_EVERY, TASK_STREAM, WORKERS};
use crate::run::{RunPlace, run_task};
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

/// One delivered message, to its end: a result recorded, then the ack.
async fn handle(fleet: &Fleet, config: &WorkerConfig, message: Message) {
    let log = &config.log;
    let (sequence, delivered) = match message.info() {
        Ok(info) => (info.stream_sequence, info.delivered.max(1) as u64),
        Err(_) => (0, 1),
    };
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
            let _ = fleet.create_state(&state).await;
            let _ = message.double_ack().await;
            return;
        }
    };
    let id = task.id.clone();
    let known = match fleet.state(&id).await {
        Ok(known) => known,
        Err(why) => {
            log(format!("task {id}: {why}; it will be delivered again"));
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await;
            return;
        }
    };
    let state = match known {
        Some((state, _)) => state,
        None => {
            // Published without `fleet submit`: it gets its state now.
            let state = TaskState::queued(&id, task.task.clone());
            let _ = fleet.create_state(&state).await;
            state
        }
    };
    if state.status.is_final() {
        // Its result is recorded: this is a delivery whose ack was lost.
        let _ = message.double_ack().await;
        return;
    }
    if state.cancel_requested {
        let cancelled = fleet
            .update(&id, |s| {
                s.status = TaskStatus::Cancelled;
                s.error = Some("cancelled before it started".to_string());
            })
            .await;
        let _ = match cancelled {
            Ok(_) => message.double_ack().await,
            Err(_) => {
                message
                    .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                    .await
            }
        };
        return;
    }
    if let Err(why) = task.task.check() {
        finish_failed(fleet, &id, &config.name, why).await;
        let _ = message.double_ack().await;
        return;
    }
    let resume = state.session.is_some() && state.deliveries > 0;
    let session = state.session.clone().unwrap_or_else(new_session_id);
    let started = fleet
        .update(&id, |s| {
            s.status = TaskStatus::Running;
            s.worker = Some(config.name.clone());
            s.deliveries = delivered;
            s.session = Some(session.clone());
            s.sequence = Some(sequence);
            s.heartbeat_at = Some(crate::task::now());
        })
        .await;
    match started {
        Ok(Some(_)) => {}
        // It ended meanwhile (cancelled, or another delivery's result): nothing to run.
        Ok(None) => {
            let _ = message.double_ack().await;
            return;
        }
        // Not recorded as started: the queue keeps it, for this worker or another.
        Err(why) => {
            log(format!("task {id}: {why}; it will be delivered again"));
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                .await;
            return;
        }
    }
    log(format!(
        "task {id}: {} session {session} (delivery {delivered})",
        if resume { "resuming" } else { "running" }
    ));
    let message = Arc::new(message);
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let keep_alive = tokio::spawn({
        let (message, fleet, id) = (message.clone(), fleet.clone(), id.clone());
        async move {
            for tick in 1u64.. {
                tokio::time::sleep(PROGRESS_EVERY).await;
                let _ = message.ack_with(AckKind::Progress).await;
                // The server knows the worker is alive from the progress acks; the task's
                // state says so too, now and then, for the sweep of abandoned tasks.
                let state = if tick % HEARTBEAT_TICKS == 0 {
                    fleet
                        .update(&id, |s| s.heartbeat_at = Some(crate::task::now()))
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
                if state.is_some_and(|state| state.cancel_requested) {
                    let _ = cancel_tx.send(true);
                }
            }
        }
    });
    // Tokens are reserved under the shared budgets before the run starts; the grant is the
    // run's own budget, so workers together cannot spend more than the budgets hold.
    let budget_keys = budget::keys(task.task.submitter.as_deref());
    let grant = loop {
        let wanted = Amount {
            tokens: task.task.max_tokens,
            micro_usd: task.task.max_cost.map(|usd| (usd * 1e6).round() as u64),
        };
        match budget::reserve(fleet, &budget_keys, &id, wanted).await {
            Ok(Grant::Wait) if !*cancel_rx.borrow() => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Ok(grant) => break grant,
            Err(why) => {
                keep_alive.abort();
                log(format!("task {id}: {why}; it will be delivered again"));
                let _ = message
                    .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
                    .await;
                return;
            }
        }
    };
    let mut spec = task.task.clone();
    match grant {
        Grant::Spent(why) => {
            keep_alive.abort();
            log(format!("task {id}: {why}"));
            finish_failed(fleet, &id, &config.name, why).await;
            let _ = message.double_ack().await;
            return;
        }
        Grant::Granted(amount) => {
            spec.max_tokens = amount.tokens;
            spec.max_cost = amount.micro_usd.map(|micro| micro as f64 / 1e6);
        }
        // Only when the task was cancelled while it waited for budget.
        Grant::Wait => {
            keep_alive.abort();
            let _ = fleet
                .update(&id, |s| {
                    s.status = TaskStatus::Cancelled;
                    s.error = Some("cancelled while it waited for budget".to_string());
                })
                .await;
            let _ = message.double_ack().await;
            return;
        }
    }
    let outcome = run_task(
        fleet,
        &config.place,
        &id,
        &spec,
        &session,
        resume,
        &cancel_rx,
    )
    .await;
    keep_alive.abort();
    if let Some(why) = &outcome.give_back {
        // The fleet failed the run, not the task: another delivery resumes it (its budget
        // reservation stays with it).
        log(format!("task {id}: {why}; it goes back to the queue"));
        let _ = message
            .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
            .await;
        return;
    }
    let cancelled = *cancel_rx.borrow();
    if let Some(report) = &outcome.report
        && let Ok(json) = serde_json::to_vec_pretty(report)
        && let Err(why) = fleet.put_object(&format!("{id}/report.json"), &json).await
    {
        log(format!("task {id}: {why}; it will be delivered again"));
        let _ = message.ack_with(AckKind::Nak(None)).await;
        return;
    }
    if !outcome.patch.is_empty()
        && let Err(why) = fleet
            .put_object(&format!("{id}/patch.diff"), &outcome.patch)
            .await
    {
        log(format!("task {id}: {why}; it will be delivered again"));
        let _ = message.ack_with(AckKind::Nak(None)).await;
        return;
    }
    let recorded = fleet
        .update(&id, |s| {
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
        .await;
    if recorded.is_ok() {
        // Counted once: the reservation goes with the first release, and a later one (a
        // worker that finished the same task) finds none and counts nothing.
        let metrics = outcome.report.as_ref().and_then(|r| r.metrics.as_ref());
        let used = Amount {
            tokens: metrics.map(|m| m.tokens.total.total),
            micro_usd: metrics.map(|m| m.tokens.cost_micro_usd),
        };
        if let Err(why) = budget::release(fleet, &budget_keys, &id, used).await {
            log(format!("task {id}: {why}"));
        }
    }
    match recorded {
        Ok(Some(state)) => log(format!(
            "task {id}: {}{}",
            state.status.as_str(),
            state.error.map(|e| format!(" ({e})")).unwrap_or_default()
        )),
        Ok(None) => log(format!(
            "task {id}: another worker recorded its result first"
        )),
        Err(why) => {
            log(format!("task {id}: {why}; it will be delivered again"));
            let _ = message.ack_with(AckKind::Nak(None)).await;
            return;
        }
    }
    if let Err(err) = message.double_ack().await {
        log(format!(
            "task {id}: its ack was not confirmed ({err}); a redelivery finds its result"
        ));
    }
}

/// A task that cannot run: its `failed` result.
async fn finish_failed(fleet: &Fleet, id: &str, worker: &str, why: String) {
    let _ = fleet
        .update(id, |s| {
            s.status = TaskStatus::Failed;
            s.worker = Some(worker.to_string());
            s.error = Some(why.clone());
        })
        .await;
}

/// Progress ticks between two heartbeats in a running task's state.
const HEARTBEAT_TICKS: u64 = 5;
/// A running task on its last delivery whose heartbeat is older than this is abandoned.
const ABANDONED_AFTER: Duration = Duration::from_secs(15);
/// How often a worker looks for abandoned tasks.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// Tasks given up by the server (delivered [`MAX_DELIVER`] times): each gets a `failed`
/// result saying so, and its message is removed from the queue. Two ways in: the server's
/// max-deliveries advisory (heard by the workers serving at that moment), and a sweep, at
/// start and every [`SWEEP_EVERY`], of running tasks on their last delivery whose heartbeat
/// stopped (the advisory came while no worker was listening).
async fn dead_letters(fleet: Fleet, config: WorkerConfig) {
    let subject = format!("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{TASK_STREAM}.{WORKERS}");
    let mut advisories = fleet.client.subscribe(subject).await.ok();
    let mut sweep = tokio::time::interval(SWEEP_EVERY);
    loop {
        tokio::select! {
            advisory = async {
                match advisories.as_mut() {
                    Some(subscription) => subscription.next().await,
                    None => std::future::pending().await,
                }
            } => {
                let Some(advisory) = advisory else {
                    advisories = None;
                    continue;
                };
                let sequence = serde_json::from_slice::<serde_json::Value>(&advisory.payload)
                    .ok()
                    .and_then(|v| v.get("stream_seq").and_then(serde_json::Value::as_u64));
                if let Some(sequence) = sequence {
                    give_up(&fleet, &config, sequence).await;
                }
            }
            _ = sweep.tick() => {
                let Ok(states) = fleet.list().await else { continue };
                for state in states {
                    if state.status == TaskStatus::Running
                        && state.deliveries >= MAX_DELIVER as u64
                        && silent_for(state.heartbeat_at.as_deref()) > ABANDONED_AFTER
                        && let Some(sequence) = state.sequence
                    {
                        give_up(&fleet, &config, sequence).await;
                    }
                }
            }
        }
    }
}

/// How long ago `stamp` (RFC 3339) was; zero when it is missing or unreadable.
fn silent_for(stamp: Option<&str>) -> Duration {
    stamp
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .and_then(|at| {
            (chrono::Utc::now() - at.with_timezone(&chrono::Utc))
                .to_std()
                .ok()
        })
        .unwrap_or_default()
}

/// The task message at `sequence` was given up: its task's `failed` result, its budget
/// reservation dropped, the message removed.
async fn give_up(fleet: &Fleet, config: &WorkerConfig, sequence: u64) {
    let Ok(stream) = fleet.js.get_stream(TASK_STREAM).await else {
        return;
    };
    let Ok(raw) = stream.get_raw_message(sequence).await else {
        return;
    };
    if let Ok(task) = serde_json::from_slice::<TaskMessage>(&raw.payload)
        && valid_task_id(&task.id)
    {
        let why = format!(
            "given up after {MAX_DELIVER} deliveries: each worker that took it stopped without a result (died, or lost the server for over {ACK_WAIT:?}); see its journal with `braincode fleet watch {}`",
            task.id
        );
        finish_failed(fleet, &task.id, &config.name, why).await;
        let keys = budget::keys(task.task.submitter.as_deref());
        let _ = budget::release(fleet, &keys, &task.id, Amount::default()).await;
        (config.log)(format!(
            "task {}: given up after {MAX_DELIVER} deliveries",
            task.id
        ));
    }
    let _ = stream.delete_message(sequence).await;
}

/// A session id in Braincode's form (`YYYYMMDD-HHMMSS-xxxxxx`).
fn new_session_id() -> String {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{stamp}-{}", &random[..6])
}
