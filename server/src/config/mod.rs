//! Start-up configuration: command-line flags, each also readable from the environment.

mod models;
pub mod private;

use std::{net::SocketAddr, path::PathBuf};

use clap::{Parser, ValueEnum};

pub use llm::ProviderKind;
pub use store::SqliteSync;

use crate::auth::JwtSecret;

/// A parser of the names `names`, each read with `parse`: `--help` lists the names and anything else is refused
/// with them, as clap does for its own enums.
fn one_of<T: Clone + Send + Sync + 'static>(
    names: &'static [&'static str],
    parse: fn(&str) -> Option<T>,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(names).map(move |name| parse(&name).expect("every listed name parses"))
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, with the request's id and span fields, for log collectors.
    Json,
}

/// Where people reach Quire: an `http` or `https` URL without a path, kept as its origin
/// (`scheme://host[:port]`, lower case, the scheme's default port left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    origin: String,
    https: bool,
}

impl PublicUrl {
    /// `scheme://host[:port]`, as browsers write it in the `Origin` header.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether people reach Quire over HTTPS.
    pub fn is_https(&self) -> bool {
        self.https
    }
}

impl std::str::FromStr for PublicUrl {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let url = url::Url::parse(text.trim()).map_err(|e| format!("not a URL: {e}"))?;
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            other => return Err(format!("the scheme must be http or https, not {other}")),
        };
        if url.host().is_none() || !url.username().is_empty() || url.password().is_some() {
            return Err("the URL needs a host and no user name or password".into());
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err("Quire is served at the root of its address: leave out the path".into());
        }
        Ok(Self { origin: url.origin().ascii_serialization(), https })
    }
}

/// A database URL, which may hold a password: `Debug` shows it with the password replaced.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// The URL itself, for connecting. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for DatabaseUrl {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self(text.to_string()))
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match url::Url::parse(&self.0) {
            Ok(mut url) if url.password().is_some() => {
                let _ = url.set_password(Some("redacted"));
                write!(f, "{:?}", url.as_str())
            }
            Ok(_) => write!(f, "{:?}", self.0),
            Err(_) => f.write_str("[unparsed database URL]"),
        }
    }
}

/// Quire: a self-hosted AI chat workspace.
#[derive(Debug, Clone, Parser)]
#[command(name = "quire", version, about)]
pub struct Config {
    /// Address to listen on (cargo-leptos sets LEPTOS_SITE_ADDR).
    #[arg(long, env = "LEPTOS_SITE_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,

    /// Directory for Quire's own files: the SQLite database and generated secrets.
    #[arg(long, env = "QUIRE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Database URL: `sqlite://path/to/file.db` or `postgres://user@host/db`. Default: `sqlite://<data dir>/quire.db`.
    #[arg(long, env = "QUIRE_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<DatabaseUrl>,

    /// When a SQLite commit counts as done: `normal` (in the write-ahead log) or `full` (on the disk).
    #[arg(long, env = "QUIRE_SQLITE_SYNC", value_parser = one_of(&SqliteSync::NAMES, SqliteSync::parse), default_value = "normal")]
    pub sqlite_sync: SqliteSync,

