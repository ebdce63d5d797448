//! A real Quire server on port 0 with a temporary data directory, and a small SSE client.
#![allow(dead_code)]

pub mod backends;
pub mod oidc_provider;
pub mod tls;

use std::sync::Arc;

use llm::Provider;
use quire::{config::Config, AppState};
use store::DynStore;
use tempfile::TempDir;
use tokio::{net::TcpListener, sync::oneshot};
use wire::ChatEvent;

pub struct TestServer {
    pub base: String,
    /// Sends the token of [`TestServer::user`] with every request.
    pub client: reqwest::Client,
    /// The account signed up when the server started.
    pub user: wire::UserProfile,
    /// Its session token.
    pub token: String,
    pub state: AppState,
    shutdown: Option<oneshot::Sender<()>>,
    _dir: Option<TempDir>,
}

impl TestServer {
    /// A server on SQLite in a fresh temporary directory, with the built-in assistant.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Like [`TestServer::start`], with the test configuration changed by `configure` first.
    pub async fn start_with(configure: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = test_config(dir.path());
        configure(&mut config);
        let state = AppState::from_config(config).await.expect("state");
        Self::with_state(state, Some(dir)).await
    }

    /// A server over a given store, with the built-in assistant.
    pub async fn builtin(store: DynStore) -> Self {
        Self::with(store, Arc::new(llm::builtin::Builtin::new())).await
    }

    /// A server over a given store and provider.
    pub async fn with(store: DynStore, provider: Arc<dyn Provider>) -> Self {
        Self::with_configured(store, provider, |_| {}).await
    }

    /// A server over a given store and provider, with the test configuration changed by `configure` first.
    pub async fn with_configured(
        store: DynStore,
        provider: Arc<dyn Provider>,
        configure: impl FnOnce(&mut Config),
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = test_config(dir.path());
        configure(&mut config);
        let state = AppState::new(config, store, provider).await.expect("state");
        Self::with_state(state, Some(dir)).await
    }

    pub async fn with_state(state: AppState, dir: Option<TempDir>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = oneshot::channel::<()>();
        let serve_state = state.clone();
        tokio::spawn(async move {
            quire::serve(listener, serve_state, async {
                let _ = rx.await;
            })
            .await
            .expect("serve");
        });
        // By invitation or closed, the first administrator signs up with a setup link, as an operator would.
        let mode = quire::auth::setup::sign_up_mode(&state.store, state.config.signup).await.expect("mode");
        let setup = match mode {
            store::SignUpMode::Open => None,
            _ => quire::auth::setup::issue(&state.store).await.expect("setup link"),
        };
        // On a database shared with another instance the account may exist already: sign in to it then.
        let (client, session) = sign_up_or_in_with(&base, "owner@example.com", setup.as_deref()).await;
        Self { base, client, user: session.user, token: session.token, state, shutdown: Some(tx), _dir: dir }
    }

    /// Signs up another account; its client sends that account's token by default.
    pub async fn second_user(&self, email: &str) -> (reqwest::Client, wire::AuthResponse) {
        sign_up(&self.base, email).await
    }

    /// A client without any session.
    pub fn anonymous(&self) -> reqwest::Client {
        reqwest::Client::new()
    }

    /// Signs in to `email` with `password` from a client without a session; the server's answer.
    pub fn sign_in(&self, email: &str, password: &str) -> impl std::future::Future<Output = reqwest::Response> {
        let body = serde_json::json!({ "email": email, "password": password });
        let request = self.anonymous().post(self.url("/api/auth/login")).json(&body);
        async move { request.send().await.unwrap() }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn create_thread(&self) -> uuid::Uuid {
        self.create_thread_as(&self.client).await
    }

    /// Starts a conversation as whoever `client` signs in as; its id.
    pub async fn create_thread_as(&self, client: &reqwest::Client) -> uuid::Uuid {
        self.post_thread(client, serde_json::json!({})).await
    }

    /// Starts a conversation titled `title`; its id.
    pub async fn create_titled_thread(&self, title: &str) -> uuid::Uuid {
        self.post_thread(&self.client, serde_json::json!({ "title": title })).await
    }

    async fn post_thread(&self, client: &reqwest::Client, body: serde_json::Value) -> uuid::Uuid {
        let response = client.post(self.url("/api/threads")).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 201);
        let thread: wire::Thread = response.json().await.unwrap();
        thread.id
    }

