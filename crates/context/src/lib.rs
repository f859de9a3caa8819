//! Behaviour on the layered task contexts and the typed packets that cross between them.
//!
//! The Brain owns the orchestration context ([`BrainTaskContext`]); each worker owns exactly
//! one isolated task context ([`AgentTaskContext`]). Only two packets cross that boundary: a
//! [`HandoffPacket`] (brain → agent) and a [`WorkerResult`] (agent → brain), each carrying
//! direction tags that refuse the wrong direction. No agent-to-agent packet exists.
//!
//! The shapes are `braincode_protocol`'s (so the journal records carry them typed) and are
//! re-exported here; this crate builds them ([`HandoffPacketExt`], [`WorkerResultExt`]).
//! It also owns what turns model text into those packets (the worker and review
//! normalizers and their bounded reply schemas), the public context budgets, and the bounded
//! handoff summary. It is pure: no I/O, no async, no network.

pub mod budget;
mod handoff_summary;
mod packet;
mod reply;
mod reply_schema;
mod review;
pub mod text;
mod worker_result;

pub use braincode_protocol::{
    AgentLayer, AgentTaskContext, BrainLayer, BrainTaskContext, ContextLayer, HandoffPacket,
    WorkerResult,
};
pub use budget::{
    AT_FILE_MAX_BYTES, HANDOFF_SUMMARY_MAX_CHARS, SESSION_SNAPSHOT_MAX_CHARS,
    SNAPSHOT_FIELD_MAX_CHARS, TURN_LINE_MAX_CHARS,
};
pub use handoff_summary::{
    HandoffSummary, HandoffTurn, TURN_LINE_START, bound_handoff_summary, is_turn_line, turn_prefix,
};
pub use packet::{
    BRAIN_ADDRESS, HANDOFF_CONSTRAINTS, HandoffPacketExt, WorkerResultExt, agent_address,
    handoff_message, result_message, result_message_from,
};
pub use reply::{JsonReplyError, extract_json_object};
pub use reply_schema::{
    ReplyArtifact, ReplyArtifactKind, ReplyFinding, ReplyProgress, ReplySeverity, ReplyStatus,
    ReplyVerdict, ReviewReplyDecision, SCHEMA_MAX_ITEM_CHARS, SCHEMA_MAX_LIST_ITEMS,
    SCHEMA_MAX_SUMMARY_CHARS, WorkerReply, derived_schema, review_result_schema,
    worker_result_schema,
};
pub use review::{NO_STRUCTURED_DECISION, ReviewOutcome, normalize_review_decision};
pub use text::{clip_bytes, clip_chars};
pub use worker_result::{
    EMPTY_WORKER_RESPONSE, MISSING_SUMMARY, echoes_template, normalize_worker_result,
};
