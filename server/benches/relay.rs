//! Relay overhead and idle streams, Quire side by side with a fake upstream.
//!
//! A fake OpenAI-compatible upstream (in this process) streams `--deltas` deltas `--gap-ms` apart. The real
//! `quire` binary (a child process: SQLite, accounts, rate limits off) is configured with the OpenAI provider
//! pointing at it. For each concurrency level the load client first runs the streams straight from the fake,
//! then the same number of chats through Quire, and prints time to first token and inter-delta gaps
//! (p50/p99) of both, their difference, and Quire's CPU and memory (from /proc).
//!
//! With `--split 1,256` each level then runs through Quire with answers of one and of 256 deltas, and Quire's CPU
//! per chat is split into a fixed part per chat and a part per relayed delta (the difference over the deltas).
//!
//! With `--idle 1000,5000` it then opens that many chats whose upstream stalls after the first delta and
//! reports Quire's memory per open stream: the growth of its resident memory (VmRSS) from before the streams
//! were opened to when they are all open and settled, divided by their number. Each measurement runs in a
//! fresh Quire process (`--idle-runs` of them per level, the median reported) after one warm-up chat, so memory
//! that an earlier level or phase freed but kept (and the connections it left open for reuse) does not make a
//! level look cheaper, and what the first chat builds once does not make it look dearer. `--idle-clients h2c`
//! opens them over HTTP/2 without TLS, 100 per connection, as a proxy speaking HTTP/2 to Quire would.
//!
//!     ulimit -n 65536
//!     cargo bench --profile server-release -p server --bench relay -- --streams 1,100,500 --idle 1000,5000
//!
//! With `--quire-cpus 0`, run under `taskset -c 1`, Quire has one core of two to itself and the load client and the
//! fake provider the other (on PostgreSQL, start `scripts/with-postgres` under the same `taskset`: the database
//! then shares the load's core):
//!
//!     taskset -c 1 target/server-release/deps/relay-<hash> --bench --streams 100,500 --rounds 2 --quire-cpus 0
//!
//! With `--floor` the same load runs through a minimal relay instead of Quire (`support/relay_floor.rs`: axum and
//! reqwest, parsing and re-framing each delta, the person's message and the answer each one durable SQLite insert),
//! measured the same way: the floor under Quire's numbers on this machine.
//!
//! With `--slow-readers 1` each level runs through Quire a second time beside a client that reads slowly, and the
//! other clients' gaps are compared with the run without it; `--slow-pairs 5` alternates five such pairs and prints
//! the median difference (one pair differs from the next by more than a slow reader costs).
//!
//! With `--capacity` it then looks for the highest rate of turn starts a second that the server answers with the
//! first token's added p99 within `--capacity-p99-ms` (10): turns arrive on a schedule (an open loop), each a
//! conversation's first with a one-delta answer; the rate doubles from 50 until a step misses, then the interval
//! is halved to within 5%. Run it pinned as above, and with `--floor` for the floor's number.
//!
//! Under `cargo test --benches` it runs a tiny version (two short streams, ten idle ones).

#[path = "support/capacity.rs"]
mod capacity;
#[path = "support/mode.rs"]
mod mode;
#[path = "support/process.rs"]
mod process;
#[path = "support/relay_floor.rs"]
mod relay_floor;
#[path = "support/stats.rs"]
mod stats;
#[path = "../tests/it/common/tls.rs"]
mod tls;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use clap::Parser;
use futures::StreamExt;
use process::memory_kib;
use serde_json::{json, Value};
use stats::fmt;
use tokio::net::TcpListener;
use tokio::sync::watch;

