//! `quire`: starts the server with the configuration from flags and environment.

use std::process::ExitCode;

use clap::Parser;
use quire::{
    config::{AdminCommand, Command, Config},
    serve, AppState,
};
use tokio::net::TcpListener;

fn main() -> anyhow::Result<ExitCode> {
    let config = Config::parse();
    match config.command.clone() {
        // The extraction child stays single-threaded and small: no runtime, no logging.
        Some(Command::Extract { .. }) => Ok(quire::attachments::extract::child_main()),
        Some(Command::RunLimited { memory_mb, command }) => Ok(quire::mcp_tools::run_limited(memory_mb, &command)),
        Some(Command::Probe { path }) => Ok(probe(config.addr, &path)),
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
        Some(Command::Admin { command: AdminCommand::Create { email, display_name, password_file } }) => {
            let password = admin_password(password_file.as_deref())?;
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async {
                let url = config.database_url();
                quire::config::private::secure(&config.data_dir, quire::config::private::sqlite_file(&url).as_deref())?;
                let store =
                    store::connect_with(&url, store::Settings { limit_connections: 1, ..config.store() }).await?;
                match quire::auth::setup::create_admin(&store, &email, password, display_name.as_deref()).await {
                    Ok(user) => {
                        println!("administrator {} created ({})", user.email, user.id);
                        Ok(ExitCode::SUCCESS)
                    }
                    Err(e) => {
                        eprintln!("no administrator created: {e}");
                        Ok(ExitCode::FAILURE)
                    }
                }
            })
        }
        None => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let served = runtime.block_on(run(config));
            // A task still running past the shutdown deadline (a request stuck on its body, a blocking job) must
            // not hold the process: waited for briefly, then left behind.
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            served?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn run(config: Config) -> anyhow::Result<()> {
    quire::ops::logs::init(config.log_format);
    let (addr, metrics_addr) = (config.addr, config.metrics_addr);
    let state = AppState::from_config(config).await?;
    let listener = TcpListener::bind(addr).await?;
    if let Some(metrics_addr) = metrics_addr {
        let metrics = TcpListener::bind(metrics_addr).await?;
        tracing::info!(addr = %metrics.local_addr()?, "metrics at /metrics");
        let router = quire::ops::metrics::router(state.clone());
        tokio::spawn(quire::http::connections::serve(metrics, router, Default::default(), std::future::pending()));
    }
    // The tokenizer and its table of ranks take a moment to build: done now, beside serving, rather than by the
    // first conversation.
    tokio::task::spawn_blocking(llm::tokens::warm_up);
    let base = match &state.config.public_url {
        Some(url) => url.origin().to_string(),
        None => format!("http://{}", reachable(listener.local_addr()?)),
    };
    quire::auth::setup::announce(&state.store, state.config.signup, &base).await?;
    tracing::info!(addr = %listener.local_addr()?, store = state.store.backend(), default_model = state.chat.models().default_model(), "Quire is listening");
    serve(listener, state, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

/// The password for `quire admin create`: the first line of `file`, else `QUIRE_ADMIN_PASSWORD`, else the first
/// line of standard input (never an argument, which other users of the machine could see).
fn admin_password(file: Option<&std::path::Path>) -> anyhow::Result<String> {
    let text = match file {
        Some(file) => std::fs::read_to_string(file)?,
        None => match std::env::var(quire::config::ADMIN_PASSWORD_ENV) {
            Ok(password) => password,
            Err(_) => {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line)?;
                line
            }
        },
    };
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// `addr` as a client reaches it: one listening on every interface is reached on the loopback one.
fn reachable(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => std::net::Ipv4Addr::LOCALHOST.into(),
        ip if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    std::net::SocketAddr::new(host, addr.port())
}

/// `quire probe`: 0 when `GET <path>` on the configured address answers 2xx within a few seconds, 1 otherwise.
fn probe(addr: std::net::SocketAddr, path: &str) -> ExitCode {
    let url = format!("http://{}{path}", reachable(addr));
    let asked = tokio::runtime::Builder::new_current_thread().enable_all().build().map(|runtime| {
        runtime.block_on(async {
            let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(5)).build()?;
            client.get(&url).send().await?.error_for_status()
        })
    });
    match asked {
        Ok(Ok(_)) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("{url}: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
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
