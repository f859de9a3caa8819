//! How every role reaches a model.
//!
//! One small trait, [`ModelClient`], with one required method that streams [`ModelEvent`]s.
//! Wire implementations (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) live in
//! this crate; the embedded GGUF model lives in `braincode-llm-local` so that crates which do
//! not run it never compile llama.cpp.

mod client;
mod error;

pub use client::{
    ChatMessage, ChatRequest, Completion, ContentPart, ModelClient, ModelEvent, ModelStream,
    ResponseSchema, StopReason, ToolCall, ToolSpec, collect_stream,
};
pub use error::{ErrorKind, ModelError};
