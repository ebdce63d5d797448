//! The Quire server: HTTP API, server-side rendering of the Leptos app, storage and the chat engine.

pub mod artifacts;
pub mod attachments;
pub mod chat;
pub mod config;
pub mod http;
pub mod llm;
pub mod store;
pub mod tokens;

use std::{future::Future, sync::Arc};

use app::{shell, App};
use axum::{extract::FromRef, Router};
use leptos::prelude::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tokio::net::TcpListener;
use tower_http::limit::RequestBodyLimitLayer;
use uuid::Uuid;

use crate::chat::hub::TurnHub;
use crate::config::Config;
use crate::llm::Provider;
use crate::store::{DynStore, NewUser, StoreError};

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: DynStore,
    pub provider: Arc<dyn Provider>,
    pub hub: Arc<TurnHub>,
    pub config: Arc<Config>,
    pub leptos: LeptosOptions,
    /// The account every request acts as until sign-in exists.
    pub local_user: Uuid,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

/// E-mail of the account used before sign-in exists.
const LOCAL_EMAIL: &str = "local@quire.invalid";

impl AppState {
    /// Opens the store named by the configuration and builds the provider.
    pub async fn from_config(config: Config) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&config.data_dir)?;
        let store = store::connect(&config.database_url()).await?;
        let provider = llm::from_config(&config)?;
        Self::new(config, store, provider).await
    }

    /// Builds the state around an opened store and a provider (tests pass fakes here).
    pub async fn new(config: Config, store: DynStore, provider: Arc<dyn Provider>) -> anyhow::Result<Self> {
        let local_user = match store.user_by_email(LOCAL_EMAIL).await {
            Ok(user) => user.id,
            Err(StoreError::NotFound) => {
                let new =
                    NewUser { email: LOCAL_EMAIL.into(), password_hash: String::new(), display_name: "You".into() };
                match store.create_user(new).await {
                    Ok(user) => user.id,
                    // Another instance created it meanwhile.
                    Err(StoreError::Conflict(_)) => store.user_by_email(LOCAL_EMAIL).await?.id,
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        };
        let leptos = LeptosOptions::builder()
            .output_name("quire")
            .site_root(config.site_root.clone())
            .site_pkg_dir("pkg")
            .site_addr(config.addr)
            .build();
        Ok(Self { store, provider, hub: Arc::new(TurnHub::default()), config: Arc::new(config), leptos, local_user })
    }
}

/// The whole application: API routes, then the server-rendered pages, then static files.
pub fn app(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let leptos = state.leptos.clone();
    Router::new()
        .merge(http::api_router())
        .leptos_routes(&state, routes, move || shell(leptos.clone()))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(RequestBodyLimitLayer::new(http::MAX_BODY_BYTES))
        // Merged after the global limit so it applies its own (uploads).
        .merge(http::large_body_router())
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

/// Serves until `shutdown` resolves, then lets open requests finish. Running turns are asked to stop so
/// their partial answers are saved.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let hub = state.hub.clone();
    let router = app(state);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown.await;
            hub.cancel_all();
        })
        .await
}
