//! Reading a run's records: a typed [`JournalView`] of finished records, and a
//! [`LiveJournal`] subscribed to a run's events that a test can wait on while it runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use braincode_protocol::{
    AgentMessageRecord, ClarificationRequest, ContextPlan, ExecutionPlanReview, FinalReport,
    FinalReportRecord, JournalEntry, McpConnect, ModelReply, ModelRetry, PatchSummaryRecord,
    Record, ReviewDecisionRecord, Role, RoutingRecord, RunEnd, RunError, RunEvent, RunStart,
    TodoPlan, TodoUpdate, TokenUsage, ToolCallCount, ToolExecutionSummary, Warning, WorkerEnd,
    WorkerError, WorkerPhase, WorkerStart, WriterMerge,
};
use braincode_runtime::EventSubscriber;
use braincode_session::fold::RunState;
use tokio::sync::watch;

/// A record payload type that [`JournalView::of_type`] can pick out of a [`Record`].
pub trait RecordPayload {
    /// The payload of `record`, when it is of this type.
    fn from_record(record: &Record) -> Option<&Self>;
}

macro_rules! payloads {
    ($($variant:ident => $payload:ty),* $(,)?) => {
        $(impl RecordPayload for $payload {
            fn from_record(record: &Record) -> Option<&Self> {
                match record {
                    Record::$variant(payload) => Some(payload),
                    _ => None,
                }
            }
        })*
    };
}

payloads! {
    RunStart => RunStart,
    RunEnd => RunEnd,
    RunError => RunError,
    WorkerStart => WorkerStart,
    WorkerEnd => WorkerEnd,
    WorkerError => WorkerError,
    AgentMessage => AgentMessageRecord,
    TodoPlan => TodoPlan,
    TodoUpdate => TodoUpdate,
    ContextPlan => ContextPlan,
    Routing => RoutingRecord,
    ClarificationRequest => ClarificationRequest,
    ReviewDecision => ReviewDecisionRecord,
    PatchSummary => PatchSummaryRecord,
    FinalReport => FinalReportRecord,
    ToolCallCount => ToolCallCount,
    ModelRetry => ModelRetry,
    ModelReply => ModelReply,
    Warning => Warning,
    ExecutionPlanReview => ExecutionPlanReview,
    ToolExecutionSummary => ToolExecutionSummary,
    TokenUsage => TokenUsage,
    McpConnect => McpConnect,
    WriterMerge => WriterMerge,
}

/// The records of a run, in journal order.
#[derive(Debug, Clone, Default)]
pub struct JournalView {
    entries: Vec<JournalEntry>,
}

impl JournalView {
    /// A view of `entries`.
    pub fn new(entries: Vec<JournalEntry>) -> Self {
        Self { entries }
    }
    /// Every entry.
    pub fn entries(&self) -> &[JournalEntry] {
        &self.entries
    }
    /// Every record.
    pub fn all(&self) -> impl Iterator<Item = &Record> {
        self.entries.iter().map(|e| &e.record)
    }
    /// The records `keep` accepts, e.g. `records(|r| matches!(r, Record::WorkerEnd(_)))`.
    pub fn records(&self, keep: impl Fn(&Record) -> bool) -> Vec<&Record> {
        self.all().filter(|r| keep(r)).collect()
    }
    /// The payloads of one record type, e.g. `of_type::<WorkerEnd>()`.
    pub fn of_type<T: RecordPayload>(&self) -> Vec<&T> {
        self.all().filter_map(T::from_record).collect()
    }
    /// The first payload of one record type.
    pub fn first<T: RecordPayload>(&self) -> Option<&T> {
        self.all().find_map(T::from_record)
    }
    /// Every record's `type`, in order.
    pub fn types(&self) -> Vec<&str> {
        self.all().map(Record::type_name).collect()
    }
    /// How many records have `type` `name`.
    pub fn count(&self, name: &str) -> usize {
        self.all().filter(|r| r.type_name() == name).count()
    }
    /// The index of the first record of `type` `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.all().position(|r| r.type_name() == name)
    }
    /// The last record.
    pub fn last(&self) -> Option<&Record> {
        self.entries.last().map(|e| &e.record)
    }
    /// Every `warning` message.
    pub fn warnings(&self) -> Vec<&str> {
        self.of_type::<Warning>()
            .into_iter()
            .map(|w| w.message.as_str())
            .collect()
    }
    /// The `worker_start` records of `role` in `phase`.
    pub fn worker_starts(&self, role: Role, phase: WorkerPhase) -> Vec<&WorkerStart> {
        self.of_type::<WorkerStart>()
            .into_iter()
            .filter(|s| s.worker == role && s.phase == phase)
            .collect()
    }
    /// The report [`RunState`] folds from these records (`session_id` as the run's).
    pub fn fold(&self, session_id: &str) -> FinalReport {
        let mut state = RunState::new(session_id);
        for entry in &self.entries {
            state.apply(entry);
        }
        state.report()
    }
}

