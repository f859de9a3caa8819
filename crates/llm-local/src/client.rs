//! [`LocalModel`] (one memory-mapped GGUF per process) and [`LocalModelClient`] (the
//! [`ModelClient`] that streams from it).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use braincode_llm::{ChatRequest, ErrorKind, ModelClient, ModelError, ModelEvent, ModelStream};
use braincode_protocol::{ModelDefinition, Usage};
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::backend::backend;
use crate::engine::{self, Flow, GenerateParams, Sampling};
use crate::grammar::schema_to_gbnf;
use crate::prefix::PrefixCache;
use crate::prompt::Prompt;
use crate::pull::{DEFAULT_MODEL_FILE, cached_default_model};
use crate::{gguf, prompt, verify};

/// Threads per context when the definition sets none. Pinned rather than "all cores" because
/// llama.cpp's greedy output depends on the thread count.
pub const DEFAULT_THREADS: u32 = 2;
/// Output cap when neither the request nor the definition sets one.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
/// Tokens per prompt decode step; fixed because it also affects the exact output.
pub const DEFAULT_BATCH_SIZE: u32 = 512;
/// Contexts one model serves at once; more requests wait. Bounds memory (each context holds
/// its own KV cache); CPU use is bounded separately, by cores (see `Admission`).
pub const DEFAULT_MAX_CONTEXTS: usize = 2;
/// Seed of temperature sampling (requests carry no seed; a fixed one keeps runs repeatable).
pub const DEFAULT_SEED: u32 = 0x5EED;
/// A prompt must leave room for at least this many answer tokens (or `max_tokens`, if smaller).
pub const MIN_ANSWER_TOKENS: u32 = 32;
/// Context sizes are rounded up to a multiple of this (llama.cpp pads to it anyway).
const CONTEXT_GRANULARITY: u32 = 256;

/// Model-wide options (the first [`LocalModel::shared`] call for a file decides them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModelOptions {
    /// Maximum number of contexts (concurrent generations) at once.
    pub max_contexts: usize,
    /// Save the static prompt prefix's KV state next to the model file and load it in later
    /// processes (see `crate::state_file`).
    pub persist_prefix_state: bool,
}

impl Default for LocalModelOptions {
    fn default() -> Self {
        Self {
            max_contexts: DEFAULT_MAX_CONTEXTS,
            persist_prefix_state: true,
        }
    }
}

/// A loaded GGUF model: weights (memory-mapped), tokenizer and chat template. Cheap to share;
/// every generation creates its own context sized for its prompt.
pub struct LocalModel {
    path: PathBuf,
    model: LlamaModel,
    template: LlamaChatTemplate,
    admission: Arc<Admission>,
    pub(crate) prefix: PrefixCache,
    load_time: Duration,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.path)
            .field("load_time", &self.load_time)
            .finish_non_exhaustive()
    }
}

fn config_error(message: impl Into<String>) -> ModelError {
    ModelError::new(ErrorKind::Config, message)
}

/// Who may run now. A context costs memory (its KV cache) and `threads` cores. llama.cpp's
/// worker threads spin-wait at every layer barrier, so running more threads than cores
/// (two 2-thread generations on a 2-core machine) does not share the CPU: every generation
/// slows down many times over. Generations therefore queue for both a context slot and their
/// cores.
#[derive(Debug)]
struct Admission {
    contexts: Arc<Semaphore>,
    cores: Arc<Semaphore>,
    core_count: u32,
}

/// Held for the duration of one generation.
struct Permit {
    _context: OwnedSemaphorePermit,
    _cores: OwnedSemaphorePermit,
}

impl Admission {
    fn new(max_contexts: usize) -> Self {
        let core_count = std::thread::available_parallelism()
            .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            .max(1);
        Self {
            contexts: Arc::new(Semaphore::new(max_contexts.max(1))),
            cores: Arc::new(Semaphore::new(core_count as usize)),
            core_count,
        }
    }

    /// Waits for a context slot and `threads` cores (all cores if it wants more than exist).
    async fn enter(self: Arc<Self>, threads: u32) -> Option<Permit> {
        let context = Arc::clone(&self.contexts).acquire_owned().await.ok()?;
        let cores = Arc::clone(&self.cores)
            .acquire_many_owned(threads.clamp(1, self.core_count))
            .await
            .ok()?;
        Some(Permit {
            _context: context,
            _cores: cores,
        })
    }
}

static SHARED: OnceLock<Mutex<HashMap<PathBuf, Arc<LocalModel>>>> = OnceLock::new();

