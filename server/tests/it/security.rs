//! The web security baseline over real HTTP: response headers, cross-site request refusal, sessions, passwords,
//! sign-in throttling and account deletion.

use crate::common::TestServer;

/// The `nonce` attribute of the page's inline module script.
fn script_nonce(html: &str) -> Option<String> {
    let start = html.find("<script type=\"module\" nonce=\"")? + "<script type=\"module\" nonce=\"".len();
    Some(html[start..].split('"').next()?.to_string())
}

#[tokio::test]
async fn pages_carry_a_policy_that_allows_only_their_own_scripts() {
    let server = TestServer::start().await;
    let mut nonces = Vec::new();
    for path in ["/signin", "/", "/no-such-page"] {
        let response = server.anonymous().get(server.url(path)).send().await.unwrap();
        let headers = response.headers().clone();
        let html = response.text().await.unwrap();
        let policy = headers["content-security-policy"].to_str().unwrap().to_string();
        let nonce = script_nonce(&html).unwrap_or_else(|| panic!("{path}: no script nonce in the page"));
        assert!(policy.contains(&format!("'nonce-{nonce}'")), "{path}: {policy}");
        for directive in ["default-src 'self'", "'wasm-unsafe-eval'", "frame-ancestors 'none'", "base-uri 'none'"] {
            assert!(policy.contains(directive), "{path}: {directive} missing from {policy}");
        }
        assert!(!policy.contains("unsafe-inline"), "{path}: {policy}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(headers["referrer-policy"], "no-referrer", "{path}");
        nonces.push(nonce);
    }
    nonces.sort();
    nonces.dedup();
    assert_eq!(nonces.len(), 3, "every page gets a nonce of its own");
}

#[tokio::test]
async fn personal_answers_and_downloads_are_never_cached() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    server.chat(thread, "We plan a library app. Members renew loans online.").await;
    server.wait_idle(thread).await;
    let paths = [
        "/api/auth/me".to_string(),
        "/api/threads".to_string(),
        format!("/api/threads/{thread}"),
        format!("/api/threads/{thread}/export?format=json"),
        format!("/api/threads/{thread}/export?format=markdown"),
        "/api/export".to_string(),
        "/api/stats".to_string(),
        "/api/search?q=library".to_string(),
        "/api/no-such-route".to_string(),
    ];
    for path in paths {
        let response = server.client.get(server.url(&path)).send().await.unwrap();
        let headers = response.headers();
        let cache = headers.get("cache-control").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        assert!(cache.contains("no-store"), "{path}: Cache-Control {cache:?}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.starts_with("default-src 'none'"), "{path}: {policy}");
    }
    // The event stream of a turn, too.
    let stream = server.client.get(server.url(&format!("/api/threads/{thread}/stream"))).send().await.unwrap();
    assert!(stream.headers()["cache-control"].to_str().unwrap().contains("no-store"));
}
