//! Conversations as trees, on both backends: edit and resend, another answer, switching branches, deleting a
//! message with what follows it, de-duplication along the shown path, the shape of a conversation under random
//! changes, and conversations written before trees existed becoming one path each.

use std::{borrow::Cow, collections::HashSet, path::Path, sync::Arc};

use proptest::prelude::*;
use serde_json::{json, Value};
use store::NewMessage;
use uuid::Uuid;
use wire::{ChatEvent, ContextRecord, MessageStatus, Role, SearchResults, ShareLink, SharedConversation, ThreadDetail};

use crate::common::backends::{check_property, properties, run_story, stories, Backend, Db};
use crate::common::{
    names, new_user, read_frames, scripted_server, text_of, Frame, GreedyModel, ScriptedModel, Step, TestServer,
};

stories!(
    an_edit_is_a_sibling_that_is_answered,
    another_answer_goes_beside_the_first,
    the_shown_branch_is_stored_and_switching_waits_for_the_answer,
    deleting_a_message_deletes_what_follows_it,
    no_message_is_deleted_edited_or_answered_again_while_an_answer_is_written,
    de_duplication_follows_the_shown_path,
    an_export_carries_the_tree_and_an_import_restores_it,
    a_conversation_of_thousands_of_edits_stays_usable,
    a_share_link_shows_the_versions_chosen_and_their_documents,
);

properties!(the_shown_path_is_a_chain_from_a_first_message_to_the_active_one);

/// One script a plain answer, for each of `texts`.
fn answers(texts: &[&str]) -> Vec<Vec<Step>> {
    texts.iter().map(|text| ScriptedModel::text(&[*text])).collect()
}

/// A server answering with `scripts`, and a conversation in which `questions` were asked one after the other.
async fn conversation(db: &Db, scripts: Vec<Vec<Step>>, questions: &[&str]) -> (TestServer, Arc<ScriptedModel>, Uuid) {
    let (server, model) = scripted_server(db, scripts).await;
    let thread = server.create_thread().await;
    for question in questions {
        server.chat(thread, question).await;
    }
    (server, model, thread)
}

async fn post(server: &TestServer, path: &str, body: Value) -> reqwest::Response {
    server.client.post(server.url(path)).json(&body).send().await.unwrap()
}

/// Sends a chat request body and reads its whole stream.
async fn chat_with(server: &TestServer, thread: Uuid, body: Value) -> Vec<Frame> {
    let response = post(server, &format!("/api/threads/{thread}/chat"), body).await;
    assert_eq!(response.status(), 200, "chat status");
    read_frames(response).await
}

async fn regenerate(server: &TestServer, thread: Uuid, answer: Uuid, key: Option<&str>) -> reqwest::Response {
    let mut request = server.client.post(server.url(&format!("/api/threads/{thread}/messages/{answer}/regenerate")));
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request.send().await.unwrap()
}

async fn switch(server: &TestServer, thread: Uuid, message: Uuid) -> reqwest::Response {
    post(server, &format!("/api/threads/{thread}/branch"), json!({ "message_id": message })).await
}

fn answer_of(frames: &[Frame]) -> Uuid {
    match frames.last().map(|f| &f.event) {
        Some(ChatEvent::MessageComplete { message_id: Some(id), .. }) => *id,
        _ => panic!("no answer: {:?}", names(frames)),
    }
}

fn texts(detail: &ThreadDetail) -> Vec<&str> {
    detail.messages.iter().map(|m| m.content.as_str()).collect()
}

/// The siblings of a shown message, as the detail lists them (itself alone when it has none).
fn siblings(detail: &ThreadDetail, message: Uuid) -> Vec<Uuid> {
    detail.branches.iter().find(|b| b.message_id == message).map(|b| b.siblings.clone()).unwrap_or(vec![message])
}

/// The shown path is a chain: no parent for the first message, each next message a child of the one before.
fn assert_chain(detail: &ThreadDetail) {
    let mut parent = None;
    for m in &detail.messages {
        assert_eq!(m.parent_id, parent, "{:?}", texts(detail));
        parent = Some(m.id);
    }
    assert!(detail.messages.windows(2).all(|w| w[0].seq < w[1].seq), "in order");
}

