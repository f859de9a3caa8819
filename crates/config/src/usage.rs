//! Token usage and cost across sessions, from the journals' `token_usage` records
//! (`braincode usage`).
//!
//! Journals can total gigabytes, so they are not parsed whole: each file is read once, the
//! bytes are searched for `token_usage` with a SIMD substring search, and only the lines that
//! contain it are parsed (then checked to be that record, not an answer quoting the word). A
//! file last modified before `--since` is skipped unread: journals are append-only. A line
//! that does not parse is counted and skipped, never fatal. A call is costed as its record
//! says (the price when it was made); an older record without a cost at today's price.
//!
//! Besides the rows, a summary has each row's cache-hit ratio (prompt tokens served from the
//! provider's cache over all prompt tokens) and, when asked, the most recent calls.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use braincode_protocol::{ModelPricing, Usage};
use memchr::memmem;
use serde::{Deserialize, Serialize};

use crate::Home;

/// How rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UsageGroup {
    /// By UTC day of the call.
    #[default]
    Day,
    /// By the role that made the call.
    Role,
    /// By the run phase of the call (router, support, primary, review, pet).
    Phase,
    /// By catalogue model id.
    Model,
    /// By project root (of the session's first run).
    Project,
    /// By session id.
    Session,
}

impl UsageGroup {
    /// The groupings, as an error message lists them.
    pub const CHOICES: &'static str = "day, role, phase, model, project or session";

    /// Parses `day`, `role`, `phase`, `model`, `project` or `session`.
    pub fn parse(text: &str) -> Option<UsageGroup> {
        match text {
            "day" => Some(UsageGroup::Day),
            "role" => Some(UsageGroup::Role),
            "phase" => Some(UsageGroup::Phase),
            "model" => Some(UsageGroup::Model),
            "project" => Some(UsageGroup::Project),
            "session" => Some(UsageGroup::Session),
            _ => None,
        }
    }
}

/// One row: the calls of one group.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// The group (a day, role, model id, project root or session id).
    pub key: String,
    /// Model calls (`token_usage` records).
    pub calls: u64,
    /// Tokens.
    pub usage: Usage,
    /// Cost in US dollars of the calls whose model has a price.
    pub cost_usd: f64,
    /// Tokens of calls whose model has no price (not in `cost_usd`).
    pub unpriced_tokens: u64,
    /// Prompt tokens served from the provider's cache over all prompt tokens (cache reads
    /// over input plus cache reads); `None` without prompt tokens.
    pub cache_hit_ratio: Option<f64>,
}

/// What one call cost: as journaled when the call was made, else at today's price.
#[derive(Clone, Copy)]
enum CallCost<'a> {
    Recorded(u64),
    Priced(&'a ModelPricing),
    Unknown,
}

impl CallCost<'_> {
    /// The call's cost in US dollars, when it is known.
    fn usd(self, usage: &Usage) -> Option<f64> {
        match self {
            CallCost::Recorded(micro) => Some(micro as f64 / 1_000_000.0),
            CallCost::Priced(price) => Some(price.cost(usage)),
            CallCost::Unknown => None,
        }
    }
}

/// Cache reads over all prompt tokens (`input` counts only those not served from cache).
pub fn cache_hit_ratio(usage: &Usage) -> Option<f64> {
    let prompt = usage.input + usage.cache_read;
    (prompt > 0).then(|| usage.cache_read as f64 / prompt as f64)
}

impl UsageRow {
    fn add(&mut self, usage: &Usage, cost: CallCost<'_>) {
        self.calls += 1;
        self.usage.add(usage);
        match cost.usd(usage) {
            Some(usd) => self.cost_usd += usd,
            None => {
                let parts = usage.input + usage.output + usage.cache_read + usage.cache_write;
                self.unpriced_tokens += usage.total.max(parts);
            }
        }
        self.cache_hit_ratio = cache_hit_ratio(&self.usage);
    }
}

/// One model call, as the recent-calls list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageCall {
    /// When the call was journaled (Unix ms).
    pub timestamp: i64,
    /// Its session.
    pub session: String,
    /// The role that made it.
    pub role: Option<String>,
    /// Its run phase.
    pub phase: Option<String>,
    /// Catalogue model id.
    pub model: String,
    /// Tokens.
    pub usage: Usage,
    /// Cost in US dollars (`None`: the model has no price).
    pub cost_usd: Option<f64>,
    /// Wall time of the call (`None`: not recorded, as in older journals).
    pub duration_ms: Option<u64>,
}

