//! A person's own versions of documents: `PUT /api/artifacts/{id}` saves one made from a base version, refuses one
//! made from a version that is no longer the current one (409 `version_conflict`, nothing changed), and every
//! version says who wrote it (the person, or the assistant with its model). On SQLite and, with
//! `scripts/with-postgres`, on PostgreSQL.

use crate::common::{created, every_store, new_artifact, new_user, ScriptedModel, TestServer};
use uuid::Uuid;
use wire::{Artifact, ArtifactType, ArtifactVersionList, ErrorBody, VersionAuthor, VersionConflict};

async fn put(server: &TestServer, id: Uuid, body: serde_json::Value) -> reqwest::Response {
    server.client.put(server.url(&format!("/api/artifacts/{id}"))).json(&body).send().await.unwrap()
}

#[tokio::test]
async fn a_person_saves_a_version_and_a_save_from_an_old_version_is_refused() {
    for (store, _guard) in every_store("co_writing").await {
        let plan = serde_json::json!({"artifact_type": "requirements_doc", "title": "Booking Plan",
            "content": "# Booking Plan\n\nSlots are 30 minutes.\n\nReminders go out a day before.\n"});
        let model =
            ScriptedModel::new(vec![ScriptedModel::tool_use("save_artifact", plan), ScriptedModel::text(&["Done."])]);
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        let made = created(&server.chat(thread, "Write the requirements doc").await);
        let id = made[0].id;

        // The person's edit, made from version 1, becomes version 2; the title is kept.
        let edited = "# Booking Plan\n\nSlots are 45 minutes.\n\nReminders go out a day before.\n";
        let response = put(&server, id, serde_json::json!({"content": edited, "base_version": 1})).await;
        assert_eq!(response.status(), 200);
        let saved: Artifact = response.json().await.unwrap();
        assert_eq!((saved.version, saved.title.as_str(), saved.content.as_str()), (2, "Booking Plan", edited));

        // A second tab still on version 1 is refused with the current version, and nothing changes.
        let response =
            put(&server, id, serde_json::json!({"content": "# Mine\n", "title": "Mine", "base_version": 1})).await;
        assert_eq!(response.status(), 409);
        let conflict: VersionConflict = response.json().await.unwrap();
        assert_eq!(conflict.error.code, "version_conflict");
        assert_eq!((conflict.current.version, conflict.current.content.as_str()), (2, edited));
        let shown: Artifact = server.get_json(&format!("/api/artifacts/{id}")).await;
        assert_eq!(shown, saved, "a refused save changes nothing");

        // Made from the current version, the same save lands, with its new title (a version may be written 2.0).
        let response =
            put(&server, id, serde_json::json!({"content": "# Mine\n", "title": " Mine ", "base_version": 2.0})).await;
        assert_eq!(response.status(), 200);
        let mine: Artifact = response.json().await.unwrap();
        assert_eq!((mine.version, mine.title.as_str()), (3, "Mine"));

        // Every version says who wrote it: the assistant with its model, then the person by hand.
        let versions: ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        let authors: Vec<&VersionAuthor> = versions.versions.iter().map(|v| &v.author).collect();
        let person = VersionAuthor::Person { user_id: server.user.id };
        assert_eq!(authors[0], &VersionAuthor::Assistant { model: Some("scripted-1".to_string()) });
        assert_eq!(authors[1..], [&person, &person]);
        assert_eq!(versions.versions[1].request_message_id, None, "edited by hand: no request");
        assert!(versions.versions[0].answer_message_id.is_some(), "the assistant's version names its answer");
        assert_eq!(versions.versions[1].answer_message_id, None, "edited by hand: no answer");

        // A restore is the person's too.
        let response =
            server.client.post(server.url(&format!("/api/artifacts/{id}/versions/1/restore"))).send().await.unwrap();
        assert_eq!(response.status(), 201);
        let versions: ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        assert_eq!(versions.versions[3].author, person);
        assert_eq!(versions.versions[3].content, versions.versions[0].content);
    }
}

