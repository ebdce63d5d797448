//! The search box of the sidebar. Ctrl+K (Cmd+K on a Mac) focuses it from anywhere; submitting opens the
//! search page.

use leptos::ev;
use leptos::html;
use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_navigate, use_query_map};

/// The search page's address for a query.
pub fn search_href(q: &str) -> String {
    format!("/search?q={}", String::from(js_sys::encode_uri_component(q)))
}

/// A search field; it shows the query of the search page while that page is open.
#[component]
pub fn SearchBox() -> impl IntoView {
    let navigate = use_navigate();
    let location = use_location();
    let query = use_query_map();
    let text = RwSignal::new(String::new());
    let input = NodeRef::<html::Input>::new();

    Effect::new(move |_| {
        if location.pathname.get() == "/search" {
            text.set(query.with(|q| q.get("q").unwrap_or_default()));
        }
    });

    let shortcut = window_event_listener(ev::keydown, move |e| {
        if (e.ctrl_key() || e.meta_key()) && !e.alt_key() && e.key().eq_ignore_ascii_case("k") {
            if let Some(field) = input.get_untracked() {
                e.prevent_default();
                let _ = field.focus();
                field.select();
            }
        }
    });
    on_cleanup(move || shortcut.remove());

    let submit = move |e: ev::SubmitEvent| {
        e.prevent_default();
        let q = text.get_untracked().trim().to_string();
        if !q.is_empty() {
            navigate(&search_href(&q), Default::default());
        }
    };

    view! {
        // Before the page is alive the browser opens the search page itself: a search holds nothing secret.
        <form class="search-box" role="search" method="get" action="/search" on:submit=submit>
            <input
                type="search"
                name="q"
                node_ref=input
                aria-label="Search conversations"
                aria-keyshortcuts="Control+K Meta+K"
                placeholder="Search"
                enterkeyhint="search"
                prop:value=move || text.get()
                on:input=move |e| text.set(event_target_value(&e))
            />
            <kbd class="shortcut" aria-hidden="true">"Ctrl K"</kbd>
        </form>
    }
}
