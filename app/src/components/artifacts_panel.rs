//! The conversation's documents and attached files in one popover, behind a toggle in the chat header.

use leptos::html;
use leptos::prelude::*;

use crate::api::{Artifact, Attachment};
use crate::format::file_size;

/// The toggle's element id: focus comes back to it when the popover closes or the viewer it opened does.
pub const ARTIFACTS_TOGGLE_ID: &str = "documents-toggle";

/// Each document opens the viewer; each file can be removed from the conversation. Escape, or a click anywhere
/// outside, closes the popover.
#[component]
pub fn ArtifactsPanel(
    #[prop(into)] artifacts: Signal<Vec<Artifact>>,
    #[prop(into)] files: Signal<Vec<Attachment>>,
    #[prop(into)] on_open: Callback<Artifact>,
    #[prop(into)] on_remove_file: Callback<Attachment>,
) -> impl IntoView {
    let expanded = RwSignal::new(false);
    let toggle = NodeRef::<html::Button>::new();
    let count = move || artifacts.with(Vec::len) + files.with(Vec::len);
    let close = move || {
        expanded.set(false);
        if let Some(button) = toggle.get_untracked() {
            let _ = button.focus();
        }
    };
    // On the window: Escape closes the popover wherever focus is (a removed entry leaves it on the page's body).
    let escape = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.key() == "Escape" && expanded.get_untracked() {
            close();
        }
    });
    on_cleanup(move || escape.remove());
    view! {
        <div class="documents-panel">
            <button
                type="button"
                class="button"
                id=ARTIFACTS_TOGGLE_ID
                node_ref=toggle
                aria-expanded=move || expanded.get().to_string()
                aria-controls="documents-list"
                on:click=move |_| expanded.update(|e| *e = !*e)
            >
                {move || format!("Documents ({})", count())}
            </button>
            <Show when=move || expanded.get()>
                <div class="popover-backdrop" on:click=move |_| expanded.set(false)></div>
                <Suspense fallback=|| ()>{Suspend::new(documents_list(artifacts, files, on_open, on_remove_file, expanded))}</Suspense>
            </Show>
        </div>
    }
}

/// The popover's list: documents (each opens the viewer and closes the popover) and attached files. Loaded when
/// the popover first opens (split out of the main wasm bundle in release builds).
#[lazy]
fn documents_list(
    artifacts: Signal<Vec<Artifact>>,
    files: Signal<Vec<Attachment>>,
    on_open: Callback<Artifact>,
    on_remove_file: Callback<Attachment>,
    expanded: RwSignal<bool>,
) -> AnyView {
    let count = move || artifacts.with(Vec::len) + files.with(Vec::len);
    view! {
        <div id="documents-list" class="documents-list" role="region" aria-label="Documents of this conversation"
            data-testid="artifacts-panel">
            {move || (count() == 0).then(|| view! { <p class="empty">"No documents yet."</p> })}
            <ul>
                <For each=move || artifacts.get() key=|a| (a.id, a.version) let:a>
                    <li>
                        <button type="button" class="document-entry" aria-label=format!("Open {}", a.title)
                            on:click={
                                let a = a.clone();
                                move |_| {
                                    expanded.set(false);
                                    on_open.run(a.clone());
                                }
                            }>
                            <span class="artifact-type">{a.artifact_type.label()}</span>
                            <span class="artifact-title">{a.title.clone()}</span>
                            {(a.version > 1).then(|| view! { <span class="artifact-version">{format!("v{}", a.version)}</span> })}
                        </button>
                    </li>
                </For>
            </ul>
            <Show when=move || files.with(|f| !f.is_empty())>
                <h3 class="documents-subhead" id="attached-files-title">"Attached files"</h3>
                <ul class="file-list" aria-labelledby="attached-files-title">
                    <For each=move || files.get() key=|f| f.id let:file>
                        <FileEntry file on_remove=on_remove_file/>
                    </For>
                </ul>
            </Show>
        </div>
    }
    .into_any()
}

/// An attached file: its name and size, and a button that removes it from the conversation.
#[component]
fn FileEntry(file: Attachment, on_remove: Callback<Attachment>) -> impl IntoView {
    let name = file.filename.clone();
    let size = file_size(file.size);
    view! {
        <li class="file-entry" data-testid="attached-file">
            <span class="file-name">{name.clone()}</span>
            <span class="file-size">{size}</span>
            <button type="button" class="icon-button" aria-label=format!("Remove {name} from the conversation")
                on:click=move |_| on_remove.run(file.clone())>"✕"</button>
        </li>
    }
}
