//! Security headers on every response: a Content Security Policy (pages get one with a fresh nonce for the
//! hydration scripts), `nosniff`, no framing, no referrer, and `Cache-Control: no-store` on the API.

use std::net::SocketAddr;

use axum::{
    extract::{Request, State},
    http::{header, uri::Authority, HeaderMap, HeaderName, HeaderValue},
    middleware::Next,
    response::Response,
    Router,
};
use leptos::nonce::Nonce;
use tower::ServiceBuilder;
use tower_http::set_header::SetResponseHeaderLayer;

/// The policy of every response that is not a page: nothing may load, nothing may frame it.
const NON_PAGE_POLICY: &str = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The policy of a page whose inline scripts carry `nonce`. The wasm module needs `'wasm-unsafe-eval'`; styles,
/// fonts and scripts come from Quire itself; images also from `data:` URLs (the stylesheet's icons). Requests go
/// to Quire alone, and to the `sockets` of [`LiveReload`] in development.
pub fn page_policy(nonce: &str, sockets: &[String]) -> String {
    let connect: String = sockets.iter().map(|socket| format!(" {socket}")).collect();
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'nonce-{nonce}'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'{connect}; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors 'none'"
    )
}

/// cargo-leptos's live-reload socket while it watches the sources (`cargo leptos watch`): its script in the page
/// connects to `ws://<the page's host>:<port>/live_reload`, which pages may then do, and nothing more.
#[derive(Debug, Clone)]
pub struct LiveReload {
    port: u16,
    /// The host of the address Quire listens on, unless that is every address (`0.0.0.0`, `::`).
    site_host: Option<String>,
}

impl LiveReload {
    /// The socket on `port` of the host Quire listens on at `site`, and of the host each page is asked for.
    pub fn new(port: u16, site: SocketAddr) -> Self {
        let ip = site.ip();
        let site_host = match ip {
            _ if ip.is_unspecified() => None,
            std::net::IpAddr::V4(v4) => Some(v4.to_string()),
            std::net::IpAddr::V6(v6) => Some(format!("[{v6}]")),
        };
        Self { port, site_host }
    }

    /// The sources a page asked for with `headers` may connect to besides its own origin: the socket on the
    /// site's host and on the host the request named (when it is a plain host name or address).
    pub fn sockets(&self, headers: &HeaderMap) -> Vec<String> {
        let asked = headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .and_then(|host| host.parse::<Authority>().ok())
            .map(|authority| authority.host().to_string())
            .filter(|host| {
                host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':'))
            });
        let mut sockets: Vec<String> =
            self.site_host.iter().chain(asked.iter()).map(|host| format!("ws://{host}:{}", self.port)).collect();
        sockets.dedup();
        sockets
    }
}

/// Tells browsers to reach Quire's host and the names below it (not its parent's other names) over HTTPS only,
/// for two years.
pub const STRICT_TRANSPORT_SECURITY: &str = "max-age=63072000; includeSubDomains";

/// Adds the headers every response carries (outermost layers of the application). `https_only` (an `https`
/// public URL) also adds [`STRICT_TRANSPORT_SECURITY`].
pub fn apply<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    https_only: bool,
    live_reload: Option<LiveReload>,
) -> Router<S> {
    let fixed = ServiceBuilder::new()
        .layer(SetResponseHeaderLayer::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .layer(SetResponseHeaderLayer::overriding(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")))
        // For browsers that predate `frame-ancestors`.
        .layer(SetResponseHeaderLayer::overriding(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")))
        .layer(SetResponseHeaderLayer::overriding(
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            HeaderName::from_static("cross-origin-resource-policy"),
            HeaderValue::from_static("same-origin"),
        ));
    let router = router.layer(axum::middleware::from_fn_with_state(live_reload, content_security_policy)).layer(fixed);
    if https_only {
        router.layer(SetResponseHeaderLayer::overriding(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(STRICT_TRANSPORT_SECURITY),
        ))
    } else {
        router
    }
}

/// The layer of API routes: their answers may carry personal data, so no cache keeps them (a route's own
/// `Cache-Control` wins).
pub fn no_store() -> SetResponseHeaderLayer<HeaderValue> {
    SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))
}

/// Gives the request a nonce (the page renderer puts it on its inline scripts, see [`provide_nonce`]) and sets
/// the policy that allows exactly those scripts on the answer.
async fn content_security_policy(
    State(live_reload): State<Option<LiveReload>>,
    mut request: Request,
    next: Next,
) -> Response {
    let nonce = Nonce::new();
    request.extensions_mut().insert(nonce.clone());
    let sockets = live_reload.map(|reload| reload.sockets(request.headers())).unwrap_or_default();
    let mut response = next.run(request).await;
    let is_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/html"));
    let policy = if is_page { page_policy(&nonce, &sockets) } else { NON_PAGE_POLICY.to_string() };
    if let Ok(value) = HeaderValue::from_str(&policy) {
        response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// Hands the request's nonce to the page renderer (called as the renderer's additional context), in place of
/// the one it would make up, which the policy would not know.
pub fn provide_nonce() {
    use leptos::prelude::{provide_context, use_context};
    let nonce = use_context::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<Nonce>().cloned());
    if let Some(nonce) = nonce {
        provide_context(nonce);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_policy_names_the_nonce_and_forbids_framing() {
        let policy = page_policy("abc123", &[]);
        assert!(policy.contains("script-src 'self' 'wasm-unsafe-eval' 'nonce-abc123'"), "{policy}");
        for directive in ["default-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"] {
            assert!(policy.contains(directive), "{directive} missing: {policy}");
        }
        assert!(!policy.contains("unsafe-inline"), "{policy}");
    }

    #[test]
    fn the_live_reload_socket_is_allowed_on_its_port_and_hosts_only() {
        let headers = |host: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
            headers
        };
        let reload = LiveReload::new(3001, "127.0.0.1:3000".parse().unwrap());
        assert_eq!(reload.sockets(&headers("localhost:3000")), ["ws://127.0.0.1:3001", "ws://localhost:3001"]);
        assert_eq!(reload.sockets(&headers("127.0.0.1:3000")), ["ws://127.0.0.1:3001"]);
        // A Host that is not a plain host name adds nothing to the policy.
        assert_eq!(reload.sockets(&headers("a;b")), ["ws://127.0.0.1:3001"]);
        assert_eq!(reload.sockets(&HeaderMap::new()), ["ws://127.0.0.1:3001"]);
        let everywhere = LiveReload::new(3001, "0.0.0.0:3000".parse().unwrap());
        assert_eq!(everywhere.sockets(&headers("[::1]:3000")), ["ws://[::1]:3001"]);
        let policy = page_policy("n", &reload.sockets(&headers("localhost:3000")));
        assert!(policy.contains("connect-src 'self' ws://127.0.0.1:3001 ws://localhost:3001;"), "{policy}");
        assert!(page_policy("n", &[]).contains("connect-src 'self';"));
    }
}
