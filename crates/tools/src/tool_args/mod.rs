//! One typed argument struct per built-in tool, read by BOTH the permission policy (to find
//! what a call touches) and the tool itself (to do it), so the two can never read different
//! fields: `{"command": "git push", "cmd": "true"}` is an error (the alias names the same
//! field twice), not two commands. Unknown fields are errors too; the lenient encodings
//! models use (`"true"`, `"200"`, an argv array) are accepted by small helpers in
//! [`lenient`]. The schema a model sees is derived from the same struct ([`schema`]): a
//! field's doc comment is its description there, so it is written for the model, on one line.

pub mod lenient;
pub mod schema;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a tool's arguments could not be read: names the tool, the field and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{tool}: invalid arguments: {}{message}. Accepted fields: {accepted}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct ArgsError {
    /// The tool.
    pub tool: &'static str,
    /// The field at fault, when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
    /// The accepted fields (their canonical names, as the schema advertises them).
    pub accepted: String,
}

/// A tool's typed arguments.
pub trait ToolArgs: DeserializeOwned + JsonSchema {
    /// The tool name.
    const TOOL: &'static str;

    /// Reads the arguments; `null` counts as `{}`.
    fn parse(arguments: &Value) -> Result<Self, ArgsError> {
        parse_with::<Self>(arguments)
    }

    /// The `parameters` JSON schema offered to models, derived from the struct.
    fn schema() -> Value {
        schema::parameters::<Self>()
    }
}

fn parse_with<T: ToolArgs>(arguments: &Value) -> Result<T, ArgsError> {
    let empty = Value::Object(serde_json::Map::new());
    let arguments = if arguments.is_null() {
        &empty
    } else {
        arguments
    };
    serde_path_to_error::deserialize(arguments).map_err(|error| {
        let path = error.path().to_string();
        let mut message = error.inner().to_string();
        if let Some((head, _)) = message.split_once(", expected one of") {
            message = head.to_string();
        }
        if message.starts_with("duplicate field") {
            message.push_str(" (an alias names the same field: give each field once)");
        }
        ArgsError {
            tool: T::TOOL,
            field: (path != "." && !path.is_empty()).then_some(path),
            message,
            accepted: schema::canonical_fields::<T>().join(", "),
        }
    })
}

/// `shell`: one command to completion.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellArgs {
    /// Shell command.
    #[serde(alias = "cmd", deserialize_with = "lenient::command")]
    pub command: String,
    /// Kill after this many ms.
    #[serde(
        rename = "timeoutMs",
        alias = "timeout_ms",
        alias = "timeout",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub timeout_ms: Option<u64>,
    /// Directory inside the project (default: root).
    #[serde(alias = "cwd", default)]
    pub workdir: Option<String>,
    /// Output bytes kept, from the end.
    #[serde(
        rename = "maxOutputBytes",
        alias = "max_output_bytes",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub max_output_bytes: Option<u64>,
    /// What the command is for (display only).
    #[serde(default)]
    pub description: Option<String>,
}

impl ToolArgs for ShellArgs {
    const TOOL: &'static str = "shell";
}

/// `exec_command`: start a command in a session.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecCommandArgs {
    /// Shell command.
    #[serde(alias = "command", deserialize_with = "lenient::command")]
    pub cmd: String,
    /// Directory inside the project (default: root).
    #[serde(alias = "cwd", default)]
    pub workdir: Option<String>,
    /// Shell to run it with (default bash, else sh).
    #[serde(default)]
    #[schemars(extend("enum" = crate::exec::SHELLS))]
    pub shell: Option<String>,
    /// Keep running in the background; only an explicit timeoutMs stops it.
    #[serde(
        alias = "run_in_background",
        alias = "detach",
        default,
        deserialize_with = "lenient::opt_bool"
    )]
    pub background: Option<bool>,
    /// Wait this many ms for output before returning.
    #[serde(
        rename = "yieldTimeMs",
        alias = "yield_time_ms",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub yield_time_ms: Option<u64>,
    /// Kill after this many ms.
    #[serde(
        rename = "timeoutMs",
        alias = "timeout_ms",
        alias = "timeout",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub timeout_ms: Option<u64>,
    /// Output bytes kept, from the end.
    #[serde(
        rename = "maxOutputBytes",
        alias = "max_output_bytes",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub max_output_bytes: Option<u64>,
    /// Output kept in tokens (4 bytes each) when maxOutputBytes is not given.
    #[serde(
        rename = "maxOutputTokens",
        alias = "max_output_tokens",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub max_output_tokens: Option<u64>,
    /// What the command is for (display only).
    #[serde(default)]
    pub description: Option<String>,
}

