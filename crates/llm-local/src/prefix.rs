//! Prompt-prefix reuse: the KV cache of the last evaluated prompt is kept (in memory) and the
//! static prefix's is saved next to the model file, so a request only evaluates what is new.
//!
//! **Exactness.** llama.cpp's numbers for a token depend on the batch it was decoded in (a
//! 218-token prompt split 200 + 18 gave logits up to 1.0 away from one 218-token batch). So a
//! prompt is always decoded in the same *segments*, cold or warm: cut at the end of every
//! message's content, then into `batch_size` chunks. A cache is reused only up to a segment end
//! where its segmentation and tokens agree with the new prompt's, which makes a warm run
//! compute exactly what a cold run computes.
//!
//! **Static prefix.** Everything up to the end of the system message's content (see
//! [`crate::prompt::Prompt::static_prefix`]): the role's prompt and the fixed sections, the
//! same for every request of a role and across processes. Its state file (see
//! [`crate::state_file`]) is keyed by the model file, those tokens and the settings that change
//! the numbers.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use llama_cpp_2::LlamaStateSeqFlags;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::token::LlamaToken;

use crate::state_file;

/// A snapshot larger than this is not kept in memory (it would pin that much RAM between
/// requests); such prompts are evaluated from the static prefix on.
const MAX_SNAPSHOT_BYTES: usize = 256 * 1024 * 1024;

/// The settings that change the KV numbers; part of every reuse decision and file key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct EvalSettings {
    /// `n_threads_batch` (llama.cpp's output depends on the thread count).
    pub threads: u32,
    /// `n_batch`/`n_ubatch`, which also sets the chunking.
    pub batch_size: u32,
    /// llama.cpp's flash-attention policy (-1 auto, 0 off, 1 on).
    pub flash_attention: i32,
}

/// Where each decode call of `message_ends` ends: message ends, each span further cut into
/// chunks of at most `batch_size` tokens.
pub(crate) fn segments(message_ends: &[usize], batch_size: u32) -> Vec<usize> {
    let batch = (batch_size as usize).max(1);
    let mut ends = Vec::new();
    let mut start = 0;
    for &end in message_ends {
        let mut at = start;
        while at < end {
            at = (at + batch).min(end);
            ends.push(at);
        }
        start = start.max(end);
    }
    ends
}

/// The evaluated prompt of a finished request: tokens, the segments they were decoded in and
/// llama.cpp's serialized state of sequence 0 (prompt cells only).
pub(crate) struct Snapshot {
    tokens: Vec<LlamaToken>,
    segments: Vec<usize>,
    settings: EvalSettings,
    state: Vec<u8>,
}

/// How many leading tokens of a cache (`old_tokens` decoded in `old_segments`) a new prompt can
/// reuse exactly: the last shared segment end within the common token prefix, and always
/// short of the whole prompt (its last token must be decoded for logits).
pub(crate) fn reusable(
    old_tokens: &[LlamaToken],
    old_segments: &[usize],
    tokens: &[LlamaToken],
    segments: &[usize],
) -> usize {
    let common = old_tokens
        .iter()
        .zip(tokens)
        .take_while(|(a, b)| a == b)
        .count();
    let mut reuse = 0;
    for (old, new) in old_segments.iter().zip(segments) {
        if old != new || *new > common || *new >= tokens.len() {
            break;
        }
        reuse = *new;
    }
    reuse
}

/// Copies sequence 0's state out of `context`.
#[allow(unsafe_code)]
pub(crate) fn read_state(context: &LlamaContext<'_>) -> Option<Vec<u8>> {
    let flags = LlamaStateSeqFlags::empty();
    let size = context.state_seq_get_size_ext(0, flags);
    if size == 0 {
        return None;
    }
    let mut bytes = vec![0u8; size];
    // SAFETY: `bytes` holds the `size` bytes llama.cpp just reported for this sequence's state,
    // which is exactly what it writes (llama-cpp-2's safe `state_seq_get` relies on the same).
    let written = unsafe { context.state_seq_get_data_ext(bytes.as_mut_ptr(), 0, flags) };
    (written == size).then_some(bytes)
}

