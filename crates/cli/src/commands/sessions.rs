//! `braincode sessions`: list session journals, and show one session as a conversation or as
//! its snapshot.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use braincode_config::journal::{ScanReport, SnapshotOptions, session_snapshot};
use braincode_config::{
    Home, ListOptions, SessionInfo, list_sessions, resolve_session, scan_journal,
};
use chrono::{DateTime, Local, Utc};

mod conversation;

/// `braincode sessions` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first (default: sessions of the current project).
    List(ListArgs),
    /// Show one session as a conversation: each request and its full answer (`--snapshot`:
    /// the compact snapshot that `@@id` inlines).
    Show(ShowArgs),
    /// The session's handoff: the bounded summary later runs continue from (`@@id`). Reuses
    /// the fresh one, else writes one (from the journal, no model call, unless settings.json
    /// `context.handoffSummarizer` is `model` or `--summarizer model` is given).
    Handoff(HandoffArgs),
}

/// Arguments of `braincode sessions handoff`.
#[derive(Debug, clap::Args)]
pub struct HandoffArgs {
    /// Session id, or a unique prefix of one.
    pub id: String,
    /// What the next run should focus on (always writes a new handoff).
    #[arg(long)]
    pub focus: Option<String>,
    /// Who writes a new handoff: `heuristic` (no model call) or `model` (the brain's
    /// `summarize` role, falling back to the heuristic). Default: settings.json
    /// `context.handoffSummarizer`.
    #[arg(long, value_parser = parse_summarizer)]
    pub summarizer: Option<braincode_config::HandoffSummarizer>,
    /// The brain whose `summarize` role writes it (default: the default brain).
    #[arg(long)]
    pub brain: Option<String>,
    /// Print JSON: `{sessionId, summary, reused, summarizer, fallback}`.
    #[arg(long)]
    pub json: bool,
}

fn parse_summarizer(text: &str) -> Result<braincode_config::HandoffSummarizer, String> {
    match text {
        "heuristic" => Ok(braincode_config::HandoffSummarizer::Heuristic),
        "model" => Ok(braincode_config::HandoffSummarizer::Model),
        other => Err(format!(
            "{other:?} is not a summarizer: use heuristic or model"
        )),
    }
}

/// Arguments of `braincode sessions list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Sessions of every project, not only the current one.
    #[arg(long)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// At most this many sessions.
    #[arg(long, default_value_t = 25)]
    pub limit: usize,
    /// Project directory whose sessions to list (default: the current directory's project).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The fleet's sessions too.
    #[command(flatten)]
    pub fleet: super::fleet::FleetJournals,
}

/// Arguments of `braincode sessions show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Session id, or a unique prefix of one.
    pub id: String,
    /// Print JSON: an array of runs (`runIndex`, `startedAt`, `prompt`, `status`, `answer`,
    /// `error`, `durationMs`, …), or with `--snapshot` the snapshot object.
    #[arg(long)]
    pub json: bool,
    /// Show the compact snapshot (what `@@id` inlines) instead of the conversation.
    #[arg(long)]
    pub snapshot: bool,
    /// Keep at most this many distilled records in the snapshot (default 24).
    #[arg(long, requires = "snapshot")]
    pub max_entries: Option<usize>,
    /// Also report every unreadable line of the journal by line number.
    #[arg(long)]
    pub verify: bool,
    /// A fleet session too.
    #[command(flatten)]
    pub fleet: super::fleet::FleetJournals,
}

/// Runs the command.
pub fn execute(command: SessionsCommand) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    match &command {
        SessionsCommand::List(ListArgs { fleet, .. })
        | SessionsCommand::Show(ShowArgs { fleet, .. }) => fleet.mirror_now(&home)?,
        SessionsCommand::Handoff(_) => {}
    }
    match command {
        SessionsCommand::List(args) => list(&home, args),
        SessionsCommand::Show(args) if args.snapshot => show_snapshot(&home, args),
        SessionsCommand::Show(args) => conversation::show(&home, &args),
        SessionsCommand::Handoff(args) => handoff(&home, &args),
    }
}

