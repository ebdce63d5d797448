//! Saving the drafts of answers being written (criterion): what the progress writer does every few dozen
//! milliseconds while turns stream.
//!
//! - `drafts/<backend>/writing`: one `Store::save_progress` batch rewriting 500 saved drafts (one per running
//!   turn, 2,000 characters each, the text changed every batch), marked as still being written: kept out of the
//!   search index.
//! - `drafts/<backend>/finished`: the same batch marked finished, so every draft is indexed again: what each batch
//!   cost before drafts were kept out of the index.
//!
//! - `drafts/<backend>/events`: one batch of the events 500 running turns streamed in 250 ms (12 each, a text
//!   delta of a few words with its JSON), without drafts: what every batch stores for re-attaching clients.
//!
//! - `limits/postgres`: one rate-limit check in the database (the statement every limited request runs on
//!   PostgreSQL), timed one by one and printed as p50/p99: sequential checks over 1,000 keys, then 8 callers at
//!   once on one key (they queue on its row), through pools of 16 connections (the main pool, which checks
//!   shared before they had their own), 1, 2 (Quire's default) and 4, taking turns in one run. SQLite counts
//!   limits in memory and has nothing to time here.
//!
//! SQLite always; PostgreSQL too when `QUIRE_TEST_POSTGRES_URL` names a database (`scripts/with-postgres`).
//!
//!     cargo bench --profile server-release -p server --bench drafts
//!     scripts/with-postgres cargo bench --profile server-release -p server --bench drafts
//!
//! `cargo test -p server --benches` runs each benchmark once, with 5 drafts (criterion's test mode).

#[path = "support/mode.rs"]
mod mode;
#[path = "support/stats.rs"]
mod stats;
#[path = "support/stores.rs"]
mod stores;
#[path = "support/text.rs"]
mod text;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use std::{
    num::NonZeroU32,
    str::FromStr,
    sync::Arc,
    time::{Duration, Instant},
};
use wire::{MessageStatus, Usage};

use store::postgres::Postgres;
use store::{AnswerDraft, DynStore, EventRun, MessageUpdate, Rate, SharedLimits, TurnProgress};
use text::TextGen;
use uuid::Uuid;

/// Running turns whose drafts one batch rewrites.
const TURNS: usize = 500;
/// Characters of each draft.
const DRAFT_CHARS: usize = 2_000;

/// One running turn: its id, its thread, its answer's id and the answer's text so far.
struct Running {
    turn: Uuid,
    thread: Uuid,
    answer: Uuid,
    text: String,
}

/// Events streamed per turn between two batches (deltas 20 ms apart, a batch every 250 ms).
const EVENTS_PER_TURN: i64 = 12;

