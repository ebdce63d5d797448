//! Several stateless Quire instances on one PostgreSQL: the slice works unchanged, each instance sees the
//! others' conversations, a running turn can be followed and stopped from any of them, and every limit is
//! counted once for all of them.

use std::{num::NonZeroU32, sync::Arc, time::Duration};

use crate::chat_turns::{assert_stopped, chat_until_draft, half_an_answer, take_over};
use crate::common::backends::Raw;
use crate::common::{
    fresh_postgres_url, read_frames, read_some_frames, shared_instance, ExpectJson, ScriptedModel, Step, TestServer,
    PASSWORD,
};
use crate::protection::{guess_at_once, most_admitted_within};
use llm::{builtin::Builtin, Provider};
use quire::auth::throttle::FREE_FAILURES;
use quire::config::Config;
use store::{Admission, Rate};
use wire::{MessageStatus, ThreadList};

async fn instance(url: &str, provider: Arc<dyn Provider>) -> TestServer {
    shared_instance(url, provider, |_| {}).await
}

/// Two instances answering with the built-in model on the database at `url`, each configured by `configure`.
async fn two_builtin_instances(url: &str, configure: impl Fn(&mut Config)) -> (TestServer, TestServer) {
    let a = shared_instance(url, Arc::new(Builtin::new()), &configure).await;
    let b = shared_instance(url, Arc::new(Builtin::new()), &configure).await;
    (a, b)
}

