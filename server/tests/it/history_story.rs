//! The history features on every storage backend: pages that stay exact while threads change, statistics of
//! a known data set, and export -> import -> export round trips. Each story and property runs on SQLite (always)
//! and on PostgreSQL when `QUIRE_TEST_POSTGRES_URL` is set, on a database of its own (the harness is the one of
//! `store_story.rs`).

use std::{collections::HashSet, fmt::Debug};

use chrono::Utc;
use proptest::prelude::*;
use quire::history::{export::thread as thread_export, import::plan as import_plan};
use serde_json::json;
use store::{
    self,
    history::{ImportMessage, ImportThread},
    DynStore, NewArtifact, NewMessage, StoreError, ThreadPatch,
};
use uuid::Uuid;
use wire::{ArtifactType, MessageStatus, Role, TagCount, ThreadExport, TypeCount, Usage};

use crate::common::backends::{check_property, properties, run_story, stories, Backend, Db};
use crate::common::{new_artifact, new_message, new_user, tags};

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

async fn append(store: &DynStore, user: Uuid, thread: Uuid, role: Role, content: &str) -> wire::Message {
    store.append_message(user, new_message(thread, role, content)).await.expect("append message")
}

fn artifact(thread: Uuid, kind: ArtifactType, title: &str) -> NewArtifact {
    new_artifact(thread, kind, title, &format!("# {title}"))
}

