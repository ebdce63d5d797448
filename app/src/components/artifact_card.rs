//! Documents in the conversation: the card, and the viewer that opens from it.

use leptos::html;
use leptos::prelude::*;

use crate::api::Artifact;
use crate::components::versions::VersionList;
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
                data-artifact-id=artifact.id.to_string()
                aria-label=format!("Open {title}")
                on:click=move |_| on_open.run(artifact.clone())
            >
                <span class="artifact-title">{title.clone()}</span>
            </button>
            {(version > 1).then(|| view! { <span class="artifact-version">{format!("v{version}")}</span> })}
        </div>
    }
}

/// The document viewer, whose code is loaded when a document is first opened (split out of the main wasm bundle in
/// release builds). `on_restored` gets the document once an earlier version was brought back.
#[lazy]
pub fn artifact_viewer(
    artifact: Artifact,
    on_close: Callback<()>,
    on_delete: Callback<Artifact>,
    on_restored: Callback<Artifact>,
) -> AnyView {
    view! { <ArtifactViewer artifact on_close on_delete on_restored/> }.into_any()
}

/// The open document: rendered Markdown, exports, delete, and its versions. Focus moves into it when it opens;
/// Escape closes it.
#[component]
fn ArtifactViewer(
    artifact: Artifact,
    #[prop(into)] on_close: Callback<()>,
    #[prop(into)] on_delete: Callback<Artifact>,
    #[prop(into)] on_restored: Callback<Artifact>,
) -> impl IntoView {
    let confirming = RwSignal::new(false);
    let close_button = NodeRef::<html::Button>::new();
    // Once the viewer is on the page (a detached element cannot take focus).
    Effect::new(move |_| {
        if let Some(button) = close_button.get() {
            request_animation_frame(move || {
                let _ = button.focus();
            });
        }
    });
    let export = |format: &str| format!("/api/artifacts/{}/export?format={format}", artifact.id);
    let (md, pdf, docx) = (export("md"), export("pdf"), export("docx"));
    let html = to_safe_html(&artifact.content);
    let title = artifact.title.clone();
    let for_delete = artifact.clone();
    // On the window: Escape closes the viewer wherever focus is (a removed button leaves it on the page's body).
    let escape = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.key() == "Escape" {
            on_close.run(());
        }
    });
    on_cleanup(move || escape.remove());
    view! {
        <div class="viewer-backdrop" on:click=move |_| on_close.run(())></div>
        <div class="viewer" role="dialog" aria-modal="true" aria-label=title.clone()>
            <header class="viewer-head">
                <div>
                    <span class="artifact-type">{artifact.artifact_type.label()}</span>
                    <h2>{title.clone()}</h2>
                </div>
                <button type="button" class="icon-button" aria-label="Close" node_ref=close_button
                    on:click=move |_| on_close.run(())>"✕"</button>
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
            <VersionList artifact=artifact.id current=artifact.version on_restored/>
        </div>
    }
}