/// Loads `state` into sequence 0 of `context` and keeps its first `keep` positions; false (and
/// an empty cache) when llama.cpp refuses it or the result is not exactly `0..keep`.
#[allow(unsafe_code)]
pub(crate) fn restore(context: &mut LlamaContext<'_>, state: &[u8], keep: usize) -> bool {
    // SAFETY: llama.cpp reads through a reader bounded by `state.len()`; a short or malformed
    // buffer is an exception it catches (returning 0) after clearing the sequence. Callers pass
    // only bytes llama.cpp produced for this model and these settings: in-memory snapshots, or
    // state files whose key and SHA-256 were verified first.
    let loaded = unsafe { context.state_seq_set_data_ext(state, 0, LlamaStateSeqFlags::empty()) };
    let Ok(keep_u32) = u32::try_from(keep) else {
        context.clear_kv_cache();
        return false;
    };
    let trimmed = loaded
        && context
            .clear_kv_cache_seq(Some(0), Some(keep_u32), None)
            .unwrap_or(false);
    let exact = keep > 0
        && context.kv_cache_seq_pos_min(0) == 0
        && i64::from(context.kv_cache_seq_pos_max(0)) == keep as i64 - 1;
    if !(trimmed && exact) {
        context.clear_kv_cache();
        return false;
    }
    true
}

/// Per-model reuse state: the last prompt's snapshot, the state-file location and the
/// evaluated-token counter.
#[derive(Debug)]
pub(crate) struct PrefixCache {
    model_path: PathBuf,
    /// Path, size and modification time of the model file: what the file key binds to.
    model_identity: String,
    persist: bool,
    last: Mutex<Option<Arc<Snapshot>>>,
    evaluated: AtomicU64,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("tokens", &self.tokens.len())
            .field("state_bytes", &self.state.len())
            .finish_non_exhaustive()
    }
}

/// What a request starts from.
pub(crate) struct Start {
    /// Leading prompt tokens already in the context.
    pub reused: usize,
    /// The static-prefix state file to write once that prefix is evaluated (no valid one
    /// exists).
    pub save_prefix_to: Option<(PathBuf, [u8; 32])>,
}

impl PrefixCache {
    /// The cache of the model at `model_path`; `persist` enables state files.
    pub(crate) fn new(model_path: &Path, persist: bool) -> Self {
        let identity = std::fs::metadata(model_path)
            .map(|meta| {
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{}\0{}\0{modified}", model_path.display(), meta.len())
            })
            .unwrap_or_else(|_| model_path.display().to_string());
        Self {
            model_path: model_path.to_path_buf(),
            model_identity: identity,
            persist,
            last: Mutex::new(None),
            evaluated: AtomicU64::new(0),
        }
    }

    /// Prompt tokens evaluated (decoded) so far, over all requests.
    pub(crate) fn evaluated(&self) -> u64 {
        self.evaluated.load(Ordering::Relaxed)
    }

    /// Counts `tokens` more evaluated prompt tokens.
    pub(crate) fn count(&self, tokens: usize) {
        self.evaluated.fetch_add(tokens as u64, Ordering::Relaxed);
    }

