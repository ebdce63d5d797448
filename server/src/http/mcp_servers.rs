//! `GET /api/mcp/servers`: the MCP servers whose tools people turn on and off, for their conversations (each
//! conversation's choice, `PATCH /api/threads/{id}`) and as their default (`PATCH /api/settings`).

use axum::{extract::State, routing::get, Router};
use wire::{McpServer, McpServerList};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json};
use crate::mcp_tools::Approval;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/mcp/servers", get(list_servers))
}

/// `GET /api/mcp/servers`.
#[utoipa::path(get, path = "/api/mcp/servers", tag = "threads", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = McpServerList, description = "In the order they are configured; empty when there are none"),
        (status = 401, body = wire::ErrorBody)))]
pub async fn list_servers(State(state): State<AppState>, _: AuthUser) -> Json<McpServerList> {
    let servers = state
        .chat
        .mcp()
        .servers()
        .into_iter()
        .map(|(config, connected)| {
            let (approve, approve_tools) = match config.approval {
                Approval::Never => (false, Vec::new()),
                Approval::Always => (true, Vec::new()),
                Approval::Tools(tools) => (false, tools),
            };
            McpServer {
                name: config.name,
                label: config.label,
                connected,
                on_by_default: config.on_by_default,
                approve,
                approve_tools,
            }
        })
        .collect();
    Json(McpServerList { servers })
}

/// A choice of servers of a request (`mcp_servers`, checked by [`wire::checked_servers`]): `null` (back to the
/// default) or servers of this Quire; 422 otherwise.
pub fn checked_choice(state: &AppState, choice: Option<Option<Vec<String>>>) -> Result<Option<Option<Vec<String>>>> {
    let hub = state.chat.mcp();
    match choice {
        Some(Some(names)) if names.iter().any(|name| !hub.knows(name)) => {
            Err(ApiError::invalid("mcp_servers", "That is not a server of this Quire (see GET /api/mcp/servers)."))
        }
        other => Ok(other),
    }
}
