//! What the pet model is told: the newest items of the latest turn and the live state
//! (spec 1.13's snapshot), built from the same [`App`] the transcript is drawn from.

use braincode_runtime::{PetSnapshot, SNAPSHOT_ITEMS};

use super::{Activity, ToolPhase};
use crate::app::{App, Item, ToolState, WorkerStatus};

fn tool_state(state: ToolState) -> &'static str {
    match state {
        ToolState::Running => "running",
        ToolState::Done => "done",
        ToolState::Failed => "failed",
        ToolState::Blocked => "blocked",
        ToolState::Interrupted => "interrupted",
    }
}

fn worker_status(status: WorkerStatus) -> &'static str {
    match status {
        WorkerStatus::Waiting => "waiting",
        WorkerStatus::Running => "running",
        WorkerStatus::Done => "done",
        WorkerStatus::Failed => "failed",
        WorkerStatus::Blocked => "blocked",
        WorkerStatus::Skipped => "skipped",
        WorkerStatus::Interrupted => "interrupted",
    }
}

/// The state in a few words, from the latest activity.
fn state_words(activity: &Activity, running: bool) -> String {
    if !running {
        return "idle".into();
    }
    match activity {
        Activity::Watching => "routing or between steps".into(),
        Activity::Tool {
            name,
            phase: ToolPhase::Running,
            ..
        } => format!("running tool {name}"),
        Activity::Tool { name, phase, .. } => format!(
            "tool {name} {}",
            if *phase == ToolPhase::Failed {
                "failed"
            } else {
                "finished"
            }
        ),
        Activity::Worker { role, .. } => format!("{role} worker running"),
        Activity::Todo { title, .. } => format!("todo moving: {title}"),
        Activity::Drafting => "drafting the reply".into(),
    }
}

/// The snapshot of `app`'s latest turn, with `queued` prompts waiting.
pub fn snapshot(app: &App, queued: usize) -> PetSnapshot {
    let mut snapshot = PetSnapshot {
        state: state_words(app.pet_tracker().activity(), app.is_running()),
        queued,
        ..PetSnapshot::default()
    };
    let Some(turn) = app.turns().last() else {
        return snapshot;
    };
    let mut items = vec![format!("user: {}", turn.request())];
    for item in turn.items() {
        match item {
            Item::Worker(row) => {
                let status = worker_status(row.status);
                let worker = row.worker;
                items.push(format!(
                    "{} worker ({status}): {}",
                    worker.role, worker.goal
                ));
                if row.status == WorkerStatus::Running {
                    snapshot
                        .active_workers
                        .push(format!("{}: {}", worker.role, worker.goal));
                }
            }
            Item::Tool { call, .. } => {
                items.push(format!(
                    "tool {} {} ({})",
                    call.tool_name,
                    call.summary,
                    tool_state(call.state)
                ));
                if call.state == ToolState::Running {
                    snapshot.active_tools.push(call.tool_name.clone());
                }
            }
        }
    }
    let answer = turn.answer().trim();
    if !answer.is_empty() {
        items.push(format!("reply so far: {answer}"));
    }
    let skip = items.len().saturating_sub(SNAPSHOT_ITEMS);
    snapshot.items = items.split_off(skip);
    snapshot
}
