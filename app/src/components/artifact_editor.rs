//! A person's edit of a document: the Markdown source beside a live preview (tabs at phone width), Save and
//! Cancel, Ctrl/Cmd+S; and, when someone saved a version meanwhile, the two side by side to keep one or merge.
//! Part of the viewer, which is loaded on first use.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::client::{self, SaveFailure};
use crate::api::{Artifact, EditArtifact, MAX_ARTIFACT_CHARS, MAX_TITLE_CHARS};
use crate::components::diff_view::diff_lines;
use crate::markdown::to_safe_html;

/// Which half of the editor shows at phone width; both show on wider screens.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pane {
    Write,
    Preview,
}

/// The editor of `document`, begun from version `base`. `dirty` says whether the text or title differ from what
/// the edit began with; `on_saved` gets the document once a version is saved, `on_dropped` the version someone else
/// saved when the person takes it instead of theirs; `on_cancel` asks to leave (the viewer asks first if `dirty`).
#[component]
pub fn ArtifactEditor(
    document: Artifact,
    base: i64,
    dirty: RwSignal<bool>,
    #[prop(into)] on_saved: Callback<Artifact>,
    #[prop(into)] on_dropped: Callback<Artifact>,
    #[prop(into)] on_cancel: Callback<()>,
) -> impl IntoView {
    let id = document.id;
    let original = StoredValue::new((document.title.clone(), document.content.clone()));
    let text = RwSignal::new(document.content);
    let title = RwSignal::new(document.title);
    let base = RwSignal::new(base);
    let pane = RwSignal::new(Pane::Write);
    let saving = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    // The document as it is now, when a save was refused because of it.
    let conflict = RwSignal::new(None::<Artifact>);
    // The other version, shown above the editor while the person merges by hand.
    let merging = RwSignal::new(None::<Artifact>);
    Effect::new(move |_| {
        let changed = original.with_value(|(t, c)| text.with(|x| x != c) || title.with(|x| x.trim() != t));
        dirty.set(changed);
    });
    let save = move || {
        if saving.get_untracked() || conflict.get_untracked().is_some() {
            return;
        }
        if !dirty.get_untracked() && merging.get_untracked().is_none() {
            on_cancel.run(());
            return;
        }
        let new_title = title.get_untracked().trim().to_string();
        let body = EditArtifact {
            content: text.get_untracked(),
            title: original.with_value(|(t, _)| new_title != *t).then_some(new_title),
            base_version: base.get_untracked(),
        };
        saving.set(true);
        error.set(None);
        spawn_local(async move {
            match client::save_artifact(id, &body).await {
                Ok(saved) => on_saved.run(saved),
                Err(SaveFailure::Conflict(current)) => {
                    conflict.try_set(Some(*current));
                }
                Err(SaveFailure::Failed(e)) => {
                    error.try_set(Some(e.message));
                }
            }
            saving.try_set(false);
        });
    };
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if (ev.ctrl_key() || ev.meta_key()) && ev.key().eq_ignore_ascii_case("s") {
            ev.prevent_default();
            save();
        }
    };
    let preview = Memo::new(move |_| text.with(|t| to_safe_html(t)));
    let keep_mine = Callback::new(move |current: Artifact| {
        base.set(current.version);
        conflict.set(None);
        save();
    });
    let take_theirs = Callback::new(move |current: Artifact| {
        dirty.set(false);
        on_dropped.run(current);
    });
    let merge = Callback::new(move |current: Artifact| {
        base.set(current.version);
        conflict.set(None);
        merging.set(Some(current));
    });
    let tab = move |which: Pane, label: &'static str, id: &'static str, controls: &'static str| {
        view! {
            <button type="button" role="tab" id=id aria-controls=controls
                aria-selected=move || (pane.get() == which).to_string()
                on:click=move |_| pane.set(which)>{label}</button>
        }
    };
    view! {
        <div class="editor" data-testid="artifact-editor" on:keydown=on_keydown>
            {move || conflict.get().map(|current| view! {
                <Conflict current mine=text.get_untracked() on_keep=keep_mine on_take=take_theirs on_merge=merge/>
            })}
            {move || merging.get().map(|theirs| view! {
                <details class="their-version" open>
                    <summary>{format!("Version {} as it was saved (merge what you need into yours)", theirs.version)}</summary>
                    <pre class="their-text" data-testid="their-version" tabindex="0">{theirs.content}</pre>
                </details>
            })}
            <label class="editor-title">
                <span>"Title"</span>
                <input type="text" maxlength=MAX_TITLE_CHARS.to_string() prop:value=move || title.get()
                    on:input=move |ev| title.set(event_target_value(&ev))/>
            </label>
            <div class="editor-tabs" role="tablist" aria-label="Editor view">
                {tab(Pane::Write, "Write", "editor-tab-write", "editor-write")}
                {tab(Pane::Preview, "Preview", "editor-tab-preview", "editor-preview")}
            </div>
            <div class="editor-panes" data-pane=move || match pane.get() { Pane::Write => "write", Pane::Preview => "preview" }>
                <div class="editor-write" id="editor-write" role="tabpanel" aria-labelledby="editor-tab-write">
                    <textarea aria-label="Document text (Markdown)" spellcheck="true"
                        maxlength=MAX_ARTIFACT_CHARS.to_string()
                        prop:value=move || text.get()
                        on:input=move |ev| text.set(event_target_value(&ev))></textarea>
                </div>
                <div class="editor-preview md" id="editor-preview" role="tabpanel" aria-labelledby="editor-tab-preview"
                    data-testid="editor-preview" tabindex="0" inner_html=move || preview.get()></div>
            </div>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <div class="editor-actions">
                <button type="button" class="primary" disabled=move || saving.get() || conflict.get().is_some()
                    on:click=move |_| save()>{move || if saving.get() { "Saving…" } else { "Save" }}</button>
                <button type="button" on:click=move |_| on_cancel.run(())>"Cancel"</button>
                <span class="editor-hint">"Ctrl+S (⌘S) saves · Esc leaves"</span>
            </div>
        </div>
    }
}

