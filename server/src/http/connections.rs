//! Accepting and serving connections. Each is told apart by its first bytes (HTTP/2's preface, or HTTP/1.1) and
//! served by hyper's server for that one version: `axum::serve` keeps state for both, 8 KiB more a connection,
//! a third of what an idle event stream costs (BENCHMARKS.md, "Idle streams").
//!
//! A client that does not talk holds nothing for good: its first request must begin within
//! [`FIRST_BYTES_TIMEOUT`], and each HTTP/1.1 head (a kept-open connection's wait too) arrive within
//! [`HEAD_TIMEOUT`]. An HTTP/2 connection with no request open for as long is closed (GOAWAY); hyper has no such
//! limit, so the connection counts its open requests. Connections are never upgraded (no WebSocket).

use std::{
    future::Future,
    io,
    net::SocketAddr,
    pin::{pin, Pin},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{body::Body, extract::ConnectInfo, Router};
use futures::FutureExt as _;
use http_body::{Frame, SizeHint};
use hyper::{
    body::Incoming,
    server::conn::{http1, http2},
};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{watch, Notify},
};
use tower::Service as _;

/// How long a new connection may stay silent before its first request begins.
pub const FIRST_BYTES_TIMEOUT: Duration = Duration::from_secs(30);
/// The default of `QUIRE_HEADER_TIMEOUT_SECONDS`: longer than common proxies keep idle connections (Caddy two
/// minutes), so a proxy never sends a request on a connection this server is closing as idle.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(150);

/// How long an idle HTTP/2 connection asked to close may take to do so before it is dropped.
const CLOSING_GRACE: Duration = Duration::from_secs(5);

/// The limits on clients that do not talk (see the module's description).
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// For a new connection's first bytes.
    pub first_bytes: Duration,
    /// For each HTTP/1.1 request's head, and a kept-open connection's idle wait (HTTP/2: with no request open).
    pub head: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self { first_bytes: FIRST_BYTES_TIMEOUT, head: HEAD_TIMEOUT }
    }
}

/// What an HTTP/2 client sends first (RFC 9113, 3.4); nothing an HTTP/1.1 request begins with.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Serves `router` (each request carrying [`ConnectInfo<SocketAddr>`]) until `shutdown` resolves; then asks each
/// connection to close once its requests are answered, and returns when all have.
pub async fn serve(listener: TcpListener, router: Router, timeouts: Timeouts, shutdown: impl Future<Output = ()>) {
    // Every connection holds a receiver: a value sent asks them to close, and the channel's sender learns when
    // the last one is gone.
    let (stop, stopping) = watch::channel(());
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    refused(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small writes (each event of a stream) go out at once: with Nagle's algorithm on, an event written right
        // after the response head waits for the peer's delayed acknowledgement, up to 40 ms.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        tokio::spawn(connection(stream, peer, router.clone(), stopping.clone(), timeouts));
    }
    drop(listener);
    drop(stopping);
    // No receivers left (no connection open) is the one way this fails, and then there is nothing to wait for.
    let _ = stop.send(());
    stop.closed().await;
}

/// An accept that failed. A connection reset before it was accepted is the peer's business; anything else (out of
/// file descriptors, most often) would fail again at once, so the loop pauses a second instead of spinning.
async fn refused(e: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
        return;
    }
    tracing::error!(error = %e, "could not accept a connection");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[derive(Debug, PartialEq, Eq)]
enum Version {
    Http1,
    Http2,
}