#[derive(Parser, Debug, Clone)]
struct Args {
    /// Concurrency levels of the relay measurement.
    #[arg(long, value_delimiter = ',', default_value = "1,100,500")]
    streams: Vec<usize>,
    /// Chats run one after another by each concurrent client.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    #[arg(long, default_value_t = 64)]
    deltas: usize,
    #[arg(long, default_value_t = 20)]
    gap_ms: u64,
    /// Two answer lengths in deltas (`1,256`): after the levels, each level's chats run through Quire once with
    /// each, and Quire's CPU per chat is split into a fixed part per chat and a part per relayed delta.
    #[arg(long, value_delimiter = ',')]
    split: Vec<usize>,
    /// Numbers of idle streams to hold open (empty: skip).
    #[arg(long, value_delimiter = ',')]
    idle: Vec<usize>,
    /// Fresh Quire processes measured per number of idle streams (the median is reported).
    #[arg(long, default_value_t = 3)]
    idle_runs: usize,
    /// How the fake provider is reached: `http` (plain HTTP/1.1, a connection per stream, as a model server on
    /// the local network) or `https` (TLS with a certificate of its own authority and HTTP/2, as the hosted
    /// providers; Quire trusts the authority through `QUIRE_LLM_CA_FILE`).
    #[arg(long, default_value = "http")]
    upstream: Scheme,
    /// How the idle streams' clients reach Quire: `h1` (a connection per stream, as browsers on HTTP/1.1) or
    /// `h2c` (HTTP/2 without TLS, 100 streams per connection, as a proxy that speaks HTTP/2 to Quire).
    #[arg(long, default_value = "h1")]
    idle_clients: ClientProtocol,
    /// Idle streams opened per second (at most: in groups of [`OPEN_TOGETHER`]). What the streams' starts
    /// allocate and free is kept by the allocator for later, so the resident memory with all of them open also
    /// depends on how many started at once.
    #[arg(long, default_value_t = 2500, value_parser = clap::value_parser!(u32).range(1..))]
    idle_open_rate: u32,
    /// The CPUs Quire may run on (a `taskset` list, e.g. `0`): with the benchmark itself started under
    /// `taskset -c 1`, Quire has one core to itself and the load client and the fake provider share the other.
    #[arg(long)]
    quire_cpus: Option<String>,
    /// Measure the minimal relay (`support/relay_floor.rs`) in Quire's place.
    #[arg(long)]
    floor: bool,
    /// Slow readers added to each level in a second run through Quire (0: none): clients with a 4 KiB receive
    /// buffer that read 128 bytes every 50 ms. The other clients' gaps of both runs are printed side by side.
    #[arg(long, default_value_t = 0)]
    slow_readers: usize,
    /// Find the capacity of the server: the highest rate of turn starts a second, in an open loop, at which the
    /// first token's added p99 stays within `--capacity-p99-ms` (see `Capacity`).
    #[arg(long)]
    capacity: bool,
    /// How long each rate of `--capacity` runs.
    #[arg(long, default_value_t = 3.0)]
    capacity_seconds: f64,
    /// The most the first token's p99 may add at a rate `--capacity` counts as held.
    #[arg(long, default_value_t = 10.0)]
    capacity_p99_ms: f64,
    /// Pairs of runs without and with the slow readers, alternating (the median of their differences is printed).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    slow_pairs: u32,
    #[command(flatten)]
    mode: mode::Mode,
}

/// Idle streams opened one right after another before a pause (see `--idle-open-rate`).
const OPEN_TOGETHER: usize = 50;

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum ClientProtocol {
    H1,
    H2c,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Http,
    Https,
}

// ---------------------------------------------------------------------------------------------------------
// The fake upstream.

/// Where the fake upstream listens.
#[derive(Clone)]
struct Upstream {
    /// `http://127.0.0.1:port` or `https://localhost:port`.
    origin: String,
    /// The authority's certificate (HTTPS only), in a file for Quire.
    ca: Option<(String, Arc<tempfile::TempDir>)>,
}

impl Upstream {
    fn ca_file(&self) -> Option<std::path::PathBuf> {
        self.ca.as_ref().map(|(_, dir)| dir.path().join("ca.pem"))
    }

    /// A load client that trusts the upstream's authority.
    fn client(&self) -> anyhow::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder().pool_max_idle_per_host(usize::MAX);
        if let Some((pem, _)) = &self.ca {
            builder = builder.add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes())?);
        }
        Ok(builder.build()?)
    }
}

#[derive(Clone)]
struct Fake {
    /// Deltas per answer (changed between phases by `--split`).
    deltas: Arc<AtomicUsize>,
    gap: Duration,
    /// While set, streams stop after their first delta until `release` changes.
    stall: Arc<AtomicBool>,
    release: watch::Receiver<u64>,
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "bench-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {body}\n\n")
}

