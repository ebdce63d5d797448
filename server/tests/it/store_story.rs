//! One story suite for every storage backend. Each story is an async function over a fresh [`DynStore`]; the
//! `stories!` macro runs it once on SQLite (a temporary file, always) and once on PostgreSQL (a database of its
//! own on the cluster named by `QUIRE_TEST_POSTGRES_URL`). Without that variable the PostgreSQL runs print a
//! "skipped" line and pass; `scripts/with-postgres cargo test -p server --test store_story` provides one.
//!
//! The property tests at the end run the same way: proptest drives a tokio runtime of their own over one fresh
//! store per test, and every case works with users of its own, so cases never see each other's rows.

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    fmt::Debug,
    time::Duration,
};

use app::api::{ArtifactType, Message, MessageStatus, Role, ToolCallStep, Trace, TraceStep, Usage};
use proptest::prelude::*;
use quire::store::{
    self, search_query, CursorKey, DynStore, FinalAnswer, HitKind, MessageUpdate, NewArtifact, NewMessage, NewUser,
    SearchPage, Session, SpentTokens, StoreError, StoredEvent, ThreadCursor, ThreadPatch, ThreadQuery, ThreadSort,
    TurnEnd, TurnTrace,
};
use serde_json::json;
use uuid::Uuid;

use crate::common::backends::{check_property, properties, run_story, stories, Backend, Db, Raw};

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

async fn new_user(store: &DynStore) -> Uuid {
    let email = format!("{}@example.test", Uuid::new_v4().simple());
    store
        .create_user(NewUser { email, password_hash: "hash".into(), display_name: "Tester".into() })
        .await
        .expect("create user")
        .id
}

/// A tool call step as a trace keeps it.
fn tool_step(name: &str, arguments: serde_json::Value, duration_ms: u64) -> TraceStep {
    TraceStep::ToolCall(ToolCallStep {
        name: name.into(),
        arguments,
        result: Some("saved".into()),
        error: None,
        duration_ms,
        started_at: store::now(),
    })
}

/// A trace of a new turn in `thread`, naming `message` as its answer.
fn trace_of(thread: Uuid, message: Option<Uuid>, steps: Vec<TraceStep>) -> Trace {
    Trace { turn_id: Uuid::now_v7(), thread_id: thread, message_id: message, steps }
}

fn tags(names: &[&str]) -> Vec<String> {
    names.iter().map(|t| t.to_string()).collect()
}

fn new_message(thread: Uuid, role: Role, content: &str) -> NewMessage {
    NewMessage {
        thread_id: thread,
        role,
        content: content.to_string(),
        status: MessageStatus::Complete,
        usage: Usage::default(),
        model: None,
    }
}

async fn say(store: &DynStore, user: Uuid, thread: Uuid, content: &str) -> Message {
    store.append_message(user, new_message(thread, Role::User, content)).await.expect("append message")
}

async fn answer(store: &DynStore, user: Uuid, thread: Uuid, content: &str) -> Message {
    store.append_message(user, new_message(thread, Role::Assistant, content)).await.expect("append answer")
}

fn new_artifact(thread: Uuid, title: &str, content: &str) -> NewArtifact {
    NewArtifact {
        thread_id: thread,
        artifact_type: ArtifactType::Custom,
        title: title.to_string(),
        content: content.to_string(),
        request_message_id: None,
        assistant_message_id: None,
        answers: Vec::new(),
    }
}

#[track_caller]
fn assert_not_found<T: Debug>(result: Result<T, StoreError>) {
    assert!(matches!(result, Err(StoreError::NotFound)), "expected NotFound, got {result:?}");
}

#[track_caller]
fn assert_conflict<T: Debug>(result: Result<T, StoreError>) {
    assert!(matches!(result, Err(StoreError::Conflict(_))), "expected Conflict, got {result:?}");
}

/// Every thread of a listing, page by page.
async fn all_threads(store: &DynStore, user: Uuid, query: &ThreadQuery) -> Vec<app::api::Thread> {
    let mut query = query.clone();
    let mut out = Vec::new();
    loop {
        let page = store.list_threads(user, &query).await.expect("list threads");
        out.extend(page.threads);
        match page.next {
            Some(next) => query.cursor = Some(next),
            None => return out,
        }
    }
}

/// The snippet without its `<mark>` tags.
fn unmarked(snippet: &str) -> String {
    snippet.replace("<mark>", "").replace("</mark>", "")
}

/// Hits come best first (lower rank), then newest.
#[track_caller]
fn assert_ordered(page: &SearchPage) {
    for pair in page.hits.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            a.rank < b.rank || (a.rank == b.rank && a.created_at >= b.created_at),
            "hits out of order: {a:?} before {b:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Stories
// ---------------------------------------------------------------------------------------------------------------

stories!(
    users,
    sessions,
    threads,
    other_users_rows_are_not_found,
    messages_in_order,
    messages_between_turns,
    concurrent_appends_take_distinct_numbers,
    delete_message_keeps_the_count_true,
    thread_delete_cascades,
    artifacts,
    documents_answer_earlier_requests,
    traces,
    usage_is_recorded,
    search_phrases_prefixes_and_ranking,
    search_escapes_html,
    search_syntax_never_errors,
    search_sees_only_the_callers_rows,
    search_follows_changes_at_once,
    turns,
    a_turn_ends_in_one_commit,
    message_heads_and_tails,
    progress_of_several_turns_is_saved_together,
    concurrent_turns_take_the_thread_once,
    answers_are_searchable_once_finished,
    answers_cut_off_while_written_become_searchable,
    listing_order_and_cursors,
);

async fn users(db: Db) {
    let s = &db.store;
    let alice = s
        .create_user(NewUser {
            email: "Alice@Example.com".into(),
            password_hash: "argon2-hash".into(),
            display_name: "Alice".into(),
        })
        .await
        .unwrap();
    assert_eq!(alice.email, "Alice@Example.com", "the address is kept as written");
    assert_eq!(alice.display_name, "Alice");

    let duplicate = s
        .create_user(NewUser { email: "alice@EXAMPLE.com".into(), password_hash: "x".into(), display_name: "".into() })
        .await;
    assert_conflict(duplicate);

    for email in ["alice@example.com", "ALICE@EXAMPLE.COM", "Alice@Example.com"] {
        assert_eq!(s.user_by_email(email).await.unwrap(), alice, "{email}");
    }
    assert_eq!(s.user_by_id(alice.id).await.unwrap(), alice);
    assert_not_found(s.user_by_email("bob@example.com").await);
    assert_not_found(s.user_by_id(Uuid::now_v7()).await);

    let bob = s
        .create_user(NewUser { email: "bob@example.com".into(), password_hash: "y".into(), display_name: "Bob".into() })
        .await
        .unwrap();
    assert_ne!(bob.id, alice.id);
    assert_eq!(s.user_by_email("BOB@example.com").await.unwrap(), bob);
}

async fn sessions(db: Db) {
    let s = &db.store;
    let (alice, bob) = (new_user(s).await, new_user(s).await);
    let later = chrono::Utc::now() + chrono::Duration::hours(1);
    let (a1, a2, a3, b1) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    for (id, user) in [(a1, alice), (a2, alice), (a3, alice), (b1, bob)] {
        s.create_session(&Session::new(id, user, later)).await.unwrap();
    }
    let found = s.session(a1).await.unwrap().unwrap();
    assert_eq!((found.id, found.user, found.ended_at), (a1, alice, None));
    assert!(s.session(Uuid::new_v4()).await.unwrap().is_none());

    // The device and network a session signed in from are kept with it.
    let phone = Uuid::new_v4();
    let from_phone = Session {
        device: Some("Firefox on Android".into()),
        ip_prefix: Some("203.0.113.0/24".into()),
        ..Session::new(phone, bob, later)
    };
    s.create_session(&from_phone).await.unwrap();
    let found = s.session(phone).await.unwrap().unwrap();
    assert_eq!(
        (found.device.as_deref(), found.ip_prefix.as_deref()),
        (Some("Firefox on Android"), Some("203.0.113.0/24"))
    );
    assert_eq!(s.session(a2).await.unwrap().unwrap().device, None);
    s.touch_session(phone).await.unwrap();
    let open: Vec<Uuid> = s.open_sessions(bob).await.unwrap().into_iter().map(|session| session.id).collect();
    assert_eq!(open, vec![phone, b1], "the most recently used first, only the owner's");
    assert_ne!(from_phone.public_id(), phone.to_string());
    assert_eq!(from_phone.public_id(), found.public_id(), "the public id is stable");
    assert!(s.end_session(bob, phone).await.unwrap());

    let started = chrono::Utc::now() - chrono::Duration::seconds(1);
    // Another user cannot end the session; its owner can, twice without harm.
    assert!(!s.end_session(bob, a1).await.unwrap());
    assert!(s.session(a1).await.unwrap().unwrap().ended_at.is_none());
    assert!(s.end_session(alice, a1).await.unwrap());
    assert!(!s.end_session(alice, a1).await.unwrap());
    assert!(s.session(a1).await.unwrap().unwrap().ended_at.is_some());
    let mut open: Vec<Uuid> = s.open_sessions(alice).await.unwrap().into_iter().map(|session| session.id).collect();
    open.sort();
    let mut expected = vec![a2, a3];
    expected.sort();
    assert_eq!(open, expected, "ended sessions are not open");

    // A new password ends every other session of its owner, and only those.
    let ended = s.set_password(alice, "new-hash", a2).await.unwrap();
    assert_eq!(ended, vec![a3]);
    assert_eq!(s.user_by_id(alice).await.unwrap().password_hash, "new-hash");
    assert!(s.session(a2).await.unwrap().unwrap().ended_at.is_none());
    assert!(s.session(b1).await.unwrap().unwrap().ended_at.is_none());
    assert_not_found(s.set_password(Uuid::now_v7(), "x", a2).await);

    let mut recently: Vec<Uuid> =
        s.sessions_ended_since(started).await.unwrap().into_iter().map(|(id, _)| id).collect();
    recently.sort();
    let mut expected = vec![a1, a3, phone];
    expected.sort();
    assert_eq!(recently, expected);

    assert_eq!(s.end_sessions(alice, None).await.unwrap(), vec![a2]);
    assert!(s.session(b1).await.unwrap().unwrap().ended_at.is_none());

    // Use moves `last_seen_at` on; sessions past their expiry are purged by the next sign-in.
    let before = s.session(b1).await.unwrap().unwrap().last_seen_at;
    s.touch_session(b1).await.unwrap();
    assert!(s.session(b1).await.unwrap().unwrap().last_seen_at >= before);
    let old = Uuid::new_v4();
    s.create_session(&Session::new(old, bob, chrono::Utc::now() - chrono::Duration::hours(1))).await.unwrap();
    s.create_session(&Session::new(Uuid::new_v4(), bob, later)).await.unwrap();
    assert!(s.session(old).await.unwrap().is_none());
}

async fn threads(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "First plan", &tags(&["work", "q3", "work"])).await.unwrap();
    assert_eq!(t.title, "First plan");
    assert_eq!(t.tags, tags(&["work", "q3"]), "tags keep their order; a repeat keeps its first place");
    assert_eq!((t.message_count, t.pinned, t.archived, t.first_message.clone()), (0, false, false, None));
    assert_eq!(t.created_at, t.updated_at);
    assert_eq!(s.get_thread(u, t.id).await.unwrap(), t);

    let patch = ThreadPatch {
        title: Some("Renamed".into()),
        tags: Some(tags(&["b", "a"])),
        pinned: Some(true),
        ..Default::default()
    };
    let patched = s.update_thread(u, t.id, &patch).await.unwrap();
    assert_eq!((patched.title.as_str(), patched.tags.clone(), patched.pinned), ("Renamed", tags(&["b", "a"]), true));
    assert!(!patched.archived);
    assert_eq!(patched.created_at, t.created_at);
    assert!(patched.updated_at >= t.updated_at);
    assert_eq!(s.get_thread(u, t.id).await.unwrap(), patched);

    let untouched = s.update_thread(u, t.id, &ThreadPatch::default()).await.unwrap();
    assert_eq!(
        (untouched.title, untouched.tags, untouched.pinned),
        (patched.title.clone(), patched.tags.clone(), true)
    );
    let cleared = s.update_thread(u, t.id, &ThreadPatch { tags: Some(vec![]), ..Default::default() }).await.unwrap();
    assert!(cleared.tags.is_empty());

    // The first user message (its first 200 characters) is shown in listings.
    answer(s, u, t.id, "an answer comes first here").await;
    let long = "é".repeat(300);
    say(s, u, t.id, &long).await;
    say(s, u, t.id, "second question").await;
    let shown = s.get_thread(u, t.id).await.unwrap();
    assert_eq!(shown.first_message, Some("é".repeat(200)));
    assert_eq!(shown.message_count, 3);

    // Archived threads only show in the archive.
    let other = s.create_thread(u, "Other", &[]).await.unwrap();
    s.update_thread(u, t.id, &ThreadPatch { archived: Some(true), ..Default::default() }).await.unwrap();
    let active = all_threads(s, u, &ThreadQuery::default()).await;
    assert_eq!(active.iter().map(|t| t.id).collect::<Vec<_>>(), vec![other.id]);
    let archive = all_threads(s, u, &ThreadQuery { archived: true, ..Default::default() }).await;
    assert_eq!(archive.iter().map(|t| t.id).collect::<Vec<_>>(), vec![t.id]);

    s.delete_thread(u, t.id).await.unwrap();
    assert_not_found(s.get_thread(u, t.id).await);
    assert_not_found(s.delete_thread(u, t.id).await);
    assert_not_found(s.update_thread(u, t.id, &ThreadPatch::default()).await);
    assert_eq!(s.get_thread(u, other.id).await.unwrap().id, other.id);
}

