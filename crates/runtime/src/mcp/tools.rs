//! MCP tools as agent tools: `mcp__<server>__<tool>` (a tool with its full schema),
//! `mcp_search` (find tools and their schemas on demand) and `mcp_call` (call a found tool).

use std::sync::Arc;

use async_trait::async_trait;
use braincode_mcp::{CallOutput, Content, ToolInfo};
use braincode_tools::{
    Tool, ToolContext, ToolDefinition, ToolMode, ToolOutput, ToolPermission, ToolRisk,
};
use serde_json::{Value, json};

use super::McpRuntime;

/// The most of a tool result an agent gets (bytes), as for built-in tools.
const MAX_RESULT_BYTES: usize = braincode_tools::text::DEFAULT_OUTPUT_BYTES as usize;

/// Longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;

use braincode_protocol::safe_name as sanitize;

/// The name agents call a server's tool by: `mcp__<server>__<tool>`.
pub fn exposed_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", sanitize(server), sanitize(tool))
}

/// The permission class of an MCP tool: `readOnlyHint` makes it a read, anything else may
/// change things.
pub fn permission_of(info: &ToolInfo) -> ToolPermission {
    if info.read_only && info.destructive != Some(true) {
        ToolPermission::Read
    } else {
        ToolPermission::Write
    }
}

/// The definition of `info` on `server`, as agents see it.
pub fn definition_of(server: &str, info: &ToolInfo) -> ToolDefinition {
    let permission = permission_of(info);
    let mut description = info.description.trim().to_string();
    if description.is_empty() {
        description = info.title.clone().unwrap_or_else(|| info.name.clone());
    }
    ToolDefinition {
        name: exposed_name(server, &info.name),
        description: format!("[MCP server {server}] {description}"),
        parameters: info.input_schema.clone(),
        permission,
        risk: if permission == ToolPermission::Read {
            ToolRisk::Low
        } else {
            ToolRisk::Medium
        },
    }
}

/// Whether a directly offered tool's name is one providers accept.
pub(super) fn offerable(definition: &ToolDefinition) -> bool {
    definition.name.len() <= MAX_TOOL_NAME
}

/// A tool result as the text an agent reads: text blocks in order, resources with their URI,
/// images and audio as a short note (tool results carry text only), structured content when
/// there is no text.
pub fn call_output_text(output: &CallOutput) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in &output.content {
        match block {
            Content::Text { text } => parts.push(text.clone()),
            Content::Image { mime_type, data } => {
                parts.push(format!("[image {mime_type}, {} bytes]", data.len() / 4 * 3));
            }
            Content::Audio { mime_type, data } => parts.push(format!(
                "[audio {mime_type}, {} bytes, not shown]",
                data.len() / 4 * 3
            )),
            Content::Resource {
                uri,
                mime_type,
                text,
                blob_len,
            } => match (text, blob_len) {
                (Some(text), _) => parts.push(format!("[resource {uri}]\n{text}")),
                (None, len) => parts.push(format!(
                    "[resource {uri} ({}), {} bytes of binary data, not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    len.unwrap_or_default() / 4 * 3
                )),
            },
            Content::ResourceLink {
                uri,
                name,
                description,
            } => parts.push(match description {
                Some(description) => format!("[resource link {name}: {uri}] {description}"),
                None => format!("[resource link {name}: {uri}]"),
            }),
        }
    }
    let has_text = output
        .content
        .iter()
        .any(|c| matches!(c, Content::Text { .. } | Content::Resource { .. }));
    if !has_text && let Some(structured) = &output.structured {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    braincode_config::journal::clip_text(&text, MAX_RESULT_BYTES).into_owned()
}

/// One MCP tool as an agent tool.
pub(super) struct McpTool {
    pub runtime: Arc<McpRuntime>,
    pub server: String,
    pub tool: String,
    pub definition: ToolDefinition,
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return ToolOutput::error(format!(
                    "{} takes a JSON object of arguments, not {other}",
                    self.definition.name
                ));
            }
        };
        let Some(hub) = self.runtime.hub().await else {
            return ToolOutput::error("MCP servers are not started in a replay");
        };
        match hub
            .call(&self.server, &self.tool, arguments, &context.cancel)
            .await
        {
            Ok(output) if output.is_error => ToolOutput::error(format!(
                "MCP tool {} failed: {}",
                self.definition.name,
                call_output_text(&output)
            )),
            Ok(output) => {
                let images = output
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        Content::Image { mime_type, data } => Some(braincode_tools::ToolImage {
                            mime_type: mime_type.clone(),
                            data: data.clone(),
                        }),
                        _ => None,
                    })
                    .collect();
                ToolOutput {
                    images,
                    ..ToolOutput::ok(call_output_text(&output))
                }
            }
            Err(err) => ToolOutput::error(format!(
                "MCP tool {} could not run: {err}",
                self.definition.name
            )),
        }
    }
}

/// `mcp_search`: finds tools on the servers an agent may use and gives their schemas.
pub(super) struct McpSearch {
    pub runtime: Arc<McpRuntime>,
    pub servers: Vec<String>,
    pub mode: ToolMode,
    pub definition: ToolDefinition,
}

