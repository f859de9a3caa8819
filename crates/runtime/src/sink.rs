//! The run's event sink: every [`RunEvent`] goes to every subscriber — the session journal
//! (which keeps the durable records), the run's fold, the CLI printer, the `--events` stream,
//! the TUI, tests. The journal is an ordinary subscriber that writes synchronously, so it is
//! bounded (nothing queues behind a slow disk) and always first.
//!
//! A run's journal ends with exactly one terminal record (`run_end` or `run_error`), written
//! with [`RunSink::record_terminal`]. From then on the sink is closed: a record that still
//! arrives (a worker task that was being aborted when the run was cancelled) is dropped,
//! counted ([`RunSink::late_records`]) and traced, never appended after the end; status,
//! warning and text events are dropped too. Records are appended and broadcast under one
//! lock, so subscribers see them in journal order.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use braincode_config::journal::now_ms;
use braincode_protocol::{AgentRef, FinalReport, JournalEntry, Record, RunEvent};
use tokio::sync::mpsc;

/// Where durable records are appended (the session journal).
pub trait JournalAppend: Send {
    /// Appends one entry as one whole line; durability points are synced before returning.
    fn append(&mut self, entry: &JournalEntry) -> std::io::Result<()>;
}

/// Something that watches a run.
pub trait EventSubscriber: Send + Sync {
    /// Called for every event, in order. Must not block for long.
    fn on_event(&self, event: &RunEvent);

    /// Records this subscriber asks to journal right after the record it just saw (a
    /// subscriber cannot record from inside [`EventSubscriber::on_event`]: the sink's lock is
    /// held). They are appended under the same lock, so nothing comes between.
    fn follow_ups(&self) -> Vec<Record> {
        Vec::new()
    }
}

/// The live fold keeps the run's state current from every record it sees.
impl EventSubscriber for braincode_session::fold::LiveState {
    fn on_event(&self, event: &RunEvent) {
        if let RunEvent::Record { entry, .. } = event {
            self.apply(entry);
        }
    }
}

/// Forwards events into a channel (for async consumers).
pub struct ChannelSubscriber(pub mpsc::UnboundedSender<RunEvent>);

impl EventSubscriber for ChannelSubscriber {
    fn on_event(&self, event: &RunEvent) {
        // A closed receiver means nobody is watching any more; the run goes on.
        let _ = self.0.send(event.clone());
    }
}

/// What the ordering lock protects.
struct SinkState {
    /// The terminal record was written: nothing more is appended.
    closed: bool,
}

/// The session journal as one more subscriber of the event stream: it appends every record
/// event, synchronously (bounded: no queue grows behind a slow disk, and a record is on disk,
/// or its failure known, before the next one is emitted). Other events are not durable.
struct JournalSubscriber {
    journal: Mutex<Box<dyn JournalAppend>>,
    /// The first write error, until the sink has reported it.
    failure: Mutex<Option<String>>,
    failed: AtomicBool,
}

impl EventSubscriber for JournalSubscriber {
    fn on_event(&self, event: &RunEvent) {
        let Some(entry) = event.journal_entry() else {
            return;
        };
        let result = match self.journal.lock() {
            Ok(mut journal) => journal.append(entry),
            Err(poisoned) => poisoned.into_inner().append(entry),
        };
        if let Err(err) = result
            && !self.failed.swap(true, Ordering::SeqCst)
        {
            let mut failure = match self.failure.lock() {
                Ok(failure) => failure,
                Err(poisoned) => poisoned.into_inner(),
            };
            *failure = Some(err.to_string());
        }
    }
}

