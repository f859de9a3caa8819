//! Model servers already running on this machine: Ollama (`127.0.0.1:11434`, `GET
//! /api/tags`), llama.cpp's `llama-server` (`:8080`), LM Studio (`:1234`) and vLLM (`:8000`)
//! (`GET /v1/models`). With no key and no configured brain, a run uses the first one found for
//! every role, the embedded model staying the last fallback of each chain.
//!
//! The probe only ever connects to 127.0.0.1, all four at once, and gives up after
//! [`PROBE_BUDGET`] in total; it runs once per process. `BRAINCODE_LOCAL_SERVERS=0` turns it
//! off.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use braincode_protocol::{ModelApi, ModelDefinition};
use serde_json::Value;

/// The whole probe's time limit.
pub const PROBE_BUDGET: Duration = Duration::from_millis(100);

/// The environment variable that turns the probe off (`0`, `off`, `false`).
pub const LOCAL_SERVERS_ENV: &str = "BRAINCODE_LOCAL_SERVERS";

/// The brain id a found server gets.
pub const LOCAL_SERVER_BRAIN: &str = "local-server";

/// A kind of local model server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// Ollama.
    Ollama,
    /// llama.cpp's `llama-server`.
    LlamaServer,
    /// LM Studio.
    LmStudio,
    /// vLLM.
    Vllm,
}

impl ServerKind {
    /// Every kind, in the order they are preferred.
    pub const ALL: [ServerKind; 4] = [
        ServerKind::Ollama,
        ServerKind::LlamaServer,
        ServerKind::LmStudio,
        ServerKind::Vllm,
    ];

    /// Its usual port.
    pub fn port(self) -> u16 {
        match self {
            ServerKind::Ollama => 11434,
            ServerKind::LlamaServer => 8080,
            ServerKind::LmStudio => 1234,
            ServerKind::Vllm => 8000,
        }
    }

    /// Its name, as people know it.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Ollama => "Ollama",
            ServerKind::LlamaServer => "llama-server",
            ServerKind::LmStudio => "LM Studio",
            ServerKind::Vllm => "vLLM",
        }
    }

    /// The model-id prefix of its models (`ollama/llama3.2`).
    pub fn prefix(self) -> &'static str {
        match self {
            ServerKind::Ollama => "ollama",
            ServerKind::LlamaServer => "llama-server",
            ServerKind::LmStudio => "lmstudio",
            ServerKind::Vllm => "vllm",
        }
    }

    fn listing_path(self) -> &'static str {
        match self {
            ServerKind::Ollama => "/api/tags",
            _ => "/v1/models",
        }
    }
}

/// A server that answered, with the models it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    /// What it is.
    pub kind: ServerKind,
    /// `127.0.0.1:<port>`.
    pub addr: SocketAddr,
    /// Its models, as it names them.
    pub models: Vec<String>,
}

impl LocalServer {
    /// The model a run uses: one made for code when there is one, else the first.
    pub fn chosen_model(&self) -> Option<&str> {
        self.models
            .iter()
            .find(|m| {
                let m = m.to_ascii_lowercase();
                m.contains("coder") || m.contains("code")
            })
            .or_else(|| self.models.first())
            .map(String::as_str)
    }

    /// The catalogue entry of `model` on this server (OpenAI-compatible chat, no key).
    pub fn definition(&self, model: &str) -> ModelDefinition {
        ModelDefinition {
            id: format!("{}/{model}", self.kind.prefix()),
            provider: self.kind.prefix().to_string(),
            model_id: model.to_string(),
            name: format!("{model} on {} ({})", self.kind.name(), self.addr),
            api: ModelApi::OpenaiCompletions,
            base_url: Some(format!("http://{}/v1", self.addr)),
            context_window: 32_768,
            max_tokens: Some(4_096),
            supports_tools: true,
            supports_vision: false,
            ..ModelDefinition::default()
        }
    }
}

