//! The words of the gate: why a person is asked, and which checks are routine.

use braincode_tools::{PolicyEvaluation, PolicyEvaluationExt};
use serde_json::Value;

use super::PersonOnly;
use crate::agent::GateRequest;

/// Why the checks of an untrusted project need a person, and how to trust it.
pub fn untrusted_checks_reason() -> String {
    "project not trusted: its checks are its own code (test scripts, build scripts, Makefiles); trust it with `braincode trust` (or run with --trust), or approve them for this run in the TUI".to_string()
}

/// Why a person's "for this session" approves a call once only.
pub(super) fn once_only_reason(person_only: &Option<PersonOnly>) -> &'static str {
    if matches!(person_only, Some(PersonOnly::HookAsked(_))) {
        "a call a hook sent to a person is approved per call, never for the session"
    } else {
        "a protected call is approved per call, never for the session"
    }
}

/// The checks after a patch, when their patch kind does not ask for a person (a CI change
/// does: what it changes decides what runs).
pub(super) fn is_routine_check(request: &GateRequest<'_>) -> bool {
    request.tool.name == crate::run::CHECK_TOOL
        && request.call.arguments.get("approvalRequired") != Some(&Value::Bool(true))
}

/// What the approval panel says of a call: why a person is asked (a protected path, a
/// command without a sandbox), what the rules said, and the sub-commands the policy read.
pub(super) fn approval_summary(
    person_only: &Option<PersonOnly>,
    evaluation: &PolicyEvaluation,
) -> String {
    let mut lines = Vec::new();
    if let Some(person) = person_only {
        lines.push(person.reason().to_string());
    }
    lines.push(evaluation.summary());
    for command in &evaluation.commands {
        if command.subcommands.len() > 1
            || command
                .subcommands
                .first()
                .is_some_and(|s| *s != command.text)
        {
            lines.push(format!(
                "{} runs: {}",
                command.origin,
                command.subcommands.join(" · ")
            ));
        }
    }
    lines.join("\n")
}
