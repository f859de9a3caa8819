//! MCP server metadata from `.mcp.json` / `mcp.json` (project) and `<home>/mcp.json` (user).
//!
//! These files are tolerant by design: a malformed file is skipped with a warning that names
//! the file and the position, and the run goes on without its servers.

mod expand;
mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use braincode_protocol::McpLoadingStrategy;
pub use expand::{PROJECT_DIR_VAR, ProcessVars, VarSource, expand_vars};
pub use write::{
    Added, OnExisting, TAVILY, TavilyKey, add_user_server, set_user_server_enabled, setup_tavily,
    tavily_server_entry,
};

use crate::hooks::Scope;
use crate::{Home, json_io};

/// Shortest startup/call timeout a server may set.
pub const MIN_MCP_TIMEOUT_MS: u64 = 250;
/// Longest startup/call timeout a server may set (call timeouts may go to 10 minutes).
pub const MAX_MCP_STARTUP_TIMEOUT_MS: u64 = 120_000;
/// Longest call timeout a server may set.
pub const MAX_MCP_CALL_TIMEOUT_MS: u64 = 600_000;

/// MCP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    #[default]
    Stdio,
    /// Streamable HTTP (`"http"`, also written `"streamable-http"` / `"streamableHttp"`).
    #[serde(
        alias = "streamable-http",
        alias = "streamable_http",
        alias = "streamableHttp"
    )]
    Http,
    /// Server-sent events (legacy).
    Sse,
}

/// How an agent sees a server's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpSchemas {
    /// One small `mcp_search` tool finds tools; a tool's schema is sent when asked for.
    #[default]
    Lazy,
    /// Every tool is offered with its full schema from the start.
    Eager,
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
    /// Claude Code's name for `http_headers`.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    disabled: bool,
    /// Codex's switch (`enabled: false` = disabled).
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    trusted: bool,
    #[serde(default, alias = "startup")]
    loading: Option<McpLoadingStrategy>,
    #[serde(default, alias = "startup_timeout_ms")]
    startup_timeout_ms: Option<u64>,
    /// Codex: seconds.
    #[serde(default, rename = "startup_timeout_sec")]
    startup_timeout_sec: Option<f64>,
    #[serde(default, alias = "call_timeout_ms", alias = "toolTimeoutMs")]
    call_timeout_ms: Option<u64>,
    /// Codex: seconds.
    #[serde(default, rename = "tool_timeout_sec")]
    tool_timeout_sec: Option<f64>,
    #[serde(default)]
    schemas: Option<McpSchemas>,
    #[serde(default)]
    sandbox: Option<bool>,
    #[serde(default)]
    network: Option<bool>,
}

fn millis(ms: Option<u64>, secs: Option<f64>, max: u64) -> Option<u64> {
    ms.or_else(|| {
        secs.filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| (s * 1000.0) as u64)
    })
    .map(|ms| ms.clamp(MIN_MCP_TIMEOUT_MS, max))
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
    /// Extra HTTP headers (http, sse; `headers` or `http_headers` in the file).
    pub http_headers: BTreeMap<String, String>,
    /// Working directory of a stdio server (relative to the project root); the project root
    /// when absent.
    pub cwd: Option<String>,
    /// Whether the server is switched off (`disabled: true` or `enabled: false`).
    pub disabled: bool,
    /// Whether the user trusts it (project servers must be trusted to start).
    pub trusted: bool,
    /// When it is started (the settings' strategy when absent).
    pub loading: Option<McpLoadingStrategy>,
    /// Startup budget (spawn + handshake + tool list), clamped to 250..120,000 ms.
    pub startup_timeout_ms: Option<u64>,
    /// Budget of one tool call, clamped to 250..600,000 ms.
    pub call_timeout_ms: Option<u64>,
    /// How agents see its tools (the settings' choice when absent).
    pub schemas: Option<McpSchemas>,
    /// Whether a stdio server runs in the OS sandbox (default yes; only a user-level server
    /// may say `false`).
    pub sandbox: bool,
    /// Whether a sandboxed stdio server may use the network: a project's server by default
    /// (the project is trusted, and most servers are API clients); a user-level one only when
    /// its entry says `"network": true` (it also runs for untrusted projects).
    pub network: bool,
    /// The file it came from.
    pub source: PathBuf,
}

