//! The per-run evidence cache: identical read calls (from any agent of the run) are answered
//! from memory, and an agent repeating the same call is reminded, then blocked, then told to
//! stop. Any mutating call clears everything, so a result is never older than the last change.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::policy::approval::{is_read_tool_name, mcp_bare_name};
use crate::tool::ToolOutput;

/// Identical consecutive calls before a reminder.
pub const REMINDER_AT: u32 = 3;
/// Identical consecutive calls answered from the cache without running the tool.
pub const BLOCK_AT: u32 = 4;
/// Identical consecutive calls before a strong reminder.
pub const STRONG_REMINDER_AT: u32 = 5;
/// Identical consecutive calls after which the content is suppressed.
pub const STOP_AT: u32 = 8;

/// Tools whose results are cached (besides read-verb MCP tools).
pub const CACHEABLE_TOOLS: &[&str] = &[
    "list_files",
    "read_file",
    "search_files",
    "git_diff",
    "get_changed_files",
    "web_search",
];

/// MCP tools (by bare name, whatever the server is called) that read the web: a web
/// search's results are evidence like a file read's, reused within the run. Tavily's
/// `tavily-search`, `tavily-extract`, `tavily-crawl` and `tavily-map` (exposed with `_`).
pub const WEB_READ_TOOLS: &[&str] = &[
    "web_search",
    "tavily_search",
    "tavily_extract",
    "tavily_crawl",
    "tavily_map",
];

/// Tools that neither read evidence worth caching nor change anything: they leave the cache
/// as it is (finding MCP tools, handing work to a specialist).
const NEUTRAL_TOOLS: &[&str] = &["dispatch_specialist", "mcp_search"];

/// Cache limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvidenceCacheConfig {
    /// Entries kept (least recently used evicted first).
    pub max_entries: usize,
    /// Approximate bytes kept; a single larger result is not stored.
    pub max_bytes: usize,
    /// Age after which an entry is not reused; zero disables the cache.
    pub ttl: Duration,
}

impl Default for EvidenceCacheConfig {
    fn default() -> Self {
        Self {
            max_entries: 200,
            max_bytes: 8 * 1024 * 1024,
            ttl: Duration::from_secs(10 * 60),
        }
    }
}

/// What `before_call` found.
#[derive(Debug, Clone, PartialEq)]
pub enum CacheLookup {
    /// A cached result: return it instead of running the tool.
    Hit(ToolOutput),
    /// A cached result flagged blocked (the call was repeated too often): return it instead of
    /// running the tool.
    Blocked(ToolOutput),
    /// Run the tool, then pass its output to `after_call`.
    Miss,
}

#[derive(Debug)]
struct Entry {
    output: ToolOutput,
    stored: Instant,
    bytes: usize,
    last_used: u64,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<String, Entry>,
    bytes: usize,
    tick: u64,
    last_key: Option<String>,
    consecutive: u32,
    call_counts: HashMap<String, u32>,
}

impl State {
    fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.last_key = None;
        self.consecutive = 0;
        self.call_counts.clear();
    }

    fn remove(&mut self, key: &str) {
        if let Some(entry) = self.entries.remove(key) {
            self.bytes -= entry.bytes;
        }
    }
}

/// Whether a tool's results can be cached.
pub fn is_cacheable(name: &str) -> bool {
    let lower = name.to_lowercase();
    CACHEABLE_TOOLS.contains(&lower.as_str())
        || mcp_bare_name(&lower)
            .is_some_and(|bare| is_read_tool_name(bare) || WEB_READ_TOOLS.contains(&bare))
}

/// Whether a call invalidates the cache: anything not cacheable except the neutral tools
/// (`dispatch_specialist`, `mcp_search`).
pub fn is_mutating(name: &str) -> bool {
    let lower = name.to_lowercase();
    !is_cacheable(&lower) && !NEUTRAL_TOOLS.contains(&lower.as_str())
}

/// The cache key: lower-case name and the arguments as JSON with sorted keys.
pub fn cache_key(name: &str, arguments: &Value) -> String {
    format!("{}:{}", name.to_lowercase(), canonical_json(arguments))
}

fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for key in keys {
                    out.insert(key.clone(), sorted(&map[key]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(value)).unwrap_or_default()
}

fn approx_bytes(output: &ToolOutput) -> usize {
    output.content.len()
        + output
            .details
            .as_ref()
            .map_or(0, |details| details.to_string().len())
        + 64
}

fn warning_for(name: &str, consecutive: u32, blocked: bool) -> Option<String> {
    if consecutive >= STOP_AT {
        Some(format!(
            "Stop repeating this call: {name} was called {consecutive} times in a row with the same arguments. Its content is suppressed; use the result you already have or change approach."
        ))
    } else if consecutive >= STRONG_REMINDER_AT {
        Some(format!(
            "Strong reminder: {name} was called {consecutive} times in a row with the same arguments. The result has not changed; use it and move on."
        ))
    } else if consecutive >= BLOCK_AT && blocked {
        Some(format!(
            "Blocked: {name} was called {consecutive} times in a row with the same arguments; the cached result is returned and the tool was not run again."
        ))
    } else if consecutive >= REMINDER_AT {
        Some(format!(
            "Reminder: this is call {consecutive} of {name} with the same arguments in a row; reuse the earlier result instead of repeating it."
        ))
    } else {
        None
    }
}

/// The run-wide evidence cache. Internally synchronized: share it in an `Arc`.
#[derive(Debug)]
pub struct EvidenceCache {
    config: EvidenceCacheConfig,
    state: Mutex<State>,
}

impl Default for EvidenceCache {
    fn default() -> Self {
        Self::new(EvidenceCacheConfig::default())
    }
}

struct Decoration {
    reused: bool,
    blocked: bool,
    call_count: u32,
    consecutive: u32,
    age: Duration,
    evicted: usize,
    entries: usize,
    bytes: usize,
}

impl EvidenceCache {
    /// A cache with the given limits.
    pub fn new(config: EvidenceCacheConfig) -> Self {
        Self {
            config,
            state: Mutex::new(State::default()),
        }
    }

    /// Number of cached entries.
    pub fn len(&self) -> usize {
        self.state.lock().map(|s| s.entries.len()).unwrap_or(0)
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every entry and counter.
    pub fn clear(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.clear();
        }
    }

    /// Call before running a tool: counts the call and returns a cached result when there is
    /// one. A mutating tool clears the cache here (and again in `after_call`).
    pub fn before_call(&self, name: &str, arguments: &Value) -> CacheLookup {
        let Ok(mut state) = self.state.lock() else {
            return CacheLookup::Miss;
        };
        if !is_cacheable(name) {
            if is_mutating(name) {
                state.clear();
            }
            return CacheLookup::Miss;
        }
        let key = cache_key(name, arguments);
        if state.last_key.as_deref() == Some(key.as_str()) {
            state.consecutive += 1;
        } else {
            state.consecutive = 1;
            state.last_key = Some(key.clone());
        }
        *state.call_counts.entry(key.clone()).or_insert(0) += 1;
        if self.config.ttl.is_zero() {
            return CacheLookup::Miss;
        }
        let expired = state
            .entries
            .get(&key)
            .is_some_and(|entry| entry.stored.elapsed() > self.config.ttl);
        if expired {
            state.remove(&key);
        }
        state.tick += 1;
        let tick = state.tick;
        let consecutive = state.consecutive;
        let call_count = state.call_counts.get(&key).copied().unwrap_or(1);
        let entries = state.entries.len();
        let bytes = state.bytes;
        let Some(entry) = state.entries.get_mut(&key) else {
            return CacheLookup::Miss;
        };
        entry.last_used = tick;
        let blocked = consecutive >= BLOCK_AT;
        let output = decorate(
            name,
            entry.output.clone(),
            Decoration {
                reused: true,
                blocked,
                call_count,
                consecutive,
                age: entry.stored.elapsed(),
                evicted: 0,
                entries,
                bytes,
            },
        );
        if blocked {
            CacheLookup::Blocked(output)
        } else {
            CacheLookup::Hit(output)
        }
    }

    /// Call after running a tool (on a miss): stores a cacheable successful result, clears the
    /// cache after a mutating tool, and attaches the cache details to the output.
    pub fn after_call(&self, name: &str, arguments: &Value, output: ToolOutput) -> ToolOutput {
        let Ok(mut state) = self.state.lock() else {
            return output;
        };
        if !is_cacheable(name) {
            if is_mutating(name) {
                state.clear();
            }
            return output;
        }
        let key = cache_key(name, arguments);
        let mut evicted = 0;
        let bytes = approx_bytes(&output);
        if !output.is_error && !self.config.ttl.is_zero() && bytes <= self.config.max_bytes {
            state.remove(&key);
            state.tick += 1;
            let tick = state.tick;
            state.entries.insert(
                key.clone(),
                Entry {
                    output: output.clone(),
                    stored: Instant::now(),
                    bytes,
                    last_used: tick,
                },
            );
            state.bytes += bytes;
            while state.entries.len() > self.config.max_entries
                || state.bytes > self.config.max_bytes
            {
                let oldest = state
                    .entries
                    .iter()
                    .filter(|(k, _)| **k != key)
                    .min_by_key(|(_, entry)| entry.last_used)
                    .map(|(k, _)| k.clone());
                match oldest {
                    Some(oldest) => {
                        state.remove(&oldest);
                        evicted += 1;
                    }
                    None => break,
                }
            }
        }
        let consecutive = if state.last_key.as_deref() == Some(key.as_str()) {
            state.consecutive
        } else {
            1
        };
        let decoration = Decoration {
            reused: false,
            blocked: false,
            call_count: state.call_counts.get(&key).copied().unwrap_or(1),
            consecutive,
            age: Duration::ZERO,
            evicted,
            entries: state.entries.len(),
            bytes: state.bytes,
        };
        decorate(name, output, decoration)
    }
}

fn decorate(name: &str, mut output: ToolOutput, d: Decoration) -> ToolOutput {
    let warning = warning_for(name, d.consecutive, d.blocked);
    if let Some(warning) = &warning {
        output.content = if d.consecutive >= STOP_AT {
            format!("[evidence cache] {warning}")
        } else {
            format!("[evidence cache] {warning}\n\n{}", output.content)
        };
    }
    let details = json!({
        "toolName": name,
        "reused": d.reused,
        "blocked": d.blocked,
        "callCount": d.call_count,
        "consecutiveCount": d.consecutive,
        "cacheAgeMs": u64::try_from(d.age.as_millis()).unwrap_or(u64::MAX),
        "warning": warning,
        "evictedEntries": d.evicted,
        "currentEntries": d.entries,
        "approxBytes": d.bytes,
    });
    output.details = Some(match output.details.take() {
        Some(Value::Object(mut map)) => {
            map.insert("evidenceCache".to_string(), details);
            Value::Object(map)
        }
        Some(other) => json!({"tool": other, "evidenceCache": details}),
        None => json!({"evidenceCache": details}),
    });
    output
}
