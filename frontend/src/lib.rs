//! The browser entry point: hydrates the server-rendered page.

// The chat page's typed views nest deeper than the default limit of 128 allows when the whole app is built here.
#![recursion_limit = "256"]

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Lazily loaded pages hydrate once their code has arrived.
    leptos::mount::hydrate_lazy(app::App);
}
