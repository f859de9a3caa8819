//! `braincode replay <session>`: the orchestration of a journaled run again, with every model
//! reply, tool result and hook result taken from the journal — no network, no credentials,
//! nothing run — and, with `--check`, the first record that differs from the original.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use braincode_config::{Home, resolve_session};
use braincode_runtime::RunServices;
use braincode_runtime::{Divergence, replay};

/// Arguments of `braincode replay`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Exit codes: 0 replayed (with --check: identical, or not checkable exactly because the journal \
clipped the prompt or a reply), 1 error, 6 with --check: the replay differs.")]
pub struct ReplayArgs {
    /// The session (id or unique prefix).
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// Which run of the session (1-based; default: the latest).
    #[arg(long, value_name = "N")]
    pub run: Option<usize>,
    /// Compare the replay's records with the journal's and report the first that differs.
    #[arg(long)]
    pub check: bool,
    /// Print the result as JSON (the report, and the divergence with --check).
    #[arg(long)]
    pub json: bool,
    /// Replay a fleet session.
    #[command(flatten)]
    pub fleet: super::fleet::FleetJournals,
}

/// Exit code of a `--check` that found a difference.
const DIFFERS: u8 = 6;

/// Runs the command.
pub fn execute(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    args.fleet.mirror_now(&home)?;
    let session = resolve_session(&home, &args.session)?;
    let runtime = super::tokio_runtime()?;
    let outcome = runtime.block_on(replay(
        &home,
        &session,
        args.run,
        RunServices::new(home.clone()),
    ))?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let value = serde_json::json!({
            "session": session.to_string(),
            "originalRecords": outcome.original_records,
            "replayedRecords": outcome.replayed_records,
            "identical": outcome.divergence.is_none() && outcome.inexact.is_none(),
            "inexact": outcome.inexact,
            "divergence": outcome.divergence.as_ref().map(divergence_json),
            "report": outcome.report,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        writeln!(
            stdout,
            "replayed session {session}: {} records (journal: {}), status {}",
            outcome.replayed_records,
            outcome.original_records,
            outcome.report.status.as_str()
        )?;
        if args.check {
            match (&outcome.divergence, &outcome.inexact) {
                (_, Some(reason)) => writeln!(stdout, "cannot check exactly: {reason}")?,
                (None, None) => writeln!(stdout, "identical")?,
                (Some(divergence), None) => write!(stdout, "{}", describe(divergence))?,
            }
        } else {
            writeln!(stdout, "\n{}", outcome.report.model_summary.trim())?;
        }
    }
    Ok(match (&outcome.divergence, args.check) {
        (Some(_), true) if outcome.inexact.is_none() => ExitCode::from(DIFFERS),
        _ => ExitCode::SUCCESS,
    })
}

fn divergence_json(divergence: &Divergence) -> serde_json::Value {
    serde_json::json!({
        "position": divergence.position,
        "lane": divergence.lane,
        "expected": divergence.expected,
        "actual": divergence.actual,
    })
}

/// The divergence for a person: where, and the two records.
fn describe(divergence: &Divergence) -> String {
    let show = |value: &Option<serde_json::Value>| match value {
        Some(value) => braincode_context::clip_chars(&value.to_string(), 2_000),
        None => "(none)".to_string(),
    };
    format!(
        "differs at record {} ({})\n  journal: {}\n  replay:  {}\n",
        divergence.position,
        divergence.lane,
        show(&divergence.expected),
        show(&divergence.actual)
    )
}
