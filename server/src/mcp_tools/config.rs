//! The MCP servers an administrator lists in the providers file (`QUIRE_CONFIG`), as `[[mcp_servers]]` tables:
//!
//! ```toml
//! [[mcp_servers]]
//! name = "tracker"                       # a-z, 0-9 and -: its tools are offered as tracker__<tool>
//! command = "node"                       # a local server, spoken to over stdio...
//! args = ["/opt/tracker-mcp/index.js"]
//! env = { TRACKER_TOKEN = { env = "TRACKER_TOKEN" }, MODE = "read-only" }
//! # url = "https://mcp.example.com/mcp" # ...or a streamable HTTP one
//! # headers = { Authorization = { file = "/run/secrets/tracker" } }
//! approve = false                        # ask the person before every call of its tools
//! approve_tools = ["delete_issue"]       # or before these only
//! on_by_default = true                   # offered in conversations that did not choose
//! timeout_seconds = 30                   # per call
//! max_result_chars = 20000               # longer results are cut, with a note to the model
//! memory_mb = 4096                       # a local server's address-space limit (0: none)
//! ```
//!
//! Anything wrong stops Quire at start-up with a message naming the server.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use serde::Deserialize;

/// Most MCP servers one Quire uses.
const MAX_SERVERS: usize = 16;
/// Longest server name: with `__` and a tool's name it must fit the 64 characters models allow for a tool.
const MAX_NAME_CHARS: usize = 24;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_TIMEOUT_SECONDS: u64 = 600;
const DEFAULT_RESULT_CHARS: usize = 20_000;
const MAX_RESULT_CHARS: usize = 200_000;
/// A local server's address space: Node reserves several gigabytes of it at start, so the default is generous.
const DEFAULT_MEMORY_MB: u64 = 8192;

/// A setting's value: written out, or read from an environment variable or a file at start-up.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Secret {
    Value(String),
    Env { env: String },
    File { file: PathBuf },
}

/// One `[[mcp_servers]]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, Secret>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, Secret>,
    #[serde(default)]
    approve: bool,
    #[serde(default)]
    approve_tools: Vec<String>,
    #[serde(default = "on")]
    on_by_default: bool,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    #[serde(default)]
    max_result_chars: Option<usize>,
    #[serde(default)]
    memory_mb: Option<u64>,
}

fn on() -> bool {
    true
}

/// How Quire reaches a server.
#[derive(Clone)]
pub enum Transport {
    /// A child process spoken to over its standard input and output, with only these variables (and `PATH`).
    Stdio { program: String, args: Vec<String>, env: Vec<(String, String)>, memory_mb: u64 },
    /// The protocol's streamable HTTP at `url`, with these headers on every request.
    Http { url: String, headers: Vec<(String, String)> },
}

impl std::fmt::Debug for Transport {
    /// Without the values of variables and headers: they hold keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Transport::Stdio { program, args, env, .. } => f
                .debug_struct("Stdio")
                .field("program", program)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .finish_non_exhaustive(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers", &headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// Which of a server's tools ask the person before each call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    Never,
    Always,
    Tools(Vec<String>),
}

impl Approval {
    pub fn asks_for(&self, tool: &str) -> bool {
        match self {
            Approval::Never => false,
            Approval::Always => true,
            Approval::Tools(tools) => tools.iter().any(|t| t == tool),
        }
    }
}

/// One MCP server, checked, its secrets read.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub name: String,
    /// What people see (the name when none is given).
    pub label: String,
    pub transport: Transport,
    pub approval: Approval,
    pub on_by_default: bool,
    pub timeout: Duration,
    pub max_result_chars: usize,
}

