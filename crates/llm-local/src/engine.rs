//! The token loop: one llama.cpp context per call, prompt decode, sampling, streaming.
//!
//! Runs on a blocking thread. Between prompt batches and between generated tokens it checks the
//! cancellation token and whether anyone still listens, so a cancelled or dropped call stops
//! within one decode step.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use braincode_llm::{ErrorKind, ModelError, StopReason};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use tokio_util::sync::CancellationToken;

use crate::backend::backend;
use crate::prefix::{EvalSettings, PrefixCache, segments};
use crate::prompt::Prompt;

/// llama.cpp's flash-attention policy for every context: auto (on where the backend supports
/// it, which includes the CPU).
pub(crate) const FLASH_ATTENTION: i32 = -1;

/// How the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Sampling {
    /// Always the most likely token.
    Greedy,
    /// Top-k 40, top-p 0.95, then a seeded draw at this temperature.
    Temperature {
        /// Temperature (> 0).
        temperature: f32,
        /// Seed of the draw.
        seed: u32,
    },
}

/// Everything one generation needs besides the model and the prompt.
#[derive(Debug, Clone)]
pub(crate) struct GenerateParams {
    pub threads: u32,
    pub batch_size: u32,
    pub n_ctx: u32,
    pub max_output: u32,
    pub sampling: Sampling,
    pub grammar: Option<String>,
    /// Keep generating through end-of-generation tokens (benchmarks only).
    pub ignore_eos: bool,
}

/// What a finished generation reports.
#[derive(Debug, Clone)]
pub(crate) struct GenerateStats {
    pub prompt_tokens: u32,
    /// Prompt tokens actually decoded (the rest came from a cached prefix).
    pub evaluated_prompt_tokens: u32,
    pub output_tokens: u32,
    pub stop: StopReason,
    pub context_time: Duration,
    pub prompt_time: Duration,
    pub generation_time: Duration,
}

/// Whether the consumer wants more text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Stop,
}

fn decode_error(err: impl std::fmt::Display) -> ModelError {
    ModelError::new(
        ErrorKind::InvalidResponse,
        format!("the local model failed to evaluate tokens: {err}"),
    )
}

/// Accumulates token bytes and releases only complete UTF-8 text (a character may span tokens).
#[derive(Default)]
struct Utf8Buffer {
    pending: Vec<u8>,
}

impl Utf8Buffer {
    fn push(&mut self, bytes: &[u8]) -> Option<String> {
        self.pending.extend_from_slice(bytes);
        match std::str::from_utf8(&self.pending) {
            Ok(text) => {
                let text = text.to_string();
                self.pending.clear();
                (!text.is_empty()).then_some(text)
            }
            Err(err) if err.error_len().is_none() && self.pending.len() - err.valid_up_to() < 4 => {
                // An incomplete character at the end: release what is complete, keep the rest.
                let valid = err.valid_up_to();
                let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
                self.pending.drain(..valid);
                (!text.is_empty()).then_some(text)
            }
            Err(_) => self.flush(),
        }
    }

    fn flush(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        Some(text)
    }
}

/// DRY ("don't repeat yourself") strength, base and the longest repeat it tolerates.
const DRY_MULTIPLIER: f32 = 0.8;
const DRY_BASE: f32 = 1.75;
const DRY_ALLOWED_LENGTH: i32 = 2;
/// Where a repeated sequence may restart without penalty: none, so a repeated paragraph is
/// caught as surely as a repeated phrase.
const DRY_BREAKERS: [&str; 0] = [];
/// Recent tokens the repetition penalty looks at, and its strength.
const REPEAT_WINDOW: i32 = 64;
const REPEAT_PENALTY: f32 = 1.1;

/// Free text stops once its last this-many bytes already appeared earlier in the answer: a
/// small model that starts repeating itself never stops on its own.
const LOOP_WINDOW_BYTES: usize = 96;