#[tokio::test]
async fn an_assistant_revision_names_its_model_and_a_bad_save_changes_nothing() {
    for (store, _guard) in every_store("co_writing").await {
        let doc = |content: &str| serde_json::json!({"artifact_type": "user_stories", "title": "Stories", "content": content});
        let mut scripts =
            vec![ScriptedModel::tool_use("save_artifact", doc("# Stories\n\nOne.")), ScriptedModel::text(&["Done."])];
        scripts.extend([
            ScriptedModel::tool_use("save_artifact", doc("# Stories\n\nTwo.")),
            ScriptedModel::text(&["Done."]),
        ]);
        let model = ScriptedModel::new(scripts);
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        let id = created(&server.chat(thread, "Write user stories").await)[0].id;
        created(&server.chat(thread, "Update the user stories").await);
        let versions: ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        let assistant = VersionAuthor::Assistant { model: Some("scripted-1".to_string()) };
        assert_eq!(versions.versions.iter().map(|v| &v.author).collect::<Vec<_>>(), [&assistant, &assistant]);
        assert!(versions.versions[1].request_message_id.is_some(), "the assistant's version names its request");
        // And the answer that wrote it.
        let detail: wire::ThreadDetail = server.get_json(&format!("/api/threads/{thread}")).await;
        let answers: Vec<Option<Uuid>> =
            detail.messages.iter().filter(|m| m.role == wire::Role::Assistant).map(|m| Some(m.id)).collect();
        let written_by: Vec<Option<Uuid>> = versions.versions.iter().map(|v| v.answer_message_id).collect();
        assert_eq!(written_by, answers);

        let too_long = "x".repeat(wire::MAX_ARTIFACT_CHARS + 1);
        for (body, field) in [
            (serde_json::json!({"content": "   \n", "base_version": 2}), "content"),
            (serde_json::json!({"content": "a\u{0}b", "base_version": 2}), "content"),
            (serde_json::json!({"content": too_long, "base_version": 2}), "content"),
            (serde_json::json!({"content": "# Fine", "title": "  ", "base_version": 2}), "title"),
            (serde_json::json!({"content": "# Fine", "base_version": 0}), "base_version"),
        ] {
            let response = put(&server, id, body).await;
            assert_eq!(response.status(), 422);
            let error: ErrorBody = response.json().await.unwrap();
            assert_eq!(error.error.field.as_deref(), Some(field));
        }
        for body in [
            serde_json::json!({"content": "# Fine"}),
            serde_json::json!({"content": "# Fine", "base_version": 2, "extra": 1}),
        ] {
            let status = put(&server, id, body).await.status();
            assert!(status == 400 || status == 422, "{status}");
        }
        let current: Artifact = server.get_json(&format!("/api/artifacts/{id}")).await;
        assert_eq!((current.version, current.content.as_str()), (2, "# Stories\n\nTwo."), "nothing changed");

        // Another person's document, or none, is not found; theirs stays as it was.
        let other = new_user(&server.state.store).await;
        let theirs = server.state.store.create_thread(other, "Theirs", &[]).await.unwrap().id;
        let new = new_artifact(theirs, ArtifactType::UserStories, "Secret", "# Secret");
        let secret = server.state.store.create_artifact(other, new).await.unwrap().id;
        for target in [secret, Uuid::now_v7()] {
            let response = put(&server, target, serde_json::json!({"content": "# Mine", "base_version": 1})).await;
            assert_eq!(response.status(), 404);
        }
        assert_eq!(server.state.store.get_artifact(other, secret).await.unwrap().content, "# Secret");
    }
}

/// The text of the tool result in a request the model received, and whether it was an error.
fn tool_result(request: &llm::ChatRequest) -> Option<(String, bool)> {
    request.messages.last()?.parts.iter().find_map(|p| match p {
        llm::Part::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
        _ => None,
    })
}

