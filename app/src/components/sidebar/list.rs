//! The list of conversations: the first page again whenever something changed, more pages as it is scrolled,
//! the archive behind a toggle, and what each conversation's menu does.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_location, use_navigate};
use uuid::Uuid;

use super::dialogs::{parse_tags, DialogHandlers, Pending};
use super::NEW_CHAT_ID;
use crate::api::{client, Thread, UpdateThread};
use crate::components::thread_item::{focus_by_id, options_button_id, ThreadAction, ThreadItem};
use crate::state::{ChatState, ThreadsChanged};

/// How close to the end of the list (in pixels) the next page is fetched.
const LOAD_AHEAD_PX: i32 = 240;

/// The conversations shown and what is being done to them. `Copy`: handlers and the sidebar share it.
#[derive(Clone, Copy)]
pub(super) struct Listing {
    threads: RwSignal<Vec<Thread>>,
    next: RwSignal<Option<String>>,
    loading: RwSignal<bool>,
    error: RwSignal<Option<String>>,
    show_archived: RwSignal<bool>,
    /// The tag the list is filtered by, if any.
    pub(super) tag: RwSignal<Option<String>>,
    /// Bumped at each fresh listing, so pages of an older walk that arrive late are dropped.
    walk: StoredValue<u64>,
    /// The conversation whose menu is open.
    menu: RwSignal<Option<Uuid>>,
    pub(super) pending: RwSignal<Option<Pending>>,
    pub(super) dialog_error: RwSignal<Option<String>>,
    pub(super) saving: RwSignal<bool>,
    /// Announced to screen readers after an action that changes the list.
    announcement: RwSignal<String>,
    /// Where focus goes once the list shows the result of an action.
    refocus: StoredValue<Option<Uuid>>,
    chat: ChatState,
    changed: ThreadsChanged,
}

impl Listing {
    /// Call in a component: it takes the chat state and the list's change signal from the context.
    pub(super) fn new() -> Self {
        Self {
            threads: RwSignal::new(Vec::new()),
            next: RwSignal::new(None),
            loading: RwSignal::new(false),
            error: RwSignal::new(None),
            show_archived: RwSignal::new(false),
            tag: RwSignal::new(None),
            walk: StoredValue::new(0),
            menu: RwSignal::new(None),
            pending: RwSignal::new(None),
            dialog_error: RwSignal::new(None),
            saving: RwSignal::new(false),
            announcement: RwSignal::new(String::new()),
            refocus: StoredValue::new(None),
            chat: expect_context::<ChatState>(),
            changed: expect_context::<ThreadsChanged>(),
        }
    }

    /// Empties the list (after signing out).
    pub(super) fn forget(&self) {
        self.threads.set(Vec::new());
        self.next.set(None);
    }

