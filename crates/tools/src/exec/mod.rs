//! Process tools: sessions (`exec_command`, `write_stdin`, `list_background`,
//! `kill_background`) and one-shot `shell`.

pub mod netproxy;
pub mod process;
mod session_tools;
pub mod sessions;
mod shell_tool;

pub(crate) use session_tools::SHELLS;
pub use session_tools::{ExecCommand, KillBackground, ListBackground, WriteStdin};
pub use sessions::{
    ExecLimits, ExecSessions, SessionError, SessionInfo, SessionRead, SpawnRequest,
};
pub use shell_tool::Shell;

use std::path::{Path, PathBuf};

use crate::paths::resolve_inside;

/// Resolves a `workdir` argument: a directory inside the project (the root when absent).
pub(crate) fn workdir(root: &Path, raw: Option<&str>) -> Result<PathBuf, String> {
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
        return Ok(root.to_path_buf());
    };
    let resolved = resolve_inside(root, raw).map_err(|error| format!("workdir: {error}"))?;
    if resolved.absolute.is_dir() {
        Ok(resolved.absolute)
    } else {
        Err(format!(
            "workdir {raw} is not a directory inside the project"
        ))
    }
}

/// The default shell: bash when installed, else sh.
pub(crate) fn default_shell() -> &'static str {
    let has_bash = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("bash").is_file()));
    if has_bash { "bash" } else { "sh" }
}