    /// What a search for `q` finds (`GET /api/search`).
    pub async fn search(&self, q: &str) -> wire::SearchResults {
        let response = self.client.get(self.url("/api/search")).query(&[("q", q)]).send().await.unwrap();
        assert_eq!(response.status(), 200, "{q:?}");
        response.json().await.unwrap()
    }

    /// Attaches a file to a conversation (`POST /api/threads/{id}/attachments`) as this server's user.
    pub async fn upload(&self, thread: uuid::Uuid, name: &str, mime: &str, bytes: Vec<u8>) -> reqwest::Response {
        upload(&self.client, &self.base, thread, name, mime, bytes).await
    }

    /// `GET path` as this user, its JSON body (the request must succeed).
    pub async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        get_json(&self.client, &self.url(path)).await
    }

    /// `POST path` with a JSON body as this user, the JSON of the answer (the request must succeed).
    pub async fn post_json<T: serde::de::DeserializeOwned>(&self, path: &str, body: &serde_json::Value) -> T {
        post_json(&self.client, &self.url(path), body).await
    }

    /// `GET path` as this user: the answer, whatever its status.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    /// `PATCH /api/threads/{thread}` with `body` as this user: the answer, whatever its status.
    pub async fn patch_thread(&self, thread: uuid::Uuid, body: &serde_json::Value) -> reqwest::Response {
        self.client.patch(self.url(&format!("/api/threads/{thread}"))).json(body).send().await.unwrap()
    }

    /// `POST /api/threads/{thread}/chat` as this user, for the caller to add headers and a body to.
    pub fn chat_request(&self, thread: uuid::Uuid) -> reqwest::RequestBuilder {
        self.client.post(self.url(&format!("/api/threads/{thread}/chat")))
    }

    /// `POST /api/threads/{thread}/chat` with `body` as this user: the answer, whatever its status.
    pub async fn send_chat(&self, thread: uuid::Uuid, body: &serde_json::Value) -> reqwest::Response {
        self.chat_request(thread).json(body).send().await.unwrap()
    }

    /// Sends a chat message of `content` alone as this user: the answer, whatever its status.
    pub async fn send_text(&self, thread: uuid::Uuid, content: &str) -> reqwest::Response {
        self.send_chat(thread, &serde_json::json!({ "content": content })).await
    }

    /// `POST /api/threads/{thread}/messages` with `body` as this user (a message added without asking the model):
    /// the answer, whatever its status.
    pub async fn add_message(&self, thread: uuid::Uuid, body: &serde_json::Value) -> reqwest::Response {
        self.client.post(self.url(&format!("/api/threads/{thread}/messages"))).json(body).send().await.unwrap()
    }

    /// `GET /api/threads/{thread}/stream` as this user, after the event `last_event_id` when given: the answer,
    /// whatever its status.
    pub async fn open_stream(&self, thread: uuid::Uuid, last_event_id: Option<String>) -> reqwest::Response {
        let mut request = self.client.get(self.url(&format!("/api/threads/{thread}/stream")));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        request.send().await.unwrap()
    }

    /// Sends a chat message and reads the whole event stream.
    pub async fn chat(&self, thread: uuid::Uuid, content: &str) -> Vec<Frame> {
        let response = self.send_text(thread, content).await;
        assert_eq!(response.status(), 200, "chat status");
        read_frames(response).await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// `GET url` with `client`, its JSON body (the request must succeed).
pub async fn get_json<T: serde::de::DeserializeOwned>(client: &reqwest::Client, url: &str) -> T {
    client.get(url).expect_json().await
}

/// `POST url` with a JSON body with `client`, the JSON of the answer (the request must succeed).
pub async fn post_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> T {
    client.post(url).json(body).expect_json().await
}

/// A request that must succeed, read as JSON.
pub trait ExpectJson {
    /// Sends the request and reads the JSON of its answer, failing the test unless the status is a success.
    fn expect_json<T: serde::de::DeserializeOwned>(self) -> impl std::future::Future<Output = T> + Send;
}

impl ExpectJson for reqwest::RequestBuilder {
    async fn expect_json<T: serde::de::DeserializeOwned>(self) -> T {
        let response = self.send().await.unwrap();
        assert!(response.status().is_success(), "{}: {}", response.url(), response.status());
        response.json().await.unwrap()
    }
}

/// Attaches a file to a conversation as whoever `client` signs in as.
pub async fn upload(
    client: &reqwest::Client,
    base: &str,
    thread: uuid::Uuid,
    name: &str,
    mime: &str,
    bytes: Vec<u8>,
) -> reqwest::Response {
    let part = reqwest::multipart::Part::bytes(bytes).file_name(name.to_string()).mime_str(mime).unwrap();
    let form = reqwest::multipart::Form::new().part("file", part);
    client.post(format!("{base}/api/threads/{thread}/attachments")).multipart(form).send().await.unwrap()
}

/// The test configuration, with uploaded PDFs parsed by the `quire` binary built beside the tests.
pub fn test_config(dir: &std::path::Path) -> Config {
    let mut config = Config::for_tests(dir);
    config.extract_program = Some(env!("CARGO_BIN_EXE_quire").into());
    config
}

/// Registers `email` (password `correct horse battery`) and returns a client carrying its token.
pub async fn sign_up(base: &str, email: &str) -> (reqwest::Client, wire::AuthResponse) {
    let response = reqwest::Client::new()
        .post(format!("{base}/api/auth/register"))
        .json(&serde_json::json!({ "email": email, "password": PASSWORD }))
        .send()
        .await
        .expect("register");
    assert_eq!(response.status(), 201, "register {email}");
    let session: wire::AuthResponse = response.json().await.expect("auth response");
    (bearer_client(&session.token), session)
}

/// Signs up `email`, or signs in when that account exists or sign-up is closed to it (instances sharing one
/// database).
pub async fn sign_up_or_in(base: &str, email: &str) -> (reqwest::Client, wire::AuthResponse) {
    sign_up_or_in_with(base, email, None).await
}

/// [`sign_up_or_in`] with a setup link's token, when given.
pub async fn sign_up_or_in_with(base: &str, email: &str, setup: Option<&str>) -> (reqwest::Client, wire::AuthResponse) {
    let mut body = serde_json::json!({ "email": email, "password": PASSWORD });
    if let Some(token) = setup {
        body["setup"] = token.into();
    }
    let client = reqwest::Client::new();
    let registered = client.post(format!("{base}/api/auth/register")).json(&body).send().await.expect("register");
    let response = if registered.status() == 409 || registered.status() == 403 {
        let login = serde_json::json!({ "email": email, "password": PASSWORD });
        client.post(format!("{base}/api/auth/login")).json(&login).send().await.expect("login")
    } else {
        registered
    };
    assert!(response.status().is_success(), "sign up or in {email}: {}", response.status());
    let session: wire::AuthResponse = response.json().await.expect("auth response");
    (bearer_client(&session.token), session)
}

/// The password of every account the harness signs up.
pub const PASSWORD: &str = "correct horse battery";

/// A client that sends `Authorization: Bearer <token>` with every request.
pub fn bearer_client(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).expect("header");
    headers.insert(reqwest::header::AUTHORIZATION, value);
    reqwest::Client::builder().default_headers(headers).build().expect("client")
}

