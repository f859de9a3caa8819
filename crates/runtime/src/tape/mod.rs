//! What an earlier run already did, served back to the same calls: the basis of replay and of
//! crash-resume.
//!
//! A run's journal holds every model reply (`model_reply`, keyed by agent session and call
//! index), every tool call's approval and output (`tool_approval_decision`,
//! `tool_execution_summary`), every hook result, the patch baseline and summary, and the
//! ledger's `file_change` records. A [`Tape`] built from
//! those records hands each of them back to the call that asks for the same key:
//!
//! - **replay** ([`TapeMode::Replay`]): everything comes from the tape and a call the tape
//!   does not have is a divergence (no model, no tool, no hook, no network, no credentials).
//!   The records are emitted again as the original run emitted them, so the two streams can
//!   be compared.
//! - **resume** ([`TapeMode::Resume`]): what the tape has is reused (a finished worker's model
//!   calls are not made again, a tool that ran is not run again), and the first call it does
//!   not have goes to the real model or tool. Reused calls are not journaled a second time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

mod records;
mod stop;

pub use records::{comparable, failure_record, hook_scope, journaled_output, reply_record};
use records::{hook_key, model_error, tool_call};
pub use stop::BudgetStop;
use stop::{StopReplay, reply_key, tool_key};

use braincode_llm::{Completion, ModelError};
use braincode_protocol::{
    CheckSummary, CompactionRecord, CompactionTrigger, FileChange, Handoff, HookRecord,
    JournalEntry, McpConnect, ModelReply, PatchBaselineRecord, PatchSummary, Record,
    ToolApprovalDecision, ToolExecutionSummary, ToolStage, WriterMerge,
};

/// Tools that are orchestration, not side effects: they always run (their own model calls
/// are taped), so a replay reproduces their records.
pub const ORCHESTRATION_TOOLS: [&str; 1] = ["dispatch_specialist"];

/// Journaled hook results per (event, scope, matcher), in order, each with whether it is the
/// replayed run's own. The scope is empty for run-level events and names the agent session
/// (and tool call) for agent events, so concurrent agents are each served their own.
type HookQueues = HashMap<(String, String, String), std::collections::VecDeque<(HookRecord, bool)>>;

/// How the tape is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapeMode {
    /// Everything from the journal; a missing entry is a divergence.
    Replay,
    /// Reuse what the journal has, go live after.
    Resume,
}

/// A tool call as the journal has it.
#[derive(Debug, Clone, Default)]
pub struct TapedTool {
    /// Its approval decision, when one was journaled.
    pub approval: Option<ToolApprovalDecision>,
    /// Its start record.
    pub start: Option<ToolExecutionSummary>,
    /// Its end record (with the output).
    pub end: Option<ToolExecutionSummary>,
    /// The files it changed (`file_change`), emitted again with its records in a replay.
    pub changes: Vec<FileChange>,
    /// Whether it belongs to the run being replayed (its records are emitted again) rather
    /// than to an earlier run of the same id (reused silently).
    pub own: bool,
}

/// What was reused, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TapeUse {
    /// Model replies served from the journal.
    pub model_replies: u64,
    /// Tool outputs served from the journal.
    pub tool_results: u64,
    /// Hook results served from the journal.
    pub hooks: u64,
}

/// The journaled results of one run, served by key.
#[derive(Debug)]
pub struct Tape {
    mode: TapeMode,
    run_id: String,
    continues: bool,
    replies: HashMap<(String, u32), (ModelReply, bool)>,
    tools: HashMap<(String, String), TapedTool>,
    hooks: Mutex<HookQueues>,
    patch: Option<PatchSummary>,
    baseline: Option<PatchBaselineRecord>,
    /// The replayed run's own `file_change` records not made by a tool call (reconciled
    /// after a patch summary), with how many of its patch summaries came before each.
    reconciled: Vec<(FileChange, usize)>,
    /// Every path a `file_change` of the run names, with its latest after hash.
    changed: BTreeMap<String, Option<String>>,
    /// The replayed run's own patch summaries, one per verification pass.
    patches: Vec<PatchSummary>,
    /// The replayed run's own check summaries by fix pass.
    checks: HashMap<u32, CheckSummary>,
    /// The replayed run's own approvals of its checks, by fix pass.
    check_approvals: HashMap<u32, ToolApprovalDecision>,
    /// The replayed run's own end-of-run handoff.
    run_end_handoff: Option<Handoff>,
    /// Compactions by (agent session, call, trigger), each with whether it is the run's own.
    compactions: HashMap<(String, u32, CompactionTrigger), (CompactionRecord, bool)>,
    mcp: Vec<McpConnect>,
    resume_of: Option<String>,
    model_replies: AtomicU64,
    tool_results: AtomicU64,
    hook_results: AtomicU64,
    /// A replay of a run that stopped at its budget.
    stop: Option<StopReplay>,
    /// The replayed run's own repository facts.
    repo_facts: Option<braincode_protocol::RepoFacts>,
    /// Every writer merge the run journaled, in order (a resume does not merge them again).
    writer_merges: Vec<WriterMerge>,
}