    /// Puts focus back where an action left it: on the conversation's menu button, or on "New chat" when the
    /// conversation left the list.
    fn restore_focus(&self) {
        let Some(id) = self.refocus.get_value() else { return };
        self.refocus.set_value(None);
        request_animation_frame(move || {
            let button = options_button_id(id);
            let present =
                web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id(&button)).is_some();
            focus_by_id(if present { &button } else { NEW_CHAT_ID });
        });
    }

    /// Lists the first page (of the archive when it is shown; of one tag's conversations when filtered).
    fn first_page(self, archived: bool, tag: Option<String>) {
        self.walk.update_value(|walk| *walk += 1);
        self.fetch(archived, tag, None);
    }

    /// Fetches the next page when the end of the list is near.
    fn load_more(self, near_end: bool) {
        if !near_end || self.loading.try_get_untracked().is_none_or(|loading| loading) {
            return;
        }
        let Some(cursor) = self.next.try_get_untracked().flatten() else { return };
        self.fetch(self.show_archived.get_untracked(), self.tag.get_untracked(), Some(cursor));
    }

    /// Fetches the page at `cursor` of the current walk (the first page without one) and shows it.
    fn fetch(self, archived: bool, tag: Option<String>, cursor: Option<String>) {
        let this_walk = self.walk.get_value();
        self.loading.set(true);
        spawn_local(async move {
            let result = client::list_threads(archived, tag.as_deref(), cursor.as_deref()).await;
            // Another walk began meanwhile, or the list is gone (signed out, or a page without the sidebar).
            if self.walk.try_get_value() != Some(this_walk) {
                return;
            }
            self.loading.set(false);
            let first = cursor.is_none();
            match result {
                Ok(page) => {
                    self.threads.update(|list| {
                        if first {
                            list.clear();
                        }
                        for thread in page.threads {
                            if !list.iter().any(|t| t.id == thread.id) {
                                list.push(thread);
                            }
                        }
                    });
                    self.next.set(page.next_cursor);
                    if first {
                        self.error.set(None);
                    }
                }
                Err(e) => self.error.set(Some(e.message)),
            }
            if first {
                self.restore_focus();
            }
        });
    }

    /// Saves a change to a conversation (see [`save_change`]); `done` is announced when it is saved.
    fn save(self, id: Uuid, change: UpdateThread, done: &'static str) {
        self.saving.set(true);
        spawn_local(save_change(self, id, change, done));
    }

    /// A conversation's menu: pin and archive act at once; rename, tags and delete open a dialog first.
    fn act(self, thread: Thread, action: ThreadAction) {
        self.dialog_error.set(None);
        match action {
            ThreadAction::Rename => self.pending.set(Some(Pending::Rename(thread))),
            ThreadAction::Tags => self.pending.set(Some(Pending::Tags(thread))),
            ThreadAction::Delete => self.pending.set(Some(Pending::Delete(thread))),
            ThreadAction::Move => self.pending.set(Some(Pending::Move(thread))),
            ThreadAction::Pin => {
                let change = UpdateThread { pinned: Some(!thread.pinned), ..Default::default() };
                let done = if thread.pinned { "Conversation unpinned." } else { "Conversation pinned." };
                self.save(thread.id, change, done);
            }
            ThreadAction::Archive => {
                let change = UpdateThread { archived: Some(!thread.archived), ..Default::default() };
                let done =
                    if thread.archived { "Conversation moved out of the archive." } else { "Conversation archived." };
                self.save(thread.id, change, done);
            }
        }
    }

    /// What the dialogs do. Deleting the conversation on screen goes back to a new chat.
    pub(super) fn dialog_handlers(self) -> DialogHandlers {
        let navigate = use_navigate();
        let location = use_location();
        let changed = self.changed;
        let pending_thread = move || self.pending.get_untracked().map(|p| p.thread().id);
        let cancel = Callback::new(move |()| {
            if let Some(id) = pending_thread() {
                self.pending.set(None);
                self.dialog_error.set(None);
                focus_by_id(&options_button_id(id));
            }
        });
        let rename = Callback::new(move |title: String| {
            if let Some(id) = pending_thread() {
                self.save(id, UpdateThread { title: Some(title), ..Default::default() }, "Conversation renamed.");
            }
        });
        let retag = Callback::new(move |text: String| {
            if let Some(id) = pending_thread() {
                self.save(id, UpdateThread { tags: Some(parse_tags(&text)), ..Default::default() }, "Tags saved.");
            }
        });
        let move_to = Callback::new(move |project: Option<Uuid>| {
            if let Some(id) = pending_thread() {
                let change = UpdateThread { project_id: Some(project), ..Default::default() };
                let done = if project.is_some() {
                    "Conversation moved to the project."
                } else {
                    "Conversation taken out of its project."
                };
                self.save(id, change, done);
            }
        });
        let delete = Callback::new(move |()| {
            let Some(id) = pending_thread() else { return };
            let navigate = navigate.clone();
            self.saving.set(true);
            spawn_local(async move {
                let result = client::delete_thread(id).await;
                self.saving.set(false);
                match result {
                    Ok(()) => {
                        self.pending.set(None);
                        self.announcement.set("Conversation deleted.".to_string());
                        self.threads.update(|list| list.retain(|t| t.id != id));
                        if location.pathname.get_untracked() == format!("/c/{id}") {
                            navigate("/", Default::default());
                        }
                        self.refocus.set_value(Some(id));
                        changed.notify();
                    }
                    Err(e) => self.dialog_error.set(Some(e.message)),
                }
            });
        });
        DialogHandlers { rename, retag, move_to, delete, cancel }
    }
}

