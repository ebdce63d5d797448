//! The OpenAI stream decoder: never panics; a stream ends with `Stop` or with one error, wherever it is cut.
#![no_main]

#[path = "stream_cut.rs"]
mod stream_cut;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| stream_cut::check(data, llm::openai::decode_body));
