//! The prefix-cache model of `braincode bench tokens`: what a provider's prompt cache would
//! serve of the captured requests.
//!
//! The model is the one providers document: a request is read from the cache as far as its
//! start is byte-identical to a request already seen under the same cache key (OpenAI's
//! `prompt_cache_key`; one key per role and project) — in the order the wire puts it: the
//! tool schemas, the system prompt (with the reply schema's instruction), then the messages.
//! Minimum cacheable lengths and cache expiry are left out (both runs are seconds apart).
//! Costs are the input side at Claude Sonnet's list prices.

use std::collections::HashMap;

use braincode_llm::ChatRequest;
use serde::Serialize;

use super::tokens_model::{Captured, request_chars, tokens_of};

/// US dollars per million input tokens: uncached, read from cache, written to cache (5 min).
const PRICE_INPUT: f64 = 3.0;
const PRICE_CACHE_READ: f64 = 0.30;
const PRICE_CACHE_WRITE: f64 = 3.75;

/// The share of the second run's input the design aims to serve from cache.
pub(super) const GOAL_CACHED_SHARE: f64 = 0.60;

/// A provider's prompt cache, as far as this bench needs one.
#[derive(Default)]
pub(super) struct PrefixCache {
    seen: HashMap<String, Vec<String>>,
}

/// What the cache served of one request.
pub(super) struct Served {
    pub input_tokens: u64,
    pub cached_tokens: u64,
}

/// The bytes of `request` in the order the provider caches them.
fn cache_order(request: &ChatRequest) -> String {
    let mut text = serde_json::to_string(&request.tools).unwrap_or_default();
    text.push('\u{1}');
    text.push_str(request.system.as_deref().unwrap_or_default());
    if let Some(schema) = &request.response_schema {
        text.push('\u{1}');
        text.push_str(&schema.schema.to_string());
    }
    for message in &request.messages {
        text.push('\u{1}');
        text.push_str(&serde_json::to_string(message).unwrap_or_default());
    }
    text
}

fn common_prefix(a: &str, b: &str) -> usize {
    let same = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    // Whole characters only.
    (0..=same)
        .rev()
        .find(|i| a.is_char_boundary(*i))
        .unwrap_or(0)
}

impl PrefixCache {
    /// Sends `request` through the cache: how much of it was already cached, and the cache
    /// then holds it.
    pub(super) fn serve(&mut self, request: &ChatRequest) -> Served {
        let key = request.cache_key.clone().unwrap_or_default();
        let text = cache_order(request);
        let seen = self.seen.entry(key).or_default();
        let prefix = seen
            .iter()
            .map(|earlier| common_prefix(earlier, &text))
            .max()
            .unwrap_or(0);
        let input_tokens = tokens_of(request_chars(request));
        // The cached share of the request, in the same chars/4 estimate as its input.
        let cached_chars = text[..prefix].chars().count();
        let total_chars = text.chars().count().max(1);
        let cached_tokens =
            ((input_tokens as f64) * (cached_chars as f64 / total_chars as f64)).floor() as u64;
        seen.push(text);
        Served {
            input_tokens,
            cached_tokens: cached_tokens.min(input_tokens),
        }
    }
}

/// One agent's figures of a cached run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CachedAgent {
    pub agent: String,
    pub input_tokens: u64,
    pub cached_tokens: u64,
}

/// Request bytes of one phase.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PhaseBytes {
    pub phase: String,
    pub requests: usize,
    pub request_bytes: u64,
}

/// The cache figures of two identical runs.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CacheFigures {
    pub method: &'static str,
    pub first_run_input_tokens: u64,
    pub first_run_cached_tokens: u64,
    pub second_run_input_tokens: u64,
    pub second_run_cached_tokens: u64,
    pub second_run_cached_share: f64,
    pub goal_cached_share: f64,
    pub goal_met: bool,
    pub per_agent_second_run: Vec<CachedAgent>,
    pub request_bytes_by_phase: Vec<PhaseBytes>,
    /// Input cost of both runs, US dollars, at list prices.
    pub cost_without_cache_usd: f64,
    pub cost_with_cache_usd: f64,
}

pub(super) const METHOD: &str = "a second identical run after the first, through a model of a provider prefix cache: a request is served from cache as far as it starts byte-identical (tools, system prompt, messages) to one already seen under its cache key; input cost at Claude Sonnet list prices ($3 input, $0.30 cache read, $3.75 cache write per million tokens)";

