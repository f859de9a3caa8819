//! Hard budgets (`--max-tokens`, `--max-cost`): a subscriber that adds up every `token_usage`
//! record of the run (every agent: router, workers, primary, reviewer) and, once a limit is
//! reached, journals the stop right after the record that crossed it and cancels the run with
//! a budget reason. The run then stops like a cancelled one — workers cancelled, nothing
//! further asked of any model — and ends `budget_exceeded` with one answer that says what was
//! done.
//!
//! A replay does not count: it stops at the journaled crossing (same call, same reason), once
//! everything the journal has was served (see [`crate::tape::Tape::stop_reached`]), so the
//! order in which parallel agents are replayed cannot move the stop.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use braincode_protocol::{ModelPricing, Record, RunEvent};
use tokio_util::sync::CancellationToken;

use crate::sink::EventSubscriber;

/// How a budget's cancel reason begins (what tells it from a Ctrl-C).
pub const BUDGET_REACHED: &str = "budget reached";

/// What follows the reason in the warning journaled at the crossing.
pub const BUDGET_STOP_SUFFIX: &str = ": the run stopped";

/// A run's limits.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunBudget {
    /// Most tokens (input, output and cache, every call of the run).
    pub max_tokens: Option<u64>,
    /// Most cost in US dollars (calls of models without a price count as free and are named
    /// in a warning).
    pub max_cost_usd: Option<f64>,
}

impl RunBudget {
    /// The lower of each limit of `self` and the brain's `budget` (a flag can only lower a
    /// brain's limit, never lift it).
    pub fn within(self, budget: braincode_brain::BrainBudget) -> RunBudget {
        fn lower<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        RunBudget {
            max_tokens: lower(self.max_tokens, budget.max_tokens),
            max_cost_usd: lower(self.max_cost_usd, budget.max_cost_usd),
        }
    }

    /// Whether no limit is set.
    pub fn is_unlimited(&self) -> bool {
        self.max_tokens.is_none() && self.max_cost_usd.is_none()
    }
}

#[derive(Debug, Default)]
struct Spent {
    tokens: u64,
    cost_usd: f64,
    unpriced: Vec<String>,
}

/// Watches a run's `token_usage` records against its [`RunBudget`].
pub(crate) struct BudgetWatch {
    /// The request's limits within the brain's.
    budget: RunBudget,
    prices: HashMap<String, ModelPricing>,
    spent: Mutex<Spent>,
    cancel: CancellationToken,
    reason: Arc<OnceLock<String>>,
    /// Warnings to journal right after the record that caused them.
    follow: Mutex<Vec<Record>>,
    /// A replay's tape: the stop comes from the journal, not from counting.
    tape: Option<Arc<crate::tape::Tape>>,
}

impl BudgetWatch {
    pub fn new(
        budget: RunBudget,
        prices: HashMap<String, ModelPricing>,
        cancel: CancellationToken,
        reason: Arc<OnceLock<String>>,
        tape: Option<Arc<crate::tape::Tape>>,
    ) -> Self {
        let tape = tape.filter(|tape| tape.is_strict());
        if let Some(tape) = &tape {
            tape.arm_stop(cancel.clone());
        }
        Self {
            budget,
            prices,
            spent: Mutex::new(Spent::default()),
            cancel,
            reason,
            follow: Mutex::new(Vec::new()),
            tape,
        }
    }

    /// Applies the run's effective limits (the request's, lowered by the brain's).
    fn warn(&self, message: String) {
        lock(&self.follow).push(Record::Warning(braincode_protocol::Warning { message }));
    }

    /// Stops the run: the reason, its warning right after the crossing record, the cancel.
    fn stop(&self, reason: String) {
        if self.reason.set(reason.clone()).is_ok() {
            self.warn(format!("{reason}{BUDGET_STOP_SUFFIX}"));
            match &self.tape {
                Some(tape) => tape.stop_reached(),
                None => self.cancel.cancel(),
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl EventSubscriber for BudgetWatch {
    fn on_event(&self, event: &RunEvent) {
        let RunEvent::Record { entry, .. } = event else {
            return;
        };
        let Record::TokenUsage(usage) = &entry.record else {
            return;
        };
        if let Some(tape) = &self.tape {
            // A replay stops where the run stopped, with the reason it journaled.
            if let Some(stop) = tape.budget_stop()
                && usage.agent_session_id.as_deref() == Some(stop.agent_session_id.as_str())
                && usage.turn_id.as_deref() == Some(stop.turn_id.as_str())
            {
                self.stop(stop.reason.clone());
            }
            return;
        }
        let model = usage.model_id.clone().unwrap_or_default();
        let counts = &usage.usage;
        let tokens = counts
            .total
            .max(counts.input + counts.output + counts.cache_read + counts.cache_write);
        let budget = self.budget;
        if budget.is_unlimited() {
            return;
        }
        let mut spent = lock(&self.spent);
        spent.tokens += tokens;
        match self.prices.get(&model) {
            Some(price) => spent.cost_usd += price.cost(counts),
            None if budget.max_cost_usd.is_some() && !spent.unpriced.contains(&model) => {
                spent.unpriced.push(model.clone());
                self.warn(format!(
                    "--max-cost: {model} has no price in models.json, so its calls are not counted against the budget"
                ));
            }
            None => {}
        }
        let over = match (budget.max_tokens, budget.max_cost_usd) {
            (Some(max), _) if spent.tokens >= max => Some(format!(
                "{BUDGET_REACHED}: {} tokens used, the limit is {max}",
                spent.tokens
            )),
            (_, Some(max)) if spent.cost_usd >= max => Some(format!(
                "{BUDGET_REACHED}: {} spent, the limit is {}",
                crate::report::fmt_cost_fixed(spent.cost_usd),
                crate::report::fmt_cost_fixed(max)
            )),
            _ => None,
        };
        drop(spent);
        if let Some(reason) = over {
            self.stop(reason);
        }
    }

    fn follow_ups(&self) -> Vec<Record> {
        std::mem::take(&mut *lock(&self.follow))
    }
}
