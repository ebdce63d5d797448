//! Light / dark theme switch. Follows the system until the person picks one; the choice is remembered.

use leptos::prelude::*;

const STORAGE_KEY: &str = "quire-theme";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

fn apply(theme: &str) {
    if let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
        let _ = root.set_attribute("data-theme", theme);
    }
}

fn system_prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .map(|m| m.matches())
        .unwrap_or(false)
}

/// A button that flips between the light and the dark theme.
#[component]
pub fn ThemeToggle() -> impl IntoView {
    let dark = RwSignal::new(false);
    Effect::new(move |_| {
        let saved = storage().and_then(|s| s.get_item(STORAGE_KEY).ok().flatten());
        let is_dark = match saved.as_deref() {
            Some("dark") => true,
            Some("light") => false,
            _ => system_prefers_dark(),
        };
        dark.set(is_dark);
        apply(if is_dark { "dark" } else { "light" });
    });
    let toggle = move |_| {
        let next = !dark.get_untracked();
        dark.set(next);
        let name = if next { "dark" } else { "light" };
        apply(name);
        if let Some(s) = storage() {
            let _ = s.set_item(STORAGE_KEY, name);
        }
    };
    view! {
        <button
            type="button"
            class="icon-button"
            aria-label=move || if dark.get() { "Switch to light theme" } else { "Switch to dark theme" }
            aria-pressed=move || dark.get().to_string()
            on:click=toggle
        >
            {move || if dark.get() { "☀" } else { "☾" }}
        </button>
    }
}
