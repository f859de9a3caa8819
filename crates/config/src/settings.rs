//! `settings.json`: the global mode, default brain, feature switches, config server address
//! and `@path` reference policy.

use serde::{Deserialize, Serialize};

use braincode_protocol::Mode;

use crate::json_io::{self, FieldPath};
use crate::{ConfigError, Home};

/// The id of the brain used when settings do not name one.
pub const DEFAULT_BRAIN_ID_FALLBACK: &str = "brain";

/// Feature switches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Features {
    /// Run hooks from hooks.json (`false` disables every hook).
    pub hooks: bool,
    /// Let the primary agent dispatch specialists during its run.
    pub dynamic_dispatch: bool,
}

impl Default for Features {
    fn default() -> Self {
        Self {
            hooks: true,
            dynamic_dispatch: true,
        }
    }
}

/// Where the local control server listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConfigServer {
    /// Bind address (default `127.0.0.1`).
    pub host: String,
    /// Port (default 14580).
    pub port: u16,
}

impl Default for ConfigServer {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 14580,
        }
    }
}

/// Which files `@path` references may read.
///
/// By default only files inside the project root (after resolving `..`, `~` and symlinks)
/// can be inlined into a prompt, so a stray `@~/.ssh/id_rsa` is refused instead of being sent
/// to a provider.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReferenceSettings {
    /// Allow any readable file (turns the containment check off).
    pub allow_outside_project: bool,
    /// Extra directories (or files) outside the project that may be referenced. Entries may be
    /// absolute, start with `~/`, or be relative to the project root.
    pub allowed_paths: Vec<String>,
}

/// The contents of `settings.json`, with defaults for every missing field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Settings {
    /// File format version (1).
    pub version: u32,
    /// Global mode (auto or radical).
    pub mode: Mode,
    /// Brain preset used for runs.
    pub default_brain_id: String,
    /// Feature switches.
    pub features: Features,
    /// Control server address.
    pub config_server: ConfigServer,
    /// `@path` reference policy.
    pub references: ReferenceSettings,
    /// The OS sandbox commands run in.
    pub sandbox: SandboxSettings,
    /// Defaults for every model call (timeouts, retries, reply cap); a model's own entry in
    /// models.json wins.
    pub models: braincode_protocol::ModelCallSettings,
    /// How MCP servers are started and shown to agents; a server's own entry wins.
    pub mcp: McpSettings,
    /// When agents' conversations are compacted.
    pub context: ContextSettings,
    /// Subscription logins: endpoint overrides.
    #[serde(skip_serializing_if = "crate::AuthSettings::is_empty")]
    pub auth: crate::AuthSettings,
    /// Whether the file names `defaultBrainId` itself (not the default): without it, a run
    /// picks the brain of a provider whose key is present.
    #[serde(skip)]
    pub default_brain_explicit: bool,
}

/// `settings.json` → `context`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ContextSettings {
    /// Compact an agent's conversation when its estimated input reaches this share (percent,
    /// 30..=95) of the model's context window (or of the brain's `maxInputTokens`, when
    /// smaller). The brain's `context.compaction` turns it off (`manual`).
    pub compact_at_percent: u8,
    /// Who writes an on-demand handoff (`/handoff`, `braincode sessions handoff`):
    /// `heuristic` (default: no model call) or `model` (the brain's `summarize` role, falling
    /// back to the heuristic on failure or timeout). A run's own closing handoff is always
    /// heuristic.
    pub handoff_summarizer: HandoffSummarizer,
    /// How long the model summarizer may take (1,000..=300,000 ms).
    pub handoff_timeout_ms: u64,
}

/// `settings.json` → `context.handoffSummarizer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandoffSummarizer {
    /// The bounded summary built from the journal, without a model.
    #[default]
    Heuristic,
    /// The brain's `summarize` role, with the heuristic as fallback.
    Model,
}

impl Default for ContextSettings {
    fn default() -> Self {
        Self {
            compact_at_percent: 80,
            handoff_summarizer: HandoffSummarizer::Heuristic,
            handoff_timeout_ms: 20_000,
        }
    }
}

