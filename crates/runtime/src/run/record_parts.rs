//! Record parts the run makes from its plan.

use braincode_protocol::{BrainRef, Mode, PlannedWorker};

/// The brain a run uses, for its `run_start` record.
pub(super) fn brain_ref(id: &str, name: &str, mode: Mode) -> BrainRef {
    BrainRef {
        id: id.to_string(),
        name: name.to_string(),
        mode,
    }
}

/// The plan's workers, for the `routing` record.
pub(super) fn planned_workers(plan: &braincode_brain::RuntimePlan) -> Vec<PlannedWorker> {
    plan.workers
        .iter()
        .map(|w| PlannedWorker {
            role: w.role,
            phase: w.phase,
            goal: w.goal.clone(),
            context_id: w.context_id.to_string(),
            todo_ids: w.todo_ids.clone(),
            model_chain: w.model_chain.clone(),
        })
        .collect()
}