/// Predicates for [`LiveJournal::wait_for`] and [`JournalView::records`].
pub mod is {
    use braincode_protocol::{Record, Role, WorkerPhase};

    /// A `worker_start` of `role` in `phase`.
    pub fn worker_start(role: Role, phase: WorkerPhase) -> impl Fn(&Record) -> bool {
        move |r| matches!(r, Record::WorkerStart(s) if s.worker == role && s.phase == phase)
    }
    /// A `worker_end` of `role` in `phase`.
    pub fn worker_end(role: Role, phase: WorkerPhase) -> impl Fn(&Record) -> bool {
        move |r| matches!(r, Record::WorkerEnd(e) if e.worker == role && e.phase == phase)
    }
    /// A record of `type` `name`.
    pub fn of_type(name: &'static str) -> impl Fn(&Record) -> bool {
        move |r| r.type_name() == name
    }
}

#[derive(Default)]
struct Seen {
    /// Every event, in order.
    events: Vec<RunEvent>,
}

/// Watches a run's events (an [`EventSubscriber`] the run is given): the records as
/// subscribers see them, the final answers, and a way to wait for a record while the run
/// is in flight.
#[derive(Clone)]
pub struct LiveJournal {
    seen: Arc<Mutex<Seen>>,
    changed: Arc<watch::Sender<usize>>,
}

impl Default for LiveJournal {
    fn default() -> Self {
        Self {
            seen: Arc::default(),
            changed: Arc::new(watch::Sender::new(0)),
        }
    }
}

impl EventSubscriber for LiveJournal {
    fn on_event(&self, event: &RunEvent) {
        let count = {
            let mut seen = lock(&self.seen);
            seen.events.push(event.clone());
            seen.events.len()
        };
        self.changed.send_replace(count);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`LiveJournal::wait_for`] gave up: the record never came.
#[derive(Debug, Clone)]
pub struct WaitTimeout {
    /// How long it waited.
    pub waited: Duration,
    /// The record types seen meanwhile.
    pub seen: Vec<String>,
}

impl std::fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no matching record within {:?}; records so far: {:?}",
            self.waited, self.seen
        )
    }
}

impl LiveJournal {
    /// The records seen so far.
    pub fn snapshot(&self) -> JournalView {
        let seen = lock(&self.seen);
        JournalView::new(
            seen.events
                .iter()
                .filter_map(|e| match e {
                    RunEvent::Record { entry, .. } => Some((**entry).clone()),
                    _ => None,
                })
                .collect(),
        )
    }

    /// Every event seen so far.
    pub fn events(&self) -> Vec<RunEvent> {
        lock(&self.seen).events.clone()
    }

    /// How many final answers (`RunEvent::Final`) were emitted.
    pub fn final_answers(&self) -> usize {
        lock(&self.seen)
            .events
            .iter()
            .filter(|e| matches!(e, RunEvent::Final { .. }))
            .count()
    }

    /// Waits until a record `wanted` accepts has been seen (also one seen before the call),
    /// and returns it; gives up after `timeout`.
    pub async fn wait_for(
        &self,
        wanted: impl Fn(&Record) -> bool,
        timeout: Duration,
    ) -> Result<Record, WaitTimeout> {
        let mut changes = self.changed.subscribe();
        let search = async {
            loop {
                changes.borrow_and_update();
                if let Some(found) = self.snapshot().all().find(|r| wanted(r)).cloned() {
                    return found;
                }
                if changes.changed().await.is_err() {
                    // The sender lives in `self`: it cannot be dropped while we wait.
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(timeout, search)
            .await
            .map_err(|_| WaitTimeout {
                waited: timeout,
                seen: self
                    .snapshot()
                    .types()
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
            })
    }
}
