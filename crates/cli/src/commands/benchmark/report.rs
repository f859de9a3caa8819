//! The execution benchmark's report: per task, per brain, and the ranking a user picks a
//! brain from (most tasks done, then least cost, tokens and time), as Markdown and JSON.

use std::fmt::Write as _;
use std::path::PathBuf;

use braincode_config::Home;
use serde::Serialize;

use super::exec::{ExecMode, TaskRun};

/// One brain's totals over the tasks.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrainTotals {
    pub brain: String,
    pub tasks: usize,
    pub succeeded: usize,
    pub tokens: u64,
    pub cost_usd: f64,
    pub duration_ms: u64,
    pub tool_calls: u64,
    pub fallbacks: u64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub mode: ExecMode,
    /// Brains, best first.
    pub ranking: Vec<BrainTotals>,
    pub runs: Vec<TaskRun>,
}

impl Summary {
    /// Totals per brain, ranked: most tasks done, then least cost, tokens and time.
    pub fn of(runs: &[TaskRun], brains: &[String], mode: ExecMode) -> Summary {
        let mut ranking: Vec<BrainTotals> = brains
            .iter()
            .map(|brain| {
                let mine: Vec<&TaskRun> = runs.iter().filter(|r| &r.brain == brain).collect();
                BrainTotals {
                    brain: brain.clone(),
                    tasks: mine.len(),
                    succeeded: mine.iter().filter(|r| r.success).count(),
                    tokens: mine.iter().map(|r| r.tokens).sum(),
                    cost_usd: mine.iter().map(|r| r.cost_usd).sum(),
                    duration_ms: mine.iter().map(|r| r.duration_ms).sum(),
                    tool_calls: mine.iter().map(|r| r.tool_calls).sum(),
                    fallbacks: mine.iter().map(|r| r.fallbacks).sum(),
                }
            })
            .collect();
        ranking.sort_by(|a, b| {
            b.succeeded
                .cmp(&a.succeeded)
                .then(a.cost_usd.total_cmp(&b.cost_usd))
                .then(a.tokens.cmp(&b.tokens))
                .then(a.duration_ms.cmp(&b.duration_ms))
        });
        Summary {
            mode,
            ranking,
            runs: runs.to_vec(),
        }
    }
}

fn cost(usd: f64) -> String {
    if usd == 0.0 {
        "$0".to_string()
    } else {
        braincode_session::report::fmt_cost_fixed(usd)
    }
}

/// The report as Markdown (also what the terminal shows).
pub fn markdown(summary: &Summary) -> String {
    let mut out = String::new();
    let mode = match summary.mode {
        ExecMode::Mock => "mock (scripted model; checks run for real)",
        ExecMode::Live => "live (the brain's own models)",
    };
    let _ = writeln!(out, "# Execution benchmark\n\nMode: {mode}\n");
    let _ = writeln!(
        out,
        "| task | brain | result | checks | review | changed | +/- | tools | tokens | primary share | cost | time |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for run in &summary.runs {
        let result = if run.success {
            "ok".to_string()
        } else {
            let failed: Vec<String> = run
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{}: expected [{}], got [{}]", c.name, c.expected, c.got))
                .collect();
            format!("FAIL {}", failed.join("; "))
        };
        let share = run
            .brain_to_primary_ratio
            .map_or_else(|| "—".to_string(), |r| format!("{:.0}%", 100.0 / r));
        let _ = writeln!(
            out,
            "| {} | {} | {result} | {} | {} | {} | +{}/-{} | {} | {} | {share} | {} | {:.1} s |",
            run.task,
            run.brain,
            run.checks_status,
            run.review_decision,
            run.changed_files.len(),
            run.insertions,
            run.deletions,
            run.tool_calls,
            run.tokens,
            cost(run.cost_usd),
            run.duration_ms as f64 / 1000.0
        );
    }
    if summary.ranking.len() > 1 {
        let _ = writeln!(out, "\n## Brains side by side (best first)\n");
        let _ = writeln!(
            out,
            "| brain | tasks done | tokens | cost | time | tool calls | fallbacks |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|");
        for brain in &summary.ranking {
            let _ = writeln!(
                out,
                "| {} | {}/{} | {} | {} | {:.1} s | {} | {} |",
                brain.brain,
                brain.succeeded,
                brain.tasks,
                brain.tokens,
                cost(brain.cost_usd),
                brain.duration_ms as f64 / 1000.0,
                brain.tool_calls,
                brain.fallbacks
            );
        }
        if let [best, other, ..] = summary.ranking.as_slice() {
            let verdict = if best.succeeded > other.succeeded {
                format!(
                    "{} did more of the tasks ({} vs {})",
                    best.brain, best.succeeded, other.succeeded
                )
            } else {
                format!(
                    "{} did the same tasks for less: {} vs {}, {} vs {} tokens",
                    best.brain,
                    cost(best.cost_usd),
                    cost(other.cost_usd),
                    best.tokens,
                    other.tokens
                )
            };
            let _ = writeln!(out, "\n{verdict}.");
        }
    }
    out
}

/// Writes the report under `<home>/benchmarks/reports/` as Markdown and JSON.
pub fn write(home: &Home, summary: &Summary) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = home.root().join("benchmarks").join("reports");
    std::fs::create_dir_all(&dir)?;
    // The same sortable, random-suffixed stamp as a session id: two benchmarks finishing in
    // the same second each keep their own report.
    let stamp = braincode_runtime::new_session_id();
    let md = dir.join(format!("{stamp}-exec.md"));
    let json = dir.join(format!("{stamp}-exec.json"));
    braincode_config::write_bytes_atomic(&md, markdown(summary).as_bytes(), 0o644)?;
    braincode_config::write_json_atomic(&json, summary, 0o644)?;
    Ok((md, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_written_in_the_same_second_each_keep_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().to_path_buf());
        let summary = Summary::of(&[], &["brain".to_string()], ExecMode::Mock);
        let written: Vec<(PathBuf, PathBuf)> =
            (0..5).map(|_| write(&home, &summary).unwrap()).collect();
        let files = std::fs::read_dir(dir.path().join("benchmarks/reports"))
            .unwrap()
            .count();
        assert_eq!(files, 10, "{written:?}");
    }
}
