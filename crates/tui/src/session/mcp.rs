//! `/mcp`: the session's MCP servers, checked live (the check itself is
//! `braincode_runtime::McpSetup` and friends, shared with `braincode mcp` and `doctor --mcp`).

use braincode_runtime::PlannedServer;
use braincode_runtime::{
    CHECK_BUDGET, McpCheckContext as CheckContext, McpCheckStatus, McpServerCheck, check_servers,
    checking_rows, configured_servers, writable_roots,
};

/// The `/mcp` listing: one line per server with its status, a fix under each failure.
pub fn listing_lines(rows: &[McpServerCheck]) -> Vec<String> {
    if rows.is_empty() {
        return vec![
            "no MCP servers configured: add them to ~/.braincode/mcp.json or the project's \
             .mcp.json"
                .into(),
        ];
    }
    let count = |status| rows.iter().filter(|r| r.status == status).count();
    let mut summary = vec![format!("{} MCP server(s)", rows.len())];
    for (status, word) in [
        (McpCheckStatus::Ok, "ok"),
        (McpCheckStatus::Failed, "failed"),
        (McpCheckStatus::Skipped, "skipped"),
        (McpCheckStatus::Checking, "checking"),
    ] {
        let n = count(status);
        if n > 0 {
            summary.push(format!("{n} {word}"));
        }
    }
    let width = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    let mut lines = vec![summary.join(" · ")];
    for row in rows {
        lines.push(format!(" {}", row.headline(width)));
        if let Some(fix) = &row.fix {
            lines.push(format!("     → {fix}"));
        }
    }
    lines.push("`braincode mcp tools <name>` lists a server's tools".into());
    lines
}

impl super::Session {
    /// `/mcp trust`, `/hooks trust`: trusts the project as its files are now (the trust store
    /// `braincode trust` writes), so its own MCP servers, hooks, settings and checks run from
    /// the next request on.
    pub(super) fn trust_project(&mut self) {
        let root = &self.options.project_root;
        self.info = Some(vec![
            match braincode_config::trust_project(&self.options.home, root) {
                Ok(files) => format!(
                    "trusted {} ({} file(s) recorded): its MCP servers, hooks, settings and checks run from your next request; `braincode trust --revoke` takes it back",
                    root.display(),
                    files.len()
                ),
                Err(err) => format!("{} was not trusted: {err}", root.display()),
            },
        ]);
    }

    /// `/mcp`: the servers this session's requests would use, checked live in the
    /// background ("checking…" until the results arrive).
    pub(super) fn mcp(&mut self) {
        let load = braincode_runtime::LoadOptions {
            project_root: self.options.project_root.clone(),
            brain_id: self.brain.clone(),
            mode: None,
        };
        let config = match braincode_runtime::RunConfig::load(&self.options.home, &load) {
            Ok(config) => config,
            Err(err) => {
                self.info = Some(vec![format!("the configuration does not load: {err}")]);
                return;
            }
        };
        let home = self.options.home.clone();
        let project_root = self.options.project_root.clone();
        let (planned, warnings) = configured_servers(
            &home,
            &project_root,
            &config.trust,
            &config.support.mcp_servers,
            &config.settings.mcp,
        );
        let mut lines = listing_lines(&checking_rows(&planned));
        lines.extend(warnings.iter().cloned());
        self.info = Some(lines);
        if !planned.iter().any(PlannedServer::startable) {
            return;
        }
        let writable = writable_roots(&config.settings.sandbox.writable_paths);
        let info = self.info_tx.clone();
        tokio::spawn(async move {
            let context = CheckContext {
                home: &home,
                project_root: &project_root,
                writable,
                budget: CHECK_BUDGET,
            };
            let mut lines = listing_lines(&check_servers(context, &planned).await);
            lines.extend(warnings);
            let _ = info.send(lines);
        });
    }
}
