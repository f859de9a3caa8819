//! Token and cost budgets shared by every worker: one for the whole fleet (`fleet`) and one
//! per submitter (`submitter.<name>`), in the budget bucket.
//!
//! Counting after the fact would let N workers each see the same remaining budget and
//! together spend N times it. So a run *reserves* before it starts, compare-and-set: its
//! grant is the task's `maxTokens` / `maxCost` (else the budget's per-task grant), cut to what
//! is left, and becomes the run's `--max-tokens` / `--max-cost`, so it stops when it reaches
//! it. When it ends its real use is added and the reservation dropped. Reservations are kept by
//! task id, so the worker that resumes a task finds its grant again instead of reserving twice.
//! A run stops at the first model call that reaches its grant, so it can pass it by the calls
//! in flight at that moment.

use std::collections::BTreeMap;

use async_nats::jetstream::kv;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::nats::Fleet;

/// One limited quantity (tokens, or millionths of a US dollar).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meter {
    /// What the runs under it may use in all.
    pub limit: u64,
    /// What one run may reserve when its task sets no budget of its own (0: all that is left).
    #[serde(default)]
    pub per_task: u64,
    /// Used by the runs that ended.
    #[serde(default)]
    pub used: u64,
    /// Reserved by running tasks, by task id.
    #[serde(default)]
    pub reserved: BTreeMap<String, u64>,
}

impl Meter {
    /// Neither used nor reserved.
    pub fn available(&self) -> u64 {
        let reserved: u64 = self.reserved.values().sum();
        self.limit
            .saturating_sub(self.used)
            .saturating_sub(reserved)
    }
}

/// One budget: tokens, cost, or both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// Tokens (input, output and cache, every agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Meter>,
    /// Cost in millionths of a US dollar, priced by each worker's models.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd: Option<Meter>,
}

/// What a run wants and what it used: tokens and millionths of a dollar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Amount {
    /// Tokens.
    pub tokens: Option<u64>,
    /// Millionths of a US dollar.
    pub micro_usd: Option<u64>,
}

