//! The JSON body of a Gemini `streamGenerateContent` request.

use serde_json::{Map, Value, json};

use super::schema::sanitize_schema;
use crate::thinking::gemini_thinking_budget;
use crate::wire::chat::{BodyOptions, arguments_object};
use crate::wire::schema_instruction;
use crate::{ChatMessage, ChatRequest, ContentPart, ToolSpec};
use braincode_protocol::ThinkingLevel;

/// The `thoughtSignature` Google documents for function calls whose real signature is not
/// available: Gemini 3 refuses a replayed function call without one. Calls keep the signature
/// Gemini gave them ([`crate::ToolCall::signature`]); this stands in only for calls that have
/// none (made by another model of the chain, or journaled before signatures were kept).
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// The JSON body of a streaming `generateContent` request.
///
/// Roles are `user` and `model`; the system prompt goes to `systemInstruction`; the answers
/// to one turn's calls go in one `user` content (Gemini wants as many `functionResponse`
/// parts as the turn had calls), each as `{"output": …}` or, for a failed tool,
/// `{"error": …}`. Tool schemas are cut down to what Gemini accepts ([`sanitize_schema`]).
/// Structured output uses `responseSchema` when no tools are offered, and an instruction in
/// the system prompt otherwise (Gemini models before 3 refuse both at once).
pub fn request_body(request: &ChatRequest, model: &str, options: BodyOptions) -> Value {
    let sign_calls = needs_call_signatures(model);
    let mut contents: Vec<Value> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message {
            ChatMessage::User { content } => {
                let parts: Vec<Value> = content.iter().filter_map(user_part).collect();
                if !parts.is_empty() {
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
            ChatMessage::Assistant { text, tool_calls } => {
                let mut parts = Vec::with_capacity(tool_calls.len() + 1);
                if !text.is_empty() {
                    parts.push(json!({"text": text}));
                }
                for call in tool_calls {
                    let mut part = json!({"functionCall": {"name": call.name,
                        "args": arguments_object(call)}});
                    match &call.signature {
                        Some(signature) => part["thoughtSignature"] = json!(signature),
                        None if sign_calls => part["thoughtSignature"] = json!(SKIP_SIGNATURE),
                        None => {}
                    }
                    parts.push(part);
                }
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            ChatMessage::Tool {
                name,
                content,
                is_error,
                ..
            } => {
                let key = if *is_error { "error" } else { "output" };
                let part = json!({"functionResponse": {"name": name, "response": {key: content}}});
                match contents.last_mut() {
                    Some(last) if is_response_turn(last) => {
                        if let Some(parts) = last["parts"].as_array_mut() {
                            parts.push(part);
                        }
                    }
                    _ => contents.push(json!({"role": "user", "parts": [part]})),
                }
            }
        }
    }
    let native_schema = request.tools.is_empty();
    let mut system = request.system.clone().unwrap_or_default();
    if let Some(schema) = request.response_schema.as_ref().filter(|_| !native_schema) {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&schema_instruction(schema));
    }
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request.tools.iter().map(declaration).collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    let mut config = Map::new();
    let max_tokens = request.max_tokens.or(options.default_max_tokens);
    if let Some(max) = max_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(temperature) = request.temperature {
        config.insert(
            "temperature".into(),
            crate::wire::temperature_json(temperature),
        );
    }
    if let Some(thinking) = thinking_config(model, request.thinking, max_tokens) {
        config.insert("thinkingConfig".into(), thinking);
    }
    if let Some(schema) = request.response_schema.as_ref().filter(|_| native_schema) {
        config.insert("responseMimeType".into(), json!("application/json"));
        config.insert("responseSchema".into(), sanitize_schema(&schema.schema));
    }
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }
    Value::Object(body)
}

/// The URL path segment of a model: `models/<id>`, or the id as given when it already names
/// its collection (`models/…`, `tunedModels/…`).
pub fn model_path(model_id: &str) -> String {
    let id = model_id.trim().trim_matches('/');
    if id.contains('/') {
        id.to_string()
    } else {
        format!("models/{id}")
    }
}

fn user_part(part: &ContentPart) -> Option<Value> {
    match part {
        ContentPart::Text { text } if text.is_empty() => None,
        ContentPart::Text { text } => Some(json!({"text": text})),
        ContentPart::Image { mime_type, data } => {
            Some(json!({"inlineData": {"mimeType": mime_type, "data": data}}))
        }
    }
}

/// A function declaration; `parameters` is left out when the tool takes no argument
/// (Gemini refuses an object schema with no properties).
fn declaration(tool: &ToolSpec) -> Value {
    let mut declaration = json!({"name": tool.name, "description": tool.description});
    let parameters = sanitize_schema(&tool.parameters);
    if parameters.get("properties").is_some() {
        declaration["parameters"] = parameters;
    }
    declaration
}