    /// PostgreSQL only: connections kept for rate-limit checks, apart from the pool of every other query, so
    /// that a check finds a warm connection and never queues behind other work (1-64).
    #[arg(long, env = "QUIRE_RATE_LIMIT_CONNECTIONS", default_value_t = 2,
        value_parser = clap::value_parser!(u32).range(1..=64))]
    pub rate_limit_connections: u32,

    /// Model provider.
    #[arg(long, env = "QUIRE_LLM_PROVIDER", value_parser = one_of(&ProviderKind::NAMES, ProviderKind::parse), default_value = "builtin")]
    pub llm_provider: ProviderKind,

    /// Model name sent to the provider (each provider has a default).
    #[arg(long, env = "QUIRE_MODEL")]
    pub model: Option<String>,

    /// A TOML file naming several model providers and the default model (see README, "Models"). Unset: the
    /// single provider of `QUIRE_LLM_PROVIDER` and `QUIRE_MODEL`.
    #[arg(long = "config", env = "QUIRE_CONFIG")]
    pub models_file: Option<PathBuf>,

    /// Pause between tokens of the built-in assistant, in milliseconds.
    #[arg(long, env = "QUIRE_BUILTIN_DELAY_MS", default_value_t = 20)]
    pub builtin_delay_ms: u64,

    /// Token budget of the conversation sent to the model (older turns are left out beyond it).
    #[arg(long, env = "QUIRE_CONTEXT_TOKENS", default_value_t = 24_000)]
    pub context_tokens: usize,

    /// Directory of the built site (wasm, js, css, assets).
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site")]
    pub site_root: String,

    /// Key that signs session tokens (at least 32 characters). Unset: a random key is generated once and kept
    /// in `<data dir>/jwt_secret` (mode 0600). Instances sharing a database must share this key.
    #[arg(long, env = "QUIRE_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<JwtSecret>,

    /// How long a session lasts, in hours.
    #[arg(long, env = "QUIRE_SESSION_HOURS", default_value_t = 168)]
    pub session_hours: u32,

    /// How long a session may go unused before it ends, in hours (the same session lasts at most
    /// `QUIRE_SESSION_HOURS` however often it is used).
    #[arg(long, env = "QUIRE_SESSION_IDLE_HOURS", default_value_t = 24)]
    pub session_idle_hours: u32,

    /// Mark the session cookie `Secure` (set this when Quire is served over HTTPS; an `https` public URL does it
    /// too).
    #[arg(long, env = "QUIRE_COOKIE_SECURE", default_value_t = false)]
    pub cookie_secure: bool,

    /// The address people open Quire at, e.g. `https://quire.example.org`. Its origin is the only one whose pages
    /// may send signed-in requests; over `https` the session cookie becomes `__Host-quire_session` and `Secure`,
    /// and browsers are told to use HTTPS only. Unset: a request's own `Host` header names Quire's origin.
    #[arg(long, env = "QUIRE_PUBLIC_URL")]
    pub public_url: Option<PublicUrl>,

    /// Set by `cargo leptos watch`: pages then carry its live-reload script, and their policy lets it connect to
    /// `reload_port` on the page's host.
    #[arg(long, env = "LEPTOS_WATCH", hide = true)]
    pub leptos_watch: bool,

    /// The port of cargo-leptos's live-reload socket (cargo-leptos sets it); used only under `LEPTOS_WATCH`.
    #[arg(long, env = "LEPTOS_RELOAD_PORT", default_value_t = 3001, hide = true)]
    pub reload_port: u16,

    /// Replace e-mail addresses, phone numbers, IBANs and card numbers in people's messages with placeholders
    /// before they are stored or sent to a model.
    #[arg(long, env = "QUIRE_REDACT_PII", default_value_t = false)]
    pub redact_pii: bool,

    /// Largest accepted import body in MiB (`POST /api/threads/import`): a ChatGPT `conversations.json` of a
    /// long history is far larger than the 1 MiB every other request is held to.
    #[arg(long, env = "QUIRE_MAX_IMPORT_MB", default_value_t = 64)]
    pub max_import_mb: u32,

    /// Attachments one account may keep, in MiB of uploaded files (0 = no limit).
    #[arg(long, env = "QUIRE_USER_STORAGE_MB", default_value_t = 200)]
    pub user_storage_mb: u32,

    /// Who may sign up once the first account (the administrator) exists: `open` (anyone), `invite` (with an
    /// invitation an administrator made) or `closed`. The default until an administrator changes it on the
    /// admin page, which every instance then follows.
    #[arg(long, env = "QUIRE_SIGNUP", value_parser = one_of(&store::SignUpMode::NAMES, store::SignUpMode::parse), default_value = "invite")]
    pub signup: store::SignUpMode,

    /// Tokens (input and output) one person may spend in a UTC day (0 = no budget); an administrator may give
    /// a person a budget of their own. A turn started within the budget finishes.
    #[arg(long, env = "QUIRE_USER_DAILY_TOKENS", default_value_t = 0)]
    pub user_daily_tokens: u64,

    /// Tokens everyone together may spend in a UTC day (0 = no budget).
    #[arg(long, env = "QUIRE_DAILY_TOKENS", default_value_t = 0)]
    pub daily_tokens: u64,

    /// Answers one person may have being written at once, across all their conversations (0 = no cap).
    #[arg(long, env = "QUIRE_USER_CONCURRENT_TURNS", default_value_t = 3)]
    pub user_concurrent_turns: u32,

    /// Answer streams (`text/event-stream` responses) one person may have open at once on this instance
    /// (0 = no cap).
    #[arg(long, env = "QUIRE_USER_OPEN_STREAMS", default_value_t = 12)]
    pub user_open_streams: u32,

    /// Heavy jobs (file extraction, export rendering, imports) running at once; more wait in a bounded queue.
    #[arg(long, env = "QUIRE_HEAVY_WORKERS", default_value_t = 2)]
    pub heavy_workers: usize,

    /// Heavy jobs that may wait for a worker; beyond them a request is refused with 429.
    #[arg(long, env = "QUIRE_HEAVY_QUEUE", default_value_t = 16)]
    pub heavy_queue: usize,

    /// The Quire binary that parses uploaded PDFs in a child process and starts local MCP servers confined
    /// (default: this one).
    #[arg(long, env = "QUIRE_EXTRACT_PROGRAM", hide = true)]
    pub extract_program: Option<PathBuf>,

    /// The MCP servers whose tools models are offered: the providers file's `[[mcp_servers]]` (read at start-up),
    /// or given here directly.
    #[arg(skip)]
    pub mcp_servers: Vec<crate::mcp_tools::ServerConfig>,

    /// Seconds a call of an MCP tool that asks the person first waits for their decision; then it is denied.
    #[arg(long, env = "QUIRE_MCP_APPROVAL_SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub mcp_approval_seconds: u64,

    /// Address of `GET /metrics` (Prometheus text format), e.g. `127.0.0.1:9090`. Unset: no metrics are served.
    /// Keep it off the public address: it names routes and counts of everyone's use.
    #[arg(long, env = "QUIRE_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,

    /// Log format: `text` or `json` (one object a line, with the request id).
    #[arg(long, env = "QUIRE_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,

    /// Seconds Quire takes to stop after SIGTERM: it stops accepting at once, running turns save their answers
    /// so far, open requests may finish; whatever is still open at the deadline is cut off.
    #[arg(long, env = "QUIRE_SHUTDOWN_SECONDS", default_value_t = 10)]
    pub shutdown_seconds: u64,

    /// Seconds an HTTP/1.1 request's head may take to arrive; it also bounds how long a kept-open connection waits
    /// idle for its next request (HTTP/2: with no request open), so keep it above the idle time of a proxy in
    /// front (Caddy's is 120 s).
    #[arg(long, env = "QUIRE_HEADER_TIMEOUT_SECONDS", default_value_t = crate::http::connections::HEAD_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub header_timeout_seconds: u64,

    /// Whether people may sign in (and up) with a password. `false` needs single sign-on (`QUIRE_OIDC_ISSUER`);
    /// then no password route answers.
    #[arg(long, env = "QUIRE_PASSWORD_LOGIN", default_value_t = true, action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new())]
    pub password_login: bool,

    /// Single sign-on through an OpenID Connect provider.
    #[command(flatten)]
    pub oidc: OidcConfig,

    /// Rate limits; `off` disables them all.
    #[command(flatten)]
    pub limits: RateLimitConfig,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What the binary does besides serving.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum Command {
    /// Sets resource limits on itself, then becomes `program` with `args`: how a local MCP server is started.
    /// Not meant to be run by hand.
    #[command(hide = true)]
    RunLimited {
        /// Address space, in MiB (0: no limit).
        #[arg(long, default_value_t = 8192)]
        memory_mb: u64,
        /// The program and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    /// Reads a file on stdin and writes its text to stdout, confined by resource limits. The server runs this
    /// for every uploaded PDF; it is not meant to be run by hand.
    #[command(hide = true)]
    Extract {
        /// The kind of file: `pdf`.
        #[arg(value_parser = ["pdf"])]
        kind: String,
    },
    /// Asks the Quire serving at this configuration's address whether it is ready (`GET /api/ready`); exits 0
    /// when it is. For container health checks, where there is no other HTTP client.
    Probe {
        /// The path to ask.
        #[arg(long, default_value = "/api/ready")]
        path: String,
    },
    /// Administrators, from the command line of the machine Quire runs on.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Writes a brotli and a gzip copy beside every compressible file of the built site, which the server sends
    /// to browsers that accept them. Part of every site build (`scripts/run`, `scripts/test`).
    #[command(hide = true)]
    Precompress {
        /// The site's root directory.
        #[arg(default_value = "target/site")]
        dir: PathBuf,
    },
}

/// `quire admin ...`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum AdminCommand {
    /// Creates an administrator account in the configured database, whatever the sign-up mode (for scripted
    /// installs; every setup link then stops working). The password is read from `--password-file`, else from
    /// `QUIRE_ADMIN_PASSWORD`, else from the first line of standard input: never from the command line.
    Create {
        /// The account's e-mail address.
        #[arg(long)]
        email: String,
        /// The name shown for the account; the part of the address before `@` when left out.
        #[arg(long)]
        display_name: Option<String>,
        /// A file whose first line is the password.
        #[arg(long)]
        password_file: Option<PathBuf>,
    },
}

