//! The human run report (`braincode run` without `--json`).

use std::fmt::Write as _;

use braincode_protocol::{
    FinalReport, FinalStatus, Phase, ReportWorker, RoutingSource, TaskStatus, WorkerPhase,
};
use braincode_session::report::REVIEW_SKIPPED_PREFIX;

/// Compacts a count: 999, 1.2k, 12k, 1.5M.
pub fn compact(count: u64) -> String {
    match count {
        0..=999 => count.to_string(),
        1_000..=9_999 => format!("{:.1}k", count as f64 / 1_000.0),
        10_000..=999_999 => format!("{}k", count / 1_000),
        1_000_000..=9_999_999 => format!("{:.1}M", count as f64 / 1_000_000.0),
        _ => format!("{}M", count / 1_000_000),
    }
}

fn percent(value: f64) -> String {
    format!("{:.0}%", (value * 100.0).clamp(0.0, 100.0))
}

/// Whether the run got as far as a plan (every plan has at least its primary worker).
fn was_planned(report: &FinalReport) -> bool {
    !report.routing.workers.is_empty()
}

/// Whether the run stopped before the step that summarises the patch (which follows the
/// primary's answer): then a missing patch says nothing about git.
fn stopped_before_patch(report: &FinalReport) -> bool {
    match report.status {
        FinalStatus::Failed
        | FinalStatus::Aborted
        | FinalStatus::NeedsClarification
        | FinalStatus::BudgetExceeded => true,
        FinalStatus::Blocked => report.review.is_none(),
        _ => false,
    }
}

/// Why a worker that did not complete did not: the error of its todo, without the
/// "<role> worker failed: " lead the todo repeats.
fn worker_reason(report: &FinalReport, worker: &ReportWorker) -> Option<String> {
    let todo = report.todos.iter().find(|t| {
        t.role == worker.role && matches!(t.status, TaskStatus::Failed | TaskStatus::Blocked)
    })?;
    let error = todo.error.as_deref()?.trim();
    let role = worker.role.as_str();
    let reason = [
        format!("{role} worker failed: "),
        format!("{role} worker "),
        "blocked: ".to_string(),
    ]
    .iter()
    .find_map(|lead| error.strip_prefix(lead.as_str()))
    .unwrap_or(error);
    Some(braincode_context::clip_chars(reason.trim(), 100).replace('\n', " "))
}

fn patch_line(report: &FinalReport) -> String {
    match &report.patch {
        Some(patch) if patch.has_patch_activity => {
            // The totals are the sums of the per-file lines listed under this one (the run's
            // own changes), never git's totals of the whole tree.
            let files = patch.changed_files.len();
            let counted: Vec<(u64, u64)> = (patch.changed_files.iter())
                .filter_map(|file| Some((file.added?, file.removed?)))
                .collect();
            let added: u64 = counted.iter().map(|(added, _)| added).sum();
            let removed: u64 = counted.iter().map(|(_, removed)| removed).sum();
            match counted.len() {
                0 => format!("{files} file(s)"),
                n if n == files => format!("{files} file(s), +{added} -{removed}"),
                n => format!("{files} file(s), +{added} -{removed} in the {n} counted"),
            }
        }
        Some(_) => "no patch activity".to_string(),
        None if stopped_before_patch(report) => {
            "not computed (the run stopped before changes were summarised)".to_string()
        }
        None if report
            .warnings
            .iter()
            .any(|w| w.contains("runs its own git only inside the OS sandbox")) =>
        {
            "not computed (Braincode runs no git without an OS sandbox)".to_string()
        }
        None => "not a git repository (changes not tracked)".to_string(),
    }
}

/// Most changed files listed under the `Patch` line.
const MAX_LISTED_FILES: usize = 20;

