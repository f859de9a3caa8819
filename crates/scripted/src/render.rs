//! A [`Reply`] as each wire streams it: the SSE bytes a provider would send.
//!
//! Parts come in the order reasoning, text, tool calls (arguments split in pieces, as
//! providers stream them). A reply that does not end [`ReplyEnd::Complete`] stops after its
//! content, before any terminal event.

use axum::body::Bytes;
use braincode_llm::StopReason;
use braincode_protocol::Usage;
use serde_json::{Value, json};

use crate::script::{Reply, ReplyEnd};
use crate::summary::Wire;

/// The SSE chunks of `reply` in `wire`'s format, for `model`. `usage` is left out of a Chat
/// Completions stream when `None` (the client did not ask for it).
pub fn render(wire: Wire, reply: &Reply, model: &str, usage: Option<Usage>) -> Vec<Bytes> {
    if reply.end != ReplyEnd::Complete
        && reply.reasoning.is_empty()
        && reply.text.is_empty()
        && reply.tool_calls.is_empty()
    {
        return Vec::new();
    }
    let usage_or_zero = usage.unwrap_or_default();
    match wire {
        Wire::Chat => sse_chunks(reply, model, usage),
        Wire::Responses => responses(reply, model, usage_or_zero),
        Wire::Anthropic => anthropic(reply, model, usage_or_zero),
        Wire::Gemini => gemini(reply, model, usage_or_zero),
    }
}

fn data(body: &Value) -> Bytes {
    Bytes::from(format!("data: {body}\n\n"))
}

fn event(name: &str, body: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {body}\n\n"))
}