async fn other_users_rows_are_not_found(db: Db) {
    let s = &db.store;
    let owner = new_user(s).await;
    let intruder = new_user(s).await;
    let t = s.create_thread(owner, "Secret plan", &tags(&["private"])).await.unwrap();
    let question = say(s, owner, t.id, "secret launch codes").await;
    let reply = answer(s, owner, t.id, "secret answer").await;
    let doc = s.create_artifact(owner, new_artifact(t.id, "Secret doc", "secret content")).await.unwrap();
    let trace = trace_of(t.id, Some(reply.id), vec![tool_step("save_artifact", json!({}), 1)]);
    s.save_trace(owner, &trace).await.unwrap();
    s.begin_turn(owner, t.id, Uuid::now_v7(), 60_000).await.unwrap();
    let own_thread = s.create_thread(intruder, "Mine", &[]).await.unwrap();

    assert_not_found(s.get_thread(intruder, t.id).await);
    assert_not_found(
        s.update_thread(intruder, t.id, &ThreadPatch { title: Some("x".into()), ..Default::default() }).await,
    );
    assert_not_found(s.delete_thread(intruder, t.id).await);
    assert_not_found(s.append_message(intruder, new_message(t.id, Role::User, "hi")).await);
    assert_not_found(s.list_messages(intruder, t.id).await);
    assert_not_found(s.get_message(intruder, question.id).await);
    assert_not_found(s.message_context(intruder, question.id).await);
    let update = MessageUpdate {
        content: "x".into(),
        status: MessageStatus::Complete,
        usage: Usage::default(),
        model: None,
        context: None,
    };
    assert_not_found(s.update_message(intruder, reply.id, &update).await);
    assert_not_found(s.delete_message(intruder, t.id, question.id).await);
    assert_not_found(s.delete_message(intruder, own_thread.id, question.id).await);
    assert_not_found(s.list_artifacts(intruder, t.id).await);
    assert_not_found(s.get_artifact(intruder, doc.id).await);
    assert_not_found(s.delete_artifact(intruder, doc.id).await);
    assert_not_found(s.create_artifact(intruder, new_artifact(t.id, "x", "y")).await);
    let pointing = NewArtifact { request_message_id: Some(question.id), ..new_artifact(own_thread.id, "x", "y") };
    assert_not_found(s.create_artifact(intruder, pointing).await);
    assert_not_found(s.link_artifacts(intruder, &[doc.id], reply.id).await);
    assert_not_found(s.save_trace(intruder, &trace_of(t.id, None, Vec::new())).await);
    assert_not_found(s.save_trace(intruder, &Trace { thread_id: own_thread.id, ..trace.clone() }).await);
    assert_not_found(s.trace(intruder, reply.id).await);
    assert_not_found(s.turn_trace(intruder, trace.turn_id).await);
    assert_not_found(s.thread_traces(intruder, t.id).await);
    assert_eq!(s.trace(owner, reply.id).await.unwrap(), trace, "the owner's trace is untouched");
    assert_not_found(s.begin_turn(intruder, t.id, Uuid::now_v7(), 0).await);
    assert!(!s.request_stop(intruder, t.id).await.unwrap());
    assert_eq!(s.latest_turn(intruder, t.id).await.unwrap(), None);
    let found = s.search(intruder, "secret", 50, 0).await.unwrap();
    assert_eq!((found.total, found.hits.len()), (0, 0));
    let listed = all_threads(s, intruder, &ThreadQuery::default()).await;
    assert_eq!(listed.iter().map(|t| t.id).collect::<Vec<_>>(), vec![own_thread.id]);
    let tagged = all_threads(s, intruder, &ThreadQuery { tags: tags(&["private"]), ..Default::default() }).await;
    assert!(tagged.is_empty());

    // The intruder's own ids in the owner's calls are just as missing.
    assert_not_found(s.link_artifacts(owner, &[doc.id], Uuid::now_v7()).await);
    let other_doc = s.create_artifact(intruder, new_artifact(own_thread.id, "theirs", "z")).await.unwrap();
    s.link_artifacts(owner, &[doc.id, other_doc.id], reply.id).await.unwrap();
    assert_eq!(s.get_artifact(intruder, other_doc.id).await.unwrap().assistant_message_id, None);
    assert_eq!(s.get_artifact(owner, doc.id).await.unwrap().assistant_message_id, Some(reply.id));

    // Missing ids behave the same, and an empty thread of one's own is simply empty.
    assert_not_found(s.list_messages(owner, Uuid::now_v7()).await);
    assert_not_found(s.list_artifacts(owner, Uuid::now_v7()).await);
    assert!(s.list_messages(intruder, own_thread.id).await.unwrap().is_empty());
    assert_eq!(s.list_artifacts(intruder, own_thread.id).await.unwrap().len(), 1);

    // Nothing of the owner's changed.
    let kept = s.get_thread(owner, t.id).await.unwrap();
    assert_eq!((kept.title.as_str(), kept.message_count), ("Secret plan", 2));
    assert_eq!(s.list_messages(owner, t.id).await.unwrap().len(), 2);
    assert_eq!(s.list_artifacts(owner, t.id).await.unwrap().len(), 1);
    assert!(s.latest_turn(owner, t.id).await.unwrap().is_some_and(|turn| turn.running && !turn.stop_requested));
}

async fn messages_in_order(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Order", &[]).await.unwrap();
    let mut appended = Vec::new();
    for i in 1..=6 {
        let role = if i % 2 == 1 { Role::User } else { Role::Assistant };
        let m = s.append_message(u, new_message(t.id, role, &format!("message {i}"))).await.unwrap();
        assert_eq!(m.seq, i);
        appended.push(m);
    }
    let listed = s.list_messages(u, t.id).await.unwrap();
    assert_eq!(listed, appended);
    assert_eq!(s.get_message(u, appended[2].id).await.unwrap(), appended[2]);

    let reply = appended[1].id;
    let context = json!({ "documents": [1, 2], "note": "kept" });
    let update = MessageUpdate {
        content: "final text".into(),
        status: MessageStatus::Stopped,
        usage: Usage { input_tokens: 3, output_tokens: 4 },
        model: Some("model-x".into()),
        context: Some(context.clone()),
    };
    s.update_message(u, reply, &update).await.unwrap();
    let updated = s.get_message(u, reply).await.unwrap();
    assert_eq!(updated.content, "final text");
    assert_eq!(updated.status, MessageStatus::Stopped);
    assert_eq!((updated.input_tokens, updated.output_tokens), (3, 4));
    assert_eq!(updated.model.as_deref(), Some("model-x"));
    assert_eq!(updated.seq, 2);
    assert_eq!(s.message_context(u, reply).await.unwrap(), Some(context.clone()));
    assert_eq!(s.message_context(u, appended[0].id).await.unwrap(), None);

    // Streaming progress without model or context leaves both as they were.
    let progress =
        MessageUpdate { content: "more".into(), status: MessageStatus::Complete, model: None, context: None, ..update };
    s.update_message(u, reply, &progress).await.unwrap();
    assert_eq!(s.get_message(u, reply).await.unwrap().model.as_deref(), Some("model-x"));
    assert_eq!(s.message_context(u, reply).await.unwrap(), Some(context));
    assert_not_found(s.update_message(u, Uuid::now_v7(), &progress).await);

    let thread = s.get_thread(u, t.id).await.unwrap();
    assert_eq!(thread.message_count, 6);
    assert!(thread.updated_at >= thread.created_at);
}

/// A message added between turns takes the next number and is counted; while a live turn holds the thread it
/// is refused, and a turn whose heartbeat went quiet holds nothing.
async fn messages_between_turns(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Notes", &[]).await.unwrap();
    let note = |text: &str| new_message(t.id, Role::User, text);
    let first = s.append_message_between_turns(u, note("A note before anything"), 60_000).await.unwrap();
    assert_eq!((first.seq, first.role, first.content.as_str()), (1, Role::User, "A note before anything"));

    let turn = Uuid::now_v7();
    s.begin_turn(u, t.id, turn, 60_000).await.unwrap();
    assert_conflict(s.append_message_between_turns(u, note("While an answer is written"), 60_000).await);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let late = s.append_message_between_turns(u, note("After it went quiet"), 10).await.unwrap();
    assert_eq!(late.seq, 2);
    s.finish_turn(turn, TurnEnd::default()).await.unwrap();
    let after = s.append_message_between_turns(u, note("After the turn"), 60_000).await.unwrap();
    assert_eq!(after.seq, 3);
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 3);
    assert_eq!(s.list_messages(u, t.id).await.unwrap(), vec![first, late, after]);

    let intruder = new_user(s).await;
    assert_not_found(s.append_message_between_turns(intruder, note("Not mine"), 60_000).await);
    assert_not_found(s.append_message_between_turns(u, new_message(Uuid::now_v7(), Role::User, "x"), 60_000).await);
}

async fn concurrent_appends_take_distinct_numbers(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Busy", &[]).await.unwrap();
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = s.clone();
            tokio::spawn(async move { say(&store, u, t.id, &format!("parallel {i}")).await.seq })
        })
        .collect();
    let mut seqs = BTreeSet::new();
    for task in tasks {
        assert!(seqs.insert(task.await.unwrap()), "a sequence number was taken twice");
    }
    assert_eq!(seqs, (1..=20).collect::<BTreeSet<i64>>());
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 20);
    let listed: Vec<i64> = s.list_messages(u, t.id).await.unwrap().iter().map(|m| m.seq).collect();
    assert_eq!(listed, (1..=20).collect::<Vec<i64>>());
}

async fn delete_message_keeps_the_count_true(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Edits", &[]).await.unwrap();
    let other = s.create_thread(u, "Elsewhere", &[]).await.unwrap();
    let mut ids = Vec::new();
    for i in 1..=5 {
        ids.push(say(s, u, t.id, &format!("line {i}")).await.id);
    }
    let doc = NewArtifact { request_message_id: Some(ids[1]), ..new_artifact(t.id, "Doc", "text") };
    let doc = s.create_artifact(u, doc).await.unwrap();

    s.delete_message(u, t.id, ids[1]).await.unwrap();
    s.delete_message(u, t.id, ids[3]).await.unwrap();
    assert_not_found(s.delete_message(u, t.id, ids[1]).await);
    assert_not_found(s.delete_message(u, other.id, ids[0]).await);
    assert_not_found(s.get_message(u, ids[1]).await);

    let seqs: Vec<i64> = s.list_messages(u, t.id).await.unwrap().iter().map(|m| m.seq).collect();
    assert_eq!(seqs, vec![1, 3, 5]);
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 3);
    assert_eq!(s.get_artifact(u, doc.id).await.unwrap().request_message_id, None, "the link is cleared, not the doc");

    // Numbers are never reused.
    assert_eq!(say(s, u, t.id, "after").await.seq, 6);
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 4);
    assert_eq!(s.get_thread(u, other.id).await.unwrap().message_count, 0);
}

