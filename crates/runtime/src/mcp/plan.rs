//! Which configured MCP servers a run (or `braincode mcp`) may start, and how: skip reasons,
//! `${VAR}` expansion, loading and schema choices, and the command each stdio server runs
//! (inside the OS sandbox unless a user-level entry says otherwise).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use braincode_config::{
    Home, McpLoadingStrategy, McpSchemas, McpServerConfig, McpSettings, McpTransport, ProcessVars,
    Scope,
};
use braincode_mcp::{
    CommandFactory, DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, Endpoint, ServerSpec,
};
use braincode_sandbox::{Sandbox, SandboxPolicy};

/// One configured server and what a run does with it.
#[derive(Debug, Clone)]
pub struct PlannedServer {
    /// The entry as configured (references not expanded: safe to show).
    pub config: McpServerConfig,
    /// When it starts.
    pub loading: McpLoadingStrategy,
    /// How agents see its tools.
    pub schemas: McpSchemas,
    /// Why it will not start, when it will not.
    pub skip: Option<String>,
    /// The entry with `${…}` expanded (servers that start).
    resolved: Option<McpServerConfig>,
}

impl PlannedServer {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The entry with `${…}` expanded, when it may start.
    pub(super) fn resolved(&self) -> Option<&McpServerConfig> {
        self.resolved.as_ref()
    }

    /// Whether it may start.
    pub fn startable(&self) -> bool {
        self.skip.is_none()
    }
}

/// Decides, for every configured server, whether and how it starts. Project servers come
/// first and shadow user servers of the same name. `vars` expands `${…}` references.
pub fn plan_servers(
    servers: &[McpServerConfig],
    settings: &McpSettings,
    vars: &dyn braincode_config::VarSource,
) -> Vec<PlannedServer> {
    let project_names: BTreeSet<&str> = servers
        .iter()
        .filter(|s| s.scope == Scope::Project)
        .map(|s| s.name.as_str())
        .collect();
    servers
        .iter()
        .map(|config| {
            let mut resolved = None;
            let skip =
                if config.scope == Scope::User && project_names.contains(config.name.as_str()) {
                    Some("shadowed by the project's server of the same name".to_string())
                } else if config.disabled {
                    Some("disabled in its config".to_string())
                } else if !config.trusted && config.scope == Scope::Project {
                    Some("the project is not trusted (`braincode trust`)".to_string())
                } else {
                    match config.expanded(vars) {
                        Err(err) => Some(err),
                        Ok(expanded) => match transport_problem(&expanded) {
                            Some(problem) => Some(problem),
                            None => {
                                resolved = Some(expanded);
                                None
                            }
                        },
                    }
                };
            PlannedServer {
                config: config.clone(),
                loading: config.loading.unwrap_or(settings.loading),
                schemas: config.schemas.unwrap_or(settings.schemas),
                skip,
                resolved,
            }
        })
        .collect()
}

/// The servers of the user's home and the project, planned with the process environment,
/// auth.json and `${BRAINCODE_PROJECT_DIR}` = `project_root`.
pub fn plan_for(
    home: &Home,
    servers: &[McpServerConfig],
    settings: &McpSettings,
    project_root: &Path,
) -> Vec<PlannedServer> {
    plan_servers(
        servers,
        settings,
        &ProcessVars {
            home,
            project_dir: Some(project_root),
        },
    )
}

fn transport_problem(config: &McpServerConfig) -> Option<String> {
    match config.transport {
        McpTransport::Stdio => match config.command.as_deref().map(str::trim) {
            None | Some("") if config.url.is_some() => Some(
                "it has a `url` but type stdio: set \"type\": \"http\" for a streamable HTTP server"
                    .into(),
            ),
            None | Some("") => Some("no `command` configured".into()),
            Some(_) => None,
        },
        McpTransport::Http => match config.url.as_deref().map(str::trim) {
            None | Some("") => Some("no `url` configured".into()),
            Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Some(format!("url {url:?} is not an http(s) URL"))
            }
            Some(_) => None,
        },
        McpTransport::Sse => Some(
            "the legacy SSE transport is not supported; most servers also serve streamable HTTP: try \"type\": \"http\" with the server's /mcp URL"
                .into(),
        ),
    }
}

/// The OS sandboxes MCP stdio servers run in (one with network, one without), built on first
/// need: building one walks the project for secret files.
pub struct McpSandboxes {
    home: Home,
    project_root: PathBuf,
    writable: Vec<PathBuf>,
    with_network: std::sync::OnceLock<Result<Arc<Sandbox>, String>>,
    without_network: std::sync::OnceLock<Result<Arc<Sandbox>, String>>,
}

impl McpSandboxes {
    /// Sandboxes for servers of `project_root` (`writable`: extra writable roots from
    /// settings).
    pub fn new(home: &Home, project_root: &Path, writable: Vec<PathBuf>) -> Self {
        Self {
            home: home.clone(),
            project_root: project_root.to_path_buf(),
            writable,
            with_network: std::sync::OnceLock::new(),
            without_network: std::sync::OnceLock::new(),
        }
    }

    fn get(&self, network: bool) -> Result<Arc<Sandbox>, String> {
        let cell = if network {
            &self.with_network
        } else {
            &self.without_network
        };
        cell.get_or_init(|| {
            let user_home = std::env::var_os("HOME").map(PathBuf::from);
            let mut policy = SandboxPolicy::for_project(
                &self.project_root,
                user_home.as_deref(),
                self.home.root(),
            );
            policy.network = network;
            policy.writable.extend(self.writable.iter().cloned());
            Sandbox::new(policy)
                .map(Arc::new)
                .map_err(|err| err.to_string())
        })
        .clone()
    }
}

