//! The Quire server: HTTP API, server-side rendering of the Leptos app, storage and the chat engine.

// Rendering the chat page on the server nests deep view types (Leptos' typed views); the default limit of
// 128 is just too small for it in test builds.
#![recursion_limit = "256"]

pub mod artifacts;
pub mod attachments;
pub mod auth;
pub mod chat;
pub mod config;
pub mod download;
pub mod heavy;
pub mod history;
pub mod http;
pub mod mcp_tools;
pub mod ops;
pub mod privacy;

use std::{future::Future, sync::Arc, time::Duration};

use crate::attachments::Extractor;
use crate::auth::{sessions::LiveSessions, JwtKeys, JwtSecret};
use crate::config::Config;
use crate::heavy::HeavyQueue;
use crate::http::rate_limit::RateLimits;
use app::{shell, App};
use axum::{
    extract::{DefaultBodyLimit, FromRef},
    Router,
};
use leptos::prelude::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use llm::Provider;
use store::DynStore;
use tokio::net::TcpListener;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: DynStore,
    /// Starts, follows and stops chat turns.
    pub chat: chat::Engine,
    pub config: Arc<Config>,
    pub leptos: LeptosOptions,
    /// Signs and checks session tokens.
    pub jwt: Arc<JwtKeys>,
    /// Rate limits, shared with the other instances where the store keeps them.
    pub limits: Arc<RateLimits>,
    /// The bounded queue for extraction, export rendering and imports.
    pub heavy: Arc<HeavyQueue>,
    /// Reads uploaded files' text (PDF in a confined child process).
    pub extractor: Extractor,
    /// Sessions with open event streams here, which end with their session.
    pub sessions: Arc<LiveSessions>,
    /// Members' streams on conversations of their projects here, which end when they lose their reach.
    pub reach: Arc<auth::reach::LiveReach>,
    /// Answer streams open per person here, up to `QUIRE_USER_OPEN_STREAMS`.
    pub streams: Arc<http::streams::OpenStreams>,
    /// The site's static files and which are named by their content's hash.
    pub site: http::assets::Site,
    /// The measures served at `QUIRE_METRICS_ADDR`.
    pub metrics: Arc<ops::metrics::Metrics>,
    /// The OpenID Connect provider people sign in through, when one is configured.
    pub oidc: Option<Arc<auth::oidc::Oidc>>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

impl AppState {
    /// Opens the store named by the configuration and builds the provider.
    pub async fn from_config(mut config: Config) -> anyhow::Result<Self> {
        let url = config.database_url();
        config::private::secure(&config.data_dir, config::private::sqlite_file(&url).as_deref())?;
        let store = store::connect_with(&url, config.store()).await?;
        let settings = config.llm()?;
        if let Some(file) = &settings.models_file {
            let servers = mcp_tools::config::parse(&file.mcp_servers, &|var| std::env::var(var).ok())
                .map_err(|e| anyhow::anyhow!("QUIRE_CONFIG: {e}"))?;
            config.mcp_servers.extend(servers);
        }
        let models = llm::registry(&settings)?;
        Self::with_models(config, store, models).await
    }

    /// Builds the state around an opened store and a provider (tests pass fakes here).
    pub async fn new(config: Config, store: DynStore, provider: Arc<dyn Provider>) -> anyhow::Result<Self> {
        Self::with_models(config, store, llm::Registry::single(provider)).await
    }

    /// Builds the state around an opened store and the models on offer.
    pub async fn with_models(config: Config, store: DynStore, models: llm::Registry) -> anyhow::Result<Self> {
        let metrics = Arc::new(ops::metrics::Metrics::new());
        let measured = metrics.clone();
        let models = Arc::new(models.with_layer(Arc::new(move |provider: Arc<dyn Provider>| -> Arc<dyn Provider> {
            Arc::new(ops::metrics::Metered::new(provider, measured.clone()))
        })));
        let oidc = auth::oidc::Oidc::from_config(&config)?.map(Arc::new);
        let secret = JwtSecret::load(config.jwt_secret.as_ref(), &config.data_dir)?;
        let jwt = Arc::new(JwtKeys::new(&secret, chrono::Duration::hours(i64::from(config.session_hours.max(1)))));
        let limits = RateLimits::new(&config.limits, store.shared_limits());
        let heavy = HeavyQueue::new(config.heavy_workers, config.heavy_queue);
        let extractor = match &config.extract_program {
            Some(program) => Extractor::new(program),
            None => Extractor::current()?,
        };
        // cargo-leptos names the site's files by their content's hash when it is told to, and leaves the list of
        // hashes beside the binary, where the page renderer reads it.
        let hash_file = std::env::current_exe()?.with_file_name("hash.txt");
        let hashed = hash_file.is_file();
        let leptos = LeptosOptions::builder()
            .output_name("quire")
            .site_root(config.site_root.clone())
            .site_pkg_dir("pkg")
            .site_addr(config.addr)
            .reload_port(u32::from(config.reload_port))
            .hash_files(hashed)
            .build();
        let site = http::assets::Site::new(config.site_root.clone(), hashed.then_some(hash_file.as_path()));
        let mcp = if config.mcp_servers.is_empty() {
            mcp_tools::McpHub::none()
        } else {
            // Remote MCP servers are reached through rmcp's own HTTP client, whose TLS takes the process's provider.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let program = match &config.extract_program {
                Some(program) => program.clone(),
                None => std::env::current_exe()?,
            };
            let observed = metrics.clone();
            let observer: mcp_tools::Observer =
                Arc::new(move |server: &str, tool: &str, outcome, took| observed.mcp_call(server, tool, outcome, took));
            mcp_tools::McpHub::start(config.mcp_servers.clone(), program, Some(observer))
        };
        let chat = chat::Engine::new(store.clone(), models, chat::Limits::from_config(&config), mcp);
        let sessions = Arc::new(LiveSessions::default());
        tokio::spawn(auth::sessions::follow_ended(sessions.clone(), store.clone()));
        let reach = Arc::new(auth::reach::LiveReach::default());
        tokio::spawn(auth::reach::follow_reach(reach.clone(), store.clone()));
        tokio::spawn(auth::throttle::forget_old_failures(store.clone()));
        let streams = http::streams::OpenStreams::new(config.user_open_streams);
        Ok(Self {
            store,
            chat,
            config: Arc::new(config),
            leptos,
            jwt,
            limits,
            heavy,
            extractor,
            sessions,
            reach,
            streams,
            site,
            metrics,
            oidc,
        })
    }
}