/// One line per file the run changed: status, path and, when the ledger counted them, the
/// lines added and removed.
fn patch_files(report: &FinalReport) -> Vec<String> {
    let Some(patch) = report.patch.as_ref().filter(|p| p.has_patch_activity) else {
        return Vec::new();
    };
    let mut lines: Vec<String> = patch
        .changed_files
        .iter()
        .take(MAX_LISTED_FILES)
        .map(|file| {
            let mut text = format!("{:>2} {}", file.status.trim(), file.path);
            if let (Some(added), Some(removed)) = (file.added, file.removed) {
                let _ = write!(text, " +{added} -{removed}");
            }
            text
        })
        .collect();
    if let Some(more) = patch.changed_files.len().checked_sub(MAX_LISTED_FILES)
        && more > 0
    {
        lines.push(format!("… and {more} more"));
    }
    lines
}

fn review_line(report: &FinalReport) -> String {
    if let Some(review) = &report.review {
        return match review.confidence {
            Some(c) => format!("{} ({})", review.decision.as_str(), percent(c)),
            None => review.decision.as_str().to_string(),
        };
    }
    let skipped = report
        .warnings
        .iter()
        .find_map(|w| w.strip_prefix(REVIEW_SKIPPED_PREFIX));
    match skipped {
        Some(why) => format!("not done — {why}; nothing was approved or rejected"),
        None => "not run".to_string(),
    }
}

/// Renders the report as fixed-order labelled lines, then the answer. A run that stopped
/// before planning shows only what is true of it: status, task, session, warnings and the
/// error.
pub fn format_report(report: &FinalReport) -> String {
    let mut out = String::new();
    let line = |out: &mut String, label: &str, value: &str| {
        let _ = writeln!(out, "{:<9} {value}", format!("{label}:"));
    };
    line(&mut out, "Status", report.status.as_str());
    line(
        &mut out,
        "Task",
        &braincode_context::clip_chars(report.task.trim(), 120).replace('\n', " "),
    );
    let planned = was_planned(report);
    if !report.brain.id.is_empty() {
        line(
            &mut out,
            "Brain",
            &format!(
                "{} ({}) · {}",
                report.brain.name, report.brain.id, report.brain.mode
            ),
        );
    }

    if planned {
        let routing = &report.routing;
        let mut route = format!("{} → {}", routing.source.as_str(), routing.primary_role);
        if let Some(confidence) = routing.confidence {
            let _ = write!(route, " · confidence {}", percent(confidence));
        }
        if let Some(reason) = &routing.fallback_reason {
            let _ = write!(route, " (router not used: {reason})");
        } else if routing.source == RoutingSource::Heuristic
            && let Some(reason) = &routing.reason
        {
            let _ = write!(route, " ({reason})");
        }
        line(&mut out, "Routing", &route);

        let workers: Vec<String> = routing
            .workers
            .iter()
            .map(|w| {
                let status = w.status.as_deref().unwrap_or("not run");
                let mut text = format!("{} {status}", w.role);
                if matches!(status, "failed" | "blocked")
                    && w.phase != WorkerPhase::Review
                    && let Some(reason) = worker_reason(report, w)
                {
                    let _ = write!(text, " ({reason})");
                }
                if let Some(model) = &w.model {
                    let _ = write!(text, " [{model}]");
                }
                text
            })
            .collect();
        line(&mut out, "Workers", &workers.join(" · "));
        line(&mut out, "Patch", &patch_line(report));
        for file in patch_files(report) {
            let _ = writeln!(out, "{:<9} {file}", "");
        }
        for merge in &report.merges {
            let mut text = format!(
                "{} writer ({}) {}",
                merge.role,
                merge.context_id,
                merge.outcome.as_str()
            );
            if let Some(reason) = &merge.reason {
                let _ = write!(text, ": {reason}");
            }
            if let Some(patch) = &merge.patch_path {
                let _ = write!(text, " (its patch: {patch})");
            }
            if let Some(checks) = merge.checks_phrase() {
                let _ = write!(text, "; its {checks} in its worktree");
            }
            line(&mut out, "Merge", &text);
        }

        if let Some(checks) = &report.checks {
            line(
                &mut out,
                "Checks",
                &checks_line(checks, report.fix_iterations),
            );
        }
        line(&mut out, "Review", &review_line(report));

        if let Some(metrics) = &report.metrics {
            let tokens = &metrics.tokens;
            let mut usage = format!("{} tokens", compact(tokens.total.total));
            let phases: Vec<String> = Phase::ALL
                .iter()
                .filter_map(|phase| {
                    let u = tokens.by_phase.get(phase.as_str())?;
                    (u.total > 0).then(|| format!("{} {}", phase.as_str(), compact(u.total)))
                })
                .collect();
            if !phases.is_empty() {
                let _ = write!(usage, " ({})", phases.join(" · "));
            }
            if let Some(cost) = braincode_session::report::cost_usd(tokens) {
                let _ = write!(usage, " · {}", braincode_session::report::fmt_cost(cost));
            }
            let _ = write!(usage, " · {} tool call(s)", metrics.tool_calls.total);
            if metrics.tool_calls.failed > 0 {
                let _ = write!(usage, ", {} failed", metrics.tool_calls.failed);
            }
            let _ = write!(usage, " · {:.1}s", metrics.duration_ms as f64 / 1_000.0);
            line(&mut out, "Usage", &usage);
        }
    }
    line(&mut out, "Session", &report.session_id);
    if let Some(hint) = next_step(report, planned) {
        line(&mut out, hint.0, &hint.1);
    }
    // The router's fallback reason is on the Routing line: not said twice.
    let routed_reason = report
        .routing
        .fallback_reason
        .as_deref()
        .filter(|reason| planned && !reason.is_empty());
    for warning in &report.warnings {
        if routed_reason.is_some_and(|reason| warning.contains(reason)) {
            continue;
        }
        line(&mut out, "Warning", warning);
    }
    if let Some(error) = &report.error {
        line(&mut out, "Error", error);
    }
    let mut asked = None;
    if let Some(clarification) = &report.clarification
        && clarification.required
    {
        let _ = writeln!(out, "\nQuestion: {}", clarification.question);
        for option in &clarification.options {
            let _ = writeln!(out, "  - {}: {}", option.label, option.description);
        }
        asked = Some(clarification.question.trim());
    }
    // A run that never planned has nothing to say beyond its error; the answer of a run that
    // stopped to ask is the question just printed, not said twice.
    let answer = report.model_summary.trim();
    if (planned || report.error.is_none()) && asked != Some(answer) {
        let _ = writeln!(out, "\n{answer}");
    }
    out
}