/// Serves one connection until it closes, or closes it gracefully when asked to stop.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    mut stopping: watch::Receiver<()>,
    timeouts: Timeouts,
) {
    let version = tokio::select! {
        version = tokio::time::timeout(timeouts.first_bytes, version(&stream)) => match version {
            Ok(Ok(version)) => version,
            // Closed, failed or silent before a request began: nothing to answer.
            _ => return,
        },
        _ = stopping.changed() => return,
    };
    // The router is cloned per request (a reference count): hyper's service is called through `&self`.
    let answer = move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        router.clone().call(request)
    };
    let io = TokioIo::new(stream);
    match version {
        Version::Http1 => {
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(timeouts.head)
                .serve_connection(io, hyper::service::service_fn(answer));
            let never_idle = |_| std::future::pending();
            until_stopped(served, stopping, never_idle, |served| served.graceful_shutdown()).await;
        }
        Version::Http2 => {
            let open = Arc::new(OpenRequests::default());
            let counted = open.clone();
            let service = hyper::service::service_fn(move |request| {
                let open = OpenRequest::new(counted.clone());
                answer(request).map(|answered| answered.map(|response| response.map(|body| open.holding(body))))
            });
            // Boxed, so the task's own size is that of an HTTP/1.1 connection: an HTTP/2 one's state is larger,
            // and it serves many streams (one task each) rather than one.
            let served = Box::pin(http2::Builder::new(TokioExecutor::new()).serve_connection(io, service));
            let idle = |limit: Option<Duration>| open.idle_for(limit.unwrap_or(timeouts.head));
            until_stopped(served, stopping, idle, |served| served.get_mut().as_mut().graceful_shutdown()).await;
        }
    }
}

/// How many requests of one HTTP/2 connection are open, told to whoever waits for the count to change.
#[derive(Debug, Default)]
struct OpenRequests {
    count: AtomicUsize,
    changed: Notify,
}

impl OpenRequests {
    /// Resolves once no request has been open for `limit` without a break.
    async fn idle_for(&self, limit: Duration) {
        let sleep = tokio::time::sleep(limit);
        let mut sleep = pin!(sleep);
        loop {
            let changed = self.changed.notified();
            let mut changed = pin!(changed);
            // Registered before the count is read, so a change in between is not missed.
            changed.as_mut().enable();
            if self.count.load(Ordering::Acquire) > 0 {
                changed.await;
                continue;
            }
            sleep.as_mut().reset(tokio::time::Instant::now() + limit);
            tokio::select! {
                () = sleep.as_mut() => return,
                () = changed => {}
            }
        }
    }
}

/// One open request of an HTTP/2 connection, counted from its head until its answer's body is sent or dropped
/// (a stream reset by the client drops it too).
#[derive(Debug)]
struct OpenRequest(Arc<OpenRequests>);

impl OpenRequest {
    fn new(open: Arc<OpenRequests>) -> Self {
        if open.count.fetch_add(1, Ordering::AcqRel) == 0 {
            open.changed.notify_waiters();
        }
        Self(open)
    }

    /// The answer's body, counted open for as long as it lives.
    fn holding(self, body: Body) -> Body {
        Body::new(Counted { body, _open: self })
    }
}

impl Drop for OpenRequest {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.changed.notify_waiters();
        }
    }
}

/// A body that keeps its request counted open.
struct Counted {
    body: Body,
    _open: OpenRequest,
}

impl http_body::Body for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Drives `served` to its end, closing it (`graceful`) when asked to stop or once `idle_for(None)` resolves; an
/// idle one still open [`CLOSING_GRACE`] later is dropped (HTTP/2's close waits for a PING a client may never answer).
async fn until_stopped<C, I>(
    served: C,
    mut stopping: watch::Receiver<()>,
    idle_for: impl Fn(Option<Duration>) -> I,
    graceful: impl FnOnce(Pin<&mut C>),
) where
    C: Future<Output = hyper::Result<()>>,
    I: Future<Output = ()>,
{
    let mut served = pin!(served);
    let ended = tokio::select! {
        ended = served.as_mut() => ended,
        _ = stopping.changed() => {
            graceful(served.as_mut());
            served.await
        }
        () = idle_for(None) => {
            graceful(served.as_mut());
            tokio::select! {
                ended = served.as_mut() => ended,
                () = idle_for(Some(CLOSING_GRACE)) => {
                    tracing::debug!("an idle connection did not close when asked; dropped");
                    Ok(())
                }
            }
        }
    };
    if let Err(e) = ended {
        tracing::debug!(error = %e, "a connection ended with an error");
    }
}

