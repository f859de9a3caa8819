//! Prompt builders for workers, the primary and the reviewer.
//!
//! Isolation (DESIGN invariant 1) is enforced here: a worker prompt holds exactly the support
//! section, the original request, the results of its declared upstream dependencies, its
//! handoff JSON and the reply shape. The primary and the reviewer see worker *results* (typed
//! fields), never a worker's transcript.

use std::fmt::Write as _;

use braincode_context::{HandoffPacket, WorkerResult, clip_chars};
use braincode_protocol::{CheckStatus, CheckSummary, PatchSummary, Role};

/// Longest worker summary forwarded to another agent.
const FORWARDED_SUMMARY_CHARS: usize = 4_000;
/// Longest single risk, question or artifact line forwarded.
const FORWARDED_ITEM_CHARS: usize = 400;

/// A finished worker, as other agents see it.
#[derive(Debug, Clone)]
pub struct ForwardedResult {
    /// The worker's role.
    pub role: Role,
    /// Its typed result.
    pub result: WorkerResult,
    /// A review verdict, when the worker was the reviewer.
    pub verdict: Option<String>,
    /// For a parallel writer whose change was not merged: what happened, and the conflict's
    /// three sides for the primary to resolve.
    pub merge_note: Option<String>,
}

/// Renders worker results as a compact, typed list (never raw replies).
pub fn format_results(results: &[ForwardedResult]) -> String {
    let mut out = String::new();
    for forwarded in results {
        let result = &forwarded.result;
        let status = forwarded
            .verdict
            .clone()
            .unwrap_or_else(|| result.progress.status.as_str().to_string());
        let _ = writeln!(out, "### {} ({status})", forwarded.role);
        let _ = writeln!(
            out,
            "{}",
            clip_chars(result.summary.trim(), FORWARDED_SUMMARY_CHARS)
        );
        let list = |out: &mut String, label: &str, items: &[String]| {
            if !items.is_empty() {
                let _ = writeln!(out, "{label}:");
                for item in items.iter().take(8) {
                    let _ = writeln!(out, "- {}", clip_chars(item.trim(), FORWARDED_ITEM_CHARS));
                }
            }
        };
        let artifacts: Vec<String> = result
            .artifacts
            .iter()
            .map(|a| match &a.label {
                Some(label) => format!("{} ({label})", a.uri),
                None => a.uri.clone(),
            })
            .collect();
        list(&mut out, "Artifacts", &artifacts);
        list(&mut out, "Risks", &result.risks);
        list(&mut out, "Open questions", &result.next_questions);
        if let Some(note) = &forwarded.merge_note {
            let _ = writeln!(out, "Merge: {note}");
        }
        out.push('\n');
    }
    out
}

/// What every prompt shares: environment and project/user support.
#[derive(Debug, Clone)]
pub struct SharedSections {
    /// Environment lines.
    pub environment: String,
    /// AGENTS.md, skills and MCP names.
    pub support: String,
}

impl SharedSections {
    fn write(&self, out: &mut String) {
        let _ = writeln!(out, "## Environment\n{}", self.environment.trim());
        if !self.support.trim().is_empty() {
            let _ = writeln!(
                out,
                "\n## Project and user support\n{}",
                self.support.trim()
            );
        }
    }
}

fn reply_shape(handoff: &HandoffPacket) -> String {
    format!(
        "Reply with ONE JSON object and nothing else:\n{{\"taskId\":\"{}\",\"parentId\":\"{}\",\"progress\":{{\"status\":\"completed|blocked\",\"summary\":\"one line\"}},\"summary\":\"what you found or did\",\"artifacts\":[{{\"kind\":\"file\",\"uri\":\"path\",\"label\":\"why it matters\"}}],\"risks\":[\"...\"],\"nextQuestions\":[\"...\"]}}",
        handoff.task.id, handoff.task.parent_id
    )
}

/// The prompt of an isolated support worker.
pub fn worker_prompt(
    shared: &SharedSections,
    request: &str,
    upstream: &[ForwardedResult],
    handoff: &HandoffPacket,
    tool_note: &str,
    hook_context: &[String],
) -> String {
    let mut out = format!("{}\n\n", braincode_brain::WORKER_HANDOFF_OPENING);
    shared.write(&mut out);
    let _ = writeln!(out, "\n## Original request\n{}", request.trim());
    if !upstream.is_empty() {
        let _ = writeln!(
            out,
            "\n## Results of the workers this task depends on\n{}",
            format_results(upstream).trim_end()
        );
    }
    if !hook_context.is_empty() {
        let _ = writeln!(out, "\n## Hook additional context");
        for line in hook_context {
            let _ = writeln!(out, "- {}", line.trim());
        }
    }
    let _ = writeln!(out, "\n## Tool access\n{tool_note}");
    let handoff_json = serde_json::to_string_pretty(handoff).unwrap_or_else(|_| "{}".into());
    let _ = writeln!(out, "\n## Handoff\n```json\n{handoff_json}\n```");
    let _ = writeln!(out, "\n## Reply\n{}", reply_shape(handoff));
    out
}