/// Usage across the journals.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageSummary {
    /// Rows, sorted by key.
    pub rows: Vec<UsageRow>,
    /// Every row together.
    pub total: UsageRow,
    /// Sessions with at least one counted call.
    pub sessions: u64,
    /// Journal files read.
    pub files_read: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Lines that mention `token_usage` but could not be read as the record.
    pub unreadable_lines: u64,
    /// Model ids that were used but have no price.
    pub unpriced_models: Vec<String>,
    /// The most recent calls, newest first ([`UsageQuery::recent`] of them).
    pub recent: Vec<UsageCall>,
}

/// What to count.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UsageQuery {
    /// Only calls at or after this time (Unix ms).
    pub since_ms: Option<i64>,
    /// How rows are grouped.
    pub by: UsageGroup,
    /// How many of the most recent calls to list (0: none).
    pub recent: usize,
}

/// The line fields usage needs (the rest of the record is not decoded).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageLine {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    timestamp: i64,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    model_id: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    cost_micro_usd: Option<u64>,
    #[serde(default)]
    duration_ms: Option<u64>,
}

/// The project root of a session (its first run's `projectSupport.root`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartLine {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    project_support: Option<ProjectRoot>,
}

#[derive(Deserialize)]
struct ProjectRoot {
    #[serde(default)]
    root: Option<String>,
}

/// Sums the `token_usage` records of every journal under `home`, priced with `prices`
/// (catalogue id → prices).
pub fn summarize_usage(
    home: &Home,
    query: &UsageQuery,
    prices: &HashMap<String, ModelPricing>,
) -> std::io::Result<UsageSummary> {
    summarize_dir(&home.sessions_dir(), query, prices)
}

/// [`summarize_usage`] over the journals of one directory.
pub fn summarize_dir(
    dir: &Path,
    query: &UsageQuery,
    prices: &HashMap<String, ModelPricing>,
) -> std::io::Result<UsageSummary> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(UsageSummary::default());
        }
        Err(err) => return Err(err),
    };
    let since = query.since_ms.unwrap_or(i64::MIN);
    let mut rows: BTreeMap<String, UsageRow> = BTreeMap::new();
    let mut summary = UsageSummary::default();
    let mut unpriced: BTreeSet<String> = BTreeSet::new();
    let mut recent = RecentCalls::new(query.recent);
    let finder = memmem::Finder::new(b"token_usage");
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        if query.since_ms.is_some() && modified_ms(&entry).is_some_and(|m| m < since) {
            continue;
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            // A journal removed while reading is not an error of the others.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err),
        };
        summary.files_read += 1;
        summary.bytes_read += bytes.len() as u64;
        let session = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        let project = if query.by == UsageGroup::Project {
            project_of(&bytes)
        } else {
            None
        };
        let mut counted = false;
        let mut next_line = 0;
        for hit in finder.find_iter(&bytes) {
            if hit < next_line {
                continue; // the same line again
            }
            let start = memchr::memrchr(b'\n', &bytes[..hit]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &bytes[hit..]).map_or(bytes.len(), |i| hit + i);
            next_line = end + 1;
            let Ok(line) = serde_json::from_slice::<UsageLine>(&bytes[start..end]) else {
                summary.unreadable_lines += 1;
                continue;
            };
            if line.kind != "token_usage" || line.timestamp < since {
                continue;
            }
            let Some(usage) = line.usage else {
                summary.unreadable_lines += 1;
                continue;
            };
            let model = line.model_id.unwrap_or_else(|| "(unknown model)".into());
            let price = match (line.cost_micro_usd, prices.get(&model)) {
                (Some(micro), _) => CallCost::Recorded(micro),
                (None, Some(price)) => CallCost::Priced(price),
                (None, None) => {
                    unpriced.insert(model.clone());
                    CallCost::Unknown
                }
            };
            recent.offer(|| UsageCall {
                timestamp: line.timestamp,
                session: session.clone(),
                role: line.role.clone(),
                phase: line.phase.clone(),
                model: model.clone(),
                usage,
                cost_usd: price.usd(&usage),
                duration_ms: line.duration_ms,
            });
            let key = match query.by {
                UsageGroup::Day => day_of(line.timestamp),
                UsageGroup::Role => line.role.unwrap_or_else(|| "(no role)".into()),
                UsageGroup::Phase => line.phase.unwrap_or_else(|| "(no phase)".into()),
                UsageGroup::Model => model,
                UsageGroup::Project => project.clone().unwrap_or_else(|| "(unknown)".into()),
                UsageGroup::Session => session.clone(),
            };
            rows.entry(key.clone())
                .or_insert_with(|| UsageRow {
                    key,
                    ..UsageRow::default()
                })
                .add(&usage, price);
            summary.total.add(&usage, price);
            counted = true;
        }
        if counted {
            summary.sessions += 1;
        }
    }
    summary.total.key = "total".into();
    summary.rows = rows.into_values().collect();
    summary.unpriced_models = unpriced.into_iter().collect();
    summary.recent = recent.into_newest_first();
    Ok(summary)
}

