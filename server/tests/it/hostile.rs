//! Hostile uploads: crafted files that attack the PDF parser (a form that draws itself, a Flate bomb, nesting
//! deeper than any stack, 100,000 pages, truncation, encryption) or the text path (nothing, not UTF-8, 8 MiB
//! without a space, a million lines). Each gets a clear answer, nothing of a refused file is stored, the server
//! stays up, and a chat streaming meanwhile on another conversation loses nothing. Also the bounds around
//! that work: the heavy-work queue, the storage allowance and the upload rate.

use std::time::Duration;

use uuid::Uuid;
use wire::{AttachmentList, ErrorBody};

use crate::common::{get_json, read_frames, text_of, upload, TestServer};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hostile");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What a crafted file must get.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Exactly this status and error code.
    Refused(u16, &'static str),
    /// Stored, with its text readable.
    Readable,
    /// Either stored or refused as unreadable (the parser's limits decide; both are clear answers).
    ReadableOrUnreadable,
}

fn cases() -> Vec<(&'static str, &'static str, Vec<u8>, Expect)> {
    let no_whitespace: Vec<u8> = b"abcdefghij".iter().copied().cycle().take(8 * 1024 * 1024).collect();
    let million_lines: Vec<u8> = b"ab\n".iter().copied().cycle().take(3 * 1_000_000).collect();
    let pdf = "application/pdf";
    let unreadable = Expect::Refused(422, "unreadable_file");
    vec![
        ("self_drawing_xobject.pdf", pdf, fixture("self_drawing_xobject.pdf"), unreadable),
        ("deep_nesting.pdf", pdf, fixture("deep_nesting.pdf"), Expect::ReadableOrUnreadable),
        ("flate_bomb.pdf", pdf, fixture("flate_bomb.pdf"), Expect::ReadableOrUnreadable),
        ("hundred_thousand_pages.pdf", pdf, fixture("hundred_thousand_pages.pdf"), Expect::ReadableOrUnreadable),
        ("truncated.pdf", pdf, fixture("truncated.pdf"), Expect::ReadableOrUnreadable),
        ("encrypted.pdf", pdf, fixture("encrypted.pdf"), unreadable),
        ("zero_bytes.pdf", pdf, fixture("zero_bytes.pdf"), Expect::Refused(415, "unsupported_media_type")),
        ("zero_bytes.txt", "text/plain", fixture("zero_bytes.txt"), Expect::Refused(422, "validation_failed")),
        ("latin1.txt", "text/plain", fixture("latin1.txt"), Expect::Refused(422, "validation_failed")),
        ("no-whitespace.txt", "text/plain", no_whitespace, Expect::Readable),
        ("million-lines.txt", "text/plain", million_lines, Expect::Readable),
        ("readable.pdf", pdf, fixture("readable.pdf"), Expect::Readable),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crafted_files_get_clear_answers_while_a_chat_streams_on() {
    let server = TestServer::start_with(|config| config.builtin_delay_ms = 15).await;
    let files = server.create_thread().await;
    let chatting = server.create_thread().await;

    // A chat on another conversation, streaming all the while.
    let client = server.client.clone();
    let chat_url = server.url(&format!("/api/threads/{chatting}/chat"));
    let chat = tokio::spawn(async move {
        let body = serde_json::json!({ "content": "Members must be able to book a court, cancel a booking and \
            see their bookings. Please describe how the booking flow should work in detail." });
        let response = client.post(chat_url).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 200);
        read_frames(response).await
    });

    // Two uploads at a time from two accounts (each person may run two at once).
    let (other_client, _) = server.second_user("hostile-two@example.com").await;
    let other_files = server.create_thread_as(&other_client).await;
    let mut kept = [Vec::new(), Vec::new()];
    let mut pending = Vec::new();
    for (i, (name, mime, bytes, expect)) in cases().into_iter().enumerate() {
        let (client, thread) =
            if i % 2 == 0 { (server.client.clone(), files) } else { (other_client.clone(), other_files) };
        let base = server.base.clone();
        pending.push(tokio::spawn(async move {
            let response = upload(&client, &base, thread, name, mime, bytes).await;
            (i % 2, name, expect, response.status().as_u16(), response.text().await.unwrap())
        }));
        if pending.len() == 4 {
            for done in std::mem::take(&mut pending) {
                check(done.await.unwrap(), &mut kept);
            }
            let health = server.get("/api/health").await;
            assert_eq!(health.status(), 200, "the server answers between hostile uploads");
        }
    }
    for done in pending {
        check(done.await.unwrap(), &mut kept);
    }

    // Only the files that were read are stored.
    for (client, thread, kept) in [(&server.client, files, &kept[0]), (&other_client, other_files, &kept[1])] {
        let list: AttachmentList = get_json(client, &server.url(&format!("/api/threads/{thread}/attachments"))).await;
        let mut stored: Vec<&str> = list.attachments.iter().map(|a| a.filename.as_str()).collect();
        stored.sort_unstable();
        let mut expected: Vec<&str> = kept.to_vec();
        expected.sort_unstable();
        assert_eq!(stored, expected);
        assert!(list.attachments.iter().all(|a| a.chunks >= 1 && a.chunks <= 2000));
    }

    // The chat lost nothing: every delta arrived and the stored answer is their sum.
    let frames = tokio::time::timeout(Duration::from_secs(120), chat).await.expect("the chat finished").unwrap();
    let streamed = text_of(&frames);
    assert!(!streamed.is_empty());
    assert!(frames.iter().all(|f| f.event.name() != "error"), "{frames:?}");
    assert_eq!(frames.last().map(|f| f.event.name()), Some("message_complete"));
    let detail = server.wait_idle(chatting).await;
    assert_eq!(detail.messages.last().unwrap().content, streamed);
    let health = server.get("/api/health").await;
    assert_eq!(health.status(), 200);
}

fn check(
    (account, name, expect, status, body): (usize, &'static str, Expect, u16, String),
    kept: &mut [Vec<&'static str>; 2],
) {
    let error = || serde_json::from_str::<ErrorBody>(&body).unwrap_or_else(|_| panic!("{name}: {status} {body}"));
    match expect {
        Expect::Refused(want, code) => {
            assert_eq!(status, want, "{name}: {body}");
            assert_eq!(error().error.code, code, "{name}");
        }
        Expect::Readable => {
            assert_eq!(status, 201, "{name}: {body}");
            kept[account].push(name);
        }
        Expect::ReadableOrUnreadable => {
            if status == 201 {
                kept[account].push(name);
            } else {
                assert_eq!(status, 422, "{name}: {body}");
                let code = error().error.code;
                assert!(code == "unreadable_file" || code == "validation_failed", "{name}: {body}");
            }
        }
    }
    if status >= 400 {
        // A plain message, nothing of the parser's internals.
        let message = error().error.message;
        assert!(!message.contains("lopdf") && !message.contains("panicked"), "{name}: {message}");
    }
}

/// A server that does one piece of heavy work at a time and keeps no queue.
async fn one_heavy_place() -> TestServer {
    TestServer::start_with(|config| {
        config.heavy_workers = 1;
        config.heavy_queue = 0;
    })
    .await
}

#[tokio::test]
async fn a_full_heavy_queue_answers_429_and_stores_nothing() {
    let server = one_heavy_place().await;
    let thread = server.create_thread().await;
    // Someone else's job holds the only place.
    let held = server.state.heavy.admit(Uuid::new_v4()).unwrap();
    let response = upload(&server.client, &server.base, thread, "a.txt", "text/plain", b"Hello.".to_vec()).await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_some());
    drop(held);
    let response = upload(&server.client, &server.base, thread, "a.txt", "text/plain", b"Hello.".to_vec()).await;
    assert_eq!(response.status(), 201);

    // One person holds at most two places.
    let server2 = TestServer::start().await;
    let thread2 = server2.create_thread().await;
    let _one = server2.state.heavy.admit(server2.user.id).unwrap();
    let _two = server2.state.heavy.admit(server2.user.id).unwrap();
    let response = upload(&server2.client, &server2.base, thread2, "b.txt", "text/plain", b"Hi.".to_vec()).await;
    assert_eq!(response.status(), 429);
    let list: AttachmentList = server2.get_json(&format!("/api/threads/{thread2}/attachments")).await;
    assert!(list.attachments.is_empty());
}

/// Exports and imports take a place in the heavy-work queue as uploads do: with every place taken they are
/// refused at once with `Retry-After`, and work again once a place is free.
#[tokio::test]
async fn exports_and_imports_wait_their_turn_in_the_heavy_queue() {
    let server = one_heavy_place().await;
    let export = serde_json::json!({
        "format": "quire.thread", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
        "thread": {"id": Uuid::now_v7(), "title": "Courts", "tags": [], "created_at": "2026-01-01T00:00:00Z",
                   "updated_at": "2026-01-01T00:00:00Z"},
        "messages": [{"id": Uuid::now_v7(), "seq": 1, "role": "user", "content": "Book a court.",
                      "status": "complete", "created_at": "2026-01-01T00:00:00Z"}],
        "artifacts": [{"id": Uuid::now_v7(), "artifact_type": "custom", "title": "Plan", "content": "# Plan",
                       "version": 1, "created_at": "2026-01-01T00:00:00Z"}]
    });
    let import = || server.client.post(server.url("/api/threads/import")).json(&export).send();
    let response = import().await.unwrap();
    assert_eq!(response.status(), 201);
    let thread = response.json::<wire::ImportResult>().await.unwrap().threads[0].id;
    let document = server.detail(thread).await.artifacts[0].id;
    let heavy = [
        format!("/api/threads/{thread}/export?format=markdown"),
        "/api/export".to_string(),
        format!("/api/artifacts/{document}/export?format=pdf"),
        format!("/api/artifacts/{document}/export?format=docx"),
        format!("/api/artifacts/{document}/export?format=md"),
    ];

    // Someone else's job holds the only place.
    let held = server.state.heavy.admit(Uuid::new_v4()).unwrap();
    let mut refused = vec![import().await.unwrap()];
    for path in &heavy {
        refused.push(server.get(path).await);
    }
    for response in refused {
        let url = response.url().path().to_string();
        assert_eq!(response.status(), 429, "{url}");
        assert!(response.headers().get("retry-after").is_some(), "{url}");
        let error: ErrorBody = response.json().await.unwrap();
        assert_eq!(error.error.code, "rate_limited", "{url}");
    }
    assert_eq!(server.detail(thread).await.messages.len(), 1);
    drop(held);

    for path in &heavy {
        let response = server.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        // The account export holds its place until its body is sent.
        response.bytes().await.unwrap();
    }
    assert_eq!(import().await.unwrap().status(), 201);
    assert_eq!(server.state.heavy.admitted(), 0, "every place is given back");
}

#[tokio::test]
async fn the_storage_allowance_and_the_upload_rate_hold() {
    let server = TestServer::start_with(|config| {
        config.user_storage_mb = 1;
        config.limits.upload = 4;
    })
    .await;
    let thread = server.create_thread().await;
    let text = |n: usize| "Plain words for the index. ".repeat(n / 27).into_bytes();
    let response = upload(&server.client, &server.base, thread, "one.txt", "text/plain", text(600_000)).await;
    assert_eq!(response.status(), 201);
    let response = upload(&server.client, &server.base, thread, "two.txt", "text/plain", text(600_000)).await;
    assert_eq!(response.status(), 413);
    let body: ErrorBody = response.json().await.unwrap();
    assert_eq!(body.error.code, "storage_quota_exceeded");
    assert!(body.error.message.contains("1 MiB"), "{}", body.error.message);
    // A smaller one still fits.
    let response = upload(&server.client, &server.base, thread, "three.txt", "text/plain", text(100_000)).await;
    assert_eq!(response.status(), 201);
    let list: AttachmentList = server.get_json(&format!("/api/threads/{thread}/attachments")).await;
    let names: Vec<&str> = list.attachments.iter().map(|a| a.filename.as_str()).collect();
    assert_eq!(names, ["one.txt", "three.txt"]);

    // Four uploads a minute: the fifth is refused.
    let response = upload(&server.client, &server.base, thread, "four.txt", "text/plain", text(100)).await;
    assert_eq!(response.status(), 201);
    let response = upload(&server.client, &server.base, thread, "five.txt", "text/plain", text(100)).await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_some());
}

/// A client that sends half a request's head and then nothing is closed once `QUIRE_HEADER_TIMEOUT_SECONDS`
/// passes, instead of holding its connection for good; the server answers others meanwhile.
#[tokio::test]
async fn a_head_sent_too_slowly_is_closed_at_the_configured_limit() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start_with(|config| config.header_timeout_seconds = 1).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"POST /api/auth/login HTTP/1.1\r\nhost: quire\r\ncontent-type: applic").await.unwrap();
    let health = server.get("/api/health").await;
    assert_eq!(health.status(), 200);
    let mut answer = Vec::new();
    // A minute at most: a connection never closed fails the test rather than hanging it.
    let read = tokio::time::timeout(Duration::from_secs(60), slow.read_to_end(&mut answer))
        .await
        .expect("the server closes a connection whose head never arrives");
    if let Err(e) = read {
        // Closed with unread bytes: a reset, which is a close too.
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(!answer.contains(" 200 "), "nothing was answered: {answer}");
}