/// Whether `content` is a `user` turn made of function responses only.
fn is_response_turn(content: &Value) -> bool {
    content["role"] == "user"
        && content["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().all(|p| p.get("functionResponse").is_some()))
}

/// What a model's name says about its thinking controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Gemini 3 and later: thinking cannot be switched off, only lowered.
    Gemini3 { pro: bool },
    /// Gemini 2.5: a budget; Flash can switch thinking off, Pro cannot.
    Gemini25 { pro: bool },
    /// Models that refuse a `thinkingConfig` (Gemini 1.x and 2.0, Gemma 2 and 3).
    NoThinking,
    /// Anything else (aliases such as `gemini-flash-latest`, proxies' names).
    Unknown,
}

fn family(model: &str) -> Family {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let major = |rest: &str| -> Option<u32> {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    if let Some(rest) = name.strip_prefix("gemini-") {
        let pro = rest.contains("-pro");
        return match major(rest) {
            Some(3..) => Family::Gemini3 { pro },
            _ if rest.starts_with("2.5") => Family::Gemini25 { pro },
            Some(1 | 2) => Family::NoThinking,
            _ => Family::Unknown,
        };
    }
    match name.strip_prefix("gemma-").and_then(major) {
        Some(..=3) => Family::NoThinking,
        _ => Family::Unknown,
    }
}

/// The `thinkingConfig` for a level, or `None` to leave the model's default.
///
/// A budget (with thought summaries) when thinking is wanted and fits the output cap.
/// Otherwise the least thinking the model allows, since thoughts use up `maxOutputTokens`
/// and a small cap (the connection test's 16) would leave no room for the answer: off
/// (budget 0) for 2.5 Flash, the 128 minimum for 2.5 Pro, level `low` (Pro) or `minimal` for
/// Gemini 3. Models without thinking get none, as do unknown ones unless thinking is wanted.
fn thinking_config(model: &str, level: ThinkingLevel, max_tokens: Option<u32>) -> Option<Value> {
    let family = family(model);
    if family == Family::NoThinking {
        return None;
    }
    if let Some(budget) = gemini_thinking_budget(level, max_tokens) {
        return Some(json!({"thinkingBudget": budget, "includeThoughts": true}));
    }
    match family {
        Family::Gemini3 { pro: true } => Some(json!({"thinkingLevel": "low"})),
        Family::Gemini3 { pro: false } => Some(json!({"thinkingLevel": "minimal"})),
        Family::Gemini25 { pro: true } => Some(json!({"thinkingBudget": 128})),
        Family::Gemini25 { pro: false } => Some(json!({"thinkingBudget": 0})),
        Family::NoThinking | Family::Unknown => None,
    }
}

/// Gemini 3 and later validate the thought signature of replayed function calls.
fn needs_call_signatures(model: &str) -> bool {
    matches!(family(model), Family::Gemini3 { .. })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ResponseSchema, ToolCall};

    fn tool() -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "additionalProperties": false,
                "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }
    }

    #[test]
    fn body_maps_roles_calls_and_answers() {
        let request = ChatRequest {
            system: Some("sys".into()),
            messages: vec![
                ChatMessage::user_text("read a and b"),
                ChatMessage::Assistant {
                    text: "Reading.".into(),
                    tool_calls: vec![
                        ToolCall::from_raw("call_1", "read_file", r#"{"path":"a"}"#),
                        ToolCall::from_raw("call_2", "read_file", r#"{"path":"b"}"#),
                    ],
                },
                ChatMessage::Tool {
                    call_id: "call_1".into(),
                    name: "read_file".into(),
                    content: "A".into(),
                    is_error: false,
                },
                ChatMessage::Tool {
                    call_id: "call_2".into(),
                    name: "read_file".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
                ChatMessage::user_text("thanks"),
            ],
            tools: vec![
                tool(),
                ToolSpec {
                    name: "list_files".into(),
                    description: "List".into(),
                    parameters: json!({"type": "object", "properties": {}}),
                },
            ],
            thinking: ThinkingLevel::Medium,
            max_tokens: Some(32_000),
            temperature: Some(0.5),
            response_schema: Some(ResponseSchema {
                name: "result".into(),
                schema: json!({"type": "object"}),
            }),
            cache_key: None,
        };
        let body = request_body(&request, "gemini-2.5-pro", BodyOptions::default());
        assert_eq!(
            body["contents"],
            json!([
                {"role": "user", "parts": [{"text": "read a and b"}]},
                {"role": "model", "parts": [
                    {"text": "Reading."},
                    {"functionCall": {"name": "read_file", "args": {"path": "a"}}},
                    {"functionCall": {"name": "read_file", "args": {"path": "b"}}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"output": "A"}}},
                    {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}}
                ]},
                {"role": "user", "parts": [{"text": "thanks"}]}
            ])
        );
        assert_eq!(
            body["tools"],
            json!([{"functionDeclarations": [
                {"name": "read_file", "description": "Read a file", "parameters":
                    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
                {"name": "list_files", "description": "List"}
            ]}])
        );
        let system = body["systemInstruction"]["parts"][0]["text"]
            .as_str()
            .unwrap();
        assert!(
            system.starts_with("sys\n\nReply with only one JSON object"),
            "with tools, the schema is an instruction: {system}"
        );
        assert_eq!(
            body["generationConfig"],
            json!({"maxOutputTokens": 32_000, "temperature": 0.5,
                "thinkingConfig": {"thinkingBudget": 8_192, "includeThoughts": true}})
        );
    }

    #[test]
    fn structured_output_without_tools_is_native() {
        let request = ChatRequest {
            messages: vec![ChatMessage::user_text("route")],
            response_schema: Some(ResponseSchema {
                name: "decision".into(),
                schema: json!({"type": "object", "additionalProperties": false,
                    "properties": {"role": {"type": "string"}}, "required": ["role"]}),
            }),
            ..ChatRequest::default()
        };
        let body = request_body(&request, "gemini-2.5-flash", BodyOptions::default());
        assert!(body.get("systemInstruction").is_none());
        assert!(body.get("tools").is_none());
        assert_eq!(
            body["generationConfig"],
            json!({"thinkingConfig": {"thinkingBudget": 0},
                "responseMimeType": "application/json", "responseSchema":
                {"type": "object", "properties": {"role": {"type": "string"}}, "required": ["role"]}})
        );
        let bare = request_body(
            &ChatRequest::default(),
            "custom-model",
            BodyOptions::default(),
        );
        assert_eq!(bare, json!({"contents": []}));
    }

    #[test]
    fn gemini_3_calls_carry_the_skip_signature() {
        let request = ChatRequest {
            messages: vec![ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::from_raw("c", "read_file", "")],
            }],
            ..ChatRequest::default()
        };
        for (model, signed) in [
            ("gemini-3-pro-preview", true),
            ("models/gemini-3.1-flash", true),
            ("gemini-2.5-flash", false),
            ("gemini-flash-latest", false),
        ] {
            let body = request_body(&request, model, BodyOptions::default());
            let part = &body["contents"][0]["parts"][0];
            assert_eq!(part["functionCall"]["args"], json!({}), "{model}");
            assert_eq!(part.get("thoughtSignature").is_some(), signed, "{model}");
        }
    }

    #[test]
    fn a_calls_own_signature_wins_over_the_skip_signature() {
        let request = ChatRequest {
            messages: vec![ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![
                    ToolCall::from_raw("c1", "read_file", "").with_signature(Some("sig-1".into())),
                    ToolCall::from_raw("c2", "read_file", ""),
                ],
            }],
            ..ChatRequest::default()
        };
        let body = request_body(&request, "gemini-3-pro-preview", BodyOptions::default());
        let parts = &body["contents"][0]["parts"];
        assert_eq!(parts[0]["thoughtSignature"], "sig-1");
        assert_eq!(parts[1]["thoughtSignature"], SKIP_SIGNATURE);
        let body = request_body(&request, "gemini-2.5-pro", BodyOptions::default());
        let parts = &body["contents"][0]["parts"];
        assert_eq!(parts[0]["thoughtSignature"], "sig-1");
        assert!(parts[1].get("thoughtSignature").is_none());
    }

    #[test]
    fn thinking_config_per_model_family() {
        use ThinkingLevel::*;
        let cases = [
            (
                "gemini-2.5-flash",
                Off,
                None,
                Some(json!({"thinkingBudget": 0})),
            ),
            (
                "gemini-2.5-flash-lite",
                High,
                Some(16),
                Some(json!({"thinkingBudget": 0})),
            ),
            (
                "gemini-2.5-pro",
                Off,
                None,
                Some(json!({"thinkingBudget": 128})),
            ),
            (
                "gemini-2.5-pro",
                Low,
                None,
                Some(json!({"thinkingBudget": 2_048, "includeThoughts": true})),
            ),
            (
                "gemini-3-pro-preview",
                Off,
                None,
                Some(json!({"thinkingLevel": "low"})),
            ),
            (
                "gemini-3-flash-preview",
                Off,
                Some(16),
                Some(json!({"thinkingLevel": "minimal"})),
            ),
            (
                "gemini-3-flash-preview",
                Medium,
                None,
                Some(json!({"thinkingBudget": 8_192, "includeThoughts": true})),
            ),
            ("gemini-2.0-flash", High, None, None),
            ("gemma-3-27b-it", High, None, None),
            ("gemini-flash-latest", Off, None, None),
            (
                "my-proxy-model",
                High,
                None,
                Some(json!({"thinkingBudget": 24_576, "includeThoughts": true})),
            ),
        ];
        for (model, level, max, expected) in cases {
            assert_eq!(
                thinking_config(model, level, max),
                expected,
                "{model} {level}"
            );
        }
    }

    #[test]
    fn model_paths() {
        assert_eq!(model_path("gemini-2.5-flash"), "models/gemini-2.5-flash");
        assert_eq!(
            model_path("models/gemini-2.5-flash"),
            "models/gemini-2.5-flash"
        );
        assert_eq!(model_path("tunedModels/my-model"), "tunedModels/my-model");
    }
}