async fn completions(State(fake): State<Fake>, body: axum::body::Bytes) -> Response {
    let _request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let stall = fake.stall.load(Ordering::SeqCst);
    let deltas = fake.deltas.load(Ordering::SeqCst);
    let mut release = fake.release.clone();
    // A clone starts from what the original receiver has seen, which is never updated: without this, every
    // release sent before this request (an earlier run's) would count as new and end the stall at once.
    release.mark_unchanged();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    tokio::spawn(async move {
        let start = tokio::time::Instant::now();
        for i in 0..deltas {
            tokio::time::sleep_until(start + fake.gap * i as u32).await;
            let mut text = chunk(json!({"content": format!("w{i} ")}), None);
            if i == 0 {
                text = chunk(json!({"role": "assistant", "content": ""}), None) + &text;
            }
            if tx.send(Ok(text)).await.is_err() {
                return;
            }
            if stall && i == 0 {
                // Held open: a comment every 10 s keeps Quire's idle timeout away.
                loop {
                    tokio::select! {
                        _ = release.changed() => break,
                        _ = tokio::time::sleep(Duration::from_secs(10)) => {
                            if tx.send(Ok(": waiting\n\n".into())).await.is_err() { return; }
                        }
                    }
                }
                break;
            }
        }
        let usage = json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": "bench-model", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": deltas, "total_tokens": 10 + deltas}});
        let tail = chunk(json!({}), Some("stop")) + &format!("data: {usage}\n\n") + "data: [DONE]\n\n";
        let _ = tx.send(Ok(tail)).await;
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)))
        .expect("response")
}

async fn start_fake(fake: Fake, scheme: Scheme) -> anyhow::Result<Upstream> {
    let app = Router::new().route("/v1/chat/completions", post(completions)).with_state(fake);
    if scheme == Scheme::Https {
        // Streams per connection are not limited here: Quire spreads its streams over connections by itself,
        // and the direct path (one load client) should not queue behind a limit.
        let front = tls::serve(app, u32::MAX).await?;
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("ca.pem"), &front.ca_pem)?;
        return Ok(Upstream {
            origin: format!("https://localhost:{}", front.addr.port()),
            ca: Some((front.ca_pem, Arc::new(dir))),
        });
    }
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    // As a real provider's front end would, and as Quire does: no small write waits for a delayed ACK.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(Upstream { origin: format!("http://{addr}"), ca: None })
}

// ---------------------------------------------------------------------------------------------------------
// Quire as a child process.

struct Quire {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Quire {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts Quire; `environment` is added to its environment.
async fn start_quire(upstream: &Upstream, cpus: Option<&str>, environment: &[(&str, &str)]) -> anyhow::Result<Quire> {
    start_server(upstream, cpus, environment, false).await
}

/// Starts Quire or, with `floor`, the minimal relay (this binary in its serving mode).
async fn start_server(
    upstream: &Upstream,
    cpus: Option<&str>,
    environment: &[(&str, &str)],
    floor: bool,
) -> anyhow::Result<Quire> {
    let dir = tempfile::tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    // `QUIRE_BIN` measures another build of the server (for a before/after comparison).
    let binary = if floor {
        std::env::current_exe()?.into_os_string()
    } else {
        std::env::var_os("QUIRE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_quire").into())
    };
    // Pinned by `taskset` before the server starts, so every thread it makes inherits the CPUs.
    let mut command = match cpus {
        Some(cpus) => {
            let mut taskset = Command::new("taskset");
            taskset.arg("-c").arg(cpus).arg(binary);
            taskset
        }
        None => Command::new(binary),
    };
    if let Some(ca_file) = upstream.ca_file() {
        command.env("QUIRE_LLM_CA_FILE", ca_file);
    }
    let child = command
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("QUIRE_DATA_DIR", dir.path())
        .env("QUIRE_LLM_PROVIDER", "openai")
        .env("QUIRE_MODEL", "bench-model")
        .env("OPENAI_BASE_URL", format!("{}/v1", upstream.origin))
        .env("OPENAI_API_KEY", "bench")
        .env("QUIRE_RATE_LIMITS", "off")
        // Ten accounts share up to 500 streams: the per-person caps would refuse most of them.
        .env("QUIRE_USER_CONCURRENT_TURNS", "0")
        .env("QUIRE_USER_OPEN_STREAMS", "0")
        .env("QUIRE_SIGNUP", "open")
        .env("RUST_LOG", "warn")
        .envs(environment.iter().copied())
        .envs(floor.then_some((relay_floor::SERVE, "1")))
        .stdout(Stdio::null())
        .spawn()
        .with_context(|| if cpus.is_some() { "starting quire under taskset (util-linux)" } else { "starting quire" })?;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    for _ in 0..300 {
        if client.get(format!("{base}/api/health")).send().await.is_ok() {
            return Ok(Quire { child, base, _dir: dir });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("quire did not start")
}

/// CPU time used so far (user + system), from /proc/PID/stat.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command name.
    let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    Duration::from_millis(ticks * 10) // USER_HZ is 100 on Linux
}

// ---------------------------------------------------------------------------------------------------------
// The load client.

#[derive(Clone)]
struct Account {
    token: String,
}

/// Sends `request` and reads its JSON answer.
async fn answer(request: reqwest::RequestBuilder) -> anyhow::Result<Value> {
    Ok(request.send().await?.error_for_status()?.json().await?)
}

async fn register(client: &reqwest::Client, base: &str, i: usize) -> anyhow::Result<Account> {
    let body =
        json!({"email": format!("bench{i}@example.com"), "password": "bench-password-1234", "display_name": "Bench"});
    let reply = answer(client.post(format!("{base}/api/auth/register")).json(&body)).await?;
    Ok(Account { token: reply["token"].as_str().unwrap_or_default().to_string() })
}

async fn new_thread(client: &reqwest::Client, base: &str, account: &Account) -> anyhow::Result<String> {
    // A title of its own, so the first turn does not ask the model for one.
    let request = client.post(format!("{base}/api/threads")).bearer_auth(&account.token);
    let reply = answer(request.json(&json!({"title": "Relay benchmark"}))).await?;
    Ok(reply["id"].as_str().unwrap_or_default().to_string())
}

/// Arrival times of the deltas of one stream, from the moment the request was sent.
struct Timing {
    deltas: Vec<Duration>,
    /// From the last delta to the stream's last bytes (Quire: its `message_complete`, sent once the answer is
    /// stored; the fake: `[DONE]`).
    end: Duration,
}

/// Reads a server-sent event stream; `is_delta` says which events carry a delta.
async fn read_events(
    response: reqwest::Response,
    sent: Instant,
    is_delta: impl Fn(&str) -> bool,
) -> anyhow::Result<Timing> {
    let mut timing = Timing { deltas: Vec::new(), end: Duration::ZERO };
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    let mut last_bytes = Duration::ZERO;
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        let now = sent.elapsed();
        last_bytes = now;
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            if is_delta(&event) {
                timing.deltas.push(now);
            }
        }
    }
    timing.end = last_bytes.saturating_sub(timing.deltas.last().copied().unwrap_or_default());
    Ok(timing)
}

