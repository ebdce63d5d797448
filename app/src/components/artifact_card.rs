//! Documents in the conversation: the card, and the viewer that opens from it.

use std::hash::{Hash, Hasher};

use leptos::html;
use leptos::prelude::*;
use uuid::Uuid;

use crate::api::{export_url, Artifact, ExportFormat, ThreadAccess, MAX_QUOTE_CHARS};
use crate::components::artifact_editor::ArtifactEditor;
use crate::components::out_of_date::OutOfDateNotice;
use crate::components::versions::VersionList;
use crate::markdown::{link_citations, to_safe_html};

/// What a card shows of a document, for lists that draw a card again only when it changes: the document, its
/// version, and a digest of its title and out-of-date marks (which change without a new version).
pub fn card_key(artifact: &Artifact) -> (Uuid, i64, u64) {
    let mut digest = std::hash::DefaultHasher::new();
    artifact.title.hash(&mut digest);
    for mark in &artifact.out_of_date {
        (&mark.key, &mark.was, &mark.now, mark.status.as_str()).hash(&mut digest);
    }
    (artifact.id, artifact.version, digest.finish())
}

/// A document card: its type and title, which opens the viewer, and what makes it out of date with "Update
/// document" (`on_update`, not while `busy`).
#[component]
pub fn ArtifactCard(
    artifact: Artifact,
    #[prop(into)] on_open: Callback<Artifact>,
    #[prop(optional)] on_update: Option<Callback<Artifact>>,
    #[prop(into, default = Signal::stored(false))] busy: Signal<bool>,
) -> impl IntoView {
    let label = artifact.artifact_type.label();
    let title = artifact.title.clone();
    let version = artifact.version;
    let marks = artifact.out_of_date.clone();
    // "Update document" runs a turn: for those who write in the conversation.
    let writes = crate::state::access().get_untracked().writes();
    let update = on_update.filter(|_| writes).map(|update| {
        let artifact = artifact.clone();
        Callback::new(move |_| update.run(artifact.clone()))
    });
    let id = artifact.id;
    view! {
        <div class="artifact-card" data-testid="artifact-card">
            <span class="artifact-type">{label}</span>
            <button
                type="button"
                class="artifact-open"
                data-artifact-id=id.to_string()
                aria-label=format!("Open {title}")
                on:click=move |_| on_open.run(artifact.clone())
            >
                <span class="artifact-title">{title.clone()}</span>
            </button>
            {(version > 1).then(|| view! { <span class="artifact-version">{format!("v{version}")}</span> })}
            {(!marks.is_empty()).then(|| view! { <OutOfDateNotice marks busy on_update=update/> })}
        </div>
    }
}

/// What the viewer does with the document: read it, or edit it (its Markdown source beside a preview).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mode {
    Reading,
    Editing,
}

/// What the person chose in the viewer, for the page to carry out.
#[derive(Clone, Copy)]
pub struct ViewerActions {
    pub close: Callback<()>,
    pub delete: Callback<Artifact>,
    /// A version was saved here (an edit, or an earlier version restored): the document at that version.
    pub saved: Callback<Artifact>,
    /// "Ask about this": the document and the passage selected in it.
    pub ask: Callback<(Artifact, String)>,
    /// "Update document": revise it to the requirements as they stand.
    pub update: Callback<Artifact>,
    /// A cited requirement's key was followed (`R-1`).
    pub cite: Callback<String>,
}

/// What the viewer shows of the conversation around the document.
#[derive(Clone, Copy)]
pub struct ViewerContext {
    /// The keys of the conversation's requirements: citing them makes a link.
    pub keys: Signal<Vec<String>>,
    /// Whether a turn or a silent generation is running (no update may start meanwhile).
    pub busy: Signal<bool>,
}