/// An export without what an import may change: ids (links become message positions) and the export time.
fn comparable(export: &ThreadExport) -> serde_json::Value {
    let position = |id: Option<Uuid>| id.and_then(|id| export.messages.iter().position(|m| m.id == id));
    json!({
        "title": export.thread.title,
        "tags": export.thread.tags,
        "pinned": export.thread.pinned,
        "archived": export.thread.archived,
        "messages": export.messages.iter().map(|m| json!([
            m.seq, m.role, m.content, m.status, m.input_tokens, m.output_tokens, m.model,
        ])).collect::<Vec<_>>(),
        "artifacts": export.artifacts.iter().map(|a| json!([
            a.artifact_type, a.title, a.content, a.version,
            position(a.request_message_id), position(a.assistant_message_id),
        ])).collect::<Vec<_>>(),
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Stories
// ---------------------------------------------------------------------------------------------------------------

stories!(stats_of_a_known_data_set, import_is_all_or_nothing, import_keeps_numbers_links_and_times);

async fn stats_of_a_known_data_set(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let other = new_user(s).await;

    let empty = s.history_stats(u, store::Scope::Own, Utc::now().date_naive()).await.unwrap();
    assert_eq!((empty.total_threads, empty.total_messages, empty.average_messages_per_thread), (0, 0, 0.0));
    assert_eq!(empty.first_conversation_at, None);
    assert_eq!(empty.tokens_per_day.len(), 30);

    let a = s.create_thread(u, "Alpha", &tags(&["work", "rust"])).await.unwrap();
    let b = s.create_thread(u, "Beta", &tags(&["work"])).await.unwrap();
    let c = s.create_thread(u, "Gamma", &tags(&["home"])).await.unwrap();
    s.update_thread(u, c.id, &ThreadPatch { archived: Some(true), ..Default::default() }).await.unwrap();
    for text in ["one", "two", "three"] {
        append(s, u, a.id, Role::User, text).await;
    }
    append(s, u, b.id, Role::User, "four").await;
    let doomed = append(s, u, b.id, Role::Assistant, "five").await;
    append(s, u, b.id, Role::User, "six").await;
    // "seven" is another version of "six".
    s.set_active(u, b.id, Some(doomed.id), None).await.unwrap();
    let seven = append(s, u, b.id, Role::User, "seven").await;
    assert_eq!(seven.parent_id, Some(doomed.id));
    // Deleting "five" takes "six" and "seven" after it, on both its branches.
    assert_eq!(s.delete_message(u, b.id, doomed.id, None).await.unwrap(), 3);
    s.create_artifact(u, artifact(a.id, ArtifactType::UserStories, "Stories 1")).await.unwrap();
    s.create_artifact(u, artifact(a.id, ArtifactType::UserStories, "Stories 2")).await.unwrap();
    s.create_artifact(u, artifact(b.id, ArtifactType::MeetingSummary, "Summary")).await.unwrap();
    s.record_usage(u, a.id, "model-a", Usage { input_tokens: 100, output_tokens: 20 }).await.unwrap();
    s.record_usage(u, b.id, "model-b", Usage { input_tokens: 5, output_tokens: 7 }).await.unwrap();
    // Someone else's rows never count.
    let theirs = s.create_thread(other, "Theirs", &tags(&["work", "secret"])).await.unwrap();
    append(s, other, theirs.id, Role::User, "not yours").await;
    s.create_artifact(other, artifact(theirs.id, ArtifactType::Custom, "Not yours")).await.unwrap();
    s.record_usage(other, theirs.id, "model-a", Usage { input_tokens: 1000, output_tokens: 1000 }).await.unwrap();

    let today = Utc::now().date_naive();
    let stats = s.history_stats(u, store::Scope::Own, today).await.unwrap();
    assert_eq!(stats.total_threads, 3);
    assert_eq!(stats.total_messages, 4);
    assert!((stats.average_messages_per_thread - 4.0 / 3.0).abs() < 1e-9);
    let mine = [
        s.get_thread(u, a.id).await.unwrap(),
        s.get_thread(u, b.id).await.unwrap(),
        s.get_thread(u, c.id).await.unwrap(),
    ];
    assert_eq!(stats.first_conversation_at, mine.iter().map(|t| t.created_at).min());
    assert_eq!(stats.last_conversation_at, mine.iter().map(|t| t.updated_at).max());
    assert_eq!(
        stats.top_tags,
        vec![
            TagCount { tag: "work".into(), count: 2 },
            TagCount { tag: "home".into(), count: 1 },
            TagCount { tag: "rust".into(), count: 1 },
        ]
    );
    assert_eq!((stats.input_tokens, stats.output_tokens), (105, 27));
    assert_eq!(stats.tokens_per_day.len(), 30);
    assert_eq!(stats.tokens_per_day.last().unwrap().day, today);
    assert!(stats.tokens_per_day.windows(2).all(|w| w[0].day.succ_opt() == Some(w[1].day)));
    // Recorded "today" by the ledger's clock, which is inside the window even across a midnight.
    assert_eq!(stats.tokens_per_day.iter().map(|d| d.input_tokens).sum::<u64>(), 105);
    assert_eq!(stats.tokens_per_day.iter().map(|d| d.output_tokens).sum::<u64>(), 27);
    // Four messages are left (one was deleted), all inside the window; the other person's never count.
    assert_eq!(stats.tokens_per_day.iter().map(|d| d.messages).sum::<u64>(), 4);
    assert_eq!(
        stats.artifacts_by_type,
        vec![
            TypeCount { artifact_type: ArtifactType::UserStories, count: 2 },
            TypeCount { artifact_type: ArtifactType::MeetingSummary, count: 1 },
        ]
    );
}

fn import_message(seq: i64, role: Role, content: &str) -> ImportMessage {
    ImportMessage::new(seq, role, content, store::now())
}

/// A conversation to import, made now, of `messages` and nothing else.
pub(crate) fn import_thread(title: &str, messages: Vec<ImportMessage>) -> ImportThread {
    ImportThread::new(title, store::now(), messages, Vec::new())
}

async fn import_is_all_or_nothing(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let good = import_thread("Good", vec![import_message(1, Role::User, "kept only if all are")]);
    // Two messages with one number break the schema's uniqueness in the middle of the import.
    let bad = import_thread(
        "Bad",
        vec![import_message(1, Role::User, "first"), import_message(1, Role::Assistant, "same number")],
    );
    let result = s.import_threads(u, vec![good.clone(), bad]).await;
    assert!(result.is_err(), "{result:?}");
    assert!(s.all_thread_ids(u).await.unwrap().is_empty(), "a failed import left threads behind");
    assert_eq!(db.raw.count("threads", "user_id", u).await, 0);
    assert_eq!(db.raw.int("select count(*) from messages where user_id = ?", u).await, 0, "orphan messages");
    assert_eq!(s.search(u, "kept", 10, 0).await.unwrap().total, 0);

    let made = s.import_threads(u, vec![good]).await.unwrap();
    assert_eq!(made.len(), 1);
    assert_eq!(s.all_thread_ids(u).await.unwrap(), vec![made[0].id]);
    assert_eq!(s.search(u, "kept", 10, 0).await.unwrap().total, 1, "imported text is searchable");
    let other = new_user(s).await;
    assert!(matches!(s.get_thread(other, made[0].id).await, Err(StoreError::NotFound)));
}

async fn import_keeps_numbers_links_and_times(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Source", &tags(&["b", "a"])).await.unwrap();
    let ask = append(s, u, t.id, Role::User, "write stories").await;
    let gone = append(s, u, t.id, Role::User, "deleted").await;
    s.delete_message(u, t.id, gone.id, None).await.unwrap();
    append(s, u, t.id, Role::User, "also deleted").await;
    s.delete_message(u, t.id, s.message_tree(u, t.id).await.unwrap().active.unwrap(), None).await.unwrap();
    let reply = append(s, u, t.id, Role::Assistant, "done").await;
    let mut doc = artifact(t.id, ArtifactType::UserStories, "Stories");
    doc.request_message_id = Some(ask.id);
    doc.assistant_message_id = Some(reply.id);
    s.create_artifact(u, doc).await.unwrap();

    let first = thread_export(s, u, t.id).await.unwrap();
    let plan = import_plan(&serde_json::to_vec(&first).unwrap()).expect("plan");
    let made = s.import_threads(u, plan).await.unwrap();
    let second = thread_export(s, u, made[0].id).await.unwrap();
    assert_eq!(second.messages.iter().map(|m| m.seq).collect::<Vec<_>>(), [1, 4]);
    assert_eq!(second.thread.created_at, first.thread.created_at);
    assert_eq!(second.thread.updated_at, first.thread.updated_at);
    let times = |e: &ThreadExport| e.messages.iter().map(|m| m.created_at).collect::<Vec<_>>();
    assert_eq!(times(&second), times(&first));
    assert_eq!(second.artifacts[0].request_message_id, Some(second.messages[0].id));
    assert_eq!(second.artifacts[0].assistant_message_id, Some(second.messages[1].id));
    assert_eq!(comparable(&second), comparable(&first));
    // The next message continues after the highest number.
    assert_eq!(append(s, u, made[0].id, Role::User, "next").await.seq, 5);
    assert_eq!(s.get_thread(u, made[0].id).await.unwrap().message_count, 3);
}

// ---------------------------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------------------------

/// Cases per property: each case is a few dozen round trips to a real database.
const CASES: u32 = 16;

/// Any text PostgreSQL can store (it has no NUL in text).
fn any_text() -> impl Strategy<Value = String> {
    "[^\u{0}]{0,40}"
}

// Pages under changes: `store_story::pages_cover_the_listing_exactly`.
properties!(export_import_export_is_identity);

/// (assistant?, text, status, input tokens, output tokens, model)
type MessageSpec = (bool, String, MessageStatus, u32, u32, Option<String>);
/// (type, title, content, request message position, answer position)
type ArtifactSpec = (ArtifactType, String, String, Option<usize>, Option<usize>);

/// A conversation to build through the store.
#[derive(Debug, Clone)]
struct Conversation {
    title: String,
    tags: Vec<String>,
    pinned: bool,
    archived: bool,
    messages: Vec<MessageSpec>,
    /// Positions of messages to delete afterwards (leaving gaps in the numbers).
    deletions: Vec<usize>,
    documents: Vec<ArtifactSpec>,
}

fn conversation() -> impl Strategy<Value = Conversation> {
    let status = prop::sample::select(
        &[MessageStatus::Complete, MessageStatus::Interrupted, MessageStatus::Stopped, MessageStatus::Error][..],
    );
    let message = (any::<bool>(), any_text(), status, 0u32..5000, 0u32..5000, prop::option::of("[a-z0-9-]{1,12}"));
    let document = (
        prop::sample::select(&ArtifactType::ALL[..]),
        "[A-Za-z0-9][A-Za-z0-9 ]{0,20}",
        any_text(),
        prop::option::of(0usize..8),
        prop::option::of(0usize..8),
    );
    (
        "[A-Za-z0-9][A-Za-z0-9 ]{0,30}[A-Za-z0-9]",
        prop::collection::btree_set("[a-z]{1,8}", 0..4),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(message, 0..8),
        prop::collection::vec(0usize..8, 0..3),
        prop::collection::vec(document, 0..4),
    )
        .prop_map(|(title, tags, pinned, archived, messages, deletions, documents)| Conversation {
            title,
            tags: tags.into_iter().collect(),
            pinned,
            archived,
            messages,
            deletions,
            documents,
        })
}

/// (2) Export -> import -> export gives the same conversation but for ids and the export time, on the JSON
/// text itself, for every kind of message, gaps in numbering and document links.
fn export_import_export_is_identity(backend: Backend, test: &str) {
    check_property(backend, test, CASES, conversation(), |db, c| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let t = s.create_thread(u, &c.title, &c.tags).await.unwrap();
        let patch = ThreadPatch { pinned: Some(c.pinned), archived: Some(c.archived), ..Default::default() };
        s.update_thread(u, t.id, &patch).await.unwrap();
        let mut messages = Vec::new();
        for (assistant, text, status, input, output, model) in &c.messages {
            let message = NewMessage {
                thread_id: t.id,
                role: if *assistant { Role::Assistant } else { Role::User },
                content: text.clone(),
                status: *status,
                usage: Usage { input_tokens: u64::from(*input), output_tokens: u64::from(*output) },
                model: model.clone(),
                quote: None,
                author: None,
            };
            messages.push(s.append_message(u, message).await.unwrap().id);
        }
        for (kind, title, content, request, answer) in &c.documents {
            let link = |i: &Option<usize>| i.and_then(|i| messages.get(i).copied());
            let doc = NewArtifact {
                request_message_id: link(request),
                assistant_message_id: link(answer),
                ..new_artifact(t.id, *kind, title, content)
            };
            s.create_artifact(u, doc).await.unwrap();
        }
        for position in &c.deletions {
            if let Some(id) = messages.get(*position).copied() {
                if s.delete_message(u, t.id, id, None).await.is_ok() {
                    messages.retain(|m| *m != id);
                }
            }
        }

        let first = thread_export(s, u, t.id).await.unwrap();
        let text = serde_json::to_string(&first).unwrap();
        let plan = import_plan(text.as_bytes()).expect("an export imports");
        let made = s.import_threads(u, plan).await.unwrap();
        assert_eq!(made.len(), 1);
        assert_ne!(made[0].id, t.id);
        assert_eq!(made[0].message_count, first.messages.len() as i64);
        let second = thread_export(s, u, made[0].id).await.unwrap();
        assert_eq!(comparable(&second), comparable(&first));
        let old_ids: HashSet<Uuid> = first.messages.iter().map(|m| m.id).collect();
        assert!(second.messages.iter().all(|m| !old_ids.contains(&m.id)), "ids are new");
    });
}
