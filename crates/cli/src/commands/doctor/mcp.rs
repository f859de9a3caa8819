//! The doctor's MCP checks: without `--mcp` the configuration only (fast: nothing is
//! started), with `--mcp` a live connection to every server that may start, as
//! `braincode mcp list` does.

use std::path::Path;

use braincode_config::{Home, Scope, Settings};
use braincode_runtime::PlannedServer;
use braincode_runtime::{CHECK_BUDGET, McpCheckStatus, McpServerCheck, UNTRUSTED_REASON};

use super::CheckStatus;
use super::checks::Checks;
use crate::commands::mcp::Loaded;

/// The MCP checks. `settings`: settings.json when it loaded (its defaults otherwise).
/// `live`: connect to each startable server.
pub(super) fn check_mcp(
    home: &Home,
    project: &Path,
    trust: &braincode_config::ProjectTrust,
    settings: Option<&Settings>,
    live: bool,
    checks: &mut Checks,
) {
    let default = Settings::default();
    let loaded = Loaded::with_settings(
        home.clone(),
        project.to_path_buf(),
        trust,
        settings.unwrap_or(&default),
    );
    if !loaded.setup.warnings.is_empty() {
        checks.warn(
            "mcp",
            loaded.setup.warnings.join("; "),
            "fix the JSON of the named file (it is skipped until then)",
        );
    }
    let planned = &loaded.setup.planned;
    let startable = planned.iter().filter(|p| p.startable()).count();
    let untrusted = planned
        .iter()
        .filter(|p| p.skip.as_deref() == Some(UNTRUSTED_REASON))
        .count();
    if loaded.setup.warnings.is_empty() {
        checks.ok(
            "mcp",
            format!(
                "{} MCP server(s) configured, {startable} may start{}{}",
                planned.len(),
                if untrusted > 0 {
                    format!(", {untrusted} wait for the project's trust")
                } else {
                    String::new()
                },
                if live {
                    ""
                } else {
                    " (no live connection attempted; `braincode doctor --mcp` connects)"
                }
            ),
        );
    }
    for server in planned.iter().filter(|p| !p.startable()) {
        // The trust check says it for the whole project, except when only MCP is checked.
        if live || server.skip.as_deref() != Some(UNTRUSTED_REASON) {
            skipped_check(server, planned, project, live, checks);
        }
    }
    if !live || startable == 0 {
        return;
    }
    let startable: Vec<PlannedServer> = planned.iter().filter(|p| p.startable()).cloned().collect();
    match loaded.check(&startable, CHECK_BUDGET) {
        Ok(rows) => {
            for row in rows {
                live_check(&row, checks);
            }
        }
        Err(err) => checks.error(
            "mcp",
            format!("the live check could not run: {err:#}"),
            "try again; `braincode mcp test <name>` checks one server",
        ),
    }
}

/// A server that will not start: a warning with the fix, except one the user switched off
/// (listed only in the live check).
fn skipped_check(
    server: &PlannedServer,
    planned: &[PlannedServer],
    project: &Path,
    live: bool,
    checks: &mut Checks,
) {
    let config = &server.config;
    let id = format!("mcp:{}", config.name);
    let reason = server.skip.clone().unwrap_or_default();
    let source = config.source.display();
    if config.disabled && reason != UNTRUSTED_REASON {
        if live {
            checks.ok(id, format!("skipped: {reason}"));
        }
        return;
    }
    let fix = if reason == UNTRUSTED_REASON {
        format!(
            "read {source}, then `braincode trust {}` to let its servers start",
            project.display()
        )
    } else if config.scope == Scope::User
        && planned.iter().any(|p| {
            p.config.scope == Scope::Project
                && p.name() == config.name
                && p.skip.as_deref() != Some(UNTRUSTED_REASON)
        })
    {
        format!(
            "rename the server in {source} or in the project's file, or remove the one you do not use"
        )
    } else {
        format!("fix server {:?} in {source}", config.name)
    };
    checks.warn(id, format!("skipped: {reason}"), fix);
}

/// A server that was connected to: ok, or an error with its fix.
fn live_check(row: &McpServerCheck, checks: &mut Checks) {
    let id = format!("mcp:{}", row.name);
    match row.status {
        McpCheckStatus::Ok => checks.ok(id, row.status_words()),
        _ => {
            let fix = row.fix.clone().unwrap_or_else(|| {
                format!(
                    "run `braincode mcp test {}` for details, then fix it in {}",
                    row.name, row.source
                )
            });
            checks.push(id, CheckStatus::Error, row.status_words(), Some(fix));
        }
    }
}
