//! `braincode sessions show`: one session as a conversation, each request with its whole
//! answer.
//!
//! The journal is read front to back and its runs folded with the run fold
//! ([`fold_runs`]), the one way records become a report: each `run_start` begins a run
//! (a resumed run has its own, with the run id of the run it resumes).

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;

use braincode_config::journal::{ScanReport, scan_journal};
use braincode_config::{Home, resolve_session};
use braincode_protocol::secrets::redact_secrets;
use braincode_protocol::{BrainRef, FinalStatus, JournalEntry, Record, WorkerPhase};
use braincode_session::fold::{RunState, fold_runs};
use serde::{Serialize, Serializer};

use super::{ShowArgs, journal_check, local_time};

/// What an interrupted run shows instead of an answer.
const INTERRUPTED: &str = "(interrupted: no answer)";

/// How a run of the session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// With this status (its terminal record was journaled).
    Ended(FinalStatus),
    /// No terminal record: the process stopped before the run answered.
    Interrupted,
}

impl Outcome {
    const fn as_str(self) -> &'static str {
        match self {
            Outcome::Ended(status) => status.as_str(),
            Outcome::Interrupted => "interrupted",
        }
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One run of the session, as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConversationRun {
    /// 1-based position of the run in the session.
    run_index: usize,
    /// Journal line of the run's `run_start` (1-based).
    line: usize,
    /// When the run started, epoch milliseconds (0 when the record has no time).
    started_at: i64,
    /// The request as journaled (clipped when huge).
    prompt: String,
    /// The Brain that ran it, when its `run_start` names one.
    brain: Option<BrainRef>,
    /// The model of the primary agent (the one that answered, when known).
    model: Option<String>,
    /// How the run ended.
    status: Outcome,
    /// The final answer; `None` when the run failed or was interrupted.
    answer: Option<String>,
    /// Why the run failed or was cancelled.
    error: Option<String>,
    /// When the run's last record was written, epoch milliseconds (finished runs only).
    ended_at: Option<i64>,
    /// Wall time of the run (finished runs only).
    duration_ms: Option<u64>,
    /// The `runIndex` of the earlier run this one resumes (same run id).
    #[serde(skip_serializing_if = "Option::is_none")]
    resume_of: Option<usize>,
}

/// Prints the session's runs (as text, or with `--json` as an array), and on stderr a
/// warning for each journal line that could not be read.
pub(super) fn show(home: &Home, args: &ShowArgs) -> anyhow::Result<ExitCode> {
    let id = resolve_session(home, &args.id)?;
    let path = home.session_path(&id);
    let mut entries = Vec::new();
    let mut start_lines = Vec::new();
    let problems = scan_journal(&path, |line, entry| {
        if matches!(entry.record, Record::RunStart(_)) {
            start_lines.push(line);
        }
        entries.push(entry);
        ControlFlow::Continue(())
    })?;
    warn_problems(&path, &problems);
    let runs = conversation_runs(id.as_str(), &entries, &start_lines);
    if args.json {
        let json = serde_json::to_string_pretty(&runs)?;
        println!("{}", redact_secrets(&json));
        if args.verify {
            eprint!("{}", journal_check(&path, &problems));
        }
        return Ok(ExitCode::SUCCESS);
    }
    // A request or answer can quote a credential of this environment; none is printed.
    print!(
        "{}",
        redact_secrets(&format_conversation(id.as_str(), &runs))
    );
    if args.verify {
        println!();
        print!("{}", journal_check(&path, &problems));
    }
    Ok(ExitCode::SUCCESS)
}

/// The session's runs, folded from its records. `start_lines` are the journal lines of the
/// `run_start` records, in order (one per run of [`fold_runs`]).
fn conversation_runs(
    session: &str,
    entries: &[JournalEntry],
    start_lines: &[usize],
) -> Vec<ConversationRun> {
    let states = fold_runs(session, entries);
    states
        .iter()
        .enumerate()
        .map(|(index, state)| {
            let resume_of = state.run_id().and_then(|run_id| {
                states[..index]
                    .iter()
                    .rposition(|earlier| earlier.run_id() == Some(run_id))
                    .map(|earlier| earlier + 1)
            });
            conversation_run(
                index + 1,
                start_lines.get(index).copied().unwrap_or(0),
                state,
                resume_of,
            )
        })
        .collect()
}

fn conversation_run(
    run_index: usize,
    line: usize,
    state: &RunState,
    resume_of: Option<usize>,
) -> ConversationRun {
    let report = state.report();
    let finished = state.is_finished();
    let (status, answer, error) = if finished {
        // A `run_end` leaves the report without error; a closing `run_error` sets one.
        let answer = report.error.is_none().then_some(report.model_summary);
        let error = report.error.filter(|e| !e.trim().is_empty());
        (Outcome::Ended(report.status), answer, error)
    } else {
        (Outcome::Interrupted, None, None)
    };
    ConversationRun {
        run_index,
        line,
        started_at: state.started_at().unwrap_or(0),
        prompt: report.task,
        brain: state.brain().cloned(),
        model: primary_model(state),
        status,
        answer,
        error,
        ended_at: state.last_at().filter(|_| finished),
        duration_ms: report.metrics.map(|m| m.duration_ms).filter(|_| finished),
        resume_of,
    }
}

/// The model of the latest primary worker: the one that answered, else its latest attempt's.
fn primary_model(state: &RunState) -> Option<String> {
    state
        .workers()
        .iter()
        .rev()
        .filter(|w| w.phase == WorkerPhase::Primary)
        .find_map(|w| w.result_model.clone().or_else(|| w.model.clone()))
}

/// One warning per unreadable or malformed line (by line number) and for a torn last line.
fn warn_problems(path: &Path, problems: &ScanReport) {
    let kinds = [
        (
            "skipped line",
            &problems.skipped,
            problems.skipped_count,
            "unreadable lines",
        ),
        (
            "line",
            &problems.malformed,
            problems.malformed_count,
            "malformed records",
        ),
    ];
    for (label, listed, count, more) in kinds {
        for line in listed {
            eprintln!(
                "warning: {label} {} of {}: {}",
                line.line,
                path.display(),
                line.reason
            );
        }
        if count > listed.len() {
            eprintln!("warning: … and {} more {more}", count - listed.len());
        }
    }
    if problems.torn_tail {
        eprintln!(
            "warning: the last line of {} is cut off (a writer stopped mid-line); it was skipped",
            path.display()
        );
    }
}

/// The session as text: a header, then per run a title line, the request quoted with `> `,
/// and the answer in full (or the error, or the interruption).
fn format_conversation(id: &str, runs: &[ConversationRun]) -> String {
    let mut out = String::new();
    // The short id first: it is what `--session`, `--resume` and `@@` are given.
    let name = match braincode_protocol::short_form(id) {
        short if short == id => id.to_string(),
        short => format!("{short} ({id})"),
    };
    if runs.is_empty() {
        let _ = writeln!(out, "Session {name} has no runs yet.");
        return out;
    }
    let _ = writeln!(
        out,
        "Session {name} · {} run{}",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    for run in runs {
        out.push('\n');
        let _ = writeln!(out, "{}", title(run));
        for line in run.prompt.trim_end().lines() {
            let _ = writeln!(out, "> {line}");
        }
        out.push('\n');
        let body = match (&run.answer, &run.error, run.status) {
            (Some(answer), _, _) => answer.trim_end().to_string(),
            (None, _, Outcome::Interrupted) => INTERRUPTED.to_string(),
            (None, Some(error), status) => format!("{}: {}", status.as_str(), error.trim_end()),
            (None, None, status) => format!("({}: no answer)", status.as_str()),
        };
        let _ = writeln!(out, "{body}");
    }
    out
}

/// `── Run 2 (resume of run 1) · 2026-11-30 10:12 · brain Test brain · model test/backend ·
/// answered · 1.2s`
fn title(run: &ConversationRun) -> String {
    let mut head = format!("── Run {}", run.run_index);
    if let Some(earlier) = run.resume_of {
        let _ = write!(head, " (resume of run {earlier})");
    }
    let mut parts = vec![head, local_time(run.started_at)];
    if let Some(brain) = &run.brain {
        parts.push(format!("brain {}", brain.name));
    }
    if let Some(model) = &run.model {
        parts.push(format!("model {model}"));
    }
    parts.push(run.status.as_str().to_string());
    if let Some(ms) = run.duration_ms {
        parts.push(format!("{:.1}s", ms as f64 / 1_000.0));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn entry(timestamp: i64, value: Value) -> JournalEntry {
        let mut value = value;
        value["timestamp"] = json!(timestamp);
        let entry: JournalEntry = serde_json::from_value(value).unwrap();
        assert!(!entry.record.is_malformed_known(), "{entry:?}");
        entry
    }

    /// The runs of `entries`, each record on its own line (1-based).
    fn runs(entries: &[JournalEntry]) -> Vec<ConversationRun> {
        let lines: Vec<usize> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.record, Record::RunStart(_)))
            .map(|(i, _)| i + 1)
            .collect();
        conversation_runs("s", entries, &lines)
    }

    fn primary_start(timestamp: i64, model: &str) -> JournalEntry {
        entry(
            timestamp,
            json!({"type": "worker_start", "phase": "primary", "worker": "backend",
                   "goal": "g", "model": model, "agentSessionId": "primary-1", "attempt": 1}),
        )
    }

    #[test]
    fn answers_errors_and_interruptions_read_in_order() {
        let entries = [
            entry(
                1_000,
                json!({"type": "run_start", "prompt": "fix it\nplease", "runId": "r1",
                       "brain": {"id": "test", "name": "Test brain", "mode": "auto"}}),
            ),
            primary_start(1_010, "test/backend"),
            entry(
                1_100,
                json!({"type": "worker_end", "phase": "primary", "worker": "backend",
                       "attempt": 1}),
            ),
            entry(
                1_250,
                json!({"type": "run_end", "summary": "line one\nline two\n",
                       "status": "answered", "durationMs": 1_250}),
            ),
            entry(
                2_000,
                json!({"type": "run_start", "prompt": "again", "runId": "r2"}),
            ),
            entry(
                2_060,
                json!({"type": "run_error", "error": "cancelled by Ctrl-C", "kind": "aborted",
                       "willFallback": false}),
            ),
            entry(
                3_000,
                json!({"type": "run_start", "prompt": "once more", "runId": "r3"}),
            ),
            primary_start(3_010, "test/other"),
        ];
        let runs = runs(&entries);
        assert_eq!(runs.len(), 3);
        assert_eq!((runs[0].line, runs[1].line, runs[2].line), (1, 5, 7));
        assert_eq!(runs[0].model.as_deref(), Some("test/backend"));
        assert_eq!(runs[1].duration_ms, Some(60));
        assert_eq!(runs[1].ended_at, Some(2_060));
        assert_eq!(runs[2].status, Outcome::Interrupted);
        assert_eq!(runs[2].model.as_deref(), Some("test/other"));
        assert_eq!(
            (runs[2].answer.as_ref(), runs[2].error.as_ref()),
            (None, None)
        );
        assert_eq!((runs[2].ended_at, runs[2].duration_ms), (None, None));

        let text = format_conversation("s1", &runs);
        assert!(text.starts_with("Session s1 · 3 runs\n"), "{text}");
        assert!(
            text.contains(
                "brain Test brain · model test/backend · answered · 1.2s\n> fix it\n> please\n\nline one\nline two\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("> again\n\naborted: cancelled by Ctrl-C\n"),
            "{text}"
        );
        assert!(
            text.contains("interrupted\n> once more\n\n(interrupted: no answer)\n"),
            "{text}"
        );
        let ordered = text.find("── Run 1").unwrap() < text.find("── Run 2").unwrap()
            && text.find("── Run 2").unwrap() < text.find("── Run 3").unwrap();
        assert!(ordered, "{text}");

        let json = serde_json::to_value(&runs).unwrap();
        assert_eq!(json[0]["runIndex"], 1);
        assert_eq!(json[0]["line"], 1);
        assert_eq!(json[0]["startedAt"], 1_000);
        assert_eq!(json[0]["answer"], "line one\nline two\n");
        assert_eq!(json[0]["durationMs"], 1_250);
        assert_eq!(json[0]["brain"]["name"], "Test brain");
        assert_eq!(json[1]["status"], "aborted");
        assert_eq!(json[1]["answer"], Value::Null);
        assert_eq!(json[1]["error"], "cancelled by Ctrl-C");
        assert_eq!(json[2]["status"], "interrupted");
        assert!(json[0].get("resumeOf").is_none(), "{json}");
    }

    #[test]
    fn a_resumed_run_is_its_own_entry_and_names_the_run_it_resumes() {
        let entries = [
            entry(
                1_000,
                json!({"type": "run_start", "prompt": "long job", "runId": "r1"}),
            ),
            primary_start(1_010, "test/backend"),
            entry(
                2_000,
                json!({"type": "run_start", "prompt": "other", "runId": "r2"}),
            ),
            entry(
                2_100,
                json!({"type": "run_end", "summary": "done", "status": "answered"}),
            ),
            entry(
                3_000,
                json!({"type": "run_start", "prompt": "long job", "runId": "r1",
                       "resumeOf": "r1"}),
            ),
            entry(
                3_500,
                json!({"type": "run_end", "summary": "finished", "status": "answered"}),
            ),
        ];
        let runs = runs(&entries);
        let resumes: Vec<Option<usize>> = runs.iter().map(|r| r.resume_of).collect();
        assert_eq!(resumes, [None, None, Some(1)]);
        assert_eq!(runs[0].status, Outcome::Interrupted);
        assert_eq!(runs[2].answer.as_deref(), Some("finished"));
        let text = format_conversation("s", &runs);
        assert!(text.contains("── Run 3 (resume of run 1) · "), "{text}");
        assert_eq!(serde_json::to_value(&runs[2]).unwrap()["resumeOf"], 1);
    }

    #[test]
    fn failed_runs_without_an_error_text_say_so() {
        let entries = [
            entry(1, json!({"type": "run_start", "prompt": "a"})),
            entry(
                2,
                json!({"type": "run_error", "error": "", "kind": "failed", "status": "failed"}),
            ),
        ];
        let runs = runs(&entries);
        assert_eq!(runs[0].error, None);
        assert!(
            format_conversation("s", &runs).contains("> a\n\n(failed: no answer)\n"),
            "{runs:?}"
        );
    }

    #[test]
    fn records_before_the_first_run_are_not_a_run() {
        let entries = [
            entry(1, json!({"type": "run_end", "summary": "orphan"})),
            entry(2, json!({"type": "run_start", "prompt": "x"})),
            entry(3, json!({"type": "run_end", "summary": "ok"})),
        ];
        let runs = runs(&entries);
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].line, 2);
        assert_eq!(runs[0].answer.as_deref(), Some("ok"));
        assert_eq!(runs[0].status, Outcome::Ended(FinalStatus::Answered));
    }

    #[test]
    fn an_empty_session_says_so() {
        assert_eq!(
            format_conversation("s", &[]),
            "Session s has no runs yet.\n"
        );
    }
}
