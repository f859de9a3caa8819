//! Built-in models and brains: Braincode works offline with no configuration.
//!
//! The default brain runs every role on the embedded local model; the `anthropic` and
//! `openai` presets route roles to a remote model and keep the local model as the last
//! fallback, so a missing key or an outage degrades instead of failing.

use braincode_protocol::{ModelApi, ModelDefinition, ModelPricing, Role, ThinkingLevel};

use crate::schema::{
    BrainPreset, ImageModelRef, ModelPolicy, PartialContextPolicy, PartialModelPolicy,
    PartialRouting,
};

/// The brain used when settings name none.
pub const DEFAULT_BRAIN_ID: &str = "brain";

/// The embedded local model's catalogue id.
pub const LOCAL_MODEL_ID: &str = "local/smollm2";

/// The default OpenAI model's catalogue id.
pub const OPENAI_MODEL_ID: &str = "openai/gpt-5.5";

/// The default Anthropic model's catalogue id.
pub const ANTHROPIC_MODEL_ID: &str = "anthropic/claude-sonnet-4-6";

fn model(id: &str, provider: &str, model_id: &str, name: &str, api: ModelApi) -> ModelDefinition {
    ModelDefinition {
        id: id.to_string(),
        provider: provider.to_string(),
        model_id: model_id.to_string(),
        name: name.to_string(),
        api,
        ..ModelDefinition::default()
    }
}

/// The built-in model catalogue: the local model plus one OpenAI and one Anthropic model.
pub fn default_models() -> Vec<ModelDefinition> {
    let mut local = model(
        LOCAL_MODEL_ID,
        "local",
        "SmolLM2-135M-Instruct-Q4_1",
        "SmolLM2 135M Instruct (embedded)",
        ModelApi::Local,
    );
    local.context_window = 8_192;
    local.supports_tools = false;
    local.supports_vision = false;
    local.default_thinking_level = Some(ThinkingLevel::Off);
    // Pinned: llama.cpp's greedy output depends on the thread count.
    local.threads = Some(2);
    // In-process: no bill.
    local.pricing = Some(ModelPricing::default());

    let mut openai = model(
        OPENAI_MODEL_ID,
        "openai",
        "gpt-5.5",
        "GPT-5.5",
        ModelApi::OpenaiResponses,
    );
    openai.base_url = Some("https://api.openai.com/v1".into());
    openai.context_window = 272_000;
    openai.default_thinking_level = Some(ThinkingLevel::Xhigh);
    // OpenAI's list prices, US dollars per million tokens (cached input at a tenth).
    openai.pricing = Some(ModelPricing {
        input: 5.0,
        output: 30.0,
        cache_read: Some(0.5),
        cache_write: None,
    });

    let mut anthropic = model(
        ANTHROPIC_MODEL_ID,
        "anthropic",
        "claude-sonnet-4-6",
        "Claude Sonnet 4.6",
        ModelApi::AnthropicMessages,
    );
    anthropic.base_url = Some("https://api.anthropic.com".into());
    anthropic.context_window = 200_000;
    anthropic.supports_vision = true;
    anthropic.default_thinking_level = Some(ThinkingLevel::Medium);
    // Anthropic's list prices, US dollars per million tokens (5-minute cache writes).
    anthropic.pricing = Some(ModelPricing {
        input: 3.0,
        output: 15.0,
        cache_read: Some(0.3),
        cache_write: Some(3.75),
    });

    vec![local, openai, anthropic]
}

/// How hard each role thinks on a remote model: deep for judgement-heavy roles, light for
/// chores and status text.
fn remote_thinking(role: Role) -> ThinkingLevel {
    match role {
        Role::Security | Role::Review | Role::Oracle | Role::Dba | Role::Librarian => {
            ThinkingLevel::High
        }
        Role::Qa | Role::Summarize | Role::Rush => ThinkingLevel::Low,
        Role::Pet => ThinkingLevel::Minimal,
        Role::ImageMaker => ThinkingLevel::Off,
        Role::RouteBrain | Role::Frontend | Role::Backend | Role::Designer | Role::Devops => {
            ThinkingLevel::Medium
        }
    }
}

fn preset(
    id: &str,
    name: &str,
    description: &str,
    policy_for: impl Fn(Role) -> ModelPolicy,
) -> BrainPreset {
    BrainPreset {
        id: id.to_string(),
        extends: None,
        name: Some(name.to_string()),
        description: Some(description.to_string()),
        planner: Some(policy_for(Role::RouteBrain).into()),
        roles: Some(
            Role::ALL
                .iter()
                .map(|role| (*role, PartialModelPolicy::from(policy_for(*role))))
                .collect(),
        ),
        routing: Some(PartialRouting {
            max_parallel_agents: Some(2),
            prefer_cheap_model_for_simple_tasks: Some(true),
            escalate_on_uncertainty: Some(true),
            require_review_for_file_edits: Some(true),
            parallel_writers: None,
        }),
        context: Some(PartialContextPolicy {
            max_input_tokens: Some(120_000),
            compaction: Some(crate::schema::Compaction::Auto),
            isolation: Some(crate::schema::Isolation::Strict),
        }),
        budget: None,
    }
}

/// Every role on `model_id`, falling back to the embedded model, except the pet: a status
/// line every 8 s on a flagship model would cost more than some requests, so the presets
/// leave it on the embedded model, which the pet never calls (it then speaks from the run's
/// own events). A user who wants a talking pet names a cheap model in `roles.pet`.
fn remote(model_id: &str) -> impl Fn(Role) -> ModelPolicy {
    move |role| match role {
        Role::Pet => ModelPolicy::new(LOCAL_MODEL_ID, remote_thinking(role)),
        _ => ModelPolicy::new(model_id, remote_thinking(role)).with_fallbacks(&[LOCAL_MODEL_ID]),
    }
}

