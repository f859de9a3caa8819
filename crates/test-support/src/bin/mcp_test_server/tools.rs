//! The test server's tools: what `tools/list` says and what each call does.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A 1×1 transparent PNG.
pub const TINY_PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// Printed to stderr by `crash`.
pub const CRASH_MESSAGE: &str = "test server: crashing on purpose";

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations::from_raw(None, Some(true), None, None, Some(false))
}

/// Every tool, `extra` more at the end.
pub fn all_tools(extra: usize) -> Vec<Tool> {
    let mut tools = vec![
        Tool::new(
            "echo",
            "Returns its text.",
            schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "What to echo."}},
                "required": ["text"]
            })),
        )
        .with_annotations(read_only()),
        Tool::new(
            "add",
            "Adds two numbers.",
            schema(json!({
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            })),
        )
        .with_title("Add numbers")
        .with_annotations(read_only()),
        Tool::new(
            "fail",
            "Reports a tool failure (isError) with the given message.",
            schema(json!({
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"]
            })),
        )
        .with_annotations(read_only()),
        Tool::new(
            "hang",
            "Never returns (until cancelled).",
            schema(json!({"type": "object", "properties": {}})),
        )
        .with_annotations(read_only()),
        Tool::new(
            "crash",
            "Prints a line to stderr and exits with code 3.",
            schema(json!({"type": "object", "properties": {}})),
        ),
        Tool::new(
            "write_marker",
            "Writes text to a file.",
            schema(json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                "required": ["path", "text"]
            })),
        )
        .with_annotations(ToolAnnotations::from_raw(
            Some("Write a marker file".into()),
            None,
            Some(false),
            Some(true),
            Some(false),
        )),
        Tool::new(
            "image",
            "Returns a tiny PNG image.",
            schema(json!({"type": "object", "properties": {}})),
        )
        .with_annotations(read_only()),
        Tool::new(
            "env",
            "Returns the value of an environment variable, or <unset>.",
            schema(json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            })),
        )
        .with_annotations(read_only()),
    ];
    tools.extend((1..=extra).map(extra_tool));
    tools
}

/// A Tavily-like `tavily_search` (listed with `MCP_TEST_TAVILY=1`): answers with made-up
/// results for the query when `TAVILY_API_KEY` is set, and fails like the real server when
/// it is not.
pub fn tavily_search_tool() -> Tool {
    Tool::new(
        "tavily_search",
        "Search the web for current information on a query; returns titles, URLs and snippets.",
        schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20}
            },
            "required": ["query"]
        })),
    )
    .with_annotations(read_only())
}

/// A realistic tool of a big server: several typed fields and a few sentences.
fn extra_tool(n: usize) -> Tool {
    let name = format!("extra_{n:02}");
    let description = format!(
        "Searches the issue tracker of project {n} for issues matching a query and returns \
         them newest first. Filters narrow the search by state, labels and assignee; results \
         are paginated with a cursor. Use it before filing a new issue to avoid duplicates."
    );
    let input = schema(json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Free text matched against titles and bodies."},
            "state": {"type": "string", "enum": ["open", "closed", "all"], "description": "Which issues to include.", "default": "open"},
            "labels": {"type": "array", "items": {"type": "string"}, "description": "Every label an issue must carry."},
            "assignee": {"type": "string", "description": "Login of the assignee, or `none`."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Issues per page."},
            "cursor": {"type": "string", "description": "Where the previous page ended."}
        },
        "required": ["query"]
    }));
    Tool::new(name, description, input).with_annotations(read_only())
}

fn text(value: impl Into<String>) -> ContentBlock {
    ContentBlock::text(value)
}

fn string_arg<'a>(args: &'a JsonObject, name: &str) -> Result<&'a str, ErrorData> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params(format!("`{name}` must be a string"), None))
}

fn number_arg(args: &JsonObject, name: &str) -> Result<Value, ErrorData> {
    match args.get(name) {
        Some(Value::Number(n)) => Ok(Value::Number(n.clone())),
        _ => Err(ErrorData::invalid_params(
            format!("`{name}` must be a number"),
            None,
        )),
    }
}

/// Appends the tool's name to the call log, if there is one.
pub fn log_call(log: Option<&PathBuf>, line: &str) {
    let Some(path) = log else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        // One write per line: concurrent calls append whole lines (O_APPEND).
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}

/// Runs one tool.
pub async fn call(
    name: &str,
    args: &JsonObject,
    cancelled: CancellationToken,
    log: Option<&PathBuf>,
) -> Result<CallToolResult, ErrorData> {
    Ok(match name {
        "echo" => CallToolResult::success(vec![text(string_arg(args, "text")?)]),
        "add" => {
            let (a, b) = (number_arg(args, "a")?, number_arg(args, "b")?);
            let sum = match (a.as_i64(), b.as_i64()) {
                (Some(a), Some(b)) => json!(a.saturating_add(b)),
                _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
            };
            let mut result = CallToolResult::success(vec![text(sum.to_string())]);
            result.structured_content = Some(json!({ "sum": sum }));
            result
        }
        "fail" => CallToolResult::error(vec![text(string_arg(args, "message")?)]),
        "hang" => {
            cancelled.cancelled().await;
            // Lets a test see that `notifications/cancelled` arrived.
            log_call(log, "cancelled hang");
            return Err(ErrorData::internal_error("cancelled", None));
        }
        "crash" => {
            eprintln!("{CRASH_MESSAGE}");
            std::process::exit(3);
        }
        "write_marker" => {
            let path = string_arg(args, "path")?;
            let content = string_arg(args, "text")?;
            std::fs::write(path, content)
                .map_err(|e| ErrorData::internal_error(format!("write {path}: {e}"), None))?;
            CallToolResult::success(vec![text(format!("wrote {path}"))])
        }
        "image" => CallToolResult::success(vec![ContentBlock::image(TINY_PNG_BASE64, "image/png")]),
        "env" => {
            let var = string_arg(args, "name")?;
            let value = std::env::var(var).unwrap_or_else(|_| "<unset>".to_string());
            CallToolResult::success(vec![text(value)])
        }
        "tavily_search" => {
            let query = string_arg(args, "query")?;
            match std::env::var("TAVILY_API_KEY") {
                Ok(key) if !key.trim().is_empty() => CallToolResult::success(vec![text(format!(
                    "Results for {query:?}:\n1. https://example.test/a — about {query}\n2. https://example.test/b — more on {query}"
                ))]),
                _ => CallToolResult::error(vec![text(
                    "TAVILY_API_KEY environment variable is required",
                )]),
            }
        }
        extra if extra.starts_with("extra_") => {
            CallToolResult::success(vec![text(format!("{extra}: no issues found"))])
        }
        other => {
            return Err(ErrorData::invalid_params(
                format!("no tool named {other}"),
                None,
            ));
        }
    })
}
