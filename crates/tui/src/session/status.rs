//! What the session says about itself: the Brain the next request uses, `/usage`, `/doctor`
//! and the permission mode Shift+Tab cycles.

use std::collections::BTreeMap;
use std::path::Path;

use braincode_config::Home;
use braincode_protocol::{BrainRef, Usage};
use braincode_runtime::{LoadOptions, PermissionMode, RunConfig};

use crate::app::App;
use crate::view::fmt_tokens;

/// The Brain (and its mode) the next request would load, or `None` when the configuration
/// does not load (the request will say why).
pub(crate) fn configured_brain(
    home: &Home,
    project_root: &Path,
    brain: Option<&str>,
) -> Option<BrainRef> {
    let load = LoadOptions {
        project_root: project_root.to_path_buf(),
        brain_id: brain.map(str::to_string),
        mode: None,
    };
    let config = RunConfig::load(home, &load).ok()?;
    Some(BrainRef {
        id: config.brain_id.clone(),
        name: config.brain.name.clone(),
        mode: config.mode,
    })
}

/// What a change of permission mode says, with what the mode does.
pub(crate) fn mode_lines(permission: PermissionMode, changed: bool) -> Vec<String> {
    let head = if changed {
        format!(
            "{} mode for the next requests: {}",
            permission.label(),
            permission.describe()
        )
    } else {
        format!("{} mode: {}", permission.label(), permission.describe())
    };
    let names: Vec<&str> = PermissionMode::CYCLE.iter().map(|m| m.label()).collect();
    vec![
        head,
        format!(
            "Shift+Tab cycles the modes ({}); /permissions <mode> picks one",
            names.join(" → ")
        ),
    ]
}

fn usage_cells(usage: &Usage) -> String {
    let mut text = format!(
        "{:>8} in {:>8} out",
        fmt_tokens(usage.input + usage.cache_read),
        fmt_tokens(usage.output)
    );
    if usage.cache_read > 0 {
        text.push_str(&format!(" ({} from cache)", fmt_tokens(usage.cache_read)));
    }
    text
}

/// `/usage`: the tokens (and cost) of this session's requests shown here, each request,
/// then by model.
pub(crate) fn usage_lines(app: &App) -> Vec<String> {
    let turns = app.turns();
    if turns.is_empty() {
        return vec!["no request yet in this session: nothing used".into()];
    }
    let mut lines = vec!["tokens of this session's requests (input includes cache reads)".into()];
    let mut by_model: BTreeMap<String, Usage> = BTreeMap::new();
    let mut total = Usage::default();
    let mut cost = None::<f64>;
    for (index, turn) in turns.iter().enumerate() {
        let metrics = turn.state().token_metrics();
        for (model, usage) in &metrics.by_model {
            by_model.entry(model.clone()).or_default().add(usage);
        }
        total.add(&metrics.total);
        let turn_cost = turn.state().cost_usd();
        if let Some(value) = turn_cost {
            cost = Some(cost.unwrap_or(0.0) + value);
        }
        let prompt: String = turn
            .request()
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(40)
            .collect();
        lines.push(format!(
            "  #{:<2} {}  {} call(s){}  {prompt}",
            index + 1,
            usage_cells(&metrics.total),
            metrics.calls,
            turn_cost.map_or(String::new(), |c| format!(
                "  {}",
                braincode_session::report::fmt_cost(c)
            )),
        ));
    }
    if !by_model.is_empty() {
        lines.push("by model".into());
        for (model, usage) in &by_model {
            lines.push(format!("  {}  {model}", usage_cells(usage)));
        }
    }
    lines.push(format!(
        "total {}{}",
        usage_cells(&total).trim_start(),
        cost.map_or(
            " (no price known for these models)".to_string(),
            |c| format!(" · {}", braincode_session::report::fmt_cost(c))
        )
    ));
    lines.push("`braincode usage` sums every session".into());
    lines
}

/// `/doctor`: `braincode doctor` for this project, its report as it prints it.
pub(crate) async fn doctor_lines(project_root: &Path) -> Vec<String> {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => return vec![format!("doctor could not start: {err}")],
    };
    let output = tokio::process::Command::new(exe)
        .arg("doctor")
        .arg("--project")
        .arg(project_root)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(std::time::Duration::from_secs(60), output).await {
        Ok(Ok(output)) => {
            let mut lines: Vec<String> = String::from_utf8_lossy(&output.stdout)
                .lines()
                .chain(String::from_utf8_lossy(&output.stderr).lines())
                .map(str::to_string)
                .filter(|line| !line.trim().is_empty())
                .collect();
            if lines.is_empty() {
                lines.push(format!("doctor said nothing (exit {})", output.status));
            }
            lines
        }
        Ok(Err(err)) => vec![format!("doctor could not start: {err}")],
        Err(_) => vec!["doctor took more than a minute: run `braincode doctor` in a shell".into()],
    }
}
