//! What the versions of a document tell and carry: the words of the request behind each one, the changed words
//! of a diff, a draft compared with the current version before it is saved, and every version with its author
//! through an export and an import. On SQLite and, with `scripts/with-postgres`, on PostgreSQL.

use crate::common::backends::{with_database, Backend, Db};
use crate::common::{created, every_store, get_json, new_artifact, new_user, ScriptedModel, TestServer};
use serde_json::json;
use uuid::Uuid;
use wire::{
    Artifact, ArtifactList, ArtifactType, ArtifactVersion, ArtifactVersionList, DiffLine, DiffOp, DraftDiff, ErrorBody,
    ImportResult, ThreadExport, VersionAuthor, VersionDiff, REQUEST_EXCERPT_CHARS,
};

const PLAN: &str = "# Booking Plan\n\nSlots are 30 minutes.\n\nReminders go out a day before.\n";

fn save(content: &str) -> Vec<crate::common::Step> {
    ScriptedModel::tool_use(
        "save_artifact",
        json!({"artifact_type": "requirements_doc", "title": "Booking Plan", "content": content}),
    )
}

async fn put(server: &TestServer, id: Uuid, content: &str, base_version: i64) -> reqwest::Response {
    let body = json!({"content": content, "base_version": base_version});
    server.client.put(server.url(&format!("/api/artifacts/{id}"))).json(&body).send().await.unwrap()
}

async fn compare(server: &TestServer, id: Uuid, body: &serde_json::Value) -> reqwest::Response {
    server.client.post(server.url(&format!("/api/artifacts/{id}/compare"))).json(body).send().await.unwrap()
}

/// The words marked changed in the lines of `op`.
fn changed_words(lines: &[DiffLine], op: DiffOp) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.op == op)
        .flat_map(|l| l.parts.iter().filter(|p| p.changed).map(|p| p.text.clone()))
        .collect()
}

#[tokio::test]
async fn each_version_carries_the_words_of_its_request_and_a_hand_edit_none() {
    for (store, _guard) in every_store("document_versions").await {
        let revised = PLAN.replace("a day", "two days");
        let model = ScriptedModel::new(vec![
            save(PLAN),
            ScriptedModel::text(&["Done."]),
            save(&revised),
            ScriptedModel::text(&["Done."]),
        ]);
        let server = TestServer::with(store, model).await;
        let thread = server.create_thread().await;
        let id = created(&server.chat(thread, "Write the requirements doc").await)[0].id;
        assert_eq!(put(&server, id, &PLAN.replace("30", "45"), 1).await.status(), 200);
        // A request longer than an excerpt, in letters of two bytes: cut on a character, and marked.
        let long = format!("Make reminders go out two days before {}", "é".repeat(400));
        assert_eq!(created(&server.chat(thread, &long).await).len(), 1);

        let list: ArtifactVersionList = server.get_json(&format!("/api/artifacts/{id}/versions")).await;
        let requests: Vec<Option<&str>> = list.versions.iter().map(|v| v.request.as_deref()).collect();
        let cut: String = long.chars().take(REQUEST_EXCERPT_CHARS).chain(['…']).collect();
        assert_eq!(requests, [Some("Write the requirements doc"), None, Some(cut.as_str())]);
        assert_eq!(list.versions[1].author, VersionAuthor::Person { user_id: server.user.id });
        // One version alone says the same.
        let one: ArtifactVersion = server.get_json(&format!("/api/artifacts/{id}/versions/3")).await;
        assert_eq!(one.request.as_deref(), Some(cut.as_str()));
        let edited: ArtifactVersion = server.get_json(&format!("/api/artifacts/{id}/versions/2")).await;
        assert_eq!(edited.request, None);
    }
}