/// Whether the end of `text` repeats an earlier part of it (see [`LOOP_WINDOW_BYTES`]).
fn repeats_itself(text: &str) -> bool {
    if text.len() < 2 * LOOP_WINDOW_BYTES {
        return false;
    }
    let mut start = text.len() - LOOP_WINDOW_BYTES;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let (earlier, tail) = text.split_at(start);
    tail.trim().len() >= LOOP_WINDOW_BYTES / 2 && earlier.contains(tail)
}

/// Token selection: a sampler chain (greedy, or top-k/top-p/temperature/seeded draw) and an
/// optional grammar kept apart from it.
///
/// With a grammar, the chain first picks from the raw logits and the grammar checks only that
/// one token; the full vocabulary is filtered through the grammar only when the pick is
/// rejected. Filtering ~49k tokens through the grammar on every step is what makes naive
/// constrained sampling slow, and the model usually agrees with the grammar anyway. (The
/// temperature chain's `dist` draws again on the slow path; runs stay repeatable.)
struct Selector {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
    candidates: Vec<LlamaTokenData>,
}

impl Selector {
    fn new(model: &LlamaModel, params: &GenerateParams) -> Result<Self, ModelError> {
        let grammar = match &params.grammar {
            Some(grammar) => Some(LlamaSampler::grammar(model, grammar, "root").map_err(
                |err| {
                    ModelError::new(
                        ErrorKind::BadRequest,
                        format!("the response schema's grammar was rejected by llama.cpp: {err}"),
                    )
                },
            )?),
            None => None,
        };
        // Free text from a small model loops easily ("I'm a Braincode. I'm a Braincode. …"):
        // DRY penalizes extending a sequence that already occurred and a mild repetition
        // penalty discourages recent tokens. Grammar-constrained output (JSON) keeps plain
        // sampling: its structure repeats by design.
        let free_text = params.grammar.is_none();
        let anti_repeat = || {
            [
                LlamaSampler::dry(
                    model,
                    DRY_MULTIPLIER,
                    DRY_BASE,
                    DRY_ALLOWED_LENGTH,
                    -1,
                    DRY_BREAKERS,
                ),
                LlamaSampler::penalties(model.n_vocab(), REPEAT_WINDOW, REPEAT_PENALTY, 0.0, 0.0),
            ]
        };
        let chain = match params.sampling {
            Sampling::Greedy if free_text => LlamaSampler::chain_simple(
                anti_repeat().into_iter().chain([LlamaSampler::greedy()]),
            ),
            Sampling::Greedy => LlamaSampler::greedy(),
            Sampling::Temperature { temperature, seed } => {
                let sampling = [
                    LlamaSampler::top_k(40),
                    LlamaSampler::top_p(0.95, 1),
                    LlamaSampler::temp(temperature),
                    LlamaSampler::dist(seed),
                ];
                if free_text {
                    LlamaSampler::chain_simple(anti_repeat().into_iter().chain(sampling))
                } else {
                    LlamaSampler::chain_simple(sampling)
                }
            }
        };
        Ok(Self {
            chain,
            grammar,
            candidates: Vec::new(),
        })
    }

    fn candidates(&mut self, context: &LlamaContext<'_>, index: i32) -> LlamaTokenDataArray {
        let mut data = std::mem::take(&mut self.candidates);
        data.clear();
        data.extend(
            (0i32..)
                .zip(context.get_logits_ith(index))
                .map(|(id, logit)| LlamaTokenData::new(LlamaToken::new(id), *logit, 0.0)),
        );
        LlamaTokenDataArray::new(data, false)
    }

    /// Picks the next token and records it in every sampler's state exactly once.
    fn next(&mut self, context: &LlamaContext<'_>, index: i32) -> Result<LlamaToken, ModelError> {
        let Some(mut grammar) = self.grammar.take() else {
            // `sample` also accepts the token into the chain; never accept it again.
            return Ok(self.chain.sample(context, index));
        };
        let result = self.next_constrained(&mut grammar, context, index);
        self.grammar = Some(grammar);
        result
    }

