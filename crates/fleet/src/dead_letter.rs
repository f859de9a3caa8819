//! Tasks the server gave up (delivered [`MAX_DELIVER`] times without a result): each gets a
//! `failed` result saying so, and only then is its message removed from the queue.

use std::time::Duration;

use futures::StreamExt;

use crate::budget::{self, Amount};
use crate::nats::{ACK_WAIT, Fleet, MAX_DELIVER, TASK_STREAM, WORKERS};
use crate::task::{TaskMessage, TaskStatus, valid_task_id};
use crate::worker::{WorkerConfig, finish_failed, patiently};

/// A running task on its last delivery whose heartbeat is older than this is abandoned.
const ABANDONED_AFTER: Duration = Duration::from_secs(15);
/// How often a worker looks for abandoned tasks.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// Tasks given up by the server: two ways in, the server's max-deliveries advisory (heard by
/// the workers serving at that moment), and a sweep, at start and every [`SWEEP_EVERY`], of
/// running tasks on their last delivery whose heartbeat stopped (the advisory came while no
/// worker was listening, or its result could not be recorded then).
pub(crate) async fn dead_letters(fleet: Fleet, config: WorkerConfig) {
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
/// reservation dropped, then the message removed. A result that cannot be recorded (a cluster
/// between leaders for longer than [`crate::worker::FLEET_PATIENCE`]) leaves the message where
/// it is: removed without a result, its task would wait as `queued` or `running` forever.
async fn give_up(fleet: &Fleet, config: &WorkerConfig, sequence: u64) {
    let stream = match patiently(|| async {
        fleet
            .js
            .get_stream(TASK_STREAM)
            .await
            .map_err(|err| format!("NATS at {}: the task stream: {err}", fleet.url))
    })
    .await
    {
        Ok(stream) => stream,
        Err(why) => {
            (config.log)(format!("task message {sequence}: {why}"));
            return;
        }
    };
    // None: removed already (another worker gave it up first).
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
        if let Err(not) = finish_failed(fleet, &task.id, &config.name, why).await {
            (config.log)(format!(
                "task {}: given up after {MAX_DELIVER} deliveries, but its result could not be recorded ({not}); its message stays for the next sweep",
                task.id
            ));
            return;
        }
        let keys = budget::keys(task.task.submitter.as_deref());
        let _ = budget::release(fleet, &keys, &task.id, Amount::default()).await;
        (config.log)(format!(
            "task {}: given up after {MAX_DELIVER} deliveries",
            task.id
        ));
    }
    let _ = stream.delete_message(sequence).await;
}
