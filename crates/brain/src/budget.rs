//! A brain's own hard limits per run.

use serde::{Deserialize, Serialize};

/// A brain's hard limits per run (`budget` in brains.json). When one is reached the run stops
/// cleanly and ends `budget_exceeded`; `--max-tokens` / `--max-cost` can only lower them. A
/// child preset's fields replace its parent's one by one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrainBudget {
    /// Most tokens per run (input, output and cache, every call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Most cost per run, in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

// The cost is a finite number (JSON has no NaN, and the loader refuses negative ones), so
// equality is reflexive and the brain types keep `Eq`.
impl Eq for BrainBudget {}

impl BrainBudget {
    /// `self` with `child`'s fields where it sets them.
    pub fn merged_with(self, child: BrainBudget) -> BrainBudget {
        BrainBudget {
            max_tokens: child.max_tokens.or(self.max_tokens),
            max_cost_usd: child.max_cost_usd.or(self.max_cost_usd),
        }
    }

    /// The field that breaks a rule (a limit must be positive), if any.
    pub fn invalid_field(&self) -> Option<&'static str> {
        if self.max_tokens == Some(0) {
            return Some("maxTokens");
        }
        match self.max_cost_usd {
            Some(cost) if !(cost.is_finite() && cost > 0.0) => Some("maxCostUsd"),
            _ => None,
        }
    }
}