/// What a reservation attempt found.
#[derive(Debug, PartialEq)]
pub enum Grant {
    /// The run may use this much (`None` in a field: no budget limits it).
    Granted(Amount),
    /// Everything left is reserved by running tasks: try again when one ends.
    Wait,
    /// A budget is spent: the task fails with this reason.
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
    format!("submitter.{}", braincode_protocol::safe_name(name))
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

/// What one meter grants a run that wants `wanted` (the grant it holds already, when it is a
/// resumed task), or why it grants nothing.
fn reserve_on(meter: &mut Meter, what: &str, id: &str, wanted: Option<u64>) -> Result<u64, Grant> {
    if let Some(granted) = meter.reserved.get(id) {
        return Ok(*granted);
    }
    if meter.used >= meter.limit {
        return Err(Grant::Spent(format!(
            "the {what} budget is spent ({} of {} used); raise it with `braincode fleet budget`",
            meter.used, meter.limit
        )));
    }
    let available = meter.available();
    if available == 0 {
        return Err(Grant::Wait);
    }
    let share = wanted
        .or((meter.per_task > 0).then_some(meter.per_task))
        .unwrap_or(available);
    let granted = share.min(available).max(1);
    meter.reserved.insert(id.to_string(), granted);
    Ok(granted)
}

fn tighter(a: Option<u64>, b: u64) -> Option<u64> {
    Some(a.map_or(b, |a| a.min(b)))
}

/// Reserves for task `id` under every budget in `keys`. On `Wait` or `Spent`, what this call
/// reserved is given back.
pub async fn reserve(
    fleet: &Fleet,
    keys: &[String],
    id: &str,
    wanted: Amount,
) -> Result<Grant, String> {
    let mut granted = wanted;
    for (n, key) in keys.iter().enumerate() {
        let found = update(fleet, key, |budget| {
            let mut out = Amount::default();
            if let Some(meter) = budget.tokens.as_mut() {
                let what = format!("{key} token");
                out.tokens = Some(reserve_on(meter, &what, id, wanted.tokens)?);
            }
            if let Some(meter) = budget.cost_micro_usd.as_mut() {
                let what = format!("{key} cost");
                match reserve_on(meter, &what, id, wanted.micro_usd) {
                    Ok(micro) => out.micro_usd = Some(micro),
                    Err(refused) => {
                        // All or nothing: the token reservation made just now goes back.
                        if let Some(tokens) = budget.tokens.as_mut() {
                            tokens.reserved.remove(id);
                        }
                        return Err(refused);
                    }
                }
            }
            Ok(out)
        })
        .await?;
        match found {
            None => {}
            Some(Ok(amount)) => {
                if let Some(tokens) = amount.tokens {
                    granted.tokens = tighter(granted.tokens, tokens);
                }
                if let Some(micro) = amount.micro_usd {
                    granted.micro_usd = tighter(granted.micro_usd, micro);
                }
            }
            Some(Err(refused)) => {
                release(fleet, &keys[..n], id, Amount::default()).await?;
                return Ok(refused);
            }
        }
    }
    Ok(Grant::Granted(granted))
}

/// Counts what task `id` `used` under every budget in `keys` and drops its reservation.
pub async fn release(fleet: &Fleet, keys: &[String], id: &str, used: Amount) -> Result<(), String> {
    for key in keys {
        update(fleet, key, |budget| {
            let meters = [
                (budget.tokens.as_mut(), used.tokens),
                (budget.cost_micro_usd.as_mut(), used.micro_usd),
            ];
            for (meter, used) in meters {
                if let Some(meter) = meter
                    && meter.reserved.remove(id).is_some()
                {
                    meter.used = meter.used.saturating_add(used.unwrap_or(0));
                }
            }
        })
        .await?;
    }
    Ok(())
}

/// Sets budget `key`'s limits (a `None` leaves that meter as it is), keeping what was used
/// and reserved.
pub async fn set(
    fleet: &Fleet,
    key: &str,
    tokens: Option<(u64, u64)>,
    micro_usd: Option<(u64, u64)>,
) -> Result<Budget, String> {
    let apply = |budget: &mut Budget| {
        for (meter, limits) in [
            (&mut budget.tokens, tokens),
            (&mut budget.cost_micro_usd, micro_usd),
        ] {
            if let Some((limit, per_task)) = limits {
                let meter = meter.get_or_insert_with(Meter::default);
                meter.limit = limit;
                meter.per_task = per_task;
            }
        }
        budget.clone()
    };
    if let Some(budget) = update(fleet, key, apply).await? {
        return Ok(budget);
    }
    let mut budget = Budget::default();
    apply(&mut budget);
    let bytes = Bytes::from(serde_json::to_vec(&budget).unwrap_or_default());
    match fleet.budgets.create(key, bytes).await {
        Ok(_) => Ok(budget),
        // Made by someone else in between: set it on theirs.
        Err(err) if err.kind() == kv::CreateErrorKind::AlreadyExists => {
            Box::pin(set(fleet, key, tokens, micro_usd)).await
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_grant_is_the_wanted_share_cut_to_what_is_left_and_found_again_by_its_task() {
        let mut meter = Meter {
            limit: 1000,
            per_task: 400,
            ..Meter::default()
        };
        assert_eq!(reserve_on(&mut meter, "t", "a", None), Ok(400));
        assert_eq!(reserve_on(&mut meter, "t", "b", Some(500)), Ok(500));
        // 100 left: the next run gets only that.
        assert_eq!(reserve_on(&mut meter, "t", "c", None), Ok(100));
        assert_eq!(reserve_on(&mut meter, "t", "d", None), Err(Grant::Wait));
        // A resumed task finds its own grant, reserving nothing more.
        assert_eq!(reserve_on(&mut meter, "t", "b", None), Ok(500));
        assert_eq!(meter.available(), 0);
        meter.reserved.clear();
        meter.used = 1000;
        assert!(
            matches!(reserve_on(&mut meter, "t", "e", None), Err(Grant::Spent(why)) if why.contains("1000 of 1000"))
        );
    }
}
