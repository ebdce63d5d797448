//! The sidebar: "New chat", the search box, the conversations (pinned first, more loaded as the list is
//! scrolled, archived ones behind a toggle), each conversation's menu and its dialogs, and the account.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_location, use_navigate};
use uuid::Uuid;

use crate::api::{client, Thread, UpdateThread};
use crate::components::modal::ModalDialog;
use crate::components::search_box::SearchBox;
use crate::components::theme_toggle::ThemeToggle;
use crate::components::thread_item::{focus_by_id, options_button_id, ThreadAction, ThreadItem};
use crate::routes::chat::ChatState;
use crate::{CurrentUser, ThreadsChanged};

/// How close to the end of the list (in pixels) the next page is fetched.
const LOAD_AHEAD_PX: i32 = 240;
/// The id of the "New chat" button, where focus goes when a conversation leaves the list.
const NEW_CHAT_ID: &str = "new-chat";

/// A dialog opened from a conversation's menu.
#[derive(Clone, Debug, PartialEq)]
enum Pending {
    Rename(Thread),
    Tags(Thread),
    Delete(Thread),
}

impl Pending {
    fn thread(&self) -> &Thread {
        match self {
            Pending::Rename(t) | Pending::Tags(t) | Pending::Delete(t) => t,
        }
    }
}

/// Tags typed as one comma-separated line.
fn parse_tags(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect()
}

