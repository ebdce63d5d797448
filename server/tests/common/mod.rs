//! A real Quire server on port 0 with a temporary data directory, and a small SSE client.
#![allow(dead_code)]

use std::sync::Arc;

use app::api::ChatEvent;
use quire::{config::Config, llm::Provider, store::DynStore, AppState};
use tempfile::TempDir;
use tokio::{net::TcpListener, sync::oneshot};

pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    pub state: AppState,
    shutdown: Option<oneshot::Sender<()>>,
    _dir: Option<TempDir>,
}

impl TestServer {
    /// A server on SQLite in a fresh temporary directory, with the built-in assistant.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = AppState::from_config(Config::for_tests(dir.path())).await.expect("state");
        Self::with_state(state, Some(dir)).await
    }

    /// A server over a given store and provider.
    pub async fn with(store: DynStore, provider: Arc<dyn Provider>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = AppState::new(Config::for_tests(dir.path()), store, provider).await.expect("state");
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
        Self { base, client: reqwest::Client::new(), state, shutdown: Some(tx), _dir: dir }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn create_thread(&self) -> uuid::Uuid {
        let response = self.client.post(self.url("/api/threads")).json(&serde_json::json!({})).send().await.unwrap();
        assert_eq!(response.status(), 201);
        let thread: app::api::Thread = response.json().await.unwrap();
        thread.id
    }

    /// Sends a chat message and reads the whole event stream.
    pub async fn chat(&self, thread: uuid::Uuid, content: &str) -> Vec<Frame> {
        let response = self
            .client
            .post(self.url(&format!("/api/threads/{thread}/chat")))
            .json(&serde_json::json!({ "content": content }))
            .send()
            .await
            .unwrap();
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

/// One SSE frame as received.
#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<String>,
    pub event: ChatEvent,
}

/// Reads SSE frames until the stream ends.
pub async fn read_frames(response: reqwest::Response) -> Vec<Frame> {
    use futures::StreamExt;
    let mut decoder = app::api::sse::SseDecoder::new();
    let mut frames = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        for f in decoder.push(&chunk.expect("chunk")) {
            let name = f.event.clone().unwrap_or_default();
            let event = ChatEvent::from_parts(&name, &f.data).unwrap_or_else(|| panic!("bad event {name}: {}", f.data));
            frames.push(Frame { id: f.id, event });
        }
    }
    frames
}