async fn thread_delete_cascades(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Doomed zebra", &tags(&["a", "b"])).await.unwrap();
    let keep = s.create_thread(u, "Survivor zebra", &tags(&["a"])).await.unwrap();
    let question = say(s, u, t.id, "zebra question").await;
    let reply = answer(s, u, t.id, "zebra answer").await;
    say(s, u, keep.id, "zebra elsewhere").await;
    let trace = trace_of(t.id, Some(reply.id), vec![tool_step("document_search", json!({"query": "zebra"}), 5)]);
    s.save_trace(u, &trace).await.unwrap();
    let doc = NewArtifact {
        request_message_id: Some(question.id),
        assistant_message_id: Some(reply.id),
        ..new_artifact(t.id, "Zebra doc", "stripes")
    };
    let doc = s.create_artifact(u, doc).await.unwrap();
    let turn = Uuid::now_v7();
    s.begin_turn(u, t.id, turn, 60_000).await.unwrap();
    let events = vec![StoredEvent { seq: 1, name: "delta".into(), data: "{}".into() }];
    s.append_turn_events(turn, &events).await.unwrap();
    s.record_usage(u, t.id, "m", Usage { input_tokens: 1, output_tokens: 1 }).await.unwrap();
    let before = s.search(u, "zebra", 100, 0).await.unwrap();
    assert_eq!(before.total, 6, "{before:?}");

    s.delete_thread(u, t.id).await.unwrap();

    let raw = &db.raw;
    assert_eq!(raw.count("threads", "id", t.id).await, 0);
    assert_eq!(raw.count("messages", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("thread_tags", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("artifacts", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("artifact_versions", "artifact_id", doc.id).await, 0);
    assert_eq!(raw.count("turn_traces", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("turns", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("turn_events", "turn_id", turn).await, 0);
    assert_eq!(s.turn_events_after(turn, 0).await.unwrap(), vec![]);

    // The search index forgot it too: `total` counts index entries, so a leftover would show there.
    let after = s.search(u, "zebra", 100, 0).await.unwrap();
    assert_eq!(after.total, 2, "{after:?}");
    assert!(after.hits.iter().all(|h| h.thread_id == keep.id));
    assert_eq!(s.search(u, "stripes", 10, 0).await.unwrap().total, 0);

    // The other thread is whole.
    assert_eq!(raw.count("thread_tags", "thread_id", keep.id).await, 1);
    assert_eq!(s.list_messages(u, keep.id).await.unwrap().len(), 1);
}

async fn artifacts(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Docs", &[]).await.unwrap();
    let question = say(s, u, t.id, "write the stories").await;
    let mut created = Vec::new();
    for (i, kind) in ArtifactType::ALL.into_iter().enumerate() {
        let doc = NewArtifact {
            artifact_type: kind,
            request_message_id: (i == 0).then_some(question.id),
            ..new_artifact(t.id, &format!("Doc {i}"), &format!("# Heading {i}\n\nbody"))
        };
        let doc = s.create_artifact(u, doc).await.unwrap();
        assert_eq!((doc.version, doc.artifact_type, doc.assistant_message_id), (1, kind, None));
        created.push(doc);
    }
    assert_eq!(created[0].request_message_id, Some(question.id));
    assert_eq!(s.list_artifacts(u, t.id).await.unwrap(), created, "oldest first, every type round-trips");
    assert_eq!(s.get_artifact(u, created[2].id).await.unwrap(), created[2]);
    assert_eq!(db.raw.count("artifact_versions", "artifact_id", created[0].id).await, 1);

    let reply = answer(s, u, t.id, "here they are").await;
    s.link_artifacts(u, &[created[0].id, created[1].id], reply.id).await.unwrap();
    s.link_artifacts(u, &[], reply.id).await.unwrap();
    let listed = s.list_artifacts(u, t.id).await.unwrap();
    assert_eq!(listed[0].assistant_message_id, Some(reply.id));
    assert_eq!(listed[1].assistant_message_id, Some(reply.id));
    assert_eq!(listed[2].assistant_message_id, None);

    // The requests the model no longer sees: the one a document was made from and the one that revised another.
    assert_eq!(s.fulfilled_requests(u, t.id).await.unwrap(), vec![question.id]);
    let change = say(s, u, t.id, "shorten doc 1").await;
    let revision = store::ArtifactRevision {
        title: "Doc 1".into(),
        content: "shorter".into(),
        request_message_id: Some(change.id),
        answers: Vec::new(),
    };
    s.revise_artifact(u, created[1].id, revision).await.unwrap();
    let mut fulfilled = s.fulfilled_requests(u, t.id).await.unwrap();
    fulfilled.sort();
    assert_eq!(fulfilled, vec![question.id, change.id]);
    assert!(s.fulfilled_requests(new_user(s).await, t.id).await.unwrap().is_empty(), "another user sees none");

    s.delete_artifact(u, created[0].id).await.unwrap();
    assert_eq!(s.fulfilled_requests(u, t.id).await.unwrap(), vec![change.id], "a deleted document frees its request");
    assert_not_found(s.get_artifact(u, created[0].id).await);
    assert_not_found(s.delete_artifact(u, created[0].id).await);
    assert_eq!(s.list_artifacts(u, t.id).await.unwrap().len(), created.len() - 1);
    assert_eq!(db.raw.count("artifact_versions", "artifact_id", created[0].id).await, 0);

    // A deleted answer unlinks its documents instead of taking them along.
    s.delete_message(u, t.id, reply.id).await.unwrap();
    assert_eq!(s.get_artifact(u, created[1].id).await.unwrap().assistant_message_id, None);
    assert_not_found(s.create_artifact(u, new_artifact(Uuid::now_v7(), "x", "y")).await);
}

/// The requests fulfilled in a thread, sorted.
async fn fulfilled(store: &DynStore, user: Uuid, thread: Uuid) -> Vec<Uuid> {
    let mut ids = store.fulfilled_requests(user, thread).await.unwrap();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<Uuid>) -> Vec<Uuid> {
    ids.sort();
    ids
}

/// A document answers earlier requests besides its own turn's, when it is made and when it is revised: they
/// count as fulfilled until it is deleted. Answers, and messages of another thread or person, are ignored.
async fn documents_answer_earlier_requests(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Answers", &[]).await.unwrap();
    let failed = say(s, u, t.id, "Generate a BRD").await;
    let apology = answer(s, u, t.id, "Something went wrong.").await;
    let later = say(s, u, t.id, "Generate a BRD, please").await;
    let other_thread = s.create_thread(u, "Other", &[]).await.unwrap();
    let elsewhere = say(s, u, other_thread.id, "Generate a BRD").await;
    let intruder = new_user(s).await;
    let their_thread = s.create_thread(intruder, "Theirs", &[]).await.unwrap();
    let theirs = say(s, intruder, their_thread.id, "Generate a BRD").await;

    let doc = NewArtifact {
        artifact_type: ArtifactType::BusinessRequirements,
        request_message_id: Some(later.id),
        answers: vec![failed.id, apology.id, elsewhere.id, theirs.id],
        ..new_artifact(t.id, "BRD", "# BRD")
    };
    let doc = s.create_artifact(u, doc).await.unwrap();
    assert_eq!(fulfilled(s, u, t.id).await, sorted(vec![failed.id, later.id]));
    assert_eq!(db.raw.count("artifact_requests", "artifact_id", doc.id).await, 1, "only the request of its thread");
    assert!(s.fulfilled_requests(u, other_thread.id).await.unwrap().is_empty());
    assert!(s.fulfilled_requests(intruder, their_thread.id).await.unwrap().is_empty());

    // A version answers the requests it is given too; one answered already is kept once.
    let again = say(s, u, t.id, "Write the BRD again").await;
    let revision = store::ArtifactRevision {
        title: "BRD".into(),
        content: "# BRD, second".into(),
        request_message_id: None,
        answers: vec![again.id, failed.id],
    };
    assert_eq!(s.revise_artifact(u, doc.id, revision).await.unwrap().version, 2);
    assert_eq!(fulfilled(s, u, t.id).await, sorted(vec![failed.id, later.id, again.id]));
    assert_eq!(db.raw.count("artifact_requests", "artifact_id", doc.id).await, 2);

    // Deleting a request it answers leaves the rest; deleting the document brings every one back.
    s.delete_message(u, t.id, again.id).await.unwrap();
    assert_eq!(db.raw.count("artifact_requests", "artifact_id", doc.id).await, 1);
    s.delete_artifact(u, doc.id).await.unwrap();
    assert!(s.fulfilled_requests(u, t.id).await.unwrap().is_empty(), "every request is open again");
    assert_eq!(db.raw.count("artifact_requests", "artifact_id", doc.id).await, 0);
}

async fn traces(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Traced", &[]).await.unwrap();
    let other = s.create_thread(u, "Elsewhere", &[]).await.unwrap();
    let reply = answer(s, u, t.id, "done").await;
    let quiet = answer(s, u, t.id, "no tools").await;
    let failed_call = TraceStep::ModelCall(app::api::ModelCall {
        purpose: app::api::CallPurpose::Answer,
        provider: "openai".into(),
        model: "gpt-test".into(),
        input_tokens: 0,
        output_tokens: 0,
        first_token_ms: None,
        duration_ms: 0,
        stop_reason: None,
        error: Some(app::api::StepError { code: "rate_limited".into(), message: "Too many requests.".into() }),
        started_at: store::now(),
    });
    let steps = vec![
        tool_step("save_artifact", json!({ "title": "Stories", "nested": { "n": [1, 2.5, null, "x"] } }), 12),
        failed_call,
        tool_step("document_search", json!({ "query": "q" }), 30),
    ];
    let answered = trace_of(t.id, Some(reply.id), steps.clone());
    s.save_trace(u, &answered).await.unwrap();
    assert_eq!(s.trace(u, reply.id).await.unwrap(), answered);
    assert_eq!(s.turn_trace(u, answered.turn_id).await.unwrap(), answered);
    assert_not_found(s.trace(u, quiet.id).await);

    // A turn that kept no answer has a trace all the same, found by the turn.
    let silent = trace_of(t.id, None, steps[..1].to_vec());
    s.save_trace(u, &silent).await.unwrap();
    assert_eq!(s.turn_trace(u, silent.turn_id).await.unwrap(), silent);
    assert_eq!(s.thread_traces(u, t.id).await.unwrap(), vec![answered.clone(), silent.clone()], "oldest first");
    assert_eq!(s.thread_traces(u, other.id).await.unwrap(), vec![]);

    // Saving again under the same turn replaces the whole trace.
    let shorter = Trace { steps: steps[2..].to_vec(), ..answered.clone() };
    s.save_trace(u, &shorter).await.unwrap();
    assert_eq!(s.trace(u, reply.id).await.unwrap(), shorter);
    // An answer of another thread, a missing thread: refused.
    assert_not_found(s.save_trace(u, &trace_of(other.id, Some(reply.id), steps.clone())).await);
    assert_not_found(s.save_trace(u, &trace_of(Uuid::now_v7(), None, steps.clone())).await);
    assert_not_found(s.trace(u, Uuid::now_v7()).await);
    assert_not_found(s.turn_trace(u, Uuid::now_v7()).await);

    // Deleting the answer deletes its trace.
    s.delete_message(u, t.id, reply.id).await.unwrap();
    assert_not_found(s.turn_trace(u, answered.turn_id).await);
}

async fn usage_is_recorded(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let other = new_user(s).await;
    let t = s.create_thread(u, "Costly", &[]).await.unwrap();
    s.record_usage(u, t.id, "model-a", Usage { input_tokens: 10, output_tokens: 5 }).await.unwrap();
    s.record_usage(u, t.id, "model-a", Usage { input_tokens: 10, output_tokens: 5 }).await.unwrap();
    s.record_usage(u, t.id, "model-b", Usage { input_tokens: 1, output_tokens: 2 }).await.unwrap();
    // Someone else's tokens never land on this thread.
    s.record_usage(other, t.id, "model-a", Usage { input_tokens: 100, output_tokens: 100 }).await.unwrap();

    let raw = &db.raw;
    assert_eq!(raw.int("select input_tokens from threads where id = ?", t.id).await, 21);
    assert_eq!(raw.int("select output_tokens from threads where id = ?", t.id).await, 12);
    let ledger = |column: &str, model: &str| {
        format!("select cast(coalesce(sum({column}), 0) as bigint) from usage_ledger where user_id = ? and model = '{model}'")
    };
    assert_eq!(raw.int(&ledger("input_tokens", "model-a"), u).await, 20);
    assert_eq!(raw.int(&ledger("output_tokens", "model-a"), u).await, 10);
    assert_eq!(raw.int(&ledger("input_tokens", "model-b"), u).await, 1);
    assert_eq!(raw.count("usage_ledger", "user_id", u).await, 2, "one row per day and model");
}

async fn search_phrases_prefixes_and_ranking(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Roadmap", &[]).await.unwrap();
    let phrase = say(s, u, t.id, "We should support single sign on for the login page").await;
    let scattered = say(s, u, t.id, "sign the single page on login").await;
    let prefixed = say(s, u, t.id, "authentication with authorization tokens").await;
    let dense = answer(s, u, t.id, "rust rust rust is fast").await;
    let sparse = say(
        s,
        u,
        t.id,
        "rust appears once in this much longer message about many other unrelated topics like gardening cooking and travel",
    )
    .await;
    let doc = s.create_artifact(u, new_artifact(t.id, "Quarterly budget", "numbers inside")).await.unwrap();

    let found = s.search(u, r#""single sign on""#, 20, 0).await.unwrap();
    assert_eq!(found.total, 1, "{found:?}");
    let hit = &found.hits[0];
    assert_eq!((hit.kind, hit.message_id, hit.artifact_id), (HitKind::Message, Some(phrase.id), None));
    assert_eq!((hit.thread_id, hit.thread_title.as_str(), hit.role), (t.id, "Roadmap", Some(Role::User)));
    assert!(hit.snippet.contains("<mark>"), "{}", hit.snippet);
    assert!(unmarked(&hit.snippet).contains("single sign on"), "{}", hit.snippet);
    assert_eq!(hit.created_at, phrase.created_at);

    let words = s.search(u, "single sign", 20, 0).await.unwrap();
    let ids: HashSet<_> = words.hits.iter().filter_map(|h| h.message_id).collect();
    assert_eq!(ids, HashSet::from([phrase.id, scattered.id]));

    let prefix = s.search(u, "auth*", 20, 0).await.unwrap();
    assert_eq!(prefix.hits.iter().filter_map(|h| h.message_id).collect::<Vec<_>>(), vec![prefixed.id]);
    assert!(prefix.hits[0].snippet.contains("<mark>"), "{}", prefix.hits[0].snippet);
    assert_eq!(s.search(u, "authen", 20, 0).await.unwrap().total, 0, "a word without * is a whole word");

    // More occurrences in a shorter text rank first, whatever the insertion order.
    let ranked = s.search(u, "RUST", 20, 0).await.unwrap();
    assert_eq!(ranked.hits.iter().filter_map(|h| h.message_id).collect::<Vec<_>>(), vec![dense.id, sparse.id]);
    assert_eq!(ranked.hits[0].role, Some(Role::Assistant));
    assert_ordered(&ranked);
    let first = s.search(u, "rust", 1, 0).await.unwrap();
    let second = s.search(u, "rust", 1, 1).await.unwrap();
    assert_eq!((first.total, second.total), (2, 2));
    assert_eq!(first.hits[0].message_id, Some(dense.id));
    assert_eq!(second.hits[0].message_id, Some(sparse.id));
    let past_the_end = s.search(u, "rust", 10, 2).await.unwrap();
    assert!(past_the_end.hits.is_empty());
    assert_eq!(past_the_end.total, 2, "a page past the end still tells how many there are");

    let title = s.search(u, "roadmap", 20, 0).await.unwrap();
    assert_eq!(title.total, 1);
    assert_eq!((title.hits[0].kind, title.hits[0].message_id, title.hits[0].role), (HitKind::Thread, None, None));
    assert_eq!(title.hits[0].thread_id, t.id);
    assert_eq!(title.hits[0].snippet, "<mark>Roadmap</mark>");

    // A document matches on its title and content together.
    let across = s.search(u, "quarterly numbers", 20, 0).await.unwrap();
    assert_eq!(across.total, 1);
    assert_eq!((across.hits[0].kind, across.hits[0].artifact_id), (HitKind::Artifact, Some(doc.id)));
    assert_eq!(across.hits[0].thread_title, "Roadmap");

    for nothing in ["", "   ", "*", "\"\""] {
        let page = s.search(u, nothing, 20, 0).await.unwrap();
        assert_eq!((page.total, page.hits.len()), (0, 0), "{nothing:?}");
    }
}

async fn search_escapes_html(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Markup", &[]).await.unwrap();
    say(s, u, t.id, "<script>alert('x')</script> if a < b && c > \"d\" then needle").await;
    say(s, u, t.id, "sentinel \u{2}needle\u{3} \u{3} characters \u{2} in stored text").await;
    let page = s.search(u, "needle", 10, 0).await.unwrap();
    assert_eq!(page.total, 2);
    for hit in &page.hits {
        let snippet = &hit.snippet;
        assert!(snippet.contains("<mark>needle</mark>"), "{snippet}");
        assert_eq!(snippet.matches("<mark>").count(), snippet.matches("</mark>").count(), "{snippet}");
        let text = unmarked(snippet);
        assert!(!text.contains(['<', '>', '"', '\'', '\u{2}', '\u{3}']), "unescaped markup in {snippet}");
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|e| entity.starts_with(e)),
                "bare & in {snippet}"
            );
        }
    }
}

async fn search_syntax_never_errors(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Syntax (test) \"quoted\"", &[]).await.unwrap();
    say(s, u, t.id, "plain words, e-mail and C++ with 日本語 and a crab 🦀 plus x:y and a*b").await;
    let long_word = "a".repeat(3000);
    let many_words = "word ".repeat(100);
    let queries = [
        "\"",
        "\"\"",
        "*",
        "**",
        "(",
        ")",
        "()",
        "AND",
        "OR NOT",
        "NEAR(plain words)",
        "plain:words",
        "^plain",
        "-plain",
        "+plain",
        "'",
        "''",
        "\\",
        "\\'",
        "'; drop table users; --",
        "& | ! <->",
        ":*",
        "plain*words",
        "\"unterminated plain",
        "{}",
        "[]",
        "\0",
        "plain\0words",
        "e-mail",
        "C++",
        "日本語",
        "🦀",
        "x:y",
        "a*b",
        "body : plain",
        "owner : u1",
        "!plain",
        "plain & words",
        "plain | words",
        "plain <-> words",
        "plain:*",
        "'plain'",
        "$1",
        "?",
        "%",
        "_",
        long_word.as_str(),
        many_words.as_str(),
        "\u{2}\u{3}",
        "ÄÖÜ",
        "\t\n",
    ];
    for query in queries {
        let page = s.search(u, query, 10, 0).await.unwrap_or_else(|e| panic!("{query:?}: {e}"));
        assert!(page.total as usize >= page.hits.len(), "{query:?}");
        let terms = search_query::parse(query);
        for hit in &page.hits {
            let source = match hit.kind {
                HitKind::Message => s.get_message(u, hit.message_id.unwrap()).await.unwrap().content,
                HitKind::Thread => s.get_thread(u, hit.thread_id).await.unwrap().title,
                HitKind::Artifact => unreachable!("no documents here"),
            };
            assert!(search_query::matches(&terms, &source), "{query:?} matched {source:?}");
        }
    }
    // The phrase a hyphenated word becomes is found in both backends.
    assert_eq!(s.search(u, "e-mail", 10, 0).await.unwrap().total, 1);
    assert_eq!(s.search(u, "plain* words", 10, 0).await.unwrap().total, 1);
}

async fn search_sees_only_the_callers_rows(db: Db) {
    let s = &db.store;
    let mut owned: HashMap<Uuid, HashSet<Uuid>> = HashMap::new();
    let mut users = Vec::new();
    for n in 0..3 {
        let u = new_user(s).await;
        users.push(u);
        for i in 0..=n {
            let t = s.create_thread(u, &format!("shared topic {i}"), &[]).await.unwrap();
            say(s, u, t.id, "shared words about the shared topic").await;
            s.create_artifact(u, new_artifact(t.id, "shared doc", "shared body")).await.unwrap();
            owned.entry(u).or_default().insert(t.id);
        }
    }
    for (n, u) in users.iter().enumerate() {
        let page = s.search(*u, "shared", 100, 0).await.unwrap();
        assert_eq!(page.total as usize, 3 * (n + 1), "three hits per thread of one's own");
        assert_eq!(page.hits.len(), 3 * (n + 1));
        assert!(page.hits.iter().all(|h| owned[u].contains(&h.thread_id)));
        assert_ordered(&page);
    }
}

async fn search_follows_changes_at_once(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Fresh", &[]).await.unwrap();
    let m = answer(s, u, t.id, "brandnew").await;
    let page = s.search(u, "brandnew", 10, 0).await.unwrap();
    assert_eq!(page.hits.iter().map(|h| h.message_id).collect::<Vec<_>>(), vec![Some(m.id)]);

    let update = MessageUpdate {
        content: "rewritten entirely".into(),
        status: MessageStatus::Complete,
        usage: Usage::default(),
        model: None,
        context: None,
    };
    s.update_message(u, m.id, &update).await.unwrap();
    assert_eq!(s.search(u, "brandnew", 10, 0).await.unwrap().total, 0);
    assert_eq!(s.search(u, "rewritten", 10, 0).await.unwrap().total, 1);

    s.update_thread(u, t.id, &ThreadPatch { title: Some("Renamed heading".into()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(s.search(u, "fresh", 10, 0).await.unwrap().total, 0);
    let renamed = s.search(u, "heading", 10, 0).await.unwrap();
    assert_eq!(renamed.hits.iter().map(|h| (h.kind, h.thread_id)).collect::<Vec<_>>(), vec![(HitKind::Thread, t.id)]);
    assert_eq!(s.search(u, "rewritten", 10, 0).await.unwrap().hits[0].thread_title, "Renamed heading");

    let doc = s.create_artifact(u, new_artifact(t.id, "Spec", "instantly findable")).await.unwrap();
    assert_eq!(s.search(u, "findable", 10, 0).await.unwrap().hits[0].artifact_id, Some(doc.id));
    s.delete_artifact(u, doc.id).await.unwrap();
    assert_eq!(s.search(u, "findable", 10, 0).await.unwrap().total, 0);

    s.delete_message(u, t.id, m.id).await.unwrap();
    assert_eq!(s.search(u, "rewritten", 10, 0).await.unwrap().total, 0);
}

async fn turns(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Turns", &[]).await.unwrap();
    assert_eq!(s.latest_turn(u, t.id).await.unwrap(), None);
    assert!(!s.request_stop(u, t.id).await.unwrap(), "nothing is running");

    let first = Uuid::now_v7();
    s.begin_turn(u, t.id, first, 60_000).await.unwrap();
    let latest = s.latest_turn(u, t.id).await.unwrap().unwrap();
    assert_eq!((latest.id, latest.thread_id, latest.running, latest.stop_requested), (first, t.id, true, false));
    assert_conflict(s.begin_turn(u, t.id, Uuid::now_v7(), 60_000).await);
    assert_conflict(s.begin_turn(u, t.id, first, 60_000).await);

    // A refused turn saves nothing of its message.
    let refused =
        s.begin_turn_with(u, t.id, Uuid::now_v7(), 60_000, Some(new_message(t.id, Role::User, "again?"))).await;
    assert_conflict(refused);
    assert!(s.list_messages(u, t.id).await.unwrap().is_empty());

    // Another thread is not held by it; its turn starts with the person's message, saved in the same step.
    let other = s.create_thread(u, "Parallel", &[]).await.unwrap();
    let request = new_message(other.id, Role::User, "Start here");
    let saved = s.begin_turn_with(u, other.id, Uuid::now_v7(), 60_000, Some(request)).await.unwrap().unwrap();
    assert_eq!((saved.seq, saved.role, saved.content.as_str()), (1, Role::User, "Start here"));
    assert_eq!(s.list_messages(u, other.id).await.unwrap(), vec![saved]);
    assert_eq!(s.get_thread(u, other.id).await.unwrap().message_count, 1);

    assert_eq!(s.heartbeat_turns(&[first]).await.unwrap(), Vec::<Uuid>::new());
    let beat = s.latest_turn(u, t.id).await.unwrap().unwrap().heartbeat_at;
    assert!(beat >= latest.heartbeat_at);
    assert!(s.request_stop(u, t.id).await.unwrap());
    let unknown = Uuid::now_v7();
    assert_eq!(s.heartbeat_turns(&[unknown, first]).await.unwrap(), vec![first], "the heartbeat sees the stop request");
    assert!(s.latest_turn(u, t.id).await.unwrap().unwrap().stop_requested);
    assert_eq!(s.heartbeat_turns(&[unknown]).await.unwrap(), Vec::<Uuid>::new());
    assert_eq!(s.heartbeat_turns(&[]).await.unwrap(), Vec::<Uuid>::new());

    let event = |seq: i64, name: &str, data: &str| StoredEvent { seq, name: name.into(), data: data.into() };
    s.append_turn_events(first, &[event(1, "start", "{}"), event(2, "delta", "a"), event(3, "delta", "b")])
        .await
        .unwrap();
    // A repeated number keeps the first event; the batch goes on.
    s.append_turn_events(first, &[event(3, "delta", "replaced?"), event(4, "done", "{}")]).await.unwrap();
    s.append_turn_events(first, &[]).await.unwrap();
    let all = s.turn_events_after(first, 0).await.unwrap();
    assert_eq!(
        all,
        vec![event(1, "start", "{}"), event(2, "delta", "a"), event(3, "delta", "b"), event(4, "done", "{}")]
    );
    assert_eq!(s.turn_events_after(first, 2).await.unwrap(), all[2..].to_vec());
    // Stored as given, whatever the text holds.
    let odd = event(9, "text_delta", "{\"text\":\"a \\\"quoted\\\" line\\nnext — ✓ \\u0000 ' ; --\"}");
    s.append_turn_events(first, std::slice::from_ref(&odd)).await.unwrap();
    assert_eq!(s.turn_events_after(first, 4).await.unwrap(), vec![odd.clone()]);
    let all = [all, vec![odd]].concat();
    assert!(s.turn_events_after(first, 9).await.unwrap().is_empty());
    assert!(s.turn_events_after(Uuid::now_v7(), 0).await.unwrap().is_empty());

    s.finish_turn(first, TurnEnd::default()).await.unwrap();
    assert!(!s.latest_turn(u, t.id).await.unwrap().unwrap().running);
    assert!(!s.request_stop(u, t.id).await.unwrap());

    // The next turn takes over; once it ends, only its events are kept.
    let second = Uuid::now_v7();
    s.begin_turn(u, t.id, second, 60_000).await.unwrap();
    assert_eq!(s.turn_events_after(first, 0).await.unwrap(), all, "dropped when the next turn ends");
    let latest = s.latest_turn(u, t.id).await.unwrap().unwrap();
    assert_eq!((latest.id, latest.running, latest.stop_requested), (second, true, false));

    // A turn whose heartbeat went quiet is taken over; a live one is not.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let third = Uuid::now_v7();
    assert_conflict(s.begin_turn(u, t.id, third, 60_000).await);
    s.begin_turn(u, t.id, third, 10).await.unwrap();
    assert_eq!(s.latest_turn(u, t.id).await.unwrap().unwrap().id, third);
    assert_eq!(
        s.heartbeat_turns(&[second, third]).await.unwrap(),
        Vec::<Uuid>::new(),
        "the dead turn still answers heartbeats"
    );
    assert_conflict(s.begin_turn(u, t.id, Uuid::now_v7(), 60_000).await);
    assert_not_found(s.begin_turn(u, Uuid::now_v7(), Uuid::now_v7(), 0).await);
    s.append_turn_events(second, &[event(1, "start", "{}")]).await.unwrap();
    s.finish_turn(third, TurnEnd { events: vec![event(1, "done", "{}")], ..TurnEnd::default() }).await.unwrap();
    assert!(s.turn_events_after(first, 0).await.unwrap().is_empty());
    assert!(s.turn_events_after(second, 0).await.unwrap().is_empty());
    assert_eq!(s.turn_events_after(third, 0).await.unwrap(), vec![event(1, "done", "{}")]);
}

async fn a_turn_ends_in_one_commit(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let intruder = new_user(s).await;
    let t = s.create_thread(u, "Ends", &[]).await.unwrap();
    let turn = Uuid::now_v7();
    s.begin_turn_with(u, t.id, turn, 60_000, Some(new_message(t.id, Role::User, "Write the plan"))).await.unwrap();
    let doc = s.create_artifact(u, new_artifact(t.id, "Plan", "steps")).await.unwrap();
    let elsewhere = s.create_thread(intruder, "Theirs", &[]).await.unwrap();
    let theirs = s.create_artifact(intruder, new_artifact(elsewhere.id, "Theirs", "x")).await.unwrap();
    let answer_id = Uuid::now_v7();
    s.save_progress(&[answer_draft(turn, u, t.id, answer_id, "Quokkas need a pl", true)]).await.unwrap();
    assert!(found(s, u, "quokkas").await.is_empty(), "not searchable while written");

    let finished = answer_draft(turn, u, t.id, answer_id, "Quokkas need a plan", false).answer.unwrap();
    let step = tool_step("save_artifact", json!({"title": "Plan"}), 3);
    let event = |seq: i64, name: &str| StoredEvent { seq, name: name.into(), data: "{}".into() };
    let end = TurnEnd {
        events: vec![event(1, "text_delta"), event(2, "message_complete")],
        answer: Some(FinalAnswer { user: u, draft: finished, artifacts: vec![doc.id, theirs.id] }),
        usage: Some(SpentTokens {
            user: u,
            thread: t.id,
            model: "model-a".into(),
            usage: Usage { input_tokens: 7, output_tokens: 3 },
        }),
        trace: Some(TurnTrace { user: u, thread: t.id, steps: vec![step.clone()] }),
    };
    s.finish_turn(turn, end).await.unwrap();

    let messages = s.list_messages(u, t.id).await.unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!((messages[1].id, messages[1].content.as_str()), (answer_id, "Quokkas need a plan"));
    assert_eq!(messages[1].status, MessageStatus::Complete);
    assert_eq!(found(s, u, "quokkas").await, vec![Some(answer_id)], "searchable once finished");
    assert_eq!(s.get_artifact(u, doc.id).await.unwrap().assistant_message_id, Some(answer_id));
    assert_eq!(s.get_artifact(intruder, theirs.id).await.unwrap().assistant_message_id, None, "not another's");
    let kept = s.trace(u, answer_id).await.unwrap();
    assert_eq!((kept.turn_id, kept.message_id, kept.steps), (turn, Some(answer_id), vec![step.clone()]));
    let raw = &db.raw;
    assert_eq!(raw.int("select input_tokens from threads where id = ?", t.id).await, 7);
    assert_eq!(raw.int("select output_tokens from threads where id = ?", t.id).await, 3);
    assert_eq!(raw.count("usage_ledger", "user_id", u).await, 1);
    assert!(!s.latest_turn(u, t.id).await.unwrap().unwrap().running);
    assert_eq!(s.turn_events_after(turn, 0).await.unwrap(), vec![event(1, "text_delta"), event(2, "message_complete")]);

    // A conversation deleted while its turn ran: nothing to keep the answer in, the turn is gone with it, and the
    // tokens spent are still metered on the owner's ledger.
    let gone = s.create_thread(u, "Gone", &[]).await.unwrap();
    let turn = Uuid::now_v7();
    s.begin_turn(u, gone.id, turn, 60_000).await.unwrap();
    s.delete_thread(u, gone.id).await.unwrap();
    let draft = answer_draft(turn, u, gone.id, Uuid::now_v7(), "Lost words", false).answer.unwrap();
    let end = TurnEnd {
        events: vec![event(1, "message_complete")],
        answer: Some(FinalAnswer { user: u, draft, artifacts: vec![doc.id] }),
        usage: Some(SpentTokens {
            user: u,
            thread: gone.id,
            model: "model-b".into(),
            usage: Usage { input_tokens: 2, output_tokens: 1 },
        }),
        trace: Some(TurnTrace { user: u, thread: gone.id, steps: vec![step.clone()] }),
    };
    s.finish_turn(turn, end).await.unwrap();
    assert!(found(s, u, "lost").await.is_empty());
    assert_eq!(s.get_artifact(u, doc.id).await.unwrap().assistant_message_id, Some(answer_id), "left as it was");
    assert_eq!(raw.count("usage_ledger", "user_id", u).await, 2);
    assert_eq!(s.turn_events_after(turn, 0).await.unwrap(), vec![]);
    assert_not_found(s.turn_trace(u, turn).await);
}

async fn message_heads_and_tails(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Heads", &[]).await.unwrap();
    assert!(s.list_message_heads(u, t.id).await.unwrap().is_empty());
    let long = "A long answer. ".repeat(200);
    let texts = ["Question", "", " \t\n ", long.as_str(), "Next"];
    let mut saved = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
        saved.push(s.append_message(u, new_message(t.id, role, text)).await.unwrap());
    }
    let heads = s.list_message_heads(u, t.id).await.unwrap();
    let expected: Vec<store::MessageHead> =
        saved.iter().map(|m| store::MessageHead { id: m.id, seq: m.seq, role: m.role }).collect();
    assert_eq!(heads, expected);

    assert_eq!(s.list_messages_from(u, t.id, 4).await.unwrap(), saved[3..].to_vec());
    assert_eq!(s.list_messages_from(u, t.id, 1).await.unwrap(), saved);
    assert!(s.list_messages_from(u, t.id, 6).await.unwrap().is_empty());
    let intruder = new_user(s).await;
    assert_not_found(s.list_message_heads(intruder, t.id).await);
    assert!(s.list_messages_from(intruder, t.id, 1).await.unwrap().is_empty());
}

async fn progress_of_several_turns_is_saved_together(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let event = |seq: i64, data: &str| StoredEvent { seq, name: "text_delta".into(), data: data.into() };
    let draft = |thread: Uuid, id: Uuid, content: &str, context: Option<serde_json::Value>| store::AnswerDraft {
        id,
        thread_id: thread,
        update: MessageUpdate {
            content: content.into(),
            status: MessageStatus::Interrupted,
            usage: Usage { input_tokens: 3, output_tokens: content.len() as u64 },
            model: Some("model-a".into()),
            context,
        },
        writing: true,
    };
    let (a, b, gone) = (
        s.create_thread(u, "A", &[]).await.unwrap(),
        s.create_thread(u, "B", &[]).await.unwrap(),
        s.create_thread(u, "Deleted", &[]).await.unwrap(),
    );
    say(s, u, a.id, "Question A").await;
    let (turn_a, turn_b, turn_gone) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    for (thread, turn) in [(a.id, turn_a), (b.id, turn_b), (gone.id, turn_gone)] {
        s.begin_turn(u, thread, turn, 60_000).await.unwrap();
    }
    let (answer_a, answer_gone) = (Uuid::now_v7(), Uuid::now_v7());
    s.delete_thread(u, gone.id).await.unwrap();

    // One batch: A's first draft (created with the next number), B's events only, and a turn whose thread was
    // deleted meanwhile (skipped without failing the others).
    let batch = vec![
        store::TurnProgress {
            turn: turn_a,
            user: u,
            events: vec![event(1, "He")],
            answer: Some(draft(a.id, answer_a, "He", Some(json!({"included": 1})))),
        },
        store::TurnProgress { turn: turn_b, user: u, events: vec![event(1, "x"), event(2, "y")], answer: None },
        store::TurnProgress {
            turn: turn_gone,
            user: u,
            events: vec![event(1, "lost")],
            answer: Some(draft(gone.id, answer_gone, "lost", None)),
        },
    ];
    s.save_progress(&batch).await.unwrap();
    let messages = s.list_messages(u, a.id).await.unwrap();
    assert_eq!(messages.len(), 2);
    let saved = &messages[1];
    assert_eq!((saved.id, saved.seq, saved.role, saved.content.as_str()), (answer_a, 2, Role::Assistant, "He"));
    assert_eq!(
        (saved.status, saved.output_tokens, saved.model.as_deref()),
        (MessageStatus::Interrupted, 2, Some("model-a"))
    );
    assert_eq!(s.message_context(u, answer_a).await.unwrap(), Some(json!({"included": 1})));
    assert_eq!(s.get_thread(u, a.id).await.unwrap().message_count, 2);
    assert_eq!(s.turn_events_after(turn_b, 0).await.unwrap(), vec![event(1, "x"), event(2, "y")]);
    assert!(s.turn_events_after(turn_gone, 0).await.unwrap().is_empty());
    assert_not_found(s.get_message(u, answer_gone).await);

    // The next batch rewrites the same answer in place; a repeated event keeps its first text; a draft without
    // a context record keeps the saved one.
    let next = store::TurnProgress {
        turn: turn_a,
        user: u,
        events: vec![event(1, "again?"), event(2, "llo")],
        answer: Some(draft(a.id, answer_a, "Hello", None)),
    };
    s.save_progress(&[next]).await.unwrap();
    let messages = s.list_messages(u, a.id).await.unwrap();
    assert_eq!(messages.len(), 2, "no second answer");
    assert_eq!((messages[1].content.as_str(), messages[1].seq), ("Hello", 2));
    assert_eq!(s.message_context(u, answer_a).await.unwrap(), Some(json!({"included": 1})));
    assert_eq!(s.turn_events_after(turn_a, 0).await.unwrap(), vec![event(1, "He"), event(2, "llo")]);
    assert_eq!(s.get_thread(u, a.id).await.unwrap().message_count, 2);

    // Another user's draft never lands in this user's thread.
    let intruder = new_user(s).await;
    let forged = store::TurnProgress {
        turn: Uuid::now_v7(),
        user: intruder,
        events: Vec::new(),
        answer: Some(draft(a.id, answer_a, "overwritten", None)),
    };
    s.save_progress(&[forged]).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Hello");
    assert_eq!(s.list_messages(u, a.id).await.unwrap().len(), 2);
    s.save_progress(&[]).await.unwrap();

    // A batch with more events than one insert statement takes keeps every one of them, in order, for each turn.
    let many =
        |from: i64, tag: &str| (from..from + 601).map(|seq| event(seq, &format!("{tag}{seq}"))).collect::<Vec<_>>();
    let (more_a, more_b) = (many(3, "a"), many(3, "b"));
    s.save_progress(&[
        store::TurnProgress { turn: turn_a, user: u, events: more_a.clone(), answer: None },
        store::TurnProgress { turn: turn_b, user: u, events: more_b.clone(), answer: None },
        store::TurnProgress { turn: turn_gone, user: u, events: many(2, "lost"), answer: None },
    ])
    .await
    .unwrap();
    assert_eq!(s.turn_events_after(turn_a, 2).await.unwrap(), more_a);
    assert_eq!(s.turn_events_after(turn_b, 2).await.unwrap(), more_b);
    assert!(s.turn_events_after(turn_gone, 0).await.unwrap().is_empty());

    // Several saved answers rewritten in one batch, beside a first save; then one answer twice in a batch, which
    // ends as its second draft says.
    let answer_b = Uuid::now_v7();
    let drafts = |a_text: &str, b_text: &str| {
        vec![
            store::TurnProgress {
                turn: turn_a,
                user: u,
                events: vec![],
                answer: Some(draft(a.id, answer_a, a_text, None)),
            },
            store::TurnProgress {
                turn: turn_b,
                user: u,
                events: vec![],
                answer: Some(draft(b.id, answer_b, b_text, None)),
            },
        ]
    };
    s.save_progress(&drafts("Hello, w", "Fir")).await.unwrap();
    s.save_progress(&drafts("Hello, world", "First")).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Hello, world");
    assert_eq!(s.message_context(u, answer_a).await.unwrap(), Some(json!({"included": 1})));
    let b_messages = s.list_messages(u, b.id).await.unwrap();
    assert_eq!(b_messages.len(), 1);
    assert_eq!((b_messages[0].id, b_messages[0].content.as_str(), b_messages[0].output_tokens), (answer_b, "First", 5));
    let mut twice = drafts("Hello, world!", "First draft");
    twice.extend(drafts("Hello, world! Bye", "First draft, longer"));
    s.save_progress(&twice).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Hello, world! Bye");
    assert_eq!(s.get_message(u, answer_b).await.unwrap().content, "First draft, longer");
    assert_eq!(s.list_messages(u, b.id).await.unwrap().len(), 1);
}

async fn concurrent_turns_take_the_thread_once(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Race", &[]).await.unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = s.clone();
            tokio::spawn(async move { store.begin_turn(u, t.id, Uuid::now_v7(), 60_000).await })
        })
        .collect();
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => won += 1,
            Err(StoreError::Conflict(_)) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(db.raw.int("select count(*) from turns where thread_id = ? and status = 'running'", t.id).await, 1);

    // Many conversations starting at once (on SQLite, those waiting for the writer start together): each start
    // gets its own outcome, and a refused one leaves nothing behind.
    let intruder = new_user(s).await;
    let mut threads = Vec::new();
    for i in 0..12 {
        threads.push(s.create_thread(u, &format!("Crowd {i}"), &[]).await.unwrap().id);
    }
    let mut tasks = Vec::new();
    for (i, &thread) in threads.iter().enumerate() {
        for (who, attempt) in [(u, 0), (u, 1), (intruder, 2)] {
            let store = s.clone();
            let message = new_message(thread, Role::User, &format!("Question {i}.{attempt}"));
            tasks.push(tokio::spawn(async move {
                let turn = Uuid::now_v7();
                (thread, who, turn, store.begin_turn_with(who, thread, turn, 60_000, Some(message)).await)
            }));
        }
    }
    let mut started = std::collections::HashMap::new();
    let mut turns = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (thread, who, turn, Ok(Some(saved))) if who == u => {
                assert_eq!((saved.thread_id, saved.seq), (thread, 1));
                assert!(started.insert(thread, saved.content).is_none(), "one start per conversation");
                turns.push((thread, turn));
            }
            (_, who, _, Err(StoreError::Conflict(_))) if who == u => {}
            (_, who, _, Err(StoreError::NotFound)) if who == intruder => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(started.len(), threads.len());
    for thread in &threads {
        let messages = s.list_messages(u, *thread).await.unwrap();
        assert_eq!(messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), vec![started[thread].as_str()]);
        assert_eq!(db.raw.int("select count(*) from turns where thread_id = ?", *thread).await, 1);
    }

    // And ending at once (on SQLite, those waiting for the writer end together): every answer, its tokens and
    // its last event are stored, and every conversation is free again.
    let ends: Vec<_> = turns
        .iter()
        .map(|&(thread, turn)| {
            let store = s.clone();
            tokio::spawn(async move {
                let draft = answer_draft(turn, u, thread, Uuid::now_v7(), "Crowded answer", false).answer.unwrap();
                let end = TurnEnd {
                    events: vec![StoredEvent { seq: 1, name: "message_complete".into(), data: "{}".into() }],
                    answer: Some(FinalAnswer { user: u, draft, artifacts: Vec::new() }),
                    usage: Some(SpentTokens {
                        user: u,
                        thread,
                        model: "crowd".into(),
                        usage: Usage { input_tokens: 2, output_tokens: 1 },
                    }),
                    trace: None,
                };
                store.finish_turn(turn, end).await
            })
        })
        .collect();
    for end in ends {
        end.await.unwrap().unwrap();
    }
    for &(thread, turn) in &turns {
        let messages = s.list_messages(u, thread).await.unwrap();
        assert_eq!(messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>()[1..], ["Crowded answer"]);
        assert!(!s.latest_turn(u, thread).await.unwrap().unwrap().running);
        assert_eq!(s.turn_events_after(turn, 0).await.unwrap().len(), 1);
        assert_eq!(db.raw.int("select input_tokens from threads where id = ?", thread).await, 2);
    }
}

/// A draft of an answer, saved as still being written or as finished.
fn answer_draft(turn: Uuid, user: Uuid, thread: Uuid, id: Uuid, content: &str, writing: bool) -> store::TurnProgress {
    store::TurnProgress {
        turn,
        user,
        events: Vec::new(),
        answer: Some(store::AnswerDraft {
            id,
            thread_id: thread,
            update: MessageUpdate {
                content: content.into(),
                status: if writing { MessageStatus::Interrupted } else { MessageStatus::Complete },
                usage: Usage::default(),
                model: None,
                context: None,
            },
            writing,
        }),
    }
}

/// The ids of the user's messages that a search for `word` finds.
async fn found(store: &DynStore, user: Uuid, word: &str) -> Vec<Option<Uuid>> {
    let page = store.search(user, word, 100, 0).await.unwrap();
    assert_eq!(page.total, page.hits.len() as u64);
    page.hits.iter().filter(|h| h.kind == HitKind::Message).map(|h| h.message_id).collect()
}

async fn answers_are_searchable_once_finished(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let (a, b) = (s.create_thread(u, "One", &[]).await.unwrap(), s.create_thread(u, "Two", &[]).await.unwrap());
    let question = say(s, u, a.id, "Tell me about quokkas").await;
    let (turn_a, turn_b, answer_a, answer_b) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    s.begin_turn(u, a.id, turn_a, 60_000).await.unwrap();
    s.begin_turn(u, b.id, turn_b, 60_000).await.unwrap();

    // First saves, then rewrites (two answers in one batch, then one alone): stored and shown, never found.
    s.save_progress(&[answer_draft(turn_a, u, a.id, answer_a, "Quokkas live", true)]).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Quokkas live");
    assert_eq!(found(s, u, "quokkas").await, vec![Some(question.id)], "only the question");
    s.save_progress(&[
        answer_draft(turn_a, u, a.id, answer_a, "Quokkas live on Rottnest", true),
        answer_draft(turn_b, u, b.id, answer_b, "Wombats dig", true),
    ])
    .await
    .unwrap();
    s.save_progress(&[answer_draft(turn_a, u, a.id, answer_a, "Quokkas live on Rottnest Island", true)]).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Quokkas live on Rottnest Island");
    assert_eq!(found(s, u, "rottnest").await, vec![]);
    assert_eq!(found(s, u, "wombats").await, vec![]);
    assert_eq!(found(s, u, "quokkas").await, vec![Some(question.id)]);

    // The final save lets the whole answer in, once.
    s.save_progress(&[answer_draft(turn_a, u, a.id, answer_a, "Quokkas live on Rottnest Island.", false)])
        .await
        .unwrap();
    assert_eq!(found(s, u, "rottnest").await, vec![Some(answer_a)]);
    assert_eq!(found(s, u, "quokkas").await.len(), 2);
    assert_eq!(found(s, u, "wombats").await, vec![], "the other answer is still being written");

    // An answer finished at its first save is found at once; an edited answer is found by its new words only.
    let short = Uuid::now_v7();
    s.save_progress(&[answer_draft(turn_b, u, b.id, short, "Echidnas lay eggs", false)]).await.unwrap();
    assert_eq!(found(s, u, "echidnas").await, vec![Some(short)]);
    let edit = MessageUpdate {
        content: "Platypuses too".into(),
        status: MessageStatus::Complete,
        usage: Usage::default(),
        model: None,
        context: None,
    };
    s.update_message(u, short, &edit).await.unwrap();
    assert_eq!(found(s, u, "echidnas").await, vec![]);
    assert_eq!(found(s, u, "platypuses").await, vec![Some(short)]);
}

async fn answers_cut_off_while_written_become_searchable(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let thread = |title: &'static str| async move { s.create_thread(u, title, &[]).await.unwrap().id };
    let (live, taken_over, closed, swept) =
        (thread("Live").await, thread("Taken over").await, thread("Closed").await, thread("Swept").await);
    let ids: Vec<(Uuid, Uuid)> = (0..4).map(|_| (Uuid::now_v7(), Uuid::now_v7())).collect();
    let words = ["aardvark", "bandicoot", "cassowary", "dingo"];
    for ((thread, (turn, answer)), word) in [live, taken_over, closed, swept].into_iter().zip(&ids).zip(words) {
        s.begin_turn(u, thread, *turn, 60_000).await.unwrap();
        s.save_progress(&[answer_draft(*turn, u, thread, *answer, word, true)]).await.unwrap();
        assert_eq!(found(s, u, word).await, vec![]);
    }
    // Every turn goes quiet but the live one.
    tokio::time::sleep(Duration::from_millis(600)).await;
    s.heartbeat_turns(&[ids[0].0]).await.unwrap();

    // Closing a turn whose final save never came: its last draft is found.
    s.finish_turn(ids[2].0, TurnEnd::default()).await.unwrap();
    assert_eq!(found(s, u, "cassowary").await, vec![Some(ids[2].1)]);

    // A new turn taking over a dead one: the dead one's draft is found.
    s.begin_turn(u, taken_over, Uuid::now_v7(), 300).await.unwrap();
    assert_eq!(found(s, u, "bandicoot").await, vec![Some(ids[1].1)]);

    // The sweep leaves the drafts of turns heard from lately alone and releases the rest.
    assert_eq!(s.release_abandoned_answers(60_000).await.unwrap(), 0);
    assert_eq!(found(s, u, "dingo").await, vec![]);
    assert_eq!(s.release_abandoned_answers(300).await.unwrap(), 1, "only the turn that went quiet");
    assert_eq!(found(s, u, "dingo").await, vec![Some(ids[3].1)]);
    assert_eq!(found(s, u, "aardvark").await, vec![], "a live turn's draft stays out");

    // A process that died while writing: opening the database again (SQLite) or the sweep at start-up
    // (PostgreSQL, several instances: only once no live turn holds the thread) lets the draft in.
    match &db.raw {
        Raw::Sqlite(_) => {
            let dir = db._dir.as_ref().expect("the SQLite file's directory");
            let url = format!("sqlite://{}", dir.path().join("quire.db").display());
            let reopened = store::connect(&url).await.expect("reopen");
            assert_eq!(found(&reopened, u, "aardvark").await, vec![Some(ids[0].1)]);
        }
        Raw::Postgres(_) => {
            tokio::time::sleep(Duration::from_millis(350)).await;
            assert_eq!(s.release_abandoned_answers(300).await.unwrap(), 1);
            assert_eq!(found(s, u, "aardvark").await, vec![Some(ids[0].1)]);
        }
    }
    assert_eq!(db.raw.int("select count(*) from messages where user_id = ? and writing", u).await, 0);
}

async fn listing_order_and_cursors(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let mut by_title = HashMap::new();
    for title in ["b", "B", "a", "é", "Z", "a"] {
        let t = s.create_thread(u, title, &[]).await.unwrap();
        by_title.entry(title).or_insert_with(Vec::new).push(t.id);
    }
    let pinned = s.create_thread(u, "zz pinned", &[]).await.unwrap();
    s.update_thread(u, pinned.id, &ThreadPatch { pinned: Some(true), ..Default::default() }).await.unwrap();

    // Pinned first; titles compare byte-wise on both backends; ties broken by id.
    let query = ThreadQuery { sort: ThreadSort::Title, descending: false, limit: 2, ..Default::default() };
    let titles: Vec<String> = all_threads(s, u, &query).await.into_iter().map(|t| t.title).collect();
    assert_eq!(titles, ["zz pinned", "B", "Z", "a", "a", "b", "é"]);
    let desc = ThreadQuery { descending: true, ..query.clone() };
    let titles: Vec<String> = all_threads(s, u, &desc).await.into_iter().map(|t| t.title).collect();
    assert_eq!(titles, ["zz pinned", "é", "b", "a", "a", "Z", "B"]);

    // Newest activity first by default.
    let newest = all_threads(s, u, &ThreadQuery::default()).await;
    assert_eq!(newest[0].id, pinned.id);
    assert_eq!(newest[1].title, "a");
    assert_eq!(newest.len(), 7);

    // A cursor of one sort does not fit another.
    let real = s.list_threads(u, &ThreadQuery { limit: 1, ..ThreadQuery::default() }).await.unwrap().next.unwrap();
    let cursor = ThreadCursor { key: CursorKey::Time(0), ..real.clone() };
    let wrong = s.list_threads(u, &ThreadQuery { cursor: Some(cursor), ..query.clone() }).await;
    assert!(matches!(wrong, Err(StoreError::InvalidCursor)), "{wrong:?}");
    let cursor = ThreadCursor { key: CursorKey::Text("a".into()), ..real.clone() };
    let wrong = s.list_threads(u, &ThreadQuery { cursor: Some(cursor), ..ThreadQuery::default() }).await;
    assert!(matches!(wrong, Err(StoreError::InvalidCursor)), "{wrong:?}");
    // A forged walk mark or none at all is refused too, never a database error.
    for walk in [None, Some(""), Some("x"), Some("1:2:3:4"), Some("'; drop table threads; --")] {
        let cursor = ThreadCursor { walk: walk.map(str::to_owned), ..real.clone() };
        let wrong = s.list_threads(u, &ThreadQuery { cursor: Some(cursor), ..ThreadQuery::default() }).await;
        assert!(matches!(wrong, Err(StoreError::InvalidCursor)), "{walk:?}: {wrong:?}");
    }
    // A walk that began too long ago has expired.
    let old = chrono::Utc::now().timestamp_micros() - (store::WALK_LIFETIME_DAYS * 86_400_000_000 + 1_000_000);
    let cursor = ThreadCursor { as_of: Some(old), ..real.clone() };
    let expired = s.list_threads(u, &ThreadQuery { cursor: Some(cursor), ..ThreadQuery::default() }).await;
    assert!(matches!(expired, Err(StoreError::ExpiredCursor)), "{expired:?}");
    assert!(s.list_threads(u, &ThreadQuery { cursor: Some(real), ..ThreadQuery::default() }).await.is_ok());

    // Limits are clamped to 1..=100.
    let one = s.list_threads(u, &ThreadQuery { limit: 0, ..ThreadQuery::default() }).await.unwrap();
    assert_eq!(one.threads.len(), 1);
    assert!(one.next.is_some());
}

// ---------------------------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------------------------

/// Cases per property: each case is a few dozen round trips to a real database.
const CASES: u32 = 16;

/// Words the generated texts and queries are made of: prefixes of each other, digits, and words that only
/// ever appear in queries, so searches have hits, misses and ties.
const WORDS: &[&str] = &[
    "rust",
    "rusty",
    "trust",
    "post",
    "postgres",
    "sqlite",
    "search",
    "searching",
    "alpha",
    "beta",
    "gamma",
    "x1",
    "42",
    "plan",
    "planet",
];

/// What stands between words. Both backends split on all of these the same way (HTML tags are left out on
/// purpose: PostgreSQL's parser drops `<b>` as a tag, SQLite indexes the `b`).
const SEPARATORS: &[&str] = &[" ", "  ", ", ", "\n", " & ", " \"", "\" ", " (", ") ", "! ", " - ", " < ", " > ", "'"];

/// Query pieces that are pure syntax to one backend or the other.
const NOISE: &[&str] = &["*", "(", ")", ":", "^", "-", "'", "\\", "&", "|", "!", "<->", ":*", "NEAR", "AND", "\""];

/// A text of vocabulary words and separators.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(WORDS), prop::sample::select(SEPARATORS)), 1..10)
        .prop_map(|parts| parts.into_iter().map(|(word, sep)| format!("{word}{sep}")).collect::<String>())
}