/// One SSE frame as received.
#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<String>,
    pub event: ChatEvent,
}

/// The number of a frame's event in its turn (its id is `<turn>:<n>`).
pub fn seq_of(frame: &Frame) -> i64 {
    frame.id.as_deref().and_then(|id| id.rsplit_once(':')).and_then(|(_, n)| n.parse().ok()).expect("event id")
}

/// The answer text the frames carry.
pub fn text_of(frames: &[Frame]) -> String {
    frames
        .iter()
        .filter_map(|f| match &f.event {
            ChatEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The names of the frames' events, in order.
pub fn names(frames: &[Frame]) -> Vec<&'static str> {
    frames.iter().map(|f| f.event.name()).collect()
}

/// The documents the frames announce.
pub fn created(frames: &[Frame]) -> Vec<wire::Artifact> {
    frames
        .iter()
        .filter_map(|f| match &f.event {
            ChatEvent::ArtifactCreated { artifact } => Some(artifact.clone()),
            _ => None,
        })
        .collect()
}

/// Reads at least `n` frames, then drops the connection (a client that goes away mid-answer).
pub async fn read_some_frames(response: reqwest::Response, n: usize) -> Vec<Frame> {
    let frames = read_frames_until(response, n).await;
    assert!(frames.len() >= n, "the stream ended early");
    frames
}

/// Reads SSE frames until the stream ends.
/// How Quire names a person to others: their display name, else their e-mail address.
pub fn shown_name(user: &wire::UserProfile) -> String {
    if user.display_name.trim().is_empty() {
        user.email.clone()
    } else {
        user.display_name.clone()
    }
}

pub async fn read_frames(response: reqwest::Response) -> Vec<Frame> {
    read_frames_until(response, usize::MAX).await
}

/// Reads SSE frames until the stream ends or at least `n` have come, then drops the connection.
pub async fn read_frames_until(response: reqwest::Response, n: usize) -> Vec<Frame> {
    use futures::StreamExt;
    let mut parser = wire::sse::SseParser::new();
    let mut frames = Vec::new();
    let mut body = response.bytes_stream();
    while frames.len() < n {
        let Some(chunk) = body.next().await else { break };
        for f in parser.feed(&chunk.expect("chunk")).expect("an event of a sane size") {
            let name = &f.event;
            let event = ChatEvent::from_parts(name, &f.data).unwrap_or_else(|| panic!("bad event {name}: {}", f.data));
            frames.push(Frame { id: f.id, event });
        }
    }
    frames
}

/// A model that follows a script: each call to `stream` takes the next list of steps.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    scripts: std::sync::Mutex<std::collections::VecDeque<Vec<Step>>>,
    /// Behaves as a real model that names conversations (its first script is then the title request).
    pub names: bool,
    pub calls: std::sync::atomic::AtomicUsize,
    pub requests: std::sync::Mutex<Vec<llm::ChatRequest>>,
}

/// One step of a scripted answer.
#[derive(Debug, Clone)]
pub enum Step {
    Emit(llm::StreamEvent),
    Fail(llm::LlmError),
    Sleep(std::time::Duration),
    /// Never finishes (until the turn is stopped).
    Hang,
}

impl Step {
    /// A piece of the answer's text.
    pub fn delta(text: &str) -> Self {
        Step::Emit(llm::StreamEvent::TextDelta(text.into()))
    }
}

impl ScriptedModel {
    pub fn new(scripts: Vec<Vec<Step>>) -> Arc<Self> {
        Arc::new(Self { scripts: std::sync::Mutex::new(scripts.into()), ..Default::default() })
    }

    /// A scripted model that names conversations, as real models do.
    pub fn naming(scripts: Vec<Vec<Step>>) -> Arc<Self> {
        Arc::new(Self { scripts: std::sync::Mutex::new(scripts.into()), names: true, ..Default::default() })
    }

    /// Adds `script` after the scripts left.
    pub fn push(&self, script: Vec<Step>) {
        self.scripts.lock().unwrap().push_back(script);
    }

    /// The texts of the messages of the `n`-th request made to it, joined by `|`.
    pub fn sent(&self, n: usize) -> String {
        self.requests.lock().unwrap()[n].messages.iter().map(|m| m.text()).collect::<Vec<_>>().join("|")
    }

    /// A call `call_1` of the tool `name` with `arguments`, then a stop for its result.
    pub fn tool_use(name: &str, arguments: serde_json::Value) -> Vec<Step> {
        use llm::{StopReason, StreamEvent};
        vec![Step::Emit(tool_call("call_1", name, arguments)), Step::Emit(StreamEvent::Stop(StopReason::ToolUse))]
    }

    /// Text deltas, usage and a normal stop.
    pub fn text(words: &[&str]) -> Vec<Step> {
        use llm::{StopReason, StreamEvent, Usage};
        let mut steps: Vec<Step> = words.iter().map(|w| Step::delta(w)).collect();
        steps.push(Step::Emit(StreamEvent::Usage(Usage { input_tokens: 10, output_tokens: words.len() as u64 })));
        steps.push(Step::Emit(StreamEvent::Stop(StopReason::EndTurn)));
        steps
    }
}

#[async_trait::async_trait]
impl Provider for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted-1"
    }

    fn names_threads(&self) -> bool {
        self.names
    }

    async fn stream(&self, request: llm::ChatRequest) -> Result<llm::EventStream, llm::LlmError> {
        use futures::StreamExt;
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.requests.lock().unwrap().push(request);
        let script = self.scripts.lock().unwrap().pop_front().unwrap_or_else(|| Self::text(&["(no script)"]));
        let stream = futures::stream::iter(script)
            .then(|step| async move {
                match step {
                    Step::Emit(e) => Some(Ok(e)),
                    Step::Fail(e) => Some(Err(e)),
                    Step::Sleep(d) => {
                        tokio::time::sleep(d).await;
                        None
                    }
                    Step::Hang => {
                        std::future::pending::<()>().await;
                        None
                    }
                }
            })
            .filter_map(|x| async move { x });
        Ok(Box::pin(stream))
    }
}