impl McpServerConfig {
    /// This entry with its `${…}` references expanded in `command`, `args`, `env`, `url` and
    /// headers. The error names the field and the variable, never a value.
    pub fn expanded(&self, vars: &dyn VarSource) -> Result<McpServerConfig, String> {
        let one = |field: String, text: &str| {
            expand_vars(text, vars).map_err(|err| format!("{field}: {err}"))
        };
        let map = |what: &str, entries: &BTreeMap<String, String>| {
            entries
                .iter()
                .map(|(key, value)| Ok((key.clone(), one(format!("{what}.{key}"), value)?)))
                .collect::<Result<BTreeMap<_, _>, String>>()
        };
        Ok(McpServerConfig {
            command: self
                .command
                .as_deref()
                .map(|c| one("command".into(), c))
                .transpose()?,
            args: self
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| one(format!("args[{i}]"), a))
                .collect::<Result<_, _>>()?,
            env: map("env", &self.env)?,
            url: self
                .url
                .as_deref()
                .map(|u| one("url".into(), u))
                .transpose()?,
            http_headers: map("headers", &self.http_headers)?,
            ..self.clone()
        })
    }
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
            let mut http_headers = entry.http_headers;
            http_headers.extend(entry.headers);
            McpServerConfig {
                name,
                scope,
                transport,
                command: entry.command,
                args: entry.args,
                env: entry.env,
                url: entry.url,
                http_headers,
                cwd: entry.cwd,
                disabled: entry.disabled || entry.enabled == Some(false),
                trusted: entry.trusted,
                loading: entry.loading,
                startup_timeout_ms: millis(
                    entry.startup_timeout_ms,
                    entry.startup_timeout_sec,
                    MAX_MCP_STARTUP_TIMEOUT_MS,
                ),
                call_timeout_ms: millis(
                    entry.call_timeout_ms,
                    entry.tool_timeout_sec,
                    MAX_MCP_CALL_TIMEOUT_MS,
                ),
                schemas: entry.schemas,
                // A repository cannot take its own servers out of the sandbox.
                sandbox: entry.sandbox.unwrap_or(true) || scope == Scope::Project,
                // A user-level server runs in every project, untrusted ones included: no
                // network unless its entry asks for it.
                network: entry.network.unwrap_or(scope == Scope::Project),
                source: path.to_path_buf(),
            }
        })
        .collect();
    (servers, warnings)
}

/// The project's MCP servers (`.mcp.json`, else `mcp.json`), read only when the file is
/// inside the project: a link pointing elsewhere (`~/.config/…/secrets.json`) is not read,
/// and a warning says so. Callers decide whether the servers may start (workspace trust).
pub fn read_project_mcp_file(project_root: &Path) -> (Vec<McpServerConfig>, Vec<String>) {
    let Some(path) = project_mcp_path(project_root) else {
        return (Vec::new(), Vec::new());
    };
    let inside = crate::contained::ReadScope::new(project_root)
        .map_err(|err| err.to_string())
        .and_then(|scope| scope.resolve(&path).map_err(|err| err.to_string()));
    match inside {
        Ok(_) => read_mcp_file(&path, Scope::Project),
        Err(err) => (
            Vec::new(),
            vec![format!(
                "{} was not read: {err}; a project's MCP file must be a file inside the project",
                path.display()
            )],
        ),
    }
}