async fn an_edit_is_a_sibling_that_is_answered(db: Db) {
    let scripts = answers(&["Answer one.", "Answer two.", "Answer to the edit."]);
    let (server, model, thread) = conversation(&db, scripts, &["Plan A", "Second question"]).await;
    let before = server.detail(thread).await;
    let first = before.messages[0].clone();

    let frames = chat_with(&server, thread, json!({ "content": "Plan B", "edit_of": first.id })).await;
    assert_eq!(text_of(&frames), "Answer to the edit.");
    let answer = answer_of(&frames);
    let after = server.detail(thread).await;
    assert_eq!(texts(&after), ["Plan B", "Answer to the edit."]);
    assert_chain(&after);
    let edited = after.messages[0].id;
    assert_eq!(siblings(&after, edited), vec![first.id, edited], "the old version stays, first");
    assert_eq!(after.thread.message_count, 6, "nothing was lost");
    // The model saw the new branch only, and the record of what it saw names just that path.
    assert_eq!(model.sent(2), "Plan B");
    let record: ContextRecord = server.get_json(&format!("/api/messages/{answer}/context")).await;
    assert_eq!(record.included, vec![edited]);

    // Only the person's own messages of this conversation can be edited.
    let other = server.create_thread().await;
    let answer_one = before.messages[1].id;
    for (thread, target) in [(thread, answer_one), (other, first.id), (thread, Uuid::now_v7())] {
        let response =
            post(&server, &format!("/api/threads/{thread}/chat"), json!({ "content": "x", "edit_of": target })).await;
        assert_eq!(response.status(), 404);
    }
    let silent = json!({ "content": "x", "edit_of": first.id, "artifact_generation": true });
    assert_eq!(post(&server, &format!("/api/threads/{thread}/chat"), silent).await.status(), 422);
    let empty = json!({ "content": " ", "edit_of": first.id });
    assert_eq!(post(&server, &format!("/api/threads/{thread}/chat"), empty).await.status(), 422);
    assert_eq!(server.detail(thread).await.thread.message_count, 6, "refused edits store nothing");
}

async fn another_answer_goes_beside_the_first(db: Db) {
    let scripts = vec![ScriptedModel::text(&["First take."]), ScriptedModel::text(&["Second take."]), vec![Step::Hang]];
    let (server, model) = scripted_server(&db, scripts).await;
    let thread = server.create_thread().await;
    let first = answer_of(&server.chat(thread, "Name the product").await);
    let question = server.detail(thread).await.messages[0].id;

    let response = regenerate(&server, thread, first, Some("again-1")).await;
    assert_eq!(response.status(), 200);
    let frames = read_frames(response).await;
    assert_eq!(text_of(&frames), "Second take.");
    let second = answer_of(&frames);
    let detail = server.detail(thread).await;
    assert_eq!(texts(&detail), ["Name the product", "Second take."]);
    assert_chain(&detail);
    assert_eq!(detail.messages[1].parent_id, Some(question));
    assert_eq!(siblings(&detail, second), vec![first, second]);
    assert_eq!(model.sent(1), "Name the product", "the model does not see the first take");

    // The same key replays the same turn instead of starting another.
    let replayed = read_frames(regenerate(&server, thread, first, Some("again-1")).await).await;
    assert_eq!(answer_of(&replayed), second);
    assert_eq!(server.detail(thread).await.thread.message_count, 3);
    // Only answers can be answered again.
    assert_eq!(regenerate(&server, thread, question, None).await.status(), 404);
    assert_eq!(regenerate(&server, server.create_thread().await, first, None).await.status(), 404);

    // A new answer is an ordinary turn: one at a time, and stoppable.
    let running = regenerate(&server, thread, second, None).await;
    assert_eq!(running.status(), 200);
    assert_eq!(regenerate(&server, thread, second, None).await.status(), 409);
    let stop = server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    assert!(stop.status().is_success());
    let frames = read_frames(running).await;
    assert!(matches!(frames.last().map(|f| &f.event), Some(ChatEvent::MessageComplete { stopped: true, .. })));
    let detail = server.wait_idle(thread).await;
    assert_eq!(texts(&detail), ["Name the product"], "a stopped turn that wrote nothing leaves the question");
    assert_eq!(detail.thread.message_count, 3);
}

