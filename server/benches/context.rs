//! Context building and token counting (criterion).
//!
//! - `context/load_build/N`: a thread of N messages (alternating request and answer, a document created by
//!   every tenth request, every fifth document at version 2) in a SQLite store; one iteration loads the messages,
//!   documents and revisions and builds the model's view (filter, count, truncate to the default budget),
//!   exactly as a chat turn does (`quire::chat::context::load`).
//! - `context/build_only/N`: the same without the database (the messages already in memory).
//! - `context/count_all/N`: counting the tokens of every message of the thread, for comparison.
//! - `tokens/prose_500k` and `tokens/repeated_100k`: `count_tokens` of 500 KB of prose and of 100 KB of one
//!   character.
//!
//!     cargo bench --profile server-release -p server --bench context
//!
//! `cargo test -p server --benches` runs each benchmark once (criterion's test mode).

#[path = "support/mode.rs"]
mod mode;
#[path = "support/text.rs"]
mod text;

use chrono::{Duration, Utc};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use llm::tokens::count_tokens;
use quire::chat::context::{self, ContextInput, DEFAULT_BUDGET};
use store::history::{ImportArtifact, ImportMessage, ImportThread, ImportVersion};
use store::NewUser;
use text::TextGen;
use wire::{ArtifactType, Role};

const SIZES: [usize; 3] = [100, 1_000, 10_000];

/// A conversation of `n` messages: requests of 10-60 words, answers of 40-300 words.
fn conversation(n: usize, gen: &mut TextGen) -> ImportThread {
    let start = Utc::now() - Duration::days(30);
    let messages: Vec<ImportMessage> = (0..n)
        .map(|i| {
            let (role, content) =
                if i % 2 == 0 { (Role::User, gen.text(10, 60)) } else { (Role::Assistant, gen.text(40, 300)) };
            ImportMessage::new(i as i64 + 1, role, content, start + Duration::seconds(i as i64))
        })
        .collect();
    let mut artifacts = Vec::new();
    for (k, request) in (0..n).step_by(20).enumerate() {
        let version = if k % 5 == 0 { 2 } else { 1 };
        let at = start + Duration::seconds(request as i64);
        artifacts.push(ImportArtifact {
            artifact_type: ArtifactType::UserStories,
            request_message: Some(request),
            assistant_message: Some((request + 1).min(n - 1)),
            earlier: Vec::new(),
            current: ImportVersion::new(version, format!("Stories {k}"), gen.prose(2_000), at),
        });
    }
    ImportThread::new("Benchmark conversation", start, messages, artifacts)
}

fn context_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store =
        rt.block_on(store::connect(&format!("sqlite://{}", dir.path().join("bench.db").display()))).expect("store");
    let user = rt
        .block_on(store.create_user(NewUser {
            email: "bench@example.com".into(),
            password_hash: "not a hash".into(),
            display_name: "Bench".into(),
        }))
        .expect("user")
        .id;
    let mut gen = TextGen::new(1);
    let mut group = c.benchmark_group("context");
    group.sample_size(20);
    let sizes: &[usize] = if mode::smoke_run() { &SIZES[..1] } else { &SIZES };
    for &n in sizes {
        let thread = rt.block_on(store.import_threads(user, vec![conversation(n, &mut gen)])).expect("import")[0].id;
        let loaded =
            rt.block_on(context::load(store.as_ref(), user, thread, DEFAULT_BUDGET, None, None, None)).expect("load");
        let built = &loaded.built;
        assert!(!built.record.included.is_empty() && !built.record.filtered.is_empty());
        group.bench_with_input(BenchmarkId::new("load_build", n), &n, |b, _| {
            b.to_async(&rt).iter(|| async {
                context::load(store.as_ref(), user, thread, DEFAULT_BUDGET, None, None, None).await.expect("load")
            })
        });
        // A conversation's next turn: built from what its last turn kept, nothing read.
        let kept = (loaded.materials.clone(), loaded.stamp);
        group.bench_with_input(BenchmarkId::new("from_memory", n), &n, |b, _| {
            b.to_async(&rt).iter_batched(
                || kept.clone(),
                |kept| async {
                    let store = store.as_ref();
                    context::load(store, user, thread, DEFAULT_BUDGET, None, None, Some(kept)).await.expect("load")
                },
                BatchSize::SmallInput,
            )
        });
        let messages = rt.block_on(store.list_messages(user, thread)).expect("messages");
        let fulfilled: Vec<_> = rt
            .block_on(store.fulfilled_requests(user, thread))
            .expect("fulfilled requests")
            .into_iter()
            .map(|f| f.request)
            .collect();
        group.bench_with_input(BenchmarkId::new("build_only", n), &n, |b, _| {
            b.iter(|| {
                context::build(ContextInput {
                    messages: &messages,
                    fulfilled: &fulfilled,
                    summary: None,
                    budget: DEFAULT_BUDGET,
                    ephemeral: None,
                })
            })
        });
        // What counting every message costs (the build counts only the turns it looks at).
        group.bench_with_input(BenchmarkId::new("count_all", n), &n, |b, _| {
            b.iter(|| messages.iter().map(|m| count_tokens(&m.content)).sum::<usize>())
        });
    }
    group.finish();
}

fn token_benches(c: &mut Criterion) {
    let scale = if mode::smoke_run() { 100 } else { 1 };
    let prose = TextGen::new(2).prose(500 * 1024 / scale);
    let repeated = "a".repeat(100 * 1024 / scale);
    llm::tokens::warm_up();
    let mut group = c.benchmark_group("tokens");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(prose.len() as u64));
    group.bench_function("prose_500k", |b| b.iter(|| count_tokens(std::hint::black_box(&prose))));
    // From cold: no piece count remembered (what a first count of a long paste costs).
    group.bench_function("prose_500k_cold", |b| {
        b.iter(|| {
            llm::tokens::forget_pieces();
            count_tokens(std::hint::black_box(&prose))
        })
    });
    // The tokenizer's own count, without remembered pieces: the reference the two above are compared with.
    group.bench_function("prose_500k_tokenizer", |b| {
        b.iter(|| llm::tokens::tokenizer().count(std::hint::black_box(prose.as_str())))
    });
    group.throughput(Throughput::Bytes(repeated.len() as u64));
    group.bench_function("repeated_100k", |b| b.iter(|| count_tokens(std::hint::black_box(&repeated))));
    group.finish();
}

criterion_group!(benches, context_benches, token_benches);
criterion_main!(benches);