/// A batch for every turn: its draft, the text changed by `round` (as a longer text would change it) and saved as
/// `writing` says; or with `None`, no draft but `EVENTS_PER_TURN` new events, numbered after earlier rounds'.
fn batch(user: Uuid, turns: &[Running], round: i64, writing: Option<bool>) -> Vec<TurnProgress> {
    turns
        .iter()
        .map(|t| TurnProgress {
            turn: t.turn,
            user,
            // As the live turn hands them over: the batch's deltas are one run.
            events: match writing {
                Some(_) => Vec::new(),
                None => {
                    let first = round * EVENTS_PER_TURN + 1;
                    let data: Vec<String> = (first..first + EVENTS_PER_TURN)
                        .map(|seq| format!(r#"{{"text":"word{seq} and more "}}"#))
                        .collect();
                    vec![EventRun::of(first, "text_delta", data.iter().map(String::as_str))]
                }
            },
            answer: writing.map(|writing| AnswerDraft {
                id: t.answer,
                thread_id: t.thread,
                update: MessageUpdate {
                    content: format!("{} round{round}", t.text),
                    status: MessageStatus::Interrupted,
                    usage: Usage::default(),
                    model: Some("bench".into()),
                    context: None,
                },
                writing,
                question: None,
            }),
        })
        .collect()
}

/// A user with `n` running turns, each with its first draft saved (as being written or not).
async fn running_turns(store: &DynStore, n: usize, writing: bool, gen: &mut TextGen) -> (Uuid, Vec<Running>) {
    let user = stores::person(store).await;
    let mut turns = Vec::with_capacity(n);
    for i in 0..n {
        let thread = store.create_thread(user, &format!("Thread {i}"), &[]).await.expect("thread").id;
        let turn = Uuid::now_v7();
        store.begin_turn(user, thread, turn, 3_600_000).await.expect("turn");
        turns.push(Running { turn, thread, answer: Uuid::now_v7(), text: gen.prose(DRAFT_CHARS) });
    }
    store.save_progress(&batch(user, &turns, 0, Some(writing))).await.expect("first save");
    (user, turns)
}

fn draft_benches(c: &mut Criterion) {
    let smoke = mode::smoke_run();
    let n = if smoke { 5 } else { TURNS };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = stores::stores(&rt, &dir, "drafts");
    let mut gen = TextGen::new(7);
    let mut group = c.benchmark_group("drafts");
    group.sample_size(20);
    group.throughput(Throughput::Elements(n as u64));
    for (backend, store) in &stores {
        // Drafts as being written, drafts finished, or events without drafts (`None`).
        for (kind, writing) in [("writing", Some(true)), ("finished", Some(false)), ("events", None)] {
            let (user, turns) = rt.block_on(running_turns(store, n, writing.unwrap_or(true), &mut gen));
            let round = std::cell::Cell::new(0);
            group.bench_function(format!("{backend}/{kind}"), |b| {
                b.to_async(&rt).iter_batched(
                    || {
                        round.set(round.get() + 1);
                        batch(user, &turns, round.get(), writing)
                    },
                    |progress| async move { store.save_progress(&progress).await.expect("save") },
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

/// Times `checks` rate-limit checks, one after the other, spread over `keys` keys.
async fn timed_checks(limits: Arc<dyn SharedLimits>, checks: usize, keys: usize, name: &str) -> Vec<Duration> {
    let rate = Rate::per_minute(NonZeroU32::new(100).expect("non-zero"));
    let mut samples = Vec::with_capacity(checks);
    for i in 0..checks {
        let key = format!("bench:{name}:{}", i % keys);
        let start = Instant::now();
        limits.admit(&key, rate, store::now()).await.expect("check");
        samples.push(start.elapsed());
    }
    samples
}

/// The pools of limit checks compared, each a store of its own on the same database: the store's main pool of 16
/// connections, and pools of their own of 1, 2 (the default) and 4.
fn limit_pools() -> Vec<(&'static str, PgPoolOptions)> {
    vec![
        ("shared pool of 16", Postgres::pool_options()),
        ("own pool of 1", Postgres::limit_pool_options(1)),
        ("own pool of 2", Postgres::limit_pool_options(2)),
        ("own pool of 4", Postgres::limit_pool_options(4)),
    ]
}

fn limit_benches(_: &mut Criterion) {
    let Ok(url) = std::env::var("QUIRE_TEST_POSTGRES_URL") else {
        println!("limits: skipped (PostgreSQL only: set QUIRE_TEST_POSTGRES_URL)");
        return;
    };
    let checks = if mode::smoke_run() { 20 } else { 20_000 };
    let rounds = 10;
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let options = PgConnectOptions::from_str(&url).expect("postgres url");
    let pools: Vec<(&str, Arc<dyn SharedLimits>)> = limit_pools()
        .into_iter()
        .map(|(name, limits)| {
            let store = Postgres::connect_with(options.clone(), Postgres::pool_options(), limits);
            let store = rt.block_on(store).expect("postgres store");
            (name, Arc::new(store) as Arc<dyn SharedLimits>)
        })
        .collect();
    for (name, limits) in &pools {
        rt.block_on(timed_checks(limits.clone(), checks / 10, 1_000, &format!("warm:{name}")));
    }
    // The pools take turns, a tenth of the checks at a time, so that the load other work puts on the machine
    // falls on each alike.
    let mut one_by_one: Vec<Vec<Duration>> = vec![Vec::new(); pools.len()];
    let mut contended: Vec<Vec<Duration>> = vec![Vec::new(); pools.len()];
    for _ in 0..rounds {
        for (i, (name, limits)) in pools.iter().enumerate() {
            let key = format!("sequential:{name}");
            one_by_one[i].extend(rt.block_on(timed_checks(limits.clone(), checks / rounds, 1_000, &key)));
            let callers = (0..8).map(|_| rt.spawn(timed_checks(limits.clone(), checks / rounds / 8, 1, name)));
            let callers: Vec<_> = callers.collect();
            contended[i].extend(callers.into_iter().flat_map(|c| rt.block_on(c).expect("caller")));
        }
    }
    println!("limits/postgres                             p50        p95        p99        max");
    for (i, (name, _)) in pools.iter().enumerate() {
        println!("{:<20} sequential, 1,000 keys {}", name, stats::Summary::of(&mut one_by_one[i]).row());
        println!("{:<20} 8 callers, one key     {}", name, stats::Summary::of(&mut contended[i]).row());
    }
    let forgotten = rt.block_on(pools[0].1.forget_idle_limits(store::now() + chrono::Duration::hours(1)));
    println!("rows deleted afterwards: {}", forgotten.expect("forget"));
}

criterion_group!(benches, draft_benches, limit_benches);
criterion_main!(benches);
