//! The memory floor of an idle event stream over HTTP/1.1, without Quire: what a bare hyper HTTP/1.1 server,
//! hyper-util's server for both HTTP versions (`auto`) and an axum router on `axum::serve` (what Quire is built on)
//! keep for each open connection whose response sent one event and then waits. Quire's own number is the relay benchmark's `--idle` (BENCHMARKS.md, "Idle streams"); the difference
//! between the two is what Quire itself keeps per stream.
//!
//! Each level runs in a fresh child process (this binary again, `--serve hyper`, `auto` or `axum`, with the same
//! malloc setting as the relay benchmark gives Quire): one warm-up stream, then `N` connections each sending one
//! request and reading its first event; the growth of the child's resident memory (VmRSS) over `N` is the cost of a
//! stream. The median of `--runs` processes is printed.
//!
//!     cargo bench --profile server-release -p server --bench idle_floor -- --streams 1000,5000
//!
//! Under `cargo test --benches` it runs a tiny version (ten streams, one process per server).

use std::convert::Infallible;
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The one event each stream sends before it waits for good.
const FIRST_EVENT: &[u8] = b": open\n\n";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    if let Some(kind) = value("--serve") {
        return serve(&kind);
    }
    let bench = args.iter().any(|a| a == "--bench");
    let levels: Vec<usize> = match value("--streams") {
        Some(list) => list.split(',').map(str::parse).collect::<Result<_, _>>().context("--streams")?,
        None if bench => vec![1000, 5000],
        None => vec![10],
    };
    let runs: usize = value("--runs").map(|r| r.parse()).transpose()?.unwrap_or(if bench { 3 } else { 1 }).max(1);
    raise_open_files(levels.iter().max().copied().unwrap_or(0) * 2 + 100);

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    println!("{:<8} {:>8} {:>16}", "server", "streams", "KiB per stream");
    for kind in ["hyper", "auto", "axum"] {
        for &streams in &levels {
            let mut per_stream: Vec<f64> =
                (0..runs).map(|_| runtime.block_on(measure(kind, streams))).collect::<anyhow::Result<_>>()?;
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
    let before = rss_kib(pid)?;
    let mut open = Vec::with_capacity(streams);
    for _ in 0..streams {
        open.push(open_stream(port).await?);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = rss_kib(pid)?;
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

fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).context("no VmRSS")?;
    Ok(line.split_whitespace().nth(1).context("VmRSS")?.parse()?)
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

/// Every request's answer on the servers without a router: an idle event stream.
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
            // hyper's HTTP/1.1 connection with nothing above it: a service function per connection.
            "hyper" => loop {
                let (stream, _) = listener.accept().await?;
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(idle_response);
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            },
            // hyper-util's server that tells HTTP/1.1 from HTTP/2 by the connection's first bytes (what axum::serve
            // runs), with the same service function: the cost of serving both versions on one port.
            "auto" => loop {
                let (stream, _) = listener.accept().await?;
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(idle_response);
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
                    let _ = builder.serve_connection_with_upgrades(io, service).await;
                });
            },
            // axum's own server and router, as Quire serves its event streams.
            "axum" => {
                let events = axum::routing::get(|| async {
                    ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], idle_body())
                });
                let router = axum::Router::new().route("/events", events);
                axum::serve(listener, router).await?;
                Ok(())
            }
            other => anyhow::bail!("no server called {other}"),
        }
    })
}
