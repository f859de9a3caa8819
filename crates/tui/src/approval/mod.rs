//! Approvals in the terminal: [`TuiApprover`] is the run's [`ApprovalHandler`], and
//! [`ApprovalPanel`] is where a person answers.
//!
//! The approver sends each request, with a one-shot reply channel, to the UI over an mpsc
//! channel and waits for the answer. Nothing hangs: when the UI is gone (the receiver
//! dropped) or drops a request without answering, the call is blocked with a reason the
//! model can read. When the run stops waiting (cancelled), the request's reply channel
//! closes and the panel drops it ([`ApprovalPanel::prune_abandoned`]).

mod content;
mod draw;
mod panel;

use async_trait::async_trait;
use braincode_runtime::{ApprovalAnswer, ApprovalHandler, ApprovalRequest};
use tokio::sync::{mpsc, oneshot};

pub use draw::draw;
pub use panel::{Answered, ApprovalPanel, PanelAction};

/// What the model reads when the user pressed `n`.
pub const DENIED: &str = "the user denied the request";
/// What the model reads when the user pressed Esc.
pub const DISMISSED: &str = "the user dismissed the request";

/// A request waiting in the UI, with where its answer goes.
#[derive(Debug)]
pub struct PendingApproval {
    /// What is asked.
    pub request: ApprovalRequest,
    /// The answer; dropping it blocks the call.
    pub reply: oneshot::Sender<ApprovalAnswer>,
}

/// The run's approval handler when a person sits at the terminal.
#[derive(Debug, Clone)]
pub struct TuiApprover {
    requests: mpsc::UnboundedSender<PendingApproval>,
}

impl TuiApprover {
    /// An approver, and the receiver the event loop drains into an [`ApprovalPanel`].
    pub fn new() -> (TuiApprover, mpsc::UnboundedReceiver<PendingApproval>) {
        let (requests, receiver) = mpsc::unbounded_channel();
        (TuiApprover { requests }, receiver)
    }
}

#[async_trait]
impl ApprovalHandler for TuiApprover {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let (reply, answer) = oneshot::channel();
        let pending = PendingApproval {
            request: request.clone(),
            reply,
        };
        if self.requests.send(pending).is_err() {
            return ApprovalAnswer::Block(format!(
                "no one was there to approve {}: the terminal UI is closed",
                request.tool_name
            ));
        }
        match answer.await {
            Ok(answer) => answer,
            Err(_) => ApprovalAnswer::Block(format!(
                "no one was there to approve {}: the request was closed without an answer",
                request.tool_name
            )),
        }
    }
}
