//! The bar above every signed-in page: links to the pages, sharing the open conversation and the import of a
//! conversation.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_location, use_navigate};
use wasm_bindgen_futures::JsFuture;

use crate::api::{client, ImportResult, ShareLink};
use crate::state::ChatState;
use crate::{CurrentUser, ThreadsChanged};

/// What the last import or share did, shown under the bar.
#[derive(Clone, Debug, PartialEq)]
enum BarNote {
    Done(String),
    Failed(String),
    /// A new share link: its path.
    Shared(String),
}

/// Links to the chat (the conversation last open), the stats and settings pages (and the admin page, for
/// administrators), "Share" (when a conversation is open) and "Import conversation".
#[component]
pub fn AppBar() -> impl IntoView {
    let pathname = use_location().pathname;
    let current = move |path: &'static str| {
        move || {
            let here = pathname.get();
            let on = match path {
                "/" => here == "/" || here.starts_with("/c/"),
                "/settings" => here == path || here == "/account",
                _ => here == path,
            };
            on.then_some("page")
        }
    };
    let note = RwSignal::new(None::<BarNote>);
    // "Chat" goes back to the conversation that was open.
    let chat = expect_context::<ChatState>();
    let chat_href = move || chat.open_thread().map(|id| format!("/c/{id}")).unwrap_or_else(|| "/".to_string());
    let user = expect_context::<CurrentUser>();
    let is_admin = move || user.0.with(|u| u.as_ref().is_some_and(|u| u.admin));
    view! {
        <header class="app-bar">
            <nav aria-label="Pages" class="page-links">
                <a href=chat_href aria-current=current("/")>"Chat"</a>
                <a href="/stats" aria-current=current("/stats")>"Stats"</a>
                <a href="/settings" aria-current=current("/settings")>"Settings"</a>
                <Show when=is_admin>
                    <a href="/admin" aria-current=current("/admin")>"Admin"</a>
                </Show>
            </nav>
            <ShareConversation note/>
            <ImportConversation note/>
        </header>
        {move || note.get().map(|n| {
            view! { <Suspense fallback=|| ()>{Suspend::new(bar_note(n.clone(), note))}</Suspense> }
        })}
    }
}

/// What the last import or share did, with a button that dismisses it. Loaded at a first note (split out of the
/// main wasm bundle in release builds).
#[lazy]
fn bar_note(n: BarNote, note: RwSignal<Option<BarNote>>) -> AnyView {
    let (class, role, text, link) = match n {
        BarNote::Done(text) => ("notice", "status", text, None),
        BarNote::Failed(text) => ("error app-bar-error", "alert", text, None),
        BarNote::Shared(path) => {
            let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
            let text = "Anyone with this link can read a copy of this conversation as it is now: ".to_string();
            ("notice", "status", text, Some((path.clone(), format!("{origin}{path}"))))
        }
    };
    view! {
        <div class=class role=role>
            <span>{text}{link.map(|(path, url)| view! {
                <a href=path target="_blank" rel="noopener" data-testid="share-url">{url}</a>
            })}</span>
            <button type="button" class="icon-button" aria-label="Dismiss" on:click=move |_| note.set(None)>"✕"</button>
        </div>
    }
    .into_any()
}

/// Makes a share link of the conversation. Its code is loaded on the first share (split out of the main wasm
/// bundle in release builds).
#[lazy]
async fn share_thread(thread: uuid::Uuid) -> Result<ShareLink, String> {
    client::share_thread(thread).await.map_err(|e| e.message)
}

/// "Share" for the open conversation: a new link to a read-only copy of it, shown under the bar.
#[component]
fn ShareConversation(note: RwSignal<Option<BarNote>>) -> impl IntoView {
    let chat = expect_context::<ChatState>();
    let busy = RwSignal::new(false);
    let share = move |_| {
        let Some(thread) = chat.open_thread() else { return };
        busy.set(true);
        note.set(None);
        spawn_local(async move {
            let result = share_thread(thread).await;
            busy.set(false);
            note.set(Some(match result {
                Ok(link) => BarNote::Shared(link.path),
                Err(message) => BarNote::Failed(format!("Could not share the conversation: {message}")),
            }));
        });
    };
    view! {
        <Show when=move || chat.open_thread().is_some()>
            <button type="button" class="button" disabled=move || busy.get() on:click=share>
                {move || if busy.get() { "Sharing…" } else { "Share" }}
            </button>
        </Show>
    }
}

/// Reads the picked file and sends it to the import endpoint. Its code is loaded on the first import (split out of
/// the main wasm bundle in release builds).
#[lazy]
async fn import_file(file: web_sys::File) -> Result<ImportResult, String> {
    let text = JsFuture::from(file.text()).await.ok().and_then(|v| v.as_string());
    match text {
        Some(text) => client::import_threads(text).await.map_err(|e| match e.status {
            413 => "The file is larger than the import limit of 1 MiB.".to_string(),
            _ => e.message,
        }),
        None => Err("The file could not be read.".to_string()),
    }
}

/// A file picker for a Quire JSON export (or a ChatGPT `conversations.json`); the first imported conversation
/// opens and the list of conversations reloads.
#[component]
fn ImportConversation(note: RwSignal<Option<BarNote>>) -> impl IntoView {
    let changed = expect_context::<ThreadsChanged>();
    let navigate = use_navigate();
    let busy = RwSignal::new(false);
    let on_change = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        let Some(file) = input.files().and_then(|files| files.get(0)) else { return };
        // Cleared so that picking the same file again imports it again.
        input.set_value("");
        let name = file.name();
        busy.set(true);
        note.set(None);
        let navigate = navigate.clone();
        spawn_local(async move {
            let result = import_file(file).await;
            busy.set(false);
            match result {
                Ok(imported) => {
                    changed.notify();
                    let count = imported.threads.len();
                    let text = match imported.threads.first() {
                        Some(t) if count == 1 => format!("Imported “{}”.", t.title),
                        _ => format!("Imported {count} conversations."),
                    };
                    note.set(Some(BarNote::Done(text)));
                    if let Some(first) = imported.threads.first() {
                        navigate(&format!("/c/{}", first.id), Default::default());
                    }
                }
                Err(message) => note.set(Some(BarNote::Failed(format!("Could not import {name}: {message}")))),
            }
        });
    };
    view! {
        <label class="button import" class:busy=move || busy.get()>
            {move || if busy.get() { "Importing…" } else { "Import conversation" }}
            <input
                type="file"
                class="visually-hidden"
                accept=".json,application/json"
                aria-label="Import conversation"
                disabled=move || busy.get()
                on:change=on_change
            />
        </label>
    }
}
