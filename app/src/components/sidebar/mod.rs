//! The sidebar: "New chat", the search box, the tag filter ([`tags`]), the person's [`projects`], the
//! conversations ([`list`], with each one's menu and its [`dialogs`]), and the account.

mod dialogs;
mod list;
mod projects;
mod tags;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_location, use_navigate};

use crate::api::client;
use crate::components::search_box::SearchBox;
use crate::components::theme_toggle::ThemeToggle;
use crate::state::{ChatState, CurrentUser};
use dialogs::ThreadDialog;
use list::{Listing, ThreadList};
use projects::ProjectList;
use tags::TagFilter;

/// The id of the "New chat" button, where focus goes when a conversation leaves the list.
const NEW_CHAT_ID: &str = "new-chat";

/// The sidebar: brand, "New chat", search, the conversations, the account.
#[component]
pub fn Sidebar() -> impl IntoView {
    let user = expect_context::<CurrentUser>();
    let chat = expect_context::<ChatState>();
    let navigate = use_navigate();
    let location = use_location();
    let listing = Listing::new();
    let handlers = listing.dialog_handlers();

    let new_chat = {
        let navigate = navigate.clone();
        move |_| navigate("/", Default::default())
    };
    let sign_out = move |_| {
        let navigate = navigate.clone();
        spawn_local(async move {
            // Whatever the server answers, this browser forgets the account and its conversations.
            let provider = client::logout().await.ok().flatten();
            user.0.set(None);
            chat.clear();
            listing.forget();
            listing.tag.set(None);
            // Signed in through the organisation's provider: its session ends there too, which comes back to
            // the sign-in page.
            match provider.and_then(|url| Some((url, web_sys::window()?))) {
                Some((url, window)) if window.location().set_href(&url).is_ok() => {}
                _ => navigate("/signin", Default::default()),
            }
        });
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
                <TagFilter tag=listing.tag/>
                <ProjectList/>
                <ThreadList listing/>
                <div class="account">
                    <span class="account-email" data-testid="account-email">
                        {move || user.0.get().map(|u| u.email).unwrap_or_default()}
                    </span>
                    <button type="button" class="sign-out" on:click=sign_out>"Sign out"</button>
                </div>
            </div>
            <ThreadDialog pending=listing.pending saving=listing.saving error=listing.dialog_error handlers/>
        </nav>
    }
}
