//! `braincode bench fold`: how fast a large session journal is read and folded into reports.
//!
//! A synthetic journal of `--mb` MB (realistic runs, see `journal_gen`) is written to a
//! temporary home. Then, each in its own child process so that each peak RSS is its own:
//! (a) `read_journal` (every entry kept in memory); (b) `fold_runs` over those entries, one
//! report per run; (c) the streaming fold: `scan_journal` applying each entry to a
//! `RunState` as it is read, keeping nothing but the reports. Times are medians of `--runs`.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::Context;
use braincode_config::Home;
use braincode_config::journal::{read_journal, scan_journal};
use braincode_protocol::{FinalReport, Record, SessionId};
use braincode_session::fold::{RunState, fold_runs};
use serde::{Deserialize, Serialize};

use super::journal_gen::write_journal;
use super::{median, proc_status_kib};

/// Arguments of `braincode bench fold`.
#[derive(Debug, clap::Args)]
pub struct FoldBenchArgs {
    /// Size of the synthetic journal, in MB (10^6 bytes).
    #[arg(long, default_value_t = 100)]
    pub mb: u64,
    /// Timed repetitions of each measurement (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Keep the temporary home (its path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Internal: measure one step (`read`, `fold`, `stream`) on the journal in this home.
    #[arg(long, hide = true, value_name = "HOME", requires = "step")]
    pub child: Option<PathBuf>,
    /// Internal: the step the child measures.
    #[arg(long, hide = true, value_enum)]
    pub step: Option<Step>,
}

/// One measured step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Step {
    /// `read_journal`: every entry in memory.
    Read,
    /// `fold_runs` and one report per run, over entries already read.
    Fold,
    /// `scan_journal` applying each entry to a `RunState` as it is read.
    Stream,
}

const SESSION: &str = "bench-fold";

/// What a measuring child reports.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChildReport {
    times_ms: Vec<f64>,
    rss_before_kib: Option<u64>,
    peak_rss_kib: Option<u64>,
    entries: usize,
    /// Lines the reader skipped or kept as malformed (the synthetic journal should have none).
    bad_lines: usize,
    reports: usize,
    /// Hash of every report's JSON, to check that both folds agree (0 for `read`).
    digest: u64,
}

/// One step's figures.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StepFigures {
    median_ms: f64,
    min_ms: f64,
    max_ms: f64,
    mb_per_s: f64,
    peak_rss_kib: Option<u64>,
    /// RSS of the measuring process just before the step (the binary, and for `fold` the
    /// entries already read).
    rss_before_kib: Option<u64>,
}

