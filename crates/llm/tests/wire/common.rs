//! The wire tests' server: the shared scripted server, answering each request with the next
//! canned response byte for byte, and recording requests.

use std::time::Duration;

use braincode_llm::{ChatRequest, ClientOptions, ModelEvent, ModelStream, WireClient};
use braincode_protocol::ModelDefinition;
pub use braincode_test_support::{RawReply as Canned, ReplyEnd as End, ScriptedServer};
use braincode_test_support::{Reply, Script};
use futures::StreamExt;

/// A server answering its requests with `responses`, in order (HTTP 500 once they are used).
pub async fn serve(responses: Vec<Canned>) -> ScriptedServer {
    ScriptedServer::start(Script::replies(responses.into_iter().map(Reply::from))).await
}

/// A catalogue entry for `api` pointing at `base_url`.
pub fn definition(api: &str, base_url: &str) -> ModelDefinition {
    serde_json::from_value(serde_json::json!({
        "id": format!("test/{api}"), "provider": "test", "modelId": "test-model",
        "api": api, "baseUrl": base_url,
    }))
    .unwrap()
}

/// Options with fast retries, so failure tests stay quick.
pub fn fast_options() -> ClientOptions {
    ClientOptions {
        retry_base_delay: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..ClientOptions::default()
    }
}

pub fn client(api: &str, server: &ScriptedServer, key: Option<&str>) -> WireClient {
    WireClient::new(
        &definition(api, &server.url()),
        key.map(str::to_string),
        fast_options(),
    )
    .unwrap()
}

pub fn hello() -> ChatRequest {
    ChatRequest {
        system: Some("You are terse.".into()),
        messages: vec![braincode_llm::ChatMessage::user_text("Say hello")],
        ..ChatRequest::default()
    }
}

/// Drains a stream into its events; the error, if any, ends the list.
pub async fn drain(
    mut stream: ModelStream,
) -> (Vec<ModelEvent>, Option<braincode_llm::ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => return (events, Some(err)),
        }
    }
    (events, None)
}
