//! The list of conversations, newest first, with "New chat".

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_location, use_navigate};

use crate::api::{client, Thread};
use crate::components::theme_toggle::ThemeToggle;
use crate::routes::chat::ChatState;
use crate::{CurrentUser, ThreadsChanged};

/// The sidebar: brand, "New chat", the conversations.
#[component]
pub fn Sidebar() -> impl IntoView {
    let changed = expect_context::<ThreadsChanged>();
    let threads = RwSignal::new(Vec::<Thread>::new());
    let error = RwSignal::new(None::<String>);

    Effect::new(move |_| {
        changed.0.track();
        spawn_local(async move {
            match client::list_threads().await {
                Ok(list) => {
                    threads.set(list.threads);
                    error.set(None);
                }
                Err(e) => error.set(Some(e.message)),
            }
        });
    });

    let navigate = use_navigate();
    let new_chat = {
        let navigate = navigate.clone();
        move |_| navigate("/", Default::default())
    };
    let user = expect_context::<CurrentUser>();
    let chat = expect_context::<ChatState>();
    let sign_out = move |_| {
        let navigate = navigate.clone();
        spawn_local(async move {
            // Whatever the server answers, this browser forgets the account and its conversations.
            let _ = client::logout().await;
            user.0.set(None);
            chat.clear();
            threads.set(Vec::new());
            navigate("/signin", Default::default());
        });
    };
    let location = use_location();

    view! {
        <nav class="sidebar" aria-label="Conversations">
            <div class="sidebar-head">
                <span class="brand">"Quire"</span>
                <ThemeToggle/>
            </div>
            <button type="button" class="primary new-chat" on:click=new_chat>"New chat"</button>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <ul class="thread-list">
                <For each=move || threads.get() key=|t| (t.id, t.title.clone(), t.updated_at) let:thread>
                    {
                        let href = format!("/c/{}", thread.id);
                        let current = {
                            let href = href.clone();
                            move || location.pathname.get() == href
                        };
                        view! {
                            <li data-testid="thread-item">
                                <a href=href.clone() class="thread-link" aria-current=move || current().then_some("page")>
                                    <span class="thread-title">{thread.title.clone()}</span>
                                </a>
                            </li>
                        }
                    }
                </For>
            </ul>
            <div class="account">
                <span class="account-email" data-testid="account-email">
                    {move || user.0.get().map(|u| u.email).unwrap_or_default()}
                </span>
                <button type="button" class="sign-out" on:click=sign_out>"Sign out"</button>
            </div>
        </nav>
    }
}
