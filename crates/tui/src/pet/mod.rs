//! BrainPet: a small companion beside the transcript that says, in a few words, what the run
//! is doing right now (spec 1.13).
//!
//! What it says is a pure function of the session: [`PetTracker`] keeps the latest event
//! worth mentioning (the latest event wins), [`Pet::status`] turns it into a status and a
//! few lines, and [`face`] picks the face's frame from the clock. Nothing here sleeps or
//! reads the clock, so every state and frame can be drawn in a test at a chosen time.

mod face;
mod quips;
mod snapshot;

use braincode_protocol::{Phase, Record, Role, RunEvent, TaskStatus};

pub use face::{ACTIVE_FRAME_MS, FACE_WIDTH, IDLE_FRAME_MS, face};
pub use quips::{ToolCategory, quip};
pub use snapshot::snapshot;

use crate::app::App;
use crate::view::text::truncate;

/// Longest status, in cells.
pub const STATUS_MAX: usize = 24;
/// Longest line under the status, in cells.
pub const LINE_MAX: usize = 28;
/// Most lines under the status.
pub const LINES_MAX: usize = 4;
/// The environment variable that turns animations off (any value but empty, `0` or `false`),
/// read once when the session starts, the way `NO_COLOR` is.
pub const NO_ANIMATIONS_ENV: &str = "BRAINCODE_NO_ANIMATIONS";
/// The environment variable that sets how often the pet model is asked, in milliseconds
/// (default 8000, the spec's pace; at least [`MIN_POLL_MS`]). A slower pace costs fewer tokens.
pub const POLL_ENV: &str = "BRAINCODE_PET_POLL_MS";
/// The fastest the pet model may be asked.
pub const MIN_POLL_MS: u64 = 250;

/// Where a tool call the pet talks about stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolPhase {
    /// Started, not finished.
    Running,
    /// Finished without error.
    Done,
    /// Finished with an error.
    Failed,
}

/// The latest thing worth mentioning in the current run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Activity {
    /// Nothing specific yet (routing, planning, between steps).
    #[default]
    Watching,
    /// A tool call started or finished.
    Tool {
        /// Tool name.
        name: String,
        /// Provider call id (picks the quip, so one call keeps one quip).
        call_id: String,
        /// Where it stands.
        phase: ToolPhase,
    },
    /// A worker started.
    Worker {
        /// Its role.
        role: Role,
        /// Its goal.
        goal: String,
    },
    /// A todo changed status.
    Todo {
        /// Its title.
        title: String,
        /// Its new status.
        status: TaskStatus,
    },
    /// The primary is streaming the final answer.
    Drafting,
}

/// Follows a run's events and keeps the latest [`Activity`].
#[derive(Debug, Clone, Default)]
pub struct PetTracker {
    activity: Activity,
}

impl PetTracker {
    /// The latest activity.
    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    /// Takes one event of the running run.
    pub fn on_event(&mut self, event: &RunEvent) {
        let next = match event {
            RunEvent::Record { entry, .. } => match &entry.record {
                Record::RunStart(_) => Some(Activity::Watching),
                Record::WorkerStart(start) => Some(Activity::Worker {
                    role: start.worker,
                    goal: start.goal.clone(),
                }),
                // A worker that ended is no longer working; anything newer already won.
                Record::WorkerEnd(end) => match &self.activity {
                    Activity::Worker { role, .. } if *role == end.worker => {
                        Some(Activity::Watching)
                    }
                    _ => None,
                },
                Record::TodoUpdate(update) => update.todo_ids.first().map(|id| Activity::Todo {
                    title: update
                        .todos
                        .iter()
                        .find(|t| &t.id == id)
                        .map_or_else(|| id.clone(), |t| t.title.clone()),
                    status: update.status,
                }),
                _ => None,
            },
            RunEvent::ToolStarted {
                call_id, tool_name, ..
            } => Some(Activity::Tool {
                name: tool_name.clone(),
                call_id: call_id.clone(),
                phase: ToolPhase::Running,
            }),
            RunEvent::ToolFinished {
                call_id,
                tool_name,
                is_error,
                ..
            } => Some(Activity::Tool {
                name: tool_name.clone(),
                call_id: call_id.clone(),
                phase: if *is_error {
                    ToolPhase::Failed
                } else {
                    ToolPhase::Done
                },
            }),
            RunEvent::TextDelta { agent, .. } if agent.phase == Phase::Primary => {
                Some(Activity::Drafting)
            }
            RunEvent::Final { .. } => Some(Activity::Watching),
            _ => None,
        };
        if let Some(next) = next {
            self.activity = next;
        }
    }
}

/// What the panel says: a status and a few lines under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PetStatus {
    /// At most [`STATUS_MAX`] cells.
    pub status: String,
    /// At most [`LINES_MAX`] lines of at most [`LINE_MAX`] cells.
    pub lines: Vec<String>,
    /// Whether a run is going (the face is awake).
    pub active: bool,
}

impl PetStatus {
    fn new(status: impl AsRef<str>, lines: Vec<String>, active: bool) -> Self {
        Self {
            status: truncate(status.as_ref(), STATUS_MAX),
            lines: lines
                .iter()
                .take(LINES_MAX)
                .map(|l| truncate(l, LINE_MAX))
                .collect(),
            active,
        }
    }
}

/// The session's pet: whether it moves, what it knows beyond the run (the queue), and what
/// its model last said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pet {
    animations: bool,
    queued: usize,
    poll: std::time::Duration,
    /// The pet model's latest status for the running request (none: the fallback speaks).
    said: Option<PetStatus>,
}

impl Pet {
    /// A pet whose face moves when `animations` is on.
    pub fn new(animations: bool) -> Self {
        Self {
            animations,
            queued: 0,
            poll: braincode_runtime::PET_POLL,
            said: None,
        }
    }

