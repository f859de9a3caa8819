//! What a tool call touches: the paths it writes and the commands it runs, taken from its
//! arguments by tool name (see spec Appendix G, "target extraction").

use std::path::Path;

use serde_json::Value;

use crate::args::Args;
use crate::patch::{patch_paths, symlink_paths};
use crate::script::resolve_script;
use crate::tool_args::{
    ApplyPatchArgs, ArgsError, EditFileArgs, ExecCommandArgs, GenerateImageArgs, GitDiffArgs,
    ReadFileArgs, RunScriptArgs, ShellArgs, ToolArgs, WriteStdinArgs,
};

/// Where a path target came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathOrigin {
    /// A file tool's `path` argument.
    Argument,
    /// A path in a patch.
    Patch,
    /// A shell redirection, or a file a command writes (`tee`, `cp`, `sed -i`, …).
    Redirect,
}

/// A path the call writes (or, in [`Targets::reads`], reads).
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
    /// Whether this is text typed into a running program (`write_stdin`): whatever reads it
    /// is not known, so it is never fully analysable.
    pub typed_input: bool,
}

/// Everything extracted from one call.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// Paths written.
    pub paths: Vec<PathTarget>,
    /// Files a read tool shows the model (`read_file`, `git_diff` of one path): a secret one
    /// needs a person.
    pub reads: Vec<PathTarget>,
    /// Paths created as symbolic links (a patch with mode 120000).
    pub links: Vec<String>,
    /// Commands run.
    pub commands: Vec<CommandTarget>,
    /// Problems worth showing (a script that could not be resolved, …).
    pub notes: Vec<String>,
    /// Why the arguments of a built-in tool could not be read: the call is denied.
    pub invalid: Option<String>,
}

/// The most typed text of a session (bytes, the newest) analysed with a new `write_stdin`.
pub const MAX_SESSION_HISTORY_BYTES: usize = 16 * 1024;

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
    // The checks after a patch: one approval request whose `command` joins every check.
    "run_check",
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

/// The newest part of a session's typed text, cut at a character boundary.
fn history_tail(history: &str) -> &str {
    if history.len() <= MAX_SESSION_HISTORY_BYTES {
        return history;
    }
    let mut start = history.len() - MAX_SESSION_HISTORY_BYTES;
    while !history.is_char_boundary(start) {
        start += 1;
    }
    &history[start..]
}

/// Extracts the targets of a call. Built-in tools are read through their typed arguments
/// (the same struct the tool reads); other tools by the generic, name-based reading.
pub fn extract(
    tool_name: &str,
    arguments: &Value,
    project_root: &Path,
    session_history: Option<&str>,
) -> Targets {
    // `generate_image` is offered by the runtime (it needs the run's image models), but its
    // arguments are a built-in struct like any other.
    if crate::registry::builtin_spec(tool_name).is_some() || tool_name == GenerateImageArgs::TOOL {
        return extract_builtin(tool_name, arguments, project_root, session_history);
    }
    extract_generic(tool_name, arguments, project_root)
}

