//! The "Generate" button and its document-type picker.

use leptos::prelude::*;

use crate::api::ArtifactType;

/// The types offered by the picker, in the order people expect them.
pub const GENERATABLE: [ArtifactType; 5] = [
    ArtifactType::UserStories,
    ArtifactType::BusinessRequirements,
    ArtifactType::RequirementsDoc,
    ArtifactType::AcceptanceCriteria,
    ArtifactType::MeetingSummary,
];

/// A sparkles button that opens a menu of document types; choosing one calls `on_pick`. Escape, or a click
/// outside, closes the menu.
#[component]
pub fn GenerateMenu(
    #[prop(into)] disabled: Signal<bool>,
    #[prop(into)] on_pick: Callback<ArtifactType>,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let button = NodeRef::<leptos::html::Button>::new();
    super::popover::close_on_escape(open, button);
    view! {
        <div class="generate">
            <button
                type="button"
                node_ref=button
                class="generate-button"
                aria-label="Generate"
                aria-haspopup="menu"
                aria-expanded=move || open.get().to_string()
                disabled=move || disabled.get()
                on:click=move |_| open.update(|o| *o = !*o)
            >
                // Drawn rather than an emoji: not every system has a colour-emoji font.
                <svg class="sparkles" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true" focusable="false">
                    <path fill="currentColor" d="M10 3l2 7 7 2-7 2-2 7-2-7-7-2 7-2z"/>
                    <path fill="currentColor" d="M19 1l1 3 3 1-3 1-1 3-1-3-3-1 3-1z"/>
                </svg>
                <span class="generate-text">"Generate"</span>
            </button>
            <Show when=move || open.get()>
                <Suspense fallback=|| ()>{Suspend::new(document_types(open, on_pick))}</Suspense>
            </Show>
        </div>
    }
}

/// The open picker: one entry per document type. Loaded when the picker first opens (split out of the main wasm
/// bundle in release builds).
#[lazy]
fn document_types(open: RwSignal<bool>, on_pick: Callback<ArtifactType>) -> AnyView {
    view! {
        <div class="popover-backdrop" on:click=move |_| open.set(false)></div>
        <ul class="generate-menu" role="menu" aria-label="Document type">
            {GENERATABLE
                .into_iter()
                .map(|kind| view! {
                    <li role="none">
                        <button
                            type="button"
                            role="menuitem"
                            on:click=move |_| {
                                open.set(false);
                                on_pick.run(kind);
                            }
                        >
                            {kind.label()}
                        </button>
                    </li>
                })
                .collect_view()}
        </ul>
    }
    .into_any()
}
