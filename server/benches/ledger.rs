//! The requirements ledger (criterion), on a conversation with 500 requirements and 20 documents that cite 25
//! each (one in four of them changed since, so some documents are out of date):
//!
//! - `ledger/record/<backend>`: what `record_requirements` costs a turn: the ledger read and folded for the turn's
//!   path, the entries checked against it, and one add and two changes written in one transaction
//!   (`chat::ledger::record`, as the tool runs it).
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

use std::cell::Cell;
use std::collections::HashSet;

use criterion::{criterion_group, criterion_main, Criterion};
use quire::chat::ledger;
use serde_json::json;
use store::{Citation, DynStore, LedgerWrite, NewArtifact, NewMessage, NewUser};
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
    let user = store
        .create_user(NewUser {
            email: format!("{}@example.com", Uuid::new_v4().simple()),
            password_hash: "not a hash".into(),
            display_name: "Bench".into(),
        })
        .await
        .expect("user")
        .id;
    let thread = store.create_thread(user, "Booking", &[]).await.expect("thread").id;
    let message = NewMessage {
        thread_id: thread,
        role: Role::User,
        content: "Customers must be able to book slots.".into(),
        status: MessageStatus::Complete,
        usage: Usage::default(),
        model: None,
        quote: None,
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

fn stores(rt: &tokio::runtime::Runtime, dir: &tempfile::TempDir) -> Vec<(&'static str, DynStore)> {
    let mut stores = vec![(
        "sqlite",
        rt.block_on(store::connect(&format!("sqlite://{}", dir.path().join("bench.db").display()))).expect("store"),
    )];
    match std::env::var("QUIRE_TEST_POSTGRES_URL") {
        Ok(url) => stores.push(("postgres", rt.block_on(store::connect(&url)).expect("postgres store"))),
        Err(_) => {
            println!("ledger/*/postgres: skipped (set QUIRE_TEST_POSTGRES_URL, or run under scripts/with-postgres)")
        }
    }
    stores
}

fn ledger_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = stores(&rt, &dir);
    let n = requirements();
    let mut record = c.benchmark_group("ledger/record");
    record.sample_size(30);
    let mut prepared = Vec::new();
    for (backend, store) in &stores {
        let (user, thread, message) = rt.block_on(conversation(store, n));
        let path: HashSet<Uuid> = [message].into();
        // The view is measured on a conversation of its own, which recording does not grow.
        let (viewer, viewed, _) = rt.block_on(conversation(store, n));
        prepared.push((*backend, store.clone(), viewer, viewed));
        let round = Cell::new(0usize);
        record.bench_function(*backend, |b| {
            b.to_async(&rt).iter(|| {
                let i = round.get();
                round.set(i + 1);
                let input = json!({"entries": [
                    {"action": "add", "text": format!("Staff must see booking {i}.")},
                    {"action": "change", "key": format!("R-{}", i % n + 1), "text": format!("Changed text {i}.")},
                    {"action": "change", "key": format!("R-{}", (i + 7) % n + 1), "kind": "quality"}
                ]});
                let (store, path) = (store.clone(), path.clone());
                async move {
                    let done = ledger::record(&store, user, thread, &path, Some(message), "bench", &input).await;
                    assert!(!done.is_error, "{}", done.result);
                }
            })
        });
    }
    record.finish();
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
