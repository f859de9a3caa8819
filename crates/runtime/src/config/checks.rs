//! The checks configuration of a run: `tools.json` → `checks`, with a trusted project's
//! `.braincode/checks.json` merged over it. A malformed project file does not stop the run
//! (the reference aborted every run on it): it is named with its problem, and the run checks
//! with the user's configuration.

use std::path::Path;

use braincode_config::ProjectTrust;
use braincode_tools::ChecksConfig;
use braincode_tools::checks::{ChecksOverrides, parse_project_checks};

/// The project's checks file, relative to its root.
pub const PROJECT_CHECKS_FILE: &str = ".braincode/checks.json";
/// The largest project checks file read.
const MAX_PROJECT_CHECKS_BYTES: usize = 256 * 1024;

/// The checks configuration a run uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedChecks {
    /// `tools.json` checks with the project file merged over them.
    pub config: ChecksConfig,
    /// The project file's `add` and `disable` lists.
    pub overrides: ChecksOverrides,
    /// Why the project file was not used, when it exists and could not be (shown as a
    /// warning).
    pub problem: Option<String>,
    /// Whether the user trusts the project. Discovered checks (package.json scripts, a
    /// Makefile, pytest's conftest, cargo build scripts) are the project's own code: they run
    /// only in a trusted project, or after a person approves them for the run.
    pub trusted: bool,
}

/// The checks of `tools` with the project's file merged over them when the project's
/// configuration is trusted (an untrusted project's file is inert; the trust notice says so),
/// and whether its checks may run without a person ([`ProjectTrust::trusts_code`]).
pub fn load_checks(
    project_root: &Path,
    tools: &braincode_tools::ToolsConfig,
    trust: &ProjectTrust,
) -> LoadedChecks {
    let base = tools.checks_or_default();
    let trusted = trust.trusts_code();
    let unchanged = |problem: Option<String>| LoadedChecks {
        config: base.clone(),
        overrides: ChecksOverrides::default(),
        problem,
        trusted,
    };
    if !trust.is_trusted() {
        return unchanged(None);
    }
    let Ok(scope) = braincode_config::ReadScope::new(project_root) else {
        return unchanged(None);
    };
    let text = match scope.read_to_string(Path::new(PROJECT_CHECKS_FILE), MAX_PROJECT_CHECKS_BYTES)
    {
        Ok(read) => read.text,
        Err(err) if err.is_not_found() => return unchanged(None),
        Err(err) => {
            return unchanged(Some(format!(
                "{PROJECT_CHECKS_FILE} could not be read ({err}); using the checks of tools.json"
            )));
        }
    };
    match parse_project_checks(&text, &base) {
        Ok((config, overrides)) => LoadedChecks {
            config,
            overrides,
            problem: None,
            trusted,
        },
        Err(problem) => unchanged(Some(format!(
            "{PROJECT_CHECKS_FILE} is not valid ({problem}); using the checks of tools.json"
        ))),
    }
}