async fn direct_stream(client: &reqwest::Client, upstream: &str) -> anyhow::Result<Timing> {
    let sent = Instant::now();
    let response = client
        .post(format!("{upstream}/v1/chat/completions"))
        .json(&json!({"model": "bench-model", "stream": true, "messages": [{"role": "user", "content": "hello"}]}))
        .send()
        .await?
        .error_for_status()?;
    read_events(response, sent, |e| e.contains("\"content\":\"w")).await
}

async fn quire_stream(client: &reqwest::Client, base: &str, account: &Account, thread: &str) -> anyhow::Result<Timing> {
    let sent = Instant::now();
    let response = client
        .post(format!("{base}/api/threads/{thread}/chat"))
        .bearer_auth(&account.token)
        .json(&json!({"content": "Tell me about the project plan."}))
        .send()
        .await?
        .error_for_status()?;
    read_events(response, sent, |e| e.contains("event: text_delta")).await
}

/// A chat read by a client that is slow to read: a 4 KiB receive buffer, 128 bytes every 50 ms, until the answer's
/// end. The bytes it read.
async fn slow_reader(addr: &str, account: &Account, thread: &str) -> anyhow::Result<usize> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(4096)?;
    let mut stream = socket.connect(addr.parse()?).await?;
    let body = json!({"content": "Tell me about the project plan."}).to_string();
    let request = format!(
        "POST /api/threads/{thread}/chat HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        account.token,
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let (mut read, mut tail, mut buffer) = (0, String::new(), [0u8; 128]);
    loop {
        let n = stream.read(&mut buffer).await?;
        if n == 0 {
            break;
        }
        read += n;
        tail.push_str(&String::from_utf8_lossy(&buffer[..n]));
        if tail.contains("message_complete") || tail.contains("event: error") {
            break;
        }
        let keep = tail.len().saturating_sub(64);
        let keep = (keep..=tail.len()).find(|&i| tail.is_char_boundary(i)).unwrap_or(tail.len());
        tail.drain(..keep);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(read)
}

#[derive(Default)]
struct Samples {
    ttft: Vec<Duration>,
    gaps: Vec<Duration>,
    ends: Vec<Duration>,
    streams: usize,
}

impl Samples {
    fn add(&mut self, timing: &Timing, expected: usize) -> anyhow::Result<()> {
        anyhow::ensure!(timing.deltas.len() == expected, "{} deltas instead of {expected}", timing.deltas.len());
        self.ttft.push(timing.deltas[0]);
        self.gaps.extend(timing.deltas.windows(2).map(|w| w[1] - w[0]));
        self.ends.push(timing.end);
        self.streams += 1;
        Ok(())
    }
}

/// Runs `streams` clients of `rounds` chats each, started evenly over 500 ms.
async fn run_level<F, Fut>(streams: usize, rounds: usize, expected: usize, one: F) -> anyhow::Result<Samples>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<Timing>> + Send,
{
    let mut tasks = Vec::new();
    for i in 0..streams {
        let one = one.clone();
        let offset = Duration::from_micros(500_000 * i as u64 / streams.max(1) as u64);
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(offset).await;
            let mut timings = Vec::new();
            for _ in 0..rounds {
                timings.push(one(i).await?);
            }
            anyhow::Ok(timings)
        }));
    }
    let mut samples = Samples::default();
    for task in tasks {
        for timing in task.await?? {
            samples.add(&timing, expected)?;
        }
    }
    Ok(samples)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::var_os(relay_floor::SERVE).is_some() {
        return relay_floor::serve().await;
    }
    let mut args = Args::parse();
    if args.mode.smoke() {
        args.streams = vec![2];
        args.rounds = 1;
        args.deltas = 4;
        args.split = vec![1, 2];
        args.gap_ms = 5;
        args.idle = vec![10];
        // Two, so that the second run's streams are held open after the first run's were let go.
        args.idle_runs = 2;
        args.capacity = true;
        args.capacity_seconds = 0.4;
    }
    let (release_tx, release_rx) = watch::channel(0u64);
    let stall = Arc::new(AtomicBool::new(false));
    anyhow::ensure!(args.split.is_empty() || args.split.len() == 2, "--split takes two lengths");
    let deltas = Arc::new(AtomicUsize::new(args.deltas));
    let fake = Fake {
        deltas: deltas.clone(),
        gap: Duration::from_millis(args.gap_ms),
        stall: stall.clone(),
        release: release_rx,
    };
    let upstream = start_fake(fake, args.upstream).await?;
    let quire = start_server(&upstream, args.quire_cpus.as_deref(), &[], args.floor).await?;
    let pid = quire.child.id();
    let base = quire.base.clone();
    let client = upstream.client()?;

    let max_streams = args.streams.iter().chain(&args.idle).copied().max().unwrap_or(1);
    let accounts_wanted = max_streams.clamp(1, 10);
    let mut accounts = Vec::new();
    for i in 0..accounts_wanted {
        accounts.push(register(&client, &base, i).await?);
    }
    let limit = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let open_files = limit.lines().find(|l| l.starts_with("Max open files")).unwrap_or("").to_string();
    println!(
        "relay: upstream {}, {} deltas {} ms apart, {} rounds per client; {}",
        upstream.origin,
        args.deltas,
        args.gap_ms,
        args.rounds,
        open_files.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    println!(
        "{:>7} {:>6} | {:>10} {:>10} | {:>10} {:>10} | {:>10} {:>10} | {:>10} {:>10} | {:>10} {:>10} | {:>10} {:>10} | {:>9} {:>9} {:>9} {:>9}",
        "streams", "path", "ttft p50", "ttft p99", "gap p50", "gap p99", "+ttft p50", "+ttft p99", "+gap p50", "+gap p99",
        "gap p1", "gap max", "end p50", "end p99", "cpu", "cpu/turn", "rss MiB", "peak MiB"
    );
    for &streams in &args.streams {
        let threads = make_threads(&client, &base, &accounts, streams).await?;
        let direct = {
            let client = client.clone();
            let origin = upstream.origin.clone();
            run_level(streams, args.rounds, args.deltas, move |_| {
                let client = client.clone();
                let origin = origin.clone();
                async move { direct_stream(&client, &origin).await }
            })
            .await?
        };
        let cpu_before = cpu_time(pid);
        let wall = Instant::now();
        let through = through_quire(&client, &base, &accounts, &threads, args.rounds, args.deltas).await?;
        let cpu = cpu_time(pid) - cpu_before;
        let load = Load {
            share: cpu.as_secs_f64() / wall.elapsed().as_secs_f64(),
            per_turn: cpu / through.streams.max(1) as u32,
            memory_kib: memory_kib(pid),
        };
        print_row(streams, "direct", &direct, None, None);
        print_row(streams, if args.floor { "floor" } else { "quire" }, &through, Some(&direct), Some(load));
        if args.slow_readers > 0 {
            // Runs without and with the slow readers alternate: the difference of each pair, and their median, say
            // what the slow readers cost the others apart from how one run differs from the next.
            let mut differences = Vec::new();
            let mut without = through;
            for pair in 0..args.slow_pairs {
                if pair > 0 {
                    without = through_quire(&client, &base, &accounts, &threads, args.rounds, args.deltas).await?;
                    print_row(streams, "quire", &without, Some(&direct), None);
                }
                let slow_threads = make_threads(&client, &base, &accounts, args.slow_readers).await?;
                let addr = base.trim_start_matches("http://").to_string();
                let slow: Vec<_> = slow_threads
                    .into_iter()
                    .enumerate()
                    .map(|(i, thread)| {
                        let (addr, account) = (addr.clone(), accounts[i % accounts.len()].clone());
                        tokio::spawn(async move { slow_reader(&addr, &account, &thread).await })
                    })
                    .collect();
                let with_slow = through_quire(&client, &base, &accounts, &threads, args.rounds, args.deltas).await?;
                let mut read = 0;
                for reader in slow {
                    read += reader.await??;
                }
                print_row(streams, "+slow", &with_slow, Some(&without), None);
                println!("  ({} slow readers read {read} bytes; +gap is against the run before)", args.slow_readers);
                let p99 = |s: &Samples| {
                    let mut gaps = s.gaps.clone();
                    gaps.sort_unstable();
                    stats::rank(&gaps, 99.0).as_secs_f64() * 1e3
                };
                differences.push(p99(&with_slow) - p99(&without));
            }
            differences.sort_by(f64::total_cmp);
            let shown: Vec<String> = differences.iter().map(|d| format!("{d:+.2}")).collect();
            println!(
                "slow readers, {streams} streams: the others' gap p99 with them minus without, per pair: {} ms; median {:+.2} ms",
                shown.join(", "),
                differences[differences.len() / 2]
            );
        }
    }

    if let [short, long] = args.split[..] {
        anyhow::ensure!(short < long, "--split takes the shorter length first");
        for &streams in &args.streams {
            let threads = make_threads(&client, &base, &accounts, streams).await?;
            let mut per_chat = Vec::new();
            for length in [short, long] {
                deltas.store(length, Ordering::SeqCst);
                let cpu_before = cpu_time(pid);
                let through = through_quire(&client, &base, &accounts, &threads, args.rounds, length).await?;
                per_chat.push((cpu_time(pid) - cpu_before).as_secs_f64() * 1e3 / through.streams.max(1) as f64);
            }
            let per_delta = (per_chat[1] - per_chat[0]) / (long - short) as f64;
            let fixed = per_chat[0] - per_delta * short as f64;
            println!(
                "split, {streams} streams: CPU per chat {:.3} ms with {short} deltas, {:.3} ms with {long}: \
                 {fixed:.3} ms per chat + {:.2} us per delta",
                per_chat[0],
                per_chat[1],
                per_delta * 1e3
            );
        }
        deltas.store(args.deltas, Ordering::SeqCst);
    }

    if args.capacity {
        deltas.store(1, Ordering::SeqCst);
        let target = capacity::Capacity {
            client: &client,
            base: &base,
            upstream: &upstream.origin,
            accounts: &accounts,
            seconds: args.capacity_seconds,
            limit: Duration::from_secs_f64(args.capacity_p99_ms / 1e3),
        };
        let rates = if args.mode.smoke() { vec![5.0] } else { Vec::new() };
        target.run(pid, &rates).await?;
        deltas.store(args.deltas, Ordering::SeqCst);
    }

    drop(quire);
    if !args.idle.is_empty() {
        idle_streams(&args, &client, &upstream, &stall, &release_tx).await?;
    }
    Ok(())
}

