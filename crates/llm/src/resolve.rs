//! Model resolution: a role's chain of model ids → the usable candidates, in order, with the
//! reason each other id was skipped (spec 1.5, `selectRuntimeModelCandidatesWithApiKey`).

use std::fmt;
use std::sync::Arc;

use braincode_protocol::{ModelApi, ModelDefinition};

use crate::endpoint::is_keyless;
use crate::wire_client::{WireClient, local_model_error};
use crate::{ClientOptions, ModelClient, ModelError};

/// What the request needs from a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Requirements {
    /// The request carries images.
    pub vision: bool,
    /// What the model must produce.
    pub output: ModelOutput,
}

/// What a model is asked to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelOutput {
    /// A text turn (chat, tools): image-generation models are skipped.
    #[default]
    Text,
    /// An image: only image-generation (`openai-images`) models qualify.
    Image,
}

/// A usable model with its credential.
#[derive(Clone, PartialEq)]
pub struct Candidate {
    /// The catalogue entry.
    pub definition: ModelDefinition,
    /// The API key (`None` for keyless local endpoints).
    pub api_key: Option<String>,
}

impl fmt::Debug for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Candidate")
            .field("definition", &self.definition)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

/// A chain entry that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedCandidate {
    /// The id as written in the chain.
    pub model_id: String,
    /// Why it was skipped.
    pub reason: String,
}

/// The outcome of resolving a chain.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CandidateSelection {
    /// Usable models, in chain order (the runtime falls back along this list on error).
    pub usable: Vec<Candidate>,
    /// Every other id of the chain with its reason, in chain order.
    pub skipped: Vec<SkippedCandidate>,
}

/// Skip reason for an id missing from the catalogue.
pub const REASON_NOT_CONFIGURED: &str = "not configured in models.json";
/// Skip reason for a text-only model when the request has images.
pub const REASON_NOT_VISION: &str = "not vision-capable";
/// Skip reason for an image-generation model in a text role's chain.
pub const REASON_IMAGE_MODEL: &str =
    "an image-generation model (openai-images); it cannot answer a text turn";
/// Skip reason for a text model in an image-generation chain.
pub const REASON_NOT_IMAGE_MODEL: &str =
    "not an image-generation model (its api must be openai-images)";

impl CandidateSelection {
    /// The first usable candidate.
    pub fn first(&self) -> Option<&Candidate> {
        self.usable.first()
    }

    /// Whether no candidate is usable.
    pub fn is_empty(&self) -> bool {
        self.usable.is_empty()
    }

    /// `No usable model for <role>. Tried: a (reason); b (reason).`
    pub fn error_message(&self, role: &str) -> String {
        let tried = if self.skipped.is_empty() {
            "nothing (the model chain is empty)".to_string()
        } else {
            self.skipped
                .iter()
                .map(|s| format!("{} ({})", s.model_id, s.reason))
                .collect::<Vec<_>>()
                .join("; ")
        };
        format!("No usable model for {role}. Tried: {tried}.")
    }
}

/// Resolves a chain: de-duplicates it (first occurrence wins), then keeps each id that is in
/// the catalogue, meets `requirements`, and has a credential — or needs none (see
/// [`crate::is_keyless`]: embedded models and endpoints on this machine). `key_for` reads
/// the credential of one entry (auth.json or its `apiKeyEnv`).
pub fn resolve_candidates(
    chain: &[String],
    catalog: &[ModelDefinition],
    requirements: &Requirements,
    key_for: &dyn Fn(&ModelDefinition) -> Option<String>,
) -> CandidateSelection {
    let mut selection = CandidateSelection::default();
    let mut seen: Vec<&str> = Vec::with_capacity(chain.len());
    for id in chain {
        let id = id.trim();
        if id.is_empty() || seen.contains(&id) {
            continue;
        }
        seen.push(id);
        let skip = |reason: String| SkippedCandidate {
            model_id: id.to_string(),
            reason,
        };
        let Some(definition) = catalog.iter().find(|d| d.id == id) else {
            selection
                .skipped
                .push(skip(REASON_NOT_CONFIGURED.to_string()));
            continue;
        };
        match (requirements.output, definition.is_image_model()) {
            (ModelOutput::Text, true) => {
                selection.skipped.push(skip(REASON_IMAGE_MODEL.to_string()));
                continue;
            }
            (ModelOutput::Image, false) => {
                selection
                    .skipped
                    .push(skip(REASON_NOT_IMAGE_MODEL.to_string()));
                continue;
            }
            (ModelOutput::Text, false) | (ModelOutput::Image, true) => {}
        }
        if requirements.vision
            && requirements.output == ModelOutput::Text
            && !definition.supports_vision
        {
            selection.skipped.push(skip(REASON_NOT_VISION.to_string()));
            continue;
        }
        let api_key = if definition.api == ModelApi::Local {
            None
        } else {
            key_for(definition).filter(|k| !k.trim().is_empty())
        };
        if api_key.is_none() && !is_keyless(definition) {
            selection.skipped.push(skip(format!(
                "missing API key for provider '{}'",
                definition.provider
            )));
            continue;
        }
        selection.usable.push(Candidate {
            definition: definition.clone(),
            api_key,
        });
    }
    selection
}

