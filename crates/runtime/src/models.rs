//! Turns a role's model chain into clients: credentials from auth.json or the environment,
//! wire clients for remote endpoints, the shared embedded model for `local` entries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use braincode_brain::{ImageModelRef, ModelPolicy};
use braincode_config::{Home, OauthSettings, env_api_key};
use braincode_llm::oauth::subscription_access;
use braincode_llm::{
    Candidate, CandidateSelection, ClientOptions, ErrorKind, ImageClient, ModelClient, ModelError,
    ModelOutput, Requirements, WireClient, client_for, resolve_candidates,
};
use braincode_protocol::OauthProvider;

use crate::subscription::{
    ProviderCredential, REFRESH_MARGIN_MS, find_credential, fresh_subscription,
};
use braincode_llm_local::LocalModelClient;
use braincode_protocol::{ModelApi, ModelDefinition};

/// Supplies clients instead of the real endpoints (benchmarks, in-process tests).
pub trait ClientOverride: Send + Sync {
    /// The client for `definition`, or `None` to build the real one.
    fn client(&self, definition: &ModelDefinition) -> Option<Arc<dyn ModelClient>>;

    /// Whether [`client`](Self::client) supplies `definition` (then it needs no credentials).
    fn supplies(&self, definition: &ModelDefinition) -> bool {
        let _ = definition;
        false
    }
}

/// Builds and caches model clients for one run.
pub struct ModelFactory {
    home: Home,
    catalog: Vec<ModelDefinition>,
    options: ClientOptions,
    override_clients: Option<Arc<dyn ClientOverride>>,
    /// Where subscription logins are renewed (`settings.json → auth.oauth`).
    oauth: OauthSettings,
    /// Providers whose candidates use a subscription login (no API key).
    subscriptions: Mutex<HashMap<String, OauthProvider>>,
    /// Built clients, with the expiry of their subscription token (none for API keys).
    clients: Mutex<HashMap<String, BuiltClient>>,
}