/// The document viewer, whose code is loaded when a document is first opened (split out of the main wasm bundle in
/// release builds). It follows `document` as newer versions arrive (saved here, by the assistant, or in another
/// window), and stays open, in the same mode, while they do.
#[lazy]
pub fn artifact_viewer(document: Memo<Option<Artifact>>, actions: ViewerActions, around: ViewerContext) -> AnyView {
    view! { <ArtifactViewer document actions around/> }.into_any()
}

/// The open document: what makes it out of date, rendered Markdown with its cited requirements as links, Edit, Ask
/// about this, exports, delete, and its versions. Focus moves into it when it opens; Escape closes it (in edit
/// mode, it leaves edit mode, asking first if there are changes).
#[component]
fn ArtifactViewer(document: Memo<Option<Artifact>>, actions: ViewerActions, around: ViewerContext) -> impl IntoView {
    // What the person may do here: edit (the author and the project's editors), ask, update and delete (the author).
    let access = crate::state::access();
    let confirming = RwSignal::new(false);
    let mode = RwSignal::new(Mode::Reading);
    // Unsaved changes of the editor, and what to do once the person agreed to drop them.
    let dirty = RwSignal::new(false);
    let leaving = RwSignal::new(None::<Leave>);
    let selection = RwSignal::new(None::<String>);
    let status = RwSignal::new(None::<String>);
    let close_button = NodeRef::<html::Button>::new();
    // Once the viewer is on the page (a detached element cannot take focus).
    Effect::new(move |_| {
        if let Some(button) = close_button.get() {
            request_animation_frame(move || {
                let _ = button.focus();
            });
        }
    });
    let leave = move |to: Leave| {
        if mode.get_untracked() == Mode::Editing && dirty.get_untracked() {
            leaving.set(Some(to));
        } else {
            go(to, mode, dirty, actions.close);
        }
    };
    // On the window: Escape works wherever focus is (a removed button leaves it on the page's body).
    let escape = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.key() != "Escape" {
            return;
        }
        if leaving.get_untracked().is_some() {
            leaving.set(None);
        } else if mode.get_untracked() == Mode::Editing {
            leave(Leave::Edit);
        } else {
            actions.close.run(());
        }
    });
    // Leaving the page with unsaved changes asks first.
    let unload = window_event_listener(leptos::ev::beforeunload, move |ev| {
        if mode.get_untracked() == Mode::Editing && dirty.get_untracked() {
            ev.prevent_default();
            ev.set_return_value("You have unsaved changes.");
        }
    });
    on_cleanup(move || {
        escape.remove();
        unload.remove();
    });
    let title = move || document.with(|d| d.as_ref().map(|d| d.title.clone()).unwrap_or_default());
    let kind = move || document.with(|d| d.as_ref().map(|d| d.artifact_type.label()).unwrap_or_default());
    let html = Memo::new(move |_| {
        let mut keys = around.keys.get();
        document.with(|d| {
            d.as_ref()
                .map(|d| {
                    // The other conversations' requirements it cites link too.
                    keys.extend(d.requirements.iter().filter(|k| k.contains('@')).cloned());
                    link_citations(&to_safe_html(&d.content), &keys)
                })
                .unwrap_or_default()
        })
    });
    let marks = Memo::new(move |_| document.with(|d| d.as_ref().map(|d| d.out_of_date.clone()).unwrap_or_default()));
    let update = Callback::new(move |_| {
        if let Some(doc) = document.get_untracked() {
            actions.update.run(doc);
        }
    });
    // A cited key, rendered as a button inside the Markdown, is followed from here.
    let navigate = StoredValue::new_local(leptos_router::hooks::use_navigate());
    let follow_citation = move |ev: leptos::ev::MouseEvent| {
        use wasm_bindgen::JsCast;
        let target = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok());
        let link = target.and_then(|t| t.closest(".requirement-link").ok().flatten());
        let Some(key) = link.and_then(|l| l.get_attribute("data-key")) else { return };
        match key.split_once('@') {
            // Another conversation's requirement: that conversation, showing it.
            Some((own, reference)) => {
                let thread = document.with_untracked(|d| {
                    d.as_ref()?.cited_conversations.iter().find(|c| c.reference == reference).map(|c| c.thread_id)
                });
                if let Some(thread) = thread {
                    // The viewer closes first, and the page changes once it is gone: the next conversation's
                    // reading resets what its views were following.
                    let go = navigate.with_value(Clone::clone);
                    let url = format!("/c/{thread}?requirement={own}");
                    actions.close.run(());
                    set_timeout(move || go(&url, Default::default()), std::time::Duration::ZERO);
                }
            }
            None => actions.cite.run(key),
        }
    };
    let shown = Memo::new(move |_| document.with(|d| d.as_ref().map(|d| (d.id, d.version))));
    // The viewer opens on one document and is redrawn for another.
    let id = shown.get_untracked().map(|(id, _)| id).unwrap_or_default();
    let export = move |format: ExportFormat| export_url(id, format, None);
    // The version the editor began from, while it is open: a newer one arriving meanwhile is announced.
    let editing_from = RwSignal::new(None::<i64>);
    Effect::new(move |_| {
        if let (Some((_, now)), Some(from)) = (shown.get(), editing_from.get_untracked()) {
            if now > from && mode.get_untracked() == Mode::Editing {
                status.set(Some(format!(
                    "Version {now} was saved while you were editing. Saving will show you both to choose from."
                )));
            }
        }
    });
    let on_select = move || selection.set(selected_text());
    let ask = move |_| {
        if let (Some(text), Some(doc)) = (selection.get_untracked(), document.get_untracked()) {
            actions.ask.run((doc, text));
        }
    };
    let saved = Callback::new(move |artifact: Artifact| {
        status.set(Some(format!("Saved as version {}.", artifact.version)));
        editing_from.set(None);
        dirty.set(false);
        mode.set(Mode::Reading);
        actions.saved.run(artifact);
    });
    let dropped = Callback::new(move |artifact: Artifact| {
        status.set(Some(format!("Your changes were dropped: this is version {}.", artifact.version)));
        editing_from.set(None);
        dirty.set(false);
        mode.set(Mode::Reading);
        actions.saved.run(artifact);
    });
    let start_editing = move |_| {
        status.set(None);
        selection.set(None);
        editing_from.set(shown.get_untracked().map(|(_, v)| v));
        mode.set(Mode::Editing);
    };
    let stop_editing = Callback::new(move |_| leave(Leave::Edit));
    view! {
        <div class="viewer-backdrop" on:click=move |_| leave(Leave::Close)></div>
        <div class="viewer" class:editing=move || mode.get() == Mode::Editing role="dialog" aria-modal="true"
            aria-label=title>
            <header class="viewer-head">
                <div>
                    <span class="artifact-type">{kind}</span>
                    <h2>{title}</h2>
                </div>
                <button type="button" class="icon-button" aria-label="Close" node_ref=close_button
                    on:click=move |_| leave(Leave::Close)>"✕"</button>
            </header>
            {move || leaving.get().map(|to| view! {
                <div class="confirm unsaved" role="alertdialog" aria-label="Unsaved changes" aria-describedby="unsaved-text">
                    <span id="unsaved-text">"Your changes are not saved. Leave without saving them?"</span>
                    <button type="button" class="danger" on:click=move |_| {
                        leaving.set(None);
                        go(to, mode, dirty, actions.close);
                    }>"Discard changes"</button>
                    <button type="button" on:click=move |_| leaving.set(None)>"Keep editing"</button>
                </div>
            })}
            <p class="viewer-status" role="status">{move || status.get()}</p>
            {move || {
                let marks = marks.get();
                (!marks.is_empty() && mode.get() == Mode::Reading)
                    .then(|| {
                        let on_update = access.get_untracked().writes().then_some(update);
                        view! { <OutOfDateNotice marks busy=around.busy on_update/> }
                    })
            }}
            {move || match mode.get() {
                // Read once: the editor keeps the person's text while newer versions arrive.
                Mode::Editing => document.get_untracked().map(|doc| {
                    let base = editing_from.get_untracked().unwrap_or(doc.version);
                    view! { <ArtifactEditor document=doc base dirty on_saved=saved on_dropped=dropped on_cancel=stop_editing/> }
                }).into_any(),
                Mode::Reading => view! {
                    <div class="viewer-actions">
                        {move || access.get().writes().then(|| view! {
                            <button type="button" class="primary" on:click=start_editing>"Edit"</button>
                        })}
                        {move || (selection.get().is_some() && access.get().writes()).then(|| view! {
                            <button type="button" on:click=ask>"Ask about this"</button>
                        })}
                        <a class="button" href=export(ExportFormat::Md) download>"Export Markdown"</a>
                        <a class="button" href=export(ExportFormat::Pdf) download>"Export PDF"</a>
                        <a class="button" href=export(ExportFormat::Docx) download>"Export Word"</a>
                        {move || if access.get() != ThreadAccess::Author {
                            ().into_any()
                        } else if confirming.get() {
                            view! {
                                <span class="confirm">
                                    "Delete this document? "
                                    <button type="button" class="danger" on:click=move |_| {
                                        if let Some(doc) = document.get_untracked() {
                                            actions.delete.run(doc);
                                        }
                                    }>"Delete document"</button>
                                    <button type="button" on:click=move |_| confirming.set(false)>"Keep"</button>
                                </span>
                            }.into_any()
                        } else {
                            view! { <button type="button" on:click=move |_| confirming.set(true)>"Delete"</button> }.into_any()
                        }}
                    </div>
                    <article class="viewer-body md" inner_html=move || html.get() on:mouseup=move |_| on_select()
                        on:keyup=move |_| on_select() on:click=follow_citation></article>
                }
                .into_any(),
            }}
            {move || (mode.get() == Mode::Reading).then(|| shown.get().map(|(artifact, current)| view! {
                <VersionList artifact current on_restored=actions.saved/>
            }))}
        </div>
    }
}

