//! The PDF extraction child, as the server runs it: whatever the bytes, the server gets either text within
//! the cap or "unreadable", within the wall-clock limit, and never fails itself. A crash of the parser is
//! contained by the process boundary; this target checks that the boundary holds. The `quire` binary to run
//! comes from `QUIRE_BIN` (default `target/release/quire`); the crafted files of the hostile suite seed it.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use quire::attachments::extract::{ExtractError, Extractor, FileKind, CHILD_WALL_SECONDS, MAX_TEXT_BYTES};

fn setup() -> &'static (tokio::runtime::Runtime, Extractor) {
    static SETUP: OnceLock<(tokio::runtime::Runtime, Extractor)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let program = std::env::var("QUIRE_BIN").unwrap_or_else(|_| "target/release/quire".into());
        (runtime, Extractor::new(program))
    })
}

fuzz_target!(|bytes: &[u8]| {
    let (runtime, extractor) = setup();
    let started = std::time::Instant::now();
    match runtime.block_on(extractor.extract(FileKind::Pdf, bytes.to_vec())) {
        Ok(text) => assert!(text.len() <= MAX_TEXT_BYTES),
        Err(ExtractError::Unreadable) => {}
        Err(other) => panic!("the extraction child could not run: {other}"),
    }
    assert!(started.elapsed().as_secs() <= CHILD_WALL_SECONDS + 2);
});
