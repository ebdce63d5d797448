//! The browser's calls to the Quire API (gloo-net), including the incremental reading of a chat stream.

use gloo_net::http::{Request, RequestBuilder, Response};
use js_sys::{Reflect, Uint8Array};
use serde::{de::DeserializeOwned, Serialize};
use uuid::Uuid;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::ReadableStreamDefaultReader;

use super::sse::SseParser;
use super::{
    Artifact, ArtifactVersionList, AttachmentList, AuthResponse, ChangePasswordRequest, ChatEvent, ChatRequest,
    ContextRecord, CreateThread, DeleteAccountRequest, ErrorBody, HistoryStats, ImportResult, Ledger, LoginRequest,
    RegisterRequest, Requirement, SearchResults, SessionList, TagList, Thread, ThreadChange, ThreadDetail, ThreadList,
    UpdateRequirement, UpdateThread, UserProfile, VersionDiff,
};

/// Conversations per page of the sidebar.
pub const THREAD_PAGE: u32 = 50;
/// Search hits per page.
pub const SEARCH_PAGE: u32 = 20;

/// A failed call, with a message fit to show.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

type ApiResult<T> = Result<T, ApiError>;

pub(crate) fn network_error(err: impl std::fmt::Display) -> ApiError {
    ApiError { status: 0, code: "network".into(), message: format!("Could not reach Quire: {err}") }
}

pub(crate) async fn read_json<T: DeserializeOwned>(response: Response) -> ApiResult<T> {
    if response.ok() {
        return response.json::<T>().await.map_err(network_error);
    }
    Err(error_of(response).await)
}

/// Sends `request`; not reaching the server is an [`ApiError`] too.
pub(crate) async fn send(request: RequestBuilder) -> ApiResult<Response> {
    request.send().await.map_err(network_error)
}

/// Sends `request` with `body` as its JSON.
pub(crate) async fn send_json(request: RequestBuilder, body: &impl Serialize) -> ApiResult<Response> {
    request.json(body).map_err(network_error)?.send().await.map_err(network_error)
}

/// Sends `request` and reads the JSON of its answer.
pub(crate) async fn fetch<T: DeserializeOwned>(request: RequestBuilder) -> ApiResult<T> {
    read_json(send(request).await?).await
}

async fn error_of(response: Response) -> ApiError {
    let status = response.status();
    match response.json::<ErrorBody>().await {
        Ok(body) => ApiError { status, code: body.error.code, message: body.error.message },
        Err(_) => ApiError { status, code: "http".into(), message: format!("The server answered {status}.") },
    }
}

/// `POST /api/auth/register`: the server sets the HttpOnly session cookie; the token is not kept here.
pub async fn register(body: &RegisterRequest) -> ApiResult<UserProfile> {
    read_json::<AuthResponse>(send_json(Request::post("/api/auth/register"), body).await?).await.map(|r| r.user)
}

/// `POST /api/auth/login`.
pub async fn login(body: &LoginRequest) -> ApiResult<UserProfile> {
    read_json::<AuthResponse>(send_json(Request::post("/api/auth/login"), body).await?).await.map(|r| r.user)
}

/// `POST /api/auth/logout`: ends the session (the server clears the cookie); the identity provider's address
/// that ends its session too, for a session signed in through it.
pub async fn logout() -> ApiResult<Option<String>> {
    let response = Request::post("/api/auth/logout").send().await.map_err(network_error)?;
    match response.status() {
        200 => Ok(Some(read_json::<crate::api::SignedOut>(response).await?.end_session_url)),
        _ => expect_empty(Ok(response)).await.map(|()| None),
    }
}

/// `GET /api/auth/me`: the signed-in account; status 401 when there is none.
pub async fn me() -> ApiResult<UserProfile> {
    fetch(Request::get("/api/auth/me")).await
}

/// `GET /api/threads`: one page of the active (or the archived) conversations, only those carrying `tag` when
/// one is given; `cursor` continues a walk.
pub async fn list_threads(archived: bool, tag: Option<&str>, cursor: Option<&str>) -> ApiResult<ThreadList> {
    let limit = THREAD_PAGE.to_string();
    let mut query = vec![("limit", limit.as_str())];
    if archived {
        query.push(("archived", "true"));
    }
    if let Some(tag) = tag {
        query.push(("tags", tag));
    }
    if let Some(cursor) = cursor {
        query.push(("cursor", cursor));
    }
    fetch(Request::get("/api/threads").query(query)).await
}