/// A built client and the expiry of its subscription token (none for API keys).
type BuiltClient = (Arc<dyn ModelClient>, Option<i64>);

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl ModelFactory {
    /// A factory over `catalog`, reading credentials from `home`.
    pub fn new(
        home: Home,
        catalog: Vec<ModelDefinition>,
        options: ClientOptions,
        override_clients: Option<Arc<dyn ClientOverride>>,
    ) -> Self {
        Self {
            home,
            catalog,
            options,
            override_clients,
            oauth: OauthSettings::default(),
            subscriptions: Mutex::new(HashMap::new()),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Renews subscription logins at the endpoints of `settings.json → auth.oauth`.
    pub fn with_oauth(mut self, oauth: OauthSettings) -> Self {
        self.oauth = oauth;
        self
    }

    /// The catalogue.
    pub fn catalog(&self) -> &[ModelDefinition] {
        &self.catalog
    }

    /// The usable candidates of a chain, in order, with a reason for every skipped id.
    pub fn candidates(&self, chain: &[String], needs_vision: bool) -> CandidateSelection {
        let requirements = Requirements {
            vision: needs_vision,
            output: ModelOutput::Text,
        };
        self.resolve(chain, &self.catalog, &requirements)
    }

    /// The image-generation candidates of a role (imageMaker): its `imageModel`, then the
    /// `openai-images` models of its chain, each with its credential.
    pub fn image_candidates(&self, policy: &ModelPolicy) -> CandidateSelection {
        let (chain, catalog) = image_chain(policy, &self.catalog);
        let requirements = Requirements {
            vision: false,
            output: ModelOutput::Image,
        };
        self.resolve(&chain, &catalog, &requirements)
    }

    /// The image client of one image candidate.
    pub fn image_client(&self, candidate: &Candidate) -> Result<ImageClient, ModelError> {
        ImageClient::new(
            &candidate.definition,
            candidate.api_key.clone(),
            &self.options,
        )
    }

    fn resolve(
        &self,
        chain: &[String],
        catalog: &[ModelDefinition],
        requirements: &Requirements,
    ) -> CandidateSelection {
        let home = &self.home;
        resolve_candidates(chain, catalog, requirements, &|d| {
            // A model whose client is supplied (replay, benchmarks) needs no credentials.
            if self
                .override_clients
                .as_ref()
                .is_some_and(|o| o.supplies(d))
            {
                return Some("supplied".to_string());
            }
            match find_credential(home, &d.provider, d.api_key_env.as_deref()) {
                Ok(Some(ProviderCredential::ApiKey(key))) => Some(key.key.expose().to_string()),
                // Renewed when its client is built (see `client`).
                Ok(Some(ProviderCredential::Subscription(login, entry))) => {
                    locked(&self.subscriptions).insert(d.provider.clone(), login);
                    Some(entry.credentials.access)
                }
                Ok(None) => None,
                Err(err) => {
                    tracing::warn!("{err}");
                    env_api_key(&d.provider, d.api_key_env.as_deref())
                        .map(|k| k.key.expose().to_string())
                }
            }
        })
    }

    /// The client of one candidate (built once per run and reused).
    pub async fn client(&self, candidate: &Candidate) -> Result<Arc<dyn ModelClient>, ModelError> {
        let definition = &candidate.definition;
        if let Some(client) = self
            .override_clients
            .as_ref()
            .and_then(|o| o.client(definition))
        {
            return Ok(client);
        }
        if let Some(client) = self.cached(&definition.id) {
            return Ok(client);
        }
        let login = locked(&self.subscriptions)
            .get(&definition.provider)
            .copied();
        let client: BuiltClient = if definition.is_local() {
            let definition = definition.clone();
            let models_dir = self.home.models_dir();
            // Loading maps the GGUF and builds the vocabulary: keep it off the async threads.
            let built = tokio::task::spawn_blocking(move || {
                LocalModelClient::from_definition(&definition, &models_dir)
            })
            .await
            .map_err(|err| {
                ModelError::new(
                    ErrorKind::Config,
                    format!("the local model loader stopped: {err}"),
                )
            })??;
            (Arc::new(built) as Arc<dyn ModelClient>, None)
        } else if let Some(login) = login {
            self.subscription_client(candidate, login).await?
        } else {
            (client_for(candidate, &self.options)?, None)
        };
        locked(&self.clients).insert(definition.id.clone(), (Arc::clone(&client.0), client.1));
        Ok(client.0)
    }

    /// A client with the provider's subscription token, renewed first when it is about to
    /// expire; a failed renewal is an `auth` error that says to log in again.
    async fn subscription_client(
        &self,
        candidate: &Candidate,
        login: OauthProvider,
    ) -> Result<BuiltClient, ModelError> {
        let definition = &candidate.definition;
        let fresh = fresh_subscription(&self.home, &self.oauth, &definition.provider)
            .await
            .map_err(|err| {
                ModelError::new(ErrorKind::Auth, err.to_string()).with_model(&definition.id)
            })?;
        let Some((found, credentials)) = fresh.filter(|(found, _)| *found == login) else {
            return Err(ModelError::new(
                ErrorKind::MissingApiKey,
                format!(
                    "the {} login is no longer in auth.json; run `braincode auth login {}`",
                    definition.provider, login
                ),
            )
            .with_model(&definition.id));
        };
        let access = subscription_access(found, &credentials);
        let client = WireClient::for_subscription(definition, &access, self.options.clone())?;
        Ok((Arc::new(client), Some(credentials.expires)))
    }

    /// A built client, unless its subscription token is about to expire.
    fn cached(&self, id: &str) -> Option<Arc<dyn ModelClient>> {
        let now = braincode_config::journal::now_ms();
        locked(&self.clients)
            .get(id)
            .filter(|(_, expires)| expires.is_none_or(|at| at - now > REFRESH_MARGIN_MS))
            .map(|(client, _)| Arc::clone(client))
    }
}

/// The catalogue entry a brain's `imageModel` stands for (id `provider/modelId`; the API is
/// always `openai-images`, the only image API there is).
fn image_model_definition(image_model: &ImageModelRef) -> ModelDefinition {
    ModelDefinition {
        id: format!("{}/{}", image_model.provider, image_model.model_id),
        provider: image_model.provider.clone(),
        model_id: image_model.model_id.clone(),
        name: (image_model.name.clone()).unwrap_or_else(|| image_model.model_id.clone()),
        api: ModelApi::OpenaiImages,
        base_url: image_model.base_url.clone(),
        supports_tools: false,
        context_window: 32_000,
        ..ModelDefinition::default()
    }
}

/// The image-generation candidates of `policy` (imageMaker's): its `imageModel` first, then
/// the `openai-images` models of its chain; `key_for` reads each one's credential.
pub fn image_candidates_in(
    policy: &ModelPolicy,
    catalog: &[ModelDefinition],
    key_for: &dyn Fn(&ModelDefinition) -> Option<String>,
) -> CandidateSelection {
    let (chain, catalog) = image_chain(policy, catalog);
    let requirements = Requirements {
        vision: false,
        output: ModelOutput::Image,
    };
    resolve_candidates(&chain, &catalog, &requirements, key_for)
}

/// The chain of ids an image generation tries, and the catalogue that knows each of them.
fn image_chain(
    policy: &ModelPolicy,
    catalog: &[ModelDefinition],
) -> (Vec<String>, Vec<ModelDefinition>) {
    let mut catalog = catalog.to_vec();
    let mut chain = Vec::new();
    if let Some(image_model) = &policy.image_model {
        let definition = image_model_definition(image_model);
        chain.push(definition.id.clone());
        if !catalog.iter().any(|d| d.id == definition.id) {
            catalog.push(definition);
        }
    }
    chain.extend(policy.chain());
    (chain, catalog)
}
