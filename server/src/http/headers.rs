//! Security headers on every response: a Content Security Policy (pages get one with a fresh nonce for the
//! hydration scripts), `nosniff`, no framing, no referrer, and `Cache-Control: no-store` on the API.

use axum::{
    extract::Request,
    http::{header, HeaderName, HeaderValue},
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
/// fonts and scripts come from Quire itself; images also from `data:` URLs (the stylesheet's icons).
pub fn page_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'nonce-{nonce}'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
         frame-ancestors 'none'"
    )
}

/// Tells browsers to reach Quire's host and the names below it (not its parent's other names) over HTTPS only,
/// for two years.
pub const STRICT_TRANSPORT_SECURITY: &str = "max-age=63072000; includeSubDomains";

/// Adds the headers every response carries (outermost layers of the application). `https_only` (an `https`
/// public URL) also adds [`STRICT_TRANSPORT_SECURITY`].
pub fn apply<S: Clone + Send + Sync + 'static>(router: Router<S>, https_only: bool) -> Router<S> {
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
    let router = router.layer(axum::middleware::from_fn(content_security_policy)).layer(fixed);
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
async fn content_security_policy(mut request: Request, next: Next) -> Response {
    let nonce = Nonce::new();
    request.extensions_mut().insert(nonce.clone());
    let mut response = next.run(request).await;
    let is_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/html"));
    let policy = if is_page { page_policy(&nonce) } else { NON_PAGE_POLICY.to_string() };
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
        let policy = page_policy("abc123");
        assert!(policy.contains("script-src 'self' 'wasm-unsafe-eval' 'nonce-abc123'"), "{policy}");
        for directive in ["default-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"] {
            assert!(policy.contains(directive), "{directive} missing: {policy}");
        }
        assert!(!policy.contains("unsafe-inline"), "{policy}");
    }
}