/// A search box input: words, prefixes, phrases and syntax noise.
fn query() -> impl Strategy<Value = String> {
    let word = prop::sample::select(WORDS).prop_map(String::from);
    let prefix = (prop::sample::select(WORDS), 1usize..4).prop_map(|(w, n)| format!("{}*", &w[..n.min(w.len())]));
    let phrase = (prop::sample::select(WORDS), prop::sample::select(WORDS)).prop_map(|(a, b)| format!("\"{a} {b}\""));
    let noise = prop::sample::select(NOISE).prop_map(String::from);
    prop::collection::vec(prop_oneof![4 => word, 3 => prefix, 2 => phrase, 1 => noise], 1..4)
        .prop_map(|parts| parts.join(" "))
}

/// Any text PostgreSQL can store (it has no NUL in text).
fn any_text() -> impl Strategy<Value = String> {
    "[^\u{0}]{0,60}"
}

properties!(
    users_are_isolated,
    messages_come_back_in_order,
    thread_delete_leaves_no_orphans,
    titles_are_deterministic,
    every_search_hit_matches,
    updated_at_never_precedes_created_at,
    tag_filter_requires_every_tag,
    message_count_is_the_real_count,
    pages_cover_the_listing_exactly,
    context_read_by_window_equals_building_from_every_message,
);