#[tokio::test]
async fn a_diff_marks_the_changed_words_and_a_draft_compares_with_the_current_version() {
    for (store, _guard) in every_store("document_versions").await {
        let model = ScriptedModel::new(vec![save(PLAN), ScriptedModel::text(&["Done."])]);
        let server = TestServer::with(store, model).await;
        let thread = server.create_thread().await;
        let id = created(&server.chat(thread, "Write the requirements doc").await)[0].id;
        assert_eq!(put(&server, id, &PLAN.replace("30", "45"), 1).await.status(), 200);

        let diff: VersionDiff = server.get_json(&format!("/api/artifacts/{id}/diff?from=1&to=2")).await;
        assert_eq!(changed_words(&diff.lines, DiffOp::Delete), ["30"]);
        assert_eq!(changed_words(&diff.lines, DiffOp::Insert), ["45"]);
        for line in &diff.lines {
            if line.op == DiffOp::Equal {
                assert!(line.parts.is_empty());
            } else {
                assert_eq!(line.parts.iter().map(|p| p.text.as_str()).collect::<String>(), line.text);
            }
        }

        // A draft made from version 1 after version 2 was saved: their version (the current one) and the draft.
        let draft = PLAN.replace("a day", "an hour");
        let response = compare(&server, id, &json!({"content": draft})).await;
        assert_eq!(response.status(), 200);
        let compared: DraftDiff = response.json().await.unwrap();
        assert_eq!(compared.version, 2);
        let words = |op| changed_words(&compared.lines, op).concat().replace(' ', "");
        assert_eq!(words(DiffOp::Delete), "45aday");
        assert_eq!(words(DiffOp::Insert), "30anhour");
        let current: Artifact = server.get_json(&format!("/api/artifacts/{id}")).await;
        assert_eq!(current.version, 2, "comparing saves nothing");

        // A draft is checked as a save is.
        let too_long = "x".repeat(wire::MAX_ARTIFACT_CHARS + 1);
        for content in ["   \n", "a\u{0}b", too_long.as_str()] {
            let response = compare(&server, id, &json!({"content": content})).await;
            assert_eq!(response.status(), 422);
            let error: ErrorBody = response.json().await.unwrap();
            assert_eq!(error.error.field.as_deref(), Some("content"));
        }
        for body in [json!({}), json!({"content": 5}), json!({"content": "# A", "base_version": 1})] {
            let status = compare(&server, id, &body).await.status();
            assert!(status == 400 || status == 422, "{body}: {status}");
        }

        // Another person's document, or none, is not found, and is not shown.
        let other = new_user(&server.state.store).await;
        let theirs = server.state.store.create_thread(other, "Theirs", &[]).await.unwrap().id;
        let new = new_artifact(theirs, ArtifactType::UserStories, "Secret", "# Secret plan");
        let secret = server.state.store.create_artifact(other, new).await.unwrap().id;
        for target in [secret, Uuid::now_v7()] {
            let response = compare(&server, target, &json!({"content": "# Mine"})).await;
            assert_eq!(response.status(), 404);
            assert!(!response.text().await.unwrap().contains("Secret"));
        }
    }
}