impl LocalModel {
    /// Validates and loads the GGUF at `path` (no sharing; see [`LocalModel::shared`]).
    ///
    /// The header is checked in Rust first (magic, counts, tensor extents against the file
    /// size), and the default model's checksum is verified once per file version, so a corrupt
    /// or truncated file is a [`ErrorKind::Config`] error naming the file rather than a
    /// llama.cpp abort.
    pub fn load(path: &Path, options: &LocalModelOptions) -> Result<Self, ModelError> {
        let started = Instant::now();
        let pull_hint = "run `braincode models pull` to fetch the default model again, or fix \
                         the model's `path` in models.json";
        if !path.is_file() {
            return Err(config_error(format!(
                "the local model file {} does not exist; {pull_hint}",
                path.display()
            )));
        }
        gguf::inspect(path).map_err(|err| config_error(format!("{err}; {pull_hint}")))?;
        if path.file_name().is_some_and(|n| n == DEFAULT_MODEL_FILE) {
            verify::check_default_model(path).map_err(|problem| {
                config_error(format!(
                    "{} is not a usable GGUF model: {problem}; {pull_hint}",
                    path.display()
                ))
            })?;
        }
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|err| {
                config_error(format!(
                    "llama.cpp could not load {} ({err}); {pull_hint}",
                    path.display()
                ))
            })?;
        let template = match model.chat_template(None) {
            Ok(template) => template,
            // Models without a template get ChatML, the format most small chat models use.
            Err(_) => LlamaChatTemplate::new("chatml")
                .map_err(|err| config_error(format!("chat template: {err}")))?,
        };
        Ok(Self {
            path: path.to_path_buf(),
            model,
            template,
            admission: Arc::new(Admission::new(options.max_contexts)),
            prefix: PrefixCache::new(path, options.persist_prefix_state),
            load_time: started.elapsed(),
        })
    }

    /// The process-wide instance for the file at `path` (by canonical path), loading it on
    /// first use. Parallel workers share the weights; each request gets its own context.
    pub fn shared(path: &Path, options: LocalModelOptions) -> Result<Arc<Self>, ModelError> {
        let canonical = fs::canonicalize(path).map_err(|err| {
            config_error(format!(
                "the local model file {} cannot be opened ({err}); run `braincode models pull`",
                path.display()
            ))
        })?;
        let map = SHARED.get_or_init(Default::default);
        // Held during the load so two callers never load the same file twice.
        let mut map = map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(model) = map.get(&canonical) {
            return Ok(Arc::clone(model));
        }
        let model = Arc::new(Self::load(&canonical, &options)?);
        map.insert(canonical, Arc::clone(&model));
        Ok(model)
    }

    /// The GGUF file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How long validation and loading took.
    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    /// The context length the model was trained with.
    pub fn trained_context(&self) -> u32 {
        self.model.n_ctx_train()
    }

    /// Number of prompt tokens `request` takes (template included).
    pub fn count_prompt_tokens(&self, request: &ChatRequest) -> Result<usize, ModelError> {
        self.prompt_tokens(request).map(|t| t.tokens.len())
    }

    /// Prompt tokens decoded so far by this model, over all requests: a request that reuses a
    /// cached prefix adds only its new tokens.
    pub fn evaluated_prompt_tokens(&self) -> u64 {
        self.prefix.evaluated()
    }

    /// Forgets the in-memory prompt cache (state files stay).
    pub fn forget_cached_prompt(&self) {
        self.prefix.forget();
    }

    /// The prompt-prefix state files saved next to this model's file.
    pub fn prefix_state_files(&self) -> Vec<PathBuf> {
        self.prefix.state_files()
    }

    pub(crate) fn llama(&self) -> &LlamaModel {
        &self.model
    }

    pub(crate) fn prompt_tokens(&self, request: &ChatRequest) -> Result<Prompt, ModelError> {
        prompt::prompt_tokens(
            &self.model,
            &self.template,
            &self.path.display().to_string(),
            request,
        )
    }
}

pub(crate) fn round_context(needed: u32, limit: u32) -> u32 {
    needed
        .div_ceil(CONTEXT_GRANULARITY)
        .saturating_mul(CONTEXT_GRANULARITY)
        .min(limit.max(needed))
}