/// (1) Listings and searches only ever show the caller's rows.
fn users_are_isolated(backend: Backend, test: &str) {
    let strategy = prop::collection::vec((0usize..3, text(), text()), 1..8);
    check_property(backend, test, CASES, strategy, |db, threads| async move {
        let s = &db.store;
        let mut users = Vec::new();
        for _ in 0..3 {
            users.push(new_user(s).await);
        }
        let mut owned: Vec<HashSet<Uuid>> = vec![HashSet::new(); 3];
        for (owner, title, content) in &threads {
            let t = s.create_thread(users[*owner], title, &tags(&["shared"])).await.unwrap();
            say(s, users[*owner], t.id, content).await;
            s.create_artifact(users[*owner], new_artifact(t.id, title, content)).await.unwrap();
            owned[*owner].insert(t.id);
        }
        for (n, user) in users.iter().enumerate() {
            let listed: HashSet<Uuid> = all_threads(s, *user, &ThreadQuery { limit: 3, ..Default::default() })
                .await
                .iter()
                .map(|t| t.id)
                .collect();
            assert_eq!(listed, owned[n]);
            let tagged = ThreadQuery { tags: tags(&["shared"]), ..Default::default() };
            let tagged: HashSet<Uuid> = all_threads(s, *user, &tagged).await.iter().map(|t| t.id).collect();
            assert_eq!(tagged, owned[n]);
            for word in WORDS {
                let page = s.search(*user, word, 100, 0).await.unwrap();
                assert!(page.hits.iter().all(|h| owned[n].contains(&h.thread_id)), "{word}: {page:?}");
                assert!(page.total as usize <= 3 * owned[n].len());
            }
            // Everyone else's threads, reached by id, are missing.
            for thread in owned.iter().enumerate().filter(|(other, _)| *other != n).flat_map(|(_, ids)| ids) {
                assert_not_found(s.list_messages(*user, *thread).await);
                assert_not_found(s.get_thread(*user, *thread).await);
                assert_not_found(s.list_artifacts(*user, *thread).await);
            }
        }
    });
}

