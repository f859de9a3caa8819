//! The permission + approval gate every tool call passes.
//!
//! Order: the permission policy first (a `deny` is final: no mode, flag or person can
//! override it), then whether the call needs approval, then who approves: the mode
//! (radical / `--yes`), the runtime policy (`--allow-edits` approves file edits), a person
//! through an [`ApprovalHandler`] (TUI, web panel, terminal prompt), or nobody — then it is
//! blocked. Every decision that involved a rule or an approval is journaled.
//!
//! Two kinds of call only a person may approve: a *protected* call (it changes `.git/**`,
//! agent or MCP configuration, creates a link, edits a hard-linked file, …) — per call, never
//! remembered for the session, never by a mode or flag; when the OS sandbox is not active,
//! any call that runs a command; and the checks of a project the user has not trusted (they
//! are its own code), once for the run. An *unanalysable* command (the policy could not
//! follow everything it runs) is never approved by a session approval, and by `--yes`/radical
//! mode only inside the sandbox.
//!
//! Hooks: a `PreToolUse` hook's `ask` sends a call to a person like a protected call (no
//! mode, flag or session approval decides it). Just before a person would be asked — or a
//! call blocked because nobody can be — the agent's `PermissionRequest` hooks fire: their
//! `deny` blocks the call (approver `hook`); their `allow` approves it (approver `hook`) only
//! where a person could have been asked and the call is not person-only (protected, a
//! command without the OS sandbox, or sent to a person by a `PreToolUse` hook). A hook never
//! overrides a policy `deny`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use braincode_protocol::{
    ApprovalDecision, Approver, Mode, Record, ToolApprovalDecision, ToolCallOrigin,
};
use braincode_tools::policy::targets::MAX_SESSION_HISTORY_BYTES;
use braincode_tools::tool_args::{ToolArgs, WriteStdinArgs};
use braincode_tools::{
    PermissionPolicy, PermissionRequest, PolicyDecision, PolicyEvaluation, PolicyEvaluationExt,
    ToolPermission, requires_approval, summarize_json,
};
use serde_json::Value;

use crate::agent::{GateHooks, GateOutcome, GateRequest, ToolGate};
use crate::sink::RunSink;

mod mode;
mod reasons;
pub use mode::PermissionMode;
pub use reasons::untrusted_checks_reason;
use reasons::{approval_summary, is_routine_check, once_only_reason};

/// A call waiting for a person's decision.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// Provider call id.
    pub call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// The arguments.
    pub arguments: Value,
    /// What the permission policy said (rules that matched).
    pub policy_summary: String,
    /// Who is calling.
    pub origin: ToolCallOrigin,
    /// Why "for this session" cannot be remembered for this call (a protected call, one a
    /// hook sent to a person): `a` then approves it once, and the panel says so.
    pub once_only: Option<String>,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run this call.
    Approve,
    /// Run this call and every later call of the same tool in this session — except
    /// protected calls (approved once, asked again) and unanalysable ones (asked again).
    ApproveForSession,
    /// Do not run it.
    Block(String),
}

/// Asks a person (TUI panel, web panel, terminal prompt).
#[async_trait]
pub trait ApprovalHandler: Send + Sync {
    /// Returns the person's decision for one call.
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalAnswer;
}

/// The gate used by real runs.
pub struct PolicyGate {
    policy: PermissionPolicy,
    project_root: PathBuf,
    mode: Mode,
    permission: PermissionMode,
    handler: Option<std::sync::Arc<dyn ApprovalHandler>>,
    sink: RunSink,
    sandboxed: bool,
    approved_for_session: Mutex<HashSet<String>>,
    /// Text typed into each exec session (`write_stdin`) and let through, newest last: the
    /// policy reads a new piece together with it (`git pu` + `sh\n` is `git push`).
    typed: Mutex<HashMap<u64, String>>,
    review_required: AtomicBool,
    /// Calls that change protected paths and that a person approved.
    protected_approved: Mutex<HashSet<String>>,
    /// Whether the user trusts the project: an untrusted project's checks are its own code,
    /// so only a person may let them run (for this run).
    project_trusted: bool,
}

/// What approving a call needs beyond the policy.
enum PersonOnly {
    /// A protected call: a person, for this call only.
    Protected(String),
    /// Commands would run without the OS sandbox: a person (session approvals count).
    Unsandboxed(String),
    /// A `PreToolUse` hook asked that a person decide this call: a person, for this call.
    HookAsked(String),
    /// The checks of a project the user does not trust (its own code): a person, for this
    /// run (session approvals count).
    UntrustedChecks(String),
}

