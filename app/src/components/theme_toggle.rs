//! The theme: as the system prefers, light or dark. The person's choice is kept with their account, so every
//! device of theirs shows it, and in this browser, so a page shows it before the account answers.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::{client, Theme, UpdateSettings};
use crate::CurrentUser;

const STORAGE_KEY: &str = "quire-theme";

/// The theme in use, app-wide: the toggle and the settings page change it (see [`choose_theme`]).
#[derive(Clone, Copy)]
pub struct ThemeChoice {
    pub theme: RwSignal<Theme>,
    /// How many times the person picked one here: the account's, read meanwhile, is older than their pick.
    picks: StoredValue<u32>,
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

fn apply(theme: Theme) {
    if let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) {
        let _ = match theme {
            Theme::System => root.remove_attribute("data-theme"),
            chosen => root.set_attribute("data-theme", chosen.as_str()),
        };
    }
}

fn remember(theme: Theme) {
    if let Some(s) = storage() {
        let _ = s.set_item(STORAGE_KEY, theme.as_str());
    }
}

fn system_prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .map(|m| m.matches())
        .unwrap_or(false)
}

/// Provides the [`ThemeChoice`]: this browser's last one at first, then the account's once the person is known.
pub fn provide_theme() {
    let choice = RwSignal::new(Theme::System);
    let picks = StoredValue::new(0);
    provide_context(ThemeChoice { theme: choice, picks });
    Effect::new(move |_| {
        let saved = storage().and_then(|s| s.get_item(STORAGE_KEY).ok().flatten());
        choice.set(saved.as_deref().and_then(Theme::parse).unwrap_or_default());
    });
    Effect::new(move |_| apply(choice.get()));
    let user = expect_context::<CurrentUser>();
    Effect::new(move |synced: Option<bool>| {
        let signed_in = user.0.with(Option::is_some);
        if signed_in && synced != Some(true) {
            let picked_before = picks.get_value();
            spawn_local(async move {
                if let Ok(settings) = client::settings().await {
                    if picks.get_value() == picked_before {
                        remember(settings.theme);
                        choice.set(settings.theme);
                    }
                }
            });
        }
        signed_in || synced == Some(true)
    });
}

/// Shows `theme` now and keeps it, in this browser and with the account.
pub fn choose_theme(choice: ThemeChoice, theme: Theme) {
    choice.picks.update_value(|n| *n += 1);
    choice.theme.set(theme);
    remember(theme);
    spawn_local(async move {
        let _ = client::update_settings(&UpdateSettings { theme: Some(theme), ..Default::default() }).await;
    });
}

/// A button that flips between the light and the dark theme.
#[component]
pub fn ThemeToggle() -> impl IntoView {
    let choice = expect_context::<ThemeChoice>();
    // Asked in the browser only (the server renders the light state, as before hydration).
    let system_dark = RwSignal::new(false);
    Effect::new(move |_| system_dark.set(system_prefers_dark()));
    let dark = move || match choice.theme.get() {
        Theme::Dark => true,
        Theme::Light => false,
        Theme::System => system_dark.get(),
    };
    let toggle = move |_| choose_theme(choice, if dark() { Theme::Light } else { Theme::Dark });
    view! {
        <button
            type="button"
            class="icon-button"
            aria-label=move || if dark() { "Switch to light theme" } else { "Switch to dark theme" }
            aria-pressed=move || dark().to_string()
            on:click=toggle
        >
            {move || if dark() { "☀" } else { "☾" }}
        </button>
    }
}
