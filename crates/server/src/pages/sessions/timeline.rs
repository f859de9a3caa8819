//! The worker timeline of a run: one bar per worker, from its start to its end (or to the
//! last record when it has not ended), on one time axis.

use braincode_protocol::{JournalEntry, Record, Role, WorkerPhase};
use maud::{Markup, html};

use super::S;
use crate::i18n::t;

const WIDTH: f64 = 760.0;
const LABEL: f64 = 190.0;
const ROW: f64 = 24.0;

struct Span {
    role: Role,
    phase: WorkerPhase,
    start: i64,
    end: Option<i64>,
    failed: bool,
}

fn spans(entries: &[JournalEntry]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for entry in entries {
        let (role, phase, failed) = match &entry.record {
            Record::WorkerStart(start) => {
                spans.push(Span {
                    role: start.worker,
                    phase: start.phase,
                    start: entry.timestamp,
                    end: None,
                    failed: false,
                });
                continue;
            }
            Record::WorkerEnd(end) => (end.worker, end.phase, false),
            Record::WorkerError(error) => (error.worker, error.phase, true),
            _ => continue,
        };
        if let Some(open) = spans
            .iter_mut()
            .find(|s| s.end.is_none() && s.role == role && s.phase == phase)
        {
            open.end = Some(entry.timestamp);
            open.failed = failed;
        }
    }
    spans
}

pub(super) fn render(entries: &[JournalEntry]) -> Markup {
    let spans = spans(entries);
    if spans.is_empty() {
        return html! { p.muted { (t(S::NoWorkers)) } };
    }
    let t0 = entries.first().map_or(0, |e| e.timestamp);
    let t1 = entries.last().map_or(t0, |e| e.timestamp).max(t0 + 1);
    let scale = (WIDTH - LABEL - 10.0) / (t1 - t0) as f64;
    let height = spans.len() as f64 * ROW + 26.0;
    html! {
        svg.timeline #worker-timeline xmlns="http://www.w3.org/2000/svg" width=(WIDTH) height=(height) viewBox=(format!("0 0 {WIDTH} {height}")) role="img" aria-label=(t(S::TimelineLabel)) {
            @for (i, span) in spans.iter().enumerate() {
                @let y = i as f64 * ROW + 4.0;
                @let end = span.end.unwrap_or(t1);
                @let x = LABEL + (span.start - t0) as f64 * scale;
                @let w = ((end - span.start) as f64 * scale).max(2.0);
                @let class = if span.failed { "bar failed" } else if span.end.is_none() { "bar open" } else { "bar" };
                text x="4" y=(y + 15.0) { (span.role.as_str()) " (" (crate::layout::serde_name(&span.phase)) ")" }
                rect class=(class) x=(format!("{x:.1}")) y=(y + 3.0) width=(format!("{w:.1}")) height=(ROW - 8.0) rx="3" {
                    title { (span.role.as_str()) ": " (seconds(end - span.start)) @if span.end.is_none() { " " (t(S::SoFar)) } }
                }
            }
            text.axis x=(LABEL) y=(height - 4.0) { "0 s" }
            text.axis x=(WIDTH - 60.0) y=(height - 4.0) { (seconds(t1 - t0)) }
        }
    }
}

fn seconds(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}