#[tokio::test]
async fn the_slice_runs_unchanged_on_postgres() {
    let Some(url) = fresh_postgres_url("the_slice_runs_unchanged_on_postgres").await else { return };
    let server = instance(&url, Arc::new(Builtin::new())).await;
    let thread = server.create_thread().await;
    for i in 0..3 {
        let frames = server.chat(thread, &format!("The portal must show invoice {i}.")).await;
        assert!(frames.iter().filter(|f| f.event.name() == "text_delta").count() >= 3);
        assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    }
    let detail = server.detail(thread).await;
    assert_eq!(detail.messages.len(), 6);
    assert_eq!(detail.thread.message_count, 6);
    assert_eq!(detail.messages.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
}

#[tokio::test]
async fn two_instances_see_each_others_threads_and_turns() {
    let Some(url) = fresh_postgres_url("two_instances_see_each_others_threads_and_turns").await else { return };
    let a = instance(&url, Arc::new(Builtin::new().with_delay(Duration::from_millis(10)))).await;
    let b = instance(&url, Arc::new(Builtin::new())).await;

    let thread = a.create_thread().await;
    let listed: ThreadList = b.client.get(b.url("/api/threads")).expect_json().await;
    assert!(listed.threads.iter().any(|t| t.id == thread), "B lists A's thread");

    // A writes an answer; the client drops after a few events and re-attaches on B.
    let response = a.send_text(thread, "Drivers need route updates. Dispatchers must see delays.").await;
    let seen = read_some_frames(response, 3).await;
    let resumed = b.open_stream(thread, Some(seen.last().unwrap().id.clone().unwrap())).await;
    let rest = read_frames(resumed).await;
    assert_eq!(rest.last().unwrap().event.name(), "message_complete", "B follows the turn to its end");
    let full = read_frames(b.open_stream(thread, None).await).await;
    let joined: Vec<Option<String>> = seen.iter().chain(rest.iter()).map(|f| f.id.clone()).collect();
    assert_eq!(joined, full.iter().map(|f| f.id.clone()).collect::<Vec<_>>(), "nothing lost, nothing twice");

    let on_b = b.detail(thread).await;
    assert_eq!(on_b.messages.len(), 2);
    assert_eq!(on_b.messages[1].status, MessageStatus::Complete);
}

#[tokio::test]
async fn a_turn_can_be_stopped_from_another_instance() {
    let Some(url) = fresh_postgres_url("a_turn_can_be_stopped_from_another_instance").await else { return };
    let script = vec![Step::delta("Half an answer"), Step::Hang];
    let a = instance(&url, ScriptedModel::new(vec![script])).await;
    let b = instance(&url, Arc::new(Builtin::new())).await;
    let thread = a.create_thread().await;
    let response = a.send_text(thread, "Go on").await;
    let reader = tokio::spawn(read_frames(response));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stop = b.client.post(b.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    assert_eq!(stop.status(), 202);
    let frames = reader.await.unwrap();
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    let detail = b.wait_idle(thread).await;
    assert_eq!(detail.messages[1].status, MessageStatus::Stopped);
    assert_eq!(detail.messages[1].content, "Half an answer");
}

/// A turn whose heartbeat went quiet while its instance lived on (it could not reach the database for a while)
/// is taken over by a message on another instance; at its next heartbeat it learns so and stops, instead of
/// spending on beside the newer turn.
#[tokio::test]
async fn a_turn_taken_over_on_another_instance_stops_at_its_next_heartbeat() {
    let Some(url) = fresh_postgres_url("a_turn_taken_over_on_another_instance").await else { return };
    let script = half_an_answer();
    let a = instance(&url, ScriptedModel::new(vec![script])).await;
    let b = instance(&url, Arc::new(Builtin::new())).await;
    let thread = a.create_thread().await;
    let reader = chat_until_draft(&a, thread, "Go on", "Half an answer").await;
    let raw = Raw::Postgres(sqlx::PgPool::connect(&url).await.unwrap());
    let newer = take_over(&raw, &b, thread, "Are you still there?").await;
    assert_eq!(newer.last().unwrap().event.name(), "message_complete");
    let frames = tokio::time::timeout(Duration::from_secs(10), reader).await.expect("A's turn stops").unwrap();
    assert_stopped(&frames);
    let detail = b.wait_idle(thread).await;
    assert_eq!(
        (detail.messages[1].content.as_str(), detail.messages[1].status),
        ("Half an answer", MessageStatus::Stopped)
    );
    assert_eq!(detail.messages.len(), 4);
}

#[tokio::test]
async fn following_a_turn_whose_instance_died_ends_instead_of_waiting() {
    let Some(url) = fresh_postgres_url("following_a_turn_whose_instance_died_ends").await else { return };
    let server = instance(&url, Arc::new(Builtin::new())).await;
    let thread = server.create_thread().await;
    // A turn left running by an instance that died an hour ago: its heartbeat stopped then.
    let turn = uuid::Uuid::now_v7();
    server.state.store.begin_turn(server.user.id, thread, turn, 60_000).await.unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query("update turns set heartbeat_at = now() - interval '1 hour' where id = $1")
        .bind(turn)
        .execute(&pool)
        .await
        .unwrap();
    assert!(!server.detail(thread).await.running, "the conversation is not shown as being answered");
    let resumed = server.open_stream(thread, None).await;
    assert_eq!(resumed.status(), 200);
    let frames = tokio::time::timeout(Duration::from_secs(10), read_frames(resumed)).await;
    assert!(frames.expect("the stream ends instead of waiting for a dead turn").is_empty());
}

#[tokio::test]
async fn requests_alternated_between_two_instances_meet_one_general_limit() {
    let Some(url) = fresh_postgres_url("requests_alternated_between_two_instances").await else { return };
    let limit = |config: &mut Config| config.limits.general = 10;
    let (a, b) = two_builtin_instances(&url, limit).await;
    // A person whose requests so far are none, with one session used on both instances.
    let (client, _) = a.second_user("alternating@example.com").await;
    let mut statuses = Vec::new();
    for i in 0..20 {
        let server = if i % 2 == 0 { &a } else { &b };
        let response = client.get(server.url("/api/threads")).send().await.unwrap();
        if response.status() == 429 {
            let retry: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
            assert!((1..=6).contains(&retry), "Retry-After {retry}");
        }
        statuses.push(response.status().as_u16());
    }
    // Counted per instance, each would have allowed 10: all 20 would pass.
    assert_eq!(statuses[..10], [200; 10], "{statuses:?}");
    assert_eq!(statuses[10..], [429; 10], "{statuses:?}");
    // The limit is the person's: the owner, on either instance, is not affected.
    assert_eq!(b.client.get(b.url("/api/threads")).send().await.unwrap().status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_guesses_at_one_account_on_two_instances_meet_one_throttle() {
    let Some(url) = fresh_postgres_url("wrong_guesses_at_one_account").await else { return };
    // Only the per-account throttle applies here, not the per-address limit.
    let limit = |config: &mut Config| config.limits.auth = 1_000;
    let (a, b) = two_builtin_instances(&url, limit).await;
    for email in ["owner@example.com", "nobody@example.com"] {
        let (checked, refused, took) = guess_at_once(&[&a, &b], email, 24).await;
        assert!(checked > FREE_FAILURES as usize, "{email}: the free failures are checked ({checked})");
        assert!(checked <= most_admitted_within(took), "{email}: {checked} checked in {took:?}, {refused} refused");
    }
}

#[tokio::test]
async fn sign_in_attempts_from_one_address_meet_one_limit_on_two_instances() {
    let Some(url) = fresh_postgres_url("sign_in_attempts_from_one_address").await else { return };
    let limit = |config: &mut Config| config.limits.auth = 6;
    let (a, b) = two_builtin_instances(&url, limit).await;
    // Starting them used three attempts from this address: A signed up, B tried to and then signed in.
    // A body that is not JSON is refused after the limit is counted, without the cost of a password check.
    let mut statuses = Vec::new();
    for i in 0..8 {
        let server = if i % 2 == 0 { &a } else { &b };
        let response = server.anonymous().post(server.url("/api/auth/login")).body("not json").send().await.unwrap();
        statuses.push(response.status().as_u16());
    }
    let admitted = statuses.iter().filter(|&&s| s != 429).count();
    assert_eq!(admitted, 3, "{statuses:?}");
    assert!(statuses[3..].iter().all(|&s| s == 429), "{statuses:?}");
}

#[tokio::test]
async fn failed_sign_ins_on_one_instance_make_the_account_wait_on_the_other() {
    let Some(url) = fresh_postgres_url("failed_sign_ins_on_one_instance").await else { return };
    let (a, b) = two_builtin_instances(&url, |_| {}).await;
    let login = |server: &TestServer, password: &str| server.sign_in("owner@example.com", password);
    // Free failures, then one that starts a wait, spread over both instances.
    for i in 0..=quire::auth::throttle::FREE_FAILURES {
        let server = if i % 2 == 0 { &a } else { &b };
        assert_eq!(login(server, "wrong guess").await.status(), 401);
    }
    for server in [&a, &b] {
        let refused = login(server, PASSWORD).await;
        assert_eq!(refused.status(), 429, "even the right password waits, on either instance");
        assert!(refused.headers().get("retry-after").is_some());
    }
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(login(&b, PASSWORD).await.status(), 200);
    assert_eq!(login(&a, "wrong guess").await.status(), 401, "a success forgets the failures");
}

#[tokio::test]
async fn the_database_applies_the_gcra_rule_and_forgets_spent_keys() {
    let Some(url) = fresh_postgres_url("the_database_applies_the_gcra_rule").await else { return };
    let store = store::connect(&url).await.expect("connect");
    let limits = store.shared_limits().expect("postgres shares its limits");
    let rate = Rate::per_minute(NonZeroU32::new(4).unwrap());
    let start = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    // Bursts, refills, refusals at odd moments: the statement decides as the rule does, waits included.
    let offsets_ms =
        [0, 0, 0, 0, 0, 1, 14_999, 15_000, 15_000, 20_000, 29_999, 30_000, 200_000, 200_000, 200_000, 200_000];
    let mut tat = None;
    for offset in offsets_ms {
        let now = start + chrono::Duration::milliseconds(offset);
        let (expected, next) = rate.decide(tat, now.timestamp_micros());
        tat = Some(next);
        assert_eq!(limits.admit("test:key", rate, now).await.unwrap(), expected, "at {offset} ms");
    }
    assert_eq!(
        limits.admit("test:key", rate, start + chrono::Duration::seconds(200)).await.unwrap(),
        Admission::Refused { retry_after: Duration::from_secs(15) },
        "four at once, then the fifth waits a quarter of a minute"
    );
    // Keys are independent.
    assert_eq!(limits.admit("test:other", rate, start).await.unwrap(), Admission::Admitted);

    // Two instances' checks at the same moment admit the burst once between them.
    let other = store::connect(&url).await.expect("connect").shared_limits().unwrap();
    let checks = (0..20).map(|i| {
        let limits = if i % 2 == 0 { limits.clone() } else { other.clone() };
        tokio::spawn(async move { limits.admit("test:race", rate, start).await.unwrap() })
    });
    let mut admitted = 0;
    for check in checks.collect::<Vec<_>>() {
        admitted += usize::from(check.await.unwrap() == Admission::Admitted);
    }
    assert_eq!(admitted, 4);

    // Rows whose time has passed go; the ones still counting stay.
    let forgotten = limits.forget_idle_limits(start + chrono::Duration::seconds(90)).await.unwrap();
    assert_eq!(forgotten, 2, "test:other and test:race ran out, test:key still counts");
    assert!(matches!(
        limits.admit("test:key", rate, start + chrono::Duration::seconds(200)).await.unwrap(),
        Admission::Refused { .. }
    ));
}

#[tokio::test]
async fn rate_limit_checks_are_answered_while_every_other_connection_waits() {
    use sqlx::{postgres::PgConnectOptions, Connection};
    use std::str::FromStr;
    use store::{postgres::Postgres, Accounts, SharedLimits, StoreError};

    let Some(url) = fresh_postgres_url("rate_limit_checks_have_their_own_pool").await else { return };
    let options = PgConnectOptions::from_str(&url).unwrap();
    // One connection for every other query, kept busy below by a query that waits for a lock.
    let pool = Postgres::pool_options().max_connections(1);
    let store =
        Arc::new(Postgres::connect_with(options, pool, Postgres::limit_pool_options(1)).await.expect("connect"));
    let mut holder = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut lock = holder.begin().await.unwrap();
    sqlx::query("lock table users in access exclusive mode").execute(&mut *lock).await.unwrap();
    let blocked = tokio::spawn({
        let store = store.clone();
        async move { store.user_by_id(uuid::Uuid::new_v4()).await }
    });
    let waiting_for_lock = "select count(*) from pg_stat_activity where datname = current_database()
        and wait_event_type = 'Lock'";
    for attempt in 0.. {
        let waiting: i64 = sqlx::query_scalar(waiting_for_lock).fetch_one(&mut *lock).await.unwrap();
        if waiting > 0 {
            break;
        }
        assert!(attempt < 1_000, "the query never reached the lock");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let rate = Rate::per_minute(NonZeroU32::new(4).unwrap());
    let check = store.admit("test:own-pool", rate, store::now()).await.expect("check");
    assert_eq!(check, Admission::Admitted);
    assert!(!blocked.is_finished(), "the other query still holds the only connection of its pool");
    lock.rollback().await.unwrap();
    assert!(matches!(blocked.await.unwrap(), Err(StoreError::NotFound)));
}