    fn next_constrained(
        &mut self,
        grammar: &mut LlamaSampler,
        context: &LlamaContext<'_>,
        index: i32,
    ) -> Result<LlamaToken, ModelError> {
        // Fast path, all in C: the chain picks from the raw logits and the grammar checks only
        // that token. (`sample` records the pick in the chain; none of its samplers keeps
        // state across tokens, so a pick that the grammar then rejects leaves no trace.)
        let picked = self.chain.sample(context, index);
        let token = if grammar_allows(grammar, picked) {
            picked
        } else {
            let mut array = self.candidates(context, index);
            array.apply_sampler(grammar);
            array.apply_sampler(&mut self.chain);
            let token = array.selected_token().filter(|token| {
                array
                    .data
                    .iter()
                    .any(|d| d.id() == *token && d.logit().is_finite())
            });
            self.candidates = std::mem::take(&mut array.data);
            // Accepting a token the grammar forbids aborts llama.cpp, so a dead end (which a
            // well-formed grammar never reaches) is an error instead.
            token.ok_or_else(|| {
                ModelError::new(
                    ErrorKind::InvalidResponse,
                    "the response grammar allows no next token",
                )
            })?
        };
        // The grammar only filtered (`apply`): record the choice in it exactly once.
        grammar.accept(token);
        Ok(token)
    }
}

/// Whether the grammar, in its current state, allows `token` next.
fn grammar_allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut single = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    single.apply_sampler(grammar);
    single.data.first().is_some_and(|d| d.logit().is_finite())
}

impl GenerateParams {
    /// The settings that change the KV numbers (see [`EvalSettings`]).
    pub(crate) fn eval_settings(&self) -> EvalSettings {
        EvalSettings {
            threads: self.threads,
            batch_size: self.batch_size.max(1),
            flash_attention: FLASH_ATTENTION,
        }
    }
}

