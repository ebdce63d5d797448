//! Operating Quire: metrics on their own address, readiness, request ids, and stopping within the shutdown
//! deadline with a request stuck and a turn running.

use std::{process::Stdio, time::Duration};

use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
};
use wire::{MessageStatus, Role};

use crate::common::{read_some_frames, sign_up, text_of, ExpectJson, TestServer};

/// Serves the metrics router of `server` on a port of its own, as `QUIRE_METRICS_ADDR` does.
async fn metrics_address(server: &TestServer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = quire::ops::metrics::router(server.state.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

/// The value of the sample whose line starts with `series` (name and labels, as written).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test]
async fn metrics_are_not_on_the_public_address() {
    let server = TestServer::start().await;
    let response = reqwest::get(server.url("/metrics")).await.unwrap();
    assert_eq!(response.status(), 404);
    let body = response.text().await.unwrap();
    assert!(!body.contains("quire_http_requests"), "{body}");
}

#[tokio::test]
async fn metrics_count_requests_and_the_tokens_of_a_turn() {
    let server = TestServer::start().await;
    let metrics = metrics_address(&server).await;
    let thread = server.create_thread().await;
    for _ in 0..2 {
        let listed = server.get("/api/threads").await;
        assert_eq!(listed.status(), 200);
    }
    let missing = server.client.get(server.url(&format!("/api/threads/{}", uuid::Uuid::new_v4()))).send().await;
    assert_eq!(missing.unwrap().status(), 404);
    let frames = server.chat(thread, "Write a short note about tea.").await;
    assert!(!text_of(&frames).is_empty());
    let detail = server.wait_idle(thread).await;
    let answer = detail.messages.iter().find(|m| m.role == Role::Assistant).expect("an answer");
    assert!(answer.output_tokens > 0 && answer.input_tokens > 0);

    let response = reqwest::get(format!("{metrics}/metrics")).await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    let text = response.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let requests = |route: &str, method: &str, status: u16| {
        sample(&text, &format!(r#"quire_http_requests_total{{method="{method}",route="{route}",status="{status}"}}"#))
    };
    assert_eq!(requests("/api/threads", "GET", 200), Some(2.0), "{text}");
    assert_eq!(requests("/api/threads", "POST", 201), Some(1.0), "{text}");
    assert_eq!(requests("/api/threads/{id}", "GET", 404), Some(1.0), "by route, never by path: {text}");
    assert_eq!(requests("/api/threads/{id}/chat", "POST", 200), Some(1.0), "{text}");
    let latency = sample(&text, r#"quire_http_request_duration_seconds_count{method="GET",route="/api/threads"}"#);
    assert_eq!(latency, Some(2.0), "{text}");
    let contexts = |source: &str| sample(&text, &format!(r#"quire_context_builds_total{{source="{source}"}}"#));
    assert_eq!((contexts("store"), contexts("memory")), (Some(1.0), Some(0.0)), "{text}");

    // The model's report of the turn's tokens, as stored on the answer.
    let model = answer.model.clone().expect("the answer names its model");
    let tokens = |direction: &str| {
        sample(&text, &format!(r#"quire_tokens_total{{provider="builtin",model="{model}",direction="{direction}"}}"#))
    };
    assert_eq!(tokens("output"), Some(answer.output_tokens as f64), "{text}");
    assert_eq!(tokens("input"), Some(answer.input_tokens as f64), "{text}");
    assert_eq!(sample(&text, r#"quire_provider_first_token_seconds_count{provider="builtin"}"#), Some(1.0), "{text}");
    // The turn is over and its stream closed.
    assert_eq!(sample(&text, "quire_running_turns"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "quire_open_streams"), Some(0.0), "{text}");
}

#[tokio::test]
async fn ready_means_the_database_answers_with_every_migration() {
    let server = TestServer::start().await;
    let response = reqwest::get(server.url("/api/ready")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<serde_json::Value>().await.unwrap(), serde_json::json!({"status": "ready"}));

    // A database that lacks this build's newest migration is not ready.
    let file = server.state.config.data_dir.join("quire.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", file.display())).await.unwrap();
    sqlx::query("delete from _sqlx_migrations where version = (select max(version) from _sqlx_migrations)")
        .execute(&pool)
        .await
        .unwrap();
    let response = reqwest::get(server.url("/api/ready")).await.unwrap();
    assert_eq!(response.status(), 503);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_ready", "{body}");
    // The process itself is up.
    assert_eq!(reqwest::get(server.url("/api/health")).await.unwrap().status(), 200);
}

#[tokio::test]
async fn on_postgres_ready_checks_migrations_and_metrics_show_the_pool() {
    let Some(url) = crate::common::fresh_postgres_url("ops postgres").await else { return };
    let store = store::connect(&url).await.unwrap();
    let server = TestServer::builtin(store).await;
    assert_eq!(reqwest::get(server.url("/api/ready")).await.unwrap().status(), 200);
    let metrics = metrics_address(&server).await;
    let text = reqwest::get(format!("{metrics}/metrics")).await.unwrap().text().await.unwrap();
    let open = |pool: &str| {
        sample(&text, &format!(r#"quire_db_connections{{pool="{pool}",state="idle"}}"#)).unwrap_or(0.0)
            + sample(&text, &format!(r#"quire_db_connections{{pool="{pool}",state="in_use"}}"#))
                .unwrap_or_else(|| panic!("the {pool} pool is reported: {text}"))
    };
    assert!(open("main") >= 1.0, "{text}");
    // The checks' own pool is reported beside it (it may hold no connection before the first check).
    assert!(open("rate_limits") >= 0.0, "{text}");

    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query("delete from _sqlx_migrations where version = (select max(version) from _sqlx_migrations)")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(reqwest::get(server.url("/api/ready")).await.unwrap().status(), 503);
}

#[tokio::test]
async fn every_answer_carries_its_request_id() {
    let server = TestServer::start().await;
    let sent = server.client.get(server.url("/api/threads")).header("x-request-id", "trace-42").send().await.unwrap();
    assert_eq!(sent.headers()["x-request-id"], "trace-42");
    let made = server.get("/api/health").await;
    let id = made.headers()["x-request-id"].to_str().unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
}

/// A `quire` process on port 0 whose log is JSON lines.
struct Process {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Process {
    /// The address logged with `message`.
    async fn address(&mut self, message: &str) -> String {
        while let Some(line) = self.lines.next_line().await.unwrap() {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if event["fields"]["message"] == message {
                return format!("http://{}", event["fields"]["addr"].as_str().unwrap());
            }
        }
        panic!("quire exited before logging {message:?}");
    }
}

/// Whether `quire probe` (the container health check) says the server at `base` is ready.
async fn probe(base: &str) -> bool {
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_quire"))
        .arg("probe")
        .env("LEPTOS_SITE_ADDR", base.trim_start_matches("http://"))
        .stderr(Stdio::null())
        .status()
        .await
        .unwrap();
    status.success()
}

#[tokio::test]
async fn sigterm_stops_within_the_deadline_and_saves_the_running_turn() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_quire"))
        .env_clear()
        .env("QUIRE_DATA_DIR", dir.path())
        .env("LEPTOS_SITE_ADDR", "127.0.0.1:0")
        .env("QUIRE_METRICS_ADDR", "127.0.0.1:0")
        .env("QUIRE_LOG_FORMAT", "json")
        .env("QUIRE_SHUTDOWN_SECONDS", "2")
        // Slow enough that the answer is still being written when the signal comes.
        .env("QUIRE_BUILTIN_DELAY_MS", "100")
        .env("QUIRE_RATE_LIMITS", "off")
        // The first account signs up without a setup link.
        .env("QUIRE_SIGNUP", "open")
        // Each request's start and end are logged, in its span.
        .env("RUST_LOG", "info,tower_http=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut quire = Process { child, lines };
    let metrics = quire.address("metrics at /metrics").await;
    let base = quire.address("Quire is listening").await;
    // The rest of the log is read (and so never blocks the process) until it ends.
    let mut lines = quire.lines;
    let log = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            all.push(line);
        }
        all
    });

    assert_eq!(reqwest::get(format!("{base}/metrics")).await.unwrap().status(), 404);
    assert!(probe(&base).await, "`quire probe` finds it ready");
    let (client, session) = sign_up(&base, "ops@example.com").await;
    let thread: wire::Thread =
        client.post(format!("{base}/api/threads")).json(&serde_json::json!({})).expect_json().await;
    let chat = client
        .post(format!("{base}/api/threads/{}/chat", thread.id))
        .json(&serde_json::json!({"content": "Write a long story about a lighthouse keeper and the sea."}))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status(), 200);
    let request_id = chat.headers()["x-request-id"].to_str().unwrap().to_string();
    let received = text_of(&read_some_frames(chat, 4).await);
    assert!(!received.is_empty());
    let scraped = reqwest::get(format!("{metrics}/metrics")).await.unwrap().text().await.unwrap();
    assert_eq!(sample(&scraped, "quire_running_turns"), Some(1.0), "{scraped}");

    // An upload whose body never comes: its handler waits for it for ever.
    let mut stuck = TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
    let head = format!(
        "POST /api/threads/{}/attachments HTTP/1.1\r\nHost: quire\r\nAuthorization: Bearer {}\r\n\
         Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 5000000\r\n\r\n\
         --b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello",
        thread.id, session.token
    );
    stuck.write_all(head.as_bytes()).await.unwrap();
    stuck.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let pid = rustix::process::Pid::from_raw(quire.child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    // A 2 s deadline; a process that waited for the upload would never exit.
    let exited = tokio::time::timeout(Duration::from_secs(30), quire.child.wait()).await;
    let status = match exited {
        Ok(status) => status.unwrap(),
        Err(_) => {
            quire.child.kill().await.unwrap();
            panic!("quire was still running long after the shutdown deadline");
        }
    };
    assert!(status.success(), "{status:?}");
    assert!(!probe(&base).await, "`quire probe` fails once it is gone");
    let log = log.await.unwrap();
    assert!(log.iter().any(|l| l.contains("shutdown deadline passed")), "the stuck upload was cut off: {log:?}");
    drop(stuck);
    // The request's log lines name it.
    let tagged = format!(r#""request_id":"{request_id}""#);
    assert!(log.iter().any(|l| l.contains(&tagged)), "no log line carries {request_id}: {log:?}");

    // The answer so far was saved, as stopped, and the conversation is free again.
    let store = store::connect(&crate::common::sqlite_url(dir.path())).await.unwrap();
    let messages = store.list_messages(session.user.id, thread.id).await.unwrap();
    let answer = messages.iter().find(|m| m.role == Role::Assistant).expect("the partial answer was saved");
    assert!(answer.content.starts_with(&received), "{answer:?} does not go on from {received:?}");
    assert_ne!(answer.status, MessageStatus::Complete, "{answer:?}");
}
