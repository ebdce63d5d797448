//! `/mcp`: Quire as a Model Context Protocol server over streamable HTTP, stateless (each `POST` is one JSON-RPC
//! exchange answered with JSON; no session kept between requests, so any instance can answer any request).
//!
//! Only personal API tokens sign in here ([`TokenUser`]): a session's cookie or bearer token gets a 401, so no
//! page of another site can make a browser call it. Every request counts against its owner's general rate limit,
//! a search also against the search limit. The tools only read, through the same store calls as the API's routes,
//! as the token's owner: another person's conversation or document is "not found", exactly like a missing one.

use std::sync::Arc;

use axum::{
    extract::{FromRequestParts, Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
    Router,
};
use rmcp::{
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    },
    ErrorData, RoleServer, ServerHandler,
};
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use uuid::Uuid;
use wire::{Artifact, ArtifactType, OutOfDate, SearchResults};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, TokenUser};
use crate::auth::api_token::MCP_ROUTE;
use crate::AppState;
use store::{ThreadQuery, ThreadSort};

/// Longest document text a tool answers with, in characters; a longer one is cut, and says so.
pub const MAX_DOCUMENT_CHARS: usize = 100_000;
/// Search hits per call unless asked otherwise.
const DEFAULT_SEARCH_LIMIT: u32 = 10;
/// Most search hits per call (an assistant reads them all; the API pages further).
const MAX_SEARCH_LIMIT: u32 = 50;
/// Conversations listed per call unless asked otherwise.
const DEFAULT_LIST_LIMIT: u32 = 20;
/// Most conversations listed per call.
const MAX_LIST_LIMIT: u32 = 100;

/// The `/mcp` route: the protocol's service behind the token check.
pub fn router(state: AppState) -> Router<AppState> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(super::MAX_BODY_BYTES)
        // The `Host` check guards servers that anyone on the machine may call; here a token must come with each
        // request, which no rebinding of a name can borrow.
        .disable_allowed_hosts();
    let tools = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(Tools { state: tools.clone() }),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(MCP_ROUTE, service)
        .route_layer(axum::middleware::from_fn_with_state(state, signed_in_by_token))
        .layer(super::headers::no_store())
}

/// Lets a request through when it carries a live API token (counted against its owner's rate limit; the
/// [`AuthUser`] left in its extensions for the tools), else answers as the API does (401, 403, 429).
async fn signed_in_by_token(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    if let Err(refusal) = TokenUser::from_request_parts(&mut parts, &state).await {
        return refusal.into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}

/// The protocol's server: Quire's read tools, for the person the request's token belongs to.
#[derive(Clone)]
struct Tools {
    state: AppState,
}

/// Arguments of `search_conversations`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// Words, "phrases" and prefix*; at most 1000 characters.
    query: String,
    /// Most hits to return, 1 to 50 (default 10).
    #[serde(default)]
    limit: Option<u32>,
    /// Search this project's conversations (a project one is a member of) instead of one's own.
    #[serde(default)]
    project_id: Option<Uuid>,
}

/// Arguments of `list_conversations`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListConversationsArgs {
    /// Most conversations to return, 1 to 100 (default 20), most recently changed first.
    #[serde(default)]
    limit: Option<u32>,
}

/// Arguments of the tools about one conversation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConversationArgs {
    /// The conversation's id.
    conversation_id: Uuid,
}

/// Arguments of `read_document`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadDocumentArgs {
    /// The document's id.
    document_id: Uuid,
    /// The version to read (1 is the first); the current one when left out.
    #[serde(default)]
    version: Option<i64>,
}

/// A document in a list: what it is, without its text.
#[derive(Debug, Serialize)]
struct DocumentSummary {
    id: Uuid,
    conversation_id: Uuid,
    title: String,
    artifact_type: ArtifactType,
    version: i64,
    created_at: chrono::DateTime<chrono::Utc>,
    /// The requirement keys its current version cites.
    requirements: Vec<String>,
    /// The requirements it reflects that changed or were dropped since.
    out_of_date: Vec<OutOfDate>,
}

impl From<Artifact> for DocumentSummary {
    fn from(artifact: Artifact) -> Self {
        Self {
            id: artifact.id,
            conversation_id: artifact.thread_id,
            title: artifact.title,
            artifact_type: artifact.artifact_type,
            version: artifact.version,
            created_at: artifact.created_at,
            requirements: artifact.requirements,
            out_of_date: artifact.out_of_date,
        }
    }
}