    /// A pet configured from the environment ([`NO_ANIMATIONS_ENV`], [`POLL_ENV`]).
    pub fn from_env() -> Self {
        let value = std::env::var(NO_ANIMATIONS_ENV).ok();
        let mut pet = Self::new(animations_enabled(value.as_deref()));
        if let Some(poll) = std::env::var(POLL_ENV).ok().and_then(|v| poll_interval(&v)) {
            pet.poll = poll;
        }
        pet
    }

    /// How often the pet model is asked while a request runs.
    pub fn poll_interval(&self) -> std::time::Duration {
        self.poll
    }

    /// Whether the pet model may be asked at all: only a moving pet talks (animations off
    /// means a quiet, cheap session).
    pub fn wants_model(&self) -> bool {
        self.animations
    }

    /// Takes what the pet model said; it speaks until the next answer, an error or the end of
    /// the request.
    pub fn set_model_reply(&mut self, reply: &braincode_runtime::PetReply) {
        self.said = Some(PetStatus::new(&reply.status, reply.lines.clone(), true));
    }

    /// Goes back to the deterministic status.
    pub fn clear_model_reply(&mut self) {
        self.said = None;
    }

    /// Whether the face moves.
    pub fn animations(&self) -> bool {
        self.animations
    }

    /// Sets how many prompts wait for the running request to end.
    pub fn set_queued(&mut self, queued: usize) {
        self.queued = queued;
    }

    /// What the panel says now about `app`'s latest run.
    pub fn status(&self, app: &App) -> PetStatus {
        match &self.said {
            Some(said) if app.is_running() => {
                let mut said = said.clone();
                if self.queued > 0 && said.lines.len() < LINES_MAX {
                    said.lines.push(format!("{} queued", self.queued));
                }
                said
            }
            _ => fallback(app.pet_tracker().activity(), app.is_running(), self.queued),
        }
    }

    /// The face at `now_ms` (epoch milliseconds).
    pub fn face(&self, app: &App, now_ms: i64) -> [&'static str; 2] {
        face(app.is_running(), self.animations, now_ms)
    }
}

/// Whether animations are on, given the value of [`NO_ANIMATIONS_ENV`].
pub fn animations_enabled(no_animations: Option<&str>) -> bool {
    match no_animations.map(str::trim) {
        None | Some("" | "0") => true,
        Some(value) => value.eq_ignore_ascii_case("false"),
    }
}

/// The poll interval [`POLL_ENV`] asks for: whole milliseconds, at least [`MIN_POLL_MS`].
pub fn poll_interval(value: &str) -> Option<std::time::Duration> {
    let ms: u64 = value.trim().parse().ok()?;
    Some(std::time::Duration::from_millis(ms.max(MIN_POLL_MS)))
}

/// The deterministic status for `activity` (spec 1.13's fallback states).
pub fn fallback(activity: &Activity, running: bool, queued: usize) -> PetStatus {
    let queue_line = (queued > 0).then(|| format!("{queued} queued"));
    if !running {
        let line = queue_line.unwrap_or_else(|| "waiting for prompt".to_string());
        return PetStatus::new("idle", vec![line], false);
    }
    let (status, mut lines) = match activity {
        Activity::Watching => ("watching run".to_string(), Vec::new()),
        Activity::Tool {
            name,
            call_id,
            phase: ToolPhase::Running,
        } => (format!("running {name}"), vec![quip(name, call_id).into()]),
        Activity::Tool {
            name,
            phase: ToolPhase::Done,
            ..
        } => (format!("{name} done"), vec!["on to the next step".into()]),
        Activity::Tool {
            name,
            phase: ToolPhase::Failed,
            ..
        } => (
            format!("{name} failed"),
            vec![
                "that did not go well".into(),
                "the agent will see why".into(),
            ],
        ),
        Activity::Worker { role, goal } => (format!("{role} is working"), vec![goal.clone()]),
        Activity::Todo { title, status } => (
            format!("todo: {title}"),
            vec![title.clone(), format!("now {}", todo_word(*status))],
        ),
        Activity::Drafting => (
            "drafting reply".to_string(),
            vec!["choosing the words".into()],
        ),
    };
    lines.extend(queue_line);
    PetStatus::new(status, lines, true)
}

fn todo_word(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending => "pending",
        TaskStatus::Running => "in progress",
        TaskStatus::Completed => "done",
        TaskStatus::Blocked => "blocked",
        TaskStatus::Failed => "failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn animations_are_on_unless_the_variable_says_otherwise() {
        assert!(animations_enabled(None));
        assert!(animations_enabled(Some("")));
        assert!(animations_enabled(Some("0")));
        assert!(animations_enabled(Some("false")));
        assert!(!animations_enabled(Some("1")));
        assert!(!animations_enabled(Some("yes")));
    }

    #[test]
    fn the_poll_interval_has_a_floor_and_ignores_junk() {
        assert_eq!(
            poll_interval("8000"),
            Some(std::time::Duration::from_secs(8))
        );
        assert_eq!(
            poll_interval("1"),
            Some(std::time::Duration::from_millis(MIN_POLL_MS))
        );
        assert_eq!(poll_interval("soon"), None);
        assert_eq!(poll_interval("-5"), None);
    }

    #[test]
    fn long_names_are_clipped_to_the_panel_bounds() {
        let activity = Activity::Tool {
            name: "mcp__github__search_issues_and_pull_requests".into(),
            call_id: "c1".into(),
            phase: ToolPhase::Running,
        };
        let status = fallback(&activity, true, 0);
        assert!(crate::view::text::width(&status.status) <= STATUS_MAX);
        assert!(status.status.ends_with('…'));
    }
}
