//! `run_script`: script resolution across ecosystems, and the tool that runs it.

mod makefile;
mod package_json;
mod resolve;
mod tool;

pub use package_json::{PackageManager, detect_package_manager, package_json_scripts};
pub use resolve::{
    CARGO_SCRIPTS, GO_SCRIPTS, PYTEST_SCRIPTS, ResolvedScript, ScriptBody, ScriptError,
    ScriptSource, available_scripts, invoked_script_bodies, resolve_script, shell_quote,
};
pub use tool::RunScript;