impl Tape {
    /// A tape of the records of run `run_id` (every run of the session that carries that id:
    /// the original and any earlier resume of it). `target` is the index in `entries` of the
    /// `run_start` of the run being replayed: its own records are emitted again, those of
    /// earlier runs with the same id are served silently, as its resume did. A resume has no
    /// target (everything is earlier).
    pub fn from_entries(
        mode: TapeMode,
        run_id: &str,
        entries: &[JournalEntry],
        target: Option<usize>,
    ) -> Tape {
        let mut tape = Tape {
            mode,
            run_id: run_id.to_string(),
            replies: HashMap::new(),
            tools: HashMap::new(),
            hooks: Mutex::new(HashMap::new()),
            patch: None,
            baseline: None,
            reconciled: Vec::new(),
            changed: BTreeMap::new(),
            patches: Vec::new(),
            checks: HashMap::new(),
            check_approvals: HashMap::new(),
            compactions: HashMap::new(),
            run_end_handoff: None,
            mcp: Vec::new(),
            resume_of: None,
            model_replies: AtomicU64::new(0),
            tool_results: AtomicU64::new(0),
            hook_results: AtomicU64::new(0),
            stop: None,
            repo_facts: None,
            writer_merges: Vec::new(),
            continues: false,
        };
        // The session's first run is this one, or this run continued it.
        tape.continues = entries
            .iter()
            .find_map(|entry| match &entry.record {
                Record::RunStart(start) => Some(start.run_id.as_deref() != Some(run_id)),
                _ => None,
            })
            .unwrap_or(false);
        let mut hooks = HookQueues::new();
        let mut own_items = HashSet::new();
        let mut stop = None;
        let mut last_own: Option<&Record> = None;
        let mut in_run = false;
        let mut own = false;
        let mut own_patches = 0;
        for (index, entry) in entries.iter().enumerate() {
            if let Record::RunStart(start) = &entry.record {
                in_run = start.run_id.as_deref() == Some(run_id);
                own = target == Some(index);
                if own {
                    tape.resume_of = start.resume_of.clone();
                }
                continue;
            }
            if !in_run {
                continue;
            }
            if own {
                match &entry.record {
                    Record::ModelReply(reply) if !reply.clipped => {
                        own_items.insert(reply_key(&reply.agent_session_id, reply.call));
                    }
                    Record::ToolExecutionSummary(summary)
                        if summary.stage == ToolStage::End && summary.output.is_some() =>
                    {
                        if let Some(session) = &summary.origin.agent_session_id {
                            own_items.insert(tool_key(session, &summary.tool_call_id));
                        }
                    }
                    // The budget's stop is journaled right after the call that crossed it.
                    Record::Warning(warning)
                        if warning.message.starts_with(crate::run::BUDGET_REACHED) =>
                    {
                        if let Some(Record::TokenUsage(usage)) = last_own
                            && let (Some(session), Some(turn)) =
                                (&usage.agent_session_id, &usage.turn_id)
                        {
                            stop.get_or_insert(BudgetStop {
                                agent_session_id: session.clone(),
                                turn_id: turn.clone(),
                                reason: warning
                                    .message
                                    .strip_suffix(crate::run::BUDGET_STOP_SUFFIX)
                                    .unwrap_or(&warning.message)
                                    .to_string(),
                            });
                        }
                    }
                    _ => {}
                }
                last_own = Some(&entry.record);
            }
            match &entry.record {
                Record::ModelReply(reply) => {
                    tape.replies.insert(
                        (reply.agent_session_id.clone(), reply.call),
                        (reply.clone(), own),
                    );
                }
                Record::ToolApprovalDecision(approval)
                    if own && approval.tool_name == crate::run::CHECK_TOOL =>
                {
                    // `patch-checks:<session>:<pass>`
                    if let Some(pass) = approval
                        .tool_call_id
                        .rsplit(':')
                        .next()
                        .and_then(|n| n.parse().ok())
                    {
                        tape.check_approvals.insert(pass, approval.clone());
                    }
                }
                Record::ToolApprovalDecision(approval) => {
                    if let Some(session) = &approval.origin.agent_session_id {
                        let slot = tape
                            .tools
                            .entry((session.clone(), approval.tool_call_id.clone()))
                            .or_default();
                        slot.own = own;
                        slot.approval = Some(approval.clone());
                    }
                }
                Record::ToolExecutionSummary(summary) => {
                    if let Some(session) = &summary.origin.agent_session_id {
                        let slot = tape
                            .tools
                            .entry((session.clone(), summary.tool_call_id.clone()))
                            .or_default();
                        slot.own = own;
                        match summary.stage {
                            ToolStage::Start => slot.start = Some(summary.clone()),
                            ToolStage::End => slot.end = Some(summary.clone()),
                        }
                    }
                }
                Record::HookSessionStart(hook)
                | Record::HookUserPromptSubmit(hook)
                | Record::HookSubagentStart(hook)
                | Record::HookSubagentStop(hook)
                | Record::HookStop(hook)
                | Record::HookPreToolUse(hook)
                | Record::HookPermissionRequest(hook)
                | Record::HookPostToolUse(hook)
                | Record::HookPreCompact(hook)
                | Record::HookPostCompact(hook) => {
                    let scope = hook_scope(
                        hook.agent_session_id.as_deref(),
                        hook.tool_call_id.as_deref(),
                    );
                    hooks
                        .entry(hook_key(&hook.event_name, &scope, hook.matcher.as_deref()))
                        .or_default()
                        .push_back((hook.clone(), own));
                }
                Record::PatchSummary(patch) => {
                    tape.patch = Some(patch.patch.clone());
                    if own {
                        own_patches += 1;
                        tape.patches.push(patch.patch.clone());
                    }
                }
                Record::Handoff(handoff)
                    if own
                        && handoff.trigger == Some(braincode_protocol::HandoffTrigger::RunEnd) =>
                {
                    tape.run_end_handoff = Some(handoff.clone());
                }
                Record::Compaction(compaction) => {
                    let session = compaction.agent_session_id.clone().unwrap_or_default();
                    tape.compactions.insert(
                        (session, compaction.call, compaction.trigger),
                        (compaction.clone(), own),
                    );
                }
                Record::CheckSummary(checks) if own => {
                    tape.checks
                        .insert(checks.fix_iteration.unwrap_or(0), checks.summary.clone());
                }
                Record::PatchBaseline(baseline) => tape.baseline = Some(baseline.clone()),
                Record::FileChange(change) => {
                    (tape.changed).insert(change.path.clone(), change.after_hash.clone());
                    match (&change.agent_session_id, &change.tool_call_id) {
                        (Some(session), Some(call)) => {
                            let slot = tape.tools.entry((session.clone(), call.clone()));
                            slot.or_default().changes.push(change.clone());
                        }
                        _ if own => tape.reconciled.push((change.clone(), own_patches)),
                        _ => {}
                    }
                }
                Record::McpConnect(report) if own => tape.mcp.push(report.clone()),
                Record::RepoFacts(facts) => tape.repo_facts = Some(facts.clone()),
                Record::WriterMerge(merge) => tape.writer_merges.push(merge.clone()),
                _ => {}
            }
        }
        tape.hooks = Mutex::new(hooks);
        if mode == TapeMode::Replay {
            tape.stop = stop.map(|stop| StopReplay {
                stop,
                own_items,
                served: Mutex::new(HashSet::new()),
                reached: AtomicBool::new(false),
                cancel: OnceLock::new(),
            });
        }
        tape
    }