/// The environment variable `quire admin create` reads the password from when no file is named.
pub const ADMIN_PASSWORD_ENV: &str = "QUIRE_ADMIN_PASSWORD";

/// Single sign-on through an OpenID Connect provider (`auth/oidc.rs`); nothing set, none.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct OidcConfig {
    /// The provider's issuer URL, e.g. `https://login.example.org/realms/acme`: `https`, or `http` on this machine
    /// only. Its metadata is read from `<issuer>/.well-known/openid-configuration`. Needs `QUIRE_PUBLIC_URL`: the
    /// provider sends people back to `<QUIRE_PUBLIC_URL>/api/auth/oidc/callback`.
    #[arg(long = "oidc-issuer", env = "QUIRE_OIDC_ISSUER")]
    pub issuer: Option<String>,
    /// The client id Quire is registered under at the provider.
    #[arg(long = "oidc-client-id", env = "QUIRE_OIDC_CLIENT_ID")]
    pub client_id: Option<String>,
    /// The client secret (a confidential client); unset, a public client with PKCE only.
    #[arg(long = "oidc-client-secret", env = "QUIRE_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub client_secret: Option<Secret>,
    /// A file whose first line is the client secret, in place of `QUIRE_OIDC_CLIENT_SECRET`.
    #[arg(long = "oidc-client-secret-file", env = "QUIRE_OIDC_CLIENT_SECRET_FILE")]
    pub client_secret_file: Option<PathBuf>,
    /// The scopes asked for, besides `openid`.
    #[arg(long = "oidc-scopes", env = "QUIRE_OIDC_SCOPES", default_value = "openid email profile")]
    pub scopes: String,
    /// The sign-in page's button says "Sign in with <label>".
    #[arg(long = "oidc-label", env = "QUIRE_OIDC_LABEL", default_value = "single sign-on")]
    pub label: String,
    /// Make an account at the first sign-in of a verified e-mail address whatever the sign-up mode (otherwise
    /// only `open` makes one).
    #[arg(long = "oidc-auto-create", env = "QUIRE_OIDC_AUTO_CREATE", default_value_t = false, action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true")]
    pub auto_create: bool,
    /// Take the provider's e-mail addresses as verified when its ID token does not say (`email_verified`
    /// missing, as with Entra ID): only for a provider whose addresses the organisation itself hands out.
    #[arg(long = "oidc-trust-email", env = "QUIRE_OIDC_TRUST_EMAIL", default_value_t = false, action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true")]
    pub trust_email: bool,
    /// Groups whose members administer Quire, comma-separated; checked at each sign-in through the provider.
    /// Unset: roles are set on the admin page only.
    #[arg(long = "oidc-admin-groups", env = "QUIRE_OIDC_ADMIN_GROUPS", value_delimiter = ',')]
    pub admin_groups: Vec<String>,
    /// The claim that lists a person's groups (a dotted name reaches into objects: `realm_access.roles`).
    #[arg(long = "oidc-groups-claim", env = "QUIRE_OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub groups_claim: String,
}

