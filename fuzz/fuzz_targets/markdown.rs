//! The Markdown renderer: never panics, and its HTML never carries a script, an event handler, an image or a
//! link with a dangerous scheme.
#![no_main]

use app::markdown::{markup_problem, to_safe_html};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|markdown: &str| {
    let html = to_safe_html(markdown);
    assert_eq!(markup_problem(&html), None, "{markdown:?} -> {html}");
});
