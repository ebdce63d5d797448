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
    /// The answers seen starting so far (told before anything they save).
    started: Vec<Uuid>,
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
        Self { changes, started: Vec::new(), _reader: reader }
    }

    /// The next change to a document (answers starting are noted in `started`).
    async fn next(&mut self) -> ThreadChange {
        loop {
            let change = tokio::time::timeout(NEVER, self.changes.recv())
                .await
                .expect("a change came")
                .expect("the stream is open");
            match change {
                ThreadChange::TurnStarted { turn_id } => self.started.push(turn_id),
                other => return other,
            }
        }
    }

    /// The next change, a saved document.
    async fn saved(&mut self) -> Artifact {
        match self.next().await {
            ThreadChange::ArtifactSaved { artifact } => artifact,
            other => panic!("expected a save, got {other:?}"),
        }
    }
}

/// A document's version as a watcher compares it: the answer that made it is linked to it when its turn ends,
/// which a watcher on PostgreSQL (reading the document when it hears of the save) may or may not see yet.
fn version_of(artifact: &Artifact) -> (Uuid, i64, &str, &str) {
    (artifact.id, artifact.version, artifact.title.as_str(), artifact.content.as_str())
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
async fn everyone_watching_sees_saves_restores_the_assistants_versions_silent_ones_and_deletions() {
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
            assert_eq!(version_of(&watcher.saved().await), version_of(&made));
        }
        let id = made.id;

        // A person's save.
        let body = serde_json::json!({"base_version": 1, "content": "# Booking Plan\n\nSlots are 45 minutes.\n"});
        let response = put(&server, id, body).await;
        assert_eq!(response.status(), 200);
        let saved: Artifact = response.json().await.unwrap();
        assert_eq!(first.saved().await, saved);
        assert_eq!((second.saved().await.version, saved.version), (2, 2));
        // (Told on every instance at once, the start may come after the answer's document; it came before this.)
        for watcher in [&first, &second] {
            assert_eq!(watcher.started.len(), 1, "the answer's start was told");
        }

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
        assert_eq!(version_of(&first.saved().await), version_of(&edited));
        second.saved().await;

        // A document made silently, from the Generate menu.
        let stories = serde_json::json!({"artifact_type": "user_stories", "title": "Booking Stories",
            "content": "# Booking Stories\n\nAs a customer I book a slot."});
        model.push(ScriptedModel::tool_use("save_artifact", stories));
        model.push(ScriptedModel::text(&[""]));
        let silent = created(&crate::common::send(&server, thread, "user stories", true).await)[0].clone();
        assert_eq!(version_of(&first.saved().await), version_of(&silent));
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
        assert_eq!(version_of(&first.saved().await), version_of(&again));
        assert!(theirs_watched.changes.try_recv().is_err(), "another conversation's watcher hears nothing");
    }
}