/// What to type next, with the session's short id: take a cancelled run up again, or go on
/// with the conversation (nothing for a run that could not start: its error says what to do).
fn next_step(report: &FinalReport, planned: bool) -> Option<(&'static str, String)> {
    let short = braincode_protocol::short_form(&report.session_id);
    if short.is_empty() {
        return None;
    }
    match report.status {
        FinalStatus::Aborted => Some(("Resume", format!("braincode run --resume {short}"))),
        FinalStatus::Failed if !planned => None,
        _ => Some((
            "Continue",
            format!("braincode run --session {short} \"<next request>\""),
        )),
    }
}

/// `failed: cargo check passed, cargo test failed (exit 101) · backend change, risk medium ·
/// 1 fix pass`, or a skip with its reason.
fn checks_line(checks: &braincode_protocol::CheckSummary, fix_passes: Option<u32>) -> String {
    let status = format!("{:?}", checks.status).to_lowercase();
    let mut parts = Vec::new();
    if checks.results.is_empty() {
        parts.push(match &checks.reason {
            Some(reason) => format!("{status} ({reason})"),
            None => status,
        });
    } else {
        let results: Vec<String> = checks
            .results
            .iter()
            .map(|r| {
                let mut text = format!("{} {}", r.name, if r.passed { "passed" } else { "failed" });
                if r.timed_out {
                    text.push_str(" (timed out)");
                } else if let (false, Some(code)) = (r.passed, r.exit_code) {
                    let _ = write!(text, " (exit {code})");
                }
                text
            })
            .collect();
        parts.push(format!("{status}: {}", results.join(", ")));
    }
    if let (Some(kind), Some(tier)) = (&checks.patch_kind, &checks.risk_tier) {
        parts.push(format!("{kind} change, risk {tier}"));
    }
    if let Some(passes) = fix_passes.filter(|n| *n > 0) {
        parts.push(format!(
            "{passes} fix pass{}",
            if passes == 1 { "" } else { "es" }
        ));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changed(path: &str, counts: Option<(u64, u64)>) -> braincode_protocol::ChangedFile {
        braincode_protocol::ChangedFile {
            path: path.into(),
            status: " M".into(),
            added: counts.map(|(added, _)| added),
            removed: counts.map(|(_, removed)| removed),
        }
    }

    #[test]
    fn each_writer_merge_has_its_line_with_why_and_its_saved_patch() {
        let report: FinalReport = serde_json::from_value(serde_json::json!({
            "version": 1, "status": "answered", "task": "t", "sessionId": "s",
            "brain": {"id": "b", "name": "B", "mode": "auto"},
            "routing": {"source": "heuristic", "primaryRole": "backend", "reason": "r",
                        "workers": [{"role": "backend", "phase": "primary", "status": "completed"}]},
            "todos": [], "modelSummary": "done", "warnings": [],
            "merges": [
                {"role": "frontend", "contextId": "t-1", "worktree": "/w/1", "outcome": "clean",
                 "checks": {"status": "failed", "results": [
                    {"name": "npm test", "command": "npm test", "passed": false, "durationMs": 9},
                    {"name": "tsc", "command": "tsc", "passed": true, "durationMs": 4}]}},
                {"role": "dba", "contextId": "t-2", "worktree": "/w/2", "outcome": "conflict",
                 "reason": "db.sql changed on both sides in the same place",
                 "patchPath": "/h/writers/r/t-2.patch"}
            ]
        }))
        .unwrap();
        let text = format_report(&report);
        assert!(
            text.contains(
                "frontend writer (t-1) clean; its checks failed: npm test in its worktree\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("dba writer (t-2) conflict: db.sql changed on both sides in the same place (its patch: /h/writers/r/t-2.patch)"),
            "{text}"
        );
    }

    #[test]
    fn the_patch_totals_are_the_sums_of_its_file_lines() {
        let mut report: FinalReport = serde_json::from_value(serde_json::json!({
            "version": 1, "status": "answered", "task": "t", "sessionId": "s",
            "brain": {"id": "b", "name": "B", "mode": "auto"},
            "routing": {"source": "heuristic", "primaryRole": "rush", "reason": "r", "workers": []},
            "todos": [], "modelSummary": "done", "warnings": []
        }))
        .unwrap();
        let patch =
            |files: Vec<braincode_protocol::ChangedFile>| braincode_protocol::PatchSummary {
                has_patch_activity: true,
                changed_files: files,
                pre_existing_changed_files: Vec::new(),
                // Git's totals of the whole tree (a file dirty before the run included).
                diff_stats: Some(braincode_protocol::DiffStats {
                    files: 2,
                    insertions: 1,
                    deletions: 1,
                    untracked: 1,
                }),
            };
        report.patch = Some(patch(vec![
            changed("src/main.rs", Some((2, 2))),
            changed("Cargo.lock", Some((7, 0))),
        ]));
        assert_eq!(patch_line(&report), "2 file(s), +9 -2");
        report.patch = Some(patch(vec![
            changed("src/main.rs", Some((2, 2))),
            changed("big.bin", None),
        ]));
        assert_eq!(patch_line(&report), "2 file(s), +2 -2 in the 1 counted");
        report.patch = Some(patch(vec![changed("big.bin", None)]));
        assert_eq!(patch_line(&report), "1 file(s)");
    }

    #[test]
    fn counts_are_compacted() {
        assert_eq!(compact(999), "999");
        assert_eq!(compact(1_234), "1.2k");
        assert_eq!(compact(12_345), "12k");
        assert_eq!(compact(1_500_000), "1.5M");
        assert_eq!(compact(25_000_000), "25M");
    }
}
