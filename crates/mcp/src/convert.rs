//! From `rmcp`'s types to ours. Nothing here fails: whatever a server sends becomes a value.

use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, ResourceContents, ServerPeerInfo, Tool,
};
use serde_json::{Map, Value};

use crate::McpError;
use crate::types::{CallOutput, Content, ServerInfo, ToolInfo};

/// What `initialize` told us.
pub(crate) fn server_info(peer: Option<&ServerPeerInfo>) -> ServerInfo {
    let Some(peer) = peer else {
        return ServerInfo::default();
    };
    ServerInfo {
        name: peer.server_info.as_ref().map(|i| i.name.clone()),
        version: peer.server_info.as_ref().map(|i| i.version.clone()),
        protocol_version: Some(peer.protocol_version.to_string()),
        instructions: peer.instructions.clone(),
    }
}

/// Same, from a full `initialize` result (tests of the mapping).
#[cfg(test)]
pub(crate) fn server_info_from_result(result: rmcp::model::InitializeResult) -> ServerInfo {
    server_info(Some(&ServerPeerInfo::from(result)))
}

/// One tool as `tools/list` described it.
pub(crate) fn tool_info(tool: Tool) -> ToolInfo {
    let annotations = tool.annotations.as_ref();
    let title = tool
        .title
        .clone()
        .or_else(|| annotations.and_then(|a| a.title.clone()));
    let input_schema = if tool.input_schema.is_empty() {
        open_object_schema()
    } else {
        Value::Object(tool.input_schema.as_ref().clone())
    };
    ToolInfo {
        name: tool.name.into_owned(),
        title,
        description: tool
            .description
            .map(std::borrow::Cow::into_owned)
            .unwrap_or_default(),
        input_schema,
        read_only: annotations.and_then(|a| a.read_only_hint) == Some(true),
        destructive: annotations.and_then(|a| a.destructive_hint),
    }
}

fn open_object_schema() -> Value {
    let mut schema = Map::new();
    schema.insert("type".into(), Value::String("object".into()));
    Value::Object(schema)
}

/// A `tools/call` result.
pub(crate) fn call_output(result: CallToolResult) -> CallOutput {
    CallOutput {
        content: result.content.into_iter().filter_map(content).collect(),
        structured: result.structured_content,
        is_error: result.is_error == Some(true),
    }
}

fn content(block: ContentBlock) -> Option<Content> {
    Some(match block {
        ContentBlock::Text(text) => Content::Text { text: text.text },
        ContentBlock::Image(image) => Content::Image {
            mime_type: image.mime_type,
            data: image.data,
        },
        ContentBlock::Audio(audio) => Content::Audio {
            mime_type: audio.mime_type,
            data: audio.data,
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Content::Resource {
                uri,
                mime_type,
                text: Some(text),
                blob_len: None,
            },
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Content::Resource {
                uri,
                mime_type,
                text: None,
                blob_len: Some(blob.len()),
            },
            _ => return None,
        },
        ContentBlock::ResourceLink(link) => Content::ResourceLink {
            uri: link.uri,
            name: link.name,
            description: link.description,
        },
        // A block kind newer than this client: dropped rather than guessed at.
        _ => return None,
    })
}

/// A JSON-RPC error answer.
pub(crate) fn rpc_error(error: ErrorData) -> McpError {
    McpError::Rpc {
        code: i64::from(error.code.0),
        message: error.message.into_owned(),
        data: error.data.map(|d| d.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        ImageContent, InitializeResult, ServerCapabilities, TextContent, ToolAnnotations,
    };
    use serde_json::json;

    use super::*;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap_or_default()
    }

    #[test]
    fn tool_hints_and_title() {
        let t = tool_info(tool(json!({
            "name": "read",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
            "annotations": {"title": "Read a file", "readOnlyHint": true}
        })));
        assert_eq!(t.name, "read");
        assert_eq!(t.title.as_deref(), Some("Read a file"));
        assert!(t.read_only);
        assert_eq!(t.destructive, None);
        assert_eq!(t.description, "");
        assert_eq!(t.input_schema["properties"]["path"]["type"], "string");
    }

    #[test]
    fn tool_without_schema_gets_an_open_object() {
        let mut t = Tool::default();
        t.name = "x".into();
        t.annotations = Some(ToolAnnotations::from_raw(
            None,
            Some(false),
            Some(true),
            None,
            None,
        ));
        let info = tool_info(t);
        assert_eq!(info.input_schema, json!({"type": "object"}));
        assert!(!info.read_only);
        assert_eq!(info.destructive, Some(true));
    }

    #[test]
    fn call_result_blocks() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::Text(TextContent::new("hi")),
            ContentBlock::Image(ImageContent::new("AAAA", "image/png")),
            ContentBlock::resource(ResourceContents::blob("QUJD", "file:///a.bin")),
            ContentBlock::embedded_text("file:///a.txt", "text"),
        ]);
        result.structured_content = Some(json!({"sum": 3}));
        result.is_error = Some(true);
        let out = call_output(result);
        assert!(out.is_error);
        assert_eq!(out.structured, Some(json!({"sum": 3})));
        assert_eq!(out.content.len(), 4);
        assert_eq!(out.content[0], Content::Text { text: "hi".into() });
        assert!(matches!(
            &out.content[2],
            Content::Resource {
                blob_len: Some(4),
                text: None,
                ..
            }
        ));
        assert!(matches!(&out.content[3], Content::Resource { text: Some(t), .. } if t == "text"));
    }

    #[test]
    fn server_info_fields() {
        let result = InitializeResult::new(ServerCapabilities::default())
            .with_instructions("use me")
            .with_server_info(rmcp::model::Implementation::new("srv", "1.2.3"));
        let info = server_info_from_result(result);
        assert_eq!(info.name.as_deref(), Some("srv"));
        assert_eq!(info.version.as_deref(), Some("1.2.3"));
        assert_eq!(info.instructions.as_deref(), Some("use me"));
        assert!(info.protocol_version.is_some());
    }
}
