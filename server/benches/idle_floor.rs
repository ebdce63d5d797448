//! The memory floor of an idle event stream over HTTP/1.1, without Quire's chat: what a bare hyper HTTP/1.1
//! server, hyper-util's server for both HTTP versions (`auto`), an axum router on `axum::serve`, and the same
//! router on Quire's own accept loop (`quire`, `http/connections.rs`: each connection's version told by its first
//! bytes, then hyper's server for that version alone) keep for each open connection whose response sent one event
//! and then waits. Quire's own number is the relay benchmark's `--idle` (BENCHMARKS.md, "Idle streams"); the
//! difference between the two is what Quire itself keeps per stream.
//!
//! Each level runs in a fresh child process (this binary again, `--serve <level>`, with the same malloc setting as
//! the relay benchmark gives Quire): one warm-up stream, then `N` connections each sending one request and reading
//! its first event; the growth of the child's resident memory (VmRSS) over `N` is the cost of a stream. The median
//! of `--runs` processes is printed.
//!
//!     cargo bench --profile server-release -p server --bench idle_floor -- --streams 1000,5000
//!
//! Under `cargo test --benches` it runs a tiny version (ten streams, one process per server).

#[path = "support/mode.rs"]
mod mode;
#[path = "support/process.rs"]
mod process;

use std::convert::Infallible;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The one event each stream sends before it waits for good.
const FIRST_EVENT: &[u8] = b": open\n\n";

/// The servers measured.
const SERVERS: [&str; 4] = ["hyper", "auto", "axum", "quire"];

#[derive(Parser, Debug)]
struct Args {
    /// Numbers of idle streams to hold open, one measurement each.
    #[arg(long, value_delimiter = ',', default_value = "1000,5000")]
    streams: Vec<usize>,
    /// Fresh processes measured per server and number (the median is printed).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Run as the measured server (`hyper`, `auto`, `axum` or `quire`): the child process.
    #[arg(long, hide = true)]
    serve: Option<String>,
    #[command(flatten)]
    mode: mode::Mode,
}

fn main() -> anyhow::Result<()> {
    let mut args = Args::parse();
    if let Some(kind) = &args.serve {
        return serve(kind);
    }
    if args.mode.smoke() {
        args.streams = vec![10];
        args.runs = 1;
    }
    raise_open_files(args.streams.iter().max().copied().unwrap_or(0) * 2 + 100);

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    println!("{:<8} {:>8} {:>16}", "server", "streams", "KiB per stream");
    for kind in SERVERS {
        for &streams in &args.streams {
            let mut per_stream: Vec<f64> =
                (0..args.runs).map(|_| runtime.block_on(measure(kind, streams))).collect::<anyhow::Result<_>>()?;
            per_stream.sort_by(f64::total_cmp);
            println!("{kind:<8} {streams:>8} {:>16.1}", per_stream[per_stream.len() / 2]);
        }
    }
    Ok(())
}

/// One fresh server process holding `streams` idle streams: its memory growth per stream, in KiB.
async fn measure(kind: &str, streams: usize) -> anyhow::Result<f64> {
    let mut child = tokio::process::Command::new(std::env::current_exe()?)
        .args(["--serve", kind])
        .env("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=131072")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().context("the server's pid")?;
    let mut lines = BufReader::new(child.stdout.take().context("the server's output")?).lines();
    let port: u16 = lines.next_line().await?.context("the server's port")?.trim().parse()?;

    // The first stream builds what every later one reuses (the runtime's threads, the router): not counted.
    let _warm = open_stream(port).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = process::memory_kib(pid).0;
    let mut open = Vec::with_capacity(streams);
    for _ in 0..streams {
        open.push(open_stream(port).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = process::memory_kib(pid).0;
    anyhow::ensure!(before > 0 && after > 0, "the server's memory could not be read");
    child.kill().await?;
    Ok(after.saturating_sub(before) as f64 / streams as f64)
}

/// A connection whose request was answered with the first event (and nothing more).
async fn open_stream(port: u16) -> anyhow::Result<TcpStream> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream.set_nodelay(true)?;
    stream.write_all(b"GET /events HTTP/1.1\r\nhost: localhost\r\naccept: text/event-stream\r\n\r\n").await?;
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !seen.windows(FIRST_EVENT.len()).any(|w| w == FIRST_EVENT) {
        let n = stream.read(&mut buf).await?;
        anyhow::ensure!(n > 0, "the server closed a stream before its first event");
        seen.extend_from_slice(&buf[..n]);
    }
    Ok(stream)
}

fn raise_open_files(want: usize) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    let soft = (want as u64).min(hard).max(limit.current.unwrap_or(0));
    let _ = setrlimit(Resource::Nofile, Rlimit { current: Some(soft), maximum: limit.maximum });
}

/// A response body sending [`FIRST_EVENT`] and then nothing, for good: an event stream at rest.
fn idle_body() -> axum::body::Body {
    let first = futures::stream::once(async { Ok::<_, Infallible>(bytes::Bytes::from_static(FIRST_EVENT)) });
    axum::body::Body::from_stream(futures::StreamExt::chain(first, futures::stream::pending()))
}

/// Every request's answer on the servers without a router (`hyper`, `auto`): an idle event stream.
async fn idle_response(
    _request: axum::http::Request<hyper::body::Incoming>,
) -> Result<axum::http::Response<axum::body::Body>, Infallible> {
    Ok(axum::http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(idle_body())
        .expect("a valid response"))
}

/// The child: a server on a free port (printed first) answering every request with an idle event stream, on the
/// runtime Quire uses (a worker thread per core).
fn serve(kind: &str) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        println!("{}", listener.local_addr()?.port());
        match kind {
            // hyper's HTTP/1.1 connection with nothing above it, or hyper-util's server that tells HTTP/1.1 from
            // HTTP/2 by the connection's first bytes (what axum::serve runs): the same service function on both, so
            // the difference is the cost of serving both versions on one port.
            "hyper" | "auto" => loop {
                let (stream, _) = listener.accept().await?;
                let both_versions = kind == "auto";
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(idle_response);
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = if both_versions {
                        hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                            .serve_connection_with_upgrades(io, service)
                            .await
                    } else {
                        hyper::server::conn::http1::Builder::new()
                            .serve_connection(io, service)
                            .await
                            .map_err(Into::into)
                    };
                });
            },
            // An axum router on axum's own server, or on Quire's.
            "axum" | "quire" => {
                let events = axum::routing::get(|| async {
                    ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], idle_body())
                });
                let router = axum::Router::new().route("/events", events);
                if kind == "axum" {
                    axum::serve(listener, router).await?;
                } else {
                    quire::http::connections::serve(listener, router, Default::default(), std::future::pending()).await;
                }
                Ok(())
            }
            other => anyhow::bail!("no server called {other}"),
        }
    })
}