/// Runs `threads.len()` clients of `rounds` chats each through Quire.
async fn through_quire(
    client: &reqwest::Client,
    base: &str,
    accounts: &[Account],
    threads: &[String],
    rounds: usize,
    deltas: usize,
) -> anyhow::Result<Samples> {
    let (client, base, accounts, threads) = (client.clone(), base.to_string(), accounts.to_vec(), threads.to_vec());
    run_level(threads.len(), rounds, deltas, move |i| {
        let client = client.clone();
        let base = base.clone();
        let account = accounts[i % accounts.len()].clone();
        let thread = threads[i].clone();
        async move { quire_stream(&client, &base, &account, &thread).await }
    })
    .await
}

async fn make_threads(
    client: &reqwest::Client,
    base: &str,
    accounts: &[Account],
    count: usize,
) -> anyhow::Result<Vec<String>> {
    let mut threads = Vec::with_capacity(count);
    for i in 0..count {
        threads.push(new_thread(client, base, &accounts[i % accounts.len()]).await?);
    }
    Ok(threads)
}

/// Quire's share of a core over a phase, its CPU time per chat, and its memory (VmRSS, VmHWM) at the end.
struct Load {
    share: f64,
    per_turn: Duration,
    memory_kib: (u64, u64),
}

fn print_row(streams: usize, path: &str, s: &Samples, reference: Option<&Samples>, load: Option<Load>) {
    let sorted = |samples: &[Duration]| {
        let mut samples = samples.to_vec();
        samples.sort_unstable();
        samples
    };
    let (ttft, gaps, ends) = (sorted(&s.ttft), sorted(&s.gaps), sorted(&s.ends));
    let p = |v: &[Duration], q: f64| if v.is_empty() { Duration::ZERO } else { stats::rank(v, q) };
    let diff = |a: Duration, b: Duration| {
        let d = a.as_secs_f64() - b.as_secs_f64();
        let text = fmt(Duration::from_secs_f64(d.abs()));
        if d < 0.0 {
            format!("-{text}")
        } else {
            format!("+{text}")
        }
    };
    let (added, extra) = match reference {
        Some(r) => {
            let (rt, rg) = (sorted(&r.ttft), sorted(&r.gaps));
            (
                format!(
                    "{:>10} {:>10} | {:>10} {:>10}",
                    diff(p(&ttft, 50.0), p(&rt, 50.0)),
                    diff(p(&ttft, 99.0), p(&rt, 99.0)),
                    diff(p(&gaps, 50.0), p(&rg, 50.0)),
                    diff(p(&gaps, 99.0), p(&rg, 99.0))
                ),
                load.map(|Load { share, per_turn, memory_kib: (rss, peak) }| {
                    format!(
                        "{:>8.0}% {:>9} {:>9.1} {:>9.1}",
                        share * 100.0,
                        fmt(per_turn),
                        rss as f64 / 1024.0,
                        peak as f64 / 1024.0
                    )
                })
                .unwrap_or_default(),
            )
        }
        None => (format!("{:>10} {:>10} | {:>10} {:>10}", "", "", "", ""), String::new()),
    };
    println!(
        "{:>7} {:>6} | {:>10} {:>10} | {:>10} {:>10} | {} | {:>10} {:>10} | {:>10} {:>10} | {}",
        streams,
        path,
        fmt(p(&ttft, 50.0)),
        fmt(p(&ttft, 99.0)),
        fmt(p(&gaps, 50.0)),
        fmt(p(&gaps, 99.0)),
        added,
        fmt(p(&gaps, 1.0)),
        fmt(gaps.last().copied().unwrap_or_default()),
        fmt(p(&ends, 50.0)),
        fmt(p(&ends, 99.0)),
        extra
    );
}