impl JournalSubscriber {
    /// The first write error, once (the sink turns it into a warning).
    fn take_failure(&self) -> Option<String> {
        match self.failure.lock() {
            Ok(mut failure) => failure.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
    }
}

struct SinkInner {
    session_id: String,
    state: Mutex<SinkState>,
    /// The journal (first of the subscribers, so it has a record before anyone acts on it).
    journal: Option<Arc<JournalSubscriber>>,
    subscribers: Vec<Arc<dyn EventSubscriber>>,
    final_sent: AtomicBool,
    /// Mirrors `SinkState::closed` for the lock-free event paths.
    closed: AtomicBool,
    late_records: AtomicU64,
    /// Whether a model request has gone out, and who waits for the first one.
    model_called: AtomicBool,
    first_model_call: tokio::sync::Notify,
    /// The run's spawned agent tasks (workers), so a stopped run can wait until the last one
    /// has let go before it writes its answer.
    tasks: tokio_util::task::TaskTracker,
}

/// Cheap-to-clone handle every part of a run emits through.
#[derive(Clone)]
pub struct RunSink {
    inner: Arc<SinkInner>,
}

impl RunSink {
    /// A sink for `session_id` writing to `journal` (if any) and notifying `subscribers`.
    pub fn new(
        session_id: impl Into<String>,
        journal: Option<Box<dyn JournalAppend>>,
        subscribers: Vec<Arc<dyn EventSubscriber>>,
    ) -> Self {
        let journal = journal.map(|journal| {
            Arc::new(JournalSubscriber {
                journal: Mutex::new(journal),
                failure: Mutex::new(None),
                failed: AtomicBool::new(false),
            })
        });
        let mut all: Vec<Arc<dyn EventSubscriber>> = Vec::with_capacity(subscribers.len() + 1);
        if let Some(journal) = &journal {
            all.push(journal.clone());
        }
        all.extend(subscribers);
        Self {
            inner: Arc::new(SinkInner {
                session_id: session_id.into(),
                state: Mutex::new(SinkState { closed: false }),
                journal,
                subscribers: all,
                final_sent: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                late_records: AtomicU64::new(0),
                tasks: tokio_util::task::TaskTracker::new(),
                model_called: AtomicBool::new(false),
                first_model_call: tokio::sync::Notify::new(),
            }),
        }
    }

    /// Marks a model request as sent (the provider has answered or failed); the first one
    /// wakes [`RunSink::first_model_request`].
    pub fn model_request_sent(&self) {
        if !self.inner.model_called.swap(true, Ordering::SeqCst) {
            self.inner.first_model_call.notify_waiters();
        }
    }

    /// Waits until the run's first model request has been sent (work that must never delay
    /// it, such as starting MCP servers, waits for this).
    pub async fn first_model_request(&self) {
        let notified = self.inner.first_model_call.notified();
        if self.inner.model_called.load(Ordering::SeqCst) {
            return;
        }
        notified.await;
    }

    /// A token a spawned agent task holds for as long as it runs (also when it is aborted:
    /// the token goes with the task's future).
    pub fn task_token(&self) -> tokio_util::task::task_tracker::TaskTrackerToken {
        self.inner.tasks.token()
    }

    /// Waits (at most `limit`) until every agent task holding a [`RunSink::task_token`] has
    /// ended: after a cancel, what they record before they notice it is then in the fold the
    /// answer and the report are made from.
    pub async fn tasks_ended(&self, limit: std::time::Duration) {
        self.inner.tasks.close();
        let _ = tokio::time::timeout(limit, self.inner.tasks.wait()).await;
    }

    /// The session this sink journals into.
    pub fn session_id(&self) -> &str {
        &self.inner.session_id
    }

    /// Journals a record and tells subscribers about it. After the terminal record the
    /// record is dropped and counted instead (see the module docs).
    pub fn record(&self, record: Record) {
        self.append(record, false);
    }

    /// Journals the run's terminal record (`run_end` or `run_error`) and closes the sink:
    /// every later record is refused. A second terminal record is refused like any other.
    pub fn record_terminal(&self, record: Record) {
        self.append(record, true);
    }

    /// Records refused because they arrived after the terminal record.
    pub fn late_records(&self) -> u64 {
        self.inner.late_records.load(Ordering::SeqCst)
    }

    /// Whether the terminal record was written.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    fn append(&self, record: Record, terminal: bool) {
        let mut state = match self.inner.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        if state.closed {
            // Expected while a cancelled run's tasks wind down: traced, not shown.
            let late = self.inner.late_records.fetch_add(1, Ordering::SeqCst) + 1;
            tracing::debug!(
                record_type = record.type_name(),
                late,
                "a record arrived after the run's terminal record and was not journaled"
            );
            return;
        }
        let entry = JournalEntry::new(now_ms(), record);
        if terminal {
            state.closed = true;
            self.inner.closed.store(true, Ordering::SeqCst);
        }
        // Broadcast under the lock: every subscriber, the journal first, sees records in one
        // order; what a subscriber asks to journal in answer comes right after.
        let mut queue = std::collections::VecDeque::from([entry]);
        while let Some(entry) = queue.pop_front() {
            self.broadcast(&RunEvent::Record {
                session_id: self.inner.session_id.clone(),
                entry: Box::new(entry),
            });
            if !terminal {
                for subscriber in &self.inner.subscribers {
                    for record in subscriber.follow_ups() {
                        queue.push_back(JournalEntry::new(now_ms(), record));
                    }
                }
            }
        }
        // Report the journal's first failure only; the run itself goes on (the answer still
        // reaches the user, and the warning says what was not saved).
        if let Some(err) = self.inner.journal.as_ref().and_then(|j| j.take_failure()) {
            tracing::error!(error = %err, "session journal write failed");
            self.broadcast(&RunEvent::Warning {
                message: format!(
                    "the session journal could not be written ({err}); this run will not be resumable"
                ),
            });
        }
        drop(state);
    }