/// The URL of the SQLite store kept in `dir` (as [`sqlite_store`] and the server make it).
pub fn sqlite_url(dir: &std::path::Path) -> String {
    format!("sqlite://{}", dir.join("quire.db").display())
}

/// POSTs `body` to `url` as it is, labelled as JSON (for a body that is not valid JSON, or too large).
pub async fn post_raw_json(client: &reqwest::Client, url: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
    client.post(url).header("content-type", "application/json").body(body).send().await.unwrap()
}

/// A server on its own SQLite store whose built-in model waits `delay` between tokens (the store's directory is
/// kept alive by the returned guard).
pub async fn slow_builtin_server(delay: std::time::Duration) -> (TestServer, TempDir) {
    let (store, dir) = sqlite_store().await;
    let server = TestServer::with(store, Arc::new(llm::builtin::Builtin::new().with_delay(delay))).await;
    (server, dir)
}

/// A server on `db` whose model follows `scripts`, and that model.
pub async fn scripted_server(db: &backends::Db, scripts: Vec<Vec<Step>>) -> (TestServer, Arc<ScriptedModel>) {
    let model = ScriptedModel::new(scripts);
    (TestServer::with(db.store.clone(), model.clone()).await, model)
}

/// A SQLite store in its own temporary directory (kept alive by the returned guard).
pub async fn sqlite_store() -> (DynStore, TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    (store::connect(&sqlite_url(dir.path())).await.expect("store"), dir)
}

