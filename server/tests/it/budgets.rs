//! Daily token budgets and the cap on a person's running turns, on both backends: a turn over a budget is
//! refused with 429 `budget_exceeded` (and `Retry-After` until the next UTC midnight) and stores nothing, a turn
//! started within it finishes, silent generation and summaries count, a person's own budget wins; a turn past
//! the cap is refused with 429 `too_many_turns`, also when the starts come at once; and on PostgreSQL two
//! instances share both.

use std::sync::Arc;

use chrono::{DateTime, Days, Utc};
use futures::future::join_all;
use quire::config::Config;
use store::{NewSummary, StoreError, TurnLimits};
use uuid::Uuid;
use wire::{ErrorBody, HistoryStats, TokenBudget};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{
    fresh_postgres_url, get_json, read_frames, shared_instance, sign_up_or_in, ScriptedModel, Step, TestServer,
};

stories!(
    a_turn_over_the_personal_budget_is_refused_and_stores_nothing,
    the_global_budget_refuses_everyone_once_spent,
    silent_generation_and_summaries_count_against_the_budget,
    a_persons_own_budget_wins_over_the_configured_one,
    a_turn_past_the_cap_is_refused_across_conversations,
    starts_at_once_never_pass_the_cap_together,
    a_person_refused_lately_waits_for_the_commit_before_the_model_is_asked,
);

/// Tokens each scripted answer costs: 10 in, one word out.
const TURN_TOKENS: u64 = 11;

async fn server(db: &Db, configure: impl FnOnce(&mut Config)) -> TestServer {
    TestServer::with_configured(db.store.clone(), ScriptedModel::new(Vec::new()), configure).await
}

/// Posts a chat message; the response as it comes.
async fn send(
    server: &TestServer,
    client: &reqwest::Client,
    thread: Uuid,
    body: serde_json::Value,
) -> reqwest::Response {
    client.post(server.url(&format!("/api/threads/{thread}/chat"))).json(&body).send().await.unwrap()
}

async fn say(server: &TestServer, thread: Uuid, content: &str) -> reqwest::Response {
    send(server, &server.client, thread, serde_json::json!({ "content": content })).await
}

/// Asserts a 429 with `code`; its body's message and `Retry-After` in seconds, if any.
async fn refused(response: reqwest::Response, code: &str) -> (String, Option<u64>) {
    assert_eq!(response.status(), 429, "refused");
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
    let body: ErrorBody = response.json().await.unwrap();
    assert_eq!(body.error.code, code, "{}", body.error.message);
    (body.error.message, retry_after)
}

async fn budget_of(server: &TestServer, client: &reqwest::Client) -> Option<TokenBudget> {
    let stats: HistoryStats = get_json(client, &server.url("/api/stats")).await;
    stats.budget
}

fn next_utc_midnight() -> DateTime<Utc> {
    Utc::now().date_naive().checked_add_days(Days::new(1)).unwrap().and_hms_opt(0, 0, 0).unwrap().and_utc()
}

async fn messages_in(db: &Db, thread: Uuid) -> i64 {
    db.raw.count("messages", "thread_id", thread).await
}

async fn a_turn_over_the_personal_budget_is_refused_and_stores_nothing(db: Db) {
    let server = server(&db, |c| c.user_daily_tokens = 2 * TURN_TOKENS - 1).await;
    let thread = server.create_thread().await;
    server.chat(thread, "The first question.").await;
    let budget = budget_of(&server, &server.client).await.expect("a budget");
    assert_eq!((budget.limit, budget.used_today, budget.left), (21, 11, 10));
    assert_eq!(budget.resets_at, next_utc_midnight());

    // Within the budget when it starts, this turn finishes though it passes it.
    let frames = read_frames(say(&server, thread, "The second question.").await).await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    let budget = budget_of(&server, &server.client).await.expect("a budget");
    assert_eq!((budget.used_today, budget.left), (22, 0));

    let (message, retry_after) = refused(say(&server, thread, "The third question.").await, "budget_exceeded").await;
    assert!(message.contains("UTC"), "{message}");
    let until_midnight = (next_utc_midnight() - Utc::now()).num_seconds() as u64;
    let retry_after = retry_after.expect("Retry-After");
    assert!(retry_after >= 1 && retry_after <= until_midnight + 1, "{retry_after} s, midnight in {until_midnight} s");
    assert_eq!(messages_in(&db, thread).await, 4, "the refused message was not stored");
    // Another conversation is refused as well; another person is not.
    let other = server.create_thread().await;
    refused(say(&server, other, "Elsewhere.").await, "budget_exceeded").await;
    assert_eq!(messages_in(&db, other).await, 0);
    let (bob, _) = server.second_user("bob@example.com").await;
    let bobs: Uuid = server.create_thread_as(&bob).await;
    let response = send(&server, &bob, bobs, serde_json::json!({ "content": "Mine." })).await;
    assert_eq!(response.status(), 200);
}

