//! Quire's shared crate: the wire types (`api`) used by server and browser, and the Leptos components.

// The chat page's typed views nest deeper than the default limit of 128 allows in test builds.
#![recursion_limit = "256"]

pub mod api;
pub mod components;
pub mod format;
pub mod markdown;
pub mod routes;
pub mod state;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::{provide_meta_context, HashedStylesheet, MetaTags, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    hooks::{use_location, use_navigate},
    lazy_route, path, Lazy, LazyRoute,
};

use crate::components::app_bar::AppBar;
use crate::components::sidebar::Sidebar;
use crate::routes::admin::{AdminPage, ResetPasswordPage};
use crate::routes::auth::{SignInPage, SignUpPage};
use crate::routes::chat::ChatPage;
use crate::routes::projects::ProjectPage;
use crate::routes::search::SearchPage;
use crate::routes::settings::SettingsPage;
use crate::routes::share::SharedPage;
use crate::routes::stats::StatsPage;
pub use crate::state::{ChatState, CurrentUser, ProjectsChanged, ThreadsChanged};

/// The HTML document the server renders around the app.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <AutoReload options=options.clone()/>
                <HashedStylesheet options=options.clone() id="leptos"/>
                <HydrationScripts options/>
                <MetaTags/>
                {sign_in_methods_meta()}
                {mcp_servers_meta()}
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The name of the page head's `<meta>` that tells the browser code how people sign in (the server renders it).
const SIGN_IN_METHODS_META: &str = "quire-sign-in";

/// The `<meta>` naming how people sign in here, from the server's context while it renders the page.
fn sign_in_methods_meta() -> Option<impl IntoView> {
    let methods = use_context::<api::SignInMethods>()?;
    let json = serde_json::to_string(&methods).ok()?;
    Some(view! { <meta name=SIGN_IN_METHODS_META content=json/> })
}

/// How people sign in here: from the server's context while it renders, from the page's head in the browser
/// (so that both render the sign-in page alike); password sign-in alone when neither says.
pub fn sign_in_methods() -> api::SignInMethods {
    use_context::<api::SignInMethods>()
        .or_else(|| {
            let document = web_sys::window()?.document()?;
            let meta = document.query_selector(&format!("meta[name=\"{SIGN_IN_METHODS_META}\"]")).ok()??;
            serde_json::from_str(&meta.get_attribute("content")?).ok()
        })
        .unwrap_or(api::SignInMethods { password: true, sso: None })
}

/// Whether Quire has MCP servers whose tools people turn on and off: provided by the server while it renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpServersConfigured(pub bool);

/// The name of the page head's `<meta>` that tells the browser code Quire has MCP servers (rendered only then).
const MCP_SERVERS_META: &str = "quire-mcp-servers";

fn mcp_servers_meta() -> Option<impl IntoView> {
    use_context::<McpServersConfigured>().filter(|c| c.0)?;
    Some(view! { <meta name=MCP_SERVERS_META content="on"/> })
}

/// Whether Quire has MCP servers (the Tools menu of a conversation shows only then): from the server's context
/// while it renders, from the page's head in the browser. The list itself is read when the menu opens.
pub fn has_mcp_servers() -> bool {
    use_context::<McpServersConfigured>().map(|c| c.0).unwrap_or_else(|| {
        let head = web_sys::window().and_then(|w| w.document());
        head.and_then(|d| d.query_selector(&format!("meta[name=\"{MCP_SERVERS_META}\"]")).ok().flatten()).is_some()
    })
}

/// Whether a path is one of the pages open to people who are not signed in: signing in and up, and shared
/// conversations. The server sends a browser without a session from any other page to `/signin`.
pub fn is_auth_page(path: &str) -> bool {
    matches!(path, "/signin" | "/signup" | "/reset-password") || path.starts_with("/s/")
}

/// The application: sidebar of conversations, the chat view, the search and stats pages; sign-in and sign-up pages.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(ThreadsChanged(RwSignal::new(0)));
    provide_context(ProjectsChanged(RwSignal::new(0)));
    provide_context(ChatState::new());
    provide_context(CurrentUser(RwSignal::new(None)));
    components::theme_toggle::provide_theme();
    markdown::provide_renderer();
    // Effects run only in the browser, once the page is hydrated: mark it so tests and styles can tell.
    Effect::new(|_| {
        if let Some(body) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body()) {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });

    view! {
        <Title text="Quire"/>
        <Router>
            <Layout/>
        </Router>
    }
}

/// The page frame. Outside the sign-in pages it checks the session and sends people without one to `/signin`.
#[component]
fn Layout() -> impl IntoView {
    let location = use_location();
    let navigate = use_navigate();
    let user = expect_context::<CurrentUser>();
    let auth_page = move || is_auth_page(&location.pathname.get());

    Effect::new(move |_| {
        if auth_page() || user.0.with(Option::is_some) {
            return;
        }
        let navigate = navigate.clone();
        spawn_local(async move {
            match api::client::me().await {
                Ok(profile) => user.0.set(Some(profile)),
                Err(e) if e.status == 401 => {
                    navigate("/signin", leptos_router::NavigateOptions { replace: true, ..Default::default() })
                }
                Err(_) => {}
            }
        });
    });

    view! {
        <div class="layout" class:auth-layout=auth_page>
            <Show when=move || !auth_page()>
                <Sidebar/>
            </Show>
            <main class="main">
                <Show when=move || !auth_page()>
                    <AppBar/>
                </Show>
                <Routes fallback=|| view! { <p class="empty">"Page not found."</p> }>
                    <Route path=path!("/") view=ChatPage/>
                    <Route path=path!("/c/:id") view=ChatPage/>
                    <Route path=path!("/search") view={Lazy::<SearchRoute>::new()}/>
                    <Route path=path!("/projects/:id") view={Lazy::<ProjectRoute>::new()}/>
                    <Route path=path!("/stats") view={Lazy::<StatsRoute>::new()}/>
                    <Route path=path!("/settings") view={Lazy::<SettingsRoute>::new()}/>
                    <Route path=path!("/account") view={Lazy::<SettingsRoute>::new()}/>
                    <Route path=path!("/s/:token") view={Lazy::<SharedRoute>::new()}/>
                    <Route path=path!("/admin") view={Lazy::<AdminRoute>::new()}/>
                    <Route path=path!("/reset-password") view=ResetPasswordPage/>
                    <Route path=path!("/signin") view=SignInPage/>
                    <Route path=path!("/signup") view=SignUpPage/>
                </Routes>
            </main>
        </div>
    }
}

// The pages besides the chat and the sign-in pages are split out of the main wasm bundle (`cargo leptos build --split`)
// and loaded on first visit, so the chat page, where people spend their time, becomes interactive sooner. Each
// fetches its own data. The sign-in pages stay in the main module: split out, their code came in two dozen pieces
// (the splitter puts code shared by each set of split modules in a file of its own), each a request of a first visit.

/// Declares, for each page, a route type that carries no data and whose view is split out and loaded on first visit.
macro_rules! lazy_pages {
    ($($route:ident => $page:ident;)*) => {$(
        struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                $route
            }

            fn view(_this: Self) -> AnyView {
                view! { <$page/> }.into_any()
            }
        }
    )*};
}

lazy_pages! {
    SearchRoute => SearchPage;
    ProjectRoute => ProjectPage;
    StatsRoute => StatsPage;
    SettingsRoute => SettingsPage;
    SharedRoute => SharedPage;
    AdminRoute => AdminPage;
}