    /// A status line for live progress (dropped once the sink is closed).
    pub fn status(&self, message: impl Into<String>) {
        self.broadcast_open(&RunEvent::Status {
            message: message.into(),
        });
    }

    /// A warning the user should see: a `warning` record (so the report, which is a fold of
    /// the records, lists it). Dropped once the sink is closed.
    pub fn warning(&self, message: impl Into<String>) {
        self.record(Record::Warning(braincode_protocol::Warning {
            message: message.into(),
        }));
    }

    /// A passing notice about the transport (a reply cut off and asked again): shown live as
    /// a warning event, not journaled and not in the report — the durable fact is its
    /// `model_retry` record. Dropped once the sink is closed.
    pub fn notice(&self, message: impl Into<String>) {
        self.broadcast_open(&RunEvent::Warning {
            message: message.into(),
        });
    }

    /// Streamed answer text (dropped once the sink is closed).
    pub fn text_delta(&self, agent: &AgentRef, text: &str) {
        if self.is_closed() {
            return;
        }
        self.broadcast(&RunEvent::TextDelta {
            agent: agent.clone(),
            text: text.to_string(),
        });
    }

    /// Streamed reasoning text (dropped once the sink is closed).
    pub fn reasoning_delta(&self, agent: &AgentRef, text: &str) {
        if self.is_closed() {
            return;
        }
        self.broadcast(&RunEvent::ReasoningDelta {
            agent: agent.clone(),
            text: text.to_string(),
        });
    }

    /// Emits a non-record event. After the terminal record only the one final answer still
    /// goes out.
    pub fn emit(&self, event: RunEvent) {
        if let RunEvent::Record { entry, .. } = event {
            self.record(entry.record);
            return;
        }
        if let RunEvent::Final { report } = event {
            self.emit_final(*report);
            return;
        }
        self.broadcast_open(&event);
    }

    /// Emits the one final answer and hands the report back (it is not copied). A second
    /// final answer is suppressed: one voice.
    pub fn emit_final(&self, report: FinalReport) -> FinalReport {
        if self.inner.final_sent.swap(true, Ordering::SeqCst) {
            tracing::error!("a second final answer was suppressed");
            return report;
        }
        let event = RunEvent::Final {
            report: Box::new(report),
        };
        self.broadcast(&event);
        match event {
            RunEvent::Final { report } => *report,
            _ => unreachable_event(),
        }
    }

    fn broadcast_open(&self, event: &RunEvent) {
        if !self.is_closed() {
            self.broadcast(event);
        }
    }

    /// Whether the final answer was already emitted.
    pub fn final_sent(&self) -> bool {
        self.inner.final_sent.load(Ordering::SeqCst)
    }

    /// Whether any journal write failed.
    pub fn journal_failed(&self) -> bool {
        self.inner
            .journal
            .as_ref()
            .is_some_and(|j| j.failed.load(Ordering::SeqCst))
    }

    fn broadcast(&self, event: &RunEvent) {
        for subscriber in &self.inner.subscribers {
            subscriber.on_event(event);
        }
    }
}

#[allow(clippy::panic)]
fn unreachable_event() -> FinalReport {
    // `emit_final` builds a `Final` event and matches the same value right back.
    panic!("a Final event changed its variant")
}

/// An in-memory journal for tests and dry runs.
#[derive(Clone, Default)]
pub struct MemoryJournal {
    entries: Arc<Mutex<Vec<JournalEntry>>>,
}