/// (2) Messages come back in the order they were appended, numbered 1..n, exactly as written.
fn messages_come_back_in_order(backend: Backend, test: &str) {
    let strategy = prop::collection::vec((any::<bool>(), any_text()), 0..15);
    check_property(backend, test, 24, strategy, |db, messages| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let t = s.create_thread(u, "Ordered", &[]).await.unwrap();
        let mut appended = Vec::new();
        for (from_user, content) in &messages {
            let role = if *from_user { Role::User } else { Role::Assistant };
            appended.push(s.append_message(u, new_message(t.id, role, content)).await.unwrap());
        }
        let listed = s.list_messages(u, t.id).await.unwrap();
        assert_eq!(listed, appended);
        let contents: Vec<&String> = listed.iter().map(|m| &m.content).collect();
        assert_eq!(contents, messages.iter().map(|(_, c)| c).collect::<Vec<_>>());
        assert_eq!(listed.iter().map(|m| m.seq).collect::<Vec<_>>(), (1..=messages.len() as i64).collect::<Vec<_>>());
    });
}

/// (3) Deleting a thread leaves no row anywhere that belonged to it, and nothing to find.
fn thread_delete_leaves_no_orphans(backend: Backend, test: &str) {
    let strategy = (0usize..6, 0usize..4, prop::collection::vec("[a-z]{1,8}", 0..4), 0i64..5, any::<bool>());
    check_property(
        backend,
        test,
        CASES,
        strategy,
        |db, (messages, artifacts, thread_tags, events, running)| async move {
            let s = &db.store;
            let u = new_user(s).await;
            // A word no other case uses, to search for afterwards.
            let marker = format!("m{}", Uuid::new_v4().simple());
            let t = s.create_thread(u, &format!("doomed {marker}"), &thread_tags).await.unwrap();
            let keep = s.create_thread(u, "kept", &thread_tags).await.unwrap();
            say(s, u, keep.id, "kept message").await;
            let mut message_ids = Vec::new();
            for i in 0..messages {
                let m = say(s, u, t.id, &format!("{marker} number {i}")).await;
                let trace = trace_of(t.id, Some(m.id), vec![tool_step("save_artifact", json!({ "i": i }), 1)]);
                s.save_trace(u, &trace).await.unwrap();
                message_ids.push(m.id);
            }
            let mut artifact_ids = Vec::new();
            for i in 0..artifacts {
                let doc = NewArtifact {
                    request_message_id: message_ids.get(i).copied(),
                    ..new_artifact(t.id, &format!("{marker} doc"), "body")
                };
                artifact_ids.push(s.create_artifact(u, doc).await.unwrap().id);
            }
            let turn = Uuid::now_v7();
            s.begin_turn(u, t.id, turn, 60_000).await.unwrap();
            let batch: Vec<StoredEvent> =
                (1..=events).map(|seq| StoredEvent { seq, name: "delta".into(), data: seq.to_string() }).collect();
            s.append_turn_events(turn, &batch).await.unwrap();
            if !running {
                s.finish_turn(turn, TurnEnd::default()).await.unwrap();
            }

            s.delete_thread(u, t.id).await.unwrap();

            let raw = &db.raw;
            for (table, column) in [("threads", "id"), ("messages", "thread_id"), ("artifacts", "thread_id")] {
                assert_eq!(raw.count(table, column, t.id).await, 0, "{table}");
            }
            for (table, column) in [("thread_tags", "thread_id"), ("turns", "thread_id")] {
                assert_eq!(raw.count(table, column, t.id).await, 0, "{table}");
            }
            assert_eq!(raw.count("turn_events", "turn_id", turn).await, 0);
            assert_eq!(raw.count("turn_traces", "thread_id", t.id).await, 0);
            for id in &artifact_ids {
                assert_eq!(raw.count("artifact_versions", "artifact_id", *id).await, 0);
            }
            let page = s.search(u, &marker, 100, 0).await.unwrap();
            assert_eq!((page.total, page.hits.len()), (0, 0), "{page:?}");
            assert_eq!(s.latest_turn(u, t.id).await.unwrap(), None);
            assert_eq!(s.get_thread(u, keep.id).await.unwrap().message_count, 1);
            assert_eq!(
                s.get_thread(u, keep.id).await.unwrap().tags.len(),
                thread_tags.iter().collect::<HashSet<_>>().len()
            );
        },
    );
}