/// Per-client generation settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalClientOptions {
    /// Threads per context (prompt and generation).
    pub threads: u32,
    /// Largest context to allocate (further capped by the model's trained context).
    pub context_window: u32,
    /// Output cap when the request sets none.
    pub max_tokens: u32,
    /// Prompt tokens per decode step.
    pub batch_size: u32,
    /// Seed of temperature sampling.
    pub seed: u32,
}

impl Default for LocalClientOptions {
    fn default() -> Self {
        Self {
            threads: DEFAULT_THREADS,
            context_window: 8192,
            max_tokens: DEFAULT_MAX_TOKENS,
            batch_size: DEFAULT_BATCH_SIZE,
            seed: DEFAULT_SEED,
        }
    }
}

impl LocalClientOptions {
    /// Options from a catalogue entry: `threads`, `contextWindow` and `maxTokens`.
    pub fn from_definition(definition: &ModelDefinition) -> Self {
        Self {
            threads: definition
                .threads
                .filter(|t| *t > 0)
                .unwrap_or(DEFAULT_THREADS),
            context_window: definition.context_window.max(1),
            max_tokens: definition
                .max_tokens
                .filter(|t| *t > 0)
                .unwrap_or(DEFAULT_MAX_TOKENS),
            ..Self::default()
        }
    }
}

/// Where a local definition's GGUF is: its explicit `path` (`~/` expanded), else the pulled
/// default model in `models_dir`, else the machine cache.
pub fn resolve_model_path(
    definition: &ModelDefinition,
    models_dir: &Path,
) -> Result<PathBuf, ModelError> {
    if let Some(path) = definition.path.as_deref() {
        let path = match path.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(rest))
                .unwrap_or_else(|| PathBuf::from(path)),
            None => PathBuf::from(path),
        };
        if !path.is_file() {
            return Err(config_error(format!(
                "the model file {} (the `path` of {} in models.json) does not exist",
                path.display(),
                definition.id
            ))
            .with_model(definition.id.clone()));
        }
        return Ok(path);
    }
    let pulled = models_dir.join(DEFAULT_MODEL_FILE);
    if pulled.is_file() {
        return Ok(pulled);
    }
    cached_default_model().ok_or_else(|| {
        config_error(format!(
            "the local model is not installed (looked for {}); run `braincode models pull`",
            pulled.display()
        ))
        .with_model(definition.id.clone())
    })
}

/// A [`ModelClient`] backed by a [`LocalModel`].
///
/// - Tools: the embedded 135M model cannot call tools, so offered tools are ignored (the
///   runtime only offers tools to models whose definition says `supportsTools`). Earlier tool
///   calls and results in the conversation are rendered as plain text.
/// - Thinking levels are ignored (the model does not reason separately).
/// - Structured output: `response_schema` becomes a GBNF grammar (see
///   [`crate::schema_to_gbnf`]), so the reply always follows the schema's shape unless
///   `max_tokens` cuts it (stop reason `MaxTokens`).
/// - Sampling: greedy when `temperature` is `None` or `<= 0`, else seeded top-k/top-p/
///   temperature sampling.
#[derive(Debug, Clone)]
pub struct LocalModelClient {
    model: Arc<LocalModel>,
    options: LocalClientOptions,
    model_id: Option<String>,
}

impl LocalModelClient {
    /// A client of `model` with `options`.
    pub fn new(model: Arc<LocalModel>, options: LocalClientOptions) -> Self {
        Self {
            model,
            options,
            model_id: None,
        }
    }

    /// The client for a local catalogue entry: resolves its file, loads (or reuses) the shared
    /// model and takes threads, context window and output cap from the definition.
    pub fn from_definition(
        definition: &ModelDefinition,
        models_dir: &Path,
    ) -> Result<Self, ModelError> {
        let path = resolve_model_path(definition, models_dir)?;
        let model = LocalModel::shared(&path, LocalModelOptions::default())
            .map_err(|err| err.with_model(definition.id.clone()))?;
        Ok(Self {
            model,
            options: LocalClientOptions::from_definition(definition),
            model_id: Some(definition.id.clone()),
        })
    }

    /// The shared model.
    pub fn model(&self) -> &Arc<LocalModel> {
        &self.model
    }

    /// The generation settings.
    pub fn options(&self) -> &LocalClientOptions {
        &self.options
    }

    fn tag(&self, err: ModelError) -> ModelError {
        match &self.model_id {
            Some(id) if err.model.is_none() => err.with_model(id.clone()),
            _ => err,
        }
    }

