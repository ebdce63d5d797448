//! The least a relay built from Quire's libraries can cost: an axum server that, for each chat request, opens a
//! streaming request to the provider with a pooled reqwest client, parses its server-sent events and JSON, and
//! writes each delta to the person as an SSE event of Quire's shape. No accounts, no store, no context, no
//! events kept for resuming. Run by the relay benchmark (`--floor`) in a child process of its own, pinned and
//! measured as Quire is, so that Quire's CPU per chat and per delta can be read against what these libraries
//! and the kernel cost on the same machine.

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// Set in the child's environment: the benchmark binary then serves as the floor relay instead of measuring.
pub const SERVE: &str = "RELAY_FLOOR_SERVE";

#[derive(Clone)]
struct Floor {
    client: reqwest::Client,
    completions: String,
}

/// Serves the floor relay on `LEPTOS_SITE_ADDR`, relaying to `OPENAI_BASE_URL`, as Quire reads them.
pub async fn serve() -> anyhow::Result<()> {
    let addr = std::env::var("LEPTOS_SITE_ADDR")?;
    let base = std::env::var("OPENAI_BASE_URL")?;
    let floor = Floor { client: reqwest::Client::new(), completions: format!("{base}/chat/completions") };
    let app = Router::new()
        .route("/api/health", get(|| async { "ok" }))
        .route("/api/auth/register", post(|| async { Json(json!({"token": "floor"})) }))
        .route("/api/threads", post(|| async { Json(json!({"id": uuid::Uuid::new_v4()})) }))
        .route("/api/threads/{id}/chat", post(chat))
        .with_state(floor);
    // As Quire does: each event goes out at once rather than waiting for a delayed acknowledgement.
    let listener = axum::serve::ListenerExt::tap_io(TcpListener::bind(addr).await?, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await?;
    Ok(())
}

async fn chat(State(floor): State<Floor>, Json(body): Json<Value>) -> Response {
    let request = json!({
        "model": "bench-model",
        "stream": true,
        "messages": [{"role": "user", "content": body["content"]}],
    });
    let upstream = match floor.client.post(&floor.completions).json(&request).send().await {
        Ok(response) => response,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    // Lines are cut from the byte stream as they complete; each `data:` line is one chunk of the answer.
    let events = upstream
        .bytes_stream()
        .scan(String::new(), |pending, chunk| {
            let mut out = Vec::new();
            if let Ok(chunk) = chunk {
                pending.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = pending.find('\n') {
                    let line: String = pending.drain(..=end).collect();
                    if let Some(event) = relayed(line.trim_end()) {
                        out.push(Ok::<_, Infallible>(event));
                    }
                }
            }
            futures::future::ready(Some(futures::stream::iter(out)))
        })
        .flatten();
    Sse::new(events).into_response()
}

/// The event a provider's line becomes: a delta of text, the end, or nothing.
fn relayed(line: &str) -> Option<Event> {
    let data = line.strip_prefix("data: ")?;
    if data == "[DONE]" {
        return Some(Event::default().event("message_complete").data("{}"));
    }
    let chunk: Value = serde_json::from_str(data).ok()?;
    let text = chunk["choices"][0]["delta"]["content"].as_str().filter(|text| !text.is_empty())?;
    Some(Event::default().event("text_delta").data(json!({"text": text}).to_string()))
}
