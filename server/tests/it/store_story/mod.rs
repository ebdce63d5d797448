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

use proptest::prelude::*;
use serde_json::json;
use store::{
    self, search_query, CursorKey, DynStore, EventRun, FinalAnswer, HitKind, MessageUpdate, NewArtifact, NewMessage,
    NewUser, SearchPage, Session, SpentTokens, StoreError, StoredEvent, ThreadCursor, ThreadPatch, ThreadQuery,
    ThreadSort, TurnEnd, TurnLimits, TurnStart, TurnTrace, RANKED_CANDIDATES,
};
use uuid::Uuid;
use wire::{ArtifactType, Message, MessageStatus, Role, ToolCallStep, Trace, TraceStep, Usage};

use crate::common::backends::{check_property, properties, run_story, stories, Backend, Db, Raw};
use crate::common::{message_update, new_message, new_user, tags};

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

/// The store of `db`, a new person, and a conversation of theirs called `title`: where most stories start.
async fn someones_thread<'a>(db: &'a Db, title: &str) -> (&'a DynStore, Uuid, wire::Thread) {
    let store = &db.store;
    let user = new_user(store).await;
    let thread = store.create_thread(user, title, &[]).await.unwrap();
    (store, user, thread)
}

/// Starts a turn of `user` in `thread` with their message `request`, under no limits.
async fn start_with(
    store: &DynStore,
    user: Uuid,
    thread: Uuid,
    turn: Uuid,
    request: NewMessage,
) -> store::Result<Option<Message>> {
    let start = TurnStart {
        user,
        sender: user,
        thread,
        turn,
        stale_after_ms: 60_000,
        request: Some(request),
        message_id: Uuid::now_v7(),
    };
    store.start_turn(start, &TurnLimits::default()).await
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

async fn say(store: &DynStore, user: Uuid, thread: Uuid, content: &str) -> Message {
    store.append_message(user, new_message(thread, Role::User, content)).await.expect("append message")
}

async fn answer(store: &DynStore, user: Uuid, thread: Uuid, content: &str) -> Message {
    store.append_message(user, new_message(thread, Role::Assistant, content)).await.expect("append answer")
}

fn new_artifact(thread: Uuid, title: &str, content: &str) -> NewArtifact {
    crate::common::new_artifact(thread, ArtifactType::Custom, title, content)
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
async fn all_threads(store: &DynStore, user: Uuid, query: &ThreadQuery) -> Vec<wire::Thread> {
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

/// The ids of every thread of a listing.
async fn all_thread_ids<C: FromIterator<Uuid>>(store: &DynStore, user: Uuid, query: &ThreadQuery) -> C {
    all_threads(store, user, query).await.iter().map(|t| t.id).collect()
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

/// A draft of an answer, saved as still being written or as finished.
fn answer_draft(turn: Uuid, user: Uuid, thread: Uuid, id: Uuid, content: &str, writing: bool) -> store::TurnProgress {
    store::TurnProgress {
        turn,
        user,
        events: Vec::new(),
        answer: Some(store::AnswerDraft {
            id,
            thread_id: thread,
            update: message_update(content, if writing { MessageStatus::Interrupted } else { MessageStatus::Complete }),
            writing,
            question: None,
        }),
    }
}

/// The ids of the user's messages that a search for `word` finds.
async fn found(store: &DynStore, user: Uuid, word: &str) -> Vec<Option<Uuid>> {
    let page = store.search(user, word, 100, 0).await.unwrap();
    assert_eq!(page.total, page.hits.len() as u64);
    page.hits.iter().filter(|h| h.kind == HitKind::Message).map(|h| h.message_id).collect()
}

mod accounts;
mod documents;
mod messages;
mod projects;
mod properties;
mod search;
mod threads;
mod turns;