    /// The repository facts the run journaled (a replay shows the same ones).
    pub fn repo_facts(&self) -> Option<&braincode_protocol::RepoFacts> {
        self.repo_facts.as_ref()
    }

    /// The replayed run's own MCP connection reports, in order.
    pub fn mcp_reports(&self) -> Vec<McpConnect> {
        self.mcp.clone()
    }

    /// Replay or resume.
    pub fn mode(&self) -> TapeMode {
        self.mode
    }

    /// The run whose records this tape serves.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Whether an earlier run of the session came before this one (it then continued them):
    /// a replay or a resume runs again a run that was, or was not, a continuation when it
    /// first ran, whatever the journal holds now.
    pub fn continues(&self) -> bool {
        self.continues
    }

    /// Whether a missing entry is a divergence (replay) rather than a call to make (resume).
    pub fn is_strict(&self) -> bool {
        self.mode == TapeMode::Replay
    }

    /// The reply journaled for call `call` of `agent_session`: a completion, or the error
    /// the call ended with; and whether it is the replayed run's own (to journal again).
    pub fn reply(
        &self,
        agent_session: &str,
        call: u32,
    ) -> Option<(Result<Completion, ModelError>, bool)> {
        let (reply, own) = self.replies.get(&(agent_session.to_string(), call))?;
        if reply.clipped {
            return None;
        }
        // A resume tries a failed call again (the failure may have been the crash's).
        if reply.error.is_some() && self.mode == TapeMode::Resume {
            return None;
        }
        if !own {
            self.model_replies.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(stop) = &self.stop {
            stop.served(reply_key(agent_session, call));
        }
        if let Some(error) = &reply.error {
            return Some((Err(model_error(error)), *own));
        }
        let completion = Completion {
            text: reply.text.clone(),
            reasoning: String::new(),
            tool_calls: reply.tool_calls.iter().map(tool_call).collect(),
            usage: reply.usage,
            stop: reply.cut.then_some(braincode_llm::StopReason::MaxTokens),
        };
        Some((Ok(completion), *own))
    }

    /// The run this run resumes, as its `run_start` says (replay) or as it will (resume).
    pub fn resume_of(&self) -> Option<&str> {
        match self.mode {
            TapeMode::Resume => Some(&self.run_id),
            TapeMode::Replay => self.resume_of.as_deref(),
        }
    }

    /// The approval of a call the gate refused (it has no end record), to refuse it again
    /// without asking.
    pub fn refusal(
        &self,
        agent_session: &str,
        call_id: &str,
    ) -> Option<(ToolApprovalDecision, bool)> {
        let taped = self
            .tools
            .get(&(agent_session.to_string(), call_id.to_string()))?;
        if taped.end.is_some() || taped.start.is_some() {
            return None;
        }
        let approval = taped.approval.as_ref()?;
        matches!(
            approval.decision,
            braincode_protocol::ApprovalDecision::Blocked
                | braincode_protocol::ApprovalDecision::Denied
        )
        .then(|| (approval.clone(), taped.own))
    }

    /// The journaled tool call `call_id` of `agent_session`, when it ran to its end (an
    /// interrupted call is run again).
    pub fn tool(&self, agent_session: &str, call_id: &str, tool_name: &str) -> Option<TapedTool> {
        if ORCHESTRATION_TOOLS.contains(&tool_name) {
            return None;
        }
        let taped = self
            .tools
            .get(&(agent_session.to_string(), call_id.to_string()))?;
        let end = taped.end.as_ref()?;
        end.output.as_ref()?;
        if !taped.own {
            self.tool_results.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(stop) = &self.stop {
            stop.served(tool_key(agent_session, call_id));
        }
        Some(taped.clone())
    }

    /// The replayed run's own approval and start records of call `call_id` of
    /// `agent_session`, which the journal has without an end (the live run was cut there).
    pub fn cut_call(
        &self,
        agent_session: &str,
        call_id: &str,
    ) -> (Option<ToolApprovalDecision>, Option<ToolExecutionSummary>) {
        match self
            .tools
            .get(&(agent_session.to_string(), call_id.to_string()))
        {
            Some(taped) if taped.own && taped.end.is_none() => {
                (taped.approval.clone(), taped.start.clone())
            }
            _ => (None, None),
        }
    }

    /// Whether the journal has the start of call `call_id` of `agent_session` and not its end:
    /// the call may have run (a command may have had its effect) before the interruption.
    pub fn interrupted(&self, agent_session: &str, call_id: &str) -> bool {
        self.tools
            .get(&(agent_session.to_string(), call_id.to_string()))
            .is_some_and(|taped| {
                taped.start.is_some() && taped.end.as_ref().is_none_or(|end| end.output.is_none())
            })
    }

    /// The next journaled result of a hook event (`matcher` as journaled), if any.
    pub fn hook(&self, event_name: &str, matcher: Option<&str>) -> Option<(HookRecord, bool)> {
        self.scoped_hook(event_name, "", matcher)
    }

    /// The next journaled result of an agent's hook event: `scope` is [`hook_scope`] of its
    /// agent session and tool call.
    pub fn scoped_hook(
        &self,
        event_name: &str,
        scope: &str,
        matcher: Option<&str>,
    ) -> Option<(HookRecord, bool)> {
        let mut hooks = match self.hooks.lock() {
            Ok(hooks) => hooks,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (record, own) = hooks
            .get_mut(&hook_key(event_name, scope, matcher))?
            .pop_front()?;
        if !own {
            self.hook_results.fetch_add(1, Ordering::Relaxed);
        }
        Some((record, own))
    }

    /// The journaled patch summary.
    pub fn patch(&self) -> Option<&PatchSummary> {
        self.patch.as_ref()
    }

    /// The journaled patch baseline: a resume measures the run's changes from the tree as
    /// it was when the run first started, so edits made before a crash still count.
    pub fn baseline(&self) -> Option<crate::git::PatchBaseline> {
        self.baseline
            .as_ref()
            .map(crate::git::PatchBaseline::from_record)
    }

    /// The replayed run's own `file_change` records that no tool call made, reconciled after
    /// its `summary`-th patch summary (1-based), in journal order.
    pub fn reconciled_changes(&self, summary: usize) -> Vec<FileChange> {
        (self.reconciled.iter())
            .filter(|(_, after)| *after == summary)
            .map(|(change, _)| change.clone())
            .collect()
    }

    /// Every path the run's journaled `file_change` records name, with its latest after
    /// hash (a resumed run's ledger goes on from them).
    pub fn changed_files(&self) -> &BTreeMap<String, Option<String>> {
        &self.changed
    }

    /// The replayed run's patch summary of verification pass `pass` (0: before any fix).
    pub fn patch_at(&self, pass: u32) -> Option<&PatchSummary> {
        self.patches.get(pass as usize)
    }

    /// The replayed run's own end-of-run handoff.
    pub fn run_end_handoff(&self) -> Option<Handoff> {
        self.run_end_handoff.clone()
    }

    /// The compaction journaled before call `call` of `agent_session` for `trigger`, and
    /// whether it is the replayed run's own.
    pub fn compaction(
        &self,
        agent_session: &str,
        call: u32,
        trigger: CompactionTrigger,
    ) -> Option<(CompactionRecord, bool)> {
        self.compactions
            .get(&(agent_session.to_string(), call, trigger))
            .cloned()
    }

    /// The replayed run's approval decision for the checks of fix pass `pass`.
    pub fn check_approval(&self, pass: u32) -> Option<ToolApprovalDecision> {
        self.check_approvals.get(&pass).cloned()
    }

    /// The replayed run's check summary of fix pass `pass`.
    pub fn checks(&self, pass: u32) -> Option<CheckSummary> {
        self.checks.get(&pass).cloned()
    }

    /// The latest merge the run journaled for the writer of task `context_id`.
    pub fn writer_merge(&self, context_id: &str) -> Option<&WriterMerge> {
        (self.writer_merges.iter().rev()).find(|merge| merge.context_id == context_id)
    }

    /// Whether the journal has a model reply of an agent of task `context_id` (its agent
    /// sessions are `<context_id>-<attempt>`): the task had started working.
    pub fn has_agent_work(&self, context_id: &str) -> bool {
        self.replies.keys().any(|(session, _)| {
            session
                .strip_prefix(context_id)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|attempt| attempt.parse::<u32>().is_ok())
        })
    }

    /// What was reused from earlier runs so far (not counting the replayed run's own).
    pub fn used(&self) -> TapeUse {
        TapeUse {
            model_replies: self.model_replies.load(Ordering::Relaxed),
            tool_results: self.tool_results.load(Ordering::Relaxed),
            hooks: self.hook_results.load(Ordering::Relaxed),
        }
    }
}
