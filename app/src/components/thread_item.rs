//! One conversation in the sidebar: its link with the pin mark and tag chips, and its options menu.

use leptos::ev::{FocusEvent, KeyboardEvent};
use leptos::html;
use leptos::prelude::*;
use uuid::Uuid;
use wasm_bindgen::JsCast;

use crate::api::Thread;

/// What the options menu of a conversation asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadAction {
    Rename,
    Tags,
    /// Pin when unpinned, unpin when pinned.
    Pin,
    /// Archive when active, bring back when archived.
    Archive,
    /// Into a project, or out of one.
    Move,
    Delete,
}

/// The element id of a conversation's options button, so focus can return to it.
pub fn options_button_id(id: Uuid) -> String {
    format!("thread-options-{id}")
}

/// Moves focus to the element with this id, if it is on the page.
pub fn focus_by_id(id: &str) {
    if let Some(el) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    {
        let _ = el.focus();
    }
}

/// A conversation in the list. `menu` holds the conversation whose menu is open (one at a time); a tag chip
/// asks for the list of conversations with that tag (`on_tag`).
#[component]
pub fn ThreadItem(
    thread: Thread,
    #[prop(into)] current: Signal<bool>,
    menu: RwSignal<Option<Uuid>>,
    #[prop(into)] on_action: Callback<(Thread, ThreadAction)>,
    #[prop(into)] on_tag: Callback<String>,
) -> impl IntoView {
    let id = thread.id;
    let href = format!("/c/{id}");
    let button_id = options_button_id(id);
    let open = move || menu.get() == Some(id);
    let item_ref = NodeRef::<html::Li>::new();
    // Tabbing out of the menu closes it (clicks elsewhere land on the backdrop).
    let on_focus_out = move |ev: FocusEvent| {
        if menu.get_untracked() != Some(id) {
            return;
        }
        let Some(item) = item_ref.get_untracked() else { return };
        let next = ev.related_target().and_then(|t| t.dyn_into::<web_sys::Node>().ok());
        if next.is_some_and(|n| !item.contains(Some(&n))) {
            menu.set(None);
        }
    };
    let title = thread.title.clone();
    let pinned = thread.pinned;
    let tags = thread.tags.clone();

    view! {
        <li class="thread-item" class:menu-open=open data-testid="thread-item" node_ref=item_ref on:focusout=on_focus_out>
            <div class="thread-main">
                <a href=href class="thread-link" aria-current=move || current.get().then_some("page")>
                    <span class="thread-title">
                        {pinned.then(|| view! {
                            <svg class="pin-mark" viewBox="0 0 16 16" width="12" height="12" aria-hidden="true" focusable="false">
                                <path fill="currentColor" d="M5 1h6v1.5l-1 1V7l2.5 2.5V11H8.75v4L8 16l-.75-1v-4H3.5V9.5L6 7V3.5l-1-1z"/>
                            </svg>
                            <span class="visually-hidden">"Pinned: "</span>
                        })}
                        {title.clone()}
                    </span>
                </a>
                {(!tags.is_empty()).then(|| view! {
                    <span class="tag-chips">
                        {tags.into_iter().map(|t| {
                            let label = format!("Show conversations tagged {t}");
                            view! {
                                <button type="button" class="chip" title=label.clone() aria-label=label
                                    on:click={
                                        let t = t.clone();
                                        move |_| on_tag.run(t.clone())
                                    }>
                                    {t.clone()}
                                </button>
                            }
                        }).collect_view()}
                    </span>
                })}
            </div>
            <button
                type="button"
                class="icon-button thread-options"
                id=button_id
                aria-label=format!("Conversation options for {title}")
                aria-haspopup="menu"
                aria-expanded=move || open().to_string()
                on:click=move |_| menu.update(|m| *m = if *m == Some(id) { None } else { Some(id) })
            >
                <span aria-hidden="true">"⋯"</span>
            </button>
            <Show when=open>
                {
                    let thread = thread.clone();
                    view! { <Suspense fallback=|| ()>{Suspend::new(thread_menu(thread.clone(), menu, on_action))}</Suspense> }
                }
            </Show>
        </li>
    }
}

/// The open options menu of `thread`: arrow keys, Home and End move through it, Escape or a click beside it
/// closes it. Loaded when a first menu opens (split out of the main wasm bundle in release builds).
#[lazy]
fn thread_menu(thread: Thread, menu: RwSignal<Option<Uuid>>, on_action: Callback<(Thread, ThreadAction)>) -> AnyView {
    let button_id = options_button_id(thread.id);
    let menu_ref = NodeRef::<html::Ul>::new();
    let close_to_button = move || {
        menu.set(None);
        focus_by_id(&button_id);
    };
    // The first entry takes focus when the menu opens, as in any menu (once it is in the page: it is drawn first).
    Effect::new(move |_| {
        if let Some(list) = menu_ref.get() {
            request_animation_frame(move || {
                if let Some(first) = menu_items(&list).first() {
                    let _ = first.focus();
                }
            });
        }
    });
    let on_menu_key = {
        let close_to_button = close_to_button.clone();
        move |ev: KeyboardEvent| {
            let Some(list) = menu_ref.get_untracked() else { return };
            let items = menu_items(&list);
            if items.is_empty() {
                return;
            }
            let active = web_sys::window().and_then(|w| w.document()).and_then(|d| d.active_element());
            let at = items.iter().position(|item| active.as_ref() == Some(item.unchecked_ref::<web_sys::Element>()));
            let last = items.len() - 1;
            let next = match ev.key().as_str() {
                "ArrowDown" => at.map_or(0, |i| if i == last { 0 } else { i + 1 }),
                "ArrowUp" => at.map_or(last, |i| if i == 0 { last } else { i - 1 }),
                "Home" => 0,
                "End" => last,
                "Escape" => {
                    ev.prevent_default();
                    close_to_button();
                    return;
                }
                _ => return,
            };
            ev.prevent_default();
            let _ = items[next].focus();
        }
    };
    let entries = [
        (ThreadAction::Rename, "Rename"),
        (ThreadAction::Tags, "Edit tags"),
        (ThreadAction::Pin, if thread.pinned { "Unpin" } else { "Pin" }),
        (ThreadAction::Archive, if thread.archived { "Unarchive" } else { "Archive" }),
        (ThreadAction::Move, "Move to project…"),
        (ThreadAction::Delete, "Delete"),
    ];
    let menu_label = format!("Options for {}", thread.title);
    view! {
        <div class="menu-backdrop" on:click=move |_| close_to_button()></div>
        <ul class="thread-menu" role="menu" aria-label=menu_label node_ref=menu_ref on:keydown=on_menu_key>
            {entries
                .into_iter()
                .map(|(action, label)| {
                    let thread = thread.clone();
                    view! {
                        <li role="none">
                            <button
                                type="button"
                                role="menuitem"
                                tabindex="-1"
                                class:danger-item=action == ThreadAction::Delete
                                on:click=move |_| {
                                    menu.set(None);
                                    on_action.run((thread.clone(), action));
                                }
                            >
                                {label}
                            </button>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
    .into_any()
}

/// The entries of an open menu, in order.
fn menu_items(list: &web_sys::HtmlElement) -> Vec<web_sys::HtmlElement> {
    let Ok(nodes) = list.query_selector_all("[role=menuitem]") else { return Vec::new() };
    (0..nodes.length())
        .filter_map(|i| nodes.item(i))
        .filter_map(|n| n.dyn_into::<web_sys::HtmlElement>().ok())
        .collect()
}