impl ToolArgs for ExecCommandArgs {
    const TOOL: &'static str = "exec_command";
}

/// `write_stdin`: type into (or poll) a running session.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteStdinArgs {
    /// Session id from exec_command.
    #[serde(
        rename = "sessionId",
        alias = "session_id",
        alias = "id",
        deserialize_with = "lenient::req_u64"
    )]
    pub session_id: u64,
    /// Text to type (\n presses Enter); empty to just poll.
    #[serde(alias = "input", default)]
    pub chars: Option<String>,
    /// Wait this many ms for output before returning.
    #[serde(
        rename = "yieldTimeMs",
        alias = "yield_time_ms",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub yield_time_ms: Option<u64>,
    /// Output bytes kept, from the end.
    #[serde(
        rename = "maxOutputBytes",
        alias = "max_output_bytes",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub max_output_bytes: Option<u64>,
    /// Output kept in tokens (4 bytes each) when maxOutputBytes is not given.
    #[serde(
        rename = "maxOutputTokens",
        alias = "max_output_tokens",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub max_output_tokens: Option<u64>,
}

impl ToolArgs for WriteStdinArgs {
    const TOOL: &'static str = "write_stdin";
}

/// `kill_background`: stop a session.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KillBackgroundArgs {
    /// Session id.
    #[serde(
        rename = "sessionId",
        alias = "session_id",
        alias = "id",
        deserialize_with = "lenient::req_u64"
    )]
    pub session_id: u64,
}

impl ToolArgs for KillBackgroundArgs {
    const TOOL: &'static str = "kill_background";
}

/// `list_background`: no arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListBackgroundArgs {}

impl ToolArgs for ListBackgroundArgs {
    const TOOL: &'static str = "list_background";
}

/// `get_changed_files`: no arguments.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetChangedFilesArgs {}

impl ToolArgs for GetChangedFilesArgs {
    const TOOL: &'static str = "get_changed_files";
}

/// `git_diff`: the working-tree or staged diff.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitDiffArgs {
    /// Only this file or directory.
    #[serde(alias = "file", default)]
    pub path: Option<String>,
    /// Staged changes (the index).
    #[serde(alias = "cached", default, deserialize_with = "lenient::opt_bool")]
    pub staged: Option<bool>,
    /// Per-file summary only.
    #[serde(alias = "summary", default, deserialize_with = "lenient::opt_bool")]
    pub stat: Option<bool>,
}

impl ToolArgs for GitDiffArgs {
    const TOOL: &'static str = "git_diff";
}

/// `edit_file`: write a whole file or replace a literal string.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// File path relative to the project root.
    #[serde(alias = "file", alias = "filePath", alias = "file_path")]
    pub path: String,
    /// The whole new file content.
    #[serde(alias = "text", default)]
    pub content: Option<String>,
    /// Exact text to replace (must be in the file).
    #[serde(rename = "oldString", alias = "old_string", alias = "old", default)]
    pub old_string: Option<String>,
    /// Replacement text.
    #[serde(rename = "newString", alias = "new_string", alias = "new", default)]
    pub new_string: Option<String>,
    /// Replace every occurrence (default: the first).
    #[serde(
        rename = "replaceAll",
        alias = "replace_all",
        default,
        deserialize_with = "lenient::opt_bool"
    )]
    pub replace_all: Option<bool>,
}

impl ToolArgs for EditFileArgs {
    const TOOL: &'static str = "edit_file";
}

/// `generate_image`: a new raster image from a description, saved in the project.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateImageArgs {
    /// What the image shows: subject, style, colours, composition; no visible text unless wanted.
    #[serde(alias = "description", deserialize_with = "lenient::non_empty")]
    pub prompt: String,
    /// Pixel size WIDTHxHEIGHT, e.g. 1024x1024, 1536x1024 or 1024x1536.
    #[serde(default, deserialize_with = "lenient::image_size")]
    #[schemars(extend("examples" = ["1024x1024"]))]
    pub size: Option<String>,
    /// Where to save it, relative to the project root (default generated-images/image-<ms>.<ext>).
    #[serde(alias = "file", alias = "filePath", alias = "file_path", default)]
    pub path: Option<String>,
}

