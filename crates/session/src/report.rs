//! The final report: the status state machine and the metrics of a run.

use braincode_protocol::{
    CheckStatus, CheckSummary, FinalStatus, JournalEntry, Metrics, PatchSummary, Record,
    ReviewDecision, ReviewVerdict, TokenMetrics, ToolCallCounts,
};

/// How a warning about a review that could not run starts (`review skipped: <model>
/// unavailable (<reason>)`); the human report finds the reason by it.
pub const REVIEW_SKIPPED_PREFIX: &str = "review skipped: ";

/// Facts the status is derived from.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatusInputs<'a> {
    /// The run stopped to ask the user.
    pub needs_clarification: bool,
    /// The review's decision, if a review ran.
    pub review: Option<&'a ReviewDecision>,
    /// A review was needed but could not run (its models were unavailable).
    pub review_skipped: bool,
    /// The checks gate, if it ran.
    pub checks: Option<&'a CheckSummary>,
    /// What changed.
    pub patch: Option<&'a PatchSummary>,
    /// Tool calls made by every agent.
    pub tool_calls: u64,
}

/// The status state machine, evaluated in order: clarification → review blocked → checks
/// failed → the review's decision (an inconclusive one answers) → a needed review that could
/// not run (answered: nobody approved anything, nobody asked for changes) → patch activity
/// without a review (answered: `approved` means a review approved) → tools used (read only)
/// → answered.
pub fn final_status(inputs: StatusInputs<'_>) -> FinalStatus {
    if inputs.needs_clarification {
        return FinalStatus::NeedsClarification;
    }
    if inputs
        .review
        .is_some_and(|r| r.decision == ReviewVerdict::Blocked)
    {
        return FinalStatus::Blocked;
    }
    if inputs
        .checks
        .is_some_and(|c| c.status == CheckStatus::Failed)
    {
        return FinalStatus::ChangesRequested;
    }
    if let Some(review) = inputs.review {
        return match review.decision {
            ReviewVerdict::Approved => FinalStatus::Approved,
            ReviewVerdict::ChangesRequested => FinalStatus::ChangesRequested,
            ReviewVerdict::Blocked => FinalStatus::Blocked,
            // Nobody judged the change: neither approved nor sent back.
            ReviewVerdict::Inconclusive => FinalStatus::Answered,
        };
    }
    if inputs.review_skipped {
        return FinalStatus::Answered;
    }
    if inputs.patch.is_some_and(|p| p.has_patch_activity) {
        // `approved` means a review approved: a change nobody reviewed is only answered.
        return FinalStatus::Answered;
    }
    if inputs.tool_calls > 0 {
        return FinalStatus::ReadOnly;
    }
    FinalStatus::Answered
}

/// The cost of a run's calls in US dollars, when at least one of them had a price and they
/// cost anything (the embedded model's calls are free: no "$0.0000" on every line).
pub fn cost_usd(tokens: &TokenMetrics) -> Option<f64> {
    (tokens.calls > tokens.unpriced_calls && tokens.cost_micro_usd > 0)
        .then(|| tokens.cost_micro_usd as f64 / 1_000_000.0)
}

/// A cost for people: cents when it is at least one, else four decimals (`$1.23`, `$0.0012`).
pub fn fmt_cost(usd: f64) -> String {
    if usd >= 0.01 {
        format!("${usd:.2}")
    } else {
        fmt_cost_fixed(usd)
    }
}

/// A cost with four decimals whatever its size (`$1.2300`), for table columns and limits that
/// are read digit by digit.
pub fn fmt_cost_fixed(usd: f64) -> String {
    format!("${usd:.4}")
}

/// Token totals of a run, added up one `token_usage` record at a time.
#[derive(Debug, Clone, Default)]
pub struct TokenTally {
    metrics: TokenMetrics,
}

impl TokenTally {
    /// Adds one record.
    pub fn add(&mut self, usage: &braincode_protocol::TokenUsage) {
        let metrics = &mut self.metrics;
        metrics.calls += 1;
        metrics.total.add(&usage.usage);
        match usage.cost_micro_usd {
            Some(cost) => metrics.cost_micro_usd += cost,
            None => metrics.unpriced_calls += 1,
        }
        let phase = usage.phase.map_or("unknown", |p| p.as_str());
        metrics
            .by_phase
            .entry(phase.to_string())
            .or_default()
            .add(&usage.usage);
        let role = usage.role.map_or("unknown", |r| r.as_str());
        metrics
            .by_role
            .entry(role.to_string())
            .or_default()
            .add(&usage.usage);
        let model = usage.model_id.as_deref().unwrap_or("unknown");
        metrics
            .by_model
            .entry(model.to_string())
            .or_default()
            .add(&usage.usage);
    }