#[tokio::test]
async fn an_export_carries_every_version_with_its_author_and_an_import_rebuilds_them() {
    for (store, _guard) in every_store("document_versions").await {
        let model = ScriptedModel::new(vec![save(PLAN), ScriptedModel::text(&["Done."])]);
        let server = TestServer::with(store, model).await;
        let thread = server.create_thread().await;
        let id = created(&server.chat(thread, "Write the requirements doc").await)[0].id;
        let edited = PLAN.replace("30", "45");
        assert_eq!(put(&server, id, &edited, 1).await.status(), 200);

        let export: ThreadExport = server.get_json(&format!("/api/threads/{thread}/export")).await;
        let entries: Vec<(Uuid, i64, &str, &VersionAuthor)> =
            export.artifacts.iter().map(|a| (a.id, a.version, a.content.as_str(), &a.author)).collect();
        let assistant = VersionAuthor::Assistant { model: Some("scripted-1".into()) };
        let owner = VersionAuthor::Person { user_id: server.user.id };
        assert_eq!(entries, [(id, 1, PLAN, &assistant), (id, 2, edited.as_str(), &owner)]);
        // The account export holds the same versions.
        let all: wire::AccountExport = server.get_json("/api/export").await;
        assert_eq!(all.threads[0].artifacts, export.artifacts);
        // The Markdown export shows the document once, at its current version, with its author.
        let markdown = server.get(&format!("/api/threads/{thread}/export?format=markdown")).await.text().await.unwrap();
        assert!(markdown.contains("Edited by you") && markdown.contains("Slots are 45 minutes."), "{markdown}");
        assert!(!markdown.contains("Slots are 30 minutes."), "{markdown}");

        // Another person imports it: both versions, the assistant's as it was, the person's now theirs.
        let (client, session) = server.second_user("importer@example.com").await;
        let response = client.post(server.url("/api/threads/import")).json(&export).send().await.unwrap();
        assert_eq!(response.status(), 201);
        let imported: ImportResult = response.json().await.unwrap();
        let copy = imported.threads[0].id;
        let docs: ArtifactList =
            crate::common::get_json(&client, &server.url(&format!("/api/threads/{copy}/artifacts"))).await;
        assert_eq!(docs.artifacts.len(), 1);
        let doc = &docs.artifacts[0];
        assert_eq!((doc.version, doc.content.as_str()), (2, edited.as_str()));
        let list: ArtifactVersionList =
            crate::common::get_json(&client, &server.url(&format!("/api/artifacts/{}/versions", doc.id))).await;
        let versions: Vec<(i64, &str, &VersionAuthor)> =
            list.versions.iter().map(|v| (v.version, v.content.as_str(), &v.author)).collect();
        let importer = VersionAuthor::Person { user_id: session.user.id };
        assert_eq!(versions, [(1, PLAN, &assistant), (2, edited.as_str(), &importer)]);
        assert_eq!(list.versions[0].request.as_deref(), Some("Write the requirements doc"));
        // The copy edits on from its current version.
        let body = json!({"content": "# Mine\n", "base_version": 2});
        let response = client.put(server.url(&format!("/api/artifacts/{}", doc.id))).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
}

#[tokio::test]
async fn an_import_refuses_a_document_with_two_versions_of_one_number_and_counts_versions_against_its_limit() {
    for (store, _guard) in every_store("document_versions").await {
        let server = TestServer::builtin(store).await;
        let threads = || async { server.get_json::<wire::ThreadList>("/api/threads").await.threads.len() };
        let threads_before = threads().await;
        let message = json!({"id": Uuid::now_v7(), "seq": 1, "role": "user", "content": "Hi", "status": "complete",
            "created_at": "2026-01-01T00:00:00Z"});
        let document = Uuid::now_v7();
        let entry = |version: i64| {
            json!({"id": document, "artifact_type": "custom", "title": "Notes", "content": format!("# v{version}"),
                "version": version, "created_at": "2026-01-01T00:00:00Z"})
        };
        let body = |entries: Vec<serde_json::Value>| {
            json!({"format": "quire.thread", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
                "thread": {"id": Uuid::now_v7(), "title": "Notes", "created_at": "2026-01-01T00:00:00Z",
                    "updated_at": "2026-01-01T00:00:00Z"},
                "messages": [message], "artifacts": entries})
        };
        let post = |body: serde_json::Value| {
            let request = server.client.post(server.url("/api/threads/import")).json(&body);
            async move { request.send().await.unwrap() }
        };
        let twice = post(body(vec![entry(1), entry(2), entry(2)])).await;
        assert_eq!(twice.status(), 422);
        let error: ErrorBody = twice.json().await.unwrap();
        assert!(error.error.message.contains("two versions numbered 2"), "{}", error.error.message);
        let many = post(body((1..=wire::MAX_IMPORT_DOCUMENTS as i64 + 1).map(entry).collect())).await;
        assert_eq!(many.status(), 422);
        assert_eq!(threads().await, threads_before, "a refused import creates nothing");

        // Entries in any order make one document with its versions in order.
        let response = post(body(vec![entry(2), entry(1)])).await;
        assert_eq!(response.status(), 201);
        let copy = response.json::<ImportResult>().await.unwrap().threads[0].id;
        let docs: ArtifactList = server.get_json(&format!("/api/threads/{copy}/artifacts")).await;
        assert_eq!((docs.artifacts.len(), docs.artifacts[0].content.as_str()), (1, "# v2"));
        let list: ArtifactVersionList =
            server.get_json(&format!("/api/artifacts/{}/versions", docs.artifacts[0].id)).await;
        let contents: Vec<&str> = list.versions.iter().map(|v| v.content.as_str()).collect();
        assert_eq!(contents, ["# v1", "# v2"]);
    }
}

/// Waits (a bounded while) until `check` holds; indexing runs after a save, so a check may need a few tries.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..400 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("never: {what}");
}

/// The documents among `client`'s search hits for `q`.
async fn documents_found(server: &TestServer, client: &reqwest::Client, q: &str) -> Vec<Uuid> {
    let response = client.get(server.url("/api/search")).query(&[("q", q)]).send().await.unwrap();
    assert_eq!(response.status(), 200, "{q:?}");
    let found: wire::SearchResults = response.json().await.unwrap();
    found.results.iter().filter_map(|r| r.artifact_id).collect()
}

