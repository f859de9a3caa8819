//! `braincode bench snapshot`: how long an `@@session` snapshot of a large journal takes and
//! how much memory it needs.
//!
//! A synthetic journal of realistic mixed records is streamed to a temporary home (so the
//! generator itself stays small), then a child process (`--child`) builds the snapshot several
//! times and reports each duration and its own peak RSS, so the generator's memory does not
//! count.

use super::proc_status_kib;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::Context;
use braincode_config::Home;
use braincode_config::journal::{SnapshotOptions, session_snapshot};
use braincode_protocol::SessionId;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Arguments of `braincode bench snapshot`.
#[derive(Debug, clap::Args)]
pub struct SnapshotBenchArgs {
    /// Size of the synthetic journal, in MB (10^6 bytes).
    #[arg(long, default_value_t = 100)]
    pub size_mb: u64,
    /// Number of timed snapshots (the median is reported).
    #[arg(long, default_value_t = 9)]
    pub runs: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Keep the temporary home (its path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Internal: measure snapshots of the journal in this home and print JSON.
    #[arg(long, hide = true, value_name = "HOME")]
    pub child: Option<PathBuf>,
}

const SESSION: &str = "bench-snapshot";

/// What the measuring child reports.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChildReport {
    times_ms: Vec<f64>,
    rss_before_kib: Option<u64>,
    peak_rss_kib: Option<u64>,
    text_chars: usize,
    entries: usize,
    truncated: bool,
    bytes_read: u64,
}

