//! The log: human-readable lines, or one JSON object a line for a log collector (`QUIRE_LOG_FORMAT=json`).
//! Every line written while a request is answered carries the request's span, with its `request_id`.
//!
//! No secret of a link reaches the log, at any level and from any crate: every line written has the values of
//! `token`, `invite`, `code`, `state` and `setup` parameters, the whole query of the sign-up and password reset
//! pages, and a share link's token (its path) replaced by [`REDACTED`] (see [`redact`]). The one exception is the
//! line that prints the setup link for the operator ([`SETUP_LINK_TARGET`]).

use std::{borrow::Cow, io::Write, sync::LazyLock};

use regex::Regex;
use tracing_subscriber::{fmt::MakeWriter, EnvFilter};

pub use crate::auth::setup::SETUP_LINK_TARGET;
use crate::config::LogFormat;

/// What is logged unless `RUST_LOG` says otherwise. The storage layer's spans (one per store call, several per chat
/// turn) are made only when asked for (`RUST_LOG=info` or `quire::store=info`): each costs an allocation and the
/// formatting of its fields on every call, and the request's own span already names what a log line belongs to.
/// The storage layer's warnings and errors are logged as before.
const DEFAULT_FILTER: &str = "info,quire::store=warn,sqlx=warn,tower_http=info";

/// What a secret in a logged URL is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Secrets in links, each as a pattern whose first group is kept and whose rest is replaced. A value runs to the
/// end of its URL (whitespace, `#`, or the end of a quoted or JSON-escaped text: `"`, `'`, `\`) or to the next
/// parameter (`&`; once percent-encoded inside another parameter, `%26` or `&`).
static SECRETS: LazyLock<[Regex; 5]> = LazyLock::new(|| {
    let names = "(?:token|invite|code|state|setup)";
    let encoded_value = r#"(?:[^&\s"'\\#%]|%(?:[013-9A-Fa-f][0-9A-Fa-f]|2[0-57-9A-Fa-f]))*"#;
    [
        // The whole query of the pages where every parameter is a secret: sign-up (invitations, setup links)
        // and password reset.
        r#"(?i)(/(?:signup|reset-password)\?)[^\s"'\\#]*"#.to_string(),
        r#"(?i)((?:/|%2F)(?:signup|reset-password)%3F)[^&\s"'\\#]*"#.to_string(),
        // A parameter so named in any URL, and percent-encoded inside another's value (`redirect=`).
        format!(r#"(?i)([?&;]{names}=)[^&\s"'\\#]*"#),
        format!(r"(?i)((?:%3F|%26|%3B){names}%3D){encoded_value}"),
        // A share link's token, which is its path: the page and its JSON.
        r"((?:^|[\s\x22'=])/(?:s|api/shared)/)[A-Za-z0-9_-]+".to_string(),
    ]
    .map(|pattern| Regex::new(&pattern).expect("valid pattern"))
});

/// `text` with the secrets of the links in it replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(text);
    for secret in SECRETS.iter() {
        let redacted = match secret.replace_all(&text, format!("${{1}}{REDACTED}")) {
            Cow::Owned(redacted) => Some(redacted),
            Cow::Borrowed(_) => None,
        };
        if let Some(redacted) = redacted {
            text = Cow::Owned(redacted);
        }
    }
    text
}

/// A setup link's path and query, as [`SETUP_LINK_TARGET`]'s line prints it.
static SETUP_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"/signup\?setup=[A-Za-z0-9_-]+").expect("valid pattern"));

/// `text` redacted as [`redact`] does, but for the setup links in it.
fn redact_but_setup_links(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for link in SETUP_LINK.find_iter(text) {
        out.push_str(&redact(&text[from..link.start()]));
        out.push_str(link.as_str());
        from = link.end();
    }
    out.push_str(&redact(&text[from..]));
    out
}

/// The span of one request, as logged: its method, its URI without secrets (see [`redact`]) and its id.
pub fn request_span(request: &axum::extract::Request) -> tracing::Span {
    let id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let uri = request.uri().to_string();
    tracing::info_span!("request", method = %request.method(), uri = %redact(&uri), request_id = id)
}

/// Writes log lines through `M` with [`redact`] applied to each; the setup link's line keeps its link.
#[derive(Debug, Clone)]
pub struct Redacting<M>(pub M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Redacting<M> {
    type Writer = RedactingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter { inner: self.0.make_writer(), line: Vec::new(), redacts: true }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        let redacts = meta.target() != SETUP_LINK_TARGET;
        RedactingWriter { inner: self.0.make_writer_for(meta), line: Vec::new(), redacts }
    }
}

/// One log line on its way out: gathered whole (a secret may not be split between two writes), then redacted
/// and written when flushed or dropped.
pub struct RedactingWriter<W: Write> {
    inner: W,
    line: Vec<u8>,
    redacts: bool,
}