/// Feeds the two runs' requests (each grouped by agent label) through one cache.
pub(super) fn figures(
    first: &[(String, Vec<&Captured>)],
    second: &[(String, Vec<&Captured>)],
) -> CacheFigures {
    let mut cache = PrefixCache::default();
    let mut cost_without = 0.0;
    let mut cost_with = 0.0;
    let mut price = |served: &Served| {
        let uncached = served.input_tokens - served.cached_tokens;
        cost_without += served.input_tokens as f64 * PRICE_INPUT / 1e6;
        cost_with += (uncached as f64 * PRICE_CACHE_WRITE
            + served.cached_tokens as f64 * PRICE_CACHE_READ)
            / 1e6;
    };
    let (mut first_input, mut first_cached) = (0, 0);
    for captured in first.iter().flat_map(|(_, requests)| requests) {
        let served = cache.serve(&captured.request);
        first_input += served.input_tokens;
        first_cached += served.cached_tokens;
        price(&served);
    }
    let mut per_agent = Vec::with_capacity(second.len());
    let mut phases: Vec<PhaseBytes> = Vec::new();
    let (mut second_input, mut second_cached) = (0, 0);
    for (label, requests) in second {
        let mut agent = CachedAgent {
            agent: label.clone(),
            input_tokens: 0,
            cached_tokens: 0,
        };
        let phase = phase_of(label);
        for captured in requests {
            let served = cache.serve(&captured.request);
            agent.input_tokens += served.input_tokens;
            agent.cached_tokens += served.cached_tokens;
            price(&served);
            let bytes = serde_json::to_vec(&captured.request).map_or(0, |b| b.len() as u64);
            match phases.iter_mut().find(|p| p.phase == phase) {
                Some(entry) => {
                    entry.requests += 1;
                    entry.request_bytes += bytes;
                }
                None => phases.push(PhaseBytes {
                    phase: phase.to_string(),
                    requests: 1,
                    request_bytes: bytes,
                }),
            }
        }
        second_input += agent.input_tokens;
        second_cached += agent.cached_tokens;
        per_agent.push(agent);
    }
    let share = if second_input == 0 {
        0.0
    } else {
        second_cached as f64 / second_input as f64
    };
    CacheFigures {
        method: METHOD,
        first_run_input_tokens: first_input,
        first_run_cached_tokens: first_cached,
        second_run_input_tokens: second_input,
        second_run_cached_tokens: second_cached,
        second_run_cached_share: share,
        goal_cached_share: GOAL_CACHED_SHARE,
        goal_met: share >= GOAL_CACHED_SHARE,
        per_agent_second_run: per_agent,
        request_bytes_by_phase: phases,
        cost_without_cache_usd: cost_without,
        cost_with_cache_usd: cost_with,
    }
}

/// `router`, `support`, `primary` or `review`, from an agent label.
fn phase_of(label: &str) -> &'static str {
    if label == "router" {
        "router"
    } else if label.ends_with("(support)") {
        "support"
    } else if label.ends_with("(primary)") {
        "primary"
    } else {
        "review"
    }
}

/// The cache section of the table.
pub(super) fn print(f: &CacheFigures) {
    println!();
    println!("  prompt cache — a second identical run:");
    println!(
        "    first run:  {} of {} input tokens from cache",
        f.first_run_cached_tokens, f.first_run_input_tokens
    );
    println!(
        "    second run: {} of {} input tokens from cache ({:.0}%) — goal ≥ {:.0}%: {}",
        f.second_run_cached_tokens,
        f.second_run_input_tokens,
        f.second_run_cached_share * 100.0,
        f.goal_cached_share * 100.0,
        if f.goal_met { "met" } else { "not met" }
    );
    println!(
        "    {:<22} {:>14} {:>14}",
        "agent (second run)", "input tokens", "from cache"
    );
    for a in &f.per_agent_second_run {
        println!(
            "    {:<22} {:>14} {:>14}",
            a.agent, a.input_tokens, a.cached_tokens
        );
    }
    println!("    request bytes by phase (one run):");
    for p in &f.request_bytes_by_phase {
        println!(
            "      {:<10} {:>3} request(s) {:>9} bytes",
            p.phase, p.requests, p.request_bytes
        );
    }
    println!(
        "    input cost of both runs: ${:.4} without caching, ${:.4} with",
        f.cost_without_cache_usd, f.cost_with_cache_usd
    );
    println!("    method: {}.", f.method);
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_llm::ChatMessage;

    fn request(key: &str, system: &str, task: &str) -> ChatRequest {
        ChatRequest {
            system: Some(system.into()),
            messages: vec![ChatMessage::user_text(task)],
            cache_key: Some(key.into()),
            ..ChatRequest::default()
        }
    }

    #[test]
    fn a_request_is_served_as_far_as_it_repeats_a_seen_prefix_under_its_key() {
        let mut cache = PrefixCache::default();
        let system = "s".repeat(400);
        let first = cache.serve(&request("k", &system, "task one"));
        assert_eq!(first.cached_tokens, 0);
        // The same role, another task: the system prompt comes from the cache.
        let second = cache.serve(&request("k", &system, "task two"));
        assert!(second.cached_tokens >= 100, "{}", second.cached_tokens);
        assert!(second.cached_tokens < second.input_tokens);
        // The same request again: all of it.
        let again = cache.serve(&request("k", &system, "task two"));
        assert_eq!(again.cached_tokens, again.input_tokens);
        // Another key shares nothing.
        let other = cache.serve(&request("other", &system, "task two"));
        assert_eq!(other.cached_tokens, 0);
    }
}
