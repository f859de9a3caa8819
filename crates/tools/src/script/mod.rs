//! `run_script`: script resolution across ecosystems, and the tool that runs it.

mod resolve;
mod tool;

pub use resolve::{
    CARGO_SCRIPTS, GO_SCRIPTS, PYTEST_SCRIPTS, PackageManager, ResolvedScript, ScriptBody,
    ScriptError, ScriptSource, available_scripts, detect_package_manager, invoked_script_bodies,
    package_json_scripts, resolve_script, shell_quote,
};
pub use tool::RunScript;