impl<W: Write> RedactingWriter<W> {
    fn write_line(&mut self) -> std::io::Result<()> {
        if self.line.is_empty() {
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        let text = String::from_utf8_lossy(&line);
        if self.redacts {
            self.inner.write_all(redact(&text).as_bytes())
        } else {
            // The spans the line is written in (none at start) are redacted all the same.
            self.inner.write_all(redact_but_setup_links(&text).as_bytes())
        }
    }
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.write_line()?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        let _ = self.write_line();
    }
}

/// Installs the process's log subscriber.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colours only for a person at a terminal, never into a file or a container's log.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(Redacting(std::io::stdout));
    match format {
        LogFormat::Text => builder.init(),
        // The current span's fields and the whole span list, so a collector can filter by `request_id`.
        LogFormat::Json => builder.json().with_current_span(true).with_span_list(true).init(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_of_links_are_redacted_wherever_they_are() {
        let cases = [
            ("GET /signup?invite=abc-DEF_123 HTTP/1.1", "GET /signup?[redacted] HTTP/1.1"),
            ("uri=/reset-password?token=s3cret&x=1 request_id=7", "uri=/reset-password?[redacted] request_id=7"),
            (r#"{"uri":"/signup?setup=abc","request_id":"7"}"#, r#"{"uri":"/signup?[redacted]","request_id":"7"}"#),
            ("/callback?state=xyz&code=42&lang=en", "/callback?state=[redacted]&code=[redacted]&lang=en"),
            ("/api/x?page=2&TOKEN=abc#top", "/api/x?page=2&TOKEN=[redacted]#top"),
            ("/signin?next=%2Fsignup%3Finvite%3Dabc", "/signin?next=%2Fsignup%3F[redacted]"),
            ("/signin?next=%2Fx%3Fcode%3Dabc%26b%3D1", "/signin?next=%2Fx%3Fcode%3D[redacted]%26b%3D1"),
            ("/a?token=p%2Fq%3Dr%26s&b=1", "/a?token=[redacted]&b=1"),
            ("GET /s/AbC-12_x HTTP/1.1", "GET /s/[redacted] HTTP/1.1"),
            (r#"{"uri":"/api/shared/AbC-12_x"}"#, r#"{"uri":"/api/shared/[redacted]"}"#),
            ("uri=/api/shares/AbC request_id=7", "uri=/api/shares/AbC request_id=7"),
            (
                "/signin?next=%2Freset-password%3Ftoken%3Dabc&lang=en",
                "/signin?next=%2Freset-password%3F[redacted]&lang=en",
            ),
            ("http://127.0.0.1:3000/signup", "http://127.0.0.1:3000/signup"),
        ];
        for (logged, expected) in cases {
            assert_eq!(redact(logged), expected, "{logged}");
        }
        // Fields of a log line that happen to be named so are not parameters of a URL.
        for kept in ["code=invite_required state=running", "access_token_count=3 /threads?mode=invite"] {
            assert_eq!(redact(kept), kept);
        }
    }

    proptest::proptest! {
        #[test]
        fn no_secret_value_survives(
            name in "(?i)(token|invite|code|state|setup)",
            value in "[A-Za-z0-9_%=/.~+-]{1,40}",
            path in "/[a-z]{1,8}",
            before in "([a-z]{1,5}=[a-z0-9]{0,5}&){0,2}",
        ) {
            proptest::prop_assume!(path != "/signup");
            let value = format!("Z{value}");
            let url = format!("{path}?{before}{name}={value}&after=1");
            let logged = format!("uri={url} {{\"uri\":\"{url}\"}}");
            let redacted = redact(&logged);
            proptest::prop_assert!(!redacted.contains(&format!("={value}")), "{}", redacted);
            proptest::prop_assert!(redacted.contains("after=1"), "{}", redacted);
        }
    }

    #[test]
    fn the_writer_redacts_every_line_but_the_setup_links() {
        #[derive(Clone, Default)]
        struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let writer = Redacting({
            let sink = sink.clone();
            move || sink.clone()
        });
        let subscriber = tracing_subscriber::fmt().with_writer(writer).with_max_level(tracing::Level::TRACE).finish();
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::debug_span!("request", uri = "/signup?invite=first-secret");
            let _entered = span.enter();
            tracing::debug!(url = "https://x.example/cb?code=second-secret", "redirected");
            tracing::warn!(target: SETUP_LINK_TARGET, link = "http://q/signup?setup=the-link", "setup");
        });
        let written = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(!written.contains("first-secret") && !written.contains("second-secret"), "{written}");
        assert!(written.contains("/signup?[redacted]") && written.contains("code=[redacted]"), "{written}");
        assert!(written.contains("http://q/signup?setup=the-link"), "the operator's line keeps its link: {written}");
        assert!(!written.contains("first-secret"), "but not the spans it is written in: {written}");
    }
}
