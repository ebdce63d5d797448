//! Tools from MCP servers an administrator connects (see [`config`]): Quire is their client. Each server is kept
//! connected by a task of its own: a local one runs as a child process (only its configured variables, resource
//! limits set by `quire run-limited` before it starts), a remote one is reached over streamable HTTP. Its tools
//! are listed when it connects and again when it says they changed; a server that exits or breaks is started
//! again after a back-off (1 s, doubling to a minute). A turn never waits for a server: it is offered the tools of
//! the servers connected at that moment, and only a call waits, at most the server's timeout.
//!
//! Everything a server sends is untrusted: tool names are rewritten to what models accept, descriptions and
//! schemas are bounded, results are cut at the server's `max_result_chars` with a note to the model, and
//! the transport bounds what it reads (a line or an event of at most 16 MiB).

pub mod config;

use std::{
    collections::HashMap,
    path::PathBuf,
    process::Stdio,
    sync::{Arc, RwLock},
    time::{Duration, Instant},
};

use rmcp::{
    model::{CallToolRequestParams, ContentBlock, Tool},
    service::{NotificationContext, Peer, RunningService},
    transport::{streamable_http_client::StreamableHttpClientTransportConfig, StreamableHttpClientTransport},
    ClientHandler, RoleClient, ServiceExt,
};
use serde_json::Value;
use tokio::{io::AsyncReadExt, sync::Notify};

pub use config::{Approval, ServerConfig, Transport};

/// Between a server's name and its tool's in the names the model sees: `tracker__search`.
pub const SEPARATOR: &str = "__";
/// Longest tool name models take.
const MAX_TOOL_NAME: usize = 64;
/// Most tools taken from one server.
const MAX_TOOLS_PER_SERVER: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Largest input schema offered to the model; a tool with a larger one is left out.
const MAX_SCHEMA_BYTES: usize = 16 * 1024;
/// How long starting a server and its handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A connection that lasted this long starts the back-off over.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// A tool of a connected server, as offered to the model.
#[derive(Debug, Clone)]
pub struct Offered {
    pub spec: llm::ToolSpec,
    /// The server's name, and the tool's own name there.
    pub server: String,
    pub tool: String,
}

/// What a call gave: the text for the model, and whether it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutcome {
    pub text: String,
    pub is_error: bool,
    /// `ok`, `error` (the tool said so), `failed` (no answer: disconnected, refused), `timeout` or `denied` (the
    /// person did not approve it).
    pub kind: &'static str,
}

impl CallOutcome {
    fn failed(kind: &'static str, text: impl Into<String>) -> Self {
        Self { text: text.into(), is_error: true, kind }
    }
}

/// Observes each call: server, tool, outcome kind, duration (the metrics).
pub type Observer = Arc<dyn Fn(&str, &str, &'static str, Duration) + Send + Sync>;

/// The MCP servers of this Quire, each kept connected in the background.
pub struct McpHub {
    servers: Vec<Arc<Server>>,
    observer: Option<Observer>,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.servers.iter().map(|s| &s.config.name)).finish()
    }
}

struct Server {
    config: ServerConfig,
    /// The Quire binary that confines a local server (`quire run-limited`).
    program: PathBuf,
    live: RwLock<Option<Live>>,
    /// Told when a call found the connection broken: the supervisor starts over.
    broken: Notify,
}

#[derive(Clone)]
struct Live {
    peer: Peer<RoleClient>,
    tools: Arc<Vec<Offered>>,
}

impl McpHub {
    /// No servers.
    pub fn none() -> Arc<Self> {
        Arc::new(Self { servers: Vec::new(), observer: None })
    }

    /// The servers of `configs`, each connecting in the background from now on; `program` is the Quire binary
    /// local servers are started through.
    pub fn start(configs: Vec<ServerConfig>, program: PathBuf, observer: Option<Observer>) -> Arc<Self> {
        let servers: Vec<Arc<Server>> = configs
            .into_iter()
            .map(|config| {
                Arc::new(Server { config, program: program.clone(), live: RwLock::default(), broken: Notify::new() })
            })
            .collect();
        for server in &servers {
            tokio::spawn(supervise(server.clone()));
        }
        Arc::new(Self { servers, observer })
    }