/// The whole application: API routes, then the server-rendered pages, then static files.
pub fn app(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let leptos = state.leptos.clone();
    let sign_in = http::sso::sign_in_methods(&state);
    let mcp_servers = app::McpServersConfigured(!state.chat.mcp().is_empty());
    let router = Router::new()
        .merge(http::api_router())
        .merge(http::mcp::router(state.clone()))
        // The pages' plain form posts, on the pages' own paths (their `GET` is the page).
        .merge(http::forms::router())
        .merge(
            Router::new()
                .leptos_routes_with_context(
                    &state,
                    routes,
                    move || {
                        http::headers::provide_nonce();
                        leptos::prelude::provide_context(sign_in.clone());
                        leptos::prelude::provide_context(mcp_servers);
                    },
                    move || shell(leptos.clone()),
                )
                .route_layer(axum::middleware::from_fn_with_state(state.clone(), http::pages::signed_in_pages)),
        )
        .fallback(http::assets::file_or_page)
        // Extractors refuse larger bodies with the API's own 413 body (uploads and imports set limits of their own).
        .layer(DefaultBodyLimit::max(http::MAX_BODY_BYTES))
        // Merged after the global limit so the upload and import routes keep their own.
        .merge(http::large_body_router(&state.config))
        .layer(axum::middleware::from_fn_with_state(state.clone(), http::access::read_only_writes))
        .layer(axum::middleware::from_fn_with_state(state.clone(), http::sso::without_passwords))
        .layer(axum::middleware::from_fn_with_state(state.clone(), http::csrf::refuse_cross_site))
        .layer(axum::middleware::from_fn_with_state(state.clone(), http::shares::shared_pages));
    let https_only = state.config.public_url.as_ref().is_some_and(config::PublicUrl::is_https);
    // Inside the router, so each request is counted under the route it matched.
    let router = router
        .layer(axum::middleware::from_fn(http::error::with_request_id))
        .layer(axum::middleware::from_fn_with_state(state.metrics.clone(), ops::metrics::track));
    let live_reload =
        state.config.live_reload_port().map(|port| http::headers::LiveReload::new(port, state.config.addr));
    let router = http::headers::apply(router, https_only, live_reload);
    let router = router.layer(http::assets::pages_private()).layer(http::CompressAnswers);
    // Every request gets an id (kept from a proxy in front when it sent one), logged with it and sent back in
    // `x-request-id`: an error's message names it, so a report can be matched with the log.
    router
        .layer(tower_http::request_id::PropagateRequestIdLayer::x_request_id())
        .layer(tower_http::trace::TraceLayer::new_for_http().make_span_with(ops::logs::request_span))
        .layer(tower_http::request_id::SetRequestIdLayer::x_request_id(tower_http::request_id::MakeRequestUuid))
        .with_state(state)
}

/// Serves until `shutdown` resolves, then stops accepting and lets open requests finish; running turns are asked
/// to stop, and save their answers so far. All of that gets `QUIRE_SHUTDOWN_SECONDS`: whatever is still open
/// then (a stuck upload, say) is left behind and this returns.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let chat = state.chat.clone();
    let deadline = Duration::from_secs(state.config.shutdown_seconds);
    let timeouts = http::connections::Timeouts {
        head: Duration::from_secs(state.config.header_timeout_seconds),
        ..Default::default()
    };
    let router = app(state);
    let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
    let stop_chat = chat.clone();
    let server = http::connections::serve(listener, router, timeouts, async move {
        shutdown.await;
        tracing::info!("stopping: no new connections; running turns save their answers");
        stop_chat.stop_all();
        let _ = stopping.send(());
    });
    tokio::pin!(server);
    tokio::select! {
        // The server ends gracefully only after `stopped` is sent: checked first, that branch sees every stop.
        biased;
        _ = stopped => {
            ops::within_deadline(deadline, async {
                let _ = tokio::join!(server, chat.turns_saved());
            })
            .await;
        }
        () = &mut server => {}
    }
    Ok(())
}
