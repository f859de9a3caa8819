//! The configuration of a run, loaded from disk by one loader: [`RunConfig::load`].
//!
//! Every reader of the configuration — `braincode run` (and the TUI and web panel through
//! it), `braincode doctor`, `braincode permissions`, the local-model check — goes through
//! this module, so they accept and reject the same files with the same messages. A reader
//! that reports each file's problem separately and goes on (`doctor`) calls the per-file
//! functions below; [`RunConfig::load`] is built from exactly those functions, so each file
//! has one reader.
//!
//! | file | function | error variant |
//! |---|---|---|
//! | `settings.json` | [`load_settings`] | [`ConfigError::Settings`] |
//! | `brains.json` | [`load_brain_presets`], then [`select_brain`] | [`ConfigError::Brains`], [`ConfigError::Brain`] |
//! | `models.json` | [`load_models`] | [`ConfigError::Models`] |
//! | `tools.json` | [`read_tools_file`] / [`load_tools`], [`permission_policy`] | [`ConfigError::Tools`], [`ConfigError::ToolsRules`], [`ConfigError::Permissions`] |
//! | `hooks.json` (user, trusted project) | [`load_hook_sources`] | [`ConfigError::Hooks`] |
//! | the workspace trust store | [`load_trust`] | [`ConfigError::TrustStore`] |

mod checks;
mod error;
mod tools;

use std::path::{Path, PathBuf};

use crate::local_servers::{LOCAL_SERVER_BRAIN, LOCAL_SERVERS_ENV, LocalServer};
use braincode_brain::{BrainModel, BrainPreset};
use braincode_config::{Home, HookSource, ProjectTrust, Settings, SupportBundle};
use braincode_protocol::{Mode, ModelDefinition, Role};
use braincode_tools::{PermissionPolicy, ToolsConfig};

use crate::hooks::{HookCommand, resolve_hooks};

pub use checks::{LoadedChecks, PROJECT_CHECKS_FILE, load_checks};
pub use error::{BrainOrigin, ConfigError, FileError, ToolsProblem};
pub use tools::{load_tools, permission_policy, read_tools_file};

/// What a run asks of the loader: the project, and the choices that override settings.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Project root (project hooks, support files and trust are read from it).
    pub project_root: PathBuf,
    /// Brain to use instead of `settings.defaultBrainId`.
    pub brain_id: Option<String>,
    /// Mode to use instead of `settings.mode`.
    pub mode: Option<Mode>,
}

impl LoadOptions {
    /// Options for `project_root` with no overrides.
    pub fn new(project_root: impl Into<PathBuf>) -> Self {
        Self {
            project_root: project_root.into(),
            brain_id: None,
            mode: None,
        }
    }
}

impl From<&crate::run::RunRequest> for LoadOptions {
    fn from(request: &crate::run::RunRequest) -> Self {
        Self {
            project_root: request.project_root.clone(),
            brain_id: request.brain_id.clone(),
            mode: request.mode,
        }
    }
}

/// Everything a run needs from disk.
#[derive(Debug)]
pub struct RunConfig {
    /// `settings.json` (defaults when missing).
    pub settings: Settings,
    /// The selected brain's id (the override, or `settings.defaultBrainId`).
    pub brain_id: String,
    /// The selected brain, resolved.
    pub brain: BrainModel,
    /// Why this brain, when nobody chose it (see [`DefaultBrain::reason`]).
    pub brain_reason: Option<String>,
    /// The mode (the override, or `settings.mode`).
    pub mode: Mode,
    /// The model catalogue: built-in models merged with `models.json`.
    pub models: Vec<ModelDefinition>,
    /// `tools.json` (defaults when missing), validated.
    pub tools: ToolsConfig,
    /// The permission policy compiled from `tools.json` (default rules in front, writes to
    /// this Braincode home denied).
    pub permissions: PermissionPolicy,
    /// Hook handlers to run: the user's trusted ones and a trusted project's; none when
    /// `settings.features.hooks` is off.
    pub hooks: Vec<HookCommand>,
    /// Project and user support (AGENTS.md, skills, MCP servers); an untrusted project's
    /// configuration is not in it.
    pub support: SupportBundle,
    /// Whether the user trusts the project's configuration files.
    pub trust: ProjectTrust,
    /// The checks: `tools.json` with a trusted project's `.braincode/checks.json` over it.
    pub checks: LoadedChecks,
    /// Why the trust store could not be read, when it could not (the project then counts
    /// as untrusted: a run goes on, fail closed).
    pub trust_error: Option<ConfigError>,
}