/// MCP defaults (`settings.json` → `mcp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct McpSettings {
    /// When servers start: `background` (default: at run start, never holding up the first
    /// model request), `eager` (an agent waits for them up to `startupBudgetMs` before its
    /// first request) or `lazy` (on an agent's first use).
    pub loading: crate::McpLoadingStrategy,
    /// How long an agent waits for `eager` servers (0..120,000 ms).
    pub startup_budget_ms: u64,
    /// How agents see tools: `lazy` (default: one `mcp_search` tool, schemas on demand) or
    /// `eager` (every schema up front).
    pub schemas: crate::McpSchemas,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            loading: crate::McpLoadingStrategy::Background,
            startup_budget_ms: 10_000,
            schemas: crate::McpSchemas::Lazy,
        }
    }
}

/// The OS sandbox every command runs in (shell, exec sessions, scripts, hooks).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// Let commands reach the network (default off; `braincode run --allow-network` for one
    /// run).
    pub allow_network: bool,
    /// Extra directories commands may write (absolute, or starting with `~/`), e.g. a shared
    /// build cache.
    pub writable_paths: Vec<String>,
    /// Host UNIX sockets commands may connect to (absolute, or starting with `~/`), e.g.
    /// `/var/run/docker.sock`; every other socket of the host is refused.
    pub allow_unix_sockets: Vec<String>,
    /// Host names added to the package registries on the network allowlist (`--fetch-deps`,
    /// `--allow-network=registries`), e.g. a company mirror; `*.example.org` covers its
    /// subdomains. IP addresses are never allowed.
    pub network_allow: Vec<String>,
    /// Use a sandbox that does not enforce everything (Landlock: secret files inside the
    /// project readable, protected paths only checked after each command) for commands that
    /// run without a person's approval (`--yes`, checks under `--allow-edits`). Off: such
    /// commands then need a person. Each run that uses it says so in a warning.
    pub allow_partial: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            version: 1,
            mode: Mode::Auto,
            default_brain_id: DEFAULT_BRAIN_ID_FALLBACK.into(),
            features: Features::default(),
            config_server: ConfigServer::default(),
            references: ReferenceSettings::default(),
            sandbox: SandboxSettings::default(),
            models: braincode_protocol::ModelCallSettings::default(),
            mcp: McpSettings::default(),
            context: ContextSettings::default(),
            auth: crate::AuthSettings::default(),
            default_brain_explicit: false,
        }
    }
}

impl Settings {
    /// Checks the rules serde cannot express. `text` (the file contents) locates the field.
    fn validate(&self, path: &std::path::Path, text: Option<&str>) -> Result<(), ConfigError> {
        let root = FieldPath::root();
        if self.version != 1 {
            return Err(json_io::invalid_field(
                path,
                text,
                &root.key("version"),
                format!("unsupported version {}", self.version),
                "set \"version\": 1",
            ));
        }
        if self.default_brain_id.trim().is_empty() {
            return Err(json_io::invalid_field(
                path,
                text,
                &root.key("defaultBrainId"),
                "the default brain id is empty",
                "name a brain id from brains.json, or remove the field to use \"brain\"",
            ));
        }
        if self.config_server.host.trim().is_empty() {
            return Err(json_io::invalid_field(
                path,
                text,
                &root.key("configServer").key("host"),
                "the host is empty",
                "use \"127.0.0.1\"",
            ));
        }
        if self.config_server.port == 0 {
            return Err(json_io::invalid_field(
                path,
                text,
                &root.key("configServer").key("port"),
                "port 0 is not a fixed port",
                "use a port from 1 to 65535 (default 14580)",
            ));
        }
        if self.mcp.startup_budget_ms > crate::MAX_MCP_STARTUP_TIMEOUT_MS {
            return Err(json_io::invalid_field(
                path,
                text,
                &root.key("mcp").key("startupBudgetMs"),
                format!(
                    "{} ms is over the 120,000 ms limit",
                    self.mcp.startup_budget_ms
                ),
                "use 0 (do not wait) to 120000",
            ));
        }
        if !(30..=95).contains(&self.context.compact_at_percent) {
            return Err(json_io::invalid_field(
                path,
                text,
                &root.key("context").key("compactAtPercent"),
                format!("{}% is outside 30..95", self.context.compact_at_percent),
                "use a share of the model's window from 30 to 95 (default 80); turn compaction off with the brain's context.compaction: manual",
            ));
        }
        if !(1_000..=300_000).contains(&self.context.handoff_timeout_ms) {
            return Err(json_io::invalid_field(
                path,
                text,
                &root.key("context").key("handoffTimeoutMs"),
                format!(
                    "{} ms is outside 1,000..300,000",
                    self.context.handoff_timeout_ms
                ),
                "use 1000 to 300000 (default 20000)",
            ));
        }
        if let Some(field) = self.models.invalid_field() {
            return Err(json_io::invalid_field(
                path,
                text,
                &root.key("models").keys(field),
                "0 disables nothing: it would fail every call",
                "use a positive number, or remove the field for the default",
            ));
        }
        self.auth.validate(path, text)?;
        for (i, entry) in self.references.allowed_paths.iter().enumerate() {
            if entry.trim().is_empty() {
                return Err(json_io::invalid_field(
                    path,
                    text,
                    &root.key("references").key("allowedPaths").index(i),
                    "empty path",
                    "remove the empty entry",
                ));
            }
        }
        Ok(())
    }