async fn the_shown_branch_is_stored_and_switching_waits_for_the_answer(db: Db) {
    let scripts = [answers(&["A1", "A2", "B1", "A3"]), vec![vec![Step::Hang]]].concat();
    let (server, _model, thread) = conversation(&db, scripts, &["Q1", "Q2"]).await;
    let first = server.detail(thread).await.messages[0].id;
    chat_with(&server, thread, json!({ "content": "Q1 edited", "edit_of": first })).await;

    // Back to the first version: the branch through it, down to its newest message.
    let response = switch(&server, thread, first).await;
    assert_eq!(response.status(), 200);
    let shown: ThreadDetail = response.json().await.unwrap();
    assert_eq!(texts(&shown), ["Q1", "A1", "Q2", "A2"]);
    assert_eq!(texts(&server.detail(thread).await), ["Q1", "A1", "Q2", "A2"], "stored, for a reload or another device");
    // The conversation goes on where it is shown.
    server.chat(thread, "Q3").await;
    let detail = server.detail(thread).await;
    assert_eq!(texts(&detail), ["Q1", "A1", "Q2", "A2", "Q3", "A3"]);
    assert_chain(&detail);
    let edited = siblings(&detail, first)[1];
    let shown: ThreadDetail = switch(&server, thread, edited).await.json().await.unwrap();
    assert_eq!(texts(&shown), ["Q1 edited", "B1"]);

    // No switching to a message of another conversation, or while an answer is being written.
    let other = server.create_thread().await;
    assert_eq!(switch(&server, other, first).await.status(), 404);
    assert_eq!(switch(&server, thread, Uuid::now_v7()).await.status(), 404);
    let bad = post(&server, &format!("/api/threads/{thread}/branch"), json!({ "message_id": "nope" })).await;
    assert!(bad.status().is_client_error());
    let running = post(&server, &format!("/api/threads/{thread}/chat"), json!({ "content": "Q4" })).await;
    assert_eq!(running.status(), 200);
    assert_eq!(switch(&server, thread, first).await.status(), 409);
    server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    read_frames(running).await;
    let detail = server.wait_idle(thread).await;
    assert_eq!(texts(&detail), ["Q1 edited", "B1", "Q4"], "the switch was refused");
}

async fn deleting_a_message_deletes_what_follows_it(db: Db) {
    let scripts = answers(&["zebra one", "zebra two", "quagga"]);
    let (server, _model, thread) = conversation(&db, scripts, &["Hello there", "zebra follow-up"]).await;
    let first = server.detail(thread).await.messages[0].id;
    chat_with(&server, thread, json!({ "content": "quagga question", "edit_of": first })).await;
    switch(&server, thread, first).await;

    let url = server.url(&format!("/api/threads/{thread}/messages/{first}"));
    assert_eq!(server.client.delete(&url).send().await.unwrap().status(), 204);
    assert_eq!(server.client.delete(&url).send().await.unwrap().status(), 404);
    let detail = server.detail(thread).await;
    assert_eq!(texts(&detail), ["quagga question", "quagga"], "the branch beside it is shown");
    assert!(detail.branches.is_empty());
    assert_eq!(detail.thread.message_count, 2);
    let found: SearchResults = server.get_json("/api/search?q=zebra").await;
    assert_eq!(found.total, 0, "nothing of the deleted branch is found");
    let stats: wire::HistoryStats = server.get_json("/api/stats").await;
    assert_eq!(stats.total_messages, 2);
}

async fn no_message_is_deleted_edited_or_answered_again_while_an_answer_is_written(db: Db) {
    let scripts = [answers(&["A1"]), vec![vec![Step::Hang]]].concat();
    let (server, _model, thread) = conversation(&db, scripts, &["Q1"]).await;
    let before = server.detail(thread).await;
    let (question, answer) = (before.messages[0].id, before.messages[1].id);
    let delete = |message: Uuid| server.client.delete(server.url(&format!("/api/threads/{thread}/messages/{message}")));

    let running = post(&server, &format!("/api/threads/{thread}/chat"), json!({ "content": "Q2" })).await;
    assert_eq!(running.status(), 200);
    for message in [question, answer] {
        let refused = delete(message).send().await.unwrap();
        assert_eq!(refused.status(), 409, "deleting while an answer is written");
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["code"], "conflict");
    }
    let edit = json!({ "content": "Q1 edited", "edit_of": question });
    assert_eq!(post(&server, &format!("/api/threads/{thread}/chat"), edit).await.status(), 409);
    assert_eq!(regenerate(&server, thread, answer, None).await.status(), 409);
    // A message of another conversation, or none, is still missing rather than busy.
    assert_eq!(delete(Uuid::now_v7()).send().await.unwrap().status(), 404);

    server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    read_frames(running).await;
    let detail = server.wait_idle(thread).await;
    assert_eq!(texts(&detail), ["Q1", "A1", "Q2"], "nothing was deleted or changed meanwhile");
    assert!(detail.branches.is_empty());
    assert_eq!(detail.thread.message_count, 3);

    // Once the answer is over, the same deletion goes through.
    assert_eq!(delete(answer).send().await.unwrap().status(), 204);
    let detail = server.detail(thread).await;
    assert_eq!(texts(&detail), ["Q1"]);
    assert_eq!(detail.thread.message_count, 1);
}