/// A new account in `store` under an address no other test uses; its id.
pub async fn new_user(store: &DynStore) -> uuid::Uuid {
    let email = format!("{}@example.test", uuid::Uuid::new_v4().simple());
    store
        .create_user(store::NewUser { email, password_hash: "hash".into(), display_name: "Tester".into() })
        .await
        .expect("create user")
        .id
}

/// Tags as a thread takes them.
pub fn tags(names: &[&str]) -> Vec<String> {
    names.iter().map(|t| t.to_string()).collect()
}

/// A finished message of `role` in `thread`, as a store appends it.
pub fn new_message(thread: uuid::Uuid, role: wire::Role, content: &str) -> store::NewMessage {
    store::NewMessage {
        thread_id: thread,
        role,
        content: content.to_string(),
        status: wire::MessageStatus::Complete,
        usage: wire::Usage::default(),
        model: None,
        quote: None,
        author: None,
    }
}

/// A finished answer's `content` with `status`, without usage, model or context.
pub fn message_update(content: &str, status: wire::MessageStatus) -> store::MessageUpdate {
    store::MessageUpdate {
        content: content.to_string(),
        status,
        usage: wire::Usage::default(),
        model: None,
        context: None,
    }
}

/// A document of `kind` in `thread`, linked to no message.
pub fn new_artifact(thread: uuid::Uuid, kind: wire::ArtifactType, title: &str, content: &str) -> store::NewArtifact {
    store::NewArtifact {
        thread_id: thread,
        artifact_type: kind,
        title: title.to_string(),
        content: content.to_string(),
        request_message_id: None,
        assistant_message_id: None,
        answers: Vec::new(),
        model: None,
        cites: Vec::new(),
    }
}