impl PersonOnly {
    fn reason(&self) -> &str {
        match self {
            PersonOnly::Protected(reason)
            | PersonOnly::Unsandboxed(reason)
            | PersonOnly::HookAsked(reason)
            | PersonOnly::UntrustedChecks(reason) => reason,
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl PolicyGate {
    /// A gate for one run. `sandboxed` says whether the OS sandbox confines this run's
    /// commands: without it every command needs a person (`--yes` does not approve it), and
    /// with it an unanalysable command may be auto-approved by `--yes`/radical mode.
    pub fn new(
        policy: PermissionPolicy,
        project_root: PathBuf,
        mode: Mode,
        permission: PermissionMode,
        handler: Option<std::sync::Arc<dyn ApprovalHandler>>,
        sink: RunSink,
        sandboxed: bool,
    ) -> Self {
        Self {
            policy,
            project_root,
            mode,
            permission,
            handler,
            sink,
            sandboxed,
            approved_for_session: Mutex::new(HashSet::new()),
            typed: Mutex::new(HashMap::new()),
            review_required: AtomicBool::new(false),
            protected_approved: Mutex::new(HashSet::new()),
            project_trusted: false,
        }
    }

    /// Says whether the user trusts the project (a gate starts out untrusted: the project's
    /// checks then need a person).
    pub fn with_project_trust(mut self, trusted: bool) -> Self {
        self.project_trusted = trusted;
        self
    }

    /// The same gate for a parallel writer's worktree at `root`: the same policy, mode, person
    /// and trust; its own session approvals (`sandboxed`: whether its commands have a sandbox).
    pub fn for_root(&self, root: PathBuf, sandboxed: bool) -> PolicyGate {
        PolicyGate::new(
            self.policy.clone(),
            root,
            self.mode,
            self.permission,
            self.handler.clone(),
            self.sink.clone(),
            sandboxed,
        )
        .with_project_trust(self.project_trusted)
    }

    /// Whether a person can be asked in this run (a TUI, a panel or a terminal prompt).
    pub fn has_person(&self) -> bool {
        self.handler.is_some()
    }

    /// Asks the person a question that is not a tool call (the TUI shows it as an
    /// approval): `Some(true)` for yes, `Some(false)` for no, `None` when nobody is here.
    pub async fn ask_person(&self, request: &ApprovalRequest) -> Option<bool> {
        let handler = self.handler.as_ref()?;
        Some(matches!(
            handler.decide(request).await,
            ApprovalAnswer::Approve | ApprovalAnswer::ApproveForSession
        ))
    }

    /// Whether a matched rule asked for an independent review.
    pub fn review_required(&self) -> bool {
        self.review_required.load(Ordering::SeqCst)
    }

    fn session_approved(&self, tool: &str) -> bool {
        lock(&self.approved_for_session).contains(tool)
    }

    fn approve_for_session(&self, tool: &str) {
        lock(&self.approved_for_session).insert(tool.to_string());
    }

    fn typed_history(&self, session: u64) -> Option<String> {
        lock(&self.typed).get(&session).cloned()
    }

    fn remember_typed(&self, session: u64, chars: &str) {
        let mut typed = lock(&self.typed);
        let history = typed.entry(session).or_default();
        history.push_str(chars);
        if history.len() > MAX_SESSION_HISTORY_BYTES {
            let mut start = history.len() - MAX_SESSION_HISTORY_BYTES;
            while !history.is_char_boundary(start) {
                start += 1;
            }
            history.drain(..start);
        }
    }

    /// Whether a call starts or feeds a process (listing, polling and stopping our own
    /// sessions do not).
    fn runs_commands(request: &GateRequest<'_>) -> bool {
        if request.tool.permission != ToolPermission::Execute {
            return false;
        }
        match request.tool.name.as_str() {
            "list_background" | "kill_background" => false,
            "write_stdin" => WriteStdinArgs::parse(&request.call.arguments)
                .map_or(true, |args| args.chars.is_some_and(|c| !c.is_empty())),
            _ => true,
        }
    }

    fn person_only(
        &self,
        request: &GateRequest<'_>,
        evaluation: &PolicyEvaluation,
    ) -> Option<PersonOnly> {
        if let Some(reason) = evaluation.protected.first() {
            return Some(PersonOnly::Protected(format!(
                "{reason}: only a person can approve this"
            )));
        }
        if request.tool.name == crate::run::CHECK_TOOL && !self.project_trusted {
            return Some(PersonOnly::UntrustedChecks(untrusted_checks_reason()));
        }
        if !self.sandboxed && (Self::runs_commands(request) || evaluation.is_unanalysable()) {
            return Some(PersonOnly::Unsandboxed(format!(
                "the OS sandbox is not available: {} would run unconfined, so only a person can approve it",
                request.tool.name
            )));
        }
        None
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        request: &GateRequest<'_>,
        decision: ApprovalDecision,
        approver: Approver,
        reason: Option<String>,
        policy: Option<PolicyEvaluation>,
    ) {
        self.sink
            .record(Record::ToolApprovalDecision(ToolApprovalDecision {
                tool_call_id: request.call.id.clone(),
                tool_name: request.tool.name.clone(),
                decision,
                approver,
                origin: request.origin.clone(),
                reason,
                args_summary: summarize_json(&request.call.arguments),
                permission_policy: policy,
            }));
    }

    async fn decide(
        &self,
        request: &GateRequest<'_>,
        history: Option<&str>,
        hooks: GateHooks<'_>,
    ) -> GateOutcome {
        let evaluation = self.policy.evaluate(&PermissionRequest {
            tool_name: &request.tool.name,
            arguments: &request.call.arguments,
            project_root: &self.project_root,
            session_history: history,
        });
        let journaled_policy = (!evaluation.matches.is_empty()
            || !evaluation.notes.is_empty()
            || evaluation.is_unanalysable()
            || evaluation.is_protected())
        .then(|| evaluation.clone());
        if let Some(message) = evaluation.denial_message() {
            self.record(
                request,
                ApprovalDecision::Denied,
                Approver::PermissionPolicy,
                Some(message.clone()),
                journaled_policy,
            );
            return GateOutcome::Refuse(message);
        }
        if evaluation.review_required {
            self.review_required.store(true, Ordering::SeqCst);
        }
        let person_only = self.person_only(request, &evaluation).or_else(|| {
            hooks.ask.map(|reason| {
                PersonOnly::HookAsked(format!(
                    "a PreToolUse hook asked that a person approve {} ({reason})",
                    request.tool.name
                ))
            })
        });
        let needs_approval = requires_approval(request.tool, &request.call.arguments, &evaluation)
            || person_only.is_some()
            || evaluation.is_unanalysable()
            || evaluation.is_protected();
        if !needs_approval {
            if evaluation.decision == Some(PolicyDecision::Allow) {
                self.record(
                    request,
                    ApprovalDecision::Allowed,
                    Approver::PermissionPolicy,
                    None,
                    journaled_policy,
                );
            }
            return GateOutcome::Allow;
        }
        // Approved per call only: never remembered for the session, nor taken from it.
        let once_only = matches!(
            person_only,
            Some(PersonOnly::Protected(_) | PersonOnly::HookAsked(_))
        );
        if !once_only && !evaluation.is_unanalysable() && self.session_approved(&request.tool.name)
        {
            self.record(
                request,
                ApprovalDecision::Approved,
                Approver::Human,
                Some("approved earlier for this session".into()),
                journaled_policy,
            );
            return GateOutcome::Allow;
        }
        if person_only.is_none() {
            if self.mode == Mode::Radical || self.permission == PermissionMode::Yes {
                let why = if self.mode == Mode::Radical {
                    "radical mode"
                } else {
                    "--yes"
                };
                let reason = if evaluation.is_unanalysable() {
                    "auto-approved: unanalysable, runs only inside the OS sandbox".to_string()
                } else {
                    format!("approved by {why}")
                };
                self.record(
                    request,
                    ApprovalDecision::AutoApproved,
                    Approver::ModePolicy,
                    Some(reason),
                    journaled_policy,
                );
                return GateOutcome::Allow;
            }
            if matches!(
                self.permission,
                PermissionMode::AllowEdits | PermissionMode::Ask
            ) && is_routine_check(request)
            {
                // Reached only with the OS sandbox and a trusted project (otherwise a person
                // decides): the runtime's own checks of a change run confined, so verifying
                // an edit needs no one.
                self.record(
                    request,
                    ApprovalDecision::Approved,
                    Approver::RuntimePolicy,
                    Some(format!(
                        "checks approved by {} mode: they run in the OS sandbox",
                        self.permission.label()
                    )),
                    journaled_policy,
                );
                return GateOutcome::Allow;
            }
            if self.permission == PermissionMode::AllowEdits
                && Self::runs_commands(request)
                // The checks have their own rule above: a CI change's need `--yes` or a person.
                && request.tool.name != crate::run::CHECK_TOOL
                && !evaluation.is_unanalysable()
                && evaluation.decision != Some(PolicyDecision::Ask)
            {
                // Reached only with the OS sandbox (without it `person_only` sends every
                // command to a person); a rule that says `ask` still asks.
                self.record(
                    request,
                    ApprovalDecision::Approved,
                    Approver::RuntimePolicy,
                    Some("command approved by edits mode: it runs in the OS sandbox".into()),
                    journaled_policy,
                );
                return GateOutcome::Allow;
            }
            if self.permission == PermissionMode::AllowEdits
                && request.tool.permission == ToolPermission::Write
            {
                self.record(
                    request,
                    ApprovalDecision::Approved,
                    Approver::RuntimePolicy,
                    Some("file edits approved by --allow-edits".into()),
                    journaled_policy,
                );
                return GateOutcome::Allow;
            }
        }
        // Why a person is asked: a protected path, a command without a sandbox or a hook's
        // request says so first; then what the rules said.
        let policy_summary = approval_summary(&person_only, &evaluation);
        if let Some(agent_hooks) = hooks.hooks {
            let answer = agent_hooks
                .permission_request(request.origin, request.call, &policy_summary)
                .await;
            if let Some(reason) = answer.blocked_reason {
                self.record(
                    request,
                    ApprovalDecision::Blocked,
                    Approver::Hook,
                    Some(reason.clone()),
                    journaled_policy,
                );
                return GateOutcome::Refuse(format!(
                    "blocked by a PermissionRequest hook: {reason}"
                ));
            }
            // A hook answers in a person's place, so only where a person could answer, and
            // never for what only a person may approve.
            if answer.decision == Some(braincode_protocol::HookDecision::Allow)
                && person_only.is_none()
                && self.handler.is_some()
            {
                self.record(
                    request,
                    ApprovalDecision::Approved,
                    Approver::Hook,
                    Some(
                        answer
                            .decision_reason
                            .unwrap_or_else(|| "approved by a PermissionRequest hook".into()),
                    ),
                    journaled_policy,
                );
                return GateOutcome::Allow;
            }
        }
        let Some(handler) = &self.handler else {
            let reason = match &person_only {
                Some(person) => person.reason().to_string(),
                None => format!(
                    "{} needs approval and nobody can approve it in this run; approve it in the TUI, or rerun with {} to allow it",
                    request.tool.name,
                    if request.tool.permission == ToolPermission::Write {
                        "--allow-edits or --yes"
                    } else {
                        "--yes"
                    }
                ),
            };
            self.record(
                request,
                ApprovalDecision::Blocked,
                Approver::RuntimePolicy,
                Some(reason.clone()),
                journaled_policy,
            );
            return GateOutcome::Refuse(format!("blocked: {reason}"));
        };
        let ask = ApprovalRequest {
            call_id: request.call.id.clone(),
            tool_name: request.tool.name.clone(),
            arguments: request.call.arguments.clone(),
            policy_summary,
            origin: request.origin.clone(),
            once_only: once_only.then(|| once_only_reason(&person_only).to_string()),
        };
        let answer = handler.decide(&ask).await;
        if matches!(person_only, Some(PersonOnly::Protected(_)))
            && matches!(
                answer,
                ApprovalAnswer::Approve | ApprovalAnswer::ApproveForSession
            )
        {
            lock(&self.protected_approved).insert(request.call.id.clone());
        }
        match answer {
            ApprovalAnswer::Approve => {
                self.record(
                    request,
                    ApprovalDecision::Approved,
                    Approver::Human,
                    None,
                    journaled_policy,
                );
                GateOutcome::Allow
            }
            ApprovalAnswer::ApproveForSession if once_only => {
                self.record(
                    request,
                    ApprovalDecision::Approved,
                    Approver::Human,
                    Some(format!("approved once: {}", once_only_reason(&person_only))),
                    journaled_policy,
                );
                GateOutcome::Allow
            }
            ApprovalAnswer::ApproveForSession => {
                self.approve_for_session(&request.tool.name);
                self.record(
                    request,
                    ApprovalDecision::Approved,
                    Approver::Human,
                    Some("approved for the rest of the session".into()),
                    journaled_policy,
                );
                GateOutcome::Allow
            }
            ApprovalAnswer::Block(reason) => {
                self.record(
                    request,
                    ApprovalDecision::Blocked,
                    Approver::Human,
                    Some(reason.clone()),
                    journaled_policy,
                );
                GateOutcome::Refuse(format!("blocked by the user: {reason}"))
            }
        }
    }
}

#[async_trait]
impl ToolGate for PolicyGate {
    async fn check(&self, request: GateRequest<'_>) -> GateOutcome {
        self.check_with_hooks(request, GateHooks::default()).await
    }

    async fn check_with_hooks(
        &self,
        request: GateRequest<'_>,
        hooks: GateHooks<'_>,
    ) -> GateOutcome {
        let typed = (request.tool.name == "write_stdin")
            .then(|| WriteStdinArgs::parse(&request.call.arguments).ok())
            .flatten();
        let history = typed
            .as_ref()
            .and_then(|args| self.typed_history(args.session_id));
        let outcome = self.decide(&request, history.as_deref(), hooks).await;
        if outcome == GateOutcome::Allow
            && let Some(args) = &typed
            && let Some(chars) = args.chars.as_deref().filter(|c| !c.is_empty())
        {
            self.remember_typed(args.session_id, chars);
        }
        outcome
    }

    fn person_approved_protected(&self, call_id: &str) -> bool {
        lock(&self.protected_approved).contains(call_id)
    }
}