/// Splits text into about `parts` pieces on character boundaries (empty text: no piece).
fn split_in_pieces(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(parts.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The Chat Completions SSE chunks of a reply: role chunk, reasoning, text, tool-call
/// deltas, then — for a complete reply — the finish chunk, the usage chunk (when given) and
/// `[DONE]`.
pub fn sse_chunks(reply: &Reply, model: &str, usage: Option<Usage>) -> Vec<Bytes> {
    let id = "chatcmpl-scripted";
    let created = 1_700_000_000;
    let chunk = |delta: Value, finish: Value| {
        data(
            &json!({"id": id, "object": "chat.completion.chunk", "created": created,
            "model": model, "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]}),
        )
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for text in &reply.reasoning {
        out.push(chunk(json!({"reasoning_content": text}), Value::Null));
    }
    for text in &reply.text {
        out.push(chunk(json!({"content": text}), Value::Null));
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id.clone().unwrap_or_default(),
                "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in split_in_pieces(&call.arguments, 3) {
            out.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    if reply.end != ReplyEnd::Complete {
        return out;
    }
    let finish = match reply.stop_reason() {
        StopReason::EndTurn => "stop".to_string(),
        StopReason::ToolUse => "tool_calls".to_string(),
        StopReason::MaxTokens => "length".to_string(),
        StopReason::ContentFilter => "content_filter".to_string(),
        StopReason::Other(other) => other,
    };
    out.push(chunk(json!({}), json!(finish)));
    if let Some(usage) = usage {
        out.push(data(&json!({"id": id, "object": "chat.completion.chunk", "created": created,
            "model": model, "system_fingerprint": "fp_scripted", "choices": [],
            "usage": {"prompt_tokens": usage.input + usage.cache_read, "completion_tokens": usage.output,
                "total_tokens": usage.input + usage.cache_read + usage.output,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read},
                "completion_tokens_details": {"reasoning_tokens": usage.reasoning}}})));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// OpenAI Responses semantic events: `response.created`, one output item each for the
/// reasoning summary, the message and every function call, then `response.completed` (or
/// `response.incomplete` for a length or content-filter stop) with the usage.
fn responses(reply: &Reply, model: &str, usage: Usage) -> Vec<Bytes> {
    let mut seq = 0;
    let mut out = Vec::new();
    let mut push = |name: &str, mut body: Value| {
        body["type"] = json!(name);
        body["sequence_number"] = json!(seq);
        seq += 1;
        out.push(event(name, &body));
    };
    let response = |status: &str| {
        json!({"id": "resp_scripted", "object": "response", "created_at": 1_700_000_000,
            "status": status, "model": model, "output": [], "usage": null})
    };
    push(
        "response.created",
        json!({"response": response("in_progress")}),
    );
    let mut index = 0;
    if !reply.reasoning.is_empty() {
        push(
            "response.output_item.added",
            json!({"output_index": index,
            "item": {"id": "rs_scripted", "type": "reasoning", "summary": []}}),
        );
        for text in &reply.reasoning {
            push(
                "response.reasoning_summary_text.delta",
                json!({"item_id": "rs_scripted",
                "output_index": index, "summary_index": 0, "delta": text}),
            );
        }
        index += 1;
    }
    if !reply.text.is_empty() {
        push(
            "response.output_item.added",
            json!({"output_index": index,
            "item": {"id": "msg_scripted", "type": "message", "status": "in_progress",
                "content": [], "role": "assistant"}}),
        );
        for text in &reply.text {
            push(
                "response.output_text.delta",
                json!({"item_id": "msg_scripted",
                "output_index": index, "content_index": 0, "delta": text}),
            );
        }
        index += 1;
    }
    for call in &reply.tool_calls {
        let item_id = format!("fc_{index}");
        let call_id = call.id.clone().unwrap_or_default();
        push(
            "response.output_item.added",
            json!({"output_index": index,
            "item": {"id": item_id, "type": "function_call", "status": "in_progress",
                "arguments": "", "call_id": call_id, "name": call.name}}),
        );
        for piece in split_in_pieces(&call.arguments, 3) {
            push(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id,
                "output_index": index, "delta": piece}),
            );
        }
        if reply.end == ReplyEnd::Complete {
            push(
                "response.output_item.done",
                json!({"output_index": index,
                "item": {"id": item_id, "type": "function_call", "status": "completed",
                    "arguments": call.arguments, "call_id": call_id, "name": call.name}}),
            );
        }
        index += 1;
    }
    if reply.end != ReplyEnd::Complete {
        return out;
    }
    let incomplete = match reply.stop_reason() {
        StopReason::MaxTokens => Some("max_output_tokens".to_string()),
        StopReason::ContentFilter => Some("content_filter".to_string()),
        StopReason::Other(other) => Some(other),
        StopReason::EndTurn | StopReason::ToolUse => None,
    };
    let mut last = response(if incomplete.is_some() {
        "incomplete"
    } else {
        "completed"
    });
    last["usage"] = json!({"input_tokens": usage.input + usage.cache_read,
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input + usage.cache_read + usage.output});
    match incomplete {
        Some(reason) => {
            last["incomplete_details"] = json!({"reason": reason});
            push("response.incomplete", json!({"response": last}));
        }
        None => push("response.completed", json!({"response": last})),
    }
    out
}

/// Anthropic Messages events: `message_start` with the input usage, a content block each for
/// thinking, text and every tool use, then `message_delta` (stop reason, output tokens) and
/// `message_stop`.
fn anthropic(reply: &Reply, model: &str, usage: Usage) -> Vec<Bytes> {
    let mut out = vec![event(
        "message_start",
        &json!({"type": "message_start",
        "message": {"id": "msg_scripted", "type": "message", "role": "assistant", "content": [],
            "model": model, "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": usage.input, "cache_read_input_tokens": usage.cache_read,
                "cache_creation_input_tokens": usage.cache_write, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    let mut block = |start: Value, deltas: Vec<Value>, out: &mut Vec<Bytes>| {
        out.push(event(
            "content_block_start",
            &json!({"type": "content_block_start",
            "index": index, "content_block": start}),
        ));
        for delta in deltas {
            out.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta",
                "index": index, "delta": delta}),
            ));
        }
        out.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    if !reply.reasoning.is_empty() {
        let deltas = (reply.reasoning.iter())
            .map(|text| json!({"type": "thinking_delta", "thinking": text}))
            .chain([json!({"type": "signature_delta", "signature": "c2NyaXB0ZWQ="})])
            .collect();
        block(
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
            &mut out,
        );
    }
    if !reply.text.is_empty() {
        let deltas = (reply.text.iter())
            .map(|text| json!({"type": "text_delta", "text": text}))
            .collect();
        block(json!({"type": "text", "text": ""}), deltas, &mut out);
    }
    for call in &reply.tool_calls {
        let deltas = split_in_pieces(&call.arguments, 3)
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .collect();
        let start = json!({"type": "tool_use", "id": call.id.clone().unwrap_or_default(),
            "name": call.name, "input": {}});
        block(start, deltas, &mut out);
    }
    if reply.end != ReplyEnd::Complete {
        return out;
    }
    let stop = match reply.stop_reason() {
        StopReason::EndTurn => "end_turn".to_string(),
        StopReason::ToolUse => "tool_use".to_string(),
        StopReason::MaxTokens => "max_tokens".to_string(),
        StopReason::ContentFilter => "refusal".to_string(),
        StopReason::Other(other) => other,
    };
    out.push(event(
        "message_delta",
        &json!({"type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": usage.output}}),
    ));
    out.push(event("message_stop", &json!({"type": "message_stop"})));
    out
}

/// Gemini `streamGenerateContent?alt=sse` chunks (CRLF-framed): thought parts, text parts and
/// whole function calls, the last chunk with the `finishReason` and the usage.
fn gemini(reply: &Reply, model: &str, usage: Usage) -> Vec<Bytes> {
    let chunk = |parts: Vec<Value>, finish: Option<&str>| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        let mut body = json!({"modelVersion": model, "responseId": "scripted"});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
            body["usageMetadata"] = json!({
                "promptTokenCount": usage.input + usage.cache_read,
                "cachedContentTokenCount": usage.cache_read,
                "candidatesTokenCount": usage.output.saturating_sub(usage.reasoning),
                "thoughtsTokenCount": usage.reasoning,
                "totalTokenCount": usage.input + usage.cache_read + usage.output});
        }
        body["candidates"] = json!([candidate]);
        Bytes::from(format!("data: {body}\r\n\r\n"))
    };
    let mut parts: Vec<Value> = Vec::new();
    parts.extend((reply.reasoning.iter()).map(|text| json!({"text": text, "thought": true})));
    parts.extend((reply.text.iter()).map(|text| json!({"text": text})));
    parts.extend(reply.tool_calls.iter().map(|call| {
        let args = serde_json::from_str::<Value>(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        json!({"functionCall": {"name": call.name, "args": args}})
    }));
    let mut out: Vec<Bytes> = parts
        .into_iter()
        .map(|part| chunk(vec![part], None))
        .collect();
    if reply.end != ReplyEnd::Complete {
        return out;
    }
    let finish = match reply.stop_reason() {
        StopReason::EndTurn | StopReason::ToolUse => "STOP".to_string(),
        StopReason::MaxTokens => "MAX_TOKENS".to_string(),
        StopReason::ContentFilter => "SAFETY".to_string(),
        StopReason::Other(other) => other,
    };
    out.push(chunk(Vec::new(), Some(&finish)));
    out
}