/// A save refused because `current` was saved meanwhile: the changes from it to the person's text `mine`, and
/// the three ways on.
#[component]
fn Conflict(
    current: Artifact,
    mine: String,
    on_keep: Callback<Artifact>,
    on_take: Callback<Artifact>,
    on_merge: Callback<Artifact>,
) -> impl IntoView {
    let diff = RwSignal::new(None::<Result<crate::api::DraftDiff, String>>);
    let id = current.id;
    spawn_local(async move {
        let result = client::compare_draft(id, mine).await.map_err(|e| e.message);
        diff.try_set(Some(result));
    });
    let version = current.version;
    let (keep, take, merge) = (current.clone(), current.clone(), current);
    view! {
        <section class="conflict" data-testid="version-conflict" aria-labelledby="conflict-title">
            <h3 id="conflict-title">"This document changed while you were editing"</h3>
            <p>{format!(
                "Version {version} was saved after you began. Below, its lines (−) turned into yours (+). Keep \
                 yours as the next version, take version {version} and drop your changes, or merge by hand."
            )}</p>
            <div class="version-diff" role="region" aria-label=format!("Changes from version {version} to yours")>
                {move || match diff.get() {
                    None => view! { <p class="list-status">"Comparing…"</p> }.into_any(),
                    Some(Err(message)) => view! { <p class="error" role="alert">{message}</p> }.into_any(),
                    Some(Ok(d)) => diff_lines(d.lines, "Your text is the same as this version."),
                }}
            </div>
            <div class="conflict-actions">
                <button type="button" class="primary" on:click=move |_| on_keep.run(keep.clone())>"Keep mine"</button>
                <button type="button" on:click=move |_| on_take.run(take.clone())>
                    {format!("Take version {version}")}
                </button>
                <button type="button" on:click=move |_| on_merge.run(merge.clone())>"Merge by hand"</button>
            </div>
        </section>
    }
}
