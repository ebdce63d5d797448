//! The first vertical slice over real HTTP: health, threads, a streamed chat turn, persistence.

use crate::common::{post_raw_json, TestServer};
use wire::{ChatEvent, ErrorBody, Role, ThreadDetail, ThreadList};

#[tokio::test]
async fn health_answers_ok() {
    let server = TestServer::start().await;
    let response = server.get("/api/health").await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<serde_json::Value>().await.unwrap(), serde_json::json!({"status": "ok"}));
}

#[tokio::test]
async fn chat_streams_deltas_before_completion() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "We need a booking system. Customers must be able to cancel online.").await;
    let names: Vec<&str> = frames.iter().map(|f| f.event.name()).collect();
    let deltas = names.iter().filter(|n| **n == "text_delta").count();
    assert!(deltas >= 3, "expected several text deltas, got {names:?}");
    assert_eq!(names.last(), Some(&"message_complete"));
    let first_delta = names.iter().position(|n| *n == "text_delta").unwrap();
    assert!(first_delta < names.len() - 1);
    assert!(frames.iter().all(|f| f.id.is_some()), "every event has an id");
    let text = crate::common::text_of(&frames);
    assert!(text.contains("Customers must be able to cancel online"), "answer restates the requirement: {text}");
    let ChatEvent::MessageComplete { message_id: Some(id), usage, .. } = &frames.last().unwrap().event else {
        panic!("no message id");
    };
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0);
    let detail: ThreadDetail = server.get_json(&format!("/api/threads/{thread}")).await;
    let answer = detail.messages.iter().find(|m| m.id == *id).expect("answer saved");
    assert_eq!(answer.content, text);
}

#[tokio::test]
async fn follow_ups_never_duplicate_history() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let n = 4;
    for i in 0..n {
        let frames = server.chat(thread, &format!("Message number {i}: the app should do thing {i}.")).await;
        assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    }
    let detail: ThreadDetail = server.get_json(&format!("/api/threads/{thread}")).await;
    assert_eq!(detail.messages.len(), 2 * n);
    assert_eq!(detail.thread.message_count, 2 * n as i64);
    for (i, pair) in detail.messages.chunks(2).enumerate() {
        assert_eq!(pair[0].role, Role::User);
        assert_eq!(pair[0].content, format!("Message number {i}: the app should do thing {i}."));
        assert_eq!(pair[1].role, Role::Assistant);
    }
    let seqs: Vec<i64> = detail.messages.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, (1..=2 * n as i64).collect::<Vec<_>>());
}

#[tokio::test]
async fn first_message_names_the_thread() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "Plan the quarterly inventory audit for the warehouse").await;
    assert!(
        matches!(&frames[0].event, ChatEvent::ThreadName { title, .. } if title == "Plan the quarterly inventory audit")
    );
    let list: ThreadList = server.get_json("/api/threads").await;
    assert_eq!(list.threads[0].title, "Plan the quarterly inventory audit");
}

#[tokio::test]
async fn errors_use_the_error_format() {
    let server = TestServer::start().await;
    let missing = server.get(&format!("/api/threads/{}", uuid::Uuid::nil())).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.json::<ErrorBody>().await.unwrap().error.code, "not_found");

    let bad_id = server.get("/api/threads/not-a-uuid").await;
    assert_eq!(bad_id.status(), 400);
    assert_eq!(bad_id.json::<ErrorBody>().await.unwrap().error.code, "invalid_path");

    let thread = server.create_thread().await;
    let malformed =
        post_raw_json(&server.client, &server.url(&format!("/api/threads/{thread}/chat")), "{\"content\": ").await;
    assert_eq!(malformed.status(), 400);
    assert_eq!(malformed.json::<ErrorBody>().await.unwrap().error.code, "malformed_json");

    let empty = server.send_text(thread, "   ").await;
    assert_eq!(empty.status(), 422);
    let body = empty.json::<ErrorBody>().await.unwrap();
    assert_eq!(body.error.field.as_deref(), Some("content"));

    let detail: ThreadDetail = server.get_json(&format!("/api/threads/{thread}")).await;
    assert!(detail.messages.is_empty(), "rejected requests saved nothing");
}

#[tokio::test]
async fn a_proxy_speaking_http2_without_tls_is_served_streams_included() {
    // As a reverse proxy that speaks HTTP/2 to Quire (many streams sharing one connection) would connect.
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let h2c = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let health = h2c.get(server.url("/api/health")).send().await.unwrap();
    assert_eq!((health.status().as_u16(), health.version()), (200, reqwest::Version::HTTP_2));
    let chat = h2c
        .post(server.url(&format!("/api/threads/{thread}/chat")))
        .bearer_auth(&server.token)
        .json(&serde_json::json!({"content": "We need a booking system."}))
        .send()
        .await
        .unwrap();
    assert_eq!((chat.status().as_u16(), chat.version()), (200, reqwest::Version::HTTP_2));
    let body = chat.text().await.unwrap();
    assert!(body.contains("event: text_delta") && body.contains("event: message_complete"), "{body}");
}
