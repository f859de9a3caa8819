//! What the CLI (`braincode models`) and the control panel both ask about a model: where its
//! credential comes from, whether it answers, and what a discovered model's entry looks like.

use braincode_config::{Home, KeySource};
use braincode_llm::{
    ClientOptions, ConnectionTestResult, DiscoveredModel, ErrorKind, WireClient, is_keyless,
    test_connection,
};
use braincode_protocol::{ModelApi, ModelDefinition};
use serde_json::{Value, json};

/// How a model gets its credential, without the secret: `embedded`, `auth.json`,
/// `env NAME`, `not needed (local endpoint)`, `missing`, or why auth.json is unreadable.
pub fn credential_status(home: &Home, model: &ModelDefinition) -> String {
    if model.is_local() {
        return "embedded".to_string();
    }
    match crate::subscription::find_credential(home, &model.provider, model.api_key_env.as_deref())
    {
        Ok(Some(crate::ProviderCredential::ApiKey(resolved))) => match resolved.source {
            KeySource::AuthFile => "auth.json".to_string(),
            KeySource::Env(name) => format!("env {name}"),
        },
        Ok(Some(crate::ProviderCredential::Subscription(login, _))) => {
            format!("auth.json (oauth {login})")
        }
        Ok(None) if is_keyless(model) => "not needed (local endpoint)".to_string(),
        Ok(None) => "missing".to_string(),
        Err(err) => format!("unreadable auth.json: {err}"),
    }
}

/// A connection test through the provider's subscription login (renewed first if needed).
async fn test_subscription(home: &Home, model: &ModelDefinition) -> ConnectionTestResult {
    let oauth = braincode_config::load_settings(home)
        .map(|s| s.auth.oauth)
        .unwrap_or_default();
    match crate::subscription::fresh_subscription(home, &oauth, &model.provider).await {
        Err(err) => ConnectionTestResult::failed(ErrorKind::Auth, err.to_string()),
        Ok(None) => ConnectionTestResult::failed(
            ErrorKind::MissingApiKey,
            format!("no credential for provider '{}'", model.provider),
        ),
        Ok(Some((login, credentials))) => {
            let access = braincode_llm::oauth::subscription_access(login, &credentials);
            match WireClient::for_subscription(model, &access, ClientOptions::for_connection_test())
            {
                Err(err) => ConnectionTestResult::failed(err.kind, err.message),
                Ok(client) => {
                    test_connection(&client, braincode_llm::CONNECTION_TEST_TIMEOUT).await
                }
            }
        }
    }
}

/// Whether a credential status lets the model be called.
pub fn credential_usable(status: &str) -> bool {
    status != "missing" && !status.starts_with("unreadable")
}

/// The answer of [`test_model`].
#[derive(Debug, Clone)]
pub enum ModelTest {
    /// The embedded model runs in-process: there is no endpoint to test.
    Embedded(String),
    /// The endpoint was asked for a short reply.
    Tested(ConnectionTestResult),
}

/// Asks a remote model for a short reply, with its credential (or says why it cannot).
pub async fn test_model(home: &Home, model: &ModelDefinition) -> ModelTest {
    if model.is_local() {
        return ModelTest::Embedded(format!(
            "{} is the embedded model: it runs in-process, not over the network. Check it with `braincode bench local`; fetch its weights with `braincode models pull`.",
            model.id
        ));
    }
    if let Ok(Some(crate::ProviderCredential::Subscription(..))) =
        crate::subscription::find_credential(home, &model.provider, model.api_key_env.as_deref())
    {
        return ModelTest::Tested(test_subscription(home, model).await);
    }
    let key =
        braincode_config::resolve_api_key(home, &model.provider, model.api_key_env.as_deref())
            .map(|k| k.expose().to_string());
    if key.is_none() && !is_keyless(model) {
        return ModelTest::Tested(ConnectionTestResult::failed(
            ErrorKind::MissingApiKey,
            format!(
                "no API key for provider '{}' (auth.json, {}{})",
                model.provider,
                model
                    .api_key_env
                    .as_deref()
                    .map(|v| format!("${v}, "))
                    .unwrap_or_default(),
                format_args!("${}", braincode_config::provider_env_var(&model.provider))
            ),
        ));
    }
    ModelTest::Tested(
        match WireClient::new(model, key, ClientOptions::for_connection_test()) {
            Err(err) => ConnectionTestResult::failed(err.kind, err.message),
            Ok(client) => test_connection(&client, braincode_llm::CONNECTION_TEST_TIMEOUT).await,
        },
    )
}

/// The models.json entry suggested for a discovered model.
pub fn suggested_entry(
    provider: &str,
    base_url: &str,
    api: ModelApi,
    model: &DiscoveredModel,
) -> Value {
    let thinking = match api {
        ModelApi::AnthropicMessages => "medium",
        _ => "off",
    };
    json!({"id": format!("{provider}/{}", model.id), "provider": provider, "modelId": model.id,
        "api": api.as_str(), "baseUrl": base_url, "contextWindow": model.context_window_guess,
        "supportsVision": false, "defaultThinkingLevel": thinking})
}