/// Runs one generation. `on_text` receives the answer text as it is produced; returning
/// [`Flow::Stop`] (nobody listens any more) ends the call as cancelled.
///
/// The prompt is decoded in its fixed segments (see [`crate::prefix`]), starting after what
/// `cache` could restore; a finished generation leaves its prompt in `cache`.
pub(crate) fn generate(
    model: &LlamaModel,
    prompt: &Prompt,
    cache: &PrefixCache,
    params: &GenerateParams,
    cancel: &CancellationToken,
    on_text: &mut dyn FnMut(&str) -> Flow,
) -> Result<GenerateStats, ModelError> {
    let backend = backend()?;
    let started = Instant::now();
    let batch_size = params.batch_size.max(1);
    let threads = i32::try_from(params.threads).unwrap_or(2);
    let context_params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(params.n_ctx))
        .with_n_batch(batch_size)
        .with_n_ubatch(batch_size)
        .with_n_seq_max(1)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_flash_attention_policy(FLASH_ATTENTION);
    let mut context = model.new_context(backend, context_params).map_err(|err| {
        ModelError::new(
            ErrorKind::Config,
            format!(
                "could not create a llama.cpp context of {} tokens ({err}); the machine may be out of memory",
                params.n_ctx
            ),
        )
    })?;
    let mut selector = Selector::new(model, params)?;
    let context_time = started.elapsed();

    let prompt_started = Instant::now();
    let tokens = prompt.tokens.as_slice();
    let settings = params.eval_settings();
    let segments = segments(&prompt.message_ends, batch_size);
    let start = cache.prepare(
        &mut context,
        tokens,
        &segments,
        prompt.static_prefix,
        settings,
    );
    let mut batch = LlamaBatch::new(batch_size as usize, 1);
    let last = tokens.len().saturating_sub(1);
    let mut from = 0;
    for &end in &segments {
        if end <= start.reused {
            from = end;
            continue;
        }
        if cancel.is_cancelled() {
            return Err(ModelError::cancelled());
        }
        batch.clear();
        for (index, token) in tokens.iter().enumerate().take(end).skip(from) {
            let position = i32::try_from(index).map_err(decode_error)?;
            batch
                .add(*token, position, &[0], index == last)
                .map_err(decode_error)?;
        }
        context.decode(&mut batch).map_err(decode_error)?;
        if end == prompt.static_prefix
            && let Some((path, key)) = &start.save_prefix_to
        {
            cache.save_prefix(&context, path, key, &tokens[..end]);
        }
        from = end;
    }
    let evaluated = tokens.len() - start.reused.min(tokens.len());
    cache.count(evaluated);
    let mut position = i32::try_from(tokens.len()).map_err(decode_error)?;
    let prompt_time = prompt_started.elapsed();

    let generation_started = Instant::now();
    let vocab = model.vocab();
    let mut text = Utf8Buffer::default();
    let mut output_tokens = 0u32;
    let mut piece = Vec::with_capacity(32);
    let free_text = params.grammar.is_none();
    let mut answer = String::new();
    let stop = loop {
        if cancel.is_cancelled() {
            return Err(ModelError::cancelled());
        }
        let token = selector.next(&context, batch.n_tokens() - 1)?;
        if vocab.is_eog(token) && !params.ignore_eos {
            break StopReason::EndTurn;
        }
        output_tokens += 1;
        piece.clear();
        vocab.token_to_piece_into(token, &mut piece, false, None);
        if let Some(chunk) = text.push(&piece) {
            if on_text(&chunk) == Flow::Stop {
                return Err(ModelError::cancelled());
            }
            if free_text {
                answer.push_str(&chunk);
                if repeats_itself(&answer) {
                    break StopReason::EndTurn;
                }
            }
        }
        if output_tokens >= params.max_output {
            break StopReason::MaxTokens;
        }
        batch.clear();
        batch
            .add(token, position, &[0], true)
            .map_err(decode_error)?;
        position += 1;
        context.decode(&mut batch).map_err(decode_error)?;
    };
    if let Some(chunk) = text.flush()
        && on_text(&chunk) == Flow::Stop
    {
        return Err(ModelError::cancelled());
    }
    let generation_time = generation_started.elapsed();
    cache.remember(&mut context, tokens, &segments, settings);
    Ok(GenerateStats {
        prompt_tokens: u32::try_from(tokens.len()).unwrap_or(u32::MAX),
        evaluated_prompt_tokens: u32::try_from(evaluated).unwrap_or(u32::MAX),
        output_tokens,
        stop,
        context_time,
        prompt_time,
        generation_time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeating_answer_is_detected_once_a_whole_window_repeats() {
        let sentence = "This repository holds a small library that prints friendly greetings. ";
        assert!(!repeats_itself(sentence));
        let mut text = String::from(sentence);
        text.push_str("It also has tests for the greeting function and a short README file. ");
        assert!(!repeats_itself(&text), "new text is not a loop");
        text.push_str(sentence);
        text.push_str("It also has tests for the greeting");
        assert!(repeats_itself(&text), "{text}");
        let spaces = " ".repeat(400);
        assert!(
            !repeats_itself(&spaces),
            "blank padding is not counted as a loop"
        );
        let wide = "界".repeat(200);
        assert!(
            repeats_itself(&wide),
            "multi-byte text is cut on a character boundary"
        );
    }

    #[test]
    fn utf8_split_across_tokens_is_held_back() {
        let mut buf = Utf8Buffer::default();
        let snowman = "☃".as_bytes();
        assert_eq!(buf.push(b"a"), Some("a".into()));
        assert_eq!(buf.push(&snowman[..1]), None);
        assert_eq!(buf.push(&snowman[1..]), Some("☃".into()));
        assert_eq!(buf.push(&[0xff]), Some("\u{fffd}".into()));
        assert_eq!(buf.flush(), None);
    }
}
