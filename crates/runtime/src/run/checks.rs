//! The checks gate after a patch: the changed files select the project's checks (any
//! language), one approval covers them, and they run one after another through the same
//! command path as the agent's tools — the permission policy, the approval gate, the OS
//! sandbox, a process group per check, a timeout and a capped output tail. The outcome is a
//! `check_summary` record.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braincode_llm::ToolCall;
use braincode_protocol::{
    CheckResult, CheckStatus, CheckSummary, CheckSummaryRecord, PatchSummary, Record,
};
use braincode_tools::checks::{CheckKind, CheckSpec, Selection, environment_cause};
use braincode_tools::exec::process::{confined_command, run_captured};
use braincode_tools::{ToolDefinition, ToolPermission, ToolRisk};
use serde_json::json;

use super::finish::RunError;
use super::state::RunShared;
use crate::agent::{GateOutcome, GateRequest, ToolGate};
use crate::tape::Tape;

/// The name the checks' approval request carries (the gate, the journal and a person see it).
pub const CHECK_TOOL: &str = "run_check";

/// The most of a failing check's output a fix prompt quotes (its tail).
pub(crate) const FIX_OUTPUT_CHARS: usize = 1_600;

/// The synthetic tool the checks' approval request is made for: it runs commands.
fn check_tool() -> ToolDefinition {
    ToolDefinition {
        name: CHECK_TOOL.into(),
        description: "Run the project's checks on the change".into(),
        parameters: json!({"type": "object"}),
        permission: ToolPermission::Execute,
        risk: ToolRisk::High,
    }
}

/// The changed paths of a patch, as the selection reads them.
fn changed_paths(patch: &PatchSummary) -> Vec<&str> {
    patch
        .changed_files
        .iter()
        .map(|file| file.path.as_str())
        .collect()
}

/// The command line of a check as shown (with its directory when it is not the root).
fn shown_command(check: &CheckSpec) -> String {
    if check.dir.is_empty() {
        check.display.clone()
    } else {
        format!("(cd {} && {})", check.dir, check.display)
    }
}

/// Selects, approves and runs the checks of `patch`; journals and returns their summary.
/// What the checks themselves wrote is taken into `baseline`, so later passes do not count
/// it as the agent's. Only cancellation is an error: a check that cannot run is a failed or
/// skipped check.
pub(crate) async fn run_checks(
    shared: &Arc<RunShared>,
    patch: &PatchSummary,
    fix_iteration: u32,
    baseline: Option<&mut crate::git::PatchBaseline>,
) -> Result<CheckSummary, RunError> {
    let summary = match shared.tape.as_deref().filter(|tape| tape.is_strict()) {
        // A replay runs nothing: the journal says what the checks did.
        Some(tape) => served(shared, tape, fix_iteration),
        None => live_checks(shared, patch, fix_iteration, baseline).await?,
    };
    shared.sink.record(Record::CheckSummary(CheckSummaryRecord {
        summary: summary.clone(),
        attempt: None,
        fix_iteration: Some(fix_iteration),
    }));
    Ok(summary)
}

fn served(shared: &RunShared, tape: &Tape, fix_iteration: u32) -> CheckSummary {
    if let Some(approval) = tape.check_approval(fix_iteration) {
        shared.sink.record(Record::ToolApprovalDecision(approval));
    }
    tape.checks(fix_iteration).unwrap_or_else(|| CheckSummary {
        status: CheckStatus::Skipped,
        reason: Some("replay: the journal has no check summary for this pass".into()),
        patch_kind: None,
        risk_tier: None,
        selected_scripts: Vec::new(),
        review_required: false,
        results: Vec::new(),
        written_files: Vec::new(),
        setup: Vec::new(),
        network: Vec::new(),
    })
}

