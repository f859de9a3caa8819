//! The agent loop's side of compaction: when to compact (before a call, at the policy's
//! trigger; after the provider said the context overflowed, once and harder), the summary
//! block it keeps, and the `compaction` records. A replay or a resume compacts exactly where
//! the journal says the run did (the estimate depends on text a replay does not rebuild, such
//! as the environment lines), so the conversation the model is served against is the same.
//! `PreCompact` fires before a compaction that would shrink the conversation (a block holds an
//! automatic one), `PostCompact` after it, with the summary.

use braincode_llm::ChatMessage;
use braincode_protocol::{CompactionRecord, CompactionTrigger, Record};

use super::compact::{self, Ask, Compacted, NotCompacted};
use crate::hooks::{HookEvent, HookResult};

/// What `PreCompact`/`PostCompact` matchers see: compaction is never asked for by hand here.
const HOOK_TRIGGER: &str = "auto";
use super::{AgentServices, AgentSetup};

/// What one agent's compaction has done so far.
#[derive(Debug, Default)]
pub(super) struct Compacting {
    /// The summary block of compacted turns.
    summary: String,
    /// The conversation length at which compaction last could not shrink it (not tried
    /// again until it grows).
    failed_at: Option<usize>,
    /// Whether a context overflow was already answered with a compaction.
    overflow_done: bool,
}

impl Compacting {
    /// The system prompt of the next request: the role's, then the summary block.
    pub fn system(&self, setup: &AgentSetup) -> String {
        compact::system_with_summary(&setup.system_prompt, &self.summary)
    }

    /// Before model call `call`: compacts when the conversation reached the trigger.
    pub async fn before_call(
        &mut self,
        setup: &AgentSetup,
        services: &AgentServices,
        messages: &mut Vec<ChatMessage>,
        call: u32,
    ) {
        if self.failed_at == Some(messages.len()) {
            return;
        }
        self.step(setup, services, messages, call, CompactionTrigger::Auto)
            .await;
    }

    /// After call `call - 1` failed with "context too long": compacts harder, once. Whether
    /// the call may be made again.
    pub async fn after_overflow(
        &mut self,
        setup: &AgentSetup,
        services: &AgentServices,
        messages: &mut Vec<ChatMessage>,
        call: u32,
    ) -> bool {
        if self.overflow_done || setup.compaction.is_none() {
            return false;
        }
        self.overflow_done = true;
        self.step(setup, services, messages, call, CompactionTrigger::Overflow)
            .await
    }