    fn plan(&self, request: &ChatRequest) -> Result<(Prompt, GenerateParams), ModelError> {
        if !request.tools.is_empty() {
            tracing::debug!(
                tools = request.tools.len(),
                "the local model cannot call tools; ignoring the offered tools"
            );
        }
        let prompt = self.model.prompt_tokens(request)?;
        let grammar = match &request.response_schema {
            Some(schema) => Some(schema_to_gbnf(&schema.schema).map_err(|err| {
                ModelError::new(
                    ErrorKind::BadRequest,
                    format!("response schema {:?}: {err}", schema.name),
                )
            })?),
            None => None,
        };
        let trained = self.model.trained_context();
        let limit = self.options.context_window.min(trained).max(1);
        let wanted = request
            .max_tokens
            .filter(|t| *t > 0)
            .unwrap_or(self.options.max_tokens)
            .max(1);
        let prompt_len = u32::try_from(prompt.tokens.len()).unwrap_or(u32::MAX);
        let reserve = wanted.min(MIN_ANSWER_TOKENS);
        if prompt_len.saturating_add(reserve) > limit {
            return Err(ModelError::new(
                ErrorKind::ContextTooLong,
                format!(
                    "the prompt is {prompt_len} tokens and the answer needs at least {reserve} more, \
                     but the local model's context holds {limit} tokens (contextWindow {}, trained {trained})",
                    self.options.context_window
                ),
            ));
        }
        let max_output = wanted.min(limit - prompt_len);
        let sampling = match request.temperature {
            Some(t) if t > 0.0 && t.is_finite() => Sampling::Temperature {
                temperature: t,
                seed: self.options.seed,
            },
            _ => Sampling::Greedy,
        };
        let params = GenerateParams {
            threads: self.options.threads.max(1),
            batch_size: self.options.batch_size.max(1),
            n_ctx: round_context(prompt_len + max_output, limit),
            max_output,
            sampling,
            grammar,
            ignore_eos: false,
        };
        Ok((prompt, params))
    }
}

type Item = Result<ModelEvent, ModelError>;

#[async_trait]
impl ModelClient for LocalModelClient {
    async fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        if cancel.is_cancelled() {
            return Err(self.tag(ModelError::cancelled()));
        }
        let (prompt, params) = self.plan(&request).map_err(|err| self.tag(err))?;
        let (tx, rx) = mpsc::channel::<Item>(64);
        let model = Arc::clone(&self.model);
        let model_id = self.model_id.clone();
        tokio::spawn(async move {
            let tag = move |err: ModelError| match &model_id {
                Some(id) if err.model.is_none() => err.with_model(id.clone()),
                _ => err,
            };
            let permit = tokio::select! {
                permit = Arc::clone(&model.admission).enter(params.threads) => permit,
                () = cancel.cancelled() => {
                    let _ = tx.send(Err(tag(ModelError::cancelled()))).await;
                    return;
                }
                () = tx.closed() => return,
            };
            let Some(permit) = permit else {
                return;
            };
            // Stops the generation when the caller cancels or drops the stream.
            let stop = cancel.child_token();
            let worker_stop = stop.clone();
            let worker_tx = tx.clone();
            let worker_tag = tag.clone();
            let worker = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                let result = engine::generate(
                    &model.model,
                    &prompt,
                    &model.prefix,
                    &params,
                    &worker_stop,
                    &mut |text| match worker_tx.blocking_send(Ok(ModelEvent::TextDelta {
                        text: text.to_string(),
                    })) {
                        Ok(()) => Flow::Continue,
                        Err(_) => Flow::Stop,
                    },
                );
                match result {
                    Ok(stats) => {
                        let usage = Usage::new(
                            u64::from(stats.prompt_tokens),
                            u64::from(stats.output_tokens),
                            0,
                            0,
                        );
                        let _ = worker_tx.blocking_send(Ok(ModelEvent::Usage { usage }));
                        let _ =
                            worker_tx.blocking_send(Ok(ModelEvent::Stop { reason: stats.stop }));
                    }
                    Err(err) => {
                        let _ = worker_tx.blocking_send(Err(worker_tag(err)));
                    }
                }
            });
            tokio::pin!(worker);
            let joined = tokio::select! {
                joined = &mut worker => joined,
                () = tx.closed() => {
                    stop.cancel();
                    worker.await
                }
            };
            if joined.is_err() {
                let _ = tx
                    .send(Err(ModelError::new(
                        ErrorKind::InvalidResponse,
                        "the local model's generation thread failed unexpectedly",
                    )))
                    .await;
            }
        });
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        Ok(Box::pin(stream))
    }
}
