//! The log: human-readable lines, or one JSON object a line for a log collector (`QUIRE_LOG_FORMAT=json`).
//! Every line written while a request is answered carries the request's span, with its `request_id`.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// What is logged unless `RUST_LOG` says otherwise. The storage layer's spans (one per store call, several per chat
/// turn) are made only when asked for (`RUST_LOG=info` or `quire::store=info`): each costs an allocation and the
/// formatting of its fields on every call, and the request's own span already names what a log line belongs to.
/// The storage layer's warnings and errors are logged as before.
const DEFAULT_FILTER: &str = "info,quire::store=warn,sqlx=warn,tower_http=info";

/// Installs the process's log subscriber.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colours only for a person at a terminal, never into a file or a container's log.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        // The current span's fields and the whole span list, so a collector can filter by `request_id`.
        LogFormat::Json => builder.json().with_current_span(true).with_span_list(true).init(),
    }
}
