//! Calls of MCP tools that ask the person first (a server's `approve`, or its `approve_tools`). Before such a call
//! the turn keeps a question in the store and tells everyone following the answer (`approval_requested`), then
//! waits: until someone who writes in the conversation decides (`POST /api/threads/{id}/approvals/{approval_id}`,
//! on any instance: the turn reads the question again every [`POLL_EVERY`]), until the person stops the answer, or
//! until the wait is over (`QUIRE_MCP_APPROVAL_SECONDS`), when the question expires. Only an approved call runs;
//! the model is told any other was denied. A reload, or another browser, finds the question in the conversation
//! (`GET /api/threads/{id}`) while the turn waits.

use std::{sync::Arc, time::Duration};

use serde_json::Value;
use tokio::time::Instant;
use uuid::Uuid;
use wire::{ApprovalState, ChatEvent, ToolApproval};

use super::hub::LiveTurn;
use crate::mcp_tools::Offered;
use store::{DynStore, NewApproval};

/// How often a waiting turn reads its question again.
pub const POLL_EVERY: Duration = Duration::from_millis(300);

/// The question of one call: who asks, and where.
pub(super) struct Question {
    pub store: DynStore,
    pub live: Arc<LiveTurn>,
    /// The conversation and its author.
    pub thread: Uuid,
    pub user: Uuid,
    /// Who sent the message the turn answers.
    pub sender: Uuid,
}

impl Question {
    /// Keeps the question of calling `tool` (of the server labelled `label`) with `input`, and tells the answer's
    /// listeners; `None` when it could not be kept (nobody could approve the call, so it is not made).
    pub async fn ask(&self, label: &str, tool: &Offered, input: &Value) -> Option<ToolApproval> {
        let new = NewApproval {
            turn: self.live.id,
            thread: self.thread,
            user: self.user,
            sender: self.sender,
            server: tool.server.clone(),
            label: label.to_string(),
            tool: tool.tool.clone(),
            input: wire::shown_input(input),
        };
        match self.store.ask_approval(&new).await {
            Ok(approval) => {
                self.live.push(ChatEvent::ApprovalRequested { approval: approval.clone() });
                Some(approval)
            }
            Err(e) => {
                tracing::error!(error = %e, server = %tool.server, tool = %tool.tool, "keeping a question failed");
                None
            }
        }
    }

    /// Waits for the decision on the question `id`, at most `within` (or until the answer is stopped, when the
    /// question expires at once), and tells the answer's listeners how it was decided.
    pub async fn wait(&self, id: Uuid, within: Duration) -> ApprovalState {
        let deadline = Instant::now() + within;
        let decided = loop {
            if self.live.is_cancelled() || Instant::now() >= deadline {
                break None;
            }
            let pause = POLL_EVERY.min(deadline.saturating_duration_since(Instant::now()));
            tokio::select! {
                biased;
                () = self.live.cancelled() => break None,
                () = tokio::time::sleep(pause) => {}
            }
            match self.store.approval_state(id).await {
                Ok(ApprovalState::Pending) => {}
                Ok(state) => break Some(state),
                // Read again at the next pause; the deadline still holds.
                Err(e) => tracing::warn!(error = %e, approval = %id, "reading a question failed"),
            }
        };
        let state = match decided {
            Some(state) => state,
            // A decision made at the last moment stands; one that cannot be read is no approval.
            None => self.store.expire_approval(id).await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, approval = %id, "expiring a question failed");
                ApprovalState::Expired
            }),
        };
        self.live.push(ChatEvent::ApprovalDecided { approval_id: id, state });
        state
    }
}

/// What the model is told of a call that did not run because it was not approved.
pub fn refusal(state: ApprovalState, label: &str, tool: &str) -> String {
    match state {
        ApprovalState::Denied => format!(
            "The person denied this call, so the {label} tool {tool} did not run. Do not call it again unless they \
             ask for it."
        ),
        _ => format!("Nobody approved this call in time, so the {label} tool {tool} did not run."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_hears_why_a_call_did_not_run() {
        let denied = refusal(ApprovalState::Denied, "Tracker", "delete_issue");
        assert!(denied.contains("denied") && denied.contains("Tracker tool delete_issue"), "{denied}");
        let expired = refusal(ApprovalState::Expired, "Tracker", "delete_issue");
        assert!(expired.contains("in time") && !expired.contains("denied"), "{expired}");
    }
}
