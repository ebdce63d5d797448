//! Documents in the conversation: the card, and the viewer that opens from it.

use leptos::prelude::*;

use crate::api::Artifact;
use crate::markdown::to_safe_html;

/// A document card: its type and title; opens the viewer.
#[component]
pub fn ArtifactCard(artifact: Artifact, #[prop(into)] on_open: Callback<Artifact>) -> impl IntoView {
    let label = artifact.artifact_type.label();
    let title = artifact.title.clone();
    let version = artifact.version;
    view! {
        <div class="artifact-card" data-testid="artifact-card">
            <span class="artifact-type">{label}</span>
            <button
                type="button"
                class="artifact-open"
                aria-label=format!("Open {title}")
                on:click=move |_| on_open.run(artifact.clone())
            >
                <span class="artifact-title">{title.clone()}</span>
            </button>
            {(version > 1).then(|| view! { <span class="artifact-version">{format!("v{version}")}</span> })}
        </div>
    }
}

/// The conversation's documents in one list, behind a toggle in the chat header; each opens the viewer.
#[component]
pub fn DocumentsPanel(
    #[prop(into)] artifacts: Signal<Vec<Artifact>>,
    #[prop(into)] on_open: Callback<Artifact>,
) -> impl IntoView {
    let expanded = RwSignal::new(false);
    let count = move || artifacts.with(Vec::len);
    view! {
        <div class="documents-panel">
            <button
                type="button"
                class="button"
                aria-expanded=move || expanded.get().to_string()
                aria-controls="documents-list"
                on:click=move |_| expanded.update(|e| *e = !*e)
            >
                {move || format!("Documents ({})", count())}
            </button>
            <Show when=move || expanded.get()>
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
                </div>
            </Show>
        </div>
    }
}

/// The document viewer, whose code is loaded when a document is first opened (split out of the main wasm bundle in
/// release builds).
#[lazy]
pub fn artifact_viewer(artifact: Artifact, on_close: Callback<()>, on_delete: Callback<Artifact>) -> AnyView {
    view! { <ArtifactViewer artifact on_close on_delete/> }.into_any()
}

/// The open document: rendered Markdown, exports, delete.
#[component]
fn ArtifactViewer(
    artifact: Artifact,
    #[prop(into)] on_close: Callback<()>,
    #[prop(into)] on_delete: Callback<Artifact>,
) -> impl IntoView {
    let confirming = RwSignal::new(false);
    let export = |format: &str| format!("/api/artifacts/{}/export?format={format}", artifact.id);
    let (md, pdf, docx) = (export("md"), export("pdf"), export("docx"));
    let html = to_safe_html(&artifact.content);
    let title = artifact.title.clone();
    let for_delete = artifact.clone();
    view! {
        <div class="viewer-backdrop" on:click=move |_| on_close.run(())></div>
        <div class="viewer" role="dialog" aria-modal="true" aria-label=title.clone()
            on:keydown=move |ev: leptos::ev::KeyboardEvent| if ev.key() == "Escape" { on_close.run(()) }>
            <header class="viewer-head">
                <div>
                    <span class="artifact-type">{artifact.artifact_type.label()}</span>
                    <h2>{title.clone()}</h2>
                </div>
                <button type="button" class="icon-button" aria-label="Close" autofocus on:click=move |_| on_close.run(())>"✕"</button>
            </header>
            <div class="viewer-actions">
                <a class="button" href=md download>"Export Markdown"</a>
                <a class="button" href=pdf download>"Export PDF"</a>
                <a class="button" href=docx download>"Export Word"</a>
                {move || if confirming.get() {
                    let artifact = for_delete.clone();
                    view! {
                        <span class="confirm">
                            "Delete this document? "
                            <button type="button" class="danger" on:click=move |_| on_delete.run(artifact.clone())>"Delete document"</button>
                            <button type="button" on:click=move |_| confirming.set(false)>"Keep"</button>
                        </span>
                    }.into_any()
                } else {
                    view! { <button type="button" on:click=move |_| confirming.set(true)>"Delete"</button> }.into_any()
                }}
            </div>
            <article class="viewer-body md" inner_html=html></article>
        </div>
    }
}
