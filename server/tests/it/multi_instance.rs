//! Several stateless Quire instances on one PostgreSQL: the slice works unchanged, each instance sees the
//! others' conversations, and a running turn can be followed and stopped from any of them.

use std::{sync::Arc, time::Duration};

use crate::common::{fresh_postgres_url, read_frames, read_some_frames, ScriptedModel, Step, TestServer};
use app::api::{MessageStatus, ThreadList};
use quire::llm::{builtin::Builtin, Provider, StreamEvent};

async fn instance(url: &str, provider: Arc<dyn Provider>) -> TestServer {
    let store = quire::store::connect(url).await.expect("connect");
    assert_eq!(store.backend(), "postgres");
    // Instances sharing a database share the session key, as the README says they must.
    TestServer::with_configured(store, provider, |config| {
        config.jwt_secret = Some("a shared session key for every instance of this test".parse().expect("secret"));
    })
    .await
}

#[tokio::test]
async fn the_slice_runs_unchanged_on_postgres() {
    let Some(url) = fresh_postgres_url("the_slice_runs_unchanged_on_postgres").await else { return };
    let server = instance(&url, Arc::new(Builtin::new())).await;
    let thread = server.create_thread().await;
    for i in 0..3 {
        let frames = server.chat(thread, &format!("The portal must show invoice {i}.")).await;
        assert!(frames.iter().filter(|f| f.event.name() == "text_delta").count() >= 3);
        assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    }
    let detail = server.detail(thread).await;
    assert_eq!(detail.messages.len(), 6);
    assert_eq!(detail.thread.message_count, 6);
    assert_eq!(detail.messages.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
}

#[tokio::test]
async fn two_instances_see_each_others_threads_and_turns() {
    let Some(url) = fresh_postgres_url("two_instances_see_each_others_threads_and_turns").await else { return };
    let a = instance(&url, Arc::new(Builtin::new().with_delay(Duration::from_millis(10)))).await;
    let b = instance(&url, Arc::new(Builtin::new())).await;

    let thread = a.create_thread().await;
    let listed: ThreadList = b.client.get(b.url("/api/threads")).send().await.unwrap().json().await.unwrap();
    assert!(listed.threads.iter().any(|t| t.id == thread), "B lists A's thread");

    // A writes an answer; the client drops after a few events and re-attaches on B.
    let response = a
        .client
        .post(a.url(&format!("/api/threads/{thread}/chat")))
        .json(&serde_json::json!({"content": "Drivers need route updates. Dispatchers must see delays."}))
        .send()
        .await
        .unwrap();
    let seen = read_some_frames(response, 3).await;
    let resumed = b
        .client
        .get(b.url(&format!("/api/threads/{thread}/stream")))
        .header("Last-Event-ID", seen.last().unwrap().id.clone().unwrap())
        .send()
        .await
        .unwrap();
    let rest = read_frames(resumed).await;
    assert_eq!(rest.last().unwrap().event.name(), "message_complete", "B follows the turn to its end");
    let full = read_frames(b.client.get(b.url(&format!("/api/threads/{thread}/stream"))).send().await.unwrap()).await;
    let joined: Vec<Option<String>> = seen.iter().chain(rest.iter()).map(|f| f.id.clone()).collect();
    assert_eq!(joined, full.iter().map(|f| f.id.clone()).collect::<Vec<_>>(), "nothing lost, nothing twice");

    let on_b = b.detail(thread).await;
    assert_eq!(on_b.messages.len(), 2);
    assert_eq!(on_b.messages[1].status, MessageStatus::Complete);
}

#[tokio::test]
async fn a_turn_can_be_stopped_from_another_instance() {
    let Some(url) = fresh_postgres_url("a_turn_can_be_stopped_from_another_instance").await else { return };
    let script = vec![Step::Emit(StreamEvent::TextDelta("Half an answer".into())), Step::Hang];
    let a = instance(&url, ScriptedModel::new(vec![script])).await;
    let b = instance(&url, Arc::new(Builtin::new())).await;
    let thread = a.create_thread().await;
    let response = a
        .client
        .post(a.url(&format!("/api/threads/{thread}/chat")))
        .json(&serde_json::json!({"content": "Go on"}))
        .send()
        .await
        .unwrap();
    let reader = tokio::spawn(read_frames(response));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stop = b.client.post(b.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    assert_eq!(stop.status(), 202);
    let frames = reader.await.unwrap();
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    let detail = b.wait_idle(thread).await;
    assert_eq!(detail.messages[1].status, MessageStatus::Stopped);
    assert_eq!(detail.messages[1].content, "Half an answer");
}

#[tokio::test]
async fn following_a_turn_whose_instance_died_ends_instead_of_waiting() {
    let Some(url) = fresh_postgres_url("following_a_turn_whose_instance_died_ends").await else { return };
    let server = instance(&url, Arc::new(Builtin::new())).await;
    let thread = server.create_thread().await;
    // A turn left running by an instance that died an hour ago: its heartbeat stopped then.
    let turn = uuid::Uuid::now_v7();
    server.state.store.begin_turn(server.user.id, thread, turn, 60_000).await.unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query("update turns set heartbeat_at = now() - interval '1 hour' where id = $1")
        .bind(turn)
        .execute(&pool)
        .await
        .unwrap();
    assert!(!server.detail(thread).await.running, "the conversation is not shown as being answered");
    let resumed = server.client.get(server.url(&format!("/api/threads/{thread}/stream"))).send().await.unwrap();
    assert_eq!(resumed.status(), 200);
    let frames = tokio::time::timeout(Duration::from_secs(10), read_frames(resumed)).await;
    assert!(frames.expect("the stream ends instead of waiting for a dead turn").is_empty());
}