async fn the_global_budget_refuses_everyone_once_spent(db: Db) {
    let server = server(&db, |c| c.daily_tokens = TURN_TOKENS + 1).await;
    let (bob, _) = server.second_user("bob@example.com").await;
    let bobs: Uuid = server.create_thread_as(&bob).await;
    let thread = server.create_thread().await;
    server.chat(thread, "One.").await;
    assert_eq!(budget_of(&server, &bob).await, None, "no personal budget to show");
    read_frames(send(&server, &bob, bobs, serde_json::json!({ "content": "Two." })).await).await;
    // 22 spent of 12 by two people: everyone is refused.
    refused(say(&server, thread, "Three.").await, "budget_exceeded").await;
    let (_, retry_after) =
        refused(send(&server, &bob, bobs, serde_json::json!({ "content": "Four." })).await, "budget_exceeded").await;
    assert!(retry_after.is_some());
    assert_eq!(messages_in(&db, thread).await, 2);
    assert_eq!(messages_in(&db, bobs).await, 2);
}

async fn silent_generation_and_summaries_count_against_the_budget(db: Db) {
    let server = server(&db, |c| c.user_daily_tokens = 3 * TURN_TOKENS + 50).await;
    let thread = server.create_thread().await;
    let silent = serde_json::json!({ "content": "Write user stories.", "artifact_generation": true });
    read_frames(send(&server, &server.client, thread, silent.clone()).await).await;
    assert_eq!(budget_of(&server, &server.client).await.unwrap().used_today, TURN_TOKENS, "a silent turn is counted");
    // A summary's tokens go on the same ledger.
    let summary = NewSummary {
        content: "They want user stories.".into(),
        covers_through: 0,
        covered_count: 0,
        model: "scripted-1".into(),
        usage: wire::Usage { input_tokens: 40, output_tokens: 10 },
        payer: server.user.id,
    };
    db.store.save_thread_summary(server.user.id, thread, &summary).await.unwrap();
    assert_eq!(budget_of(&server, &server.client).await.unwrap().used_today, TURN_TOKENS + 50);
    read_frames(send(&server, &server.client, thread, silent.clone()).await).await;
    read_frames(send(&server, &server.client, thread, silent.clone()).await).await;
    let budget = budget_of(&server, &server.client).await.unwrap();
    assert_eq!((budget.used_today, budget.left), (3 * TURN_TOKENS + 50, 0));
    refused(send(&server, &server.client, thread, silent).await, "budget_exceeded").await;
    assert_eq!(messages_in(&db, thread).await, 0, "silent turns store no message");
}

