//! Cross-site request refusal: a browser attaches the session cookie to requests other sites make it send, so one
//! that could change something (not `GET`, `HEAD`, `OPTIONS`) is refused with 403 unless its `Origin` is Quire's
//! or, without `Origin`, `Sec-Fetch-Site` is `same-origin`. With neither it is a program's, passing without a
//! session cookie. An `Authorization` header passes: no other site can make a browser send it.
//!
//! A form a page of Quire's posts the browser's way says `Origin: null`: under `Referrer-Policy: no-referrer`
//! browsers hide the origin of every request that is not a `fetch` in `cors` mode. It passes only when the browser
//! also says `Sec-Fetch-Site: same-origin`; the other sources of `null` (a sandboxed frame, a `data:` page) are
//! `cross-site` there.

use axum::{
    extract::{Request, State},
    http::{header, request::Parts, HeaderMap, Method},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::error::ApiError;
use super::extract::session_cookie;
use crate::config::PublicUrl;
use crate::AppState;

/// The layer's function: passes the request on or answers 403.
pub async fn refuse_cross_site(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    if is_cross_site(&parts, state.config.public_url.as_ref()) {
        tracing::warn!(method = %parts.method, path = parts.uri.path(), "cross-site request refused");
        return ApiError::Forbidden {
            code: "cross_site_request",
            message: "This request came from another site and was refused.".into(),
        }
        .into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}

/// Whether the request could change something and does not come from Quire's own pages.
fn is_cross_site(parts: &Parts, public_url: Option<&PublicUrl>) -> bool {
    if matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return false;
    }
    let headers = &parts.headers;
    if headers.contains_key(header::AUTHORIZATION) {
        return false;
    }
    let same_origin_by_fetch_metadata = headers.get("sec-fetch-site").map(|site| site == "same-origin");
    if let Some(origin) = headers.get(header::ORIGIN) {
        if origin == "null" {
            return same_origin_by_fetch_metadata != Some(true);
        }
        return !origin.to_str().is_ok_and(|origin| is_own_origin(origin, headers, public_url));
    }
    if let Some(same_origin) = same_origin_by_fetch_metadata {
        return !same_origin;
    }
    session_cookie(parts).is_some()
}

/// Whether `origin` is Quire's: the public URL's origin when configured, else the one the `Host` header names.
fn is_own_origin(origin: &str, headers: &HeaderMap, public_url: Option<&PublicUrl>) -> bool {
    if let Some(public) = public_url {
        return origin.eq_ignore_ascii_case(public.origin());
    }
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
    // Without a public URL the scheme is unknown (TLS may end at a proxy): host and port must match.
    origin
        .split_once("://")
        .is_some_and(|(scheme, authority)| matches!(scheme, "http" | "https") && authority.eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: Method, headers: &[(&str, &str)]) -> Parts {
        let mut request = axum::http::Request::builder().method(method).uri("/api/threads");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    const COOKIE: (&str, &str) = ("cookie", "quire_session=abc");
    const HOST: (&str, &str) = ("host", "quire.test:3000");

    #[test]
    fn unsafe_requests_need_an_own_origin() {
        let post = |headers: &[(&str, &str)]| is_cross_site(&parts(Method::POST, headers), None);
        assert!(post(&[COOKIE, HOST, ("origin", "https://evil.test")]));
        assert!(post(&[COOKIE, HOST, ("origin", "null")]));
        assert!(post(&[COOKIE, HOST, ("origin", "http://quire.test:3001")]));
        assert!(!post(&[COOKIE, HOST, ("origin", "http://quire.test:3000")]));
        assert!(post(&[COOKIE, HOST, ("sec-fetch-site", "cross-site")]));
        assert!(post(&[COOKIE, HOST, ("sec-fetch-site", "same-site")]));
        assert!(!post(&[COOKIE, HOST, ("sec-fetch-site", "same-origin")]));
        // A cookie and nothing that says where the request comes from: not a page of Quire's.
        assert!(post(&[COOKIE, HOST]));
        // A program without a session, or one with a bearer token.
        assert!(!post(&[HOST]));
        assert!(!post(&[COOKIE, HOST, ("authorization", "Bearer x"), ("origin", "https://evil.test")]));
        // Another site may not sign people in or up either.
        assert!(post(&[HOST, ("origin", "https://evil.test")]));
        // A form of Quire's own page, posted under `no-referrer`; `null` from anywhere else stays refused.
        assert!(!post(&[COOKIE, HOST, ("origin", "null"), ("sec-fetch-site", "same-origin")]));
        assert!(!post(&[HOST, ("origin", "null"), ("sec-fetch-site", "same-origin")]));
        assert!(post(&[COOKIE, HOST, ("origin", "null"), ("sec-fetch-site", "cross-site")]));
        assert!(post(&[HOST, ("origin", "null"), ("sec-fetch-site", "same-site")]));
        assert!(post(&[HOST, ("origin", "null")]));
        // Reading is always allowed.
        assert!(!is_cross_site(&parts(Method::GET, &[COOKIE, HOST, ("origin", "https://evil.test")]), None));
    }

    #[test]
    fn a_public_url_names_the_only_origin() {
        let public: PublicUrl = "https://quire.example.org".parse().unwrap();
        let post = |headers: &[(&str, &str)]| is_cross_site(&parts(Method::DELETE, headers), Some(&public));
        assert!(!post(&[COOKIE, ("host", "internal:3000"), ("origin", "https://quire.example.org")]));
        assert!(post(&[COOKIE, ("host", "quire.example.org"), ("origin", "http://quire.example.org")]));
        assert!(post(&[COOKIE, ("host", "evil.test"), ("origin", "https://evil.test")]));
    }
}