/// Where a user-level stdio server starts: its `cwd` (absolute or `~/…`), else the user's
/// home; never the project, whose files would shadow the server's own (`python3 -m name`
/// imports `name.py` from its working directory first).
fn user_server_dir(configured: Option<&str>, project_root: &Path) -> Result<PathBuf, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dir = match configured.map(str::trim) {
        Some(raw) => match (raw.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ if Path::new(raw).is_absolute() => PathBuf::from(raw),
            _ => {
                return Err(format!(
                    "cwd {raw:?} of a user-level server must be absolute or start with ~/"
                ));
            }
        },
        None => home
            .filter(|home| home.is_dir() && !home.starts_with(project_root))
            .unwrap_or_else(|| PathBuf::from("/")),
    };
    Ok(dir)
}

/// `PATH` without the entries a project could plant programs in: relative ones (they resolve
/// from the working directory), empty ones (the working directory) and ones inside the
/// project (`node_modules/.bin`, `.venv/bin`).
pub fn path_outside(path: &std::ffi::OsStr, project_root: &Path) -> std::ffi::OsString {
    let project = std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.into());
    let kept: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .filter(|dir| {
            let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            !real.starts_with(&project) && !dir.starts_with(project_root)
        })
        .collect();
    std::env::join_paths(kept).unwrap_or_default()
}

/// The hub's spec of a startable server. A stdio server's command runs in the sandbox (unless
/// its user-level entry says `"sandbox": false`), with secrets scrubbed from the inherited
/// environment and its own `env` added. A project server starts in the project root (or its
/// `cwd` inside the project); a user-level one outside it ([`user_server_dir`]), with a
/// `PATH` that leads nowhere into the project ([`path_outside`]), so the repository cannot
/// stand in for the program or the modules the user configured.
pub fn server_spec(
    planned: &PlannedServer,
    project_root: &Path,
    sandboxes: &McpSandboxes,
) -> Result<ServerSpec, String> {
    if let Some(skip) = &planned.skip {
        return Err(skip.clone());
    }
    let config = planned
        .resolved
        .as_ref()
        .ok_or_else(|| "not resolved".to_string())?;
    let startup_timeout = config
        .startup_timeout_ms
        .map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_millis);
    let call_timeout = config
        .call_timeout_ms
        .map_or(DEFAULT_CALL_TIMEOUT, Duration::from_millis);
    let endpoint = match config.transport {
        McpTransport::Http | McpTransport::Sse => Endpoint::Http {
            url: config.url.clone().unwrap_or_default(),
            headers: config.http_headers.clone(),
        },
        McpTransport::Stdio => {
            let program = config.command.clone().unwrap_or_default();
            let user_level = config.scope == Scope::User;
            let cwd = match (&config.cwd, user_level) {
                (configured, true) => user_server_dir(configured.as_deref(), project_root)?,
                (Some(dir), false) => {
                    let dir = project_root.join(dir);
                    if !dir.starts_with(project_root)
                        || dir
                            .components()
                            .any(|c| c == std::path::Component::ParentDir)
                    {
                        return Err(format!("cwd {:?} is outside the project", config.cwd));
                    }
                    dir
                }
                (None, false) => project_root.to_path_buf(),
            };
            // The server's own `env` may set PATH: that one is the user's word.
            let path = (user_level && !config.env.contains_key("PATH"))
                .then(|| std::env::var_os("PATH"))
                .flatten()
                .map(|path| path_outside(&path, project_root));
            let sandbox = if config.sandbox {
                Some(sandboxes.get(config.network).map_err(|err| {
                    format!(
                        "the OS sandbox is unavailable ({err}); a user-level server may set \"sandbox\": false to run unconfined"
                    )
                })?)
            } else {
                None
            };
            let display = std::iter::once(program.as_str())
                .chain(config.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ");
            let args = config.args.clone();
            let env = config.env.clone();
            let command: CommandFactory = Arc::new(move || {
                let mut command = match &sandbox {
                    Some(sandbox) => {
                        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
                        sandbox.command(program.as_ref(), &args, &cwd)
                    }
                    None => {
                        let mut command = std::process::Command::new(&program);
                        command.args(&args).current_dir(&cwd);
                        braincode_sandbox::scrub_secret_env(&mut command);
                        braincode_sandbox::die_with_parent(&mut command);
                        command
                    }
                };
                if let Some(path) = &path {
                    command.env("PATH", path);
                }
                // The server's own variables are meant for it: added after the scrub.
                command.envs(&env);
                command
            });
            Endpoint::Stdio { command, display }
        }
    };
    Ok(ServerSpec {
        name: config.name.clone(),
        endpoint,
        startup_timeout,
        call_timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_level_server_gets_no_path_into_the_project() {
        let project = Path::new("/work/proj");
        let path = std::ffi::OsString::from(
            "/usr/bin::.:node_modules/.bin:/work/proj/.venv/bin:/work/proj-other/bin:/bin",
        );
        assert_eq!(
            path_outside(&path, project),
            std::ffi::OsString::from("/usr/bin:/work/proj-other/bin:/bin")
        );
    }

    #[test]
    fn a_user_level_server_starts_outside_the_project() -> Result<(), String> {
        let project = Path::new("/nonexistent/proj");
        assert_eq!(
            user_server_dir(Some("/srv/tools"), project)?,
            PathBuf::from("/srv/tools")
        );
        assert!(user_server_dir(Some("relative"), project).is_err());
        let default = user_server_dir(None, project)?;
        assert!(default.is_absolute() && !default.starts_with(project));
        Ok(())
    }
}
