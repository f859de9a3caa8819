//! MCP server metadata from `.mcp.json` / `mcp.json` (project) and `<home>/mcp.json` (user).
//!
//! These files are tolerant by design: a malformed file is skipped with a warning that names
//! the file and the position, and the run goes on without its servers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::hooks::Scope;
use crate::{Home, json_io};

/// MCP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    #[default]
    Stdio,
    /// Streamable HTTP.
    Http,
    /// Server-sent events (legacy).
    Sse,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpEntry {
    #[serde(default, rename = "type")]
    transport: Option<McpTransport>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default, alias = "http_headers")]
    http_headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
    #[serde(default)]
    trusted: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpFile {
    #[serde(default)]
    mcp_servers: Option<BTreeMap<String, McpEntry>>,
    #[serde(default)]
    servers: Option<BTreeMap<String, McpEntry>>,
}

/// One configured MCP server (metadata only; connecting is the `mcp` crate's job).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    /// Server name (the key in the file).
    pub name: String,
    /// Project or user.
    pub scope: Scope,
    /// Transport (`stdio` unless the entry says otherwise or only has a `url`).
    #[serde(rename = "type")]
    pub transport: McpTransport,
    /// Command to start (stdio).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment (values may hold `${BRAINCODE_AUTH:<provider>}` references).
    pub env: BTreeMap<String, String>,
    /// Endpoint (http, sse).
    pub url: Option<String>,
    /// Extra HTTP headers (http, sse).
    pub http_headers: BTreeMap<String, String>,
    /// Whether the server is switched off.
    pub disabled: bool,
    /// Whether the user trusts it (project servers must be trusted to start).
    pub trusted: bool,
    /// The file it came from.
    pub source: PathBuf,
}

/// The project MCP file: `.mcp.json`, else `mcp.json`, at the project root.
pub fn project_mcp_path(project_root: &Path) -> Option<PathBuf> {
    [".mcp.json", "mcp.json"]
        .iter()
        .map(|name| project_root.join(name))
        .find(|path| path.is_file())
}

/// Reads one MCP file. Missing or empty → no servers; malformed → no servers and a warning.
pub fn read_mcp_file(path: &Path, scope: Scope) -> (Vec<McpServerConfig>, Vec<String>) {
    let mut warnings = Vec::new();
    let file = match json_io::read_json_file::<McpFile>(path) {
        Ok(Some(file)) => file,
        Ok(None) => return (Vec::new(), warnings),
        Err(err) => {
            let warning = format!("MCP config skipped: {err}");
            tracing::warn!("{warning}");
            warnings.push(warning);
            return (Vec::new(), warnings);
        }
    };
    if file.mcp_servers.is_some() && file.servers.is_some() {
        warnings.push(format!(
            "{}: both \"mcpServers\" and \"servers\" are present; using \"mcpServers\"",
            path.display()
        ));
    }
    let entries = file.mcp_servers.or(file.servers).unwrap_or_default();
    let servers = entries
        .into_iter()
        .map(|(name, entry)| {
            let transport =
                entry
                    .transport
                    .unwrap_or(if entry.command.is_none() && entry.url.is_some() {
                        McpTransport::Http
                    } else {
                        McpTransport::Stdio
                    });
            McpServerConfig {
                name,
                scope,
                transport,
                command: entry.command,
                args: entry.args,
                env: entry.env,
                url: entry.url,
                http_headers: entry.http_headers,
                disabled: entry.disabled,
                trusted: entry.trusted,
                source: path.to_path_buf(),
            }
        })
        .collect();
    (servers, warnings)
}

/// Project servers first, then user servers (a user server whose name a project server
/// already uses is kept here; the runtime reports it as shadowed). Malformed files are
/// skipped with a warning.
pub fn load_mcp_servers(home: &Home, project_root: &Path) -> (Vec<McpServerConfig>, Vec<String>) {
    let mut servers = Vec::new();
    let mut warnings = Vec::new();
    // A project's servers are commands the repository asks us to run: read them only when
    // the user trusts the project, and then they are trusted as a whole (a `trusted` field
    // inside the project file means nothing).
    let project_trusted = crate::trust::check_trust(home, project_root).0.is_trusted();
    if let Some(path) = project_mcp_path(project_root).filter(|_| project_trusted) {
        let (mut found, warned) = read_mcp_file(&path, Scope::Project);
        for server in &mut found {
            server.trusted = true;
        }
        servers.extend(found);
        warnings.extend(warned);
    }
    let (found, warned) = read_mcp_file(&home.mcp_path(), Scope::User);
    servers.extend(found);
    warnings.extend(warned);
    (servers, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_scopes_and_both_top_level_keys() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home"));
        std::fs::create_dir_all(home.root()).unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join(".mcp.json"),
            r#"{"mcpServers": {"fs": {"command": "mcp-fs", "args": ["."], "trusted": true}}}"#,
        )
        .unwrap();
        std::fs::write(
            home.mcp_path(),
            r#"{"servers": {"web": {"url": "http://127.0.0.1:1/mcp"}, "fs": {"command": "x", "disabled": true}}}"#,
        )
        .unwrap();
        // Untrusted: the project's servers are not even read; the `trusted` field in the
        // project file means nothing.
        let (servers, _) = load_mcp_servers(&home, &project);
        assert!(
            servers.iter().all(|s| s.scope == Scope::User),
            "{servers:?}"
        );
        crate::trust::trust_project(&home, &project).unwrap();
        let (servers, warnings) = load_mcp_servers(&home, &project);
        assert!(warnings.is_empty(), "{warnings:?}");
        let names: Vec<_> = servers
            .iter()
            .map(|s| format!("{}:{}", s.scope, s.name))
            .collect();
        assert_eq!(names, ["project:fs", "user:fs", "user:web"]);
        assert!(servers[0].trusted);
        assert_eq!(servers[0].args, ["."]);
        assert!(servers[1].disabled);
        assert_eq!(servers[2].transport, McpTransport::Http);
    }

    #[test]
    fn malformed_file_is_skipped_with_a_located_warning() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        std::fs::write(
            project.join("mcp.json"),
            "{\"mcpServers\": {\n  \"a\": {\"args\": \"not-a-list\"}}}",
        )
        .unwrap();
        let home = Home::at(dir.path().join("h"));
        crate::trust::trust_project(&home, project).unwrap();
        let (servers, warnings) = load_mcp_servers(&home, project);
        assert!(servers.is_empty());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("mcp.json:2:"), "{}", warnings[0]);
        assert!(warnings[0].contains("mcpServers.a.args"), "{}", warnings[0]);
    }
}
