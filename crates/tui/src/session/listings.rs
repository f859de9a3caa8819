//! What the listing commands show (`/model`, `/agents`, `/hooks`; `/skill` is in `skills`),
//! read with the
//! run's own configuration loader, so the session shows exactly what a request would use.

use braincode_config::Home;
use braincode_protocol::Role;
use braincode_runtime::{LoadOptions, RunConfig};

use super::TuiOptions;

/// The configuration the next request would load.
fn load(home: &Home, options: &TuiOptions, brain: Option<&str>) -> Result<RunConfig, Vec<String>> {
    load_at(home, &options.project_root, brain)
}

/// The configuration a request in `project_root` would load.
pub(super) fn load_at(
    home: &Home,
    project_root: &std::path::Path,
    brain: Option<&str>,
) -> Result<RunConfig, Vec<String>> {
    let load = LoadOptions {
        project_root: project_root.to_path_buf(),
        brain_id: brain.map(str::to_string),
        mode: None,
    };
    RunConfig::load(home, &load)
        .map_err(|err| vec![format!("the configuration does not load: {err}")])
}

/// `/model`: each routed role's model chain in the brain the next request uses.
pub(super) fn models(home: &Home, options: &TuiOptions, brain: Option<&str>) -> Vec<String> {
    let config = match load(home, options, brain) {
        Ok(config) => config,
        Err(lines) => return lines,
    };
    let mut lines = vec![format!(
        "brain {} ({}) · mode {}",
        config.brain_id,
        config.brain.name,
        config.mode.as_str()
    )];
    lines.push(format!(
        "  {:<12} {}",
        "routeBrain",
        config.brain.router_policy().chain().join(" → ")
    ));
    for role in Role::ROUTED {
        lines.push(format!(
            "  {:<12} {}",
            role.as_str(),
            config.brain.policy(role).chain().join(" → ")
        ));
    }
    lines.push("change models in brains.json (braincode doctor checks it)".into());
    lines
}

/// `/agents`: the roles a plan can use, with what each one may do.
pub(super) fn agents(home: &Home, options: &TuiOptions, brain: Option<&str>) -> Vec<String> {
    let config = match load(home, options, brain) {
        Ok(config) => config,
        Err(lines) => return lines,
    };
    let mut lines = vec![format!("roles of brain {}:", config.brain_id)];
    for role in Role::ROUTED {
        let tools = if braincode_brain::is_read_only_support_role(role) {
            "read tools as a support worker"
        } else {
            "no tools as a support worker"
        };
        let model = config
            .brain
            .policy(role)
            .chain()
            .into_iter()
            .next()
            .unwrap_or_default();
        lines.push(format!("  {:<12} {model:<32} {tools}", role.as_str()));
    }
    lines
}

/// `/hooks`: the hook handlers requests run (an untrusted project's own are not among them).
pub(super) fn hooks(home: &Home, options: &TuiOptions) -> Vec<String> {
    let config = match load(home, options, None) {
        Ok(config) => config,
        Err(lines) => return lines,
    };
    let user_path = home.hooks_path();
    let user_text = std::fs::read_to_string(&user_path).unwrap_or_default();
    let user_rows = braincode_config::hook_rows(&user_text);
    let mut lines: Vec<String> = Vec::new();
    if !user_rows.is_empty() {
        lines.push(format!("yours ({}):", user_path.display()));
    }
    for (n, row) in user_rows.iter().enumerate() {
        lines.push(format!(
            "  {:>2}  {:<16} {:<10} {}{}",
            n + 1,
            row.event,
            row.matcher_shown(),
            row.command,
            if row.enabled { "" } else { "  (off)" }
        ));
    }
    if !user_rows.is_empty() {
        lines.push("  /hooks off <n> switches one off, /hooks on <n> back on".into());
    }
    let project: Vec<String> = config
        .hooks
        .iter()
        .filter(|hook| hook.source != user_path)
        .map(|hook| {
            format!(
                "  {:<16} {:<10} {}{}",
                hook.event.name(),
                hook.matcher.as_deref().unwrap_or("*"),
                hook.command.as_deref().unwrap_or("(no command)"),
                if hook.enabled { "" } else { "  (off)" }
            )
        })
        .collect();
    if !project.is_empty() {
        lines.push("this project's:".into());
        lines.extend(project);
    }
    if lines.is_empty() {
        lines.push("no hooks run for this project".into());
    }
    lines.extend(config.trust.notice());
    lines
}

/// `/brain` with no id: the Brain Models there are, the one in use marked.
pub(super) fn brains(home: &Home, current: Option<&str>) -> Vec<String> {
    let presets = match braincode_runtime::load_brain_presets(home) {
        Ok(presets) => presets,
        Err(err) => return vec![format!("brains.json does not load: {err}")],
    };
    let default = braincode_config::load_settings(home)
        .ok()
        .map(|settings| settings.default_brain_id);
    let in_use = current.map(str::to_string).or(default);
    let mut lines: Vec<String> = presets
        .iter()
        .map(|preset| {
            let mark = if in_use.as_deref() == Some(preset.id.as_str()) {
                "●"
            } else {
                " "
            };
            format!(
                " {mark} {:<16} {}",
                preset.id,
                preset.name.as_deref().unwrap_or("")
            )
        })
        .collect();
    lines.push("/brain <id> uses another one for the next requests".into());
    lines
}