/// Where the person goes from the editor.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Leave {
    /// Back to reading the document.
    Edit,
    /// Out of the viewer.
    Close,
}

fn go(to: Leave, mode: RwSignal<Mode>, dirty: RwSignal<bool>, close: Callback<()>) {
    dirty.set(false);
    match to {
        Leave::Edit => mode.set(Mode::Reading),
        Leave::Close => close.run(()),
    }
}

/// The passage selected in the document, trimmed; `None` when nothing is selected or it is longer than a quote may
/// be. A selection inside one line (a list item, a paragraph, a heading, a table cell) is widened to that whole line:
/// a few words may occur more than once in a document, their line seldom does, and the model reads them in place.
fn selected_text() -> Option<String> {
    use wasm_bindgen::JsCast;
    let selection = web_sys::window()?.get_selection().ok()??;
    let text = selection.to_string().as_string()?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let container = selection.get_range_at(0).ok()?.common_ancestor_container().ok()?;
    let mut element = match container.dyn_into::<web_sys::Element>() {
        Ok(element) => Some(element),
        Err(node) => node.parent_element(),
    };
    let mut passage = text.to_string();
    while let Some(e) = element {
        if e.class_list().contains("viewer-body") {
            break;
        }
        if matches!(
            e.tag_name().as_str(),
            "LI" | "P" | "TD" | "TH" | "H1" | "H2" | "H3" | "H4" | "H5" | "H6" | "DT" | "DD"
        ) {
            if let Some(line) = e.text_content().map(|t| t.trim().to_string()).filter(|t| t.contains(text)) {
                passage = line;
            }
            break;
        }
        element = e.parent_element();
    }
    (passage.chars().count() <= MAX_QUOTE_CHARS).then_some(passage)
}