#[tokio::test]
async fn search_finds_a_document_by_the_words_of_each_save_and_no_longer_by_words_it_lost() {
    for (store, _guard) in every_store("document_versions_search").await {
        let model = ScriptedModel::new(vec![save(PLAN), ScriptedModel::text(&["Done."])]);
        let server = TestServer::with(store, model).await;
        let thread = server.create_thread().await;
        let id = created(&server.chat(thread, "Write the requirements doc").await)[0].id;
        let (at, me) = (&server, &server.client);
        let found = move |q: &'static str| async move { documents_found(at, me, q).await == [id] };
        let not_found = move |q: &'static str| async move { documents_found(at, me, q).await.is_empty() };
        eventually("the new document is found", || found("reminders")).await;

        // An edit by hand: its new word is found and the word it replaced no longer is.
        assert_eq!(put(&server, id, &PLAN.replace("Reminders", "Pagers"), 1).await.status(), 200);
        eventually("the edit's word is found", || async { found("pagers").await && not_found("reminders").await })
            .await;

        // A restore brings the first version's words back.
        let restore = server.client.post(server.url(&format!("/api/artifacts/{id}/versions/1/restore")));
        assert_eq!(restore.send().await.unwrap().status(), 201);
        eventually("the restored word is found", || async { found("reminders").await && not_found("pagers").await })
            .await;

        // An imported copy is found by its importer, by the words of its current version.
        let export: ThreadExport = server.get_json(&format!("/api/threads/{thread}/export")).await;
        let (client, _session) = server.second_user("finder@example.com").await;
        assert!(documents_found(&server, &client, "reminders").await.is_empty(), "nothing of another person's");
        let response = client.post(server.url("/api/threads/import")).json(&export).send().await.unwrap();
        assert_eq!(response.status(), 201);
        let copy = response.json::<ImportResult>().await.unwrap().threads[0].id;
        let docs: ArtifactList = get_json(&client, &server.url(&format!("/api/threads/{copy}/artifacts"))).await;
        let copied = docs.artifacts[0].id;
        eventually("the imported document is found", || async {
            documents_found(&server, &client, "reminders").await == [copied]
        })
        .await;
        assert!(documents_found(&server, &client, "pagers").await.is_empty(), "the copy is at its current version");
    }
}

/// On PostgreSQL a document's search vector is written after its save: by the store once the save has
/// committed, and by the sweep a starting store makes when a save's indexing never ran (a crash between the two).
#[tokio::test]
async fn a_document_s_search_vector_follows_its_saves_and_a_restart_writes_one_left_behind() {
    let Some(db) = Db::open(Backend::Postgres, "document_versions_vector").await else { return };
    let model = ScriptedModel::new(vec![save(PLAN), ScriptedModel::text(&["Done."])]);
    let server = TestServer::with(db.store.clone(), model).await;
    let thread = server.create_thread().await;
    let id = created(&server.chat(thread, "Write the requirements doc").await)[0].id;
    // Whether the document's vector is the one of its current version and holds `word`.
    let indexed_with = |word: &'static str| {
        let raw = db.raw.clone();
        async move {
            let sql = format!(
                "select count(*) from artifacts where id = ? and search_version = version
                 and search @@ to_tsquery('simple', '{word}')"
            );
            raw.int(&sql, id).await == 1
        }
    };
    eventually("the new document's vector", || indexed_with("reminders")).await;
    assert_eq!(put(&server, id, &PLAN.replace("Reminders", "Pagers"), 1).await.status(), 200);
    eventually("the edit's vector", || indexed_with("pagers")).await;
    assert!(!indexed_with("reminders").await, "the replaced word is out of the vector");

    // A save whose indexing never ran: found by search all the same, and indexed by the next store to start.
    db.raw.exec("update artifacts set search = null, search_version = null where id = ?", id).await;
    assert_eq!(documents_found(&server, &server.client, "pagers").await, [id]);
    assert!(documents_found(&server, &server.client, "reminders").await.is_empty());
    let (base, name) = db.drop_database.clone().expect("a database of its own");
    let restarted = store::connect(&with_database(&base, &name)).await.expect("open the store again");
    eventually("the vector left behind", || indexed_with("pagers")).await;
    drop(restarted);
    drop(server);
    db.close().await;
}