/// For each number of idle streams, measures [`idle_run`] in `--idle-runs` fresh Quire processes and prints
/// every run and the median.
async fn idle_streams(
    args: &Args,
    client: &reqwest::Client,
    upstream: &Upstream,
    stall: &AtomicBool,
    release: &watch::Sender<u64>,
) -> anyhow::Result<()> {
    println!(
        "idle streams (each a running chat whose model has sent one delta and waits; clients over {:?}, at most {} \
         opened a second), a fresh Quire per run:",
        args.idle_clients, args.idle_open_rate
    );
    println!(
        "{:>7} | {:>12} {:>12} {:>14} | {:>10} | per stream in each run",
        "streams", "rss before", "rss open", "per stream", "open took"
    );
    for &n in &args.idle {
        let mut runs = Vec::new();
        for _ in 0..args.idle_runs.max(1) {
            // A fixed mmap threshold (glibc's starting value) keeps the allocator from raising it after the
            // password hashes of sign-up (19 MiB each) are freed and then serving such blocks from the heap,
            // where the freed memory would stay resident and be reused by the streams, making them look cheaper.
            let quire = start_quire(
                upstream,
                args.quire_cpus.as_deref(),
                &[("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=131072")],
            )
            .await?;
            runs.push(idle_run(n, args, client, &quire, stall, release).await?);
        }
        let mut per: Vec<f64> = runs.iter().map(IdleRun::per_stream_kib).collect();
        per.sort_by(f64::total_cmp);
        let median = &runs[runs
            .iter()
            .position(|r| r.per_stream_kib() == per[per.len() / 2])
            .expect("the median is one of the runs")];
        println!(
            "{:>7} | {:>9.1} MiB {:>9.1} MiB {:>10.1} KiB | {:>10} | {}",
            n,
            median.before_kib as f64 / 1024.0,
            median.open_kib as f64 / 1024.0,
            median.per_stream_kib(),
            fmt(median.took),
            runs.iter().map(|r| format!("{:.1}", r.per_stream_kib())).collect::<Vec<_>>().join(" / ")
        );
    }
    Ok(())
}

