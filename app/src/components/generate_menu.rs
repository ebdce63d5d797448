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

/// A sparkles button that opens a menu of document types; choosing one calls `on_pick`.
#[component]
pub fn GenerateMenu(
    #[prop(into)] disabled: Signal<bool>,
    #[prop(into)] on_pick: Callback<ArtifactType>,
) -> impl IntoView {
    let open = RwSignal::new(false);
    view! {
        <div class="generate">
            <button
                type="button"
                class="generate-button"
                aria-label="Generate"
                aria-haspopup="menu"
                aria-expanded=move || open.get().to_string()
                disabled=move || disabled.get()
                on:click=move |_| open.update(|o| *o = !*o)
            >
                <span aria-hidden="true">"✨"</span>
                <span class="generate-text">"Generate"</span>
            </button>
            <Show when=move || open.get()>
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
            </Show>
        </div>
    }
}