impl OidcConfig {
    /// The client secret, from the setting or the first line of its file; an error names the setting.
    pub fn client_secret(&self) -> anyhow::Result<Option<String>> {
        match (&self.client_secret, &self.client_secret_file) {
            (Some(_), Some(_)) => {
                anyhow::bail!("set QUIRE_OIDC_CLIENT_SECRET or QUIRE_OIDC_CLIENT_SECRET_FILE, not both")
            }
            (Some(secret), None) => Ok(Some(secret.expose().to_owned())),
            (None, Some(file)) => {
                let text = std::fs::read_to_string(file).map_err(|e| {
                    anyhow::anyhow!("QUIRE_OIDC_CLIENT_SECRET_FILE {} cannot be read: {e}", file.display())
                })?;
                let secret = text.lines().next().unwrap_or_default().trim();
                if secret.is_empty() {
                    anyhow::bail!("QUIRE_OIDC_CLIENT_SECRET_FILE {} is empty", file.display());
                }
                Ok(Some(secret.to_owned()))
            }
            (None, None) => Ok(None),
        }
    }
}

/// A secret setting: `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret itself. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self(text.to_string()))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Requests allowed per minute; 0 turns one limit off.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct RateLimitConfig {
    /// `on` or `off`: whether any rate limit applies.
    #[arg(long = "rate-limits", env = "QUIRE_RATE_LIMITS", default_value = "on", value_parser = ["on", "off"])]
    pub enabled: String,
    /// Requests per minute and user, over the whole API.
    #[arg(long = "rate-limit-general", env = "QUIRE_RATE_LIMIT_GENERAL", default_value_t = 100)]
    pub general: u32,
    /// Searches per minute and user.
    #[arg(long = "rate-limit-search", env = "QUIRE_RATE_LIMIT_SEARCH", default_value_t = 10)]
    pub search: u32,
    /// Exports and imports per minute and user.
    #[arg(long = "rate-limit-export", env = "QUIRE_RATE_LIMIT_EXPORT", default_value_t = 5)]
    pub export: u32,
    /// Chat turns per minute and user.
    #[arg(long = "rate-limit-chat", env = "QUIRE_RATE_LIMIT_CHAT", default_value_t = 30)]
    pub chat: u32,
    /// File uploads per minute and user.
    #[arg(long = "rate-limit-upload", env = "QUIRE_RATE_LIMIT_UPLOAD", default_value_t = 20)]
    pub upload: u32,
    /// Sign-in and sign-up attempts per minute and client IP address.
    #[arg(long = "rate-limit-auth", env = "QUIRE_RATE_LIMIT_AUTH", default_value_t = 10)]
    pub auth: u32,
}