/// The model's call `id` of the tool `name` with `arguments`.
pub fn tool_call(id: &str, name: &str, arguments: serde_json::Value) -> llm::StreamEvent {
    llm::StreamEvent::ToolCall(llm::ToolCall { id: id.into(), name: name.into(), arguments })
}

/// Sends a message (typed, or silently from the Generate menu when `silent`) and reads the turn's events.
pub async fn send(server: &TestServer, thread: uuid::Uuid, content: &str, silent: bool) -> Vec<Frame> {
    let body = if silent {
        serde_json::json!({"content": content, "artifact_generation": true})
    } else {
        serde_json::json!({"content": content})
    };
    let response = server.send_chat(thread, &body).await;
    assert_eq!(response.status(), 200, "chat status");
    read_frames(response).await
}

impl TestServer {
    /// Waits until the thread has no running turn.
    pub async fn wait_idle(&self, thread: uuid::Uuid) -> wire::ThreadDetail {
        for _ in 0..400 {
            let detail = self.detail(thread).await;
            if !detail.running {
                return detail;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("the turn never finished");
    }

    /// The trace of the answer `message`.
    pub async fn trace_of(&self, message: uuid::Uuid) -> wire::Trace {
        self.get_json(&format!("/api/messages/{message}/trace")).await
    }

    pub async fn detail(&self, thread: uuid::Uuid) -> wire::ThreadDetail {
        self.client.get(self.url(&format!("/api/threads/{thread}"))).expect_json().await
    }
}

/// A model that acts on every document request it can see in the conversation, as careless models do:
/// without Quire's filtering, N requests would make up to N(N+1)/2 documents.
#[derive(Debug, Default)]
pub struct GreedyModel {
    pub requests: std::sync::Mutex<Vec<llm::ChatRequest>>,
}

impl GreedyModel {
    /// The document type a message asks for, if any.
    pub fn requested_type(text: &str) -> Option<&'static str> {
        let lower = text.to_lowercase();
        if !lower.contains("generate") && !lower.contains("write") {
            return None;
        }
        [
            ("user stories", "user_stories"),
            ("brd", "business_requirements"),
            ("requirements doc", "requirements_doc"),
            ("acceptance criteria", "acceptance_criteria"),
            ("meeting summary", "meeting_summary"),
        ]
        .into_iter()
        .find(|(phrase, _)| lower.contains(phrase))
        .map(|(_, t)| t)
    }

    /// The tool calls this model makes for a request.
    pub fn calls_for(request: &llm::ChatRequest) -> Vec<llm::ToolCall> {
        use llm::{Part, Role};
        let answering_tools =
            request.messages.last().is_some_and(|m| m.parts.iter().any(|p| matches!(p, Part::ToolResult { .. })));
        if answering_tools {
            return Vec::new();
        }
        request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .flat_map(|m| m.parts.iter())
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .flat_map(|text| text.split("\n\n"))
            .filter_map(Self::requested_type)
            .enumerate()
            .map(|(i, kind)| llm::ToolCall {
                id: format!("call_{i}"),
                name: "save_artifact".into(),
                arguments: serde_json::json!({
                    "artifact_type": kind,
                    "title": format!("Document {kind} #{i}"),
                    "content": format!("# {kind}\n\nGenerated from the conversation."),
                }),
            })
            .collect()
    }
}

#[async_trait::async_trait]
impl Provider for GreedyModel {
    fn name(&self) -> &str {
        "greedy"
    }

