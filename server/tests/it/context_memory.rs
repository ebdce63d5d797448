//! Hot conversations' context from memory: a conversation's next turn builds what the model sees from what its
//! last turn kept, not from a read, and reads it again after any other write to the conversation, here or on
//! another instance. (In debug builds every context built from memory is also checked against a read.)

use std::sync::Arc;

use llm::builtin::Builtin;
use quire::chat::memory::Source;
use uuid::Uuid;
use wire::{ContextRecord, Message, Role};

use crate::common::{fresh_postgres_url, shared_instance, ExpectJson, TestServer};

/// How many turns' contexts `server` built from each source: memory, store, stale.
fn counts(server: &TestServer) -> [u64; 3] {
    Source::ALL.map(|source| server.state.chat.contexts_from(source))
}

/// What the model saw for the conversation's newest answer.
async fn newest_context(server: &TestServer, thread: Uuid) -> (ContextRecord, Vec<Message>) {
    let detail = server.wait_idle(thread).await;
    let answer = detail.messages.iter().rev().find(|m| m.role == Role::Assistant).expect("an answer");
    let record: ContextRecord =
        server.client.get(server.url(&format!("/api/messages/{}/context", answer.id))).expect_json().await;
    (record, detail.messages)
}

#[tokio::test]
async fn the_next_turn_builds_its_context_from_memory_until_the_conversation_changes() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    server.chat(thread, "We are planning a library app. Readers must reserve books.").await;
    assert_eq!(counts(&server), [0, 1, 0], "the first turn reads the conversation");
    server.chat(thread, "Readers must also see their loans.").await;
    assert_eq!(counts(&server), [1, 1, 0], "the second builds it from what the first kept");
    let (record, messages) = newest_context(&server, thread).await;
    let earlier: Vec<Uuid> = messages[..3].iter().map(|m| m.id).collect();
    assert_eq!(record.included, earlier, "the model saw the whole conversation before the answer");

    // A message added between turns changes the conversation: what was kept is let go, and it is read again.
    let added =
        server.add_message(thread, &serde_json::json!({ "content": "Librarians must approve long loans." })).await;
    assert_eq!(added.status(), 201);
    let added: Message = added.json().await.unwrap();
    server.chat(thread, "What else should the app do?").await;
    assert_eq!(counts(&server), [1, 2, 0]);
    let (record, _) = newest_context(&server, thread).await;
    assert!(record.included.contains(&added.id), "the added message reached the model: {record:?}");

    // A turn that makes a document keeps nothing (which requests are answered changed): the next one reads.
    server.chat(thread, "Generate user stories").await;
    assert_eq!(counts(&server), [2, 2, 0]);
    server.chat(thread, "Thanks, that helps.").await;
    assert_eq!(counts(&server), [2, 3, 0]);
    let (record, messages) = newest_context(&server, thread).await;
    let request = messages.iter().find(|m| m.content == "Generate user stories").expect("the request").id;
    assert!(record.filtered.contains(&request), "the fulfilled request is left out: {record:?}");

    // The document deleted behind the engine's back (as another instance would): the start finds what was kept
    // stale by the conversation's stamp, and the request is seen again.
    let documents: wire::ArtifactList =
        server.client.get(server.url(&format!("/api/threads/{thread}/artifacts"))).expect_json().await;
    let document = documents.artifacts.first().expect("the stories").id;
    server.state.store.delete_artifact(server.user.id, document).await.unwrap();
    server.chat(thread, "One more detail: fines for late returns.").await;
    assert_eq!(counts(&server), [2, 4, 1]);
    let (record, _) = newest_context(&server, thread).await;
    assert!(record.included.contains(&request), "the request is seen again: {record:?}");
    server.chat(thread, "And reminders before a loan ends.").await;
    assert_eq!(counts(&server), [3, 4, 1], "and the turn after that builds from memory again");
}

#[tokio::test]
async fn a_turn_on_another_instance_makes_what_was_kept_stale() {
    let Some(url) = fresh_postgres_url("a_turn_on_another_instance_makes_what_was_kept_stale").await else { return };
    let instance = || shared_instance(&url, Arc::new(Builtin::new()), |_| {});
    let (a, b) = (instance().await, instance().await);
    let thread = a.create_thread().await;
    a.chat(thread, "We are planning a bakery website. Customers must order cakes.").await;
    let on_b = b.chat(thread, "Customers must also pick a delivery time.").await;
    assert_eq!(on_b.last().unwrap().event.name(), "message_complete");
    a.chat(thread, "What about payments?").await;
    assert_eq!(counts(&a), [0, 2, 1], "A's kept context was stale after B's turn");
    assert_eq!(counts(&b), [0, 1, 0]);
    let (record, messages) = newest_context(&a, thread).await;
    let earlier: Vec<Uuid> = messages[..5].iter().map(|m| m.id).collect();
    assert_eq!(record.included, earlier, "A's model saw B's turn");
    b.chat(thread, "And gift cards.").await;
    assert_eq!(counts(&b), [0, 2, 1]);
    a.chat(thread, "Summarise the plan.").await;
    assert_eq!(counts(&a), [0, 3, 2]);
}