/// A document's text at one version, cut to [`MAX_DOCUMENT_CHARS`].
#[derive(Debug, Serialize)]
struct DocumentText {
    id: Uuid,
    title: String,
    version: i64,
    /// The newest version (when `version` is an older one, the text is not the current one).
    current_version: i64,
    created_at: chrono::DateTime<chrono::Utc>,
    content: String,
    /// Whether `content` is cut short.
    truncated: bool,
    /// The requirement keys the current version cites (for the current version only).
    #[serde(skip_serializing_if = "Option::is_none")]
    requirements: Option<Vec<String>>,
    /// What the current version reflects that changed or was dropped since (for the current version only).
    #[serde(skip_serializing_if = "Option::is_none")]
    out_of_date: Option<Vec<OutOfDate>>,
}

/// `text` cut to at most `max` characters, and whether it was.
fn cut(text: String, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((end, _)) => {
            let mut text = text;
            text.truncate(end);
            text.push_str("\n\n[… cut here: the document is longer than this tool returns]");
            (text, true)
        }
        None => (text, false),
    }
}

/// A tool's description, its arguments' schema, read-only.
fn tool<A: JsonSchema + 'static>(name: &'static str, description: &'static str) -> Tool {
    let annotations = ToolAnnotations::new().read_only(true);
    Tool::new(name, description, rmcp::handler::server::common::schema_for_type::<A>()).annotate(annotations)
}

/// Every tool offered.
fn tools() -> Vec<Tool> {
    vec![
        tool::<SearchArgs>(
            "search_conversations",
            "Full-text search over your conversations' messages, titles and documents (or a project's), best \
             match first. Each hit names its conversation and, for a document, its id.",
        ),
        tool::<ListConversationsArgs>(
            "list_conversations",
            "Your conversations, most recently changed first: id, title, tags, message count.",
        ),
        tool::<ConversationArgs>(
            "list_documents",
            "The documents of a conversation: id, title, type, current version, the requirements the current \
             version cites and those it reflects that changed since (out of date). No text: read it with \
             read_document.",
        ),
        tool::<ReadDocumentArgs>(
            "read_document",
            "A document's text at its current version or a chosen one (cut past 100,000 characters, which the \
             answer says).",
        ),
        tool::<ConversationArgs>(
            "list_requirements",
            "A conversation's requirements ledger: each requirement with its status, history and the documents \
             that cover it, and the keys in force that no document covers.",
        ),
    ]
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("quire", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Read-only access to your Quire conversations, their documents and requirements ledgers. Ids are \
                 UUIDs; search or list first to find them.",
            )
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let user = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<AuthUser>())
            .copied()
            .ok_or_else(|| ErrorData::internal_error("the request is not signed in", None))?;
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let answer = match &*request.name {
            "search_conversations" => self.search(user, arguments).await,
            "list_conversations" => self.conversations(user, arguments).await,
            "list_documents" => self.documents(user, arguments).await,
            "read_document" => self.read_document(user, arguments).await,
            "list_requirements" => self.requirements(user, arguments).await,
            other => return Err(ErrorData::invalid_params(format!("There is no tool named `{other}`."), None)),
        };
        Ok(match answer {
            Ok(json) => CallToolResult::success(vec![ContentBlock::text(json)]),
            Err(error) => CallToolResult::error(vec![ContentBlock::text(refusal(error))]),
        }
        .into())
    }
}

/// A tool's arguments, or the error that says what is wrong with them.
fn arguments_of<A: DeserializeOwned>(arguments: serde_json::Value) -> Result<A> {
    serde_json::from_value(arguments)
        .map_err(|e| ApiError::unprocessable("invalid_arguments", format!("Invalid arguments: {e}."), None))
}

/// The text of a tool error: the API's code and public message (an internal cause is logged, never sent).
fn refusal(error: ApiError) -> String {
    if let ApiError::Internal(cause) = &error {
        tracing::error!(error = ?cause, reference = super::error::request_id().unwrap_or_default(), "internal error");
    }
    format!("{}: {}", error.code(), error.public_message())
}

/// A tool's answer as JSON text.
fn json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| ApiError::Internal(e.into()))
}

/// `limit` or `default`, when within `1..=max`.
fn limit(limit: Option<u32>, default: u32, max: u32) -> Result<u32> {
    let limit = limit.unwrap_or(default);
    if (1..=max).contains(&limit) {
        Ok(limit)
    } else {
        Err(ApiError::invalid("limit", format!("The limit must be between 1 and {max}.")))
    }
}

