//! The [`RequestLog`] of a run: every request the scripted models received, as
//! [`ModelCall`]s (what the matchers saw, the request, the rule that answered).
//!
//! Who is asking ([`CallKind`]) and the role of a request's prompt come from the shared kit
//! (`braincode-scripted`), as the benches read them.

use std::collections::BTreeMap;

pub use braincode_test_support::{CallKind, Matcher, ModelCall};

/// Every request the scripted models received, in arrival order.
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    calls: Vec<ModelCall>,
    unmatched: usize,
}

impl RequestLog {
    /// Every request.
    pub fn calls(&self) -> &[ModelCall] {
        &self.calls
    }
    /// How many requests there were.
    pub fn total(&self) -> usize {
        self.calls.len()
    }
    /// How many requests the rule whose matcher is named `name` answered.
    pub fn hits(&self, name: &str) -> usize {
        self.calls
            .iter()
            .filter(|c| c.answered_by.as_deref() == Some(name))
            .count()
    }
    /// How many requests `matcher` matches (whichever rule answered them).
    pub fn count(&self, matcher: &Matcher) -> usize {
        self.calls.iter().filter(|c| matcher.matches(c)).count()
    }
    /// How many requests came from `kind`.
    pub fn of_kind(&self, kind: CallKind) -> usize {
        self.calls.iter().filter(|c| c.kind() == kind).count()
    }
    /// How many requests went to model `id`.
    pub fn to_model(&self, id: &str) -> usize {
        self.calls
            .iter()
            .filter(|c| c.model.as_deref() == Some(id))
            .count()
    }
    /// How many requests no rule answered.
    pub fn unmatched(&self) -> usize {
        self.unmatched
    }
    /// The log of these calls (those no rule answered count as unmatched).
    pub(super) fn of(calls: Vec<ModelCall>) -> Self {
        let unmatched = calls.iter().filter(|c| c.answered_by.is_none()).count();
        Self { calls, unmatched }
    }
    /// Requests per model id.
    pub fn per_model(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for call in &self.calls {
            *counts
                .entry(call.model.clone().unwrap_or_default())
                .or_insert(0) += 1;
        }
        counts
    }
}