    /// The configured servers: name, label, whether offered where nobody chose, and whether connected now.
    pub fn servers(&self) -> Vec<(ServerConfig, bool)> {
        self.servers.iter().map(|s| (s.config.clone(), s.live().is_some())).collect()
    }

    /// Whether any server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Whether a server of this name is configured.
    pub fn knows(&self, name: &str) -> bool {
        self.servers.iter().any(|s| s.config.name == name)
    }

    /// The tools to offer in a conversation: those of the servers connected now that `chosen` names (the
    /// conversation's or the person's choice), or that are on by default when nobody chose.
    pub fn offered(&self, chosen: Option<&[String]>) -> Vec<Offered> {
        self.servers
            .iter()
            .filter(|s| chosen.map_or(s.config.on_by_default, |names| names.iter().any(|n| *n == s.config.name)))
            .filter_map(|s| s.live())
            .flat_map(|live| live.tools.iter().cloned().collect::<Vec<_>>())
            .collect()
    }

    /// The server's settings and the tool's own name, for a tool offered as `name`.
    pub fn find<'a>(&self, offered: &'a [Offered], name: &str) -> Option<(&ServerConfig, &'a Offered)> {
        let tool = offered.iter().find(|t| t.spec.name == name)?;
        let server = self.servers.iter().find(|s| s.config.name == tool.server)?;
        Some((&server.config, tool))
    }

    /// Calls `tool` with `arguments`, waiting at most the server's timeout; every failure is a result for the
    /// model, never an error of the turn.
    pub async fn call(&self, tool: &Offered, arguments: &Value) -> CallOutcome {
        let started = Instant::now();
        let outcome = self.call_unobserved(tool, arguments).await;
        if let Some(observe) = &self.observer {
            observe(&tool.server, &tool.tool, outcome.kind, started.elapsed());
        }
        outcome
    }

    /// A call that did not run because the person did not approve it (`why` tells the model), counted as `denied`
    /// with the time it waited.
    pub fn denied(&self, tool: &Offered, why: String, waited: Duration) -> CallOutcome {
        if let Some(observe) = &self.observer {
            observe(&tool.server, &tool.tool, "denied", waited);
        }
        CallOutcome::failed("denied", why)
    }

    async fn call_unobserved(&self, tool: &Offered, arguments: &Value) -> CallOutcome {
        let Some(server) = self.servers.iter().find(|s| s.config.name == tool.server) else {
            return CallOutcome::failed("failed", format!("There is no tool server named {}.", tool.server));
        };
        let label = &server.config.label;
        let Some(live) = server.live() else {
            return CallOutcome::failed("failed", format!("The {label} tools are not available right now."));
        };
        let arguments = match arguments {
            Value::Object(map) => map.clone(),
            Value::Null => serde_json::Map::new(),
            _ => return CallOutcome::failed("error", "The arguments must be a JSON object."),
        };
        let params = CallToolRequestParams::new(tool.tool.clone()).with_arguments(arguments);
        let timeout = server.config.timeout;
        match tokio::time::timeout(timeout, live.peer.call_tool(params)).await {
            Err(_) => CallOutcome::failed(
                "timeout",
                format!("The {label} tool {} did not answer within {} seconds.", tool.tool, timeout.as_secs()),
            ),
            Ok(Err(e)) => {
                tracing::warn!(server = %server.config.name, tool = %tool.tool, error = %e, "an MCP tool call failed");
                if matches!(e, rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)) {
                    server.broken.notify_one();
                }
                let said = match &e {
                    rmcp::ServiceError::McpError(error) => bounded(&error.message, 500),
                    _ => "the tool server did not answer".to_string(),
                };
                CallOutcome::failed("failed", format!("The {label} tool {} failed: {said}.", tool.tool))
            }
            Ok(Ok(result)) => {
                let is_error = result.is_error.unwrap_or(false);
                let text = rendered(&result.content, result.structured_content.as_ref());
                CallOutcome {
                    text: cut(text, server.config.max_result_chars),
                    is_error,
                    kind: if is_error { "error" } else { "ok" },
                }
            }
        }
    }
}

impl Server {
    fn live(&self) -> Option<Live> {
        self.live.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn set_live(&self, live: Option<Live>) {
        *self.live.write().unwrap_or_else(std::sync::PoisonError::into_inner) = live;
    }
}

/// The client side's handler: it only listens for the server's "tools changed".
#[derive(Clone)]
struct Listener {
    changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.changed.notify_one();
        std::future::ready(())
    }
}

