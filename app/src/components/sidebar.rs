//! The list of conversations, newest first, with "New chat".

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_location, use_navigate};

use crate::api::{client, Thread};
use crate::components::theme_toggle::ThemeToggle;
use crate::ThreadsChanged;

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
    let new_chat = move |_| navigate("/", Default::default());
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
        </nav>
    }
}
