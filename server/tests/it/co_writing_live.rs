//! Co-writing, live: the changes of a conversation's documents reach everyone watching it
//! (`GET /api/threads/{id}/changes`), on one instance or, on PostgreSQL, across instances; a quoted passage goes
//! with a message and reaches the model; the assistant edits a document in place and tries again after an edit
//! that missed. On SQLite and, with `scripts/with-postgres`, on PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use uuid::Uuid;
use wire::{Artifact, ThreadChange};

use crate::common::{created, every_store, fresh_postgres_url, shared_instance, ScriptedModel, TestServer};

/// A guard against a change that never comes: far beyond any wait a passing run has.
const NEVER: Duration = Duration::from_secs(60);

/// The changes of one conversation as a watcher receives them.
struct Watching {
    changes: mpsc::UnboundedReceiver<ThreadChange>,
    _reader: tokio::task::JoinHandle<()>,
}

impl Watching {
    /// Opens `GET /api/threads/{thread}/changes` as `client`'s person; the stream is watched once this returns.
    async fn open(server: &TestServer, client: &reqwest::Client, thread: Uuid) -> Self {
        let response = changes(server, client, thread).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let (sender, changes) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut parser = wire::sse::SseParser::new();
            let mut body = response.bytes_stream();
            while let Some(Ok(chunk)) = body.next().await {
                for event in parser.feed(&chunk).expect("an event of a sane size") {
                    let change = ThreadChange::from_parts(&event.event, &event.data)
                        .unwrap_or_else(|| panic!("bad change {}: {}", event.event, event.data));
                    if sender.send(change).is_err() {
                        return;
                    }
                }
            }
        });
        Self { changes, _reader: reader }
    }

    /// The next change.
    async fn next(&mut self) -> ThreadChange {
        tokio::time::timeout(NEVER, self.changes.recv()).await.expect("a change came").expect("the stream is open")
    }

    /// The next change, a saved document.
    async fn saved(&mut self) -> Artifact {
        match self.next().await {
            ThreadChange::ArtifactSaved { artifact } => artifact,
            other => panic!("expected a save, got {other:?}"),
        }
    }
}

async fn changes(server: &TestServer, client: &reqwest::Client, thread: Uuid) -> reqwest::Response {
    client.get(server.url(&format!("/api/threads/{thread}/changes"))).send().await.unwrap()
}

async fn put(server: &TestServer, id: Uuid, body: serde_json::Value) -> reqwest::Response {
    server.client.put(server.url(&format!("/api/artifacts/{id}"))).json(&body).send().await.unwrap()
}

fn plan_document() -> serde_json::Value {
    serde_json::json!({"artifact_type": "requirements_doc", "title": "Booking Plan",
        "content": "# Booking Plan\n\nSlots are 30 minutes.\n\nReminders go out a day before.\n"})
}

#[tokio::test]
async fn everyone_watching_sees_saves_restores_the_assistants_versions_and_deletions() {
    for (store, _guard) in every_store("co_writing_live").await {
        let edit = |id: Uuid| {
            serde_json::json!({"artifact_id": id.to_string(),
                "edits": [{"find": "a day before", "replace": "two days before"}]})
        };
        let model = ScriptedModel::new(vec![
            ScriptedModel::tool_use("save_artifact", plan_document()),
            ScriptedModel::text(&["Done."]),
        ]);
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        // Two tabs of the owner watch; so could another device.
        let mut first = Watching::open(&server, &server.client, thread).await;
        let mut second = Watching::open(&server, &server.client, thread).await;

        // The assistant's first version, made in a turn.
        let made = created(&server.chat(thread, "Write the requirements doc").await)[0].clone();
        for watcher in [&mut first, &mut second] {
            assert_eq!(watcher.saved().await, made);
        }
        let id = made.id;

        // A person's save.
        let body = serde_json::json!({"base_version": 1, "content": "# Booking Plan\n\nSlots are 45 minutes.\n"});
        let response = put(&server, id, body).await;
        assert_eq!(response.status(), 200);
        let saved: Artifact = response.json().await.unwrap();
        assert_eq!(first.saved().await, saved);
        assert_eq!((second.saved().await.version, saved.version), (2, 2));

        // A restore.
        let restore = server.client.post(server.url(&format!("/api/artifacts/{id}/versions/1/restore")));
        let response = restore.send().await.unwrap();
        assert_eq!(response.status(), 201);
        let restored = first.saved().await;
        assert_eq!((restored.version, restored.content.as_str()), (3, made.content.as_str()));
        second.saved().await;

        // The assistant's targeted edit in a later turn.
        model.push(ScriptedModel::tool_use("edit_artifact", edit(id)));
        model.push(ScriptedModel::text(&["Edited."]));
        let edited = created(&server.chat(thread, "Reminders two days before").await)[0].clone();
        assert_eq!(edited.version, 4);
        assert_eq!(first.saved().await, edited);
        second.saved().await;

        // A deletion.
        let response = server.client.delete(server.url(&format!("/api/artifacts/{id}"))).send().await.unwrap();
        assert_eq!(response.status(), 204);
        for watcher in [&mut first, &mut second] {
            assert_eq!(watcher.next().await, ThreadChange::ArtifactDeleted { artifact_id: id });
        }

        // Another person cannot watch the conversation, nor can anyone watch one that does not exist.
        let (stranger, _) = server.second_user("stranger-live@example.com").await;
        assert_eq!(changes(&server, &stranger, thread).await.status(), 404);
        assert_eq!(changes(&server, &server.client, Uuid::now_v7()).await.status(), 404);
        assert_eq!(changes(&server, &server.anonymous(), thread).await.status(), 401);
        // The stranger's own conversation's watchers hear nothing of this one.
        let theirs = server.create_thread_as(&stranger).await;
        let mut theirs_watched = Watching::open(&server, &stranger, theirs).await;
        model.push(ScriptedModel::tool_use("save_artifact", plan_document()));
        model.push(ScriptedModel::text(&["Done."]));
        let again = created(&server.chat(thread, "Write the requirements doc again").await)[0].clone();
        assert_eq!(first.saved().await, again);
        assert!(theirs_watched.changes.try_recv().is_err(), "another conversation's watcher hears nothing");
    }
}

#[tokio::test]
async fn a_save_on_one_instance_reaches_a_watcher_on_another() {
    let Some(url) = fresh_postgres_url("a_save_on_one_instance_reaches_a_watcher_on_another").await else { return };
    let model = ScriptedModel::new(vec![
        ScriptedModel::tool_use("save_artifact", plan_document()),
        ScriptedModel::text(&["Done."]),
    ]);
    let a = shared_instance(&url, model, |_| {}).await;
    let b = shared_instance(&url, Arc::new(llm::builtin::Builtin::new()), |_| {}).await;
    let thread = a.create_thread().await;
    let mut on_b = Watching::open(&b, &b.client, thread).await;

    let made = created(&a.chat(thread, "Write the requirements doc").await)[0].clone();
    assert_eq!(on_b.saved().await, made, "the assistant's version on A reaches B");
    let body = serde_json::json!({"base_version": 1, "content": "# Booking Plan\n\nSlots are 45 minutes.\n"});
    let saved: Artifact = put(&a, made.id, body).await.json().await.unwrap();
    assert_eq!(on_b.saved().await, saved, "a person's save on A reaches B with its new version");
    let response = a.client.delete(a.url(&format!("/api/artifacts/{}", made.id))).send().await.unwrap();
    assert_eq!(response.status(), 204);
    assert_eq!(on_b.next().await, ThreadChange::ArtifactDeleted { artifact_id: made.id });
}
