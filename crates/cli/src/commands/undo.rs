//! `braincode undo [<session>] [--run <id>] [--writer <role|context>] [--dry-run] [--json]`:
//! puts back the files a run changed (or what one of its parallel writers' merges wrote),
//! from its `file_change` records and the contents kept in `<home>/undo/<session>/`, and
//! journals an `undo` record so it is done once.

use std::process::ExitCode;

use anyhow::Context;
use braincode_config::{Home, JournalWriter, latest_session_for_project, read_journal};
use braincode_protocol::{Record, SessionId, UndoRecord, UndoneFile};
use braincode_runtime::BlobStore;
use braincode_runtime::undo::{self, Blockers, UndoPlan};
use serde_json::json;

/// Arguments of `braincode undo`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Undo refuses when a file the run changed was changed again since (by you \
or another run), or when the run changed a file whose earlier content is not known (it was \
already modified before the run, or too big to keep). Nothing is restored then."
)]
pub struct UndoArgs {
    /// Session id or unique prefix (default: the latest session of this project).
    #[arg(value_name = "SESSION")]
    pub session: Option<String>,
    /// The run to undo, by id or unique prefix (default: the session's last run).
    #[arg(long, value_name = "RUN_ID")]
    pub run: Option<String>,
    /// Undo only what one parallel writer's merge wrote: its role (`frontend`) or its task
    /// context id, as the run's report names it.
    #[arg(long, value_name = "WRITER")]
    pub writer: Option<String>,
    /// Say what would be restored; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// How the command ended, for the JSON output.
fn outcome(status: &str, session: &SessionId, plan: &UndoPlan) -> serde_json::Value {
    let mut value = json!({"status": status, "session": session.as_str(), "runId": plan.run_id});
    if let Some(writer) = &plan.writer {
        value["writer"] = json!({"contextId": writer.context_id, "role": writer.role});
    }
    value
}

/// What is undone, in words: `run 1a2b3c4d`, or `the backend writer (1a2b3c4d-02) of run …`.
fn what(plan: &UndoPlan) -> String {
    match &plan.writer {
        Some(writer) => format!(
            "the {} writer ({}) of run {}",
            writer.role, writer.context_id, plan.run_id
        ),
        None => format!("run {}", plan.run_id),
    }
}

fn print(args: &UndoArgs, value: serde_json::Value, text: &str) {
    if args.json {
        println!("{value:#}");
    } else {
        println!("{text}");
    }
}

/// Runs the command.
pub fn execute(args: UndoArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let session = match &args.session {
        Some(query) => braincode_config::resolve_session(&home, query)?,
        None => {
            let cwd = super::project_root(None)?;
            latest_session_for_project(&home, &cwd)?.with_context(|| {
                format!(
                    "no session was made in {}; name one (`braincode sessions list --all`)",
                    cwd.display()
                )
            })?
        }
    };
    let path = home.session_path(&session);
    let read = read_journal(&path)
        .with_context(|| format!("cannot read the journal {}", path.display()))?;
    if read.skipped_count > 0 {
        eprintln!(
            "warning: {} line(s) of {} are not records and were skipped",
            read.skipped_count,
            path.display()
        );
    }
    let plan = match &args.writer {
        Some(writer) => undo::plan_writer(&read.entries, args.run.as_deref(), writer)?,
        None => undo::plan(&read.entries, args.run.as_deref())?,
    };
    if plan.already_undone {
        let text = format!("{} of session {session} is already undone", what(&plan));
        print(&args, outcome("already_undone", &session, &plan), &text);
        return Ok(ExitCode::SUCCESS);
    }
    if plan.files.is_empty() {
        let text = format!("{} changed no file; nothing to undo", what(&plan));
        print(&args, outcome("nothing", &session, &plan), &text);
        return Ok(ExitCode::SUCCESS);
    }
    let blockers = undo::check(&plan);
    if !blockers.is_empty() {
        refuse(&args, &session, &plan, &blockers);
        return Ok(ExitCode::from(1));
    }
    let planned: Vec<UndoneFile> = (plan.files.iter())
        .map(|f| UndoneFile {
            path: f.path.clone(),
            action: f.action().to_string(),
        })
        .collect();
    if args.dry_run {
        let mut value = outcome("dry_run", &session, &plan);
        value["files"] = serde_json::to_value(&planned)?;
        let text = format!(
            "undo of {} would put back:\n{}",
            what(&plan),
            listing(&planned)
        );
        print(&args, value, &text);
        return Ok(ExitCode::SUCCESS);
    }
    let store = BlobStore::new(home.root(), session.as_str());
    let done = undo::apply(&plan, &store).with_context(|| {
        format!(
            "undo of {} stopped; files listed before this one were put back",
            what(&plan)
        )
    })?;
    let mut writer = JournalWriter::open(&home, &session)?;
    writer.append(&Record::Undo(UndoRecord {
        run_id: plan.run_id.clone(),
        writer: plan.writer.as_ref().map(|w| w.context_id.clone()),
        files: done.clone(),
    }))?;
    let mut value = outcome("restored", &session, &plan);
    value["files"] = serde_json::to_value(&done)?;
    let text = format!("undid {}:\n{}", what(&plan), listing(&done));
    print(&args, value, &text);
    Ok(ExitCode::SUCCESS)
}

fn listing(files: &[UndoneFile]) -> String {
    (files.iter())
        .map(|f| format!("  {:<9} {}", f.action, f.path))
        .collect::<Vec<_>>()
        .join("\n")
}

fn refuse(args: &UndoArgs, session: &SessionId, plan: &UndoPlan, blockers: &Blockers) {
    if args.json {
        let mut value = outcome("refused", session, plan);
        value["changedSinceRun"] = json!(blockers.changed_since);
        value["notUndoable"] = (blockers.not_undoable.iter())
            .map(|(path, reason)| json!({"path": path, "reason": reason}))
            .collect();
        println!("{value:#}");
        return;
    }
    let mut lines = Vec::new();
    if !blockers.changed_since.is_empty() {
        lines.push(format!(
            "changed since the run: {}",
            blockers.changed_since.join(", ")
        ));
    }
    for (path, reason) in &blockers.not_undoable {
        lines.push(format!("cannot be undone: {path} ({reason})"));
    }
    eprintln!(
        "undo of {} refused — {}; nothing was restored",
        what(plan),
        lines.join("; ")
    );
}