impl StepFigures {
    fn of(report: &ChildReport, megabytes: f64) -> Self {
        let mut times = report.times_ms.clone();
        let median_ms = median(&mut times);
        StepFigures {
            median_ms,
            min_ms: times.first().copied().unwrap_or_default(),
            max_ms: times.last().copied().unwrap_or_default(),
            mb_per_s: megabytes / (median_ms / 1000.0).max(f64::EPSILON),
            peak_rss_kib: report.peak_rss_kib,
            rss_before_kib: report.rss_before_kib,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Figures {
    journal_bytes: u64,
    journal_records: u64,
    journal_runs: u64,
    generation_ms: f64,
    runs: usize,
    read: StepFigures,
    fold: StepFigures,
    read_plus_fold_ms: f64,
    stream: StepFigures,
    reports: usize,
    folds_agree: bool,
    home: Option<String>,
}

/// Runs the benchmark.
pub fn execute(args: FoldBenchArgs) -> anyhow::Result<ExitCode> {
    if let (Some(home), Some(step)) = (&args.child, args.step) {
        return child(home, step, args.runs.max(1));
    }
    let dir = tempfile::Builder::new()
        .prefix("braincode-bench-fold-")
        .tempdir()?;
    let result = bench(&args, dir.path());
    if args.keep {
        let _ = dir.keep();
    }
    result
}

fn bench(args: &FoldBenchArgs, dir: &Path) -> anyhow::Result<ExitCode> {
    let home = Home::at(dir);
    let path = home.session_path(&SessionId::new(SESSION)?);
    std::fs::create_dir_all(home.sessions_dir())
        .with_context(|| format!("cannot create {}", home.sessions_dir().display()))?;
    let started = Instant::now();
    let written = write_journal(&path, args.mb.saturating_mul(1_000_000))
        .with_context(|| format!("cannot write {}", path.display()))?;
    let generation_ms = started.elapsed().as_secs_f64() * 1000.0;

    let runs = args.runs.max(1);
    let read = measure(dir, Step::Read, runs)?;
    anyhow::ensure!(
        read.bad_lines == 0,
        "{} lines of the synthetic journal did not read back as typed records",
        read.bad_lines
    );
    let fold = measure(dir, Step::Fold, runs)?;
    let stream = measure(dir, Step::Stream, runs)?;
    let megabytes = written.bytes as f64 / 1e6;
    let (read_figures, fold_figures) = (
        StepFigures::of(&read, megabytes),
        StepFigures::of(&fold, megabytes),
    );
    let figures = Figures {
        journal_bytes: written.bytes,
        journal_records: written.records,
        journal_runs: written.runs,
        generation_ms,
        runs,
        read_plus_fold_ms: read_figures.median_ms + fold_figures.median_ms,
        read: read_figures,
        fold: fold_figures,
        stream: StepFigures::of(&stream, megabytes),
        reports: stream.reports,
        folds_agree: fold.reports == stream.reports && fold.digest == stream.digest,
        home: args.keep.then(|| dir.display().to_string()),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        print_table(&figures, megabytes);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(figures: &Figures, megabytes: f64) {
    let rss = |kib: Option<u64>| {
        kib.map_or("n/a".to_string(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        })
    };
    println!(
        "braincode bench fold — {megabytes:.1} MB journal: {} runs, {} records (written in {:.1} s; page cache warm)",
        figures.journal_runs,
        figures.journal_records,
        figures.generation_ms / 1000.0
    );
    let header = format!("step (median of {})", figures.runs);
    println!(
        "  {header:<44} {:>10} {:>9} {:>11}",
        "time", "MB/s", "peak RSS"
    );
    let row = |name: &str, step: &StepFigures| {
        println!(
            "  {name:<44} {:>7.1} ms {:>9.1} {:>11}",
            step.median_ms,
            step.mb_per_s,
            rss(step.peak_rss_kib)
        );
    };
    row("(a) read_journal (all entries in memory)", &figures.read);
    row("(b) fold_runs + reports (entries in memory)", &figures.fold);
    println!(
        "  {:<44} {:>7.1} ms {:>9.1}",
        "    (a) + (b)",
        figures.read_plus_fold_ms,
        megabytes / (figures.read_plus_fold_ms / 1000.0).max(f64::EPSILON)
    );
    row("(c) streaming: scan_journal → RunState", &figures.stream);
    println!(
        "  peak RSS is each step's own process; it starts at {} (the binary alone)",
        rss(figures.stream.rss_before_kib)
    );
    println!(
        "  {} reports; streaming and in-memory folds agree: {}",
        figures.reports,
        if figures.folds_agree { "yes" } else { "NO" }
    );
    if let Some(home) = &figures.home {
        println!("  home kept at {home}");
    }
}

fn measure(dir: &Path, step: Step, runs: usize) -> anyhow::Result<ChildReport> {
    let exe = std::env::current_exe().context("cannot locate the braincode binary")?;
    let step_name = match step {
        Step::Read => "read",
        Step::Fold => "fold",
        Step::Stream => "stream",
    };
    let output = Command::new(exe)
        .args([
            "bench",
            "fold",
            "--runs",
            &runs.to_string(),
            "--step",
            step_name,
            "--child",
        ])
        .arg(dir)
        .output()
        .context("cannot start the measuring child process")?;
    anyhow::ensure!(
        output.status.success(),
        "the {step_name} child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("the {step_name} child printed no report"))
}

fn digest(reports: &[FinalReport]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for report in reports {
        serde_json::to_string(report)
            .unwrap_or_default()
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// The streaming fold: one `RunState` at a time, a report per run, no entry kept.
fn stream_fold(path: &Path) -> anyhow::Result<(usize, Vec<FinalReport>)> {
    let mut reports = Vec::new();
    let mut current: Option<RunState> = None;
    let mut entries = 0;
    scan_journal(path, |_, entry| {
        entries += 1;
        if matches!(entry.record, Record::RunStart(_)) {
            if let Some(done) = current.take() {
                reports.push(done.report());
            }
            current = Some(RunState::new(SESSION));
        }
        if let Some(state) = current.as_mut() {
            state.apply(&entry);
        }
        ControlFlow::Continue(())
    })?;
    if let Some(done) = current {
        reports.push(done.report());
    }
    Ok((entries, reports))
}

fn child(home: &Path, step: Step, runs: usize) -> anyhow::Result<ExitCode> {
    let path = Home::at(home).session_path(&SessionId::new(SESSION)?);
    let mut times = Vec::with_capacity(runs);
    let mut report = ChildReport {
        times_ms: Vec::new(),
        rss_before_kib: None,
        peak_rss_kib: None,
        entries: 0,
        bad_lines: 0,
        reports: 0,
        digest: 0,
    };
    match step {
        Step::Read => {
            report.rss_before_kib = proc_status_kib("VmRSS:");
            for _ in 0..runs {
                let started = Instant::now();
                let read = read_journal(&path)?;
                times.push(started.elapsed().as_secs_f64() * 1000.0);
                report.entries = read.entries.len();
                report.bad_lines = read.skipped_count + read.malformed_count;
                drop(read);
            }
        }
        Step::Fold => {
            let read = read_journal(&path)?;
            report.entries = read.entries.len();
            report.rss_before_kib = proc_status_kib("VmRSS:");
            let mut last = Vec::new();
            for _ in 0..runs {
                drop(std::mem::take(&mut last));
                let started = Instant::now();
                let reports: Vec<FinalReport> = fold_runs(SESSION, &read.entries)
                    .iter()
                    .map(RunState::report)
                    .collect();
                times.push(started.elapsed().as_secs_f64() * 1000.0);
                last = reports;
            }
            report.reports = last.len();
            report.digest = digest(&last);
        }
        Step::Stream => {
            report.rss_before_kib = proc_status_kib("VmRSS:");
            let mut last = Vec::new();
            for _ in 0..runs {
                drop(std::mem::take(&mut last));
                let started = Instant::now();
                let (entries, reports) = stream_fold(&path)?;
                times.push(started.elapsed().as_secs_f64() * 1000.0);
                report.entries = entries;
                last = reports;
            }
            report.reports = last.len();
            report.digest = digest(&last);
        }
    }
    report.times_ms = times;
    report.peak_rss_kib = proc_status_kib("VmHWM:");
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}