#[tokio::test]
async fn deleting_the_conversation_ends_its_watchers_streams() {
    for (store, _guard) in every_store("co_writing_live").await {
        let server = TestServer::with(store, ScriptedModel::new(Vec::new())).await;
        let (kept, gone) = (server.create_thread().await, server.create_thread().await);
        let mut watching_kept = Watching::open(&server, &server.client, kept).await;
        let mut watching_gone = Watching::open(&server, &server.client, gone).await;
        let response = server.client.delete(server.url(&format!("/api/threads/{gone}"))).send().await.unwrap();
        assert_eq!(response.status(), 204);
        let ended = tokio::time::timeout(NEVER, watching_gone.changes.recv()).await.expect("the stream ended");
        assert_eq!(ended, None);
        assert!(watching_kept.changes.try_recv().is_err(), "another conversation is still watched");
        // The one kept still hears its changes.
        let new = crate::common::new_artifact(kept, wire::ArtifactType::UserStories, "Kept", "# Kept\n\nOne.");
        let id = server.state.store.create_artifact(server.user.id, new).await.unwrap().id;
        let body = serde_json::json!({"base_version": 1, "content": "# Kept\n\nTwo."});
        assert_eq!(put(&server, id, body).await.status(), 200);
        assert_eq!(watching_kept.saved().await.version, 2);
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
    assert_eq!(version_of(&on_b.saved().await), version_of(&made), "the assistant's version on A reaches B");
    let body = serde_json::json!({"base_version": 1, "content": "# Booking Plan\n\nSlots are 45 minutes.\n"});
    let saved: Artifact = put(&a, made.id, body).await.json().await.unwrap();
    assert_eq!(on_b.saved().await, saved, "a person's save on A reaches B with its new version");
    let response = a.client.delete(a.url(&format!("/api/artifacts/{}", made.id))).send().await.unwrap();
    assert_eq!(response.status(), 204);
    assert_eq!(on_b.next().await, ThreadChange::ArtifactDeleted { artifact_id: made.id });
    assert_eq!(on_b.started.len(), 1, "the answer's start on A reached B");
    // The conversation deleted on A: B's watcher's stream ends.
    let response = a.client.delete(a.url(&format!("/api/threads/{thread}"))).send().await.unwrap();
    assert_eq!(response.status(), 204);
    let ended = tokio::time::timeout(NEVER, on_b.changes.recv()).await.expect("the stream ended");
    assert_eq!(ended, None);
}

/// The user message of `request` the model read last.
fn last_user_text(request: &llm::ChatRequest) -> String {
    request.messages.iter().rev().find(|m| m.role == llm::Role::User).map(|m| m.text()).unwrap_or_default()
}

#[tokio::test]
async fn a_quoted_passage_goes_with_the_message_to_the_model_and_a_bad_one_saves_nothing() {
    for (store, _guard) in every_store("co_writing_live").await {
        let model = ScriptedModel::new(vec![
            ScriptedModel::tool_use("save_artifact", plan_document()),
            ScriptedModel::text(&["Done."]),
            ScriptedModel::text(&["Thirty minutes is short for a first visit."]),
        ]);
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        let id = created(&server.chat(thread, "Write the requirements doc").await)[0].id;

        // Asked about a passage: the message keeps it, and the model reads it before the question.
        let quote = serde_json::json!({"artifact_id": id, "text": "Slots are 30 minutes."});
        let body = serde_json::json!({"content": "Is this long enough?", "quote": quote});
        let response = server.send_chat(thread, &body).await;
        assert_eq!(response.status(), 200);
        crate::common::read_frames(response).await;
        let detail = server.detail(thread).await;
        let question = detail.messages.iter().rev().find(|m| m.role == wire::Role::User).unwrap().clone();
        let expected = wire::Quote { artifact_id: id, text: "Slots are 30 minutes.".into() };
        assert_eq!(question.quote.as_ref(), Some(&expected));
        assert_eq!(detail.messages[0].quote, None, "a message without a quote has none");
        let seen = last_user_text(model.requests.lock().unwrap().last().unwrap());
        assert!(seen.contains(&format!("the document \"Booking Plan\" (ID: {id})")), "{seen}");
        assert!(seen.contains("> Slots are 30 minutes.\n\nIs this long enough?"), "{seen}");
        // What the model saw, as the person reads it: the message with its quote.
        let answer = detail.messages.last().unwrap().id;
        let record: wire::ContextRecord = server.get_json(&format!("/api/messages/{answer}/context")).await;
        assert!(record.included.contains(&question.id));
        let message: wire::Message = server.state.store.get_message(server.user.id, question.id).await.unwrap();
        assert_eq!(message.quote, Some(expected.clone()), "read back by id too");

        // Edit and resend keeps a quote the request carries.
        let edited = serde_json::json!({"content": "Is this enough for a first visit?", "edit_of": question.id,
            "quote": {"artifact_id": id, "text": "Reminders go out a day before."}});
        let response = server.send_chat(thread, &edited).await;
        assert_eq!(response.status(), 200);
        crate::common::read_frames(response).await;
        let detail = server.detail(thread).await;
        let resent = detail.messages.iter().rev().find(|m| m.role == wire::Role::User).unwrap();
        assert_eq!(resent.content, "Is this enough for a first visit?");
        assert_eq!(resent.quote.as_ref().map(|q| q.text.as_str()), Some("Reminders go out a day before."));
        let count = detail.thread.message_count;
        let calls = model.requests.lock().unwrap().len();

        // Bad quotes: 422 naming the field, nothing saved, no model called.
        let too_long = "x".repeat(wire::MAX_QUOTE_CHARS + 1);
        for text in ["   \n ", "a\u{0}b", too_long.as_str()] {
            let body = serde_json::json!({"content": "Why?", "quote": {"artifact_id": id, "text": text}});
            let response = server.send_chat(thread, &body).await;
            assert_eq!(response.status(), 422);
            let error: wire::ErrorBody = response.json().await.unwrap();
            assert_eq!(error.error.field.as_deref(), Some("quote"));
        }
        let silent = serde_json::json!({"content": "Generate user stories", "artifact_generation": true,
            "quote": {"artifact_id": id, "text": "Slots"}});
        assert_eq!(server.send_chat(thread, &silent).await.status(), 422);
        let shapeless = serde_json::json!({"content": "Why?", "quote": {"artifact_id": id}});
        assert!(server.send_chat(thread, &shapeless).await.status().is_client_error());

        // A document of another conversation, another person's, or none: refused as not found, nothing saved.
        let (stranger, auth) = server.second_user("quoting-stranger@example.com").await;
        let theirs = server.create_thread_as(&stranger).await;
        let new = crate::common::new_artifact(theirs, wire::ArtifactType::UserStories, "Secret", "# Secret");
        let secret = server.state.store.create_artifact(auth.user.id, new).await.unwrap().id;
        let other_thread = server.create_thread().await;
        let mine = crate::common::new_artifact(other_thread, wire::ArtifactType::UserStories, "Other", "# Other");
        let elsewhere = server.state.store.create_artifact(server.user.id, mine).await.unwrap().id;
        for artifact in [secret, elsewhere, Uuid::now_v7()] {
            let body = serde_json::json!({"content": "Why?", "quote": {"artifact_id": artifact, "text": "Other"}});
            assert_eq!(server.send_chat(thread, &body).await.status(), 404);
        }
        let detail = server.detail(thread).await;
        assert_eq!(detail.thread.message_count, count, "nothing saved");
        assert_eq!(model.requests.lock().unwrap().len(), calls, "no model called");
    }
}

#[tokio::test]
async fn the_statement_that_saves_a_message_refuses_a_quote_of_another_conversations_document() {
    for (store, _guard) in every_store("co_writing_live").await {
        let user = crate::common::new_user(&store).await;
        let other = crate::common::new_user(&store).await;
        let thread = store.create_thread(user, "Mine", &[]).await.unwrap().id;
        let sibling = store.create_thread(user, "Also mine", &[]).await.unwrap().id;
        let theirs = store.create_thread(other, "Theirs", &[]).await.unwrap().id;
        let doc = |t: Uuid| crate::common::new_artifact(t, wire::ArtifactType::UserStories, "Doc", "# Doc");
        let own = store.create_artifact(user, doc(thread)).await.unwrap().id;
        let elsewhere = store.create_artifact(user, doc(sibling)).await.unwrap().id;
        let foreign = store.create_artifact(other, doc(theirs)).await.unwrap().id;
        let quoting = |artifact: Uuid| store::NewMessage {
            quote: Some(wire::Quote { artifact_id: artifact, text: "# Doc".into() }),
            ..crate::common::new_message(thread, wire::Role::User, "About this")
        };
        let start = |artifact: Uuid| store::TurnStart {
            user,
            sender: user,
            thread,
            turn: Uuid::now_v7(),
            stale_after_ms: 60_000,
            request: Some(quoting(artifact)),
            message_id: Uuid::now_v7(),
        };
        for artifact in [elsewhere, foreign, Uuid::now_v7()] {
            let refused = store.start_turn(start(artifact), &store::TurnLimits::default()).await;
            assert!(matches!(refused, Err(store::StoreError::NotFound)), "{refused:?}");
            let refused = store.append_message(user, quoting(artifact)).await;
            assert!(matches!(refused, Err(store::StoreError::NotFound)), "{refused:?}");
        }
        assert!(store.list_messages(user, thread).await.unwrap().is_empty(), "nothing saved");
        assert!(store.latest_turn(user, thread).await.unwrap().is_none(), "no turn started");

        let saved = store.append_message(user, quoting(own)).await.unwrap();
        assert_eq!(saved.quote.as_ref().map(|q| q.artifact_id), Some(own));
        let listed = store.list_messages(user, thread).await.unwrap();
        assert_eq!(listed[0].quote, saved.quote, "read back as saved");
    }
}

/// The text of the tool result in a request the model received, and whether it was an error.
fn tool_result(request: &llm::ChatRequest) -> (String, bool) {
    request
        .messages
        .last()
        .and_then(|m| {
            m.parts.iter().find_map(|p| match p {
                llm::Part::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
                _ => None,
            })
        })
        .expect("a tool result")
}

#[tokio::test]
async fn the_model_fixes_an_edit_that_was_refused_and_one_version_is_saved() {
    for (store, _guard) in every_store("co_writing_live").await {
        let model = ScriptedModel::new(Vec::new());
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        let text = "# Booking Plan\n\nSlots are 30 minutes.\n\nBreaks are 30 minutes.\n";
        let new = crate::common::new_artifact(thread, wire::ArtifactType::RequirementsDoc, "Booking Plan", text);
        let id = server.state.store.create_artifact(server.user.id, new).await.unwrap().id;
        let edit = |edits: serde_json::Value| serde_json::json!({"artifact_id": id.to_string(), "edits": edits});
        // A find that occurs twice, then one of two edits whose find is missing, then a unique find.
        model.push(ScriptedModel::tool_use(
            "edit_artifact",
            edit(serde_json::json!([{"find": "30 minutes", "replace": "45 minutes"}])),
        ));
        model.push(ScriptedModel::tool_use(
            "edit_artifact",
            edit(serde_json::json!([
                {"find": "Slots are 30 minutes.", "replace": "Slots are 45 minutes."},
                {"find": "Lunch is 60 minutes.", "replace": "Lunch is 45 minutes."}
            ])),
        ));
        model.push(ScriptedModel::tool_use(
            "edit_artifact",
            edit(serde_json::json!([{"find": "Slots are 30 minutes.", "replace": "Slots are 45 minutes."}])),
        ));
        model.push(ScriptedModel::text(&["Slots are now 45 minutes."]));
        let frames = server.chat(thread, "Slots should be 45 minutes, not 30").await;

        let requests = model.requests.lock().unwrap().clone();
        assert_eq!(requests.len(), 4);
        let (twice, is_error) = tool_result(&requests[1]);
        assert!(
            is_error && twice.contains("Nothing was changed. Edit 1:") && twice.contains("more than once"),
            "{twice}"
        );
        let (missing, is_error) = tool_result(&requests[2]);
        assert!(is_error && missing.contains("Edit 2:") && missing.contains("does not occur"), "{missing}");
        let (landed, is_error) = tool_result(&requests[3]);
        assert!(!is_error && landed.contains("now version 2"), "{landed}");

        // One new version for the request, with the change the last call made and nothing of the refused ones.
        let made = created(&frames);
        assert_eq!(made.len(), 1);
        let versions: wire::ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        assert_eq!(versions.versions.len(), 2);
        let newest = &versions.versions[1];
        assert_eq!(newest.content, "# Booking Plan\n\nSlots are 45 minutes.\n\nBreaks are 30 minutes.\n");
        assert_eq!(newest.author, wire::VersionAuthor::Assistant { model: Some("scripted-1".into()) });
        assert_eq!(made[0].content, newest.content);
    }
}

#[tokio::test]
async fn the_built_in_assistant_edits_one_line_and_keeps_a_hand_edit_of_another() {
    for (store, _guard) in every_store("co_writing_live").await {
        let server = TestServer::builtin(store).await;
        let thread = server.create_thread().await;
        let text = "# Booking Plan\n\nSlots are 30 minutes.\n\nReminders go out a day before.\n";
        let new = crate::common::new_artifact(thread, wire::ArtifactType::RequirementsDoc, "Booking Plan", text);
        let id = server.state.store.create_artifact(server.user.id, new).await.unwrap().id;
        // The person changes the reminders' line by hand.
        let body = serde_json::json!({"base_version": 1,
            "content": "# Booking Plan\n\nSlots are 30 minutes.\n\nReminders go out two days before.\n"});
        assert_eq!(put(&server, id, body).await.status(), 200);

        // The assistant changes the slots' line, in the version with the person's edit.
        let frames = server.chat(thread, "Slots should be 45 minutes, not 30").await;
        let answer = crate::common::text_of(&frames);
        assert!(answer.contains("Changed '30 minutes' to '45 minutes' in Booking Plan."), "{answer}");
        assert!(!answer.contains("requirement"), "a change, not a new requirement: {answer}");
        let versions: wire::ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        assert_eq!(versions.versions.len(), 3, "one new version");
        let newest = &versions.versions[2];
        assert_eq!(newest.content, "# Booking Plan\n\nSlots are 45 minutes.\n\nReminders go out two days before.\n");
        assert_eq!(newest.author, wire::VersionAuthor::Assistant { model: Some(llm::builtin::DEFAULT_MODEL.into()) });
        assert_eq!(created(&frames).len(), 1);

        // A value no document holds: answered as before, nothing edited.
        let frames = server.chat(thread, "Breaks should be 15 minutes, not 10.").await;
        assert!(created(&frames).is_empty());
        assert!(!crate::common::text_of(&frames).contains("Changed"));
        let versions: wire::ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        assert_eq!(versions.versions.len(), 3);
    }
}

#[tokio::test]
async fn watching_counts_with_a_persons_open_streams_and_ends_with_the_session() {
    let server = TestServer::start_with(|config| config.user_open_streams = 1).await;
    let thread = server.create_thread().await;
    let mut watching = Watching::open(&server, &server.client, thread).await;
    let response = changes(&server, &server.client, thread).await;
    assert_eq!(response.status(), 429, "one stream open already");
    // Signing out ends the stream at once, and gives its place back.
    let logout = server.client.post(server.url("/api/auth/logout")).send().await.unwrap();
    assert!(logout.status().is_success());
    let ended = tokio::time::timeout(NEVER, watching.changes.recv()).await.expect("the stream ended");
    assert_eq!(ended, None);
    let (client, _) = crate::common::sign_up_or_in(&server.base, "owner@example.com").await;
    assert_eq!(changes(&server, &client, thread).await.status(), 200);
}
