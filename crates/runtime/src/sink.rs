//! The run's event sink: every [`RunEvent`] goes to the journal (durable records only) and to
//! every subscriber (CLI printer, `--events` stream, TUI, tests).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use braincode_protocol::{AgentRef, JournalEntry, Record, RunEvent};
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
}

/// Forwards events into a channel (for async consumers).
pub struct ChannelSubscriber(pub mpsc::UnboundedSender<RunEvent>);

impl EventSubscriber for ChannelSubscriber {
    fn on_event(&self, event: &RunEvent) {
        // A closed receiver means nobody is watching any more; the run goes on.
        let _ = self.0.send(event.clone());
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

struct SinkInner {
    session_id: String,
    journal: Option<Mutex<Box<dyn JournalAppend>>>,
    subscribers: Vec<Arc<dyn EventSubscriber>>,
    journal_failed: AtomicBool,
    final_sent: AtomicBool,
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
        Self {
            inner: Arc::new(SinkInner {
                session_id: session_id.into(),
                journal: journal.map(Mutex::new),
                subscribers,
                journal_failed: AtomicBool::new(false),
                final_sent: AtomicBool::new(false),
            }),
        }
    }

    /// The session this sink journals into.
    pub fn session_id(&self) -> &str {
        &self.inner.session_id
    }

    /// Journals a record and tells subscribers about it.
    pub fn record(&self, record: Record) {
        let entry = JournalEntry::new(now_ms(), record);
        if let Some(journal) = &self.inner.journal {
            let result = match journal.lock() {
                Ok(mut writer) => writer.append(&entry),
                Err(poisoned) => poisoned.into_inner().append(&entry),
            };
            if let Err(err) = result {
                // Report the first failure only; the run itself goes on (the answer still
                // reaches the user, and the warning says what was not saved).
                if !self.inner.journal_failed.swap(true, Ordering::SeqCst) {
                    tracing::error!(error = %err, "session journal write failed");
                    self.broadcast(&RunEvent::Warning {
                        message: format!(
                            "the session journal could not be written ({err}); this run will not be resumable"
                        ),
                    });
                }
            }
        }
        self.broadcast(&RunEvent::Record {
            session_id: self.inner.session_id.clone(),
            entry: Box::new(entry),
        });
    }

    /// A status line for live progress.
    pub fn status(&self, message: impl Into<String>) {
        self.broadcast(&RunEvent::Status {
            message: message.into(),
        });
    }

    /// A warning the user should see.
    pub fn warning(&self, message: impl Into<String>) {
        self.broadcast(&RunEvent::Warning {
            message: message.into(),
        });
    }

    /// Streamed answer text.
    pub fn text_delta(&self, agent: &AgentRef, text: &str) {
        self.broadcast(&RunEvent::TextDelta {
            agent: agent.clone(),
            text: text.to_string(),
        });
    }

    /// Streamed reasoning text.
    pub fn reasoning_delta(&self, agent: &AgentRef, text: &str) {
        self.broadcast(&RunEvent::ReasoningDelta {
            agent: agent.clone(),
            text: text.to_string(),
        });
    }

    /// Emits a non-record event.
    pub fn emit(&self, event: RunEvent) {
        if let RunEvent::Record { entry, .. } = event {
            self.record(entry.record);
            return;
        }
        if matches!(event, RunEvent::Final { .. })
            && self.inner.final_sent.swap(true, Ordering::SeqCst)
        {
            // One voice: a second final answer is a bug; keep the first and say so in the log.
            tracing::error!("a second final answer was suppressed");
            return;
        }
        self.broadcast(&event);
    }

    /// Whether the final answer was already emitted.
    pub fn final_sent(&self) -> bool {
        self.inner.final_sent.load(Ordering::SeqCst)
    }

    /// Whether any journal write failed.
    pub fn journal_failed(&self) -> bool {
        self.inner.journal_failed.load(Ordering::SeqCst)
    }

    fn broadcast(&self, event: &RunEvent) {
        for subscriber in &self.inner.subscribers {
            subscriber.on_event(event);
        }
    }
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
            }));
        }
        let warnings = std::iter::from_fn(|| rx.try_recv().ok())
            .filter(|e| matches!(e, RunEvent::Warning { .. }))
            .count();
        assert_eq!(warnings, 1);
        assert!(sink.journal_failed());
    }
}
