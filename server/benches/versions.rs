//! Versions of a long document (criterion): a person's one-line edit saved, and the word-level diff between two
//! versions.
//!
//! - `versions/save/<backend>`: a one-line edit of a document of 100,000 characters saved as a person saves it:
//!   the text checked (`validate::artifact_content`) and stored as the next version by `Store::revise_artifact`
//!   with its base version (the check that refuses a save made from an old version is in the same statement).
//!   The edited text is made outside the timing. SQLite always; PostgreSQL too when `QUIRE_TEST_POSTGRES_URL`
//!   names a database (`scripts/with-postgres`).
//! - `versions/diff/few_lines`: `diff_lines` (what `GET /api/artifacts/{id}/diff` and `POST .../compare` run)
//!   between two versions of 100,000 characters that differ by a word in 5 lines.
//! - `versions/diff/every_third_line`, `versions/diff/every_line`: the same with a word changed in every third
//!   line (hundreds of rewritten lines between kept ones), and in every line (one rewritten block as long as the
//!   document, the word diff's largest input).
//!
//! Run with:
//!
//!     cargo bench --profile server-release -p server --bench versions
//!     scripts/with-postgres cargo bench --profile server-release -p server --bench versions
//!
//! `cargo test -p server --benches` runs each benchmark once, on a document a hundred times shorter (criterion's
//! test mode).

#[path = "support/mode.rs"]
mod mode;
#[path = "support/stores.rs"]
mod stores;
#[path = "support/text.rs"]
mod text;

use std::cell::Cell;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use quire::artifacts::diff::diff_lines;
use store::{ArtifactRevision, DynStore, NewArtifact};
use text::TextGen;
use uuid::Uuid;
use wire::{ArtifactType, VersionAuthor};

/// Characters of the document.
fn document_chars() -> usize {
    if mode::smoke_run() {
        1_000
    } else {
        100_000
    }
}

/// A Markdown document of exactly `chars` characters (ASCII): a heading every 20 lines, lines of one sentence, each
/// line ended.
fn document(chars: usize, gen: &mut TextGen) -> String {
    let mut out = String::from("# Booking service requirements\n\n");
    let mut line = 0;
    while out.len() < chars {
        if line % 20 == 0 {
            out.push_str(&format!("## Section {}\n\n", line / 20 + 1));
        }
        out.push_str(&gen.text(8, 20));
        out.push('\n');
        line += 1;
    }
    // Cut at the end of a line, filled with a last line of one letter to the exact length.
    out.truncate(out[..(chars - 1).min(out.len())].rfind('\n').map_or(0, |end| end + 1));
    let rest = chars.saturating_sub(out.len() + 1);
    out.push_str(&"x".repeat(rest));
    out.push('\n');
    out
}

/// `text` with a word changed in every `every`-th line of sentences (at most `most` lines).
fn changed(text: &str, every: usize, most: usize) -> String {
    let mut done = 0;
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let sentence = !line.is_empty() && !line.starts_with('#');
            if sentence && i % every == 0 && done < most {
                done += 1;
                // The second word becomes another.
                let mut words: Vec<&str> = line.split(' ').collect();
                if words.len() > 1 {
                    words[1] = "changed";
                }
                words.join(" ")
            } else {
                line.to_string()
            }
        })
        .collect();
    lines.join("\n") + "\n"
}

fn diff_benches(c: &mut Criterion) {
    let mut gen = TextGen::new(11);
    let old = document(document_chars(), &mut gen);
    let mut group = c.benchmark_group("versions/diff");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(old.len() as u64));
    let lines = old.lines().count();
    for (name, every, most) in
        [("few_lines", lines / 5, 5), ("every_third_line", 3, usize::MAX), ("every_line", 1, usize::MAX)]
    {
        let new = changed(&old, every.max(1), most);
        let changed_lines = diff_lines(&old, &new).iter().filter(|l| l.op == wire::DiffOp::Delete).count();
        println!("versions/diff/{name}: {} lines, {changed_lines} rewritten", lines);
        group.bench_function(name, |b| b.iter(|| diff_lines(std::hint::black_box(&old), std::hint::black_box(&new))));
    }
    group.finish();
}

/// A person with a document of `text`, at version 1.
async fn person_with_document(store: &DynStore, text: &str) -> (Uuid, Uuid) {
    let user = stores::person(store).await;
    let thread = store.create_thread(user, "Requirements", &[]).await.expect("thread").id;
    let artifact = NewArtifact {
        thread_id: thread,
        artifact_type: ArtifactType::RequirementsDoc,
        title: "Booking service requirements".into(),
        content: text.to_string(),
        request_message_id: None,
        assistant_message_id: None,
        answers: Vec::new(),
        model: None,
        cites: Vec::new(),
    };
    let id = store.create_artifact(user, artifact).await.expect("document").id;
    (user, id)
}

fn save_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let stores = stores::stores(&rt, &dir, "versions/save");
    let mut gen = TextGen::new(12);
    let text = document(document_chars(), &mut gen);
    let lines: Vec<&str> = text.lines().collect();
    let mut group = c.benchmark_group("versions/save");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(text.len() as u64));
    for (backend, store) in &stores {
        let (user, id) = rt.block_on(person_with_document(store, &text));
        let version = Cell::new(1i64);
        group.bench_function(*backend, |b| {
            b.to_async(&rt).iter_batched(
                || {
                    // One line, a different one each time, has its first word rewritten; the document keeps its
                    // length (it is as long as a document may be).
                    let n = version.get() as usize;
                    let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                    let at = n * 7 % edited.len();
                    let mark = format!("e{n:07}");
                    let kept = edited[at].len().min(mark.len());
                    edited[at].replace_range(..kept, &mark[..kept]);
                    let base = version.get();
                    version.set(base + 1);
                    (edited.join("\n"), base)
                },
                |(content, base)| async move {
                    let content = wire::validate::artifact_content(&content).expect("valid");
                    let revision = ArtifactRevision {
                        title: "Booking service requirements".into(),
                        content,
                        request_message_id: None,
                        answers: Vec::new(),
                        author: VersionAuthor::Person { user_id: user },
                        base_version: Some(base),
                        cites: Vec::new(),
                    };
                    store.revise_artifact(user, id, revision).await.expect("saved")
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, save_benches, diff_benches);
criterion_main!(benches);
