//! Wire types of the MCP servers whose tools models are offered: the list people choose from
//! (`GET /api/mcp/servers`), the choice itself (in the settings and on each conversation), and the calls that ask
//! the person first (`POST /api/threads/{id}/approvals/{approval_id}`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::validate::Invalid;

/// Most servers one choice names (as many as one Quire may have).
pub const MAX_CHOSEN_SERVERS: usize = 16;
/// Longest server name accepted in a choice, in characters.
pub const MAX_SERVER_NAME_CHARS: usize = 24;
/// Most characters of a call's arguments (as compact JSON) a question shows; longer ones are cut.
pub const MAX_APPROVAL_INPUT_CHARS: usize = 16 * 1024;

/// One MCP server of this Quire, as people see it: no command, address or secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpServer {
    /// What a choice names (`a-z`, `0-9`, `-`).
    pub name: String,
    /// What people see.
    pub label: String,
    /// Whether it is connected now (its tools are offered only then).
    pub connected: bool,
    /// Whether its tools are offered where nobody chose.
    pub on_by_default: bool,
    /// Whether every call of its tools asks the person first.
    pub approve: bool,
    /// The tools whose calls ask the person first (when not all of them do).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve_tools: Vec<String>,
}

/// `GET /api/mcp/servers`: the MCP servers, in the order they are configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct McpServerList {
    pub servers: Vec<McpServer>,
}

/// Where a call that asks the person first stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Waiting for the person.
    Pending,
    /// Approved: the call ran.
    Approved,
    /// Denied: the call did not run, and the model was told.
    Denied,
    /// Nobody decided in time, or the answer was stopped: the call did not run.
    Expired,
}

impl ApprovalState {
    /// The name used on the wire and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Denied => "denied",
            ApprovalState::Expired => "expired",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Pending, Self::Approved, Self::Denied, Self::Expired].into_iter().find(|s| s.as_str() == text)
    }
}

/// A call of an MCP tool that asks the person before it runs: shown in the conversation with Approve and Deny.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolApproval {
    pub id: Uuid,
    pub thread_id: Uuid,
    /// The turn that waits for it.
    pub turn_id: Uuid,
    /// The server's name, and its label when the question was asked.
    pub server: String,
    pub label: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// The call's arguments; a string of the first [`MAX_APPROVAL_INPUT_CHARS`] characters of their JSON, ending
    /// in `…`, when they are longer.
    pub input: serde_json::Value,
    pub state: ApprovalState,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339_or_null"))]
    pub decided_at: Option<DateTime<Utc>>,
}

/// `POST /api/threads/{id}/approvals/{approval_id}`: the person's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DecideApproval {
    /// `true` runs the call; `false` tells the model the person denied it.
    pub approve: bool,
}

/// The arguments of a call as a question shows them: as they are, or cut (see [`ToolApproval::input`]).
pub fn shown_input(input: &serde_json::Value) -> serde_json::Value {
    let text = input.to_string();
    if text.chars().count() <= MAX_APPROVAL_INPUT_CHARS {
        return input.clone();
    }
    let mut cut: String = text.chars().take(MAX_APPROVAL_INPUT_CHARS).collect();
    cut.push('…');
    serde_json::Value::String(cut)
}

/// A choice of servers as sent (`mcp_servers`): each name trimmed, none twice, within the limits. Whether each is a
/// server of this Quire is the server's to say.
pub fn checked_servers(names: Vec<String>) -> Result<Vec<String>, Invalid> {
    let field = "mcp_servers";
    if names.len() > MAX_CHOSEN_SERVERS {
        return Err(Invalid::new(field, format!("Choose at most {MAX_CHOSEN_SERVERS} servers.")));
    }
    let mut chosen: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > MAX_SERVER_NAME_CHARS || name.chars().any(char::is_control) {
            return Err(Invalid::new(field, "That is not a server of this Quire (see GET /api/mcp/servers)."));
        }
        if !chosen.iter().any(|c| c == name) {
            chosen.push(name.to_string());
        }
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_by_name() {
        for state in [ApprovalState::Pending, ApprovalState::Approved, ApprovalState::Denied, ApprovalState::Expired] {
            assert_eq!(ApprovalState::parse(state.as_str()), Some(state));
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
        assert_eq!(ApprovalState::parse("maybe"), None);
    }

    #[test]
    fn long_arguments_are_cut_for_showing() {
        let small = serde_json::json!({ "message": "hi" });
        assert_eq!(shown_input(&small), small);
        let large = serde_json::json!({ "message": "é".repeat(MAX_APPROVAL_INPUT_CHARS) });
        let serde_json::Value::String(cut) = shown_input(&large) else { panic!("a long input is cut to a string") };
        assert_eq!(cut.chars().count(), MAX_APPROVAL_INPUT_CHARS + 1);
        assert!(cut.starts_with("{\"message\":\"é") && cut.ends_with('…'));
    }

    #[test]
    fn choices_are_trimmed_without_repeats_and_bounded() {
        let chosen = checked_servers(vec![" tracker ".into(), "wiki".into(), "tracker".into()]).unwrap();
        assert_eq!(chosen, ["tracker", "wiki"]);
        assert_eq!(checked_servers(Vec::new()).unwrap(), Vec::<String>::new());
        assert!(checked_servers(vec![" ".into()]).is_err());
        assert!(checked_servers(vec!["x".repeat(MAX_SERVER_NAME_CHARS + 1)]).is_err());
        assert!(checked_servers(vec!["a\nb".into()]).is_err());
        let many = (0..=MAX_CHOSEN_SERVERS).map(|i| format!("s{i}")).collect();
        assert_eq!(checked_servers(many).unwrap_err().field, "mcp_servers");
    }
}