async fn live_checks(
    shared: &Arc<RunShared>,
    patch: &PatchSummary,
    fix_iteration: u32,
    baseline: Option<&mut crate::git::PatchBaseline>,
) -> Result<CheckSummary, RunError> {
    let changed = changed_paths(patch);
    let select = || {
        braincode_tools::checks::select(
            &shared.project_root,
            &changed,
            &shared.checks.config,
            &shared.checks.overrides,
        )
    };
    let mut selection = select();
    let mut summary = selection.summary();
    if selection.skipped.is_some() {
        return Ok(summary);
    }
    let missing = missing_results(&selection);
    if selection.checks.is_empty() {
        summary.results = missing;
        summary.status = if summary.results.is_empty() {
            CheckStatus::Skipped
        } else {
            CheckStatus::of_results(&summary.results)
        };
        return Ok(summary);
    }
    if !shared.checks.trusted && !shared.gate.has_person() {
        // The project's checks are its own code, and nobody is here to approve them: they
        // are not run, and the report says how to trust the project (a `checks skipped`
        // warning made from this summary, so a replay says it alike).
        summary.reason = Some(crate::approval::untrusted_checks_reason());
        return Ok(summary);
    }
    let call_id = format!("patch-checks:{}:{fix_iteration}", shared.sink.session_id());
    if let Err(reason) = approve(shared, &shared.gate, call_id, &selection).await {
        summary.reason = Some(reason);
        return Ok(summary);
    }
    // What the checks themselves write (a `Cargo.lock`, a coverage file) is theirs: the tree
    // is looked at before and after them.
    let before = crate::git::PatchBaseline::capture(&shared.project_root).await;
    // The project's dependencies, set up once (`--fetch-deps`, checks.fetchDependencies):
    // what the step writes (`.venv`, `node_modules`) is the checks', like their other files.
    let steps = crate::deps::steps_for(&shared.project_root, &selection.checks);
    let fetch = match shared.checks.config.fetch_dependencies {
        braincode_tools::FetchDependencies::Always => true,
        braincode_tools::FetchDependencies::Never => false,
        braincode_tools::FetchDependencies::Ask => {
            !steps.is_empty() && ask_once(shared, &steps, fix_iteration).await
        }
    };
    if fetch && !steps.is_empty() {
        shared.sink.status("checks: setting up dependencies");
        match crate::deps::set_up(
            &shared.home,
            &shared.project_root,
            &shared.settings,
            &steps,
            crate::deps::registries_allowlist(&shared.settings),
            &shared.cancel,
        )
        .await
        {
            Ok(report) => {
                // A `.venv` the step made is where the checks now run from.
                if report.ran() {
                    selection = select();
                    summary.selected_scripts =
                        selection.checks.iter().map(|c| c.name.clone()).collect();
                }
                summary.setup = report.results;
                summary.network = report.network;
            }
            Err(reason) if shared.cancel.is_cancelled() => {
                tracing::debug!(%reason, "dependency step cancelled");
                return Err(RunError::Cancelled);
            }
            Err(reason) => shared
                .sink
                .warning(format!("dependencies not set up: {reason}")),
        }
    }
    let mut results = missing;
    let ran = run_specs(
        &selection.checks,
        &CheckContext {
            root: &shared.project_root,
            sandbox: shared.sandbox.as_ref().ok().map(AsRef::as_ref),
            cancel: &shared.cancel,
            config: &shared.checks.config,
        },
        |check| shared.sink.status(format!("check: {}", check.name)),
    )
    .await
    .map_err(|Cancelled| RunError::Cancelled)?;
    shared.check_protected("the checks").await?;
    if let Some(before) = &before
        && let Some(after) = crate::git::PatchBaseline::capture(&shared.project_root).await
    {
        // A file the agent changed stays the agent's, whatever a check did to it since.
        summary.written_files = after
            .changed_since(before)
            .into_iter()
            .filter(|path| !patch.changed_files.iter().any(|f| &f.path == path))
            .collect();
        if let Some(baseline) = baseline {
            baseline.absorb(&after, &summary.written_files);
        }
    }
    results.extend(ran.results);
    summary.status = CheckStatus::of_results(&results);
    summary.reason = Some(outcome_reason(&selection.reason, &results, &ran.not_run));
    summary.results = results;
    Ok(summary)
}

/// `checks.fetchDependencies: ask`: the person is asked once per project whether to set its
/// dependencies up (their answer is kept in `~/.braincode/deps/`); with nobody to ask, no.
async fn ask_once(shared: &RunShared, steps: &[crate::deps::DepsStep], fix_iteration: u32) -> bool {
    if let Some(kept) = crate::deps::kept_answer(&shared.home, &shared.project_root) {
        return kept;
    }
    if !shared.gate.has_person() {
        return false;
    }
    let allow = crate::deps::registries_allowlist(&shared.settings);
    let commands: Vec<&str> = steps.iter().map(|s| s.label.as_str()).collect();
    let request = crate::approval::ApprovalRequest {
        call_id: format!("deps-setup:{}:{fix_iteration}", shared.sink.session_id()),
        tool_name: "dependency_setup".into(),
        arguments: json!({
            "command": commands.join(" && "),
            "network": "the package registries only",
            "hosts": allow.hosts(),
        }),
        policy_summary: "Set the project's dependencies up before its checks, once, in the sandbox, the network limited to the package registries? Your answer is kept for this project (checks.fetchDependencies in tools.json changes it).".into(),
        origin: shared.origin(),
        once_only: None,
    };
    let Some(answer) = shared.gate.ask_person(&request).await else {
        return false;
    };
    crate::deps::keep_answer(&shared.home, &shared.project_root, answer);
    answer
}