impl McpSearch {
    pub fn new(runtime: Arc<McpRuntime>, servers: Vec<String>, mode: ToolMode) -> Self {
        let definition = ToolDefinition {
            name: "mcp_search".into(),
            description: format!(
                "Find tools on the MCP servers you can use ({}). Give a few words of what you want to do; \
                 the answer lists matching tools with their full input schemas. Then call one with \
                 mcp_call {{\"name\": \"mcp__<server>__<tool>\", \"arguments\": {{…}}}}.",
                servers.join(", ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to match against tool names and descriptions; empty lists every tool."},
                    "server": {"type": "string", "description": "Only this server."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Most tools to return (default 5)."}
                },
                "required": ["query"]
            }),
            permission: ToolPermission::Read,
            risk: ToolRisk::Low,
        };
        Self {
            runtime,
            servers,
            mode,
            definition,
        }
    }
}

#[async_trait]
impl Tool for McpSearch {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let query = arguments
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_lowercase();
        let only = arguments.get("server").and_then(Value::as_str);
        if let Some(only) = only
            && !self.servers.iter().any(|s| s == only)
        {
            return ToolOutput::error(format!(
                "no MCP server {only:?} here; servers you can use: {}",
                self.servers.join(", ")
            ));
        }
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(5)
            .clamp(1, 20) as usize;
        let servers: Vec<&String> = self
            .servers
            .iter()
            .filter(|s| only.is_none_or(|o| o == s.as_str()))
            .collect();
        let found = tokio::select! {
            () = context.cancel.cancelled() => return ToolOutput::error("cancelled"),
            found = self.runtime.tools_of(&servers) => found,
        };
        let words: Vec<&str> = query.split_whitespace().collect();
        let mut scored: Vec<(u32, &String, &ToolInfo)> = Vec::new();
        let mut hidden = 0;
        let mut problems = Vec::new();
        for (server, result) in &found {
            match result {
                Err(problem) => problems.push(format!("- {server}: unavailable: {problem}")),
                Ok(tools) => {
                    for info in tools.iter() {
                        if !self.mode.allows(permission_of(info)) {
                            hidden += 1;
                            continue;
                        }
                        let score = score(&words, info);
                        if words.is_empty() || score > 0 {
                            scored.push((score, server, info));
                        }
                    }
                }
            }
        }
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.name.cmp(&b.2.name)));
        let total = scored.len();
        let mut out = String::new();
        if scored.is_empty() {
            out.push_str(
                "No MCP tool matches. Try other words, or an empty query to list every tool.\n",
            );
        }
        for (_, server, info) in scored.iter().take(limit) {
            let definition = definition_of(server, info);
            out.push_str(&format!(
                "## {} ({})\n{}\ninput schema: {}\n\n",
                definition.name,
                if definition.permission == ToolPermission::Read {
                    "reads"
                } else {
                    "may change things: needs approval"
                },
                info.description.trim(),
                info.input_schema
            ));
        }
        if total > limit {
            out.push_str(&format!(
                "{} more match; narrow the query or raise `limit`.\n",
                total - limit
            ));
        }
        if hidden > 0 {
            out.push_str(&format!(
                "{hidden} tools that may change things are not available in this run's permission mode.\n"
            ));
        }
        if !problems.is_empty() {
            out.push_str("Servers not available:\n");
            out.push_str(&problems.join("\n"));
            out.push('\n');
        }
        ToolOutput::ok(out.trim_end().to_string())
    }
}

fn score(words: &[&str], info: &ToolInfo) -> u32 {
    let name = info.name.to_lowercase();
    let title = info.title.as_deref().unwrap_or_default().to_lowercase();
    let description = info.description.to_lowercase();
    words
        .iter()
        .map(|word| {
            let mut s = 0;
            if name.contains(word) {
                s += 3;
            }
            if title.contains(word) {
                s += 2;
            }
            if description.contains(word) {
                s += 1;
            }
            s
        })
        .sum()
}

/// `mcp_call`: the agent loop unwraps it into the named tool's call (so the permission
/// policy, approval and the journal see the real tool); this body only runs when the call
/// could not be unwrapped, and says why.
pub(super) struct McpCall {
    pub definition: ToolDefinition,
}

impl McpCall {
    pub fn new() -> Self {
        Self {
            definition: ToolDefinition {
                name: crate::agent::MCP_CALL_TOOL.into(),
                description: "Call an MCP tool found with mcp_search: `name` is its full name \
                              (mcp__<server>__<tool>), `arguments` its arguments object."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The tool's full name, mcp__<server>__<tool>."},
                        "arguments": {"type": "object", "description": "Its arguments, matching its input schema."}
                    },
                    "required": ["name", "arguments"]
                }),
                permission: ToolPermission::Read,
                risk: ToolRisk::Low,
            },
        }
    }
}

#[async_trait]
impl Tool for McpCall {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, _context: &ToolContext) -> ToolOutput {
        ToolOutput::error(format!(
            "mcp_call needs {{\"name\": \"mcp__<server>__<tool>\", \"arguments\": {{…}}}}; got {}",
            braincode_context::clip_chars(&arguments.to_string(), 200)
        ))
    }
}