/// Each tool: the store's calls the matching API route makes, as the token's owner.
impl Tools {
    async fn search(&self, user: AuthUser, arguments: serde_json::Value) -> Result<String> {
        let args: SearchArgs = arguments_of(arguments)?;
        let limit = limit(args.limit, DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT)?;
        if args.query.chars().count() > super::search::MAX_QUERY_CHARS {
            let max = super::search::MAX_QUERY_CHARS;
            return Err(ApiError::invalid("query", format!("The query is longer than {max} characters.")));
        }
        self.state.limits.check_search(user.id).await?;
        let store = &self.state.store;
        let page = match args.project_id {
            Some(project) => store.search_project(user.id, project, &args.query, limit, 0).await?,
            None => store.search(user.id, &args.query, limit, 0).await?,
        };
        json(&SearchResults {
            results: page.hits.into_iter().map(super::search::result).collect(),
            total: page.total,
            total_is_lower_bound: page.total_is_lower_bound,
            next_cursor: None,
        })
    }

    async fn conversations(&self, user: AuthUser, arguments: serde_json::Value) -> Result<String> {
        let args: ListConversationsArgs = arguments_of(arguments)?;
        let limit = limit(args.limit, DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT)?;
        let query = ThreadQuery { limit, sort: ThreadSort::UpdatedAt, descending: true, ..ThreadQuery::default() };
        let page = self.state.store.list_threads(user.id, &query).await?;
        json(&page.threads)
    }

    async fn documents(&self, user: AuthUser, arguments: serde_json::Value) -> Result<String> {
        let args: ConversationArgs = arguments_of(arguments)?;
        let thread = args.conversation_id;
        let mut artifacts = self.state.store.list_artifacts(user.id, thread).await?;
        super::artifacts::mark(&self.state, user.id, thread, &mut artifacts).await?;
        json(&artifacts.into_iter().map(DocumentSummary::from).collect::<Vec<_>>())
    }

    async fn read_document(&self, user: AuthUser, arguments: serde_json::Value) -> Result<String> {
        let args: ReadDocumentArgs = arguments_of(arguments)?;
        let mut current = self.state.store.get_artifact(user.id, args.document_id).await?;
        let text = match args.version.filter(|v| *v != current.version) {
            Some(version) => {
                let old = self.state.store.get_artifact_version(user.id, args.document_id, version).await?;
                let (content, truncated) = cut(old.content, MAX_DOCUMENT_CHARS);
                DocumentText {
                    id: old.artifact_id,
                    title: old.title,
                    version: old.version,
                    current_version: current.version,
                    created_at: old.created_at,
                    content,
                    truncated,
                    requirements: None,
                    out_of_date: None,
                }
            }
            None => {
                super::artifacts::mark(&self.state, user.id, current.thread_id, std::slice::from_mut(&mut current))
                    .await?;
                let (content, truncated) = cut(current.content, MAX_DOCUMENT_CHARS);
                DocumentText {
                    id: current.id,
                    title: current.title,
                    version: current.version,
                    current_version: current.version,
                    created_at: current.created_at,
                    content,
                    truncated,
                    requirements: Some(current.requirements),
                    out_of_date: Some(current.out_of_date),
                }
            }
        };
        json(&text)
    }

    async fn requirements(&self, user: AuthUser, arguments: serde_json::Value) -> Result<String> {
        let args: ConversationArgs = arguments_of(arguments)?;
        let (_, view) = crate::chat::ledger::marked(&self.state.store, user.id, args.conversation_id).await?;
        json(&view.ledger())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_documents_are_cut_on_a_character_and_say_so() {
        assert_eq!(cut("héllo".into(), 5), ("héllo".into(), false));
        let (text, truncated) = cut("héllo wörld".into(), 7);
        assert!(truncated);
        assert!(text.starts_with("héllo w\n\n[… cut here"), "{text}");
    }

    #[test]
    fn every_tool_has_an_object_schema_and_only_reads() {
        let tools = tools();
        assert_eq!(tools.len(), 5);
        for tool in tools {
            assert_eq!(tool.input_schema.get("type").and_then(|t| t.as_str()), Some("object"), "{}", tool.name);
            assert_eq!(tool.annotations.and_then(|a| a.read_only_hint), Some(true));
        }
    }
}