/// `PATCH /api/threads/{id}`.
pub async fn update_thread(id: Uuid, body: &UpdateThread) -> ApiResult<Thread> {
    read_json(send_json(Request::patch(&format!("/api/threads/{id}")), body).await?).await
}

/// `DELETE /api/threads/{id}`.
pub async fn delete_thread(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/threads/{id}")).send().await).await
}

/// `GET /api/search`: one page of hits for `q`; `cursor` asks for the next one.
pub async fn search(q: &str, cursor: Option<&str>, project: Option<Uuid>) -> ApiResult<SearchResults> {
    let limit = SEARCH_PAGE.to_string();
    let project = project.map(|p| p.to_string());
    let mut query = vec![("q", q), ("limit", limit.as_str())];
    if let Some(cursor) = cursor {
        query.push(("cursor", cursor));
    }
    if let Some(project) = project.as_deref() {
        query.push(("project", project));
    }
    fetch(Request::get("/api/search").query(query)).await
}

/// `POST /api/threads`.
pub async fn create_thread(body: &CreateThread) -> ApiResult<Thread> {
    read_json(send_json(Request::post("/api/threads"), body).await?).await
}

/// `GET /api/threads/{id}`.
pub async fn get_thread(id: Uuid) -> ApiResult<ThreadDetail> {
    fetch(Request::get(&format!("/api/threads/{id}"))).await
}

/// `POST /api/threads/{id}/chat`: calls `on_event` for each event as it arrives. Returns once the stream ends.
pub async fn chat(id: Uuid, body: &ChatRequest, on_event: impl FnMut(ChatEvent)) -> ApiResult<()> {
    let response = send_json(Request::post(&format!("/api/threads/{id}/chat")), body).await?;
    read_events(response, on_event).await
}

/// `POST /api/threads/{id}/messages/{message_id}/retry`: runs the failed turn of a stored message again, calling
/// `on_event` for each event as it arrives. Returns once the stream ends.
pub async fn retry(id: Uuid, message: Uuid, on_event: impl FnMut(ChatEvent)) -> ApiResult<()> {
    let response = send(Request::post(&format!("/api/threads/{id}/messages/{message}/retry"))).await?;
    read_events(response, on_event).await
}

/// `POST /api/threads/{id}/messages/{answer}/regenerate`: another answer beside `answer`, calling `on_event` for each
/// event as it arrives; `key` makes a resent request replay the same turn. Returns once the stream ends.
pub async fn regenerate(id: Uuid, answer: Uuid, key: &str, on_event: impl FnMut(ChatEvent)) -> ApiResult<()> {
    let request = Request::post(&format!("/api/threads/{id}/messages/{answer}/regenerate"));
    let response = send(request.header("Idempotency-Key", key)).await?;
    read_events(response, on_event).await
}

/// `POST /api/threads/{id}/branch`: shows the branch through `message`; answers with the conversation as shown.
pub async fn switch_branch(id: Uuid, message: Uuid) -> ApiResult<ThreadDetail> {
    let body = super::SwitchBranch { message_id: message };
    read_json(send_json(Request::post(&format!("/api/threads/{id}/branch")), &body).await?).await
}

/// `DELETE /api/threads/{id}/messages/{message}`: deletes the message and every message after it on its branches.
pub async fn delete_message(id: Uuid, message: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/threads/{id}/messages/{message}")).send().await).await
}

/// `GET /api/threads/{id}/stream`: re-attaches to the running (or last) turn from its first event.
pub async fn resume(id: Uuid, on_event: impl FnMut(ChatEvent)) -> ApiResult<()> {
    let response = send(Request::get(&format!("/api/threads/{id}/stream"))).await?;
    if response.status() == 204 {
        return Ok(());
    }
    read_events(response, on_event).await
}

/// `POST /api/threads/{id}/stop`.
pub async fn stop(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::post(&format!("/api/threads/{id}/stop")).send().await).await
}

/// `DELETE /api/artifacts/{id}`.
pub async fn delete_artifact(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/artifacts/{id}")).send().await).await
}

