//! `braincode doctor --checks`: the project's checks (what the fix loop runs after an edit)
//! as a run would load them, each with whether its program is found, whether the project is
//! trusted to run it, and so whether it would run. Nothing is run: discovery reads files and
//! looks programs up on `PATH`.

use std::path::Path;

use braincode_config::Home;
use braincode_runtime::{LoadedChecks, PROJECT_CHECKS_FILE, load_checks, read_tools_file};
use braincode_tools::checks::{CheckSpec, Discovery, list, program_found};

use super::CheckStatus;
use super::checks::Checks;

/// The checks of `project` with the trust verdict a run would have.
pub(super) fn check_project_checks(home: &Home, project: &Path, checks: &mut Checks) {
    let tools = match read_tools_file(home) {
        Ok(tools) => tools.unwrap_or_default(),
        Err(err) => return checks.run_config_error("tools", &err),
    };
    let (trust, trust_error) = braincode_config::check_trust(home, project);
    if let Some(err) = trust_error {
        checks.config_error("trust", &err);
    }
    let loaded = load_checks(project, &tools, &trust);
    if let Some(problem) = &loaded.problem {
        checks.warn(
            "checks",
            problem.clone(),
            format!(
                "fix {} (`braincode checks list` shows the result)",
                project.join(PROJECT_CHECKS_FILE).display()
            ),
        );
    }
    let project_file = project.join(PROJECT_CHECKS_FILE);
    if !trust.is_trusted() && project_file.exists() {
        checks.warn(
            "checks",
            format!("{PROJECT_CHECKS_FILE} is ignored until you trust this project"),
            trust_fix(project),
        );
    }
    let discovery = list(project, &loaded.config, &loaded.overrides);
    summary(&loaded, &discovery, project_file.exists(), checks);
    for check in &discovery.checks {
        one_check(check, &loaded, project, checks);
    }
    for note in &discovery.notes {
        checks.push("checks", CheckStatus::Warning, note.clone(), None);
    }
}

/// One line for the whole: enabled, how many, how many would run.
fn summary(loaded: &LoadedChecks, discovery: &Discovery, has_file: bool, checks: &mut Checks) {
    let config = &loaded.config;
    let found = &discovery.checks;
    if !config.enabled {
        checks.ok(
            "checks",
            format!(
                "checks are disabled (\"enabled\": false in tools.json{}): the fix loop runs none",
                if has_file {
                    format!(" or {PROJECT_CHECKS_FILE}")
                } else {
                    String::new()
                }
            ),
        );
        return;
    }
    if found.is_empty() {
        let why = if discovery.notes.is_empty() {
            "no Cargo.toml, package.json scripts, pytest, go.mod or Makefile targets, and no configured scripts"
        } else {
            "the lines below say why"
        };
        checks.warn(
            "checks",
            format!("no checks found: nothing verifies an edit ({why})"),
            format!(
                "name the scripts to run in {PROJECT_CHECKS_FILE} (\"add\": [\"make:test\"]) or in tools.json (\"checks\": {{\"scripts\": [...]}})"
            ),
        );
        return;
    }
    let runnable = found
        .iter()
        .filter(|check| loaded.trusted && program_found(check))
        .count();
    checks.ok(
        "checks",
        format!(
            "{} check(s), {runnable} would run after an edit; strategy {}, {} s timeout each{}",
            found.len(),
            match config.strategy {
                braincode_tools::CheckStrategy::Smart => "smart (by the kind of change)",
                braincode_tools::CheckStrategy::All => "all (every check for every change)",
            },
            config.timeout_ms / 1_000,
            if has_file {
                format!("; {PROJECT_CHECKS_FILE} present")
            } else {
                String::new()
            }
        ),
    );
}

/// A check: its command, whether its program is found and whether it would run.
fn one_check(check: &CheckSpec, loaded: &LoadedChecks, project: &Path, checks: &mut Checks) {
    let id = format!("check:{}", check.name);
    let place = if check.dir.is_empty() {
        String::new()
    } else {
        format!(" in {}", check.dir)
    };
    let command = format!("`{}` ({}{place})", check.display, check.kind.as_str());
    if !loaded.config.enabled {
        checks.ok(id, format!("{command}: not run, checks are disabled"));
    } else if !program_found(check) {
        checks.warn(
            id,
            format!(
                "{command}: {} is not found, so the check could not run",
                check.program
            ),
            format!(
                "install {} (or put it on PATH), or add {:?} to \"disable\" in {PROJECT_CHECKS_FILE}",
                check.program, check.name
            ),
        );
    } else if !loaded.trusted {
        checks.warn(
            id,
            format!(
                "{command}: {} found; not trusted — the project's own code runs only once you trust the project or approve it for a run",
                check.program
            ),
            trust_fix(project),
        );
    } else {
        checks.ok(
            id,
            format!(
                "{command}: {} found, trusted; runs when a change selects it",
                check.program
            ),
        );
    }
}

fn trust_fix(project: &Path) -> String {
    format!(
        "read the project's scripts (package.json, Makefile, {PROJECT_CHECKS_FILE}, …), then `braincode trust {}`",
        project.display()
    )
}
