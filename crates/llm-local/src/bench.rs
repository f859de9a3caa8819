//! Measurement entry points for `braincode bench local`: a fixed-length generation, a real
//! chat request end to end, and llama.cpp's bare prompt decode as the ceiling to compare with.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use braincode_llm::{ChatRequest, ErrorKind, ModelError};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use tokio_util::sync::CancellationToken;

use crate::backend::backend;
use crate::client::{DEFAULT_BATCH_SIZE, LocalModel, round_context};
use crate::engine::{self, FLASH_ATTENTION, Flow, GenerateParams, GenerateStats, Sampling};
use crate::prompt::Prompt;

fn bench_error(err: impl std::fmt::Display) -> ModelError {
    ModelError::new(ErrorKind::InvalidResponse, format!("benchmark: {err}"))
}

impl LocalModel {
    /// Measures one generation outside the streaming path: `prompt` as a user message, then
    /// exactly `generate` greedy tokens (end-of-turn tokens are ignored).
    pub fn bench(&self, prompt: &str, generate: u32, threads: u32) -> Result<BenchRun, ModelError> {
        let request = ChatRequest {
            messages: vec![braincode_llm::ChatMessage::user_text(prompt)],
            ..ChatRequest::default()
        };
        let prompt = self.prompt_tokens(&request)?;
        let (stats, text) = self.greedy(&prompt, generate, threads, true)?;
        Ok(BenchRun::from_stats(&stats, text))
    }

    /// Runs `request` the way a client would (greedy, stopping at end of turn, at most
    /// `max_output` tokens), through the prompt cache; `wall_time` covers everything.
    pub fn bench_chat(
        &self,
        request: &ChatRequest,
        max_output: u32,
        threads: u32,
    ) -> Result<BenchRun, ModelError> {
        let started = Instant::now();
        let prompt = self.prompt_tokens(request)?;
        let (stats, text) = self.greedy(&prompt, max_output, threads, false)?;
        let mut run = BenchRun::from_stats(&stats, text);
        run.wall_time = started.elapsed();
        Ok(run)
    }

    /// Greedy generation of at most `max_output` tokens through the prompt cache, as both
    /// measurements make it; the stats and the text.
    fn greedy(
        &self,
        prompt: &Prompt,
        max_output: u32,
        threads: u32,
        ignore_eos: bool,
    ) -> Result<(GenerateStats, String), ModelError> {
        let n_ctx = round_context(
            prompt.tokens.len() as u32 + max_output + 1,
            self.trained_context(),
        );
        let params = GenerateParams {
            threads,
            batch_size: DEFAULT_BATCH_SIZE,
            n_ctx,
            max_output,
            sampling: Sampling::Greedy,
            grammar: None,
            ignore_eos,
        };
        let mut text = String::new();
        let stats = engine::generate(
            self.llama(),
            prompt,
            &self.prefix,
            &params,
            &CancellationToken::new(),
            &mut |chunk| {
                text.push_str(chunk);
                Flow::Continue
            },
        )?;
        Ok((stats, text))
    }

    /// llama.cpp alone: the time of decoding the first `count` tokens of `prompt`'s request
    /// (as a user message) in one fresh context with the same settings as a request, batch by
    /// batch, with no Braincode code in between. The ceiling our prompt speed is held to.
    pub fn bench_raw_prompt(
        &self,
        prompt: &str,
        threads: u32,
    ) -> Result<(u32, Duration), ModelError> {
        let request = ChatRequest {
            messages: vec![braincode_llm::ChatMessage::user_text(prompt)],
            ..ChatRequest::default()
        };
        let tokens = self.prompt_tokens(&request)?.tokens;
        let threads = i32::try_from(threads).unwrap_or(2);
        let n_ctx = round_context(tokens.len() as u32 + 1, self.trained_context());
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(DEFAULT_BATCH_SIZE)
            .with_n_ubatch(DEFAULT_BATCH_SIZE)
            .with_n_seq_max(1)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_flash_attention_policy(FLASH_ATTENTION);
        let mut context = self
            .llama()
            .new_context(backend()?, params)
            .map_err(bench_error)?;
        let mut batch = LlamaBatch::new(DEFAULT_BATCH_SIZE as usize, 1);
        let started = Instant::now();
        let last = tokens.len().saturating_sub(1);
        for (chunk_index, chunk) in tokens.chunks(DEFAULT_BATCH_SIZE as usize).enumerate() {
            batch.clear();
            for (offset, token) in chunk.iter().enumerate() {
                let index = chunk_index * DEFAULT_BATCH_SIZE as usize + offset;
                let position = i32::try_from(index).map_err(bench_error)?;
                batch
                    .add(*token, position, &[0], index == last)
                    .map_err(bench_error)?;
            }
            context.decode(&mut batch).map_err(bench_error)?;
        }
        Ok((
            u32::try_from(tokens.len()).unwrap_or(u32::MAX),
            started.elapsed(),
        ))
    }
}

/// Figures of one [`LocalModel::bench`] run.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRun {
    /// Prompt tokens (chat template included).
    pub prompt_tokens: u32,
    /// Prompt tokens decoded (the others came from a cached prefix).
    pub evaluated_prompt_tokens: u32,
    /// Generated tokens.
    pub generated_tokens: u32,
    /// Creating the context and sampler.
    pub context_time: Duration,
    /// Evaluating the prompt.
    pub prompt_time: Duration,
    /// Generating (sampling and evaluating each new token).
    pub generation_time: Duration,
    /// The generated text.
    pub text: String,
    /// The whole call ([`LocalModel::bench_chat`] only; zero otherwise).
    pub wall_time: Duration,
}

impl BenchRun {
    fn from_stats(stats: &GenerateStats, text: String) -> Self {
        Self {
            prompt_tokens: stats.prompt_tokens,
            evaluated_prompt_tokens: stats.evaluated_prompt_tokens,
            generated_tokens: stats.output_tokens,
            context_time: stats.context_time,
            prompt_time: stats.prompt_time,
            generation_time: stats.generation_time,
            text,
            wall_time: Duration::ZERO,
        }
    }
}
