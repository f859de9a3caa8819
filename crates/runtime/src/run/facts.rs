//! The facts a run reads from the repository itself (no model), put before the embedded
//! model's answer to a question about the codebase.

use super::{primary, state};

/// A question about the repository answered by the embedded model: the facts read from the
/// repository without a model (journaled, so a replay shows the same) come first, and the
/// model's prose is labelled as the model's.
pub(super) fn with_repo_facts(shared: &state::RunShared, answer: &mut primary::PrimaryAnswer) {
    if shared.conversational
        || answer.model != braincode_brain::LOCAL_MODEL_ID
        || !braincode_brain::asks_about_the_codebase(&shared.request)
    {
        return;
    }
    let record = match shared.tape.as_deref() {
        Some(tape) if tape.is_strict() => match tape.repo_facts() {
            Some(record) => record.clone(),
            None => return,
        },
        _ => {
            let checks: Vec<String> = braincode_tools::checks::list(
                &shared.project_root,
                &shared.checks.config,
                &shared.checks.overrides,
            )
            .checks
            .iter()
            .map(|c| c.display.clone())
            .collect();
            braincode_protocol::RepoFacts {
                facts: crate::repo_facts::gather(&shared.project_root, &checks),
                // Paths the model names that the repository does not have.
                missing_paths: crate::repo_facts::mentioned_paths(
                    &shared.project_root,
                    &answer.text,
                )
                .into_iter()
                .filter(|(_, exists)| !exists)
                .map(|(path, _)| path)
                .collect(),
            }
        }
    };
    if record.facts.is_empty() {
        return;
    }
    shared
        .sink
        .record(braincode_protocol::Record::RepoFacts(record.clone()));
    let listed: Vec<String> = record.facts.iter().map(|f| format!("- {f}")).collect();
    let mut text = format!(
        "Facts read from the repository (not from a model):\n{}\n\nThe embedded model's answer ({}, 135M parameters: check it against the facts above):\n{}",
        listed.join("\n"),
        braincode_brain::LOCAL_MODEL_ID,
        answer.text.trim()
    );
    if !record.missing_paths.is_empty() {
        text.push_str(&format!(
            "\n\nNot in this repository (the model made these paths up): {}",
            record.missing_paths.join(", ")
        ));
    }
    answer.text = text;
}