/// The wire client for a candidate. Embedded (`local`) models are an error of kind
/// `config`: the runtime builds those with braincode-llm-local.
pub fn client_for(
    candidate: &Candidate,
    options: &ClientOptions,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    if candidate.definition.is_local() {
        return Err(local_model_error(&candidate.definition));
    }
    Ok(Arc::new(WireClient::new(
        &candidate.definition,
        candidate.api_key.clone(),
        options.clone(),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use serde_json::json;

    fn def(id: &str, provider: &str, extra: serde_json::Value) -> ModelDefinition {
        let mut value = json!({"id": id, "provider": provider, "modelId": id});
        if let (Some(target), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
            target.extend(extra.clone());
        }
        serde_json::from_value(value).unwrap()
    }

    fn chain(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn skips_with_reasons_and_keeps_order() {
        let catalog = vec![
            def("openai/gpt", "openai", json!({})),
            def(
                "anthropic/claude",
                "anthropic",
                json!({"api": "anthropic-messages", "supportsVision": true}),
            ),
            def(
                "ollama/qwen",
                "ollama",
                json!({"baseUrl": "http://localhost:11434"}),
            ),
            def("local/smol", "local", json!({"api": "local"})),
        ];
        let key_for =
            |d: &ModelDefinition| (d.provider == "anthropic").then(|| "sk-ant".to_string());
        let selection = resolve_candidates(
            &chain(&[
                "openai/gpt",
                "missing/x",
                "anthropic/claude",
                "openai/gpt",
                "ollama/qwen",
                "local/smol",
            ]),
            &catalog,
            &Requirements::default(),
            &key_for,
        );
        let usable: Vec<_> = selection
            .usable
            .iter()
            .map(|c| c.definition.id.as_str())
            .collect();
        assert_eq!(
            usable,
            vec!["anthropic/claude", "ollama/qwen", "local/smol"]
        );
        assert_eq!(selection.usable[0].api_key.as_deref(), Some("sk-ant"));
        assert_eq!(selection.usable[1].api_key, None);
        assert_eq!(
            selection.skipped,
            vec![
                SkippedCandidate {
                    model_id: "openai/gpt".into(),
                    reason: "missing API key for provider 'openai'".into()
                },
                SkippedCandidate {
                    model_id: "missing/x".into(),
                    reason: REASON_NOT_CONFIGURED.into()
                },
            ]
        );
        assert_eq!(
            selection.error_message("backend"),
            "No usable model for backend. Tried: openai/gpt (missing API key for provider 'openai'); missing/x (not configured in models.json)."
        );
        assert!(!format!("{:?}", selection.usable[0]).contains("sk-ant"));
    }

    #[test]
    fn vision_requirement() {
        let catalog = vec![
            def("a", "x", json!({"baseUrl": "http://127.0.0.1:1"})),
            def(
                "b",
                "x",
                json!({"baseUrl": "http://127.0.0.1:1", "supportsVision": true}),
            ),
        ];
        let selection = resolve_candidates(
            &chain(&["a", "b"]),
            &catalog,
            &Requirements {
                vision: true,
                ..Requirements::default()
            },
            &|_| None,
        );
        assert_eq!(selection.usable.len(), 1);
        assert_eq!(selection.skipped[0].reason, REASON_NOT_VISION);
        assert_eq!(
            CandidateSelection::default().error_message("qa"),
            "No usable model for qa. Tried: nothing (the model chain is empty)."
        );
    }

    #[test]
    fn image_models_serve_only_image_chains() {
        let catalog = vec![
            def("text", "x", json!({"baseUrl": "http://127.0.0.1:1"})),
            def(
                "img",
                "x",
                json!({"baseUrl": "http://127.0.0.1:1", "api": "openai-images"}),
            ),
        ];
        let text = resolve_candidates(
            &chain(&["img", "text"]),
            &catalog,
            &Requirements::default(),
            &|_| None,
        );
        assert_eq!(text.usable[0].definition.id, "text");
        assert_eq!(text.skipped[0].reason, REASON_IMAGE_MODEL);
        let image = resolve_candidates(
            &chain(&["text", "img"]),
            &catalog,
            &Requirements {
                output: ModelOutput::Image,
                ..Requirements::default()
            },
            &|_| None,
        );
        assert_eq!(image.usable[0].definition.id, "img");
        assert_eq!(image.skipped[0].reason, REASON_NOT_IMAGE_MODEL);
        let err = client_for(&image.usable[0], &ClientOptions::default())
            .err()
            .unwrap();
        assert!(err.message.contains("image-generation model"), "{err}");
    }

    #[test]
    fn client_for_builds_wire_clients_and_refuses_local() {
        let local = Candidate {
            definition: def("l", "local", json!({"api": "local"})),
            api_key: None,
        };
        let err = client_for(&local, &ClientOptions::default()).err().unwrap();
        assert_eq!(err.kind, ErrorKind::Config);
        assert!(err.message.contains("braincode-llm-local"));
        let remote = Candidate {
            definition: def("o", "openai", json!({"headers": {"X-Title": "braincode"}})),
            api_key: Some("k".into()),
        };
        assert!(client_for(&remote, &ClientOptions::default()).is_ok());
        let bad_header = Candidate {
            definition: def("o", "openai", json!({"headers": {"bad header": "v"}})),
            api_key: None,
        };
        let err = client_for(&bad_header, &ClientOptions::default())
            .err()
            .unwrap();
        assert_eq!(err.kind, ErrorKind::Config);
    }
}