async fn de_duplication_follows_the_shown_path(db: Db) {
    let model = Arc::new(GreedyModel::default());
    let server = TestServer::with(db.store.clone(), model.clone()).await;
    let thread = server.create_thread().await;
    server.chat(thread, "We are building a bakery shop.").await;
    let frames = server.chat(thread, "Generate user stories").await;
    let made_first = frames.iter().filter(|f| f.event.name() == "artifact_created").count();
    assert_eq!(made_first, 1);
    let first_answer = answer_of(&frames);

    // Another answer to the request: the document made on the other branch does not fulfil it here.
    let frames = read_frames(regenerate(&server, thread, first_answer, None).await).await;
    assert_eq!(frames.iter().filter(|f| f.event.name() == "artifact_created").count(), 1);
    let second_answer = answer_of(&frames);
    let detail = server.detail(thread).await;
    // The model named it as before, yet the first branch's document is that branch's: this branch gets one of
    // its own, and each says which answer made it.
    let made_by: HashSet<_> = detail.artifacts.iter().map(|a| (a.assistant_message_id, a.version)).collect();
    assert_eq!(made_by, HashSet::from([(Some(first_answer), 1), (Some(second_answer), 1)]));
    assert_eq!(detail.artifacts[0].title, detail.artifacts[1].title);

    // On either branch the request is fulfilled by that branch's document: a later turn makes nothing.
    let last_seen =
        || model.requests.lock().unwrap().last().unwrap().messages.iter().map(|m| m.text()).collect::<Vec<_>>();
    let frames = server.chat(thread, "Thanks").await;
    assert_eq!(frames.iter().filter(|f| f.event.name() == "artifact_created").count(), 0);
    assert!(!last_seen().join("|").contains("Generate user stories"), "{:?}", last_seen());
    assert_eq!(switch(&server, thread, first_answer).await.status(), 200);
    let frames = server.chat(thread, "Thanks again").await;
    assert_eq!(frames.iter().filter(|f| f.event.name() == "artifact_created").count(), 0);
    assert!(!last_seen().join("|").contains("Generate user stories"), "{:?}", last_seen());
    let documents = server.detail(thread).await.artifacts;
    assert_eq!(documents.len(), 2, "nothing was revised or made on the way back");
    assert!(documents.iter().all(|a| a.version == 1), "{documents:?}");

    // A request left on an abandoned branch is not pending on the shown one: its document deleted, it is open
    // there, and edited away here.
    let other = server.create_thread().await;
    server.chat(other, "Generate a BRD").await;
    let brd = server.detail(other).await;
    assert_eq!(brd.artifacts.len(), 1);
    let deleted = server.client.delete(server.url(&format!("/api/artifacts/{}", brd.artifacts[0].id))).send().await;
    assert_eq!(deleted.unwrap().status(), 204);
    let request = brd.messages[0].id;
    let frames = chat_with(&server, other, json!({ "content": "We sell bread.", "edit_of": request })).await;
    assert_eq!(frames.iter().filter(|f| f.event.name() == "artifact_created").count(), 0);
    let frames = server.chat(other, "Generate a requirements doc").await;
    let made: Vec<_> = frames
        .iter()
        .filter_map(|f| match &f.event {
            ChatEvent::ArtifactCreated { artifact } => Some(artifact.artifact_type.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(made, vec!["requirements_doc"], "the abandoned request is neither seen nor acted on");
}

/// A person's message (or an answer, by the count of messages) after the active one.
async fn say(s: &store::DynStore, user: Uuid, thread: Uuid, role: Role, text: &str) -> wire::Message {
    let message = NewMessage {
        thread_id: thread,
        role,
        content: text.into(),
        status: MessageStatus::Complete,
        usage: Default::default(),
        model: None,
        quote: None,
        author: None,
    };
    s.append_message(user, message).await.unwrap()
}

async fn an_export_carries_the_tree_and_an_import_restores_it(db: Db) {
    use quire::history::{export, import};
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Tree", &[]).await.unwrap();
    let q = say(s, u, t.id, Role::User, "Question").await;
    say(s, u, t.id, Role::Assistant, "First answer").await;
    s.set_active(u, t.id, Some(q.id), None).await.unwrap();
    let second = say(s, u, t.id, Role::Assistant, "Second answer").await;
    say(s, u, t.id, Role::User, "Follow-up").await;
    s.set_active(u, t.id, None, None).await.unwrap();
    say(s, u, t.id, Role::User, "Another start").await;
    s.switch_branch(u, t.id, second.id, 30_000).await.unwrap();

    let shape = |tree: &store::Tree, texts: &std::collections::HashMap<Uuid, String>| {
        let name = |id: Option<Uuid>| id.map(|id| texts[&id].clone());
        let edges: Vec<(String, Option<String>)> =
            tree.heads.iter().map(|h| (texts[&h.id].clone(), name(h.parent))).collect();
        (edges, tree.path().iter().map(|h| texts[&h.id].clone()).collect::<Vec<_>>())
    };
    let texts_of = |messages: Vec<wire::Message>| messages.into_iter().map(|m| (m.id, m.content)).collect();
    let before = shape(&s.message_tree(u, t.id).await.unwrap(), &texts_of(s.list_messages(u, t.id).await.unwrap()));
    assert_eq!(before.1, ["Question", "Second answer", "Follow-up"]);

    let exported = export::thread(s, u, t.id).await.unwrap();
    let markdown = export::to_markdown(&exported, &export::Bylines::default());
    assert!(
        markdown.contains("Follow-up") && !markdown.contains("First answer") && !markdown.contains("Another start")
    );
    let plan = import::plan(&serde_json::to_vec(&exported).unwrap()).expect("plan");
    let made = s.import_threads(u, plan).await.unwrap()[0].id;
    let after = shape(&s.message_tree(u, made).await.unwrap(), &texts_of(s.list_messages(u, made).await.unwrap()));
    assert_eq!(after, before, "the same tree, the same branch shown");
    assert_eq!(s.get_thread(u, made).await.unwrap().message_count, 5);
    // The imported conversation goes on from where it is shown.
    let next = say(s, u, made, Role::Assistant, "Next").await;
    assert_eq!(s.get_message(u, next.parent_id.unwrap()).await.unwrap().content, "Follow-up");
}

/// A person with a conversation of four messages, numbered with a gap as after a deletion, and an empty one, as
/// the schema before message trees held them.
struct LegacyRows {
    user: Uuid,
    thread: Uuid,
    empty: Uuid,
    ids: Vec<Uuid>,
}

impl LegacyRows {
    fn new() -> Self {
        let ids = (0..4).map(|_| Uuid::now_v7()).collect();
        Self { user: Uuid::now_v7(), thread: Uuid::now_v7(), empty: Uuid::now_v7(), ids }
    }

    /// The statements that write them, with `now` the backend's expression for the current time.
    fn inserts(&self, now: &str) -> String {
        let Self { user, thread, empty, ids } = self;
        let mut sql = format!(
            "insert into users (id, email, password_hash, created_at) values ('{user}', 'old@example.com', 'x', {now});"
        );
        for (id, count) in [(thread, 4), (empty, 0)] {
            sql += &format!(
                "insert into threads (id, user_id, title, message_count, last_seq, created_at, updated_at)
                 values ('{id}', '{user}', 'Old', {count}, 5, {now}, {now});"
            );
        }
        for (i, (id, seq)) in ids.iter().zip([1, 2, 4, 5]).enumerate() {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            sql += &format!(
                "insert into messages (id, thread_id, user_id, seq, role, content, status, created_at)
                 values ('{id}', '{thread}', '{user}', {seq}, '{role}', 'old message {i}', 'complete', {now});"
            );
        }
        sql
    }
}

/// A migration over the schema before message trees, then rows written as that schema had them, then the store
/// (which runs the rest): every conversation is one path, in order, its newest message shown, nothing lost.
async fn legacy_rows_become_one_path(backend: Backend) {
    let rows = LegacyRows::new();
    let store = match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
            let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
            before_trees("../migrations/sqlite").await.run(&pool).await.unwrap();
            sqlx::raw_sql(&rows.inserts("1")).execute(&pool).await.unwrap();
            pool.close().await;
            let store = store::connect(&url).await.unwrap();
            (store, Some(dir))
        }
        Backend::Postgres => {
            let Some(url) = crate::common::fresh_postgres_url("legacy_rows_become_one_path::postgres").await else {
                return;
            };
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            before_trees("../migrations/postgres").await.run(&pool).await.unwrap();
            sqlx::raw_sql(&rows.inserts("now()")).execute(&pool).await.unwrap();
            pool.close().await;
            (store::connect(&url).await.unwrap(), None)
        }
    };
    let LegacyRows { user, thread, empty, ids } = rows;
    let (store, _dir) = store;
    let tree = store.message_tree(user, thread).await.unwrap();
    assert_eq!(tree.active, Some(ids[3]));
    let parents: Vec<Option<Uuid>> = tree.heads.iter().map(|h| h.parent).collect();
    assert_eq!(parents, vec![None, Some(ids[0]), Some(ids[1]), Some(ids[2])]);
    let (path, branches) = store.list_path(user, thread).await.unwrap();
    assert_eq!(path.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    assert_eq!(path.iter().map(|m| m.content.clone()).collect::<Vec<_>>()[3], "old message 3");
    assert!(branches.is_empty());
    assert_eq!(store.message_tree(user, empty).await.unwrap(), store::Tree::default());
    // A new message goes on from the newest.
    let next = NewMessage {
        thread_id: thread,
        role: Role::User,
        content: "new".into(),
        status: MessageStatus::Complete,
        usage: Default::default(),
        model: None,
        quote: None,
        author: None,
    };
    let added = store.append_message(user, next).await.unwrap();
    assert_eq!((added.seq, added.parent_id), (6, Some(ids[3])));
}

/// The migrations before message trees.
async fn before_trees(dir: &str) -> sqlx::migrate::Migrator {
    let all = sqlx::migrate::Migrator::new(Path::new(dir)).await.unwrap();
    let older: Vec<_> = all.migrations.iter().filter(|m| m.version < 100).cloned().collect();
    assert!(all.migrations.iter().any(|m| m.version == 100), "migration 0100 makes the trees");
    sqlx::migrate::Migrator { migrations: Cow::Owned(older), ..sqlx::migrate::Migrator::DEFAULT }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_conversations_become_one_path_sqlite() {
    legacy_rows_become_one_path(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_conversations_become_one_path_postgres() {
    legacy_rows_become_one_path(Backend::Postgres).await;
}

/// What a random change to a conversation does.
#[derive(Debug, Clone)]
enum Change {
    /// A message after the active one.
    Say,
    /// Shows the branch through the n-th message (of those there are, by number).
    Switch(usize),
    /// Makes the n-th message's parent active, so the next message is a sibling of it.
    Beside(usize),
    /// Deletes the n-th message and what follows it.
    Delete(usize),
}

/// Whatever is said, switched, edited beside and deleted: the shown path is a chain from a first message to the
/// active one, in number order, every message of the thread is on one path's branch, the count is the number of
/// messages, and siblings listed are exactly the messages with the same parent.
fn the_shown_path_is_a_chain_from_a_first_message_to_the_active_one(backend: Backend, test: &str) {
    let change = prop_oneof![
        4 => Just(Change::Say),
        1 => (0usize..30).prop_map(Change::Switch),
        2 => (0usize..30).prop_map(Change::Beside),
        1 => (0usize..30).prop_map(Change::Delete),
    ];
    check_property(backend, test, 16, prop::collection::vec(change, 1..30), |db, changes| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let t = s.create_thread(u, "Tree", &[]).await.unwrap();
        for change in &changes {
            let tree = s.message_tree(u, t.id).await.unwrap();
            let nth = |n: usize| tree.heads.get(n % tree.heads.len().max(1)).cloned();
            match change {
                Change::Say => {
                    let role = if tree.heads.len() % 2 == 0 { Role::User } else { Role::Assistant };
                    let message = NewMessage {
                        thread_id: t.id,
                        role,
                        content: "said".into(),
                        status: MessageStatus::Complete,
                        usage: Default::default(),
                        model: None,
                        quote: None,
                        author: None,
                    };
                    let said = s.append_message(u, message).await.unwrap();
                    assert_eq!(said.parent_id, tree.active, "after the active message");
                }
                Change::Switch(n) => {
                    if let Some(head) = nth(*n) {
                        let leaf = s.switch_branch(u, t.id, head.id, 30_000).await.unwrap();
                        let path = s.message_tree(u, t.id).await.unwrap().path();
                        assert!(path.iter().any(|h| h.id == head.id), "the path goes through the message");
                        assert_eq!(path.last().map(|h| h.id), Some(leaf));
                    }
                }
                Change::Beside(n) => {
                    if let Some(head) = nth(*n) {
                        s.set_active(u, t.id, head.parent, None).await.unwrap();
                    }
                }
                Change::Delete(n) => {
                    if let Some(head) = nth(*n) {
                        s.delete_message(u, t.id, head.id, None).await.unwrap();
                        assert!(matches!(s.get_message(u, head.id).await, Err(store::StoreError::NotFound)));
                    }
                }
            }
            let tree = s.message_tree(u, t.id).await.unwrap();
            let ids: HashSet<Uuid> = tree.heads.iter().map(|h| h.id).collect();
            assert!(tree.heads.iter().all(|h| h.parent.is_none_or(|p| ids.contains(&p))), "no orphans");
            assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, tree.heads.len() as i64);
            let (path, branches) = s.list_path(u, t.id).await.unwrap();
            let mut parent = None;
            for m in &path {
                assert_eq!(m.parent_id, parent);
                parent = Some(m.id);
            }
            assert!(path.windows(2).all(|w| w[0].seq < w[1].seq));
            // The path ends at a message with no children unless it is the active one.
            if let Some(last) = path.last() {
                let leaf = !tree.heads.iter().any(|h| h.parent == Some(last.id));
                assert!(leaf || tree.active == Some(last.id));
            }
            for m in &path {
                let same: Vec<Uuid> = tree.heads.iter().filter(|h| h.parent == m.parent_id).map(|h| h.id).collect();
                let listed = branches.iter().find(|b| b.message_id == m.id).map(|b| b.siblings.clone());
                assert_eq!(listed.unwrap_or(vec![m.id]), same);
            }
        }
    });
}

/// As many messages as an import takes: a first question in 2,500 versions (one answer under each), and under the
/// last version's answer a chain 5,000 messages deep. Showing, switching, the model's view and deleting all
/// work, each in one pass over the tree (nothing walks it recursively or pairs every message with every other).
async fn a_conversation_of_thousands_of_edits_stays_usable(db: Db) {
    use quire::history::{export, import};
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Seed", &[]).await.unwrap();
    say(s, u, t.id, Role::User, "Seed").await;
    let mut shape = export::thread(s, u, t.id).await.unwrap();
    let template = shape.messages[0].clone();
    let message = |n: usize, role: Role, parent: Option<Uuid>| wire::ExportedMessage {
        id: Uuid::from_u128(n as u128 + 1),
        seq: n as i64 + 1,
        role,
        content: format!("Message {n}"),
        parent_id: parent,
        ..template.clone()
    };
    let mut messages = Vec::with_capacity(wire::MAX_IMPORT_MESSAGES);
    while messages.len() < 5_000 {
        let question = message(messages.len(), Role::User, None);
        let answer = message(messages.len() + 1, Role::Assistant, Some(question.id));
        messages.extend([question, answer]);
    }
    let mut parent = messages.last().map(|m| m.id);
    while messages.len() < wire::MAX_IMPORT_MESSAGES {
        let role = if messages.len() % 2 == 0 { Role::User } else { Role::Assistant };
        let next = message(messages.len(), role, parent);
        parent = Some(next.id);
        messages.push(next);
    }
    shape.messages = messages;
    shape.thread.active_message_id = parent;
    let plan = import::plan(&serde_json::to_vec(&shape).unwrap()).expect("plan");
    let thread = s.import_threads(u, plan).await.unwrap()[0].id;
    let ids: Vec<Uuid> = s.message_tree(u, thread).await.unwrap().heads.iter().map(|h| h.id).collect();
    assert_eq!(ids.len(), wire::MAX_IMPORT_MESSAGES);

    // The shown path: the last version of the question, its answer and the deep chain; the question has 2,500
    // versions to go through.
    let (path, branches) = s.list_path(u, thread).await.unwrap();
    assert_eq!(path.len(), 2 + (wire::MAX_IMPORT_MESSAGES - 5_000));
    assert_eq!(branches.len(), 1);
    assert_eq!(branches[0].siblings.len(), 2_500);
    assert_eq!(branches[0].message_id, path[0].id);

    // The model sees the deep path, within its budget.
    let built = quire::chat::context::load(s.as_ref(), u, thread, 2_000, None, None, None).await.unwrap().built;
    assert!(!built.record.included.is_empty() && !built.record.truncated.is_empty());
    assert!(built.record.included.iter().chain(&built.record.truncated).all(|id| built.path.contains(id)));

    // Switching to the first version and back.
    let first = branches[0].siblings[0];
    let leaf = s.switch_branch(u, thread, first, 30_000).await.unwrap();
    assert_eq!(s.get_message(u, leaf).await.unwrap().parent_id, Some(first));
    let back = s.switch_branch(u, thread, path[0].id, 30_000).await.unwrap();
    assert_eq!(Some(back), ids.last().copied(), "down to the newest message");

    // Deleting the last version takes its answer and the whole chain with it; the other versions stay.
    let gone = s.delete_message(u, thread, path[0].id, None).await.unwrap();
    assert_eq!(gone as usize, wire::MAX_IMPORT_MESSAGES - 4_998);
    assert_eq!(s.get_thread(u, thread).await.unwrap().message_count as usize, 4_998);
    let (path, _) = s.list_path(u, thread).await.unwrap();
    assert_eq!(path.len(), 2, "the newest version left is shown");
}

async fn a_share_link_shows_the_versions_chosen_and_their_documents(db: Db) {
    let save = |title: &str| {
        let arguments = json!({ "artifact_type": "user_stories", "title": title, "content": "# Stories\n\n- One" });
        ScriptedModel::tool_use("save_artifact", arguments)
    };
    let scripts = vec![
        save("Bus stories"),
        ScriptedModel::text(&["Saved the bus stories."]),
        save("Ticket stories"),
        ScriptedModel::text(&["Saved the ticket stories."]),
    ];
    let (server, _, thread) = conversation(&db, scripts, &["Plan A: stories for riders of buses."]).await;
    let first = server.detail(thread).await.messages[0].id;
    chat_with(&server, thread, json!({ "content": "Plan B: stories for buying tickets.", "edit_of": first })).await;

    let snapshot = share_and_read(&server, thread).await;
    let texts: Vec<&str> = snapshot.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["Plan B: stories for buying tickets.", "Saved the ticket stories."]);
    let titles: Vec<&str> = snapshot.documents.iter().map(|d| d.title.as_str()).collect();
    assert_eq!(titles, ["Ticket stories"], "only the document of the path shared");

    // Back on the first version, a new link shows it and its own document.
    assert_eq!(switch(&server, thread, first).await.status(), 200);
    let snapshot = share_and_read(&server, thread).await;
    let texts: Vec<&str> = snapshot.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["Plan A: stories for riders of buses.", "Saved the bus stories."]);
    let titles: Vec<&str> = snapshot.documents.iter().map(|d| d.title.as_str()).collect();
    assert_eq!(titles, ["Bus stories"]);
}

/// A new share link of the conversation, read as a stranger would.
async fn share_and_read(server: &TestServer, thread: Uuid) -> SharedConversation {
    let created = server.client.post(server.url(&format!("/api/threads/{thread}/shares"))).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let link: ShareLink = created.json().await.unwrap();
    let token = link.path.strip_prefix("/s/").unwrap();
    let read = server.anonymous().get(server.url(&format!("/api/shared/{token}"))).send().await.unwrap();
    assert_eq!(read.status(), 200);
    read.json().await.unwrap()
}