/// The sidebar: brand, "New chat", search, the conversations, the account.
#[component]
pub fn Sidebar() -> impl IntoView {
    let changed = expect_context::<ThreadsChanged>();
    let user = expect_context::<CurrentUser>();
    let chat = expect_context::<ChatState>();
    let navigate = use_navigate();
    let location = use_location();

    let threads = RwSignal::new(Vec::<Thread>::new());
    let next = RwSignal::new(None::<String>);
    let loading = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let show_archived = RwSignal::new(false);
    // Bumped at each fresh listing, so pages of an older walk that arrive late are dropped.
    let walk = StoredValue::new(0u64);
    let menu = RwSignal::new(None::<Uuid>);
    let pending = RwSignal::new(None::<Pending>);
    let dialog_error = RwSignal::new(None::<String>);
    let saving = RwSignal::new(false);
    // Announced to screen readers after an action that changes the list.
    let announcement = RwSignal::new(String::new());
    // Where focus goes once the list shows the result of an action.
    let refocus = StoredValue::new(None::<Uuid>);
    let scroller = NodeRef::<html::Div>::new();

    let restore_focus = move || {
        if let Some(id) = refocus.get_value() {
            refocus.set_value(None);
            request_animation_frame(move || {
                let button = options_button_id(id);
                let present =
                    web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id(&button)).is_some();
                focus_by_id(if present { &button } else { NEW_CHAT_ID });
            });
        }
    };

    // The first page, again whenever a conversation was created or changed, or the archive toggled.
    Effect::new(move |_| {
        changed.0.track();
        let archived = show_archived.get();
        let this_walk = walk.get_value() + 1;
        walk.set_value(this_walk);
        loading.set(true);
        spawn_local(async move {
            let result = client::list_threads(archived, None).await;
            if walk.get_value() != this_walk {
                return;
            }
            loading.set(false);
            match result {
                Ok(page) => {
                    threads.set(page.threads);
                    next.set(page.next_cursor);
                    error.set(None);
                }
                Err(e) => error.set(Some(e.message)),
            }
            restore_focus();
        });
    });

    let near_end = move || {
        scroller
            .get_untracked()
            .is_some_and(|el| el.scroll_height() - el.scroll_top() - el.client_height() < LOAD_AHEAD_PX)
    };
    let load_more = move || {
        if loading.get_untracked() || !near_end() {
            return;
        }
        let Some(cursor) = next.get_untracked() else { return };
        let archived = show_archived.get_untracked();
        let this_walk = walk.get_value();
        loading.set(true);
        spawn_local(async move {
            let result = client::list_threads(archived, Some(&cursor)).await;
            if walk.get_value() != this_walk {
                return;
            }
            loading.set(false);
            match result {
                Ok(page) => {
                    threads.update(|list| {
                        for thread in page.threads {
                            if !list.iter().any(|t| t.id == thread.id) {
                                list.push(thread);
                            }
                        }
                    });
                    next.set(page.next_cursor);
                }
                Err(e) => error.set(Some(e.message)),
            }
        });
    };
    // After each page is drawn: if the end of the list is still in view (a tall window), fetch the next.
    Effect::new(move |_| {
        threads.track();
        next.track();
        request_animation_frame(load_more);
    });

    let new_chat = {
        let navigate = navigate.clone();
        move |_| navigate("/", Default::default())
    };
    let sign_out = {
        let navigate = navigate.clone();
        move |_| {
            let navigate = navigate.clone();
            spawn_local(async move {
                // Whatever the server answers, this browser forgets the account and its conversations.
                let _ = client::logout().await;
                user.0.set(None);
                chat.clear();
                threads.set(Vec::new());
                next.set(None);
                navigate("/signin", Default::default());
            });
        }
    };

    // Pin and archive act at once; rename, tags and delete open a dialog first.
    let save = move |id: Uuid, change: UpdateThread, done: &'static str| {
        saving.set(true);
        spawn_local(async move {
            let result = client::update_thread(id, &change).await;
            saving.set(false);
            match result {
                Ok(thread) => {
                    chat.renamed(&thread);
                    pending.set(None);
                    dialog_error.set(None);
                    announcement.set(done.to_string());
                    refocus.set_value(Some(id));
                    changed.notify();
                }
                Err(e) if pending.get_untracked().is_some() => dialog_error.set(Some(e.message)),
                Err(e) => error.set(Some(e.message)),
            }
        });
    };
    let on_action = Callback::new(move |(thread, action): (Thread, ThreadAction)| {
        dialog_error.set(None);
        match action {
            ThreadAction::Rename => pending.set(Some(Pending::Rename(thread))),
            ThreadAction::Tags => pending.set(Some(Pending::Tags(thread))),
            ThreadAction::Delete => pending.set(Some(Pending::Delete(thread))),
            ThreadAction::Pin => {
                let change = UpdateThread { pinned: Some(!thread.pinned), ..Default::default() };
                save(thread.id, change, if thread.pinned { "Conversation unpinned." } else { "Conversation pinned." });
            }
            ThreadAction::Archive => {
                let change = UpdateThread { archived: Some(!thread.archived), ..Default::default() };
                let done =
                    if thread.archived { "Conversation moved out of the archive." } else { "Conversation archived." };
                save(thread.id, change, done);
            }
        }
    });
    let cancel_dialog = Callback::new(move |()| {
        if let Some(p) = pending.get_untracked() {
            pending.set(None);
            dialog_error.set(None);
            focus_by_id(&options_button_id(p.thread().id));
        }
    });
    let rename = Callback::new(move |title: String| {
        if let Some(p) = pending.get_untracked() {
            save(p.thread().id, UpdateThread { title: Some(title), ..Default::default() }, "Conversation renamed.");
        }
    });
    let retag = Callback::new(move |text: String| {
        if let Some(p) = pending.get_untracked() {
            save(p.thread().id, UpdateThread { tags: Some(parse_tags(&text)), ..Default::default() }, "Tags saved.");
        }
    });
    let delete = {
        let navigate = navigate.clone();
        Callback::new(move |()| {
            let Some(p) = pending.get_untracked() else { return };
            let id = p.thread().id;
            let navigate = navigate.clone();
            saving.set(true);
            spawn_local(async move {
                let result = client::delete_thread(id).await;
                saving.set(false);
                match result {
                    Ok(()) => {
                        pending.set(None);
                        announcement.set("Conversation deleted.".to_string());
                        threads.update(|list| list.retain(|t| t.id != id));
                        if location.pathname.get_untracked() == format!("/c/{id}") {
                            navigate("/", Default::default());
                        }
                        refocus.set_value(Some(id));
                        changed.notify();
                    }
                    Err(e) => dialog_error.set(Some(e.message)),
                }
            });
        })
    };

    let dialog = move || {
        pending.get().map(|p| match p {
            Pending::Rename(t) => view! {
                <FieldDialog title="Rename conversation" label="Title" initial=t.title
                    saving=saving error=dialog_error on_save=rename on_cancel=cancel_dialog/>
            }
            .into_any(),
            Pending::Tags(t) => view! {
                <FieldDialog title="Edit tags" label="Tags" hint="Separate tags with commas." initial=t.tags.join(", ")
                    saving=saving error=dialog_error on_save=retag on_cancel=cancel_dialog/>
            }
            .into_any(),
            Pending::Delete(t) => view! {
                <ModalDialog title="Delete conversation?" on_close=cancel_dialog>
                    <p>{format!("“{}” and everything in it, messages and documents, will be deleted. This cannot be undone.", t.title)}</p>
                    {move || dialog_error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                    <div class="modal-actions">
                        <button type="button" autofocus on:click=move |_| cancel_dialog.run(())>"Cancel"</button>
                        <button type="button" class="danger" disabled=move || saving.get() on:click=move |_| delete.run(())>"Delete"</button>
                    </div>
                </ModalDialog>
            }
            .into_any(),
        })
    };

    let list_title = move || if show_archived.get() { "Archived" } else { "Conversations" };
    let empty = move || {
        (!loading.get() && threads.with(Vec::is_empty) && error.with(Option::is_none)).then(|| {
            let text = if show_archived.get() { "Nothing archived." } else { "No conversations yet." };
            view! { <p class="list-status">{text}</p> }
        })
    };

    // On a phone the list folds away behind a "Conversations" button (CSS shows the button and hides the body
    // there); it folds again once a conversation or page is opened.
    let unfolded = RwSignal::new(false);
    Effect::new(move |_| {
        location.pathname.track();
        location.search.track();
        unfolded.set(false);
    });

    view! {
        <nav class="sidebar" aria-label="Conversations">
            <div class="sidebar-head">
                <span class="brand">"Quire"</span>
                <div class="sidebar-head-actions">
                    <button
                        type="button"
                        class="sidebar-toggle"
                        aria-controls="sidebar-body"
                        aria-expanded=move || unfolded.get().to_string()
                        on:click=move |_| unfolded.update(|u| *u = !*u)
                    >
                        "Conversations"
                    </button>
                    <ThemeToggle/>
                </div>
            </div>
            <div id="sidebar-body" class="sidebar-body" class:unfolded=move || unfolded.get()>
            <button type="button" id=NEW_CHAT_ID class="primary new-chat" on:click=new_chat>"New chat"</button>
            <SearchBox/>
            <div class="list-head">
                <h2 class="list-title" id="thread-list-title">{list_title}</h2>
                <button
                    type="button"
                    class="toggle"
                    aria-pressed=move || show_archived.get().to_string()
                    on:click=move |_| {
                        menu.set(None);
                        threads.set(Vec::new());
                        next.set(None);
                        show_archived.update(|a| *a = !*a);
                    }
                >
                    "Show archived"
                </button>
            </div>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <div class="thread-scroll" node_ref=scroller on:scroll=move |_| load_more()>
                <ul class="thread-list" aria-labelledby="thread-list-title">
                    <For
                        each=move || threads.get()
                        key=|t| (t.id, t.title.clone(), t.tags.clone(), t.pinned, t.archived)
                        let:thread
                    >
                        {
                            let href = format!("/c/{}", thread.id);
                            let current = Signal::derive(move || location.pathname.get() == href);
                            view! { <ThreadItem thread current menu on_action/> }
                        }
                    </For>
                </ul>
                {empty}
                <Show when=move || loading.get()>
                    <p class="list-status" role="status">"Loading…"</p>
                </Show>
            </div>
            <p class="visually-hidden" role="status">{move || announcement.get()}</p>
            <div class="account">
                <span class="account-email" data-testid="account-email">
                    {move || user.0.get().map(|u| u.email).unwrap_or_default()}
                </span>
                <button type="button" class="sign-out" on:click=sign_out>"Sign out"</button>
            </div>
            </div>
            {dialog}
        </nav>
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