    /// Applies the migrations of older files in memory (the file is not rewritten): the
    /// legacy default brain id `default` is now `brain`.
    fn migrate(&mut self) {
        if self.default_brain_id == "default" {
            self.default_brain_id = DEFAULT_BRAIN_ID_FALLBACK.into();
        }
    }
}

/// Reads `settings.json` (defaults when missing; an empty file is an error). A malformed file is an error with
/// its line, column and field; it is never rewritten.
pub fn load_settings(home: &Home) -> Result<Settings, ConfigError> {
    let path = home.settings_path();
    let Some(text) = json_io::read_config_text(&path)? else {
        return Ok(Settings::default());
    };
    let mut settings: Settings = json_io::parse_json_text(&path, &text)?;
    settings.validate(&path, Some(&text))?;
    settings.migrate();
    settings.default_brain_explicit = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .is_some_and(|value| value.get("defaultBrainId").is_some());
    Ok(settings)
}

/// Validates and writes `settings.json` atomically (mode 0644).
pub fn save_settings(home: &Home, settings: &Settings) -> Result<(), ConfigError> {
    let path = home.settings_path();
    settings.validate(&path, None)?;
    let mut value = serde_json::to_value(settings).map_err(|err| ConfigError::Invalid {
        path: path.clone(),
        location: Box::default(),
        message: format!("the settings cannot be written as JSON: {err}"),
        hint: "report this as a bug".into(),
    })?;
    // A brain the user never chose stays unchosen, so a provider key can still pick one.
    if !settings.default_brain_explicit
        && let Some(object) = value.as_object_mut()
    {
        object.remove("defaultBrainId");
    }
    json_io::write_json_atomic(&path, &value, 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_when_missing() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let settings = load_settings(&home).unwrap();
        assert_eq!(settings, Settings::default());
        assert_eq!(settings.config_server.port, 14580);
        assert!(settings.features.hooks);
        // Reading never creates anything.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn partial_file_keeps_defaults_and_migrates() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        std::fs::write(
            home.settings_path(),
            r#"{"mode": "radical", "defaultBrainId": "default", "theme": "dark"}"#,
        )
        .unwrap();
        let settings = load_settings(&home).unwrap();
        assert_eq!(settings.mode, Mode::Radical);
        assert_eq!(settings.default_brain_id, "brain");
        assert!(settings.features.dynamic_dispatch);
    }

    #[test]
    fn bad_mode_names_field_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let text = "{\n  \"version\": 1,\n  \"mode\": \"wild\"\n}\n";
        std::fs::write(home.settings_path(), text).unwrap();
        let err = load_settings(&home).unwrap_err().to_string();
        assert!(err.contains("settings.json:3:"), "{err}");
        assert!(err.contains("mode"), "{err}");
        assert!(err.contains("wild"), "{err}");
        // The malformed file is left exactly as it was.
        assert_eq!(std::fs::read_to_string(home.settings_path()).unwrap(), text);
    }

    #[test]
    fn rule_violations_are_located() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        std::fs::write(
            home.settings_path(),
            "{\n  \"configServer\": {\n    \"port\": 0\n  }\n}",
        )
        .unwrap();
        let err = load_settings(&home).unwrap_err().to_string();
        assert!(
            err.contains("settings.json:3:13: configServer.port"),
            "{err}"
        );
    }

    #[test]
    fn save_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("h"));
        let mut settings = Settings::default();
        settings.references.allowed_paths.push("~/notes".into());
        save_settings(&home, &settings).unwrap();
        assert_eq!(load_settings(&home).unwrap(), settings);
    }
}