    fn model(&self) -> &str {
        "greedy-1"
    }

    async fn stream(&self, request: llm::ChatRequest) -> Result<llm::EventStream, llm::LlmError> {
        use llm::{StopReason, StreamEvent, Usage};
        self.requests.lock().unwrap().push(request.clone());
        let calls = Self::calls_for(&request);
        let mut events = vec![Ok(StreamEvent::TextDelta("Working on it. ".into()))];
        let stop = if calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
        if calls.is_empty() {
            events.push(Ok(StreamEvent::TextDelta("Done.".into())));
        }
        events.extend(calls.into_iter().map(|c| Ok(StreamEvent::ToolCall(c))));
        events.push(Ok(StreamEvent::Usage(Usage { input_tokens: 50, output_tokens: 20 })));
        events.push(Ok(StreamEvent::Stop(stop)));
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

/// A fresh, empty PostgreSQL database on the cluster named by `QUIRE_TEST_POSTGRES_URL`, or `None` (with a
/// "skipped" line) when the variable is not set. `scripts/test` always sets it.
pub async fn fresh_postgres_url(test: &str) -> Option<String> {
    fresh_postgres(test).await.map(|(_, _, url)| url)
}

/// Like [`fresh_postgres_url`]: the cluster's URL, the new database's name and its URL.
pub async fn fresh_postgres(test: &str) -> Option<(String, String, String)> {
    use sqlx::postgres::PgPoolOptions;
    use std::io::Write;
    let Ok(base) = std::env::var(backends::POSTGRES_URL_VAR) else {
        // Straight to stderr: the test harness would swallow eprintln! of a passing test.
        let _ = writeln!(std::io::stderr(), "{test}: skipped: {} not set", backends::POSTGRES_URL_VAR);
        return None;
    };
    let name = format!("quire_{}", uuid::Uuid::new_v4().simple());
    let maintenance = PgPoolOptions::new().max_connections(1).connect(&base).await.expect("connect to PostgreSQL");
    sqlx::query(&format!("create database {name}")).execute(&maintenance).await.expect("create database");
    maintenance.close().await;
    let url = backends::with_database(&base, &name);
    Some((base, name, url))
}

/// An instance on the PostgreSQL database at `url`, configured by `configure`. Instances sharing a database share
/// the session key, as the README says they must.
pub async fn shared_instance(
    url: &str,
    provider: Arc<dyn Provider>,
    configure: impl FnOnce(&mut Config),
) -> TestServer {
    let store = store::connect(url).await.expect("connect");
    assert_eq!(store.backend(), "postgres");
    TestServer::with_configured(store, provider, |config| {
        config.jwt_secret = Some("a shared session key for every instance of this test".parse().expect("secret"));
        configure(config);
    })
    .await
}

/// A fresh store on every configured backend (SQLite always), each with the guard of its directory.
pub async fn every_store(test: &str) -> Vec<(DynStore, Option<TempDir>)> {
    let (sqlite, dir) = sqlite_store().await;
    let mut stores = vec![(sqlite, Some(dir))];
    if let Some(url) = fresh_postgres_url(test).await {
        stores.push((store::connect(&url).await.expect("open postgres"), None));
    }
    stores
}