impl RunConfig {
    /// Loads every file a run reads, in this order: settings, brains (and the selected
    /// brain), models, tools (and the permission policy), trust, hooks, project support.
    /// Trust is decided here, once: hooks, MCP servers, support files and checks are read
    /// with that one verdict.
    /// The first file that cannot be used is the error, naming the file, the line and the
    /// field; nothing is written.
    pub fn load(home: &Home, options: &LoadOptions) -> Result<RunConfig, ConfigError> {
        let settings = load_settings(home)?;
        let (selected, models) = brain_and_models(home, &settings, options.brain_id.as_deref())?;
        let tools = load_tools(home)?;
        let permissions = permission_policy(home, &tools)?;
        let (trust, trust_error) = load_trust(home, &options.project_root);
        let hooks = if settings.features.hooks {
            resolve_hooks(&load_hook_sources(home, &options.project_root, &trust)?)
        } else {
            Vec::new()
        };
        let support = braincode_config::discover_support(home, &options.project_root, &trust);
        let checks = load_checks(&options.project_root, &tools, &trust);
        let mode = options.mode.unwrap_or(settings.mode);
        Ok(RunConfig {
            settings,
            brain_id: selected.id,
            brain: selected.brain,
            brain_reason: selected.reason,
            mode,
            models,
            tools,
            permissions,
            hooks,
            support,
            trust,
            checks,
            trust_error,
        })
    }
}

/// The brain a run uses and the model catalogue. This machine's model servers are probed
/// (up to four loopback connections and threads, about a millisecond, more when a port
/// answers slowly) only when the run may need one: no brain is named (by the request or
/// settings.json) — the default may be a server's —, the brain named is `local-server` or
/// does not resolve without it, or it names a model the catalogue lacks.
fn brain_and_models(
    home: &Home,
    settings: &Settings,
    requested: Option<&str>,
) -> Result<(SelectedBrain, Vec<ModelDefinition>), ConfigError> {
    let mut presets = braincode_config::load_brains(home).map_err(ConfigError::Brains)?;
    let mut models = braincode_config::load_models(home).map_err(ConfigError::Models)?;
    let named = match requested {
        Some(id) => Some(id.to_string()),
        None => (settings.default_brain_explicit).then(|| settings.default_brain_id.clone()),
    };
    if let Some(id) = named.filter(|id| id != LOCAL_SERVER_BRAIN)
        && let Ok(brain) = braincode_brain::select_brain(&presets, &id)
        && uses_only(&brain, &models)
    {
        let selected = SelectedBrain {
            id,
            brain,
            reason: None,
        };
        return Ok((selected, models));
    }
    add_local_server_preset(&mut presets);
    add_local_server_model(&mut models);
    let selected = select_brain(home, &presets, settings, requested)?;
    Ok((selected, models))
}

/// Whether every model `brain` may call (the planner's and each role's chain) is in `models`.
fn uses_only(brain: &BrainModel, models: &[ModelDefinition]) -> bool {
    std::iter::once(brain.router_policy())
        .chain(Role::ALL.iter().map(|role| brain.policy(*role)))
        .flat_map(braincode_brain::ModelPolicy::chain)
        .all(|id| models.iter().any(|m| m.id == id))
}

/// `settings.json`, or the defaults when it is missing.
pub fn load_settings(home: &Home) -> Result<Settings, ConfigError> {
    braincode_config::load_settings(home).map_err(ConfigError::Settings)
}

/// The built-in brain presets with `brains.json` merged over them by id; plus
/// `local-server` when a model server runs on this machine (and `brains.json` has none of
/// that id).
pub fn load_brain_presets(home: &Home) -> Result<Vec<BrainPreset>, ConfigError> {
    let mut presets = braincode_config::load_brains(home).map_err(ConfigError::Brains)?;
    add_local_server_preset(&mut presets);
    Ok(presets)
}

/// Adds the `local-server` preset when a model server runs here and `presets` has none.
fn add_local_server_preset(presets: &mut Vec<BrainPreset>) {
    if let Some((server, model)) = local_server()
        && !presets.iter().any(|p| p.id == LOCAL_SERVER_BRAIN)
    {
        let definition = server.definition(model);
        presets.push(braincode_brain::local_server_brain(
            LOCAL_SERVER_BRAIN,
            &definition.id,
            &format!("{} on {}", server.kind.name(), server.addr),
        ));
    }
}

/// The first model server found on this machine with a model to use, and that model.
pub fn local_server() -> Option<(&'static LocalServer, &'static str)> {
    crate::local_servers::found()
        .iter()
        .find_map(|server| Some((server, server.chosen_model()?)))
}

/// The brain a run uses when no `--brain` names one, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultBrain {
    /// The brain id.
    pub id: String,
    /// Why this one, for the person (`None` when settings.json names it).
    pub reason: Option<String>,
}

/// The providers whose key selects their preset, in order of preference when several are set.
const KEYED_PRESETS: [(&str, &str); 2] = [("anthropic", "anthropic"), ("openai", "openai")];