/// Keeps one server connected for the life of the process.
async fn supervise(server: Arc<Server>) {
    let name = server.config.name.clone();
    let mut backoff = FIRST_BACKOFF;
    loop {
        let started = Instant::now();
        match connect(&server).await {
            Ok(connection) => {
                tracing::info!(server = %name, "MCP server connected");
                connection.run(&server).await;
                tracing::warn!(server = %name, "MCP server disconnected; starting it again");
            }
            Err(e) => tracing::warn!(server = %name, error = %e, "could not connect to the MCP server"),
        }
        server.set_live(None);
        if started.elapsed() >= HEALTHY_AFTER {
            backoff = FIRST_BACKOFF;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One connection: the running client, the child process of a local server, and the "tools changed" signal.
struct Connection {
    running: RunningService<RoleClient, Listener>,
    child: Option<tokio::process::Child>,
    changed: Arc<Notify>,
}

impl Connection {
    /// Lists the tools, then serves until the server goes away or a call finds it broken; lists again on change.
    async fn run(self, server: &Server) {
        let Connection { running, child, changed } = self;
        let peer = running.peer().clone();
        let mut child = child;
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let exited = async {
            match child.as_mut() {
                Some(child) => {
                    let status = child.wait().await;
                    tracing::warn!(server = %server.config.name, ?status, "MCP server process exited");
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(exited);
        loop {
            match tokio::time::timeout(server.config.timeout, peer.list_all_tools()).await {
                Ok(Ok(tools)) => {
                    let tools = Arc::new(offered_tools(&server.config, tools));
                    tracing::info!(server = %server.config.name, tools = tools.len(), "MCP tools listed");
                    server.set_live(Some(Live { peer: peer.clone(), tools }));
                }
                Ok(Err(e)) => {
                    tracing::warn!(server = %server.config.name, error = %e, "listing MCP tools failed");
                    return;
                }
                Err(_) => {
                    tracing::warn!(server = %server.config.name, "listing MCP tools timed out");
                    return;
                }
            }
            tokio::select! {
                _ = &mut waiting => return,
                () = &mut exited => return,
                () = server.broken.notified() => return,
                // Listed again.
                () = changed.notified() => {}
            }
        }
        // The child (kill_on_drop) and the client go with this frame.
    }
}

async fn connect(server: &Server) -> anyhow::Result<Connection> {
    let changed = Arc::new(Notify::new());
    let listener = Listener { changed: changed.clone() };
    match &server.config.transport {
        Transport::Stdio { program, args, env, memory_mb } => {
            let mut command = tokio::process::Command::new(&server.program);
            command
                .arg("run-limited")
                .arg("--memory-mb")
                .arg(memory_mb.to_string())
                .arg("--")
                .arg(program)
                .args(args)
                // Nothing of Quire's environment (keys, the database's address) reaches the server: its own
                // variables, and PATH to find its interpreter.
                .env_clear()
                .envs(std::env::var_os("PATH").map(|path| ("PATH", path)))
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let mut child = command.spawn()?;
            let (Some(stdout), Some(stdin), stderr) = (child.stdout.take(), child.stdin.take(), child.stderr.take())
            else {
                anyhow::bail!("the server's pipes could not be opened");
            };
            if let Some(stderr) = stderr {
                tokio::spawn(drain_log(server.config.name.clone(), stderr));
            }
            let running = tokio::time::timeout(CONNECT_TIMEOUT, listener.serve((stdout, stdin)))
                .await
                .map_err(|_| anyhow::anyhow!("the server did not finish its handshake in time"))??;
            Ok(Connection { running, child: Some(child), changed })
        }
        Transport::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                custom.insert(
                    axum::http::HeaderName::from_bytes(name.as_bytes())?,
                    axum::http::HeaderValue::from_str(value)?,
                );
            }
            let transport = StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom),
            );
            let running = tokio::time::timeout(CONNECT_TIMEOUT, listener.serve(transport))
                .await
                .map_err(|_| anyhow::anyhow!("the server did not finish its handshake in time"))??;
            Ok(Connection { running, child: None, changed })
        }
    }
}

/// Reads what a local server writes to its standard error, logged (a bounded part of each read) and dropped.
async fn drain_log(server: String, mut stderr: tokio::process::ChildStderr) {
    let mut buffer = vec![0u8; 4096];
    while let Ok(n @ 1..) = stderr.read(&mut buffer).await {
        tracing::debug!(server = %server, said = %String::from_utf8_lossy(&buffer[..n.min(512)]), "MCP server log");
    }
}

/// The tools of a server as offered to models: named `<server>__<tool>` in the characters models accept, with
/// bounded descriptions and schemas; tools whose names collide after that, and the ones past the limit, are
/// left out.
fn offered_tools(config: &ServerConfig, tools: Vec<Tool>) -> Vec<Offered> {
    let mut offered: Vec<Offered> = Vec::new();
    for tool in tools {
        if offered.len() == MAX_TOOLS_PER_SERVER {
            tracing::warn!(server = %config.name, "the MCP server offers more tools than are taken");
            break;
        }
        let clean: String = tool
            .name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect();
        let mut name = format!("{}{SEPARATOR}{clean}", config.name);
        name.truncate(MAX_TOOL_NAME);
        if clean.is_empty() || offered.iter().any(|o| o.spec.name == name) {
            continue;
        }
        let schema = Value::Object((*tool.input_schema).clone());
        if schema.to_string().len() > MAX_SCHEMA_BYTES {
            tracing::warn!(server = %config.name, tool = %tool.name, "an MCP tool's schema is too large; left out");
            continue;
        }
        let said = tool.description.as_deref().unwrap_or_default();
        let description = format!("[{}] {}", config.label, bounded(said, MAX_DESCRIPTION_CHARS));
        offered.push(Offered {
            spec: llm::ToolSpec { name, description, input_schema: schema },
            server: config.name.clone(),
            tool: tool.name.to_string(),
        });
    }
    offered
}

/// A call's content as text: its text blocks, other blocks named, or its structured result when it has no content.
fn rendered(content: &[ContentBlock], structured: Option<&Value>) -> String {
    if content.is_empty() {
        return structured.map(Value::to_string).unwrap_or_default();
    }
    let parts: Vec<String> = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!("[an image ({}) the model is not shown]", image.mime_type),
            ContentBlock::Audio(audio) => format!("[audio ({}) the model is not shown]", audio.mime_type),
            ContentBlock::Resource(resource) => match serde_json::to_value(&resource.resource) {
                Ok(value) => value.get("text").and_then(Value::as_str).map_or_else(
                    || format!("[a resource: {}]", value.get("uri").and_then(Value::as_str).unwrap_or("?")),
                    str::to_string,
                ),
                Err(_) => "[a resource]".to_string(),
            },
            ContentBlock::ResourceLink(link) => format!("[a link: {}]", link.uri),
            _ => "[content the model is not shown]".to_string(),
        })
        .collect();
    parts.join("\n")
}

