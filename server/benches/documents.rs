//! Files and documents whose size a person chooses (criterion): an attached file's text cut into chunks for
//! search, and a document exported as a file.
//!
//! - `documents/chunk/word_8mib`: `chunk_text` of 8 MiB without whitespace (one word, as a minified file or a
//!   base64 blob gives).
//! - `documents/chunk/lines_1m`: `chunk_text` of a file of 1,000,000 short lines (a log).
//! - `documents/export/pdf`, `docx`, `md`: a short document whose second paragraph is one word of 1 MB, exported
//!   in each format.
//!
//!     cargo bench --profile server-release -p server --bench documents
//!
//! `cargo test -p server --benches` runs each benchmark once, on inputs a thousand times smaller (criterion's
//! test mode).

#[path = "support/mode.rs"]
mod mode;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use quire::artifacts::{docx, md, pdf};
use quire::attachments::chunk_text;

/// Inputs are divided by this in smoke runs.
fn scale() -> usize {
    if mode::smoke_run() {
        1000
    } else {
        1
    }
}

/// A word of `bytes` letters, cycling through the alphabet.
fn word(bytes: usize) -> String {
    (b'a'..=b'z').cycle().take(bytes).map(char::from).collect()
}

fn chunk_benches(c: &mut Criterion) {
    let blob = word(8 * 1024 * 1024 / scale());
    let log: String =
        (0..1_000_000 / scale()).map(|i| format!("2024-05-01 12:00:{:02} INFO request {i} served\n", i % 60)).collect();
    let mut group = c.benchmark_group("documents/chunk");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(blob.len() as u64));
    group.bench_function("word_8mib", |b| b.iter(|| chunk_text(std::hint::black_box(&blob))));
    group.throughput(Throughput::Bytes(log.len() as u64));
    group.bench_function("lines_1m", |b| b.iter(|| chunk_text(std::hint::black_box(&log))));
    group.finish();
}

fn export_benches(c: &mut Criterion) {
    let markdown = format!(
        "# Release notes\n\nThe file below was pasted whole.\n\n{}\n\n- one item\n- another\n",
        word(1_000_000 / scale())
    );
    let title = "Release notes";
    let mut group = c.benchmark_group("documents/export");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(markdown.len() as u64));
    group.bench_function("pdf", |b| b.iter(|| pdf::render(title, std::hint::black_box(&markdown)).expect("pdf")));
    group.bench_function("docx", |b| b.iter(|| docx::render(title, std::hint::black_box(&markdown)).expect("docx")));
    group.bench_function("md", |b| b.iter(|| md::render(std::hint::black_box(&markdown))));
    group.finish();
}

criterion_group!(benches, chunk_benches, export_benches);
criterion_main!(benches);