/// The selected checks that cannot run here (their tool is not installed, a name that
/// designates nothing): results that could not run, nothing for the code to fix.
pub fn missing_results(selection: &Selection) -> Vec<CheckResult> {
    (selection.missing.iter())
        .map(|(name, reason)| CheckResult {
            name: name.clone(),
            command: String::new(),
            passed: false,
            exit_code: None,
            timed_out: false,
            duration_ms: 0,
            output_tail: reason.clone(),
            environment: Some(reason.clone()),
        })
        .collect()
}

/// The summary's reason: why these checks, which failed on the code, which could not run and
/// why (with the fix), which were not run after an earlier failure.
pub fn outcome_reason(selected: &str, results: &[CheckResult], not_run: &[String]) -> String {
    let mut reason = selected.to_string();
    let failed: Vec<&str> = (results.iter())
        .filter(|r| !r.passed && r.environment.is_none())
        .map(|r| r.name.as_str())
        .collect();
    if !failed.is_empty() {
        reason = format!("{reason}; failed: {}", failed.join(", "));
    }
    let could_not: Vec<String> = (results.iter())
        .filter(|r| !r.passed)
        .filter_map(|r| Some(format!("{} ({})", r.name, r.environment.as_deref()?)))
        .collect();
    if !could_not.is_empty() {
        reason = format!("{reason}; could not run: {}", could_not.join("; "));
    }
    if !not_run.is_empty() {
        reason = format!("{reason}; not run: {}", not_run.join(", "));
    }
    reason
}

/// One approval for the whole selection, through `gate` (the run's, or a writer's for its
/// worktree): the permission policy reads every command (a deny rule wins), then the mode,
/// `--allow-edits` (checks run in the OS sandbox) or a person decides. `Err` is why the
/// checks were not run.
pub(crate) async fn approve(
    shared: &RunShared,
    gate: &crate::approval::PolicyGate,
    call_id: String,
    selection: &Selection,
) -> Result<(), String> {
    let commands: Vec<String> = selection.checks.iter().map(shown_command).collect();
    let call = ToolCall {
        id: call_id,
        name: CHECK_TOOL.into(),
        arguments: json!({
            "command": commands.join(" && "),
            "scripts": selection.checks.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            "patchKind": selection.patch_kind.as_str(),
            "reason": selection.reason,
            "approvalRequired": selection.approval_required,
        }),
        raw_arguments: String::new(),
        argument_error: None,
        signature: None,
    };
    let tool = check_tool();
    let origin = shared.origin();
    match gate
        .check(GateRequest {
            call: &call,
            tool: &tool,
            origin: &origin,
        })
        .await
    {
        GateOutcome::Allow => Ok(()),
        GateOutcome::Refuse(message) => Err(format!("check scripts blocked: {message}")),
    }
}

/// Where and how checks run.
pub struct CheckContext<'a> {
    /// The project root (a check's `dir` is relative to it).
    pub root: &'a Path,
    /// The OS sandbox; `None` runs the checks unconfined (a person approved that).
    pub sandbox: Option<&'a braincode_sandbox::Sandbox>,
    /// Stops the running check (its whole process group).
    pub cancel: &'a tokio_util::sync::CancellationToken,
    /// Timeout and output cap.
    pub config: &'a braincode_tools::ChecksConfig,
}

/// The checks were cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

/// What running a selection gave.
#[derive(Debug, Clone, Default)]
pub struct CheckRuns {
    /// One result per check that ran, in order.
    pub results: Vec<CheckResult>,
    /// Checks not run because an earlier build of their project failed.
    pub not_run: Vec<String>,
}