#[tokio::test]
async fn the_assistant_edits_in_place_keeps_a_hand_edit_and_retries_an_edit_that_missed() {
    for (store, _guard) in every_store("co_writing").await {
        let plan = serde_json::json!({"artifact_type": "requirements_doc", "title": "Booking Plan",
            "content": "# Booking Plan\n\nSlots are 30 minutes.\n\nReminders go out a day before.\n\nNo refunds.\n"});
        let model =
            ScriptedModel::new(vec![ScriptedModel::tool_use("save_artifact", plan), ScriptedModel::text(&["Done."])]);
        let server = TestServer::with(store, model).await;
        let thread = server.create_thread().await;
        let id = created(&server.chat(thread, "Write the requirements doc").await)[0].id;

        // The person changes one line by hand.
        let body = serde_json::json!({"base_version": 1,
            "content": "# Booking Plan\n\nSlots are 30 minutes.\n\nReminders go out two days before.\n\nNo refunds.\n"});
        assert_eq!(put(&server, id, body).await.status(), 200);

        // The assistant's edit of another line first misses, then lands; the hand edit stays.
        let edit = |find: &str, replace: &str| serde_json::json!({"artifact_id": id.to_string(), "edits": [{"find": find, "replace": replace}]});
        let model = ScriptedModel::new(vec![
            ScriptedModel::tool_use("edit_artifact", edit("Slots are 20 minutes.", "Slots are 45 minutes.")),
            ScriptedModel::tool_use("edit_artifact", edit("Slots are 30 minutes.", "Slots are 45 minutes.")),
            ScriptedModel::text(&["Slots are now 45 minutes."]),
        ]);
        let server = TestServer::with(server.state.store.clone(), model.clone()).await;
        let frames = server.chat(thread, "Slots should be 45 minutes, not 30").await;
        let versions = created(&frames);
        assert_eq!(versions.len(), 1, "one new version for the request");
        assert_eq!(versions[0].version, 3);
        assert_eq!(
            versions[0].content,
            "# Booking Plan\n\nSlots are 45 minutes.\n\nReminders go out two days before.\n\nNo refunds.\n"
        );
        let requests = model.requests.lock().unwrap().clone();
        // The model is given the document as it is now, with the person's edit.
        let system = &requests[0].system;
        assert!(system.contains(&format!("ID: {id}, version 2")), "{system}");
        assert!(system.contains("Reminders go out two days before.") && !system.contains("a day before"), "{system}");
        let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
        assert!(offered.contains(&"edit_artifact") && offered.contains(&"read_artifact"), "{offered:?}");
        let (missed, is_error) = tool_result(&requests[1]).expect("the first edit's result");
        assert!(is_error && missed.contains("Edit 1:") && missed.contains("does not occur"), "{missed}");
        let (landed, is_error) = tool_result(&requests[2]).expect("the second edit's result");
        assert!(!is_error && landed.contains("now version 3"), "{landed}");

        // The version names the model and the request, which no later turn sees as open.
        let list: ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        let request =
            server.detail(thread).await.messages.iter().rev().find(|m| m.role == wire::Role::User).unwrap().id;
        assert_eq!(list.versions[2].author, VersionAuthor::Assistant { model: Some("scripted-1".into()) });
        assert_eq!(list.versions[2].request_message_id, Some(request));
        let fulfilled = server.state.store.fulfilled_requests(server.user.id, thread).await.unwrap();
        assert!(fulfilled.iter().any(|f| f.request == request));

        // Reading gives the current text; an edit whose text occurs twice, or a second edit in the turn, changes
        // nothing.
        let model = ScriptedModel::new(vec![
            ScriptedModel::tool_use("read_artifact", serde_json::json!({"artifact_id": id.to_string()})),
            ScriptedModel::tool_use("edit_artifact", edit("re", "RE")),
            ScriptedModel::text(&["I could not make that change."]),
        ]);
        let server = TestServer::with(server.state.store.clone(), model.clone()).await;
        assert!(created(&server.chat(thread, "Capitalise every re").await).is_empty());
        let requests = model.requests.lock().unwrap().clone();
        let (read, is_error) = tool_result(&requests[1]).unwrap();
        assert!(!is_error && read.contains("version 3") && read.contains("two days before"), "{read}");
        let (twice, is_error) = tool_result(&requests[2]).unwrap();
        assert!(is_error && twice.contains("more than once"), "{twice}");
        let current: Artifact = server.get_json(&format!("/api/artifacts/{id}")).await;
        assert_eq!(current.version, 3);
    }
}

#[tokio::test]
async fn however_many_and_large_the_documents_a_turn_reads_a_bounded_part() {
    for (store, _guard) in every_store("co_writing").await {
        let model = ScriptedModel::new(vec![ScriptedModel::text(&["Noted."])]);
        let server = TestServer::with(store, model.clone()).await;
        let thread = server.create_thread().await;
        // An import can bring a thousand documents of 100,000 characters: a turn reads the newest 50, and the text
        // of the short ones only.
        let huge = format!("# Huge\n\n{}", "word ".repeat(wire::MAX_ARTIFACT_CHARS / 5 - 10));
        for n in 0..55 {
            let content = if n == 54 { huge.clone() } else { format!("# Doc {n}\n\nShort text {n}.") };
            let new = new_artifact(thread, ArtifactType::UserStories, &format!("Doc {n}"), &content);
            server.state.store.create_artifact(server.user.id, new).await.unwrap();
        }
        server.chat(thread, "What do we have so far?").await;
        let system = model.requests.lock().unwrap()[0].system.clone();
        assert_eq!(system.matches("(User Stories, ID: ").count(), 50, "the newest 50 are listed");
        assert!(system.contains("\"Doc 54\"") && !system.contains("\"Doc 4\""), "newest first");
        assert!(!system.contains("word word word") && system.contains("read_artifact before"), "too long to show");
        assert!(system.contains("Short text 53.") && system.len() < 40_000, "{}", system.len());
    }
}