/// One measurement of idle streams.
struct IdleRun {
    streams: usize,
    before_kib: u64,
    open_kib: u64,
    took: Duration,
}

impl IdleRun {
    fn per_stream_kib(&self) -> f64 {
        self.open_kib.saturating_sub(self.before_kib) as f64 / self.streams as f64
    }
}

/// Resident memory once it has settled: the median of five readings 200 ms apart.
async fn settled_rss_kib(pid: u32) -> u64 {
    let mut readings = Vec::new();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        readings.push(memory_kib(pid).0);
    }
    readings.sort_unstable();
    readings[readings.len() / 2]
}

/// Opens `n` chats in `quire` whose upstream answers one delta and then waits, and measures Quire's memory
/// with them all open against before; then lets them finish.
async fn idle_run(
    n: usize,
    args: &Args,
    client: &reqwest::Client,
    quire: &Quire,
    stall: &AtomicBool,
    release: &watch::Sender<u64>,
) -> anyhow::Result<IdleRun> {
    let (protocol, open_rate) = (args.idle_clients, args.idle_open_rate);
    let base = quire.base.as_str();
    let pid = quire.child.id();
    let mut accounts = Vec::new();
    for i in 0..n.clamp(1, 10) {
        accounts.push(register(client, base, i).await?);
    }
    // One chat first, so what the first chat of a process builds once (the tokenizer, prepared statements) is
    // not counted as the streams' memory.
    let warm_up = new_thread(client, base, &accounts[0]).await?;
    quire_stream(client, base, &accounts[0], &warm_up).await?;
    let threads = make_threads(client, base, &accounts, n).await?;
    stall.store(true, Ordering::SeqCst);
    let before = settled_rss_kib(pid).await;
    let started = Instant::now();
    let (opened_tx, mut opened_rx) = tokio::sync::mpsc::channel::<()>(n);
    let mut tasks = Vec::new();
    // Over HTTP/2 a connection carries 100 streams, each connection from its own client (hyper's pool never opens
    // a second connection to a full one).
    let h2c = (protocol == ClientProtocol::H2c)
        .then(|| (0..n.div_ceil(100)).map(|_| reqwest::Client::builder().http2_prior_knowledge().build()).collect())
        .transpose()?
        .unwrap_or_else(Vec::new);
    for (i, thread) in threads.iter().enumerate() {
        let client = h2c.get(i / 100).unwrap_or(client).clone();
        let url = format!("{base}/api/threads/{thread}/chat");
        let token = accounts[i % accounts.len()].token.clone();
        let opened = opened_tx.clone();
        tasks.push(tokio::spawn(async move {
            let response = client
                .post(url)
                .bearer_auth(token)
                .json(&json!({"content": "Hello"}))
                .send()
                .await?
                .error_for_status()?;
            let mut body = response.bytes_stream();
            let mut seen = String::new();
            let mut signalled = false;
            while let Some(chunk) = body.next().await {
                seen.push_str(&String::from_utf8_lossy(&chunk?));
                if !signalled && seen.contains("event: text_delta") {
                    signalled = true;
                    let _ = opened.send(()).await;
                }
                if seen.len() > 4096 {
                    seen.drain(..seen.len() - 64);
                }
            }
            anyhow::Ok(())
        }));
        // Opening thousands at once would only measure the queue in front of SQLite's single writer.
        if i % OPEN_TOGETHER == OPEN_TOGETHER - 1 {
            tokio::time::sleep(Duration::from_secs(OPEN_TOGETHER as u64).div_f64(f64::from(open_rate))).await;
        }
    }
    drop(opened_tx);
    for _ in 0..n {
        opened_rx.recv().await.ok_or_else(|| anyhow::anyhow!("a stream ended before its first delta"))?;
    }
    let took = started.elapsed();
    let open = settled_rss_kib(pid).await;
    // Every stream must still be open when it is measured: one that ended would make the figure a lie.
    let ended = tasks.iter().filter(|t| t.is_finished()).count();
    anyhow::ensure!(ended == 0, "{ended} of {n} streams ended while they were to be held open");
    stall.store(false, Ordering::SeqCst);
    release.send_modify(|v| *v += 1);
    for task in tasks {
        task.await??;
    }
    Ok(IdleRun { streams: n, before_kib: before, open_kib: open, took })
}