/// (4) A title made from a message is the same every time, short, and stored as made.
fn titles_are_deterministic(backend: Backend, test: &str) {
    check_property(backend, test, 24, any_text(), |db, content| async move {
        let title = store::title_from_message(&content);
        assert_eq!(title, store::title_from_message(&content));
        assert!(!title.is_empty());
        assert!(title.chars().count() <= 80, "{title:?}");
        assert!(title.split_whitespace().count() <= 5, "{title:?}");
        let s = &db.store;
        let u = new_user(s).await;
        let t = s.create_thread(u, &title, &[]).await.unwrap();
        assert_eq!(t.title, title);
        assert_eq!(s.get_thread(u, t.id).await.unwrap().title, title);
    });
}

/// (5) Every hit matches the query by [`search_query::matches`], and every matching text is found: the total
/// counts exactly the texts that match. Hits come best first.
fn every_search_hit_matches(backend: Backend, test: &str) {
    let strategy = (prop::collection::vec((0u8..3, text()), 1..10), prop::collection::vec(query(), 1..6));
    check_property(backend, test, CASES, strategy, |db, (docs, queries)| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let container = s.create_thread(u, "Container", &[]).await.unwrap();
        // What each hit's text is, by the id the hit carries.
        let mut sources: HashMap<(HitKind, Uuid), String> = HashMap::new();
        sources.insert((HitKind::Thread, container.id), container.title.clone());
        for (kind, text) in &docs {
            match kind {
                0 => {
                    let m = say(s, u, container.id, text).await;
                    sources.insert((HitKind::Message, m.id), text.clone());
                }
                1 => {
                    let t = s.create_thread(u, text, &[]).await.unwrap();
                    sources.insert((HitKind::Thread, t.id), text.clone());
                }
                _ => {
                    let doc = s.create_artifact(u, new_artifact(container.id, "Doc", text)).await.unwrap();
                    sources.insert((HitKind::Artifact, doc.id), format!("Doc\n{text}"));
                }
            }
        }
        for query in &queries {
            let terms = search_query::parse(query);
            let page = s.search(u, query, 100, 0).await.unwrap_or_else(|e| panic!("{query:?}: {e}"));
            for hit in &page.hits {
                let id = match hit.kind {
                    HitKind::Message => hit.message_id.unwrap(),
                    HitKind::Thread => hit.thread_id,
                    HitKind::Artifact => hit.artifact_id.unwrap(),
                };
                let source = &sources[&(hit.kind, id)];
                assert!(search_query::matches(&terms, source), "{query:?} ({terms:?}) hit {source:?}");
                assert!(hit.snippet.contains("<mark>"), "{query:?}: {}", hit.snippet);
            }
            let expected = if terms.is_empty() {
                0
            } else {
                sources.values().filter(|text| search_query::matches(&terms, text)).count()
            };
            assert_eq!(page.total as usize, expected, "{query:?} ({terms:?}): {page:?}");
            assert_eq!(page.hits.len(), expected);
            assert_eq!(
                page.hits
                    .iter()
                    .map(|h| (h.kind, h.message_id, h.artifact_id, h.thread_id))
                    .collect::<HashSet<_>>()
                    .len(),
                expected
            );
            assert_ordered(&page);
        }
    });
}

#[derive(Debug, Clone)]
enum ThreadOp {
    Append(String),
    Rename(String),
    Pin(bool),
    Archive(bool),
    Retag(Vec<String>),
    DeleteFirstMessage,
    Usage(u32),
    Document,
    Pause,
}

fn thread_op() -> impl Strategy<Value = ThreadOp> {
    prop_oneof![
        3 => any_text().prop_map(ThreadOp::Append),
        1 => "[a-z ]{1,20}".prop_map(ThreadOp::Rename),
        1 => any::<bool>().prop_map(ThreadOp::Pin),
        1 => any::<bool>().prop_map(ThreadOp::Archive),
        1 => prop::collection::vec("[a-z]{1,6}", 0..3).prop_map(ThreadOp::Retag),
        1 => Just(ThreadOp::DeleteFirstMessage),
        1 => (0u32..1000).prop_map(ThreadOp::Usage),
        1 => Just(ThreadOp::Document),
        1 => Just(ThreadOp::Pause),
    ]
}