/// Runs the benchmark.
pub fn execute(args: SnapshotBenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(home) = &args.child {
        return child(home, args.runs.max(1));
    }
    let dir = std::env::temp_dir().join(format!(
        "braincode-bench-snapshot-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = run(&args, &dir);
    if !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn run(args: &SnapshotBenchArgs, dir: &Path) -> anyhow::Result<ExitCode> {
    let home = Home::at(dir);
    let id = SessionId::new(SESSION)?;
    let path = home.session_path(&id);
    std::fs::create_dir_all(home.sessions_dir())
        .with_context(|| format!("cannot create {}", home.sessions_dir().display()))?;
    let target = args.size_mb.saturating_mul(1_000_000);
    let started = Instant::now();
    let (bytes, records) = write_synthetic_journal(&path, target)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let generation = started.elapsed();

    let exe = std::env::current_exe().context("cannot locate the braincode binary")?;
    let output = Command::new(exe)
        .args([
            "bench",
            "snapshot",
            "--runs",
            &args.runs.max(1).to_string(),
            "--child",
        ])
        .arg(dir)
        .output()
        .context("cannot start the measuring child process")?;
    if !output.status.success() {
        anyhow::bail!(
            "the measuring child failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let report: ChildReport =
        serde_json::from_slice(&output.stdout).context("the measuring child printed no report")?;
    let mut sorted = report.times_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let first = report.times_ms.first().copied().unwrap_or_default();
    let (min, max) = (sorted[0], sorted[sorted.len() - 1]);

    if args.json {
        let value = json!({
            "journalBytes": bytes,
            "journalRecords": records,
            "generationMs": generation.as_secs_f64() * 1000.0,
            "runs": report.times_ms.len(),
            "snapshotMs": {"median": median, "min": min, "max": max, "first": first, "all": report.times_ms},
            "childRssBeforeKib": report.rss_before_kib,
            "childPeakRssKib": report.peak_rss_kib,
            "snapshotChars": report.text_chars,
            "snapshotEntries": report.entries,
            "truncated": report.truncated,
            "bytesRead": report.bytes_read,
            "home": args.keep.then(|| dir.display().to_string()),
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mib = |kib: Option<u64>| {
        kib.map_or("n/a".to_string(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        })
    };
    println!("Snapshot benchmark (@@session of one large journal)");
    println!(
        "  journal:        {:.1} MB, {records} records (generated in {:.1} s, page cache warm)",
        bytes as f64 / 1e6,
        generation.as_secs_f64()
    );
    println!(
        "  snapshot time:  median {median:.2} ms over {} runs (min {min:.2}, max {max:.2}, first {first:.2})",
        report.times_ms.len()
    );
    println!(
        "  peak RSS:       {} in the measuring process ({} before the first snapshot)",
        mib(report.peak_rss_kib),
        mib(report.rss_before_kib)
    );
    println!(
        "  snapshot:       {} chars, {} records{}, {:.1} KiB read from the journal",
        report.text_chars,
        report.entries,
        if report.truncated {
            " (earlier omitted)"
        } else {
            ""
        },
        report.bytes_read as f64 / 1024.0
    );
    if args.keep {
        println!("  home kept at:   {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn child(home: &Path, runs: usize) -> anyhow::Result<ExitCode> {
    let home = Home::at(home);
    let id = SessionId::new(SESSION)?;
    let rss_before = proc_status_kib("VmRSS:");
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let snapshot = session_snapshot(&home, &id, &SnapshotOptions::default())?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        last = Some(snapshot);
    }
    let snapshot = last.context("no snapshot was taken")?;
    let report = ChildReport {
        times_ms: times,
        rss_before_kib: rss_before,
        peak_rss_kib: proc_status_kib("VmHWM:"),
        text_chars: snapshot.text.chars().count(),
        entries: snapshot.entries,
        truncated: snapshot.truncated,
        bytes_read: snapshot.bytes_read,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

/// Deterministic filler text of about `len` characters.
fn prose(seed: u64, len: usize) -> String {
    const WORDS: [&str; 16] = [
        "parser", "cache", "module", "request", "handler", "token", "session", "review", "tests",
        "schema", "config", "worker", "update", "error", "route", "patch",
    ];
    let mut out = String::with_capacity(len + 16);
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    while out.len() < len {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(WORDS[(state >> 60) as usize]);
        out.push(' ');
    }
    out
}

/// The records of one run, in the order the runtime writes them (Appendix E).
fn run_records(run: u64) -> Vec<Value> {
    let roles = ["backend", "qa", "security"];
    let mut records = vec![
        json!({"type": "hook_session_start", "eventName": "SessionStart", "matcher": "startup", "records": [], "additionalContext": []}),
        json!({"type": "token_usage", "role": "routeBrain", "phase": "router", "modelId": "openai/gpt-5.5", "provider": "openai",
            "usage": {"input": 3200, "output": 410, "cacheRead": 1200, "cacheWrite": 0, "total": 4810}}),
        json!({"type": "context_plan", "context": {"id": format!("ctx-{run}"), "layer": "brain", "goal": prose(run, 300), "progress": {"status": "running"}, "childContextIds": [], "contextRefs": []}}),
        json!({"type": "todo_plan", "todos": roles.iter().enumerate().map(|(i, r)| json!({"id": format!("todo-{:02}-{r}", i + 1), "title": prose(run + i as u64, 120), "role": r, "status": "pending"})).collect::<Vec<_>>(), "dependencies": []}),
    ];
    for (i, role) in roles.iter().enumerate() {
        let seed = run * 10 + i as u64;
        records.push(json!({"type": "agent_message", "phase": "support", "worker": role, "message": {
            "id": format!("msg-{seed}"), "from": "brain", "to": format!("agent:{role}"), "kind": "handoff",
            "payload": {"goal": prose(seed, 600), "constraints": [prose(seed + 1, 200), prose(seed + 2, 200)], "expectedResult": prose(seed + 3, 300)}}}));
        records.push(json!({"type": "worker_start", "phase": "support", "worker": role, "goal": prose(seed, 200), "model": "anthropic/claude-sonnet-4-6", "attempt": 1}));
        for t in 0..4 {
            records.push(json!({"type": "tool_execution_summary", "toolCallId": format!("call-{seed}-{t}"), "toolName": "read_file", "stage": "end",
                "phase": "support", "role": role, "resultSummary": {"truncated": true, "chars": 12000, "preview": prose(seed + t, 1400)}, "durationMs": 12}));
        }
        records.push(json!({"type": "token_usage", "role": role, "phase": "support", "modelId": "anthropic/claude-sonnet-4-6", "provider": "anthropic",
            "usage": {"input": 18000, "output": 1300, "cacheRead": 9000, "cacheWrite": 2000, "total": 30300}}));
        records.push(json!({"type": "worker_end", "phase": "support", "worker": role, "attempt": 1, "result": {
            "fromLayer": "agent", "toLayer": "brain", "handoffId": format!("todo-{:02}-{role}:handoff", i + 1), "parentId": format!("ctx-{run}"),
            "taskId": format!("todo-{:02}-{role}", i + 1), "summary": prose(seed + 7, 1500), "progress": {"status": "completed"},
            "artifacts": [], "risks": [prose(seed + 8, 150)], "nextQuestions": []}}));
    }
    records.push(json!({"type": "run_start", "prompt": prose(run, 500), "attempt": 1,
        "projectSupport": {"root": "/work/project", "agentsMd": true, "userAgentsMd": false, "hooks": 0}}));
    for t in 0..20 {
        let seed = run * 100 + t;
        records.push(json!({"type": "tool_approval_decision", "toolCallId": format!("p-{seed}"), "toolName": "edit_file", "decision": "allowed",
            "approver": "permission_policy", "phase": "primary", "role": "backend", "argsSummary": {"path": "src/lib.rs", "preview": prose(seed, 300)}}));
        records.push(json!({"type": "tool_execution_summary", "toolCallId": format!("p-{seed}"), "toolName": "edit_file", "stage": "end",
            "phase": "primary", "role": "backend", "resultSummary": {"truncated": true, "chars": 9000, "preview": prose(seed, 1500)}, "durationMs": 3}));
    }
    records.push(json!({"type": "token_usage", "role": "backend", "phase": "primary", "modelId": "anthropic/claude-sonnet-4-6", "provider": "anthropic",
        "usage": {"input": 64000, "output": 5200, "cacheRead": 40000, "cacheWrite": 3000, "total": 112200}}));
    records.push(json!({"type": "check_summary", "status": if run.is_multiple_of(3) { "failed" } else { "passed" }, "reason": prose(run, 120), "selectedScripts": ["test"],
        "results": [{"name": "test", "command": "cargo test", "passed": !run.is_multiple_of(3), "exitCode": if run.is_multiple_of(3) { 101 } else { 0 }, "durationMs": 4200, "outputTail": prose(run, 2000)}]}));
    records.push(json!({"type": "review_decision", "decision": "approved", "confidence": 0.8, "rationale": prose(run + 5, 400), "findings": [], "requiredChanges": [], "blockingIssues": [], "residualRisks": [prose(run, 100)]}));
    records.push(json!({"type": "todo_update", "phase": "primary", "role": "backend", "status": "completed", "todoIds": ["todo-01-backend"], "todos": [], "summary": prose(run + 9, 200)}));
    records.push(json!({"type": "tool_call_count", "total": 32, "failed": 1, "byPhase": {"support": {"total": 12, "failed": 0}, "primary": {"total": 20, "failed": 1}}}));
    if run % 7 == 6 {
        records.push(json!({"type": "handoff", "summary": prose(run + 11, 3000), "focus": prose(run, 200), "trigger": "auto", "estimatedBytes": 1900000, "limitBytes": 1845493}));
    }
    records.push(json!({"type": "run_end", "summary": prose(run + 13, 2500), "attempt": 1}));
    records
}

/// Streams runs of records to `path` until it holds at least `target` bytes. Returns the
/// bytes and records written.
fn write_synthetic_journal(path: &Path, target: u64) -> std::io::Result<(u64, u64)> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut bytes = 0u64;
    let mut records = 0u64;
    let mut timestamp = 1_780_000_000_000i64;
    let mut run = 0u64;
    let mut line = Vec::with_capacity(8 * 1024);
    while bytes < target {
        for mut record in run_records(run) {
            timestamp += 37;
            if let Some(map) = record.as_object_mut() {
                let mut ordered = serde_json::Map::with_capacity(map.len() + 1);
                ordered.insert("timestamp".into(), timestamp.into());
                ordered.extend(std::mem::take(map));
                *map = ordered;
            }
            line.clear();
            serde_json::to_writer(&mut line, &record)?;
            line.push(b'\n');
            out.write_all(&line)?;
            bytes += line.len() as u64;
            records += 1;
        }
        run += 1;
    }
    out.flush()?;
    Ok((bytes, records))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_records_have_the_protocol_shapes() {
        for run in 0..8 {
            for record in run_records(run) {
                let parsed: braincode_protocol::Record =
                    serde_json::from_value(record.clone()).expect("record parses");
                assert!(
                    !parsed.is_malformed_known(),
                    "{} does not match its type: {record}",
                    parsed.type_name()
                );
            }
        }
    }
}