/// OpenAI's image model, what the `openai` preset's imageMaker generates images with (the
/// same key as its text models).
fn openai_image_model() -> ImageModelRef {
    ImageModelRef {
        provider: "openai".into(),
        model_id: "gpt-image-2".into(),
        name: Some("GPT Image 2".into()),
        base_url: Some("https://api.openai.com/v1".into()),
        api: Some("openai-images".into()),
    }
}

/// The built-in presets: `brain` (the default, fully local) plus `anthropic` and `openai`.
///
/// All three are complete (none extends another), so editing one never changes the others.
pub fn default_brains() -> Vec<BrainPreset> {
    vec![
        preset(
            DEFAULT_BRAIN_ID,
            "Brain",
            "Offline default: every role and the planner run on the embedded local model, so \
             Braincode works with no configuration and no API key.",
            |_| ModelPolicy::new(LOCAL_MODEL_ID, ThinkingLevel::Off),
        ),
        preset(
            "anthropic",
            "Anthropic",
            "Every role on Claude Sonnet 4.6, falling back to the embedded local model.",
            remote(ANTHROPIC_MODEL_ID),
        ),
        preset(
            "openai",
            "OpenAI",
            "Every role on GPT-5.5, falling back to the embedded local model; images by GPT Image 2.",
            |role| {
                let mut policy = remote(OPENAI_MODEL_ID)(role);
                if role == Role::ImageMaker {
                    policy.image_model = Some(openai_image_model());
                }
                policy
            },
        ),
    ]
}

/// The brain of a model server found on this machine (Ollama, llama-server, LM Studio,
/// vLLM): every role on its `model_id`, falling back to the embedded local model, thinking
/// off (local servers rarely take a thinking parameter).
pub fn local_server_brain(id: &str, model_id: &str, server: &str) -> BrainPreset {
    preset(
        id,
        "Local server",
        &format!(
            "Every role on {model_id}, served by {server} on this machine, falling back to the embedded local model."
        ),
        move |role| match role {
            Role::Pet => ModelPolicy::new(LOCAL_MODEL_ID, ThinkingLevel::Off),
            _ => ModelPolicy::new(model_id, ThinkingLevel::Off).with_fallbacks(&[LOCAL_MODEL_ID]),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inherit::select_brain;
    use crate::schema::BrainsDocument;

    #[test]
    fn default_models_match_the_catalogue() {
        let models = default_models();
        let local = &models[0];
        assert_eq!(local.id, "local/smollm2");
        assert_eq!(local.provider, "local");
        assert_eq!(local.model_id, "SmolLM2-135M-Instruct-Q4_1");
        assert_eq!(local.api, ModelApi::Local);
        assert_eq!(local.context_window, 8_192);
        assert!(!local.supports_tools && !local.supports_vision);
        assert_eq!(local.threads, Some(2));
        let openai = &models[1];
        assert_eq!(openai.api, ModelApi::OpenaiResponses);
        assert_eq!(
            openai.base_url.as_deref(),
            Some("https://api.openai.com/v1")
        );
        assert_eq!(openai.context_window, 272_000);
        assert!(openai.supports_tools);
        let anthropic = &models[2];
        assert_eq!(anthropic.api, ModelApi::AnthropicMessages);
        assert_eq!(
            anthropic.base_url.as_deref(),
            Some("https://api.anthropic.com")
        );
        assert_eq!(anthropic.context_window, 200_000);
        assert!(anthropic.supports_tools && anthropic.supports_vision);
    }

    #[test]
    fn the_openai_preset_makes_images_with_gpt_image() {
        let openai = select_brain(&default_brains(), "openai").unwrap();
        assert_eq!(
            openai.policy(Role::ImageMaker).image_model,
            Some(openai_image_model())
        );
        let anthropic = select_brain(&default_brains(), "anthropic").unwrap();
        assert_eq!(anthropic.policy(Role::ImageMaker).image_model, None);
    }

    #[test]
    fn default_brain_is_fully_local() {
        let brain = select_brain(&default_brains(), DEFAULT_BRAIN_ID).unwrap();
        assert_eq!(brain.name, "Brain");
        assert_eq!(brain.planner.chain(), vec![LOCAL_MODEL_ID]);
        for role in Role::ALL {
            assert_eq!(brain.policy(role).chain(), vec![LOCAL_MODEL_ID], "{role}");
        }
        assert_eq!(brain.routing.max_parallel_agents, 2);
        assert!(brain.routing.require_review_for_file_edits);
        assert_eq!(brain.context.max_input_tokens, 120_000);
    }

    #[test]
    fn remote_presets_fall_back_to_local() {
        for (id, model) in [
            ("anthropic", ANTHROPIC_MODEL_ID),
            ("openai", OPENAI_MODEL_ID),
        ] {
            let brain = select_brain(&default_brains(), id).unwrap();
            for role in Role::ALL {
                // The pet is never sent to the flagship by default (see `remote`).
                let expected = match role {
                    Role::Pet => vec![LOCAL_MODEL_ID],
                    _ => vec![model, LOCAL_MODEL_ID],
                };
                assert_eq!(brain.policy(role).chain(), expected, "{id} {role}");
            }
        }
    }

    #[test]
    fn defaults_round_trip_through_brains_json() {
        let doc = BrainsDocument {
            brains: default_brains(),
        };
        let json = serde_json::to_string_pretty(&doc).unwrap();
        let back: BrainsDocument = serde_json::from_str(&json).unwrap();
        assert_eq!(back, doc);
        let models_json = serde_json::to_string(&default_models()).unwrap();
        let models: Vec<ModelDefinition> = serde_json::from_str(&models_json).unwrap();
        assert_eq!(models, default_models());
    }
}
