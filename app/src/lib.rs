//! Quire's shared crate: the wire types (`api`) used by server and browser, and the Leptos components.

pub mod api;
pub mod components;
pub mod markdown;
pub mod routes;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path,
};

use crate::components::sidebar::Sidebar;
use crate::routes::chat::{ChatPage, ChatState};

/// The HTML document the server renders around the app.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// Bumped whenever the list of conversations may have changed, so the sidebar reloads it.
#[derive(Clone, Copy)]
pub struct ThreadsChanged(pub RwSignal<u64>);

impl ThreadsChanged {
    pub fn notify(&self) {
        self.0.update(|n| *n += 1);
    }
}

/// The application: sidebar of conversations and the chat view.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(ThreadsChanged(RwSignal::new(0)));
    provide_context(ChatState::new());
    // Effects run only in the browser, once the page is hydrated: mark it so tests and styles can tell.
    Effect::new(|_| {
        if let Some(body) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body()) {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });

    view! {
        <Stylesheet id="leptos" href="/pkg/quire.css"/>
        <Title text="Quire"/>
        <Router>
            <div class="layout">
                <Sidebar/>
                <main class="main">
                    <Routes fallback=|| view! { <p class="empty">"Page not found."</p> }>
                        <Route path=path!("/") view=ChatPage/>
                        <Route path=path!("/c/:id") view=ChatPage/>
                    </Routes>
                </main>
            </div>
        </Router>
    }
}