/// Saves a change to the conversation `id` from its menu or a dialog, then announces `done`; a refusal is shown in
/// the dialog, or above the list. Loaded at a first change (split out of the main wasm bundle in release builds).
#[lazy]
async fn save_change(listing: Listing, id: Uuid, change: UpdateThread, done: &'static str) {
    let (chat, changed) = (listing.chat, listing.changed);
    let result = client::update_thread(id, &change).await;
    listing.saving.set(false);
    match result {
        Ok(thread) => {
            chat.renamed(&thread);
            listing.pending.set(None);
            listing.dialog_error.set(None);
            listing.announcement.set(done.to_string());
            listing.refocus.set_value(Some(id));
            changed.notify();
        }
        Err(e) if listing.pending.get_untracked().is_some() => listing.dialog_error.set(Some(e.message)),
        Err(e) => listing.error.set(Some(e.message)),
    }
}

/// The list's heading with the archive toggle, the conversations, and the list's status lines.
#[component]
pub(super) fn ThreadList(listing: Listing) -> impl IntoView {
    let changed = listing.changed;
    let location = use_location();
    let Listing { threads, next, loading, error, show_archived, tag, menu, announcement, .. } = listing;
    let scroller = NodeRef::<html::Div>::new();

    // The first page, again whenever a conversation was created or changed, the archive toggled or the tag
    // filter changed.
    Effect::new(move |_| {
        changed.0.track();
        listing.first_page(show_archived.get(), tag.get());
    });
    // Asked a frame later, when the list may be gone (signed out): then nothing is near.
    let near_end = move || {
        scroller
            .try_get_untracked()
            .flatten()
            .is_some_and(|el| el.scroll_height() - el.scroll_top() - el.client_height() < LOAD_AHEAD_PX)
    };
    // After each page is drawn: if the end of the list is still in view (a tall window), fetch the next.
    Effect::new(move |_| {
        threads.track();
        next.track();
        request_animation_frame(move || listing.load_more(near_end()));
    });
    let on_action = Callback::new(move |(thread, action): (Thread, ThreadAction)| listing.act(thread, action));
    let on_tag = Callback::new(move |t: String| {
        menu.set(None);
        tag.set(Some(t));
    });

    let list_title = move || if show_archived.get() { "Archived" } else { "Conversations" };
    let empty = move || {
        (!loading.get() && threads.with(Vec::is_empty) && error.with(Option::is_none)).then(|| {
            let text = match (show_archived.get(), tag.with(Option::is_some)) {
                (_, true) => "No conversations with this tag.",
                (true, false) => "Nothing archived.",
                (false, false) => "No conversations yet.",
            };
            view! { <p class="list-status">{text}</p> }
        })
    };

    view! {
        <div class="list-head">
            <h2 class="list-title" id="thread-list-title">{list_title}</h2>
            <button
                type="button"
                class="toggle"
                aria-pressed=move || show_archived.get().to_string()
                on:click=move |_| {
                    menu.set(None);
                    listing.forget();
                    show_archived.update(|a| *a = !*a);
                }
            >
                "Show archived"
            </button>
        </div>
        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        <div class="thread-scroll" node_ref=scroller on:scroll=move |_| listing.load_more(near_end())>
            <ul class="thread-list" aria-labelledby="thread-list-title">
                <For
                    each=move || threads.get()
                    key=|t| (t.id, t.title.clone(), t.tags.clone(), t.pinned, t.archived)
                    let:thread
                >
                    {
                        let href = format!("/c/{}", thread.id);
                        let current = Signal::derive(move || location.pathname.get() == href);
                        view! { <ThreadItem thread current menu on_action on_tag/> }
                    }
                </For>
            </ul>
            {empty}
            <Show when=move || loading.get()>
                <p class="list-status" role="status">"Loading…"</p>
            </Show>
        </div>
        <p class="visually-hidden" role="status">{move || announcement.get()}</p>
    }
    .into_any()
}