/// The servers found (probed once per process; none when the probe is off).
pub fn found() -> &'static [LocalServer] {
    static FOUND: OnceLock<Vec<LocalServer>> = OnceLock::new();
    FOUND.get_or_init(|| {
        let off = std::env::var(LOCAL_SERVERS_ENV)
            .is_ok_and(|v| matches!(v.trim(), "0" | "off" | "false" | "no"));
        if off { Vec::new() } else { probe(PROBE_BUDGET) }
    })
}

/// Probes every known port on 127.0.0.1 at once, within `budget` in total.
pub fn probe(budget: Duration) -> Vec<LocalServer> {
    let deadline = Instant::now() + budget;
    let (sender, answers) = std::sync::mpsc::channel();
    for kind in ServerKind::ALL {
        let sender = sender.clone();
        std::thread::spawn(move || {
            let _ = sender.send(probe_one(kind, deadline));
        });
    }
    drop(sender);
    let mut found: Vec<LocalServer> = answers.iter().flatten().collect();
    found.sort_by_key(|s| ServerKind::ALL.iter().position(|k| *k == s.kind));
    found
}

fn probe_one(kind: ServerKind, deadline: Instant) -> Option<LocalServer> {
    let addr = SocketAddr::from(([127, 0, 0, 1], kind.port()));
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    };
    let mut stream = TcpStream::connect_timeout(&addr, left()?).ok()?;
    stream.set_read_timeout(Some(left()?)).ok()?;
    stream.set_write_timeout(Some(left()?)).ok()?;
    let request = format!(
        "GET {} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\nAccept: application/json\r\n\r\n",
        kind.listing_path(),
        kind.port()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    let mut chunk = [0u8; 8192];
    while response.len() < 1 << 20 {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
            Err(_) => break,
        }
        if left().is_none() {
            break;
        }
    }
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let ok = head.starts_with("HTTP/1.") && head.split_whitespace().nth(1) == Some("200");
    if !ok {
        return None;
    }
    let models = listed_models(kind, body)?;
    Some(LocalServer { kind, addr, models })
}

/// The models of a listing: Ollama's `{"models": [{"name": …}]}`, OpenAI's `{"data": [{"id":
/// …}]}`. `None` when the body is neither (another program on the port).
fn listed_models(kind: ServerKind, body: &str) -> Option<Vec<String>> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let (list, key) = match kind {
        ServerKind::Ollama => (value.get("models")?.as_array()?, "name"),
        _ => (value.get("data")?.as_array()?, "id"),
    };
    Some(
        list.iter()
            .filter_map(|m| m.get(key).and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_of_each_kind_are_read_and_anything_else_is_not_a_server() {
        let ollama = r#"{"models":[{"name":"llama3.2:latest"},{"name":"qwen2.5-coder:7b"}]}"#;
        let models = listed_models(ServerKind::Ollama, ollama).unwrap();
        assert_eq!(models, ["llama3.2:latest", "qwen2.5-coder:7b"]);
        let server = LocalServer {
            kind: ServerKind::Ollama,
            addr: SocketAddr::from(([127, 0, 0, 1], 11434)),
            models,
        };
        assert_eq!(server.chosen_model(), Some("qwen2.5-coder:7b"));
        let definition = server.definition("qwen2.5-coder:7b");
        assert_eq!(definition.id, "ollama/qwen2.5-coder:7b");
        assert_eq!(
            definition.base_url.as_deref(),
            Some("http://127.0.0.1:11434/v1")
        );
        let openai = r#"{"object":"list","data":[{"id":"local-model"}]}"#;
        assert_eq!(
            listed_models(ServerKind::LmStudio, openai).unwrap(),
            ["local-model"]
        );
        assert_eq!(
            listed_models(ServerKind::Vllm, "<html>dev server</html>"),
            None
        );
        assert_eq!(listed_models(ServerKind::Ollama, openai), None);
    }
}