/// `text` cut at `max` characters, with a note saying so (the model then knows it saw part of it).
fn cut(text: String, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n\n[Cut: the result was {total} characters long; only the first {max} are shown.]")
}

/// At most `max` characters of `text`.
fn bounded(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The body of `quire run-limited`: limits this process (no core files; an address space of `memory_mb` MiB,
/// unless 0), then replaces it with `command`. Returns only when that fails.
pub fn run_limited(memory_mb: u64, command: &[String]) -> std::process::ExitCode {
    use rustix::process::{setrlimit, Resource, Rlimit};
    use std::os::unix::process::CommandExt;
    let mut limits = vec![(Resource::Core, 0)];
    if memory_mb > 0 {
        limits.push((Resource::As, memory_mb.saturating_mul(1024 * 1024)));
    }
    for (resource, value) in limits {
        if let Err(e) = setrlimit(resource, Rlimit { current: Some(value), maximum: Some(value) }) {
            eprintln!("could not set a resource limit: {e}");
            return std::process::ExitCode::from(3);
        }
    }
    let Some((program, args)) = command.split_first() else {
        eprintln!("no program to run");
        return std::process::ExitCode::from(2);
    };
    let error = std::process::Command::new(program).args(args).exec();
    eprintln!("could not start {program}: {error}");
    std::process::ExitCode::from(127)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_results_are_cut_with_a_note() {
        assert_eq!(cut("short".into(), 10), "short");
        let text = cut("é".repeat(30), 10);
        assert!(text.starts_with(&"é".repeat(10)) && text.contains("30 characters") && text.contains("first 10"));
    }
}