impl RateLimitConfig {
    /// Limits high enough that no test meets them (the rate-limit tests set their own).
    pub fn generous() -> Self {
        let n = 100_000;
        Self { enabled: "on".into(), general: n, search: n, export: n, chat: n, upload: n, auth: n }
    }
}

impl Config {
    /// What the store needs of the configuration, besides the database URL.
    pub fn store(&self) -> store::Settings {
        store::Settings { sqlite_sync: self.sqlite_sync, limit_connections: self.rate_limit_connections }
    }

    /// What the model layer needs of the configuration, with the providers file read and checked and the
    /// providers' addresses and keys taken from the environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
    /// `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, `QUIRE_LLM_CA_FILE`). A bad providers file is an error that names
    /// its line or provider.
    pub fn llm(&self) -> anyhow::Result<llm::Settings> {
        let models_file = self.models_file.as_deref().map(models::load).transpose().map_err(anyhow::Error::msg)?;
        Ok(llm::Settings {
            provider: self.llm_provider,
            model: self.model.clone(),
            models_file,
            builtin_delay: std::time::Duration::from_millis(self.builtin_delay_ms),
            ca_file: std::env::var_os("QUIRE_LLM_CA_FILE").filter(|p| !p.is_empty()).map(PathBuf::from),
            openai: models::remote("OPENAI_BASE_URL", "OPENAI_API_KEY"),
            anthropic: models::remote("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
        })
    }

    /// The port of the live-reload socket pages may connect to: only while cargo-leptos watches the sources.
    pub fn live_reload_port(&self) -> Option<u16> {
        self.leptos_watch.then_some(self.reload_port)
    }

    /// Whether the session cookie is marked `Secure`: when asked, and always under an `https` public URL.
    pub fn secure_cookies(&self) -> bool {
        self.cookie_secure || self.public_url.as_ref().is_some_and(PublicUrl::is_https)
    }

    /// How long a session may go unused.
    pub fn session_idle(&self) -> chrono::Duration {
        chrono::Duration::hours(i64::from(self.session_idle_hours.max(1)))
    }

    /// The session cookie's name: `__Host-` prefixed under an `https` public URL.
    pub fn session_cookie_name(&self) -> &'static str {
        if self.public_url.as_ref().is_some_and(PublicUrl::is_https) {
            crate::auth::HOST_SESSION_COOKIE
        } else {
            crate::auth::SESSION_COOKIE
        }
    }