/// `GET /api/threads/{id}/requirements`: the requirements ledger of the path shown.
pub async fn get_requirements(thread: Uuid) -> ApiResult<Ledger> {
    fetch(Request::get(&format!("/api/threads/{thread}/requirements"))).await
}

/// `PATCH /api/threads/{id}/requirements/{key}`: the requirement as changed.
pub async fn update_requirement(thread: Uuid, key: &str, body: &UpdateRequirement) -> ApiResult<Requirement> {
    let key = js_sys::encode_uri_component(key);
    read_json(send_json(Request::patch(&format!("/api/threads/{thread}/requirements/{key}")), body).await?).await
}

/// `POST /api/artifacts/{id}/update`: revises the document to the requirements as they stand, calling `on_event`
/// for each event of the silent turn as it arrives. Returns once the stream ends.
pub async fn update_document(id: Uuid, on_event: impl FnMut(ChatEvent)) -> ApiResult<()> {
    let response = send(Request::post(&format!("/api/artifacts/{id}/update"))).await?;
    read_events(response, on_event).await
}

/// `GET /api/stats`: the person's, or (`project`) a project's conversations', whoever wrote them.
pub async fn stats(project: Option<Uuid>) -> ApiResult<HistoryStats> {
    match project {
        Some(project) => fetch(Request::get("/api/stats").query([("project", project.to_string())])).await,
        None => fetch(Request::get("/api/stats")).await,
    }
}

/// `GET /api/messages/{id}/context`: what the model saw for an answer.
pub async fn message_context(id: Uuid) -> ApiResult<ContextRecord> {
    fetch(Request::get(&format!("/api/messages/{id}/context"))).await
}

/// `GET /api/messages/{id}/trace`: the steps taken to write an answer.
pub async fn message_trace(id: Uuid) -> ApiResult<super::Trace> {
    fetch(Request::get(&format!("/api/messages/{id}/trace"))).await
}

/// `POST /api/threads/import` with the text of an export file, sent as it is.
pub async fn import_threads(json: String) -> ApiResult<ImportResult> {
    let response = Request::post("/api/threads/import")
        .header("Content-Type", "application/json")
        .body(json)
        .map_err(network_error)?
        .send()
        .await
        .map_err(network_error)?;
    read_json(response).await
}

/// Where a conversation's export downloads from (`format` is `json` or `markdown`).
pub fn thread_export_url(id: Uuid, format: &str) -> String {
    format!("/api/threads/{id}/export?format={format}")
}

/// Where a conversation's requirements download from: `table` is `requirements` (the ledger) or `traceability`
/// (the matrix of requirements and the document versions that cite them), `format` `csv` or `md`.
pub fn requirements_export_url(thread: Uuid, table: &str, format: &str) -> String {
    format!("/api/threads/{thread}/requirements/export?table={table}&format={format}")
}

/// Reads a `text/event-stream` response incrementally (fetch + readable stream: EventSource cannot POST).
async fn read_events(response: Response, mut on_event: impl FnMut(ChatEvent)) -> ApiResult<()> {
    if !response.ok() {
        return Err(error_of(response).await);
    }
    let Some(stream) = response.body() else {
        return Ok(());
    };
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut parser = SseParser::new();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(|e| network_error(format!("{e:?}")))?;
        let done = Reflect::get(&chunk, &"done".into()).ok().and_then(|v| v.as_bool()).unwrap_or(true);
        if done {
            break;
        }
        let value = Reflect::get(&chunk, &"value".into()).map_err(|e| network_error(format!("{e:?}")))?;
        let bytes = Uint8Array::new(&value).to_vec();
        for frame in parser.feed(&bytes).map_err(|e| network_error(e.to_string()))? {
            if let Some(event) = ChatEvent::from_parts(&frame.event, &frame.data) {
                on_event(event);
            }
        }
    }
    Ok(())
}

/// Sends a body-less or JSON request and reads an empty success or the API's error.
pub(crate) async fn expect_empty(response: Result<Response, gloo_net::Error>) -> ApiResult<()> {
    let response = response.map_err(network_error)?;
    if response.ok() {
        Ok(())
    } else {
        Err(error_of(response).await)
    }
}

/// `POST /api/auth/logout-all`: ends every session of the account, this one too.
pub async fn logout_all() -> ApiResult<()> {
    expect_empty(Request::post("/api/auth/logout-all").send().await).await
}