/// (6) Whatever happens to a thread, its `updated_at` never goes back and never precedes `created_at`.
fn updated_at_never_precedes_created_at(backend: Backend, test: &str) {
    check_property(backend, test, CASES, prop::collection::vec(thread_op(), 1..12), |db, ops| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let t = s.create_thread(u, "Timed", &[]).await.unwrap();
        let mut last = t.updated_at;
        for op in &ops {
            match op {
                ThreadOp::Append(text) => drop(say(s, u, t.id, text).await),
                ThreadOp::Rename(title) => {
                    s.update_thread(u, t.id, &ThreadPatch { title: Some(title.clone()), ..Default::default() })
                        .await
                        .unwrap();
                }
                ThreadOp::Pin(on) => {
                    s.update_thread(u, t.id, &ThreadPatch { pinned: Some(*on), ..Default::default() }).await.unwrap();
                }
                ThreadOp::Archive(on) => {
                    s.update_thread(u, t.id, &ThreadPatch { archived: Some(*on), ..Default::default() }).await.unwrap();
                }
                ThreadOp::Retag(new_tags) => {
                    s.update_thread(u, t.id, &ThreadPatch { tags: Some(new_tags.clone()), ..Default::default() })
                        .await
                        .unwrap();
                }
                ThreadOp::DeleteFirstMessage => {
                    if let Some(first) = s.list_messages(u, t.id).await.unwrap().first() {
                        s.delete_message(u, t.id, first.id).await.unwrap();
                    }
                }
                ThreadOp::Usage(n) => {
                    let usage = Usage { input_tokens: u64::from(*n), output_tokens: 1 };
                    s.record_usage(u, t.id, "m", usage).await.unwrap();
                }
                ThreadOp::Document => drop(s.create_artifact(u, new_artifact(t.id, "d", "e")).await.unwrap()),
                ThreadOp::Pause => tokio::time::sleep(Duration::from_millis(2)).await,
            }
            let now = s.get_thread(u, t.id).await.unwrap();
            assert_eq!(now.created_at, t.created_at);
            assert!(now.updated_at >= now.created_at, "{op:?}: {now:?}");
            assert!(now.updated_at >= last, "{op:?} moved updated_at back");
            last = now.updated_at;
        }
        assert_eq!(db.raw.int("select count(*) from threads where id = ? and updated_at < created_at", t.id).await, 0);
    });
}

/// (8) A tag filter returns exactly the threads carrying every requested tag.
fn tag_filter_requires_every_tag(backend: Backend, test: &str) {
    const TAGS: &[&str] = &["red", "green", "blue", "cyan"];
    let tag_set = || prop::collection::btree_set(prop::sample::select(TAGS), 0..4);
    let strategy = (prop::collection::vec(tag_set(), 0..10), tag_set(), 1u32..5);
    check_property(backend, test, 24, strategy, |db, (threads, wanted, limit)| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let mut expected = HashSet::new();
        for thread_tags in &threads {
            let names: Vec<String> = thread_tags.iter().map(|t| t.to_string()).collect();
            let t = s.create_thread(u, "tagged", &names).await.unwrap();
            if wanted.is_subset(thread_tags) {
                expected.insert(t.id);
            }
        }
        let query = ThreadQuery { tags: wanted.iter().map(|t| t.to_string()).collect(), limit, ..Default::default() };
        let listed = all_threads(s, u, &query).await;
        let ids: HashSet<Uuid> = listed.iter().map(|t| t.id).collect();
        assert_eq!(ids.len(), listed.len(), "duplicates");
        assert_eq!(ids, expected, "wanted {wanted:?}");
        for thread in &listed {
            assert!(wanted.iter().all(|w| thread.tags.iter().any(|t| t == w)), "{thread:?}");
        }
    });
}

/// (9) `message_count` is the number of messages, whatever was appended and deleted, and seqs never repeat.
fn message_count_is_the_real_count(backend: Backend, test: &str) {
    let op = prop_oneof![2 => Just(None), 1 => (0usize..20).prop_map(Some)];
    check_property(backend, test, 24, prop::collection::vec(op, 0..25), |db, ops| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let t = s.create_thread(u, "Counted", &[]).await.unwrap();
        let mut model: Vec<(Uuid, i64)> = Vec::new();
        let mut next_seq = 1;
        for op in &ops {
            match op {
                None => {
                    let m = say(s, u, t.id, "counted").await;
                    assert_eq!(m.seq, next_seq);
                    next_seq += 1;
                    model.push((m.id, m.seq));
                }
                Some(i) if !model.is_empty() => {
                    let (id, _) = model.remove(i % model.len());
                    s.delete_message(u, t.id, id).await.unwrap();
                }
                Some(_) => assert_not_found(s.delete_message(u, t.id, Uuid::now_v7()).await),
            }
            assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, model.len() as i64);
        }
        let listed: Vec<(Uuid, i64)> = s.list_messages(u, t.id).await.unwrap().iter().map(|m| (m.id, m.seq)).collect();
        assert_eq!(listed, model);
        assert_eq!(db.raw.count("messages", "thread_id", t.id).await, model.len() as i64);
    });
}

/// A change made to the listing while a walk through its pages goes on.
#[derive(Debug, Clone)]
enum Change {
    Create(&'static str),
    Message(usize),
    Rename(usize, &'static str),
    Pin(usize),
    Archive(usize, bool),
    Tag(usize, bool),
    Delete(usize),
}

#[derive(Debug, Clone)]
struct Paging {
    /// Title (few distinct ones, so sort keys tie), pinned flag and whether it carries the tag "x", per thread.
    threads: Vec<(String, bool, bool)>,
    page_size: u32,
    sort: ThreadSort,
    descending: bool,
    /// List only the threads tagged "x".
    filter: bool,
    /// The changes made before fetching each page after the first; indexes pick an original thread.
    changes: Vec<Vec<Change>>,
}

fn paging() -> impl Strategy<Value = Paging> {
    const TITLES: &[&str] = &["a", "b", "B", "é", "a b"];
    let thread = (prop::sample::select(TITLES), prop::bool::weighted(0.2), any::<bool>());
    let sort = prop::sample::select(&[ThreadSort::UpdatedAt, ThreadSort::CreatedAt, ThreadSort::Title][..]);
    let change = prop_oneof![
        1 => prop::sample::select(TITLES).prop_map(Change::Create),
        3 => any::<usize>().prop_map(Change::Message),
        1 => (any::<usize>(), prop::sample::select(TITLES)).prop_map(|(i, t)| Change::Rename(i, t)),
        1 => any::<usize>().prop_map(Change::Pin),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, b)| Change::Archive(i, b)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, b)| Change::Tag(i, b)),
        1 => any::<usize>().prop_map(Change::Delete),
    ];
    let changes = prop::collection::vec(prop::collection::vec(change, 0..4), 0..8);
    (prop::collection::vec(thread, 0..20), 1u32..8, sort, any::<bool>(), prop::bool::weighted(0.3), changes).prop_map(
        |(threads, page_size, sort, descending, filter, changes)| Paging {
            threads: threads.into_iter().map(|(t, p, x)| (t.to_string(), p, x)).collect(),
            page_size,
            sort,
            descending,
            filter,
            changes,
        },
    )
}

/// (10) Walking the pages gives exactly the unpaginated listing, in order, without duplicates or gaps; with
/// threads added, given messages, renamed, pinned, archived, re-tagged or deleted between pages, the walk
/// still gives the listing as it was when it began, in that order, less the deleted threads.
fn pages_cover_the_listing_exactly(backend: Backend, test: &str) {
    check_property(backend, test, 32, paging(), |db, paging| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let mut ids = Vec::new();
        for (title, pinned, x) in &paging.threads {
            let tags = if *x { tags(&["x"]) } else { Vec::new() };
            let t = s.create_thread(u, title, &tags).await.unwrap();
            if *pinned {
                s.update_thread(u, t.id, &ThreadPatch { pinned: Some(true), ..Default::default() }).await.unwrap();
            }
            ids.push(t.id);
        }
        let base = ThreadQuery {
            sort: paging.sort,
            descending: paging.descending,
            tags: if paging.filter { tags(&["x"]) } else { Vec::new() },
            ..Default::default()
        };
        let everything = s.list_threads(u, &ThreadQuery { limit: 100, ..base.clone() }).await.unwrap();
        assert!(everything.next.is_none());
        let expected: Vec<Uuid> = everything.threads.iter().map(|t| t.id).collect();

        // Undisturbed: the same list, in the same order.
        let paged: Vec<Uuid> = all_threads(s, u, &ThreadQuery { limit: paging.page_size, ..base.clone() })
            .await
            .iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(paged, expected);

        // With changes between pages: the listing as it was, less what was deleted.
        let mut query = ThreadQuery { limit: paging.page_size, ..base.clone() };
        let mut seen = Vec::new();
        let mut deleted = HashSet::new();
        let mut changes = paging.changes.iter();
        for pages in 1.. {
            assert!(pages <= 200, "the walk does not end");
            let page = s.list_threads(u, &query).await.unwrap();
            assert!(page.threads.len() <= paging.page_size as usize);
            seen.extend(page.threads.iter().map(|t| t.id));
            let Some(next) = page.next else { break };
            query.cursor = Some(next);
            for change in changes.next().into_iter().flatten() {
                let pick = |i: &usize| (!ids.is_empty()).then(|| ids[i % ids.len()]).filter(|id| !deleted.contains(id));
                let patch = |i: &usize, patch: ThreadPatch| pick(i).map(|id| (id, patch));
                let update = match change {
                    Change::Create(title) => {
                        s.create_thread(u, title, &tags(&["x"])).await.unwrap();
                        None
                    }
                    Change::Message(i) => {
                        if let Some(id) = pick(i) {
                            say(s, u, id, "between pages").await;
                        }
                        None
                    }
                    Change::Rename(i, title) => {
                        patch(i, ThreadPatch { title: Some(title.to_string()), ..Default::default() })
                    }
                    Change::Pin(i) => match pick(i) {
                        Some(id) => {
                            let pinned = !s.get_thread(u, id).await.unwrap().pinned;
                            patch(i, ThreadPatch { pinned: Some(pinned), ..Default::default() })
                        }
                        None => None,
                    },
                    Change::Archive(i, on) => patch(i, ThreadPatch { archived: Some(*on), ..Default::default() }),
                    Change::Tag(i, on) => {
                        let tags = if *on { tags(&["x", "y"]) } else { tags(&["y"]) };
                        patch(i, ThreadPatch { tags: Some(tags), ..Default::default() })
                    }
                    Change::Delete(i) => {
                        if let Some(id) = pick(i) {
                            s.delete_thread(u, id).await.unwrap();
                            deleted.insert(id);
                        }
                        None
                    }
                };
                if let Some((id, patch)) = update {
                    s.update_thread(u, id, &patch).await.unwrap();
                }
            }
        }
        // A thread deleted after its page was read has come already; all others come iff not deleted.
        let mut rest = expected.iter();
        assert!(seen.iter().all(|id| rest.any(|e| e == id)), "not the start's listing in its order: {seen:?}");
        let alive = |ids: &[Uuid]| ids.iter().copied().filter(|id| !deleted.contains(id)).collect::<Vec<_>>();
        assert_eq!(alive(&seen), alive(&expected), "the walk differs from the listing at its start");
    });
}

/// (10) The model's view of a long thread, read from a window of its newest messages (the rest by id and role
/// only), is exactly the view built from every message: the same messages sent, the same record.
fn context_read_by_window_equals_building_from_every_message(backend: Backend, test: &str) {
    use quire::chat::context::{self, ContextInput};
    use quire::store::history::{ImportArtifact, ImportMessage, ImportThread};
    // Per turn: words of the answer, a blank answer, a fulfilled request (a document was made from it).
    let turn = (1usize..150, prop::bool::weighted(0.05), prop::bool::weighted(0.1));
    let strategy = (prop::collection::vec(turn, 100..700), 50usize..60_000);
    check_property(backend, test, 6, strategy, |db, (turns, budget)| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let start = chrono::Utc::now() - chrono::Duration::days(1);
        let mut messages = Vec::new();
        let mut artifacts = Vec::new();
        let words =
            |n: usize, seed: usize| (0..n).map(|k| format!("w{}", (k * 7 + seed) % 97)).collect::<Vec<_>>().join(" ");
        for (i, (answer_words, blank, fulfilled)) in turns.iter().enumerate() {
            let at = start + chrono::Duration::seconds(i as i64);
            let request = messages.len();
            for (role, content) in [
                (Role::User, words(5 + i % 40, i)),
                (Role::Assistant, if *blank { String::new() } else { words(*answer_words, i + 1) }),
            ] {
                messages.push(ImportMessage {
                    seq: messages.len() as i64 + 1,
                    role,
                    content,
                    status: MessageStatus::Complete,
                    usage: Usage::default(),
                    model: None,
                    created_at: at,
                });
            }
            if *fulfilled {
                artifacts.push(ImportArtifact {
                    artifact_type: ArtifactType::UserStories,
                    title: format!("Stories {i}"),
                    content: "# Stories".into(),
                    version: 1,
                    request_message: Some(request),
                    assistant_message: Some(request + 1),
                    created_at: at,
                });
            }
        }
        let thread = ImportThread {
            title: "Long".into(),
            tags: Vec::new(),
            pinned: false,
            archived: false,
            created_at: start,
            updated_at: start,
            messages,
            artifacts,
        };
        let id = s.import_threads(u, vec![thread]).await.unwrap()[0].id;

        let read = context::load(s.as_ref(), u, id, budget, None).await.unwrap();
        let every = s.list_messages(u, id).await.unwrap();
        let fulfilled = s.fulfilled_requests(u, id).await.unwrap();
        let whole = context::build(ContextInput {
            messages: &every,
            fulfilled: &fulfilled,
            summary: None,
            budget,
            ephemeral: None,
        });
        assert_eq!(read.record, whole.record, "budget {budget}");
        let sent =
            |built: &context::BuiltContext| built.messages.iter().map(|m| (m.role, m.text())).collect::<Vec<_>>();
        assert_eq!(sent(&read), sent(&whole), "budget {budget}");
        assert!(!sent(&read).iter().any(|(_, text)| text.contains('\u{2026}')), "no placeholder reaches the model");
    });
}
