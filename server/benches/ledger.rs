//! The requirements ledger (criterion), on a conversation with 500 requirements and 20 documents that cite 25
//! each (one in four of them changed since, so some documents are out of date):
//!
//! - `ledger/record/<backend>`: what `record_requirements` costs a turn: the ledger read and folded for the turn's
//!   path, the entries checked against it, and one add and two changes written in one transaction
//!   (`chat::ledger::record`, as the tool runs it).
//! - `ledger/record_cpu/<backend>` (printed): the same recording's CPU time in this process over 500 runs (Quire's
//!   side, SQLite included, the PostgreSQL server not), which is what the goal counts.
//! - `ledger/view/<backend>`: the ledger with coverage and out-of-date marks, as `GET
//!   /api/threads/{id}/requirements` and every listing of the documents make it (`chat::ledger::marked`, then the
//!   wire ledger and the 20 documents marked).
//!
//! SQLite always; PostgreSQL too when `QUIRE_TEST_POSTGRES_URL` names a database (`scripts/with-postgres`).
//!
//!     cargo bench --profile server-release -p server --bench ledger
//!     scripts/with-postgres cargo bench --profile server-release -p server --bench ledger
//!
//! `cargo test -p server --benches` runs each once, on a ledger of 20 (criterion's test mode).

#[path = "support/mode.rs"]
mod mode;
#[path = "support/stores.rs"]
mod stores;

use std::collections::HashSet;

use criterion::{criterion_group, criterion_main, Criterion};
use quire::chat::ledger;
use serde_json::json;
use store::{Citation, DynStore, LedgerWrite, NewArtifact, NewMessage};
use uuid::Uuid;
use wire::{ArtifactType, MessageStatus, RequirementKind, RequirementStatus, Role, Usage, VersionAuthor};

fn requirements() -> usize {
    if mode::smoke_run() {
        20
    } else {
        500
    }
}

const DOCUMENTS: usize = 20;

/// A conversation of one person's message with `n` requirements, `DOCUMENTS` documents citing 25 each, and one
/// requirement in four changed since: the person, the conversation, the message.
async fn conversation(store: &DynStore, n: usize) -> (Uuid, Uuid, Uuid) {
    let user = stores::person(store).await;
    let thread = store.create_thread(user, "Booking", &[]).await.expect("thread").id;
    let message = NewMessage {
        thread_id: thread,
        role: Role::User,
        content: "Customers must be able to book slots.".into(),
        status: MessageStatus::Complete,
        usage: Usage::default(),
        model: None,
        quote: None,
        author: None,
    };
    let message = store.append_message(user, message).await.expect("message").id;
    let author = VersionAuthor::Assistant { model: Some("bench".into()) };
    let mut recorded = Vec::new();
    for chunk in (0..n).collect::<Vec<_>>().chunks(50) {
        let writes = chunk
            .iter()
            .map(|i| LedgerWrite::Add {
                text: format!("Requirement {i}: customers must be able to book slot kind {i} online."),
                kind: RequirementKind::Functional,
                message_id: Some(message),
            })
            .collect();
        recorded.extend(store.record_requirements(user, thread, writes, author.clone()).await.expect("recorded"));
    }
    for d in 0..DOCUMENTS {
        let cites = recorded
            .iter()
            .skip(d * 25 % n.max(1))
            .take(25)
            .map(|r| Citation { requirement: r.requirement, revision: r.revision })
            .collect();
        let document = NewArtifact {
            thread_id: thread,
            artifact_type: ArtifactType::UserStories,
            title: format!("Stories {d}"),
            content: "# Stories\n".repeat(50),
            request_message_id: None,
            assistant_message_id: None,
            answers: Vec::new(),
            model: None,
            cites,
        };
        store.create_artifact(user, document).await.expect("document");
    }
    let changes = recorded
        .iter()
        .step_by(4)
        .map(|r| LedgerWrite::Revise {
            requirement: r.requirement,
            number: r.number,
            text: format!("Requirement {}: changed.", r.number),
            kind: RequirementKind::Functional,
            status: RequirementStatus::Changed,
            message_id: Some(message),
        })
        .collect();
    store.record_requirements(user, thread, changes, author).await.expect("changed");
    (user, thread, message)
}

