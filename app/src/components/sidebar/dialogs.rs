//! The dialogs a conversation's menu opens: rename, edit tags, move to a project, delete.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use uuid::Uuid;

use crate::api::{project_calls, Project, Thread};
use crate::components::modal::ModalDialog;

/// A dialog opened from a conversation's menu.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Pending {
    Rename(Thread),
    Tags(Thread),
    Move(Thread),
    Delete(Thread),
}

impl Pending {
    pub(super) fn thread(&self) -> &Thread {
        match self {
            Pending::Rename(t) | Pending::Tags(t) | Pending::Move(t) | Pending::Delete(t) => t,
        }
    }
}

/// Tags typed as one comma-separated line.
pub(super) fn parse_tags(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect()
}

/// What a dialog reports back: the new title, the new tags as typed, or that deleting was confirmed.
#[derive(Clone, Copy)]
pub(super) struct DialogHandlers {
    pub rename: Callback<String>,
    pub retag: Callback<String>,
    /// The project to move the conversation into; `None` takes it out of its project.
    pub move_to: Callback<Option<Uuid>>,
    pub delete: Callback<()>,
    pub cancel: Callback<()>,
}

/// The dialog `pending` asks for, if any.
#[component]
pub(super) fn ThreadDialog(
    pending: RwSignal<Option<Pending>>,
    saving: RwSignal<bool>,
    error: RwSignal<Option<String>>,
    handlers: DialogHandlers,
) -> impl IntoView {
    move || {
        pending.get().map(|p| {
            view! { <Suspense fallback=|| ()>{Suspend::new(thread_dialog(p, saving, error, handlers))}</Suspense> }
        })
    }
}

/// The dialog for `pending`. Loaded when a first dialog opens (split out of the main wasm bundle in release
/// builds).
#[lazy]
fn thread_dialog(
    pending: Pending,
    saving: RwSignal<bool>,
    error: RwSignal<Option<String>>,
    handlers: DialogHandlers,
) -> AnyView {
    let DialogHandlers { rename, retag, move_to, delete, cancel } = handlers;
    match pending {
        Pending::Rename(t) => view! {
            <FieldDialog title="Rename conversation" label="Title" initial=t.title
                saving error on_save=rename on_cancel=cancel/>
        }
        .into_any(),
        Pending::Tags(t) => view! {
            <FieldDialog title="Edit tags" label="Tags" hint="Separate tags with commas." initial=t.tags.join(", ")
                saving error on_save=retag on_cancel=cancel/>
        }
        .into_any(),
        Pending::Move(t) => view! { <MoveDialog thread=t saving error on_save=move_to on_cancel=cancel/> }.into_any(),
        Pending::Delete(t) => view! {
            <ModalDialog title="Delete conversation?" on_close=cancel>
                <p>{format!("“{}” and everything in it, messages and documents, will be deleted. This cannot be undone.", t.title)}</p>
                {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                <div class="modal-actions">
                    <button type="button" autofocus on:click=move |_| cancel.run(())>"Cancel"</button>
                    <button type="button" class="danger" disabled=move || saving.get() on:click=move |_| delete.run(())>"Delete"</button>
                </div>
            </ModalDialog>
        }
        .into_any(),
    }
}

/// Moves a conversation into one of the projects the person edits in, or out of its project.
#[component]
fn MoveDialog(
    thread: Thread,
    saving: RwSignal<bool>,
    error: RwSignal<Option<String>>,
    on_save: Callback<Option<Uuid>>,
    on_cancel: Callback<()>,
) -> impl IntoView {
    let projects = RwSignal::new(None::<Vec<Project>>);
    let chosen = RwSignal::new(thread.project_id.map(|id| id.to_string()).unwrap_or_default());
    spawn_local(async move {
        match project_calls::projects().await {
            Ok(list) => projects.set(Some(
                list.projects
                    .into_iter()
                    .filter(|p| p.role.writes() && (!p.archived || Some(p.id) == thread.project_id))
                    .collect(),
            )),
            Err(e) => error.set(Some(e.message)),
        }
    });
    let options = move || {
        projects.get().map(|list| {
            list.into_iter().map(|p| view! { <option value=p.id.to_string()>{p.name}</option> }).collect_view()
        })
    };
    view! {
        <ModalDialog title="Move to project" on_close=on_cancel>
            <form class="modal-form" on:submit=move |ev| {
                ev.prevent_default();
                on_save.run(chosen.get_untracked().parse::<Uuid>().ok());
            }>
                <p>{format!("Where “{}” belongs. Members of a project read its conversations.", thread.title)}</p>
                <label for="move-project">"Project"</label>
                <select id="move-project" autofocus prop:value=move || chosen.get()
                    on:change=move |ev| chosen.set(event_target_value(&ev))>
                    <option value="">"No project (yours alone)"</option>
                    {options}
                </select>
                {move || projects.with(|p| p.as_ref().is_some_and(Vec::is_empty)).then(|| view! {
                    <p class="hint">"You edit in no project yet: make one under Projects in the sidebar."</p>
                })}
                {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                <div class="modal-actions">
                    <button type="button" on:click=move |_| on_cancel.run(())>"Cancel"</button>
                    <button type="submit" class="primary" disabled=move || saving.get() || projects.with(Option::is_none)>"Move"</button>
                </div>
            </form>
        </ModalDialog>
    }
}

/// A dialog with one text field, "Save" and "Cancel".
#[component]
fn FieldDialog(
    title: &'static str,
    label: &'static str,
    #[prop(optional)] hint: Option<&'static str>,
    initial: String,
    saving: RwSignal<bool>,
    error: RwSignal<Option<String>>,
    on_save: Callback<String>,
    on_cancel: Callback<()>,
) -> impl IntoView {
    let value = RwSignal::new(initial);
    let input = NodeRef::<html::Input>::new();
    // The dialog focuses the field as it opens; selecting the text lets people type over it.
    Effect::new(move |_| {
        if let Some(field) = input.get() {
            request_animation_frame(move || field.select());
        }
    });
    view! {
        <ModalDialog title=title on_close=on_cancel>
            <form class="modal-form" on:submit=move |ev| {
                ev.prevent_default();
                on_save.run(value.get_untracked());
            }>
                <label for="modal-field">{label}</label>
                <input
                    id="modal-field"
                    type="text"
                    autofocus
                    autocomplete="off"
                    node_ref=input
                    aria-describedby=hint.map(|_| "modal-hint")
                    prop:value=move || value.get()
                    on:input=move |ev| value.set(event_target_value(&ev))
                />
                {hint.map(|h| view! { <p class="hint" id="modal-hint">{h}</p> })}
                {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                <div class="modal-actions">
                    <button type="button" on:click=move |_| on_cancel.run(())>"Cancel"</button>
                    <button type="submit" class="primary" disabled=move || saving.get()>"Save"</button>
                </div>
            </form>
        </ModalDialog>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_split_on_commas_and_trimmed() {
        assert_eq!(parse_tags(" design, urgent ,,  q3 "), vec!["design", "urgent", "q3"]);
        assert!(parse_tags(" , ").is_empty());
    }
}