async fn a_persons_own_budget_wins_over_the_configured_one(db: Db) {
    let server = server(&db, |c| c.user_daily_tokens = TURN_TOKENS).await;
    let me = server.user.id;
    let thread = server.create_thread().await;
    server.chat(thread, "One.").await;
    refused(say(&server, thread, "Two.").await, "budget_exceeded").await;

    db.store.set_daily_token_budget(me, Some(100)).await.unwrap();
    assert_eq!(budget_of(&server, &server.client).await.unwrap().limit, 100);
    server.chat(thread, "Two, with a larger budget of my own.").await;
    // 0 of their own: no budget at all.
    db.store.set_daily_token_budget(me, Some(0)).await.unwrap();
    assert_eq!(budget_of(&server, &server.client).await, None);
    server.chat(thread, "Three, without a budget.").await;
    db.store.set_daily_token_budget(me, Some(30)).await.unwrap();
    refused(say(&server, thread, "Four.").await, "budget_exceeded").await;
    // Back to the configured budget.
    db.store.set_daily_token_budget(me, None).await.unwrap();
    assert_eq!(budget_of(&server, &server.client).await.unwrap().limit, TURN_TOKENS);
    assert!(matches!(db.store.set_daily_token_budget(Uuid::now_v7(), Some(5)).await, Err(StoreError::NotFound)));
    let limits = TurnLimits { user_daily_tokens: 1_000, ..TurnLimits::default() };
    assert_eq!(db.store.spending(me, 30_000, &limits).await.unwrap().user_used, 3 * TURN_TOKENS as i64);
}

/// A server whose model never finishes `hanging` answers (then answers normally), capping running turns at 3.
async fn capped_server(db: &Db, hanging: usize) -> TestServer {
    let model = ScriptedModel::new(vec![vec![Step::Hang]; hanging]);
    TestServer::with_configured(db.store.clone(), model, |c| c.user_concurrent_turns = 3).await
}

async fn a_turn_past_the_cap_is_refused_across_conversations(db: Db) {
    let server = capped_server(&db, 3).await;
    let mut threads = Vec::new();
    let mut open = Vec::new();
    for i in 0..3 {
        let thread = server.create_thread().await;
        let response = say(&server, thread, &format!("Question {i}.")).await;
        assert_eq!(response.status(), 200);
        threads.push(thread);
        open.push(response);
    }
    let fourth = server.create_thread().await;
    let (message, retry_after) = refused(say(&server, fourth, "A fourth at once.").await, "too_many_turns").await;
    assert!(message.contains("wait"), "{message}");
    assert_eq!(retry_after, None);
    assert_eq!(messages_in(&db, fourth).await, 0, "the refused message was not stored");
    // The cap answers before a conversation still answering does, as for any other start.
    let before = messages_in(&db, threads[2]).await;
    refused(say(&server, threads[2], "Another in a busy one.").await, "too_many_turns").await;
    assert_eq!(messages_in(&db, threads[2]).await, before, "the refused message was not stored");
    // Another person has caps of their own.
    let (bob, _) = server.second_user("bob@example.com").await;
    let bobs: Uuid = server.create_thread_as(&bob).await;
    assert_eq!(send(&server, &bob, bobs, serde_json::json!({ "content": "Mine." })).await.status(), 200);

    // One ends: there is room again.
    let stopped = server.client.post(server.url(&format!("/api/threads/{}/stop", threads[0]))).send().await.unwrap();
    assert_eq!(stopped.status(), 202);
    server.wait_idle(threads[0]).await;
    let frames = read_frames(say(&server, fourth, "A fourth, now.").await).await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    drop(open);
}

async fn starts_at_once_never_pass_the_cap_together(db: Db) {
    let server = capped_server(&db, 8).await;
    let mut threads = Vec::new();
    for _ in 0..8 {
        threads.push(server.create_thread().await);
    }
    let responses = join_all(threads.iter().map(|t| say(&server, *t, "All at once."))).await;
    let statuses: Vec<u16> = responses.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 3, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 5, "{statuses:?}");
}

/// An instance of a shared PostgreSQL database, capping turns at 3 and budgets at `user_daily_tokens`.
async fn instance(url: &str, model: Arc<ScriptedModel>, user_daily_tokens: u64) -> TestServer {
    shared_instance(url, model, move |config| {
        config.user_concurrent_turns = 3;
        config.user_daily_tokens = user_daily_tokens;
    })
    .await
}