impl MemoryJournal {
    /// Every entry appended so far.
    pub fn entries(&self) -> Vec<JournalEntry> {
        match self.entries.lock() {
            Ok(entries) => entries.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

impl JournalAppend for MemoryJournal {
    fn append(&mut self, entry: &JournalEntry) -> std::io::Result<()> {
        match self.entries.lock() {
            Ok(mut entries) => entries.push(entry.clone()),
            Err(poisoned) => poisoned.into_inner().push(entry.clone()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::{Handoff, RunError};

    struct Failing;
    impl JournalAppend for Failing {
        fn append(&mut self, _entry: &JournalEntry) -> std::io::Result<()> {
            Err(std::io::Error::other("disk full"))
        }
    }

    #[test]
    fn records_reach_journal_and_subscribers_in_order() {
        let journal = MemoryJournal::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = RunSink::new(
            "s1",
            Some(Box::new(journal.clone())),
            vec![Arc::new(ChannelSubscriber(tx))],
        );
        sink.status("planning");
        sink.record(Record::RunError(RunError {
            error: "x".into(),
            kind: None,
            attempt: None,
            will_fallback: None,
            duration_ms: None,
            status: None,
        }));
        assert_eq!(journal.entries().len(), 1);
        assert!(matches!(rx.try_recv().unwrap(), RunEvent::Status { .. }));
        assert!(matches!(rx.try_recv().unwrap(), RunEvent::Record { .. }));
    }

    #[test]
    fn journal_failure_is_reported_once() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = RunSink::new(
            "s1",
            Some(Box::new(Failing)),
            vec![Arc::new(ChannelSubscriber(tx))],
        );
        for _ in 0..3 {
            sink.record(Record::Handoff(Handoff {
                summary: "s".into(),
                focus: None,
                trigger: None,
                estimated_bytes: None,
                limit_bytes: None,
                summarizer: None,
                summarizer_fallback: None,
            }));
        }
        let warnings = std::iter::from_fn(|| rx.try_recv().ok())
            .filter(|e| matches!(e, RunEvent::Warning { .. }))
            .count();
        assert_eq!(warnings, 1);
        assert!(sink.journal_failed());
    }

    fn some_record() -> Record {
        Record::Handoff(Handoff {
            summary: "late".into(),
            focus: None,
            trigger: None,
            estimated_bytes: None,
            limit_bytes: None,
            summarizer: None,
            summarizer_fallback: None,
        })
    }

    fn run_error() -> Record {
        Record::RunError(RunError {
            error: "the run was cancelled".into(),
            kind: Some("aborted".into()),
            attempt: None,
            will_fallback: Some(false),
            duration_ms: None,
            status: None,
        })
    }

    #[test]
    fn nothing_is_journaled_or_broadcast_after_the_terminal_record() {
        let journal = MemoryJournal::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = RunSink::new(
            "s1",
            Some(Box::new(journal.clone())),
            vec![Arc::new(ChannelSubscriber(tx))],
        );
        sink.record(some_record());
        sink.record_terminal(run_error());
        assert!(sink.is_closed());
        sink.record(some_record());
        sink.record_terminal(run_error());
        sink.status("late status");
        sink.warning("late warning");
        let types: Vec<String> = journal
            .entries()
            .iter()
            .map(|e| e.record.type_name().to_string())
            .collect();
        assert_eq!(types, ["handoff", "run_error"]);
        // The late record, the second terminal record and the warning (a record too).
        assert_eq!(sink.late_records(), 3);
        let events: Vec<RunEvent> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(matches!(&events[1], RunEvent::Record { entry, .. }
            if entry.record.type_name() == "run_error"));
    }

    #[test]
    fn the_terminal_record_stays_last_under_concurrent_writers() {
        let journal = MemoryJournal::default();
        let sink = RunSink::new("s1", Some(Box::new(journal.clone())), Vec::new());
        let writers: Vec<_> = (0..4)
            .map(|_| {
                let sink = sink.clone();
                std::thread::spawn(move || {
                    for _ in 0..500 {
                        sink.record(some_record());
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(1));
        sink.record_terminal(run_error());
        for writer in writers {
            writer.join().unwrap();
        }
        let entries = journal.entries();
        assert_eq!(entries.last().unwrap().record.type_name(), "run_error");
        assert_eq!(
            entries.len() as u64 + sink.late_records(),
            2_001,
            "every record was either journaled before the end or counted as late"
        );
    }
}
