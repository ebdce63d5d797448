//! The least a relay built from Quire's libraries can cost: an axum server that, for each chat request, opens a
//! streaming request to the provider with a pooled reqwest client, parses its server-sent events and JSON, and
//! writes each delta to the person as an SSE event of Quire's shape; the person's message is stored before the
//! provider is asked, and the answer before the end is sent, each one durable insert into SQLite as Quire
//! configures it (WAL, `synchronous = NORMAL`, one writer). No accounts, no context, no events kept for
//! resuming. Run by the relay benchmark (`--floor`) in a child process of its own, pinned and
//! measured as Quire is, so that Quire's CPU per chat and per delta can be read against what these libraries
//! and the kernel cost on the same machine.

use std::convert::Infallible;
use std::str::FromStr;

use axum::extract::{Path, State};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde_json::{json, Value};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use tokio::net::TcpListener;

/// Set in the child's environment: the benchmark binary then serves as the floor relay instead of measuring.
pub const SERVE: &str = "RELAY_FLOOR_SERVE";

#[derive(Clone)]
struct Floor {
    client: reqwest::Client,
    completions: String,
    /// One connection: SQLite has one writer, as in Quire.
    db: SqlitePool,
}

/// Opens `floor.db` in `QUIRE_DATA_DIR` as Quire opens its database.
async fn open_db() -> anyhow::Result<SqlitePool> {
    let dir = std::env::var("QUIRE_DATA_DIR")?;
    let options = SqliteConnectOptions::from_str(&format!("sqlite://{dir}/floor.db"))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal);
    let db = SqlitePoolOptions::new().max_connections(1).connect_with(options).await?;
    sqlx::query(
        "create table if not exists messages (id blob primary key, thread blob not null, role text not null, \
         content text not null, created_at integer not null)",
    )
    .execute(&db)
    .await?;
    Ok(db)
}

/// Stores one message: one statement, one commit.
async fn store(db: &SqlitePool, thread: uuid::Uuid, role: &str, content: &str) -> sqlx::Result<()> {
    sqlx::query("insert into messages (id, thread, role, content, created_at) values (?, ?, ?, ?, unixepoch())")
        .bind(uuid::Uuid::now_v7())
        .bind(thread)
        .bind(role)
        .bind(content)
        .execute(db)
        .await?;
    Ok(())
}

/// Serves the floor relay on `LEPTOS_SITE_ADDR`, relaying to `OPENAI_BASE_URL`, as Quire reads them.
pub async fn serve() -> anyhow::Result<()> {
    let addr = std::env::var("LEPTOS_SITE_ADDR")?;
    let base = std::env::var("OPENAI_BASE_URL")?;
    let floor =
        Floor { client: reqwest::Client::new(), completions: format!("{base}/chat/completions"), db: open_db().await? };
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

async fn chat(State(floor): State<Floor>, Path(thread): Path<uuid::Uuid>, Json(body): Json<Value>) -> Response {
    let content = body["content"].as_str().unwrap_or_default().to_owned();
    if let Err(e) = store(&floor.db, thread, "user", &content).await {
        return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response();
    }
    let request = json!({
        "model": "bench-model",
        "stream": true,
        "messages": [{"role": "user", "content": content}],
    });
    let upstream = match floor.client.post(&floor.completions).json(&request).send().await {
        Ok(response) => response,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    // A task reads the provider and writes to the person's stream: lines are cut from the byte stream as they
    // complete, each `data:` line one chunk of the answer; at the end the answer is stored, then the end sent.
    let (events, out) = futures::channel::mpsc::unbounded::<Result<Event, Infallible>>();
    tokio::spawn(async move {
        let mut bytes = upstream.bytes_stream();
        let (mut pending, mut answer) = (String::new(), String::new());
        while let Some(Ok(chunk)) = bytes.next().await {
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find('\n') {
                let line: String = pending.drain(..=end).collect();
                match relayed(line.trim_end()) {
                    Some(Relayed::Delta(text)) => {
                        let event = Event::default().event("text_delta").data(json!({"text": text}).to_string());
                        answer.push_str(&text);
                        let _ = events.unbounded_send(Ok(event));
                    }
                    Some(Relayed::Done) => {
                        let _ = store(&floor.db, thread, "assistant", &answer).await;
                        let _ = events.unbounded_send(Ok(Event::default().event("message_complete").data("{}")));
                        return;
                    }
                    None => {}
                }
            }
        }
    });
    Sse::new(out).into_response()
}

/// What a provider's line is: a delta of text, the end, or neither.
enum Relayed {
    Delta(String),
    Done,
}

fn relayed(line: &str) -> Option<Relayed> {
    let data = line.strip_prefix("data: ")?;
    if data == "[DONE]" {
        return Some(Relayed::Done);
    }
    let chunk: Value = serde_json::from_str(data).ok()?;
    let text = chunk["choices"][0]["delta"]["content"].as_str().filter(|text| !text.is_empty())?;
    Some(Relayed::Delta(text.to_owned()))
}
