//! Approvals through the editor: `session/request_permission`, the same gate the terminal
//! UI answers.
//!
//! The request shows what the call would do (the diff of an edit, the command), and offers
//! allow once, allow for the session (not for a call only a person may approve, and then
//! never remembered) and reject. An editor that never answers does not hang the run: after
//! [`AcpOptions::permission_timeout`](crate::AcpOptions) the request is withdrawn
//! (`$/cancel_request`) and the call blocked with a reason the model can read; a cancelled
//! prompt's pending requests are withdrawn the same way.

use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    Diff, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, ToolCallContent, ToolCallLocation, ToolCallUpdate,
    ToolCallUpdateFields,
};
use async_trait::async_trait;
use braincode_runtime::{ApprovalAnswer, ApprovalHandler, ApprovalRequest};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::updates::{command_of, path_of, project_text, tool_kind, tool_title};

const ALLOW: &str = "allow";
const ALLOW_SESSION: &str = "allow-session";
const REJECT: &str = "reject";

/// What the model reads when the person rejected the call in the editor.
pub const REJECTED: &str = "the user rejected the request in the editor";

/// The run's approval handler when a person sits at an editor.
pub struct AcpApprover {
    pub(crate) connection: ConnectionTo<Client>,
    pub(crate) session_id: SessionId,
    pub(crate) project_root: PathBuf,
    pub(crate) timeout: Duration,
    /// The prompt's cancel: a pending request is withdrawn when it fires.
    pub(crate) cancel: CancellationToken,
}

#[async_trait]
impl ApprovalHandler for AcpApprover {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let asked = RequestPermissionRequest::new(
            self.session_id.clone(),
            self.tool_call(request),
            options(request.once_only.is_none()),
        );
        let sent = self.connection.send_request(asked);
        let cancel_handle = sent.cancellation_handle();
        let answer = tokio::select! {
            answer = sent.block_task() => answer,
            () = tokio::time::sleep(self.timeout) => {
                let _ = cancel_handle.cancel();
                return ApprovalAnswer::Block(format!(
                    "the editor did not answer the request to run {} within {} s",
                    request.tool_name,
                    self.timeout.as_secs()
                ));
            }
            () = self.cancel.cancelled() => {
                let _ = cancel_handle.cancel();
                return ApprovalAnswer::Block("the prompt was cancelled".into());
            }
        };
        match answer {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                    ALLOW => ApprovalAnswer::Approve,
                    ALLOW_SESSION if request.once_only.is_none() => {
                        ApprovalAnswer::ApproveForSession
                    }
                    ALLOW_SESSION => ApprovalAnswer::Approve,
                    REJECT => ApprovalAnswer::Block(REJECTED.into()),
                    other => ApprovalAnswer::Block(format!(
                        "the editor answered with an option that was not offered ({other:?})"
                    )),
                },
                RequestPermissionOutcome::Cancelled => {
                    ApprovalAnswer::Block("the editor cancelled the request".into())
                }
                // A newer protocol's outcome this version does not know: not an approval.
                _ => ApprovalAnswer::Block("the editor gave no decision".into()),
            },
            Err(err) => ApprovalAnswer::Block(format!(
                "the editor could not be asked to approve {}: {}",
                request.tool_name, err.message
            )),
        }
    }
}

impl AcpApprover {
    /// The call as the editor shows it: title, kind, files, and the diff or the command.
    fn tool_call(&self, request: &ApprovalRequest) -> ToolCallUpdate {
        let args = &request.arguments;
        let mut fields = ToolCallUpdateFields::new()
            .title(tool_title(&request.tool_name, Some(args)))
            .kind(tool_kind(&request.tool_name))
            .raw_input(args.clone());
        if let Some(path) = path_of(args) {
            fields = fields.locations(vec![ToolCallLocation::new(self.project_root.join(path))]);
        }
        let mut content = Vec::new();
        if let Some(diff) = self.proposed_diff(args) {
            content.push(ToolCallContent::Diff(diff));
        } else if let Some(command) = command_of(args) {
            content.push(ToolCallContent::from(format!("```sh\n{command}\n```")));
        }
        if let Some(reason) = &request.once_only {
            content.push(ToolCallContent::from(format!("Asked once only: {reason}")));
        }
        if !request.policy_summary.is_empty() {
            content.push(ToolCallContent::from(request.policy_summary.clone()));
        }
        fields = fields.content(content);
        ToolCallUpdate::new(request.call_id.clone(), fields)
    }

    /// The edit an `edit_file`/`write_file` call proposes: the replaced text and its
    /// replacement, or the file as it is and as it would be.
    fn proposed_diff(&self, args: &Value) -> Option<Diff> {
        let path = self.project_root.join(path_of(args)?);
        let text = |keys: &[&str]| {
            keys.iter()
                .find_map(|key| args.get(key).and_then(Value::as_str))
                .map(str::to_string)
        };
        if let Some(new) = text(&["newString", "new_string"]) {
            let old = text(&["oldString", "old_string"]);
            return Some(Diff::new(path, new).old_text(old));
        }
        let new = text(&["content"])?;
        // Contained: a path the model names may be a link to a secret, or a FIFO.
        let old = project_text(&self.project_root, &path);
        Some(Diff::new(path, new).old_text(old))
    }
}

fn options(for_session: bool) -> Vec<PermissionOption> {
    let mut options = vec![PermissionOption::new(
        ALLOW,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if for_session {
        options.push(PermissionOption::new(
            ALLOW_SESSION,
            "Allow for this session",
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    options
}