impl ToolArgs for GenerateImageArgs {
    const TOOL: &'static str = "generate_image";
}

/// `apply_patch`: a unified diff.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatchArgs {
    /// The unified diff.
    #[serde(alias = "diff")]
    pub patch: String,
}

impl ToolArgs for ApplyPatchArgs {
    const TOOL: &'static str = "apply_patch";
}

/// `run_script`: a project script by name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunScriptArgs {
    /// Script name, e.g. test, build, make:release.
    #[serde(alias = "name")]
    pub script: String,
    /// Extra arguments.
    #[serde(default, deserialize_with = "lenient::string_list")]
    pub args: Vec<String>,
    /// Kill after this many ms.
    #[serde(
        rename = "timeoutMs",
        alias = "timeout_ms",
        alias = "timeout",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub timeout_ms: Option<u64>,
}

impl ToolArgs for RunScriptArgs {
    const TOOL: &'static str = "run_script";
}

/// `read_file`: a window of a text file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// File path relative to the project root.
    #[serde(alias = "file", alias = "filePath", alias = "file_path")]
    pub path: String,
    /// Byte offset to start at.
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    pub offset: Option<u64>,
    /// Bytes to read.
    #[serde(
        alias = "maxBytes",
        alias = "max_bytes",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub limit: Option<u64>,
}

impl ToolArgs for ReadFileArgs {
    const TOOL: &'static str = "read_file";
}

/// `list_files`: project files.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    /// Directory inside the project (default: root).
    #[serde(alias = "dir", alias = "path", default)]
    pub directory: Option<String>,
    /// Glob filter, e.g. src/**/*.rs.
    #[serde(alias = "pattern", default)]
    pub glob: Option<String>,
    /// Max files listed.
    #[serde(
        rename = "maxFiles",
        alias = "max_files",
        alias = "limit",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub max_files: Option<u64>,
}

impl ToolArgs for ListFilesArgs {
    const TOOL: &'static str = "list_files";
}

/// `search_files`: content or path search.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchFilesArgs {
    /// Regex, or a substring in path mode.
    #[serde(alias = "pattern", alias = "text", default)]
    pub query: Option<String>,
    /// What to search (default: content).
    #[serde(default)]
    #[schemars(extend("enum" = ["content", "path"]))]
    pub mode: Option<String>,
    /// Glob filter, e.g. *.rs.
    #[serde(default)]
    pub glob: Option<String>,
    /// Directory inside the project (default: root).
    #[serde(alias = "dir", alias = "path", default)]
    pub directory: Option<String>,
    /// Max results.
    #[serde(
        rename = "maxResults",
        alias = "max_results",
        alias = "limit",
        default,
        deserialize_with = "lenient::opt_u64"
    )]
    pub max_results: Option<u64>,
}

impl ToolArgs for SearchFilesArgs {
    const TOOL: &'static str = "search_files";
}

/// Parses the arguments of a built-in tool by name, for the policy: `Ok(None)` for a name
/// that is not built in (MCP and custom tools keep the generic reading).
pub fn check_builtin(tool: &str, arguments: &Value) -> Result<Option<()>, ArgsError> {
    fn check<T: ToolArgs>(arguments: &Value) -> Result<Option<()>, ArgsError> {
        T::parse(arguments).map(|_| Some(()))
    }
    match tool {
        "shell" => check::<ShellArgs>(arguments),
        "exec_command" => check::<ExecCommandArgs>(arguments),
        "write_stdin" => check::<WriteStdinArgs>(arguments),
        "kill_background" => check::<KillBackgroundArgs>(arguments),
        "list_background" => check::<ListBackgroundArgs>(arguments),
        "get_changed_files" => check::<GetChangedFilesArgs>(arguments),
        "git_diff" => check::<GitDiffArgs>(arguments),
        "edit_file" => check::<EditFileArgs>(arguments),
        "apply_patch" => check::<ApplyPatchArgs>(arguments),
        "run_script" => check::<RunScriptArgs>(arguments),
        "read_file" => check::<ReadFileArgs>(arguments),
        "list_files" => check::<ListFilesArgs>(arguments),
        "search_files" => check::<SearchFilesArgs>(arguments),
        "generate_image" => check::<GenerateImageArgs>(arguments),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests;