    /// Largest accepted import body in bytes.
    pub fn max_import_bytes(&self) -> usize {
        usize::try_from(self.max_import_mb).unwrap_or(usize::MAX).saturating_mul(1024 * 1024)
    }

    /// The attachment storage allowed per account in bytes; `None` for no limit.
    pub fn user_storage_bytes(&self) -> Option<i64> {
        (self.user_storage_mb > 0).then(|| i64::from(self.user_storage_mb) * 1024 * 1024)
    }

    /// Daily token budgets and the cap on a person's running turns.
    pub fn turn_limits(&self) -> store::TurnLimits {
        store::TurnLimits {
            user_daily_tokens: self.user_daily_tokens,
            daily_tokens: self.daily_tokens,
            concurrent_turns: self.user_concurrent_turns,
            turn_tokens: 0,
        }
    }

    /// The database URL in force.
    pub fn database_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.expose().to_string(),
            None => format!("sqlite://{}", self.data_dir.join("quire.db").display()),
        }
    }

    /// A configuration for tests: a data directory, the built-in assistant without delay.
    pub fn for_tests(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: data_dir.into(),
            database_url: None,
            sqlite_sync: SqliteSync::Normal,
            rate_limit_connections: 2,
            llm_provider: ProviderKind::Builtin,
            model: None,
            models_file: None,
            builtin_delay_ms: 0,
            context_tokens: 24_000,
            site_root: "target/site".into(),
            jwt_secret: None,
            session_hours: 168,
            session_idle_hours: 24,
            cookie_secure: false,
            public_url: None,
            leptos_watch: false,
            reload_port: 3001,
            redact_pii: false,
            max_import_mb: 64,
            user_storage_mb: 200,
            // Tests sign up many people; those of sign-up modes set theirs.
            signup: store::SignUpMode::Open,
            // Tests that need budgets or caps set them; others run many turns of one person at once.
            user_daily_tokens: 0,
            daily_tokens: 0,
            user_concurrent_turns: 0,
            user_open_streams: 0,
            heavy_workers: 2,
            heavy_queue: 16,
            extract_program: None,
            mcp_servers: Vec::new(),
            mcp_approval_seconds: 300,
            metrics_addr: None,
            log_format: LogFormat::Text,
            shutdown_seconds: 10,
            header_timeout_seconds: crate::http::connections::HEAD_TIMEOUT.as_secs(),
            password_login: true,
            oidc: OidcConfig {
                scopes: "openid email profile".into(),
                label: "single sign-on".into(),
                groups_claim: "groups".into(),
                ..OidcConfig::default()
            },
            limits: RateLimitConfig::generous(),
            command: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_data_dir() {
        let config = Config::try_parse_from(["quire", "--data-dir", "/tmp/q"]).unwrap();
        assert_eq!(config.database_url(), "sqlite:///tmp/q/quire.db");
        assert_eq!(config.llm_provider, ProviderKind::Builtin);
        assert_eq!(config.sqlite_sync, SqliteSync::Normal);
        assert_eq!(config.signup, store::SignUpMode::Invite, "sign-up is by invitation by default");
        let full = Config::try_parse_from(["quire", "--sqlite-sync", "full"]).unwrap();
        assert_eq!(full.sqlite_sync, SqliteSync::Full);
        assert!(Config::try_parse_from(["quire", "--sqlite-sync", "sometimes"]).is_err());
        assert_eq!(config.rate_limit_connections, 2, "rate-limit checks keep two connections of their own");
        assert!(Config::try_parse_from(["quire", "--rate-limit-connections", "0"]).is_err());
        assert_eq!((config.metrics_addr, config.log_format), (None, LogFormat::Text), "metrics are off by default");
        let json =
            Config::try_parse_from(["quire", "--log-format", "json", "--metrics-addr", "127.0.0.1:9090"]).unwrap();
        assert_eq!(json.log_format, LogFormat::Json);
        assert_eq!(json.metrics_addr, Some(SocketAddr::from(([127, 0, 0, 1], 9090))));
    }

    #[test]
    fn the_database_password_never_shows() {
        let url = "postgres://quire:s3cret-pw@db.internal:5432/quire";
        let config = Config::try_parse_from(["quire", "--database-url", url]).unwrap();
        assert_eq!(config.database_url(), url);
        let debug = format!("{config:?}");
        assert!(!debug.contains("s3cret-pw") && debug.contains("db.internal"), "{debug}");
        // `--help` never prints the environment's value of secrets.
        let command = <Config as clap::CommandFactory>::command();
        for secret in ["database_url", "jwt_secret", "client_secret"] {
            let arg = command.get_arguments().find(|a| a.get_id() == secret).unwrap();
            assert!(arg.is_hide_env_values_set(), "{secret}");
        }
    }

    #[test]
    fn public_urls_are_origins() {
        let url: PublicUrl = "HTTPS://Quire.Example.org:443/".parse().unwrap();
        assert_eq!((url.origin(), url.is_https()), ("https://quire.example.org", true));
        let url: PublicUrl = "http://127.0.0.1:3000".parse().unwrap();
        assert_eq!((url.origin(), url.is_https()), ("http://127.0.0.1:3000", false));
        for bad in ["ftp://example.org", "https://example.org/quire", "https://user:pw@example.org", "example.org"] {
            assert!(bad.parse::<PublicUrl>().is_err(), "{bad}");
        }
    }

    #[test]
    fn help_documents_the_environment() {
        let help = <Config as clap::CommandFactory>::command().render_long_help().to_string();
        for var in [
            "LEPTOS_SITE_ADDR",
            "QUIRE_DATA_DIR",
            "QUIRE_DATABASE_URL",
            "QUIRE_SQLITE_SYNC",
            "QUIRE_LLM_PROVIDER",
            "QUIRE_CONFIG",
            "QUIRE_JWT_SECRET",
            "QUIRE_PUBLIC_URL",
            "QUIRE_SESSION_IDLE_HOURS",
            "QUIRE_REDACT_PII",
            "QUIRE_RATE_LIMITS",
            "QUIRE_RATE_LIMIT_CHAT",
            "QUIRE_RATE_LIMIT_UPLOAD",
            "QUIRE_RATE_LIMIT_CONNECTIONS",
            "QUIRE_USER_STORAGE_MB",
            "QUIRE_SIGNUP",
            "QUIRE_USER_DAILY_TOKENS",
            "QUIRE_DAILY_TOKENS",
            "QUIRE_USER_CONCURRENT_TURNS",
            "QUIRE_USER_OPEN_STREAMS",
            "QUIRE_HEAVY_WORKERS",
            "QUIRE_METRICS_ADDR",
            "QUIRE_LOG_FORMAT",
            "QUIRE_SHUTDOWN_SECONDS",
            "QUIRE_PASSWORD_LOGIN",
            "QUIRE_OIDC_ISSUER",
            "QUIRE_OIDC_CLIENT_ID",
            "QUIRE_OIDC_CLIENT_SECRET",
            "QUIRE_OIDC_CLIENT_SECRET_FILE",
            "QUIRE_OIDC_SCOPES",
            "QUIRE_OIDC_LABEL",
            "QUIRE_OIDC_AUTO_CREATE",
            "QUIRE_OIDC_ADMIN_GROUPS",
            "QUIRE_OIDC_GROUPS_CLAIM",
            "QUIRE_OIDC_TRUST_EMAIL",
        ] {
            assert!(help.contains(var), "{var} missing from --help");
        }
    }
}
