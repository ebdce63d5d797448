//! The message box with Attach, Generate, Send and Stop (Up in the empty box edits the last message), the chips
//! of the files picked for the next message, and the error banner above it with its Retry.

use leptos::html;
use leptos::prelude::*;

use super::actions::ChatActions;
use super::attach::files_of;
use crate::components::generate_menu::GenerateMenu;
use crate::state::{ChatState, FileStage, PendingFile};

/// What the file picker offers (the server decides: other files are refused with its reason).
const ACCEPTED: &str = ".txt,.md,.markdown,.pdf,text/plain,text/markdown,application/pdf";

/// The message box: Enter sends, Shift+Enter starts a new line; Send turns into Stop while an answer is written.
/// Files come from the paperclip, or are dropped or pasted onto the box.
#[component]
pub(super) fn Composer(state: ChatState, actions: ChatActions) -> impl IntoView {
    let ChatState { current, busy, generating, pending, draft, .. } = state;
    let no_thread = Signal::derive(move || current.get().is_none() || busy.get() || generating.get().is_some());
    let waiting = move || pending.with(|files| files.iter().any(PendingFile::in_flight));
    let generate = Callback::new(move |kind| actions.generate(kind));
    let picker = NodeRef::<html::Input>::new();
    let dragging = RwSignal::new(false);
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            actions.send_draft();
        } else if ev.key() == "ArrowUp" && draft.with_untracked(String::is_empty) && !busy.get_untracked() {
            // As in other chat apps: Up in an empty box edits the person's last message.
            if actions.edit_last() {
                ev.prevent_default();
            }
        }
    };
    let on_picked = move |_| {
        let Some(input) = picker.get_untracked() else { return };
        actions.attach(files_of(input.files()));
        // The same file can be picked again after its chip was removed.
        input.set_value("");
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        actions.attach(files_of(ev.data_transfer().and_then(|d| d.files())));
    };
    let on_drag_over = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        dragging.set(true);
    };
    let on_paste = move |ev: leptos::ev::ClipboardEvent| {
        let files = files_of(ev.clipboard_data().and_then(|d| d.files()));
        if !files.is_empty() {
            ev.prevent_default();
            actions.attach(files);
        }
    };
    let remove = Callback::new(move |key: u64| actions.remove_pending(key));
    let has_files = Memo::new(move |_| pending.with(|files| !files.is_empty()));
    view! {
        <div class="composer-area" class:dragging=move || dragging.get() on:dragover=on_drag_over
            on:dragleave=move |_| dragging.set(false) on:drop=on_drop>
            {move || has_files.get().then(|| view! {
                <Suspense fallback=|| ()>{Suspend::new(attachment_chips(pending, remove))}</Suspense>
            })}
            {move || state.quote.get().map(|q| view! {
                <div class="quote-chip" data-testid="quote-chip" role="group" aria-label="Passage you are asking about">
                    <span class="quote-source">{format!("About “{}”", q.title)}</span>
                    <blockquote tabindex="0">{q.quote.text}</blockquote>
                    <button type="button" class="icon-button" aria-label="Remove the quoted passage"
                        on:click=move |_| state.quote.set(None)>"✕"</button>
                </div>
            })}
            <form class="composer" on:submit=move |ev| ev.prevent_default()>
                <GenerateMenu disabled=no_thread on_pick=generate/>
                <button type="button" class="attach-button" aria-label="Attach files" title="Attach files (.txt, .md, .pdf)"
                    on:click=move |_| if let Some(input) = picker.get_untracked() { input.click() }>
                    <svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
                        <path fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"
                            d="M20 11.5l-8.1 8.1a5 5 0 0 1-7.1-7.1l8.5-8.5a3.3 3.3 0 0 1 4.7 4.7l-8.5 8.5a1.7 1.7 0 0 1-2.4-2.4l7.8-7.8"/>
                    </svg>
                </button>
                <input type="file" multiple hidden accept=ACCEPTED node_ref=picker on:change=on_picked/>
                <textarea
                    aria-label="Message"
                    placeholder="Message Quire (Enter to send, Shift+Enter for a new line)"
                    rows="2"
                    maxlength="10000"
                    prop:value=move || draft.get()
                    on:input=move |ev| draft.set(event_target_value(&ev))
                    on:keydown=on_keydown
                    on:paste=on_paste
                ></textarea>
                {move || if busy.get() {
                    view! { <button type="button" class="stop" on:click=move |_| actions.stop()>"Stop"</button> }.into_any()
                } else {
                    view! {
                        <button type="button" class="primary" disabled=move || waiting() || generating.get().is_some()
                            on:click=move |_| actions.send_draft()>"Send"</button>
                    }.into_any()
                }}
            </form>
        </div>
    }
    .into_any()
}

/// One chip per file picked for the next message: its progress, or why it was refused, and a remove button.
/// Loaded when a first file is picked (split out of the main wasm bundle in release builds).
#[lazy]
fn attachment_chips(pending: RwSignal<Vec<PendingFile>>, on_remove: Callback<u64>) -> AnyView {
    view! {
        <ul class="attachment-chips" aria-label="Files for the next message">
            <For each=move || pending.get() key=PendingFile::drawn_as let:file>
                <AttachmentChip file on_remove/>
            </For>
        </ul>
    }
    .into_any()
}

#[component]
fn AttachmentChip(file: PendingFile, on_remove: Callback<u64>) -> impl IntoView {
    let PendingFile { key, name, stage } = file;
    let failed = matches!(stage, FileStage::Failed(_));
    let status = match stage {
        FileStage::Uploading(share) => view! {
            <progress max="100" value=share.to_string() aria-label=format!("Uploading {name}")></progress>
            <span class="chip-status">{format!("Uploading {share}%")}</span>
        }
        .into_any(),
        FileStage::Reading => view! { <span class="chip-status">"Reading…"</span> }.into_any(),
        FileStage::Attached(_) => view! { <span class="chip-status">"Attached"</span> }.into_any(),
        FileStage::Failed(reason) => view! { <span class="chip-error">{reason}</span> }.into_any(),
    };
    view! {
        <li class="attachment-chip" class:failed=failed data-testid="attachment-chip">
            <span class="chip-name">{name.clone()}</span>
            {status}
            <button type="button" class="icon-button chip-remove" aria-label=format!("Remove {name}")
                on:click=move |_| on_remove.run(key)>"✕"</button>
        </li>
    }
}

/// The last error, shown in place, with "Retry" when trying again can help.
#[component]
pub(super) fn ErrorBanner(state: ChatState, actions: ChatActions) -> impl IntoView {
    move || {
        state.error.get().map(|e| {
            view! { <Suspense fallback=|| ()>{Suspend::new(error_note(e.message.clone(), e.retry.is_some(), actions))}</Suspense> }
        })
    }
}

/// An error's banner. Loaded at a first error (split out of the main wasm bundle in release builds).
#[lazy]
fn error_note(message: String, can_retry: bool, actions: ChatActions) -> AnyView {
    view! {
        <div class="error" role="alert">
            <span>{message}</span>
            {can_retry.then(|| view! { <button type="button" on:click=move |_| actions.retry()>"Retry"</button> })}
        </div>
    }
    .into_any()
}