/// Runs `checks` one after another (cheapest first, as selected). After a failed build or
/// typecheck, the later checks of the same project and ecosystem are not run: they would
/// fail on the same error. `starting` is told of each check before it runs.
pub async fn run_specs(
    checks: &[CheckSpec],
    context: &CheckContext<'_>,
    starting: impl Fn(&CheckSpec),
) -> Result<CheckRuns, Cancelled> {
    let timeout = Duration::from_millis(context.config.timeout_ms);
    let max_bytes = usize::try_from(context.config.max_output_bytes).unwrap_or(usize::MAX);
    let mut runs = CheckRuns::default();
    let mut broken: Vec<(&str, braincode_tools::checks::Ecosystem, &str)> = Vec::new();
    for check in checks {
        if let Some((_, _, failed)) = broken
            .iter()
            .find(|(dir, ecosystem, _)| *dir == check.dir && *ecosystem == check.ecosystem)
        {
            runs.not_run
                .push(format!("{} (after {failed} failed)", check.name));
            continue;
        }
        starting(check);
        let result = run_one(context, check, timeout, max_bytes).await?;
        // Only a build the code broke stops the later checks; one that could not run (a
        // nightly-only bench, no network) leaves them to try.
        if !result.passed
            && result.environment.is_none()
            && matches!(check.kind, CheckKind::Build | CheckKind::Typecheck)
        {
            broken.push((&check.dir, check.ecosystem, &check.name));
        }
        runs.results.push(result);
    }
    Ok(runs)
}

/// Runs one check in its directory; the result keeps the end of its output.
async fn run_one(
    context: &CheckContext<'_>,
    check: &CheckSpec,
    timeout: Duration,
    max_bytes: usize,
) -> Result<CheckResult, Cancelled> {
    let dir = context.root.join(&check.dir);
    let args: Vec<&str> = check.args.iter().map(String::as_str).collect();
    let command = confined_command(context.sandbox, &check.program, &args, &dir);
    let started = Instant::now();
    let outcome = run_captured(command, timeout, context.cancel, max_bytes).await;
    let duration_ms = started.elapsed().as_millis() as u64;
    let command = shown_command(check);
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            let output = format!("cannot run {}: {error}", check.program);
            return Ok(CheckResult {
                name: check.name.clone(),
                command,
                passed: false,
                exit_code: None,
                timed_out: false,
                duration_ms,
                environment: environment_cause(&check.program, None, &output, &dir),
                output_tail: output,
            });
        }
    };
    if outcome.cancelled {
        return Err(Cancelled);
    }
    let mut output = outcome.stdout.to_text();
    let stderr = outcome.stderr.to_text();
    if !stderr.trim().is_empty() {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&stderr);
    }
    if outcome.timed_out {
        output.push_str(&format!("\n[timed out after {} ms]", timeout.as_millis()));
    }
    let exit_code = outcome.exit.and_then(|exit| exit.code);
    let passed = exit_code == Some(0) && !outcome.timed_out;
    // A failure the environment explains (no network, a dependency or tool not installed)
    // is not the code's: it is said as such and never sent to the fix loop.
    let environment = (!passed && !outcome.timed_out)
        .then(|| environment_cause(&check.program, exit_code, &output, &dir))
        .flatten();
    Ok(CheckResult {
        name: check.name.clone(),
        command,
        passed,
        exit_code,
        timed_out: outcome.timed_out,
        duration_ms,
        output_tail: tail_bytes(&output, max_bytes),
        environment,
    })
}

/// The last `max` bytes of `text`, cut at a character boundary.
fn tail_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

/// The end of a failing check's output for a fix prompt (the last [`FIX_OUTPUT_CHARS`]
/// characters: compilers and test runners say what failed last).
pub(crate) fn fix_excerpt(output: &str) -> String {
    let count = output.chars().count();
    if count <= FIX_OUTPUT_CHARS {
        return output.trim().to_string();
    }
    let tail: String = output.chars().skip(count - FIX_OUTPUT_CHARS).collect();
    format!("…{}", tail.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_end_at_a_character_boundary() {
        assert_eq!(tail_bytes("abc", 10), "abc");
        assert_eq!(tail_bytes("héllo", 4), "llo");
        let long = format!("{}END", "x".repeat(5_000));
        let excerpt = fix_excerpt(&long);
        assert!(excerpt.ends_with("END"));
        assert_eq!(excerpt.chars().count(), FIX_OUTPUT_CHARS + 1);
    }
}