fn handoff(home: &Home, args: &HandoffArgs) -> anyhow::Result<ExitCode> {
    let id = resolve_session(home, &args.id)?;
    let options = braincode_runtime::HandoffOptions {
        focus: args.focus.clone(),
        summarizer: args.summarizer,
        brain_id: args.brain.clone(),
    };
    let made =
        super::tokio_runtime()?.block_on(braincode_runtime::make_handoff(home, &id, &options))?;
    if args.json {
        let doc = serde_json::json!({
            "sessionId": id.as_str(),
            "summary": made.summary,
            "reused": made.reused,
            "summarizer": made.summarizer,
            "fallback": made.fallback,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("{}", made.summary);
        if let Some(reason) = &made.fallback {
            eprintln!("! {reason}: the heuristic summary was written instead");
        }
        if made.reused {
            eprintln!("(the session's fresh handoff; nothing written)");
        } else {
            eprintln!("(handoff by {} written to session {id})", made.summarizer);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The project root a directory belongs to: the nearest ancestor with `.git`, else the
/// directory itself.
pub fn project_root_of(dir: &Path) -> PathBuf {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map_or_else(|| dir.clone(), Path::to_path_buf)
}

fn local_time(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.with_timezone(&Local).format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| "-".into())
}

fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

fn list(home: &Home, args: ListArgs) -> anyhow::Result<ExitCode> {
    let project = match (&args.project, args.all) {
        (_, true) => None,
        (Some(dir), false) => Some(project_root_of(dir)),
        (None, false) => Some(project_root_of(
            &std::env::current_dir().context("cannot read the current directory")?,
        )),
    };
    let options = ListOptions {
        limit: args.limit,
        project: project.clone(),
        all: args.all,
    };
    let sessions = list_sessions(home, &options)?;
    if args.json {
        let rows: Vec<serde_json::Value> = sessions.iter().map(session_json).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        match &project {
            Some(root) => println!(
                "No sessions for {} yet (use --all to list every project).",
                root.display()
            ),
            None => println!("No sessions yet in {}.", home.sessions_dir().display()),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let id_width = sessions
        .iter()
        .map(|s| s.id.as_str().len())
        .max()
        .unwrap_or(2)
        .max(2);
    // The short id is what people type (`--session`, `--resume`, `@@`): it comes first.
    let short_width = sessions
        .iter()
        .map(|s| s.id.short().len())
        .max()
        .unwrap_or(5)
        .max(5);
    println!(
        "{:<short_width$}  {:<id_width$}  {:<10}  {:<16}  {:>4}  PROMPT",
        "SHORT", "ID", "STATUS", "UPDATED", "RUNS"
    );
    for info in &sessions {
        let runs = if info.runs_exact {
            info.runs.to_string()
        } else {
            format!("{}+", info.runs)
        };
        let mut prompt = info.prompt_preview.clone().unwrap_or_else(|| "-".into());
        if args.all
            && let Some(root) = &info.project_root
        {
            prompt = format!("{prompt}  [{root}]");
        }
        println!(
            "{:<short_width$}  {:<id_width$}  {:<10}  {:<16}  {:>4}  {prompt}",
            info.id.short(),
            info.id.as_str(),
            info.status.as_str(),
            local_time(info.updated_at),
            runs
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn session_json(info: &SessionInfo) -> serde_json::Value {
    let mut value = serde_json::to_value(info).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("shortId".into(), info.id.short().into());
        map.insert("updatedAtIso".into(), iso(info.updated_at).into());
        if let Some(started) = info.started_at {
            map.insert("startedAtIso".into(), iso(started).into());
        }
    }
    value
}

fn show_snapshot(home: &Home, args: ShowArgs) -> anyhow::Result<ExitCode> {
    let id = resolve_session(home, &args.id)?;
    let snapshot = session_snapshot(
        home,
        &id,
        &SnapshotOptions {
            max_entries: args
                .max_entries
                .unwrap_or(SnapshotOptions::default().max_entries)
                .max(1),
        },
    )?;
    let verify = if args.verify {
        Some(scan_journal(&home.session_path(&id), |_, _| {
            std::ops::ControlFlow::Continue(())
        })?)
    } else {
        None
    };
    if args.json {
        let mut value = serde_json::to_value(&snapshot)?;
        if let (Some(map), Some(report)) = (value.as_object_mut(), &verify) {
            map.insert(
                "verify".into(),
                serde_json::json!({
                    "lines": report.lines,
                    "skippedCount": report.skipped_count,
                    "skipped": report.skipped,
                    "malformedCount": report.malformed_count,
                    "malformed": report.malformed,
                    "tornTail": report.torn_tail,
                }),
            );
        }
        if let Some(map) = value.as_object_mut() {
            map.insert(
                "path".into(),
                home.session_path(&id).display().to_string().into(),
            );
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", snapshot.text);
    if !snapshot.text.ends_with('\n') {
        println!();
    }
    if snapshot.torn_tail {
        eprintln!(
            "note: the last line of the journal is cut off (a writer stopped mid-line); it was skipped"
        );
    }
    if !snapshot.skipped.is_empty() {
        eprintln!(
            "note: {} unreadable line(s) near the end of the journal were skipped (run with --verify for line numbers)",
            snapshot.skipped.len()
        );
    }
    if let Some(report) = verify {
        println!();
        print!("{}", journal_check(&home.session_path(&id), &report));
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--verify` summary: line count, unreadable and malformed lines by number, torn tail.
fn journal_check(path: &Path, report: &ScanReport) -> String {
    let mut text = format!(
        "Journal check ({}): {} lines, {} unreadable, {} malformed records kept as-is, torn tail: {}\n",
        path.display(),
        report.lines,
        report.skipped_count,
        report.malformed_count,
        if report.torn_tail { "yes" } else { "no" }
    );
    for line in report.skipped.iter().take(20) {
        text.push_str(&format!("  line {}: {}\n", line.line, line.reason));
    }
    for line in report.malformed.iter().take(20) {
        text.push_str(&format!("  line {}: {}\n", line.line, line.reason));
    }
    text
}