/// CPU time this process has used (user + system), from /proc (Linux; 10 ms ticks).
fn cpu_time() -> std::time::Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command name.
    let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    std::time::Duration::from_millis(ticks * 10)
}

fn ledger_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = stores::stores(&rt, &dir, "ledger");
    let n = requirements();
    let mut record = c.benchmark_group("ledger/record");
    record.sample_size(30);
    let mut prepared = Vec::new();
    for (backend, store) in &stores {
        // The view is measured on a conversation of its own, which recording does not grow.
        let (viewer, viewed, _) = rt.block_on(conversation(store, n));
        prepared.push((*backend, store.clone(), viewer, viewed));
        // Recording adds a requirement each time: every 500 times the conversation is made again (outside the
        // timing), so the ledger stays between 500 and 1,000.
        record.bench_function(*backend, |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let store = store.clone();
                async move {
                    let mut total = std::time::Duration::ZERO;
                    let (mut user, mut thread, mut message) = conversation(&store, n).await;
                    for i in 0..iters as usize {
                        if i > 0 && i % 500 == 0 {
                            (user, thread, message) = conversation(&store, n).await;
                        }
                        let input = json!({"entries": [
                            {"action": "add", "text": format!("Staff must see booking {i}.")},
                            {"action": "change", "key": format!("R-{}", i % n + 1), "text": format!("Changed text {i}.")},
                            {"action": "change", "key": format!("R-{}", (i + 7) % n + 1), "kind": "quality"}
                        ]});
                        let path: HashSet<Uuid> = [message].into();
                        let started = std::time::Instant::now();
                        let done = ledger::record(&store, user, thread, &path, Some(message), "bench", &input).await;
                        total += started.elapsed();
                        assert!(!done.is_error, "{}", done.result);
                    }
                    total
                }
            })
        });
    }
    record.finish();
    // The same work's CPU time in this process (Quire's side: the tool, the store, SQLite itself; not the
    // PostgreSQL server), over a run of 500, from /proc (10 ms ticks, so only a long run tells).
    for (backend, store) in &stores {
        let rounds = if mode::smoke_run() { 3 } else { 500 };
        let (user, thread, message) = rt.block_on(conversation(store, n));
        let path: HashSet<Uuid> = [message].into();
        let before = cpu_time();
        let wall = std::time::Instant::now();
        for i in 0..rounds {
            let input = json!({"entries": [
                {"action": "add", "text": format!("Staff must see booking {i}.")},
                {"action": "change", "key": format!("R-{}", i % n + 1), "text": format!("Changed text {i}.")},
                {"action": "change", "key": format!("R-{}", (i + 7) % n + 1), "kind": "quality"}
            ]});
            let done = rt.block_on(ledger::record(store, user, thread, &path, Some(message), "bench", &input));
            assert!(!done.is_error, "{}", done.result);
        }
        let cpu = cpu_time() - before;
        println!(
            "ledger/record_cpu/{backend}: {:.3} ms of CPU per recording ({:.3} ms wall), over {rounds}",
            cpu.as_secs_f64() * 1000.0 / rounds as f64,
            wall.elapsed().as_secs_f64() * 1000.0 / rounds as f64
        );
    }
    let mut view = c.benchmark_group("ledger/view");
    view.sample_size(30);
    for (backend, store, user, thread) in &prepared {
        let (store, user, thread) = (store.clone(), *user, *thread);
        let documents = rt.block_on(store.list_artifacts(user, thread)).expect("documents");
        assert_eq!(documents.len(), DOCUMENTS);
        view.bench_function(*backend, |b| {
            b.to_async(&rt).iter(|| {
                let store = store.clone();
                let mut documents = documents.clone();
                async move {
                    let (_, view) = ledger::marked(&store, user, thread).await.expect("ledger");
                    let shown = view.ledger();
                    view.mark(&mut documents);
                    assert!(!shown.requirements.is_empty());
                    documents
                }
            })
        });
    }
    view.finish();
}

criterion_group!(benches, ledger_benches);
criterion_main!(benches);
