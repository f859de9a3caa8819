//! Many runs on many machines over NATS JetStream.
//!
//! `braincode fleet submit` puts tasks on a work-queue stream ([`nats::TASK_STREAM`]) and
//! their states in a key-value bucket; `braincode fleet worker`s on any number of machines
//! pull them through one durable consumer and run each as an ordinary `braincode run` in a
//! fresh clone ([`run`]), publishing its journal to a stream as it is written ([`journal`]),
//! and keep each task's patch and report in an object store. A task is acknowledged only once
//! its result is recorded; a worker that dies has its task delivered to another, which
//! resumes the run from the journal stream ([`worker`]).

pub mod budget;
mod dead_letter;
mod git;
pub mod journal;
pub mod nats;
pub mod run;
pub mod task;
pub mod worker;

pub use nats::{Fleet, NatsOptions};
pub use task::{TaskSpec, TaskState, TaskStatus};

use async_nats::HeaderMap;
use bytes::Bytes;

/// Queues `tasks`; their ids, in order. Each is checked first (a bad one queues nothing).
pub async fn submit(fleet: &Fleet, tasks: Vec<TaskSpec>) -> Result<Vec<String>, String> {
    for (index, task) in tasks.iter().enumerate() {
        task.check()
            .map_err(|why| format!("task {}: {why}", index + 1))?;
    }
    let mut ids = Vec::with_capacity(tasks.len());
    for task in tasks {
        let id = task::new_task_id();
        let state = TaskState::queued(&id, task.clone());
        fleet.create_state(&state).await?;
        let message = task::TaskMessage {
            id: id.clone(),
            task,
        };
        let payload = serde_json::to_vec(&message).map_err(|err| err.to_string())?;
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Msg-Id", id.as_str());
        fleet
            .js
            .publish_with_headers(nats::TASK_SUBJECT, headers, Bytes::from(payload))
            .await
            .map_err(|err| format!("NATS at {}: queueing task {id}: {err}", fleet.url))?
            .await
            .map_err(|err| format!("NATS at {}: queueing task {id}: {err}", fleet.url))?;
        ids.push(id);
    }
    Ok(ids)
}

/// Asks task `id` to stop: a queued task is cancelled at once, a running one by its worker
/// within a second. `Ok(false)`: it was over already.
pub async fn cancel(fleet: &Fleet, id: &str) -> Result<bool, String> {
    let changed = fleet
        .update(id, |state| {
            state.cancel_requested = true;
            if state.status == TaskStatus::Queued {
                state.status = TaskStatus::Cancelled;
                state.error = Some("cancelled before it started".to_string());
            }
        })
        .await?;
    Ok(changed.is_some())
}
