//! `fleet watch` (a task's journal, live) and `fleet fetch` (its patch, report or journal).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use braincode_config::Home;
use braincode_fleet::{Fleet, TaskState, TaskStatus};
use futures::StreamExt;
use serde_json::Value;

use super::FetchArgs;

/// How long the journal must stay quiet after the task ended before `watch` stops.
const QUIET: Duration = Duration::from_millis(700);

async fn state(fleet: &Fleet, id: &str) -> anyhow::Result<TaskState> {
    match fleet.state(id).await.map_err(anyhow::Error::msg)? {
        Some((state, _)) => Ok(state),
        None => anyhow::bail!(
            "no task {id} in the fleet at {}; `braincode fleet list` shows them",
            fleet.url
        ),
    }
}

/// Prints task `id`'s journal as it is written, until the task has ended and its journal is
/// quiet; exit 0 when it ended `done`.
pub(super) async fn watch(fleet: &Fleet, id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let mut current = state(fleet, id).await?;
    while current.session.is_none() && !current.status.is_final() {
        tokio::time::sleep(Duration::from_millis(200)).await;
        current = state(fleet, id).await?;
    }
    if let Some(session) = current.session.clone() {
        if !json {
            eprintln!(
                "task {id}: session {session} on {}",
                current.worker.as_deref().unwrap_or("?")
            );
        }
        let lines = braincode_fleet::journal::follow(fleet, &session)
            .await
            .map_err(anyhow::Error::msg)?;
        tokio::pin!(lines);
        let mut out = std::io::stdout().lock();
        loop {
            match tokio::time::timeout(QUIET, lines.next()).await {
                Ok(Some(Ok((_, line)))) => {
                    if json {
                        out.write_all(&line)?;
                        out.write_all(b"\n")?;
                    } else {
                        writeln!(out, "{}", describe(&line))?;
                    }
                    out.flush()?;
                }
                Ok(Some(Err(why))) => anyhow::bail!(why),
                Ok(None) => break,
                Err(_) => {
                    current = state(fleet, id).await?;
                    if current.status.is_final() {
                        break;
                    }
                }
            }
        }
    }
    let current = state(fleet, id).await?;
    if !json {
        if let Some(answer) = &current.answer {
            println!("\n{answer}");
        }
        eprintln!(
            "task {id}: {}{}",
            current.status.as_str(),
            current
                .error
                .as_deref()
                .map(|e| format!(" — {e}"))
                .unwrap_or_default()
        );
    }
    Ok(if current.status == TaskStatus::Done {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One journal line in a few words: its type and the fields that say what happened.
fn describe(line: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return String::from_utf8_lossy(line).into_owned();
    };
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("?");
    let mut parts = vec![kind.to_string()];
    for key in [
        "worker", "role", "phase", "name", "toolName", "path", "status",
    ] {
        if let Some(text) = value.get(key).and_then(Value::as_str) {
            parts.push(format!("{key}={text}"));
        }
    }
    if kind == "run_end"
        && let Some(summary) = value
            .pointer("/report/modelSummary")
            .and_then(Value::as_str)
    {
        parts.push(summary.lines().next().unwrap_or_default().to_string());
    }
    parts.join(" ")
}

/// `fleet fetch`: the patch (printed or applied), the report, or the journal.
pub(super) async fn fetch(
    fleet: &Fleet,
    home: &Home,
    args: &FetchArgs,
) -> anyhow::Result<ExitCode> {
    let task = state(fleet, &args.id).await?;
    if args.journal {
        let Some(session) = &task.session else {
            anyhow::bail!("task {} has not started: it has no journal yet", args.id);
        };
        let lines = braincode_fleet::journal::read(fleet, session)
            .await
            .map_err(anyhow::Error::msg)?;
        let id = braincode_protocol::SessionId::new(session.as_str())
            .map_err(|err| anyhow::anyhow!("task {}: session {session:?}: {err}", args.id))?;
        let path = home.session_path(&id);
        std::fs::create_dir_all(home.sessions_dir())
            .with_context(|| format!("cannot make {}", home.sessions_dir().display()))?;
        let mut bytes = Vec::new();
        for line in &lines {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        let temp = path.with_extension("jsonl.fetch");
        std::fs::write(&temp, &bytes)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        std::fs::rename(&temp, &path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!(
            "session {session}: {} records in {} (`braincode sessions show {session}`)",
            lines.len(),
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !task.status.is_final() {
        anyhow::bail!(
            "task {} is {}: its result is kept once it ends (`braincode fleet watch {}`)",
            args.id,
            task.status.as_str(),
            args.id
        );
    }
    if args.report {
        let report = fleet
            .get_object(&format!("{}/report.json", args.id))
            .await
            .map_err(anyhow::Error::msg)?
            .ok_or_else(|| {
                anyhow::anyhow!("task {} has no report (it did not run to one)", args.id)
            })?;
        std::io::stdout().lock().write_all(&report)?;
        println!();
        return Ok(ExitCode::SUCCESS);
    }
    let patch = fleet
        .get_object(&format!("{}/patch.diff", args.id))
        .await
        .map_err(anyhow::Error::msg)?;
    let Some(patch) = patch.filter(|p| !p.is_empty()) else {
        eprintln!("task {} changed nothing", args.id);
        return Ok(ExitCode::SUCCESS);
    };
    if !args.apply {
        std::io::stdout().lock().write_all(&patch)?;
        return Ok(ExitCode::SUCCESS);
    }
    let root = super::super::project_root(None)?;
    let file = tempfile::NamedTempFile::new().context("cannot make a temporary file")?;
    std::fs::write(file.path(), &patch).context("cannot write the patch")?;
    let output = std::process::Command::new("git")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
            "apply",
            "--",
        ])
        .arg(file.path())
        .current_dir(&root)
        .output()
        .context("cannot run git apply")?;
    if !output.status.success() {
        anyhow::bail!(
            "the patch of task {} does not apply in {}: {}",
            args.id,
            root.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    println!(
        "applied task {}'s patch ({} bytes) in {}",
        args.id,
        patch.len(),
        root.display()
    );
    Ok(ExitCode::SUCCESS)
}