    /// Drops the in-memory snapshot (the next request starts cold or from a state file).
    pub(crate) fn forget(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Snapshot>>> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The state-file directory's files of this model (for cleaning up).
    pub(crate) fn state_files(&self) -> Vec<PathBuf> {
        state_file::files_of(&self.model_path)
    }

    /// Fills `context` with the longest exactly reusable prefix of `tokens`: from the last
    /// snapshot, else from the static prefix's state file. Anything unusable is skipped with a
    /// warning and the context is left empty.
    pub(crate) fn prepare(
        &self,
        context: &mut LlamaContext<'_>,
        tokens: &[LlamaToken],
        segments: &[usize],
        static_prefix: usize,
        settings: EvalSettings,
    ) -> Start {
        let last = self.lock().clone();
        if let Some(snapshot) = last.filter(|s| s.settings == settings) {
            let keep = reusable(&snapshot.tokens, &snapshot.segments, tokens, segments);
            if keep >= static_prefix.max(1) {
                if restore(context, &snapshot.state, keep) {
                    return Start {
                        reused: keep,
                        save_prefix_to: None,
                    };
                }
                tracing::warn!("the local model's cached prompt state was refused; evaluating");
            }
        }
        // The static prefix must be a segment end short of the whole prompt to be worth a file.
        if !self.persist
            || static_prefix == 0
            || static_prefix >= tokens.len()
            || !segments.contains(&static_prefix)
        {
            return Start {
                reused: 0,
                save_prefix_to: None,
            };
        }
        let prefix = &tokens[..static_prefix];
        let prefix_segments: Vec<usize> = segments
            .iter()
            .copied()
            .take_while(|end| *end <= static_prefix)
            .collect();
        let key = state_file::key(&self.model_identity, prefix, &prefix_segments, settings);
        let path = state_file::path_for(&self.model_path, &key);
        match state_file::load(&path, &key, prefix) {
            Ok(state) => {
                if restore(context, &state, static_prefix) {
                    return Start {
                        reused: static_prefix,
                        save_prefix_to: None,
                    };
                }
                tracing::warn!(
                    path = %path.display(),
                    "llama.cpp refused the prompt state file; evaluating and replacing it"
                );
            }
            Err(state_file::StateFileError::Missing) => {}
            Err(err) => tracing::warn!(
                path = %path.display(),
                "ignoring the prompt state file ({err}); evaluating and replacing it"
            ),
        }
        Start {
            reused: 0,
            save_prefix_to: Some((path, key)),
        }
    }

    /// Writes the static prefix's state file from `context`, whose cache holds exactly
    /// `prefix`. Failures only cost the next process the evaluation, so they are warnings.
    pub(crate) fn save_prefix(
        &self,
        context: &LlamaContext<'_>,
        path: &Path,
        key: &[u8; 32],
        prefix: &[LlamaToken],
    ) {
        let Some(state) = read_state(context) else {
            tracing::warn!("llama.cpp returned no prompt state to save");
            return;
        };
        if let Err(err) = state_file::save(path, key, prefix, &state) {
            tracing::warn!(path = %path.display(), "could not save the prompt state file: {err}");
        }
    }

    /// Keeps `context`'s prompt cells (`tokens`, decoded in `segments`) as the last snapshot.
    pub(crate) fn remember(
        &self,
        context: &mut LlamaContext<'_>,
        tokens: &[LlamaToken],
        segments: &[usize],
        settings: EvalSettings,
    ) {
        let Ok(len) = u32::try_from(tokens.len()) else {
            return;
        };
        // Generated tokens were decoded one by one, never how a later prompt would decode them.
        if !context
            .clear_kv_cache_seq(Some(0), Some(len), None)
            .unwrap_or(false)
        {
            return;
        }
        let Some(state) = read_state(context).filter(|s| s.len() <= MAX_SNAPSHOT_BYTES) else {
            return;
        };
        *self.lock() = Some(Arc::new(Snapshot {
            tokens: tokens.to_vec(),
            segments: segments.to_vec(),
            settings,
            state,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().copied().map(LlamaToken::new).collect()
    }

    #[test]
    fn segments_cut_at_message_ends_and_batch_size() {
        assert_eq!(segments(&[5, 12], 4), vec![4, 5, 9, 12]);
        assert_eq!(segments(&[3], 512), vec![3]);
        assert!(segments(&[], 8).is_empty());
    }

    #[test]
    fn reuse_stops_at_a_shared_segment_end_short_of_the_prompt() {
        let old = toks(&[1, 2, 3, 4, 5, 6]);
        let new = toks(&[1, 2, 3, 4, 9, 9, 9]);
        // Common tokens: 4; shared segment ends 2 and 4.
        assert_eq!(reusable(&old, &[2, 4, 6], &new, &[2, 4, 7]), 4);
        // A segment end past the common prefix is not reused.
        assert_eq!(reusable(&old, &[2, 5, 6], &new, &[2, 5, 7]), 2);
        // Different segmentation before the common end: nothing past the disagreement.
        assert_eq!(reusable(&old, &[3, 6], &new, &[2, 7]), 0);
        // The whole prompt cached: its last segment is evaluated again for logits.
        assert_eq!(reusable(&old, &[2, 6], &old, &[2, 6]), 2);
    }
}
