//! What a tool call touches: the paths it writes and the commands it runs, taken from its
//! arguments by tool name (see spec Appendix G, "target extraction").

use std::path::Path;

use serde_json::Value;

use crate::args::Args;
use crate::patch::patch_paths;
use crate::script::resolve_script;

/// Where a path target came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathOrigin {
    /// A file tool's `path` argument.
    Argument,
    /// A path in a patch.
    Patch,
    /// A shell redirection or `tee` inside a command.
    Redirect,
}

/// A path the call writes.
#[derive(Debug, Clone)]
pub struct PathTarget {
    /// The path as written.
    pub raw: String,
    /// Directory it is relative to, itself relative to the project root (`None`: the root).
    pub base: Option<String>,
    /// Where it came from.
    pub origin: PathOrigin,
}

/// A command the call runs.
#[derive(Debug, Clone)]
pub struct CommandTarget {
    /// Shell text.
    pub text: String,
    /// Working directory relative to the project root, when given.
    pub workdir: Option<String>,
    /// What it is (`command`, `run_script test`, `script body of deploy`, …).
    pub origin: String,
    /// Whether this is script text run by another target (it can deny or ask, but allowing
    /// is decided by the command that runs it).
    pub script_body: bool,
}

/// Everything extracted from one call.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// Paths written.
    pub paths: Vec<PathTarget>,
    /// Commands run.
    pub commands: Vec<CommandTarget>,
    /// Problems worth showing (a script that could not be resolved, …).
    pub notes: Vec<String>,
}

const PATH_TOOL_MARKERS: &[&str] = &[
    "edit_file",
    "write_file",
    "create_file",
    "filesystem__write",
    "multi_edit",
    "str_replace",
];
const COMMAND_TOOLS: &[&str] = &[
    "exec_command",
    "shell",
    "terminal",
    "bash",
    "zsh",
    "sh",
    "cmd",
    "powershell",
    "run_command",
    "execute_command",
    "run_shell_command",
    "run_terminal_cmd",
];

fn bare_name(name: &str) -> String {
    let lower = name.to_lowercase();
    match lower.strip_prefix("mcp__") {
        Some(rest) => rest.rsplit("__").next().unwrap_or(rest).to_string(),
        None => lower,
    }
}

/// Whether a tool name writes the file named by its `path` argument.
pub fn is_path_tool(name: &str) -> bool {
    let lower = name.to_lowercase();
    PATH_TOOL_MARKERS
        .iter()
        .any(|marker| lower.contains(marker))
}

/// Whether a tool name applies a patch.
pub fn is_patch_tool(name: &str) -> bool {
    matches!(bare_name(name).as_str(), "apply_patch" | "patch")
}

/// Whether a tool name runs a shell command.
pub fn is_command_tool(name: &str) -> bool {
    COMMAND_TOOLS.contains(&bare_name(name).as_str())
}

/// Extracts the targets of a call.
pub fn extract(tool_name: &str, arguments: &Value, project_root: &Path) -> Targets {
    let args = Args(arguments);
    let mut targets = Targets::default();
    let bare = bare_name(tool_name);
    if is_path_tool(tool_name) {
        for key in ["path", "file", "filePath", "file_path"] {
            if let Some(path) = args.non_empty_str(&[key]) {
                targets.paths.push(PathTarget {
                    raw: path.to_string(),
                    base: None,
                    origin: PathOrigin::Argument,
                });
            }
        }
    }
    if matches!(bare.as_str(), "move_file" | "rename_file" | "copy_file") {
        for key in ["source", "destination", "from", "to", "newPath", "new_path"] {
            if let Some(path) = args.non_empty_str(&[key]) {
                targets.paths.push(PathTarget {
                    raw: path.to_string(),
                    base: None,
                    origin: PathOrigin::Argument,
                });
            }
        }
    }
    if is_patch_tool(tool_name)
        && let Some(patch) = args.str(&["patch", "diff", "input"])
    {
        for path in patch_paths(patch) {
            for raw in [path.path, path.raw] {
                if !targets.paths.iter().any(|p| p.raw == raw) {
                    targets.paths.push(PathTarget {
                        raw,
                        base: None,
                        origin: PathOrigin::Patch,
                    });
                }
            }
        }
    }
    if is_command_tool(tool_name) {
        let workdir = args.non_empty_str(&["workdir", "cwd"]).map(str::to_string);
        if let Some(text) = command_text(&args) {
            targets.commands.push(CommandTarget {
                text,
                workdir,
                origin: "command".to_string(),
                script_body: false,
            });
        }
    }
    if bare == "write_stdin"
        && let Some(chars) = args.non_empty_str(&["chars", "input"])
    {
        targets.commands.push(CommandTarget {
            text: chars.to_string(),
            workdir: None,
            origin: "input written to a running session".to_string(),
            script_body: false,
        });
    }
    if bare == "run_script" {
        script_targets(&args, project_root, &mut targets);
    }
    targets
}

/// The command text: a string, or an argv array (`["bash", "-lc", "…"]`) quoted back into
/// shell text.
fn command_text(args: &Args<'_>) -> Option<String> {
    match args.value(&["cmd", "command"])? {
        Value::String(text) if !text.trim().is_empty() => Some(text.clone()),
        Value::Array(items) => {
            let words: Vec<String> = items
                .iter()
                .filter_map(|item| item.as_str().map(crate::script::shell_quote))
                .collect();
            (!words.is_empty()).then(|| words.join(" "))
        }
        _ => None,
    }
}

fn script_targets(args: &Args<'_>, project_root: &Path, targets: &mut Targets) {
    let Some(script) = args.non_empty_str(&["script", "name"]) else {
        return;
    };
    let script_args = args.string_list(&["args"]);
    match resolve_script(project_root, script, &script_args) {
        // The script text behind the command line (package.json, Makefile) is looked up by
        // the policy from the command itself, as for a command typed in a shell.
        Ok(resolved) => targets.commands.push(CommandTarget {
            text: resolved.display,
            workdir: None,
            origin: format!("run_script {script}"),
            script_body: false,
        }),
        Err(error) => targets.notes.push(format!("run_script: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names() {
        assert!(is_path_tool("edit_file"));
        assert!(is_path_tool("mcp__filesystem__write_file"));
        assert!(is_command_tool("bash"));
        assert!(is_command_tool("mcp__box__run_command"));
        assert!(!is_command_tool("read_file"));
        assert!(is_patch_tool("apply_patch"));
    }

    #[test]
    fn argv_commands_are_quoted() {
        let root = std::env::temp_dir();
        let targets = extract(
            "exec_command",
            &json!({"cmd": ["bash", "-lc", "git push"]}),
            &root,
        );
        assert_eq!(targets.commands[0].text, "bash -lc 'git push'");
    }
}