/// The primary agent's prompt.
pub fn primary_prompt(
    shared: &SharedSections,
    request: &str,
    tool_names: &[String],
    results: &[ForwardedResult],
    dispatch_note: Option<&str>,
    project_overview: Option<&str>,
) -> String {
    let mut out = String::new();
    shared.write(&mut out);
    if let Some(overview) = project_overview.filter(|o| !o.trim().is_empty()) {
        let _ = writeln!(out, "\n## Project overview\n{}", overview.trim());
    }
    let _ = writeln!(out, "\n## Tools");
    if tool_names.is_empty() && project_overview.is_none() && results.is_empty() {
        let _ = writeln!(out, "None: answer directly.");
    } else if tool_names.is_empty() {
        let _ = writeln!(
            out,
            "No tools are available in this run: answer from the request and the worker results."
        );
    } else {
        let _ = writeln!(out, "Available: {}.", tool_names.join(", "));
        let _ = writeln!(
            out,
            "Read before you change anything; batch independent reads; never read files under ~/.braincode (they hold secrets and settings)."
        );
    }
    if let Some(note) = dispatch_note {
        let _ = writeln!(out, "{note}");
    }
    let _ = writeln!(
        out,
        "\n## Response style\nReply in the user's language. Be concise and concrete: say what you did or found, with file paths, and what is left."
    );
    let _ = writeln!(out, "\n## Request\n{}", request.trim());
    if !results.is_empty() {
        let _ = writeln!(
            out,
            "\n## Results from specialist workers\n{}",
            format_results(results).trim_end()
        );
        let _ = writeln!(
            out,
            "\nThe worker results are advisory: check them against the code, and resolve any conflict between them explicitly."
        );
    }
    out
}

/// The reviewer's prompt.
#[allow(clippy::too_many_arguments)]
pub fn review_prompt(
    shared: &SharedSections,
    request: &str,
    primary_answer: &str,
    results: &[ForwardedResult],
    patch: Option<&PatchSummary>,
    diff: &str,
    diff_truncated: bool,
    checks: Option<&CheckSummary>,
    handoff: &HandoffPacket,
) -> String {
    let mut out = format!(
        "{} You did not write it; judge only what is in front of you.\n\n",
        braincode_brain::REVIEW_OPENING
    );
    shared.write(&mut out);
    let _ = writeln!(out, "\n## Original request\n{}", request.trim());
    let _ = writeln!(
        out,
        "\n## Primary agent's answer\n{}",
        clip_chars(primary_answer.trim(), 8_000)
    );
    if !results.is_empty() {
        let _ = writeln!(
            out,
            "\n## Worker results\n{}",
            format_results(results).trim_end()
        );
    }
    let _ = writeln!(out, "\n## Changes");
    match patch {
        Some(patch) if patch.has_patch_activity => {
            for file in &patch.changed_files {
                let _ = writeln!(out, "- {} {}", file.status.trim(), file.path);
            }
            if !diff.trim().is_empty() {
                let _ = writeln!(out, "```diff\n{}\n```", diff.trim_end());
            }
            if diff_truncated {
                let _ = writeln!(
                    out,
                    "(the diff was truncated: treat what you could not see as a residual risk)"
                );
            }
        }
        Some(_) => {
            let _ = writeln!(out, "No file changed in this run.");
        }
        None => {
            let _ = writeln!(
                out,
                "The project is not a git repository: changes could not be collected (a residual risk)."
            );
        }
    }
    write_checks(&mut out, checks);
    let handoff_json = serde_json::to_string_pretty(handoff).unwrap_or_else(|_| "{}".into());
    let _ = writeln!(out, "\n## Handoff\n```json\n{handoff_json}\n```");
    let _ = writeln!(
        out,
        "\n## Reply\nFindings first, most severe first, with file and line. No style nitpicks. Reply with ONE JSON object: the worker result fields (taskId \"{}\", parentId \"{}\", progress, summary, artifacts, risks, nextQuestions) plus \"decision\": \"approved|changes_requested|blocked\", \"confidence\" (0..1), \"rationale\", \"findings\": [{{\"severity\":\"low|medium|high\",\"issue\":\"...\",\"file\":\"...\",\"line\":1,\"suggestion\":\"...\"}}], \"requiredChanges\", \"blockingIssues\", \"residualRisks\". Approve only when nothing required remains.",
        handoff.task.id, handoff.task.parent_id
    );
    out
}

/// The checks section of the reviewer's prompt: what ran, what failed (with the end of its
/// output), or why nothing ran.
fn write_checks(out: &mut String, checks: Option<&CheckSummary>) {
    let _ = writeln!(out, "\n## Checks");
    let Some(checks) = checks else {
        let _ = writeln!(
            out,
            "No checks ran (nothing changed, or the project has none): a residual risk if code changed."
        );
        return;
    };
    if let Some(tier) = &checks.risk_tier {
        let kind = checks.patch_kind.as_deref().unwrap_or("unknown");
        let _ = writeln!(out, "Patch kind {kind}, risk tier {tier}.");
    }
    let reason = checks.reason.as_deref().unwrap_or_default();
    match checks.status {
        CheckStatus::Skipped => {
            let _ = writeln!(
                out,
                "Checks were skipped: {reason}. Treat what they would have verified as a residual risk."
            );
        }
        CheckStatus::Passed | CheckStatus::Failed | CheckStatus::CouldNotRun => {
            for result in &checks.results {
                if let Some(cause) = &result.environment {
                    let _ = writeln!(
                        out,
                        "- {} `{}`: could not run (its environment, not the code): {cause}",
                        result.name, result.command
                    );
                    continue;
                }
                let verdict = if result.passed { "passed" } else { "FAILED" };
                let _ = writeln!(out, "- {} `{}`: {verdict}", result.name, result.command);
                if !result.passed && !result.output_tail.trim().is_empty() {
                    let _ = writeln!(
                        out,
                        "```\n{}\n```",
                        crate::run::checks::fix_excerpt(&result.output_tail)
                    );
                }
            }
            if checks.status == CheckStatus::Failed {
                let _ = writeln!(out, "Failed checks mean changes are required.");
            }
            if checks.results.iter().any(|r| r.environment.is_some()) {
                let _ = writeln!(
                    out,
                    "Checks that could not run are not the change's fault: treat what they would have verified as a residual risk."
                );
            }
        }
    }
}