/// `POST /api/auth/password`: every other session of the account ends.
pub async fn change_password(body: &ChangePasswordRequest) -> ApiResult<()> {
    let request = Request::post("/api/auth/password").json(body).map_err(network_error)?;
    expect_empty(request.send().await).await
}

/// `DELETE /api/auth/me`: removes the account and everything it owns.
pub async fn delete_account(body: &DeleteAccountRequest) -> ApiResult<()> {
    let request = Request::delete("/api/auth/me").json(body).map_err(network_error)?;
    expect_empty(request.send().await).await
}

/// `GET /api/auth/sessions`: the account's sessions, the most recently used first.
pub async fn sessions() -> ApiResult<SessionList> {
    fetch(Request::get("/api/auth/sessions")).await
}

/// `DELETE /api/auth/sessions/{id}`: ends one session of the account (this one signs out).
pub async fn end_session(id: &str) -> ApiResult<()> {
    let id = js_sys::encode_uri_component(id);
    expect_empty(Request::delete(&format!("/api/auth/sessions/{id}")).send().await).await
}

/// `GET /api/tags`: every tag of the account with its count.
pub async fn list_tags() -> ApiResult<TagList> {
    fetch(Request::get("/api/tags")).await
}

/// `GET /api/threads/{id}/attachments`.
pub async fn list_attachments(thread: Uuid) -> ApiResult<AttachmentList> {
    fetch(Request::get(&format!("/api/threads/{thread}/attachments"))).await
}

/// `DELETE /api/threads/{id}/attachments/{attachment_id}`.
pub async fn delete_attachment(thread: Uuid, attachment: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/threads/{thread}/attachments/{attachment}")).send().await).await
}

/// `GET /api/threads/{id}/artifacts`: the conversation's documents at their current versions.
pub async fn list_artifacts(thread: Uuid) -> ApiResult<super::ArtifactList> {
    fetch(Request::get(&format!("/api/threads/{thread}/artifacts"))).await
}

/// `GET /api/artifacts/{id}/versions`.
pub async fn artifact_versions(id: Uuid) -> ApiResult<ArtifactVersionList> {
    fetch(Request::get(&format!("/api/artifacts/{id}/versions"))).await
}

/// `GET /api/artifacts/{id}/diff`: the lines changed from version `from` to version `to`.
pub async fn version_diff(id: Uuid, from: i64, to: i64) -> ApiResult<VersionDiff> {
    let (from, to) = (from.to_string(), to.to_string());
    let request = Request::get(&format!("/api/artifacts/{id}/diff")).query([("from", from), ("to", to)]);
    fetch(request).await
}

/// Why a person's save of a document was not taken.
#[derive(Debug, Clone, PartialEq)]
pub enum SaveFailure {
    /// Another version was saved since the one the edit began from: the document as it is now.
    Conflict(Box<Artifact>),
    Failed(ApiError),
}

/// `PUT /api/artifacts/{id}`: the document at its new version, or why not.
pub async fn save_artifact(id: Uuid, body: &super::EditArtifact) -> Result<Artifact, SaveFailure> {
    let response = send_json(Request::put(&format!("/api/artifacts/{id}")), body).await.map_err(SaveFailure::Failed)?;
    if response.status() == 409 {
        let text = response.text().await.map_err(|e| SaveFailure::Failed(network_error(e)))?;
        return match serde_json::from_str::<super::VersionConflict>(&text) {
            Ok(conflict) => Err(SaveFailure::Conflict(Box::new(conflict.current))),
            Err(_) => Err(SaveFailure::Failed(match serde_json::from_str::<ErrorBody>(&text) {
                Ok(body) => ApiError { status: 409, code: body.error.code, message: body.error.message },
                Err(_) => ApiError { status: 409, code: "http".into(), message: "The server answered 409.".into() },
            })),
        };
    }
    read_json(response).await.map_err(SaveFailure::Failed)
}

/// `POST /api/artifacts/{id}/compare`: the current version's lines turned into those of `content`.
pub async fn compare_draft(id: Uuid, content: String) -> ApiResult<super::DraftDiff> {
    let body = super::CompareDraft { content };
    read_json(send_json(Request::post(&format!("/api/artifacts/{id}/compare")), &body).await?).await
}