fn extract_builtin(
    tool_name: &str,
    arguments: &Value,
    project_root: &Path,
    session_history: Option<&str>,
) -> Targets {
    let mut targets = Targets::default();
    let result: Result<(), ArgsError> = (|| {
        match tool_name {
            "edit_file" => {
                let args = EditFileArgs::parse(arguments)?;
                targets.paths.push(PathTarget {
                    raw: args.path,
                    base: None,
                    origin: PathOrigin::Argument,
                });
            }
            "apply_patch" => {
                let args = ApplyPatchArgs::parse(arguments)?;
                patch_targets(&args.patch, &mut targets);
            }
            "shell" => {
                let args = ShellArgs::parse(arguments)?;
                push_command(&mut targets, args.command, args.workdir);
            }
            "exec_command" => {
                let args = ExecCommandArgs::parse(arguments)?;
                push_command(&mut targets, args.cmd, args.workdir);
            }
            "write_stdin" => {
                let args = WriteStdinArgs::parse(arguments)?;
                let chars = args.chars.unwrap_or_default();
                if !chars.is_empty() {
                    let history = history_tail(session_history.unwrap_or(""));
                    targets.commands.push(CommandTarget {
                        text: format!("{history}{chars}"),
                        workdir: None,
                        origin: "input written to a running session".to_string(),
                        script_body: false,
                        typed_input: true,
                    });
                }
            }
            "run_script" => {
                let args = RunScriptArgs::parse(arguments)?;
                script_targets(&args.script, &args.args, project_root, &mut targets);
            }
            "generate_image" => {
                let args = GenerateImageArgs::parse(arguments)?;
                if let Some(path) = args.path.filter(|p| !p.trim().is_empty()) {
                    targets.paths.push(PathTarget {
                        raw: path,
                        base: None,
                        origin: PathOrigin::Argument,
                    });
                }
            }
            "read_file" => {
                let args = ReadFileArgs::parse(arguments)?;
                targets.reads.push(PathTarget {
                    raw: args.path,
                    base: None,
                    origin: PathOrigin::Argument,
                });
            }
            "git_diff" => {
                let args = GitDiffArgs::parse(arguments)?;
                if let Some(path) = args.path.filter(|p| !p.trim().is_empty()) {
                    targets.reads.push(PathTarget {
                        raw: path,
                        base: None,
                        origin: PathOrigin::Argument,
                    });
                }
            }
            _ => {
                crate::tool_args::check_builtin(tool_name, arguments)?;
            }
        }
        Ok(())
    })();
    if let Err(error) = result {
        targets.invalid = Some(error.to_string());
    }
    targets
}

fn push_command(targets: &mut Targets, text: String, workdir: Option<String>) {
    if text.trim().is_empty() {
        return;
    }
    targets.commands.push(CommandTarget {
        text,
        workdir: workdir.filter(|w| !w.trim().is_empty()),
        origin: "command".to_string(),
        script_body: false,
        typed_input: false,
    });
}

fn patch_targets(patch: &str, targets: &mut Targets) {
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
    targets.links.extend(symlink_paths(patch));
}

/// MCP and custom tools: arguments read by name, every plausible key analysed (a server may
/// read any of them).
fn extract_generic(tool_name: &str, arguments: &Value, project_root: &Path) -> Targets {
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
    if is_patch_tool(tool_name) {
        for key in ["patch", "diff", "input"] {
            if let Some(patch) = args.str(&[key]) {
                patch_targets(patch, &mut targets);
            }
        }
    }
    if is_command_tool(tool_name) {
        let workdir = args.non_empty_str(&["workdir", "cwd"]).map(str::to_string);
        for key in ["cmd", "command"] {
            if let Some(text) = command_text(&args, key)
                && !targets.commands.iter().any(|c| c.text == text)
            {
                push_command(&mut targets, text, workdir.clone());
            }
        }
    }
    if bare == "write_stdin" {
        for key in ["chars", "input"] {
            if let Some(chars) = args.non_empty_str(&[key]) {
                targets.commands.push(CommandTarget {
                    text: chars.to_string(),
                    workdir: None,
                    origin: "input written to a running session".to_string(),
                    script_body: false,
                    typed_input: true,
                });
            }
        }
    }
    if bare == "run_script"
        && let Some(script) = args.non_empty_str(&["script", "name"])
    {
        script_targets(
            script,
            &args.string_list(&["args"]),
            project_root,
            &mut targets,
        );
    }
    targets
}

/// The command text under one key: a string, or an argv array quoted back into shell text.
fn command_text(args: &Args<'_>, key: &str) -> Option<String> {
    match args.value(&[key])? {
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

fn script_targets(
    script: &str,
    script_args: &[String],
    project_root: &Path,
    targets: &mut Targets,
) {
    if script.trim().is_empty() {
        return;
    }
    match resolve_script(project_root, script, script_args) {
        // The script text behind the command line (package.json, Makefile) is looked up by
        // the policy from the command itself, as for a command typed in a shell.
        Ok(resolved) => targets.commands.push(CommandTarget {
            text: resolved.display,
            workdir: None,
            origin: format!("run_script {script}"),
            script_body: false,
            typed_input: false,
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
            None,
        );
        assert_eq!(targets.commands[0].text, "bash -lc 'git push'");
    }
}