/// `settings.defaultBrainId` when the file names it; otherwise the preset of a provider whose
/// key is present (environment or auth.json; Anthropic first when both are), whose chains end
/// on the embedded model; otherwise the offline default brain.
pub fn default_brain(home: &Home, settings: &Settings) -> DefaultBrain {
    if settings.default_brain_explicit {
        return DefaultBrain {
            id: settings.default_brain_id.clone(),
            reason: None,
        };
    }
    let found: Vec<(&str, String)> = KEYED_PRESETS
        .iter()
        .filter_map(|(provider, preset)| {
            let key = braincode_config::resolve_api_key_with_source(home, provider, None)
                .ok()
                .flatten()?;
            let source = match key.source {
                braincode_config::KeySource::AuthFile => "a key in auth.json".to_string(),
                braincode_config::KeySource::Env(name) => format!("{name} is set"),
            };
            Some((*preset, source))
        })
        .collect();
    match found.as_slice() {
        [] => match local_server() {
            Some((server, model)) => DefaultBrain {
                id: LOCAL_SERVER_BRAIN.to_string(),
                reason: Some(format!(
                    "no OpenAI or Anthropic key found, and {} answers on {} ({} model(s)): every role runs on {model}, the embedded local model is the last fallback ({LOCAL_SERVERS_ENV}=0 turns the probe off)",
                    server.kind.name(),
                    server.addr,
                    server.models.len()
                )),
            },
            None => DefaultBrain {
                id: settings.default_brain_id.clone(),
                reason: Some(
                    "no OpenAI or Anthropic key found and no local model server (Ollama, llama-server, LM Studio, vLLM) answers: every role runs on the embedded local model (135M parameters: small; add a key with `braincode auth set`, or start a local server, for better answers)"
                        .to_string(),
                ),
            },
        },
        [(preset, source)] => DefaultBrain {
            id: (*preset).to_string(),
            reason: Some(format!(
                "{source}; the embedded local model is its last fallback (settings.json defaultBrainId picks another)"
            )),
        },
        [(preset, source), (other, other_source), ..] => DefaultBrain {
            id: (*preset).to_string(),
            reason: Some(format!(
                "{source} (and {other_source}: `--brain {other}` uses that one); the embedded local model is the last fallback (settings.json defaultBrainId picks another)"
            )),
        },
    }
}

/// The brain a run uses, resolved.
#[derive(Debug, Clone)]
pub struct SelectedBrain {
    /// Its id (the request's, or [`default_brain`]'s).
    pub id: String,
    /// The brain, resolved through its parents.
    pub brain: BrainModel,
    /// Why this one when nobody named it and settings.json does not either (a key found, a
    /// model server on this machine), for the person.
    pub reason: Option<String>,
}

/// Resolves the brain to use: `requested` when given, else [`default_brain`] (decided once:
/// it looks for keys and probes this machine's model servers).
pub fn select_brain(
    home: &Home,
    presets: &[BrainPreset],
    settings: &Settings,
    requested: Option<&str>,
) -> Result<SelectedBrain, ConfigError> {
    let (brain_id, origin, reason) = match requested {
        Some(id) => (id.to_string(), BrainOrigin::Requested, None),
        None => {
            let chosen = default_brain(home, settings);
            let origin = BrainOrigin::Settings {
                path: home.settings_path(),
            };
            (chosen.id, origin, chosen.reason)
        }
    };
    match braincode_brain::select_brain(presets, &brain_id) {
        Ok(brain) => Ok(SelectedBrain {
            id: brain_id,
            brain,
            reason,
        }),
        Err(source) => Err(ConfigError::Brain {
            brain_id,
            origin,
            brains_path: home.brains_path(),
            source: Box::new(source),
        }),
    }
}

/// The model catalogue: the built-in models merged with `models.json` by id; plus the model
/// of a server found on this machine (see [`local_server`]).
pub fn load_models(home: &Home) -> Result<Vec<ModelDefinition>, ConfigError> {
    let mut models = braincode_config::load_models(home).map_err(ConfigError::Models)?;
    add_local_server_model(&mut models);
    Ok(models)
}

/// Adds the model of a server found on this machine, unless `models` has its id.
fn add_local_server_model(models: &mut Vec<ModelDefinition>) {
    if let Some((server, model)) = local_server() {
        let definition = server.definition(model);
        if !models.iter().any(|m| m.id == definition.id) {
            models.push(definition);
        }
    }
}

/// The hook files: the user's `hooks.json`, then the project's `.agents/hooks.json` only
/// when `trust` says the user trusts the project (its handlers are then trusted as a whole).
pub fn load_hook_sources(
    home: &Home,
    project_root: &Path,
    trust: &ProjectTrust,
) -> Result<Vec<HookSource>, ConfigError> {
    braincode_config::load_hooks(home, project_root, trust).map_err(ConfigError::Hooks)
}

/// Whether the user trusts the project. A trust store that cannot be read counts as "not
/// trusted" (fail closed); its error comes back alongside, for the caller to show.
pub fn load_trust(home: &Home, project_root: &Path) -> (ProjectTrust, Option<ConfigError>) {
    let (trust, error) = braincode_config::check_trust(home, project_root);
    (trust, error.map(ConfigError::TrustStore))
}

#[cfg(test)]
mod tests;