/// Project servers first (only when `trust`, decided once by the caller, says the user
/// trusts the project), then user servers (a user server whose name a project server already
/// uses is kept here; the runtime reports it as shadowed). Malformed files are skipped with a
/// warning.
pub fn load_mcp_servers(
    home: &Home,
    project_root: &Path,
    trust: &crate::ProjectTrust,
) -> (Vec<McpServerConfig>, Vec<String>) {
    let mut servers = Vec::new();
    let mut warnings = Vec::new();
    // A project's servers are commands the repository asks us to run: read them only when
    // the user trusts the project, and then they are trusted as a whole (a `trusted` field
    // inside the project file means nothing).
    if trust.is_trusted() {
        let (mut found, warned) = read_project_mcp_file(project_root);
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
    use crate::trust::check_trust;

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
        let (servers, _) = load_mcp_servers(&home, &project, &check_trust(&home, &project).0);
        assert!(
            servers.iter().all(|s| s.scope == Scope::User),
            "{servers:?}"
        );
        crate::trust::trust_project(&home, &project).unwrap();
        let (servers, warnings) =
            load_mcp_servers(&home, &project, &check_trust(&home, &project).0);
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
    fn claude_code_and_codex_shapes_parse() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {
                "remote": {"type": "streamable-http", "url": "https://x.test/mcp",
                           "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "local": {"command": "srv", "enabled": false, "startup_timeout_sec": 2.5,
                          "tool_timeout_sec": 9999, "sandbox": false, "network": false,
                          "loading": "eager", "schemas": "eager", "cwd": "tools"},
                "tiny": {"command": "t", "startupTimeoutMs": 1}
            }}"#,
        )
        .unwrap();
        let (servers, warnings) = read_mcp_file(&path, Scope::User);
        assert!(warnings.is_empty(), "{warnings:?}");
        let by = |name: &str| servers.iter().find(|s| s.name == name).unwrap();
        let remote = by("remote");
        assert_eq!(remote.transport, McpTransport::Http);
        assert_eq!(remote.http_headers["Authorization"], "Bearer ${TOKEN}");
        // No network for a user-level server unless its entry asks.
        assert!(remote.sandbox && !remote.network && remote.loading.is_none());
        let local = by("local");
        assert!(local.disabled);
        assert_eq!(local.startup_timeout_ms, Some(2_500));
        assert_eq!(local.call_timeout_ms, Some(MAX_MCP_CALL_TIMEOUT_MS));
        assert!(!local.sandbox && !local.network);
        assert_eq!(local.loading, Some(McpLoadingStrategy::Eager));
        assert_eq!(local.schemas, Some(McpSchemas::Eager));
        assert_eq!(local.cwd.as_deref(), Some("tools"));
        assert_eq!(by("tiny").startup_timeout_ms, Some(MIN_MCP_TIMEOUT_MS));
        // A project cannot take its server out of the sandbox.
        let (servers, _) = read_mcp_file(&path, Scope::Project);
        assert!(servers.iter().all(|s| s.sandbox));
    }

    #[test]
    fn expansion_covers_every_field_and_names_the_field_at_fault() {
        struct Vars;
        impl VarSource for Vars {
            fn env(&self, name: &str) -> Option<String> {
                (name == "TOKEN").then(|| "s3cret".to_string())
            }
            fn auth(&self, _: &str) -> Option<String> {
                None
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        std::fs::write(
            &path,
            r#"{"mcpServers": {
                "a": {"command": "${TOKEN:-x}/bin", "args": ["--t=${TOKEN}"],
                      "env": {"K": "${TOKEN}"}, "url": "http://h/${TOKEN}",
                      "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "b": {"command": "b", "env": {"GITHUB_TOKEN": "${GH_TOKEN}"}}
            }}"#,
        )
        .unwrap();
        let (servers, _) = read_mcp_file(&path, Scope::User);
        let a = servers[0].expanded(&Vars).unwrap();
        assert_eq!(a.command.as_deref(), Some("s3cret/bin"));
        assert_eq!(a.args, ["--t=s3cret"]);
        assert_eq!(a.env["K"], "s3cret");
        assert_eq!(a.url.as_deref(), Some("http://h/s3cret"));
        assert_eq!(a.http_headers["Authorization"], "Bearer s3cret");
        let err = servers[1].expanded(&Vars).unwrap_err();
        assert_eq!(
            err,
            "env.GITHUB_TOKEN: environment variable GH_TOKEN is not set"
        );
    }

    /// A project's `.mcp.json` that links outside the project is not read (listings of an
    /// untrusted project read it for display), and such a project cannot be trusted: the
    /// servers it names never reach a run or a listing.
    #[test]
    fn a_project_file_linking_outside_the_project_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home"));
        std::fs::create_dir_all(home.root()).unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let outside = dir.path().join("elsewhere.json");
        std::fs::write(
            &outside,
            r#"{"mcpServers": {"leak": {"command": "curl", "args": ["sk-outside-secret"]}}}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(&outside, project.join(".mcp.json")).unwrap();
        let (servers, warnings) = read_project_mcp_file(&project);
        assert!(servers.is_empty(), "{servers:?}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("inside the project"), "{warnings:?}");
        assert!(!warnings[0].contains("sk-outside-secret"), "{warnings:?}");
        // Such a project cannot be trusted either, so a run never loads it.
        assert!(crate::trust::trust_project(&home, &project).is_err());
        let (servers, _) = load_mcp_servers(&home, &project, &check_trust(&home, &project).0);
        assert!(servers.is_empty(), "{servers:?}");
        // A link inside the project is fine.
        std::fs::remove_file(project.join(".mcp.json")).unwrap();
        std::fs::write(
            project.join("real.json"),
            r#"{"mcpServers": {"ok": {"command": "x"}}}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(project.join("real.json"), project.join(".mcp.json")).unwrap();
        let (servers, _) = read_project_mcp_file(&project);
        assert_eq!(servers.len(), 1);
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
        let (servers, warnings) = load_mcp_servers(&home, project, &check_trust(&home, project).0);
        assert!(servers.is_empty());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("mcp.json:2:"), "{}", warnings[0]);
        assert!(warnings[0].contains("mcpServers.a.args"), "{}", warnings[0]);
    }
}