    /// The sum over every call so far.
    pub fn total(&self) -> braincode_protocol::Usage {
        self.metrics.total
    }

    /// What the calls cost in US dollars (`None`: nothing priced, or free).
    pub fn cost_usd(&self) -> Option<f64> {
        cost_usd(&self.metrics)
    }

    /// The totals so far.
    pub fn metrics(&self) -> TokenMetrics {
        self.metrics.clone()
    }
}

/// Sums the `token_usage` records of a run into report metrics.
pub fn token_metrics(entries: &[JournalEntry]) -> TokenMetrics {
    let mut tally = TokenTally::default();
    for entry in entries {
        if let Record::TokenUsage(usage) = &entry.record {
            tally.add(usage);
        }
    }
    tally.metrics()
}

/// Report metrics from the run's records and tool counters.
pub fn metrics(entries: &[JournalEntry], tool_calls: ToolCallCounts, duration_ms: u64) -> Metrics {
    Metrics {
        tokens: token_metrics(entries),
        tool_calls,
        duration_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_show_cents_or_four_decimals() {
        assert_eq!(fmt_cost(1.234), "$1.23");
        assert_eq!(fmt_cost(0.0012), "$0.0012");
        assert_eq!(fmt_cost_fixed(1.23), "$1.2300");
        assert_eq!(fmt_cost_fixed(0.0), "$0.0000");
    }

    fn review(decision: ReviewVerdict) -> ReviewDecision {
        ReviewDecision::of(decision)
    }

    fn checks(status: CheckStatus) -> CheckSummary {
        CheckSummary {
            status,
            reason: None,
            patch_kind: None,
            risk_tier: None,
            selected_scripts: vec![],
            review_required: false,
            results: vec![],
            written_files: Vec::new(),
            setup: Vec::new(),
            network: Vec::new(),
        }
    }

    #[test]
    fn status_machine_follows_its_order() {
        let approved = review(ReviewVerdict::Approved);
        let blocked = review(ReviewVerdict::Blocked);
        let failed = checks(CheckStatus::Failed);
        let patch = PatchSummary {
            has_patch_activity: true,
            ..Default::default()
        };
        let base = StatusInputs::default();
        assert_eq!(final_status(base), FinalStatus::Answered);
        assert_eq!(
            final_status(StatusInputs {
                tool_calls: 3,
                ..base
            }),
            FinalStatus::ReadOnly
        );
        assert_eq!(
            final_status(StatusInputs {
                patch: Some(&patch),
                tool_calls: 3,
                ..base
            }),
            FinalStatus::Answered,
            "a change nobody reviewed is not approved"
        );
        assert_eq!(
            final_status(StatusInputs {
                review: Some(&review(ReviewVerdict::Inconclusive)),
                patch: Some(&patch),
                ..base
            }),
            FinalStatus::Answered,
            "an inconclusive review approves nothing and asks for nothing"
        );
        assert_eq!(
            final_status(StatusInputs {
                review: Some(&approved),
                checks: Some(&failed),
                ..base
            }),
            FinalStatus::ChangesRequested,
            "failed checks override an approval"
        );
        assert_eq!(
            final_status(StatusInputs {
                review: Some(&blocked),
                checks: Some(&failed),
                ..base
            }),
            FinalStatus::Blocked
        );
        assert_eq!(
            final_status(StatusInputs {
                needs_clarification: true,
                review: Some(&blocked),
                ..base
            }),
            FinalStatus::NeedsClarification
        );
        assert_eq!(
            final_status(StatusInputs {
                review: Some(&review(ReviewVerdict::ChangesRequested)),
                ..base
            }),
            FinalStatus::ChangesRequested
        );
        assert_eq!(
            final_status(StatusInputs {
                review_skipped: true,
                patch: Some(&patch),
                tool_calls: 3,
                ..base
            }),
            FinalStatus::Answered,
            "a review that could not run approves nothing"
        );
        assert_eq!(
            final_status(StatusInputs {
                review_skipped: true,
                checks: Some(&failed),
                ..base
            }),
            FinalStatus::ChangesRequested,
            "failed checks still count"
        );
    }
}