#[tokio::test]
async fn two_instances_share_the_cap() {
    let Some(url) = fresh_postgres_url("two_instances_share_the_cap").await else { return };
    let hang = || ScriptedModel::new(vec![vec![Step::Hang]; 8]);
    let a = instance(&url, hang(), 0).await;
    let b = instance(&url, hang(), 0).await;
    let mut threads = Vec::new();
    for _ in 0..8 {
        threads.push(a.create_thread().await);
    }
    // Four starts on each instance at once: three pass in all.
    let starts = threads.iter().enumerate().map(|(i, t)| {
        let server = if i % 2 == 0 { &a } else { &b };
        say(server, *t, "All at once, anywhere.")
    });
    let responses = join_all(starts).await;
    let statuses: Vec<u16> = responses.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 3, "{statuses:?}");
}

#[tokio::test]
async fn two_instances_share_the_budget() {
    let Some(url) = fresh_postgres_url("two_instances_share_the_budget").await else { return };
    let a = instance(&url, ScriptedModel::new(Vec::new()), TURN_TOKENS).await;
    let b = instance(&url, ScriptedModel::new(Vec::new()), TURN_TOKENS).await;
    let thread = a.create_thread().await;
    a.chat(thread, "Spend it here.").await;
    // The same person, signed in on the other instance.
    let (client_b, _) = sign_up_or_in(&b.base, "owner@example.com").await;
    refused(send(&b, &client_b, thread, serde_json::json!({ "content": "Again, there." })).await, "budget_exceeded")
        .await;
    assert_eq!(budget_of(&b, &client_b).await.unwrap().left, 0);
}

#[tokio::test]
async fn a_stream_past_the_cap_is_refused_before_its_turn_starts() {
    let (store, _dir) = crate::common::sqlite_store().await;
    let model = ScriptedModel::new(vec![vec![Step::Hang]; 2]);
    let server = TestServer::with_configured(store, model, |c| c.user_open_streams = 2).await;
    let (first, second, third) =
        (server.create_thread().await, server.create_thread().await, server.create_thread().await);
    let open = vec![say(&server, first, "One.").await, say(&server, second, "Two.").await];
    assert!(open.iter().all(|r| r.status() == 200));
    refused(say(&server, third, "Three.").await, "too_many_streams").await;
    let resumed = server.get(&format!("/api/threads/{first}/stream")).await;
    refused(resumed, "too_many_streams").await;
    assert_eq!(server.detail(third).await.messages.len(), 0, "nothing started");
    // A stream that ends gives its place back.
    let mut open = open.into_iter();
    let stopped = server.client.post(server.url(&format!("/api/threads/{first}/stop"))).send().await.unwrap();
    assert_eq!(stopped.status(), 202);
    let frames = read_frames(open.next().unwrap()).await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    let resumed = server.get(&format!("/api/threads/{first}/stream")).await;
    assert_eq!(resumed.status(), 200, "the ended stream's place is free again");
}

/// A start opens its model call while it commits, so a refused one may have asked the model once (the call is
/// dropped, nothing relayed or saved); the person's next starts within a minute wait for their commit, so
/// refusals in a row never reach the model.
async fn a_person_refused_lately_waits_for_the_commit_before_the_model_is_asked(db: Db) {
    let model = ScriptedModel::new(Vec::new());
    let server = TestServer::with_configured(db.store.clone(), model.clone(), |c| {
        c.user_daily_tokens = TURN_TOKENS;
    })
    .await;
    let calls = || model.calls.load(std::sync::atomic::Ordering::SeqCst);
    let thread = server.create_thread().await;
    server.chat(thread, "The first question.").await;
    let before = calls();
    refused(say(&server, thread, "Over the budget.").await, "budget_exceeded").await;
    assert!(calls() <= before + 1, "a refused start asks the model at most once");
    let after_first = calls();
    for attempt in 0..3 {
        refused(say(&server, thread, &format!("Again {attempt}.")).await, "budget_exceeded").await;
    }
    let other = server.create_thread().await;
    refused(say(&server, other, "Elsewhere.").await, "budget_exceeded").await;
    assert_eq!(calls(), after_first, "starts refused in a row never reach the model");
    assert_eq!(messages_in(&db, thread).await, 2, "no refused message was stored");
}