/// Which protocol a connection speaks, from its first bytes (peeked: hyper reads them again); part of a preface
/// is looked at again a little later each time, never in a busy loop.
async fn version(stream: &TcpStream) -> io::Result<Version> {
    let mut first = [0u8; PREFACE.len()];
    let mut pause = Duration::from_millis(1);
    loop {
        let n = stream.peek(&mut first).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        if first[..n] != PREFACE[..n] {
            return Ok(Version::Http1);
        }
        if n == PREFACE.len() {
            return Ok(Version::Http2);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use futures::StreamExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server on a free port.
    struct Running {
        addr: SocketAddr,
        /// Asks it to stop.
        stop: tokio::sync::oneshot::Sender<()>,
        served: tokio::task::JoinHandle<()>,
        /// Told when a request to `/slow` is in its handler.
        entered: tokio::sync::mpsc::Receiver<()>,
        /// Lets one request to `/slow` be answered.
        release: tokio::sync::mpsc::Sender<()>,
    }

    /// A server answering `GET /peer` with the peer address each request carries, `GET /slow` after `release`
    /// and `GET /drip` slowly; `timeout` is both of its limits on silent clients.
    async fn started(timeout: Duration) -> Running {
        let (release, released) = tokio::sync::mpsc::channel::<()>(1);
        let released = std::sync::Arc::new(tokio::sync::Mutex::new(released));
        let (enter, entered) = tokio::sync::mpsc::channel::<()>(1);
        let router = Router::new()
            .route("/peer", get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() }))
            .route(
                "/slow",
                get(move || async move {
                    let _ = enter.send(()).await;
                    released.lock().await.recv().await;
                    "done"
                }),
            )
            .route(
                "/drip",
                get(|| async {
                    // Three parts 200 ms apart: a stream that outlasts a short head timeout.
                    let parts = futures::stream::iter(["one ", "two ", "three"]).then(|part| async move {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Ok::<_, std::convert::Infallible>(part)
                    });
                    axum::body::Body::from_stream(parts)
                }),
            );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(serve(listener, router, Timeouts { first_bytes: timeout, head: timeout }, async {
            let _ = stopped.await;
        }));
        Running { addr, stop, served, entered, release }
    }

    /// Everything the server sends on `stream` until it closes it (a minute at most); a reset (bytes left unread)
    /// is a close too.
    async fn until_closed(stream: &mut TcpStream) -> String {
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut answer))
            .await
            .expect("the server closes the connection");
        if let Err(e) = read {
            assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
        }
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn both_versions_are_served_and_every_request_knows_its_peer() {
        let server = started(HEAD_TIMEOUT).await;
        let addr = server.addr;
        let url = format!("http://{addr}/peer");
        let http1 = reqwest::Client::builder().http1_only().build().unwrap();
        let answer = http1.get(&url).send().await.unwrap();
        assert_eq!(answer.version(), reqwest::Version::HTTP_11);
        let peer: SocketAddr = answer.text().await.unwrap().parse().unwrap();
        assert_eq!(peer.ip(), addr.ip());

        let http2 = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
        let answer = http2.get(&url).send().await.unwrap();
        assert_eq!(answer.version(), reqwest::Version::HTTP_2);
        assert_eq!(answer.text().await.unwrap().parse::<SocketAddr>().unwrap().ip(), addr.ip());
    }

    #[tokio::test]
    async fn a_preface_sent_in_pieces_is_still_http2() {
        let server = started(HEAD_TIMEOUT).await;
        let addr = server.addr;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        for piece in PREFACE.chunks(5) {
            stream.write_all(piece).await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // An empty SETTINGS frame: the server answers with its own SETTINGS (type 4), which no HTTP/1.1 server
        // would send.
        stream.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
        let mut head = [0u8; 9];
        stream.read_exact(&mut head).await.unwrap();
        assert_eq!(head[3], 4, "the server's first frame is its SETTINGS: {head:?}");
    }

    #[tokio::test]
    async fn a_client_too_slow_with_its_head_is_closed() {
        let server = started(Duration::from_millis(300)).await;
        let addr = server.addr;
        // Nothing sent at all.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        assert_eq!(until_closed(&mut silent).await, "");
        // Half a head, then nothing more.
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /peer HTTP/1.1\r\nhost: x\r\n").await.unwrap();
        let answer = until_closed(&mut slow).await;
        assert!(!answer.contains("200 OK"), "{answer}");
        // Part of HTTP/2's preface, then nothing more.
        let mut stalled = TcpStream::connect(addr).await.unwrap();
        stalled.write_all(&PREFACE[..3]).await.unwrap();
        assert_eq!(until_closed(&mut stalled).await, "");
        // A request sent in time is answered as ever.
        let answer = reqwest::get(format!("http://{addr}/peer")).await.unwrap();
        assert!(answer.status().is_success());
    }

    /// Asks `client` for an answer that takes twice a short limit (`/drip`) between two others, and checks that
    /// one connection served all three (the client's port is the same); returns that port's address.
    async fn one_connection_outlasts_a_slow_answer(client: &reqwest::Client, addr: SocketAddr) -> SocketAddr {
        let (drip, peer) = (format!("http://{addr}/drip"), format!("http://{addr}/peer"));
        let first: SocketAddr = client.get(&peer).send().await.unwrap().text().await.unwrap().parse().unwrap();
        assert_eq!(client.get(&drip).send().await.unwrap().text().await.unwrap(), "one two three");
        let again: SocketAddr = client.get(&peer).send().await.unwrap().text().await.unwrap().parse().unwrap();
        assert_eq!(first, again, "one connection served all three");
        first
    }

    #[tokio::test]
    async fn the_head_timeout_never_cuts_an_answer_being_sent() {
        let server = started(Duration::from_millis(300)).await;
        let client = reqwest::Client::builder().http1_only().build().unwrap();
        one_connection_outlasts_a_slow_answer(&client, server.addr).await;
    }

    #[tokio::test]
    async fn an_http2_connection_is_closed_once_idle_but_never_while_answering() {
        let server = started(Duration::from_millis(300)).await;
        let http2 = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
        // An answer whose body takes twice the idle limit keeps the connection open.
        let first = one_connection_outlasts_a_slow_answer(&http2, server.addr).await;
        // A request whose handler outlasts the limit too.
        let Running { addr, mut entered, release, .. } = server;
        let peer = format!("http://{addr}/peer");
        let slow = tokio::spawn({
            let http2 = http2.clone();
            async move { http2.get(format!("http://{addr}/slow")).send().await.unwrap().text().await.unwrap() }
        });
        entered.recv().await.unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        release.send(()).await.unwrap();
        assert_eq!(slow.await.unwrap(), "done");
        let still: SocketAddr = http2.get(&peer).send().await.unwrap().text().await.unwrap().parse().unwrap();
        assert_eq!(first, still, "the connection outlived a slow handler");

        // A client that sends the preface and its settings, then nothing: its connection is closed.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        idle.write_all(PREFACE).await.unwrap();
        idle.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
        until_closed(&mut idle).await;
    }

    #[tokio::test]
    async fn stopping_lets_a_request_in_progress_finish_then_closes() {
        let Running { addr, stop, served, mut entered, release } = started(HEAD_TIMEOUT).await;
        let mut open = TcpStream::connect(addr).await.unwrap();
        open.write_all(b"GET /slow HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        entered.recv().await.unwrap();
        let mut idle = TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET /peer HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        let mut first = [0u8; 12];
        idle.read_exact(&mut first).await.unwrap();
        assert_eq!(&first, b"HTTP/1.1 200");

        stop.send(()).unwrap();
        // The idle kept-open connection is closed; new connections are refused.
        let rest = until_closed(&mut idle).await;
        assert!(!rest.contains("HTTP/1.1"), "nothing more is answered: {rest}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(TcpStream::connect(addr).await.is_err(), "no more connections are accepted");
        assert!(!served.is_finished(), "the request in progress holds the server");

        release.send(()).await.unwrap();
        let answer = until_closed(&mut open).await;
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("done"), "{answer}");
        served.await.unwrap();
    }
}