    async fn step(
        &mut self,
        setup: &AgentSetup,
        services: &AgentServices,
        messages: &mut Vec<ChatMessage>,
        call: u32,
        trigger: CompactionTrigger,
    ) -> bool {
        let Some(policy) = &setup.compaction else {
            return false;
        };
        let session = setup.origin.agent_session_id.clone().unwrap_or_default();
        let tape = services.tape.as_deref();
        let live_ask = match trigger {
            CompactionTrigger::Auto => Ask::AtTrigger,
            CompactionTrigger::Overflow => Ask::Harder,
        };
        match tape.and_then(|tape| tape.compaction(&session, call, trigger)) {
            Some((record, own)) => {
                // Where the journal compacted, compact the same way (and say so again in a
                // replay; a resume does not journal it twice).
                let replay_ask = match trigger {
                    CompactionTrigger::Auto => Ask::Now,
                    CompactionTrigger::Overflow => Ask::Harder,
                };
                if let Some(hooks) = services.hooks.as_deref() {
                    hooks.journaled_compaction(HookEvent::PreCompact, &setup.origin);
                }
                let applied = record.applied
                    && match compact::compact(
                        &setup.system_prompt,
                        &self.summary,
                        messages,
                        policy,
                        replay_ask,
                    ) {
                        Ok(done) => {
                            self.apply(done, messages);
                            true
                        }
                        Err(_) => false,
                    };
                if !record.applied {
                    self.failed_at = Some(messages.len());
                }
                if own {
                    if let Some(reason) = record.reason.as_deref().filter(|_| !record.applied) {
                        services.sink.warning(not_compacted_warning(
                            setup,
                            reason,
                            record.tokens_before,
                        ));
                    }
                    services.sink.record(Record::Compaction(record));
                }
                if applied && let Some(hooks) = services.hooks.as_deref() {
                    hooks.journaled_compaction(HookEvent::PostCompact, &setup.origin);
                }
                applied
            }
            None if tape.is_some_and(crate::tape::Tape::is_strict) => false,
            None => {
                match compact::compact(
                    &setup.system_prompt,
                    &self.summary,
                    messages,
                    policy,
                    live_ask,
                ) {
                    Ok(done) => {
                        let hooks = services.hooks.as_deref();
                        let pre = match hooks {
                            Some(hooks) => hooks.pre_compact(&setup.origin, HOOK_TRIGGER).await,
                            None => HookResult::default(),
                        };
                        // A hook may hold an early compaction; an overflow cannot wait.
                        if let Some(held) = pre.blocked_reason.as_deref() {
                            if trigger == CompactionTrigger::Auto {
                                let tokens = done.tokens_before as u64;
                                let reason = format!("a PreCompact hook held it: {held}");
                                services
                                    .sink
                                    .warning(not_compacted_warning(setup, &reason, tokens));
                                services.sink.record(Record::Compaction(not_applied(
                                    session, call, trigger, tokens, reason,
                                )));
                                self.failed_at = Some(messages.len());
                                return false;
                            }
                            services.sink.warning(format!(
                                "{}: a PreCompact hook asked to hold compaction ({held}), but the provider said the context overflowed; compacting anyway",
                                setup.agent.role
                            ));
                        }
                        let record = applied_record(session, call, trigger, &done);
                        self.apply(done, messages);
                        services.sink.record(Record::Compaction(record));
                        if let Some(hooks) = hooks {
                            hooks
                                .post_compact(&setup.origin, HOOK_TRIGGER, &self.summary)
                                .await;
                        }
                        true
                    }
                    Err(NotCompacted::Small) => false,
                    Err(why) => {
                        let tokens = compact::estimate_tokens(&setup.system_prompt, messages);
                        let reason = reason_of(&why);
                        services
                            .sink
                            .warning(not_compacted_warning(setup, reason, tokens as u64));
                        services.sink.record(Record::Compaction(not_applied(
                            session,
                            call,
                            trigger,
                            tokens as u64,
                            reason.to_string(),
                        )));
                        self.failed_at = Some(messages.len());
                        false
                    }
                }
            }
        }
    }

    fn apply(&mut self, done: Compacted, messages: &mut Vec<ChatMessage>) {
        self.summary = done.summary;
        *messages = done.messages;
    }
}

/// What the user is told when a conversation could not be made smaller.
fn not_compacted_warning(setup: &AgentSetup, reason: &str, tokens: u64) -> String {
    format!(
        "{}: the conversation could not be compacted ({reason}); it goes on at ~{tokens} tokens",
        setup.agent.role
    )
}

fn reason_of(why: &NotCompacted) -> &'static str {
    match why {
        NotCompacted::Small => "under the trigger",
        NotCompacted::NothingToDrop => {
            "every remaining message is kept verbatim (the request and the latest turns)"
        }
        NotCompacted::NotSmaller => "the summary would not be smaller",
    }
}

/// The record of a compaction that did not happen, and why.
fn not_applied(
    session: String,
    call: u32,
    trigger: CompactionTrigger,
    tokens: u64,
    reason: String,
) -> CompactionRecord {
    CompactionRecord {
        agent_session_id: Some(session),
        call,
        trigger,
        applied: false,
        tokens_before: tokens,
        tokens_after: tokens,
        turns_summarized: 0,
        lines_dropped: 0,
        summary: String::new(),
        reason: Some(reason),
    }
}

fn applied_record(
    session: String,
    call: u32,
    trigger: CompactionTrigger,
    done: &Compacted,
) -> CompactionRecord {
    CompactionRecord {
        agent_session_id: Some(session),
        call,
        trigger,
        applied: true,
        tokens_before: done.tokens_before as u64,
        tokens_after: done.tokens_after as u64,
        turns_summarized: done.turns_summarized as u64,
        lines_dropped: done.lines_dropped as u64,
        summary: done.summary.clone(),
        reason: None,
    }
}
