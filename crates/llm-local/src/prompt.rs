//! Turning a [`ChatRequest`] into prompt tokens with the GGUF's own chat template, without
//! letting message text inject control tokens.
//!
//! The template is applied to messages whose contents are unique placeholders; the rendered
//! prompt is then cut at the placeholders. Template text (`<|im_start|>user\n` …) is tokenized
//! with special-token parsing on; every message content — user text, file excerpts, tool
//! output, even the system prompt (which may quote project files) — is tokenized with it off,
//! so a literal `<|im_start|>` in a file stays plain text and cannot open a new turn.

use std::sync::atomic::{AtomicU64, Ordering};

use braincode_llm::{ChatMessage, ChatRequest, ContentPart, ErrorKind, ModelError};
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;

/// What an image becomes: the embedded model reads text only.
const IMAGE_PLACEHOLDER: &str = "[image omitted: this model cannot see images]";

static NONCE: AtomicU64 = AtomicU64::new(0);

/// One turn: template role and raw content.
fn turns(request: &ChatRequest) -> Vec<(&'static str, String)> {
    let mut turns = Vec::new();
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        turns.push(("system", system.to_string()));
    }
    for message in &request.messages {
        match message {
            ChatMessage::User { content } => {
                let text = content
                    .iter()
                    .map(|part| match part {
                        ContentPart::Text { text } => text.as_str(),
                        ContentPart::Image { .. } => IMAGE_PLACEHOLDER,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                turns.push(("user", text));
            }
            ChatMessage::Assistant { text, tool_calls } => {
                // The model cannot call tools; earlier calls (made by another model of the
                // chain) are kept as text so the conversation still reads coherently.
                let mut text = text.clone();
                for call in tool_calls {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&format!(
                        "[called {} with {}]",
                        call.name, call.raw_arguments
                    ));
                }
                turns.push(("assistant", text));
            }
            ChatMessage::Tool {
                name,
                content,
                is_error,
                ..
            } => {
                let label = if *is_error { "failed" } else { "result" };
                turns.push(("user", format!("[tool {name} {label}]\n{content}")));
            }
        }
    }
    turns
}

fn template_error(model_path: &str, problem: impl std::fmt::Display) -> ModelError {
    ModelError::new(
        ErrorKind::Config,
        format!("the chat template of {model_path} cannot be applied: {problem}"),
    )
}

/// A tokenized prompt and where its messages end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    /// All tokens, template included.
    pub tokens: Vec<LlamaToken>,
    /// Token index just past each message's content, ascending, then `tokens.len()`. Prompts
    /// are evaluated in segments cut here (see `crate::prefix`).
    pub message_ends: Vec<usize>,
    /// Tokens of the static prefix: everything up to the end of the system message's content
    /// (0 without a system message). Message contents are tokenized on their own, so these
    /// tokens depend only on the template and the system text, never on what follows.
    pub static_prefix: usize,
}

/// Tokenizes `request` for `model`: template text with special tokens parsed, message text
/// without.
pub(crate) fn prompt_tokens(
    model: &LlamaModel,
    template: &LlamaChatTemplate,
    model_path: &str,
    request: &ChatRequest,
) -> Result<Prompt, ModelError> {
    let turns = turns(request);
    if turns.is_empty() {
        return Err(ModelError::new(
            ErrorKind::BadRequest,
            "the request has no messages",
        ));
    }
    for (_, content) in &turns {
        if content.contains('\0') {
            return Err(ModelError::new(
                ErrorKind::BadRequest,
                "a message contains a NUL byte, which the local model cannot read",
            ));
        }
    }
    // Placeholders made of private-use characters plus a per-call nonce; retried in the
    // (theoretical) case that a message already contains one.
    let (placeholders, rendered) = loop {
        let nonce = NONCE.fetch_add(1, Ordering::Relaxed) ^ u64::from(std::process::id()) << 32;
        let placeholders: Vec<String> = (0..turns.len())
            .map(|i| format!("\u{E000}{nonce:x}.{i}\u{E001}"))
            .collect();
        if turns
            .iter()
            .any(|(_, c)| placeholders.iter().any(|p| c.contains(p.as_str())))
        {
            continue;
        }
        let messages = turns
            .iter()
            .zip(&placeholders)
            .map(|((role, _), placeholder)| {
                LlamaChatMessage::new((*role).to_string(), placeholder.clone())
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| template_error(model_path, err))?;
        let rendered = model
            .apply_chat_template(template, &messages, true)
            .map_err(|err| template_error(model_path, err))?;
        break (placeholders, rendered);
    };

    let vocab = model.vocab();
    let mut tokens = Vec::new();
    let mut rest = rendered.as_str();
    let mut first = true;
    let mut message_ends = Vec::with_capacity(turns.len() + 1);
    let mut static_prefix = 0;
    for ((role, content), placeholder) in turns.iter().zip(&placeholders) {
        let (before, after) = rest
            .split_once(placeholder.as_str())
            .ok_or_else(|| template_error(model_path, "it drops or rewrites message text"))?;
        // `add_special` adds BOS only when the model asks for it, and only at the very start.
        vocab.tokenize_into(before.as_bytes(), &mut tokens, first, true);
        first = false;
        vocab.tokenize_into(content.as_bytes(), &mut tokens, false, false);
        if *role == "system" && message_ends.is_empty() {
            static_prefix = tokens.len();
        }
        if message_ends.last() != Some(&tokens.len()) {
            message_ends.push(tokens.len());
        }
        rest = after;
    }
    vocab.tokenize_into(rest.as_bytes(), &mut tokens, false, true);
    if message_ends.last() != Some(&tokens.len()) {
        message_ends.push(tokens.len());
    }
    message_ends.retain(|end| *end > 0);
    Ok(Prompt {
        tokens,
        message_ends,
        static_prefix,
    })
}
