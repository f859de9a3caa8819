//! What a fold says so far: the read side of [`RunState`].

use braincode_protocol::{
    BrainRef, CheckSummary, Clarification, PatchSummary, ReviewDecision, RoutingRecord, Todo,
    ToolCallCounts, Usage,
};

use super::{RunState, WorkerState, is_unfinished_review};

impl RunState {
    /// Whether the run's terminal record was folded in.
    pub fn is_finished(&self) -> bool {
        self.terminal.is_some()
    }

    /// The run id of the `run_start` record.
    pub fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }

    /// When the run started (the `run_start` record's timestamp), epoch milliseconds.
    pub fn started_at(&self) -> Option<i64> {
        self.started_at
    }

    /// When the latest record folded in was written, epoch milliseconds (for a
    /// [finished](Self::is_finished) run, normally its terminal record's time).
    pub fn last_at(&self) -> Option<i64> {
        self.last_at
    }

    /// The Brain of the `run_start` record, when it names one.
    pub fn brain(&self) -> Option<&BrainRef> {
        self.brain.as_ref()
    }

    /// The prompt of the `run_start` record.
    pub fn task(&self) -> &str {
        &self.task
    }

    /// The plan's `routing` record, once journaled.
    pub fn routing(&self) -> Option<&RoutingRecord> {
        self.routing.as_ref()
    }

    /// The todos as they stand.
    pub fn todos(&self) -> &[Todo] {
        &self.todos
    }

    /// Whether the run's tools changed a file so far (its `file_change` records).
    pub fn changed_files(&self) -> bool {
        self.changes.changed_any()
    }

    /// Tokens used so far, split by phase, role and model.
    pub fn token_metrics(&self) -> braincode_protocol::TokenMetrics {
        self.tokens.metrics()
    }

    /// Tokens used so far by every model call of the run.
    pub fn tokens_total(&self) -> Usage {
        self.tokens.total()
    }

    /// What the run's calls cost so far in US dollars (`None`: no call had a price).
    pub fn cost_usd(&self) -> Option<f64> {
        self.tokens.cost_usd()
    }

    /// The workers seen so far, plan order first.
    pub fn workers(&self) -> &[WorkerState] {
        &self.workers
    }

    /// The warnings so far.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The patch summary, once journaled.
    pub fn patch(&self) -> Option<&PatchSummary> {
        self.patch.as_ref()
    }

    /// The review decision, once journaled.
    pub fn review(&self) -> Option<&ReviewDecision> {
        self.review.as_ref()
    }

    /// The checks summary, once journaled.
    pub fn checks(&self) -> Option<&CheckSummary> {
        self.checks.as_ref()
    }

    /// Fix passes made so far, once one started.
    pub fn fix_iterations(&self) -> Option<u32> {
        self.fix_iterations
    }

    /// The clarification asked for, once journaled.
    pub fn clarification(&self) -> Option<&Clarification> {
        self.clarification.as_ref()
    }

    /// Whether a review worker ran (or was needed) and gave no decision.
    pub fn review_skipped(&self) -> bool {
        self.review.is_none() && self.workers.iter().any(is_unfinished_review)
    }

    /// Whether the report lists `worker` as `skipped`: a review that ended without a decision.
    pub fn is_skipped(&self, worker: &WorkerState) -> bool {
        is_unfinished_review(worker) && self.review_skipped()
    }

    /// Tool calls: the closing count when journaled, else the count of ended calls.
    pub fn tool_calls(&self) -> ToolCallCounts {
        self.tool_call_record
            .clone()
            .unwrap_or_else(|| self.tool_calls.clone())
    }
}