/// `GET /api/threads/{id}/changes`, followed while the returned value lives: each change of the conversation goes
/// to `on_change`. The browser's `EventSource` reconnects by itself after a network failure.
pub fn watch_changes(thread: Uuid, on_change: impl Fn(ThreadChange) + 'static) -> Option<ChangeWatch> {
    use wasm_bindgen::closure::Closure;
    let source = web_sys::EventSource::new(&format!("/api/threads/{thread}/changes")).ok()?;
    let on_change = std::rc::Rc::new(on_change);
    let listeners = ThreadChange::NAMES
        .into_iter()
        .map(|name| {
            let on_change = on_change.clone();
            let listener = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
                let data = event.data().as_string().unwrap_or_default();
                if let Some(change) = ThreadChange::from_parts(name, &data) {
                    on_change(change);
                }
            });
            let _ = source.add_event_listener_with_callback(name, listener.as_ref().unchecked_ref());
            listener
        })
        .collect();
    Some(ChangeWatch { source, _listeners: listeners })
}

/// A conversation's change stream; closed when dropped.
pub struct ChangeWatch {
    source: web_sys::EventSource,
    _listeners: Vec<wasm_bindgen::closure::Closure<dyn Fn(web_sys::MessageEvent)>>,
}

impl Drop for ChangeWatch {
    fn drop(&mut self) {
        self.source.close();
    }
}

/// `POST /api/artifacts/{id}/versions/{version}/restore`: the document at its new version.
pub async fn restore_version(id: Uuid, version: i64) -> ApiResult<Artifact> {
    let url = format!("/api/artifacts/{id}/versions/{version}/restore");
    fetch(Request::post(&url)).await
}

/// `GET /api/models`.
pub async fn models() -> ApiResult<super::ModelList> {
    fetch(Request::get("/api/models")).await
}

/// `GET /api/mcp/servers`.
pub async fn mcp_servers() -> ApiResult<super::McpServerList> {
    fetch(Request::get("/api/mcp/servers")).await
}

/// `POST /api/threads/{id}/approvals/{approval_id}`: approves or denies a call that asks first; the question as
/// decided.
pub async fn decide_approval(thread: Uuid, approval: Uuid, approve: bool) -> ApiResult<super::ToolApproval> {
    let url = format!("/api/threads/{thread}/approvals/{approval}");
    read_json(send_json(Request::post(&url), &super::DecideApproval { approve }).await?).await
}

/// `GET /api/settings`.
pub async fn settings() -> ApiResult<super::Settings> {
    fetch(Request::get("/api/settings")).await
}

/// `PATCH /api/settings`: the settings as saved.
pub async fn update_settings(body: &super::UpdateSettings) -> ApiResult<super::Settings> {
    read_json(send_json(Request::patch("/api/settings"), body).await?).await
}

/// `POST /api/threads/{id}/shares`: a new link to a snapshot of the conversation.
pub async fn share_thread(thread: Uuid) -> ApiResult<super::ShareLink> {
    fetch(Request::post(&format!("/api/threads/{thread}/shares"))).await
}

/// `GET /api/shares`: every share link of the account, newest first.
pub async fn list_shares() -> ApiResult<super::ShareList> {
    fetch(Request::get("/api/shares")).await
}

/// `DELETE /api/shares/{id}`: revokes a link.
pub async fn revoke_share(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/shares/{id}")).send().await).await
}

/// `GET /api/shared/{token}`: a shared conversation, without signing in.
pub async fn shared(token: &str) -> ApiResult<super::SharedConversation> {
    let token = js_sys::encode_uri_component(token);
    fetch(Request::get(&format!("/api/shared/{token}"))).await
}

/// `GET /api/tokens`: the account's API tokens that are neither revoked nor expired, newest first.
pub async fn api_tokens() -> ApiResult<super::ApiTokenList> {
    fetch(Request::get("/api/tokens")).await
}

/// `POST /api/tokens`: a new API token, with its secret (shown this once).
pub async fn create_api_token(body: &super::CreateTokenRequest) -> ApiResult<super::CreatedToken> {
    read_json(send_json(Request::post("/api/tokens"), body).await?).await
}

/// `DELETE /api/tokens/{id}`: revokes an API token.
pub async fn revoke_api_token(id: Uuid) -> ApiResult<()> {
    expect_empty(Request::delete(&format!("/api/tokens/{id}")).send().await).await
}