/// Checks the `[[mcp_servers]]` tables of the providers file; `env` reads environment variables.
pub fn parse(tables: &[toml::Table], env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<ServerConfig>, String> {
    if tables.len() > MAX_SERVERS {
        return Err(format!("at most {MAX_SERVERS} mcp_servers"));
    }
    let mut servers: Vec<ServerConfig> = Vec::with_capacity(tables.len());
    for table in tables {
        let entry: Entry = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e| format!("mcp_servers: {}", e.to_string().trim_end()))?;
        let name = entry.name.clone();
        let valid = !name.is_empty()
            && name.chars().count() <= MAX_NAME_CHARS
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid {
            return Err(format!("mcp server name {name:?}: use 1 to {MAX_NAME_CHARS} of a-z, 0-9 and -"));
        }
        if servers.iter().any(|s| s.name == name) {
            return Err(format!("mcp server name {name:?} is used twice"));
        }
        let read = |what: &str, key: &str, secret: &Secret| -> Result<String, String> {
            match secret {
                Secret::Value(value) => Ok(value.clone()),
                Secret::Env { env: var } => {
                    env(var).ok_or_else(|| format!("mcp server {name}: {what} {key}: the variable {var} is not set"))
                }
                Secret::File { file } => std::fs::read_to_string(file)
                    .map(|text| text.trim_end().to_string())
                    .map_err(|e| format!("mcp server {name}: {what} {key}: {}: {e}", file.display())),
            }
        };
        let transport = match (&entry.command, &entry.url) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(format!("mcp server {name}: give either command (a local server) or url"));
            }
            (Some(program), None) => {
                if !entry.headers.is_empty() {
                    return Err(format!("mcp server {name}: headers are for url servers; a command takes env"));
                }
                let mut vars = Vec::new();
                for (key, secret) in &entry.env {
                    vars.push((key.clone(), read("env", key, secret)?));
                }
                let memory_mb = entry.memory_mb.unwrap_or(DEFAULT_MEMORY_MB);
                Transport::Stdio { program: program.clone(), args: entry.args.clone(), env: vars, memory_mb }
            }
            (None, Some(url)) => {
                if !entry.env.is_empty() || !entry.args.is_empty() || entry.memory_mb.is_some() {
                    return Err(format!("mcp server {name}: args, env and memory_mb are for command servers"));
                }
                let parsed = url::Url::parse(url).map_err(|e| format!("mcp server {name}: url: {e}"))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(format!("mcp server {name}: url must be http or https"));
                }
                let mut headers = Vec::new();
                for (key, secret) in &entry.headers {
                    let value = read("header", key, secret)?;
                    if axum::http::HeaderName::from_bytes(key.as_bytes()).is_err()
                        || axum::http::HeaderValue::from_str(&value).is_err()
                    {
                        return Err(format!("mcp server {name}: header {key} is not a valid header"));
                    }
                    headers.push((key.clone(), value));
                }
                Transport::Http { url: url.clone(), headers }
            }
        };
        let timeout = match entry.timeout_seconds {
            None => DEFAULT_TIMEOUT,
            Some(seconds @ 1..=MAX_TIMEOUT_SECONDS) => Duration::from_secs(seconds),
            Some(_) => return Err(format!("mcp server {name}: timeout_seconds is 1 to {MAX_TIMEOUT_SECONDS}")),
        };
        let max_result_chars = match entry.max_result_chars {
            None => DEFAULT_RESULT_CHARS,
            Some(chars @ 100..=MAX_RESULT_CHARS) => chars,
            Some(_) => return Err(format!("mcp server {name}: max_result_chars is 100 to {MAX_RESULT_CHARS}")),
        };
        let approval = match (entry.approve, entry.approve_tools.is_empty()) {
            (true, _) => Approval::Always,
            (false, true) => Approval::Never,
            (false, false) => Approval::Tools(entry.approve_tools.clone()),
        };
        let label = entry.label.clone().filter(|l| !l.trim().is_empty()).unwrap_or_else(|| name.clone());
        servers.push(ServerConfig {
            name,
            label,
            transport,
            approval,
            on_by_default: entry.on_by_default,
            timeout,
            max_result_chars,
        });
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(text: &str) -> Vec<toml::Table> {
        let file: toml::Table = toml::from_str(text).unwrap();
        file["mcp_servers"].as_array().unwrap().iter().map(|v| v.as_table().unwrap().clone()).collect()
    }

    fn error(text: &str) -> String {
        parse(&tables(text), &|_| None).expect_err(text)
    }

    #[test]
    fn servers_are_checked_and_their_secrets_read() {
        let good = r#"
            [[mcp_servers]]
            name = "tracker"
            command = "node"
            args = ["server.js"]
            env = { TOKEN = { env = "TRACKER_TOKEN" }, MODE = "read-only" }
            approve_tools = ["delete_issue"]
            [[mcp_servers]]
            name = "wiki"
            url = "https://wiki.example.com/mcp"
            headers = { Authorization = { env = "WIKI_AUTH" } }
            approve = true
            on_by_default = false
            timeout_seconds = 5
        "#;
        let env = |var: &str| match var {
            "TRACKER_TOKEN" => Some("t-secret".to_string()),
            "WIKI_AUTH" => Some("Bearer w-secret".to_string()),
            _ => None,
        };
        let servers = parse(&tables(good), &env).unwrap();
        assert_eq!(servers.len(), 2);
        let Transport::Stdio { env: vars, .. } = &servers[0].transport else { panic!() };
        assert!(
            vars.contains(&("TOKEN".into(), "t-secret".into())) && vars.contains(&("MODE".into(), "read-only".into()))
        );
        assert!(servers[0].approval.asks_for("delete_issue") && !servers[0].approval.asks_for("list_issues"));
        assert!(servers[1].approval.asks_for("anything") && !servers[1].on_by_default);
        assert_eq!(servers[1].timeout, Duration::from_secs(5));
        let printed = format!("{servers:?}");
        assert!(!printed.contains("t-secret") && !printed.contains("w-secret"), "{printed}");
    }

    #[test]
    fn what_cannot_work_is_refused_with_the_servers_name() {
        assert!(error("[[mcp_servers]]\nname = \"a\"\n").contains("either command"));
        assert!(error("[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h\"\n").contains("either"));
        assert!(error("[[mcp_servers]]\nname = \"A b\"\ncommand = \"x\"\n").contains("a-z"));
        let twice = "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp_servers]]\nname = \"a\"\ncommand = \"y\"\n";
        assert!(error(twice).contains("used twice"));
        assert!(error("[[mcp_servers]]\nname = \"a\"\nurl = \"ftp://h\"\n").contains("http or https"));
        let unset = "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nenv = { K = { env = \"NOPE\" } }\n";
        assert!(error(unset).contains("NOPE"));
        assert!(error("[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\ncolour = 1\n").contains("colour"));
        assert!(error("[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\ntimeout_seconds = 0\n").contains("timeout"));
    }
}
