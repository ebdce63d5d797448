//! `quire`: starts the server with the configuration from flags and environment.

use std::process::ExitCode;

use clap::Parser;
use quire::{
    config::{Command, Config},
    serve, AppState,
};
use tokio::net::TcpListener;
use tracing_subscriber::EnvFilter;

fn main() -> anyhow::Result<ExitCode> {
    let config = Config::parse();
    match config.command {
        // The extraction child stays single-threaded and small: no runtime, no logging.
        Some(Command::Extract { .. }) => Ok(quire::attachments::extract::child_main()),
        Some(Command::Precompress { dir }) => {
            let done = quire::http::assets::precompress(&dir)?;
            println!(
                "precompressed {} files in {} ({} bytes: {} with brotli, {} with gzip); {} left as they were",
                done.files,
                dir.display(),
                done.original_bytes,
                done.brotli_bytes,
                done.gzip_bytes,
                done.skipped
            );
            Ok(ExitCode::SUCCESS)
        }
        None => {
            tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(run(config))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn run(config: Config) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info")),
        )
        .init();
    let addr = config.addr;
    let state = AppState::from_config(config).await?;
    let listener = TcpListener::bind(addr).await?;
    // The tokenizer and its table of ranks take a moment to build: done now, beside serving, rather than by the
    // first conversation.
    tokio::task::spawn_blocking(quire::tokens::warm_up);
    tracing::info!(addr = %listener.local_addr()?, store = state.store.backend(), provider = state.chat.provider().name(), "Quire is listening");
    serve(listener, state, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
