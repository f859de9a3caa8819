//! Token budgets shared by every worker: one for the whole fleet (`fleet`) and one per
//! submitter (`submitter.<name>`), in the budget bucket.
//!
//! Counting after the fact would let N workers each see the same remaining tokens and
//! together spend N times them. So a run *reserves* its tokens before it starts, compare-and-
//! set: its grant is the task's `maxTokens` (else the budget's per-task grant), cut to what is
//! left, and becomes the run's `--max-tokens`, so it cannot spend more. When it ends its real
//! use is added and the reservation dropped. Reservations are kept by task id, so the worker
//! that resumes a task finds its grant again instead of reserving twice.

use std::collections::BTreeMap;

use async_nats::jetstream::kv;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::nats::Fleet;

/// One budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// Tokens the runs under it may use in all.
    pub limit_tokens: u64,
    /// What one run may reserve when its task gives no `maxTokens` (0: everything left).
    #[serde(default)]
    pub per_task_tokens: u64,
    /// Tokens used by the runs that ended.
    #[serde(default)]
    pub used_tokens: u64,
    /// Tokens reserved by running tasks, by task id.
    #[serde(default)]
    pub reserved: BTreeMap<String, u64>,
}

impl Budget {
    /// Tokens neither used nor reserved.
    pub fn available(&self) -> u64 {
        let reserved: u64 = self.reserved.values().sum();
        self.limit_tokens
            .saturating_sub(self.used_tokens)
            .saturating_sub(reserved)
    }
}

/// What a reservation attempt found.
#[derive(Debug, PartialEq)]
pub enum Grant {
    /// No budget applies.
    Unlimited,
    /// The run may use this many tokens.
    Tokens(u64),
    /// Everything left is reserved by running tasks: try again when one ends.
    Wait,
    /// The budget is spent: the task fails with this reason.
    Spent(String),
}

/// The budget keys that apply to a task of `submitter`.
pub fn keys(submitter: Option<&str>) -> Vec<String> {
    let mut keys = vec!["fleet".to_string()];
    if let Some(name) = submitter {
        keys.push(submitter_key(name));
    }
    keys
}

/// The key of `name`'s budget (its name, with what a key cannot hold made `_`).
pub fn submitter_key(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("submitter.{safe}")
}

async fn read(fleet: &Fleet, key: &str) -> Result<Option<(Budget, u64)>, String> {
    let entry = fleet
        .budgets
        .entry(key)
        .await
        .map_err(|err| format!("NATS at {}: budget {key}: {err}", fleet.url))?;
    let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
        return Ok(None);
    };
    let budget = serde_json::from_slice(&entry.value)
        .map_err(|err| format!("budget {key} is not readable: {err}"))?;
    Ok(Some((budget, entry.revision)))
}

/// Changes budget `key` with `change` (compare-and-set, retried); `None`: no such budget.
async fn update<T>(
    fleet: &Fleet,
    key: &str,
    mut change: impl FnMut(&mut Budget) -> T,
) -> Result<Option<T>, String> {
    for _ in 0..64 {
        let Some((mut budget, revision)) = read(fleet, key).await? else {
            return Ok(None);
        };
        let out = change(&mut budget);
        let bytes = Bytes::from(serde_json::to_vec(&budget).unwrap_or_default());
        match fleet.budgets.update(key, bytes, revision).await {
            Ok(_) => return Ok(Some(out)),
            Err(err) if err.kind() == kv::UpdateErrorKind::WrongLastRevision => continue,
            Err(err) => return Err(format!("NATS at {}: budget {key}: {err}", fleet.url)),
        }
    }
    Err(format!("budget {key} kept changing under this update"))
}

/// Reserves tokens for task `id` under every budget in `keys`. On `Wait` or `Spent`, what
/// this call reserved is given back.
pub async fn reserve(
    fleet: &Fleet,
    keys: &[String],
    id: &str,
    wanted: Option<u64>,
) -> Result<Grant, String> {
    let mut grant = Grant::Unlimited;
    for (n, key) in keys.iter().enumerate() {
        let found = update(fleet, key, |budget| {
            if let Some(granted) = budget.reserved.get(id) {
                return Grant::Tokens(*granted);
            }
            if budget.used_tokens >= budget.limit_tokens {
                return Grant::Spent(format!(
                    "the {key} token budget is spent ({} of {} tokens used); raise it with `braincode fleet budget`",
                    budget.used_tokens, budget.limit_tokens
                ));
            }
            let available = budget.available();
            if available == 0 {
                return Grant::Wait;
            }
            let share = wanted
                .or((budget.per_task_tokens > 0).then_some(budget.per_task_tokens))
                .unwrap_or(available);
            let tokens = share.min(available).max(1);
            budget.reserved.insert(id.to_string(), tokens);
            Grant::Tokens(tokens)
        })
        .await?;
        match found {
            None => {}
            Some(Grant::Tokens(tokens)) => {
                grant = match grant {
                    Grant::Tokens(before) => Grant::Tokens(before.min(tokens)),
                    _ => Grant::Tokens(tokens),
                };
            }
            Some(other) => {
                release(fleet, &keys[..n], id, 0).await?;
                return Ok(other);
            }
        }
    }
    Ok(grant)
}

/// Counts `used` tokens of task `id` under every budget in `keys` and drops its reservation.
pub async fn release(fleet: &Fleet, keys: &[String], id: &str, used: u64) -> Result<(), String> {
    for key in keys {
        update(fleet, key, |budget| {
            if budget.reserved.remove(id).is_some() {
                budget.used_tokens = budget.used_tokens.saturating_add(used);
            }
        })
        .await?;
    }
    Ok(())
}

/// Sets budget `key`'s limit (and per-task grant), keeping what was used and reserved.
pub async fn set(fleet: &Fleet, key: &str, limit: u64, per_task: u64) -> Result<Budget, String> {
    let changed = update(fleet, key, |budget| {
        budget.limit_tokens = limit;
        budget.per_task_tokens = per_task;
        budget.clone()
    })
    .await?;
    if let Some(budget) = changed {
        return Ok(budget);
    }
    let budget = Budget {
        limit_tokens: limit,
        per_task_tokens: per_task,
        ..Budget::default()
    };
    let bytes = Bytes::from(serde_json::to_vec(&budget).unwrap_or_default());
    match fleet.budgets.create(key, bytes).await {
        Ok(_) => Ok(budget),
        // Made by someone else in between: set it on theirs.
        Err(err) if err.kind() == kv::CreateErrorKind::AlreadyExists => {
            Box::pin(set(fleet, key, limit, per_task)).await
        }
        Err(err) => Err(format!("NATS at {}: budget {key}: {err}", fleet.url)),
    }
}

/// Every budget, by key.
pub async fn list(fleet: &Fleet) -> Result<Vec<(String, Budget)>, String> {
    use futures::TryStreamExt;
    let keys: Vec<String> = match fleet.budgets.keys().await {
        Ok(keys) => keys
            .try_collect()
            .await
            .map_err(|err| format!("NATS at {}: budgets: {err}", fleet.url))?,
        Err(err) => return Err(format!("NATS at {}: budgets: {err}", fleet.url)),
    };
    let mut out = Vec::new();
    for key in keys {
        if let Some((budget, _)) = read(fleet, &key).await? {
            out.push((key, budget));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}