/// The `limit` most recent calls seen so far, kept in bounded memory whatever the number of
/// calls in the journals.
struct RecentCalls {
    limit: usize,
    calls: Vec<UsageCall>,
}

impl RecentCalls {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            calls: Vec::new(),
        }
    }

    /// Keeps the call `make` builds when it may be among the most recent (built only then).
    fn offer(&mut self, make: impl FnOnce() -> UsageCall) {
        if self.limit == 0 {
            return;
        }
        self.calls.push(make());
        if self.calls.len() >= self.limit.saturating_mul(2).max(64) {
            self.trim();
        }
    }

    fn trim(&mut self) {
        // Newest first; ties (one millisecond) by session, for a stable order.
        self.calls.sort_by(|a, b| {
            b.timestamp
                .cmp(&a.timestamp)
                .then_with(|| a.session.cmp(&b.session))
        });
        self.calls.truncate(self.limit);
    }

    fn into_newest_first(mut self) -> Vec<UsageCall> {
        self.trim();
        self.calls
    }
}

fn modified_ms(entry: &std::fs::DirEntry) -> Option<i64> {
    let modified = entry.metadata().ok()?.modified().ok()?;
    let since_epoch = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since_epoch.as_millis()).ok()
}

/// The project root of the first `run_start` line.
fn project_of(bytes: &[u8]) -> Option<String> {
    let hit = memmem::find(bytes, b"run_start")?;
    let start = memchr::memrchr(b'\n', &bytes[..hit]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &bytes[hit..]).map_or(bytes.len(), |i| hit + i);
    let line: StartLine = serde_json::from_slice(&bytes[start..end]).ok()?;
    (line.kind == "run_start")
        .then_some(line.project_support?.root)
        .flatten()
}

/// `YYYY-MM-DD` (UTC) of a Unix-ms time.
fn day_of(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| "(bad time)".into(), |t| t.format("%Y-%m-%d").to_string())
}

/// A `--since` value as epoch milliseconds: a date (`2026-11-30`, UTC midnight), RFC 3339, or
/// a span back from `now_ms` (`30m`, `12h`, `7d`, `2w`).
pub fn parse_since(text: &str, now_ms: i64) -> Result<i64, String> {
    let text = text.trim();
    if let Some((digits, unit)) = text
        .char_indices()
        .last()
        .map(|(i, c)| (&text[..i], c))
        .filter(|(digits, _)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
    {
        let unit_ms: i64 = match unit {
            'm' => 60_000,
            'h' => 3_600_000,
            'd' => 86_400_000,
            'w' => 7 * 86_400_000,
            _ => 0,
        };
        if unit_ms > 0 {
            let count: i64 = digits
                .parse()
                .map_err(|_| format!("{text:?} is too large"))?;
            return Ok(now_ms.saturating_sub(count.saturating_mul(unit_ms)));
        }
    }
    if let Ok(date) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(date
            .and_hms_opt(0, 0, 0)
            .map_or(0, |t| t.and_utc().timestamp_millis()));
    }
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(time.timestamp_millis());
    }
    Err(format!(
        "{text:?} is not a time: use a date (2026-11-30), RFC 3339 (2026-11-30T08:00:00Z) or a span (30m, 12h, 7d, 2w)"
    ))
}

/// Each catalogue model's price by id (models without one are left out).
pub fn catalog_prices(
    catalog: &[braincode_protocol::ModelDefinition],
) -> HashMap<String, ModelPricing> {
    catalog
        .iter()
        .filter_map(|m| Some((m.id.clone(), m.pricing?)))
        .collect()
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
