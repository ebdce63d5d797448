//! How bytes leave the server: static files precompressed and negotiated by `Accept-Encoding`, their cache
//! rules, pages never kept by shared caches, large API answers compressed, event streams never.

use std::io::Read;

use crate::common::{read_frames, TestServer};

/// A server whose site root holds a stylesheet and a script (the script precompressed as a build leaves it).
async fn server_with_site() -> (TestServer, tempfile::TempDir, Vec<u8>) {
    let site = tempfile::tempdir().expect("site dir");
    std::fs::create_dir(site.path().join("pkg")).unwrap();
    let script: Vec<u8> = (0..4000).flat_map(|i| format!("export const value{i} = {i};\n").into_bytes()).collect();
    std::fs::write(site.path().join("pkg/app.js"), &script).unwrap();
    let done = quire::http::assets::precompress(site.path()).expect("precompress");
    assert_eq!(done.files, 1);
    let root = site.path().to_string_lossy().into_owned();
    let server = TestServer::start_with(move |config| config.site_root = root).await;
    (server, site, script)
}

/// The site's script, asked for with the encodings given (none: no `accept-encoding` header at all).
async fn fetch_script(server: &TestServer, encoding: Option<&'static str>) -> reqwest::Result<reqwest::Response> {
    let mut request = server.anonymous().get(server.url("/pkg/app.js"));
    if let Some(encoding) = encoding {
        request = request.header("accept-encoding", encoding);
    }
    request.send().await
}

#[tokio::test]
async fn static_files_go_out_in_the_encoding_the_browser_accepts() {
    let (server, _site, script) = server_with_site().await;
    let get = |encoding| fetch_script(&server, encoding);

    let br = get(Some("br")).await.unwrap();
    assert_eq!(br.status(), 200);
    assert_eq!(br.headers()["content-encoding"], "br");
    assert!(br.headers()["vary"].to_str().unwrap().to_ascii_lowercase().contains("accept-encoding"));
    assert_eq!(br.headers()["cache-control"], "no-cache", "a name without a hash is revalidated");
    let last_modified = br.headers()["last-modified"].to_str().unwrap().to_string();
    let body = br.bytes().await.unwrap();
    assert!(body.len() < script.len() / 5, "{} of {}", body.len(), script.len());
    let mut plain = Vec::new();
    brotli::BrotliDecompress(&mut body.as_ref(), &mut plain).expect("brotli");
    assert_eq!(plain, script);

    let gz = get(Some("gzip")).await.unwrap();
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(gz.bytes().await.unwrap().as_ref()).read_to_end(&mut plain).expect("gzip");
    assert_eq!(plain, script);

    // Both accepted: the smaller one.
    let both = get(Some("gzip, deflate, br")).await.unwrap();
    assert_eq!(both.headers()["content-encoding"], "br");

    for encoding in [None, Some("identity"), Some("deflate")] {
        let plain = get(encoding).await.unwrap();
        assert!(plain.headers().get("content-encoding").is_none(), "{encoding:?}");
        assert_eq!(plain.bytes().await.unwrap(), script, "{encoding:?}");
    }

    // A copy the browser holds is confirmed, not sent again.
    let cached = server
        .anonymous()
        .get(server.url("/pkg/app.js"))
        .header("accept-encoding", "br")
        .header("if-modified-since", &last_modified)
        .send()
        .await
        .unwrap();
    assert_eq!(cached.status(), 304);
}

#[tokio::test]
async fn a_file_kept_only_compressed_goes_out_decoded_to_a_client_that_takes_neither_copy() {
    // As the container image keeps the site: the compressed copies without the file they were made from.
    let (server, site, script) = server_with_site().await;
    std::fs::remove_file(site.path().join("pkg/app.js")).unwrap();
    let get = |encoding| fetch_script(&server, encoding);

    let br = get(Some("gzip, br")).await.unwrap();
    assert_eq!(br.headers()["content-encoding"], "br");
    for encoding in [None, Some("identity"), Some("deflate")] {
        let plain = get(encoding).await.unwrap();
        assert_eq!(plain.status(), 200, "{encoding:?}");
        assert!(plain.headers().get("content-encoding").is_none(), "{encoding:?}");
        assert!(plain.headers()["content-type"].to_str().unwrap().contains("javascript"), "{encoding:?}");
        assert!(plain.headers()["vary"].to_str().unwrap().to_ascii_lowercase().contains("accept-encoding"));
        assert_eq!(plain.bytes().await.unwrap(), script, "{encoding:?}");
    }
    // A client that refuses both copies outright (weight 0) gets the file decoded too, never a copy it refused.
    let refusing = get(Some("br;q=0, gzip;q=0, *;q=0")).await.unwrap();
    assert_eq!(refusing.status(), 200);
    assert!(refusing.headers().get("content-encoding").is_none());
    assert_eq!(refusing.bytes().await.unwrap(), script);
    // A range is answered with the whole file: its offsets would count bytes that are never on disk.
    let ranged = server.anonymous().get(server.url("/pkg/app.js")).header("range", "bytes=0-9").send().await.unwrap();
    assert_eq!(ranged.status(), 200);
    assert_eq!(ranged.bytes().await.unwrap(), script);

    // With no copy at all the address is no file: the app's own "not found" page answers.
    std::fs::remove_file(site.path().join("pkg/app.js.gz")).unwrap();
    let missing = get(None).await.unwrap();
    assert_eq!(missing.status(), 404);
    assert!(missing.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
}

#[tokio::test]
async fn pages_are_private_and_large_api_answers_are_compressed_but_event_streams_are_not() {
    let (server, _site, _) = server_with_site().await;
    let page = server.anonymous().get(server.url("/signin")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["cache-control"], "private, no-cache");
    let missing = server.anonymous().get(server.url("/no/such/page")).send().await.unwrap();
    assert_eq!(missing.status(), 404);

    let thread = server.create_thread().await;
    // The stream of a turn: never compressed, whatever the client accepts.
    let response = server
        .chat_request(thread)
        .header("accept-encoding", "gzip, br")
        .json(&serde_json::json!({ "content": "Write a long plan for the launch of the product, with many steps" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("content-encoding").is_none(), "an event stream goes out as it is");
    assert!(!read_frames(response).await.is_empty());

    let note = serde_json::json!({ "content": "Requirements gathered in the workshop. ".repeat(60) });
    assert_eq!(server.add_message(thread, &note).await.status(), 201);
    let path = format!("/api/threads/{thread}");
    let plain = server.get(&path).await;
    assert!(plain.headers().get("content-encoding").is_none());
    let plain = plain.bytes().await.unwrap();
    assert!(plain.len() > 1024, "the conversation is large enough to compress: {}", plain.len());

    let gz = server.client.get(server.url(&path)).header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    assert_eq!(gz.headers()["cache-control"], "no-store");
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(gz.bytes().await.unwrap().as_ref()).read_to_end(&mut text).expect("gzip");
    let (a, b): (serde_json::Value, serde_json::Value) =
        (serde_json::from_slice(&text).unwrap(), serde_json::from_slice(&plain).unwrap());
    assert_eq!(a, b);

    // Small answers are not worth it.
    let health = server.anonymous().get(server.url("/api/health")).header("accept-encoding", "gzip").send().await;
    assert!(health.unwrap().headers().get("content-encoding").is_none());
}

#[tokio::test]
async fn a_browser_without_a_session_is_sent_from_a_signed_in_page_to_sign_in() {
    let server = TestServer::start().await;
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let thread = server.create_thread().await;
    for path in ["/".to_string(), format!("/c/{thread}"), "/settings".into(), "/search?q=plan".into()] {
        let page = browser.get(server.url(&path)).send().await.unwrap();
        assert_eq!(page.status(), 303, "{path}");
        assert_eq!(page.headers()["location"], "/signin", "{path}");
    }
    for path in ["/signin", "/signup", "/reset-password"] {
        assert_eq!(browser.get(server.url(path)).send().await.unwrap().status(), 200, "{path}");
    }
    // A shared conversation is for anyone with its link: an unknown one is not found, not a sign-in.
    let shared = browser.get(server.url("/s/no-such-link")).send().await.unwrap();
    assert_eq!(shared.status(), 404);
    // The page itself with a live session, and the sign-in page again once the session has ended.
    let page = server.client.get(server.url(&format!("/c/{thread}"))).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let out = server.client.post(server.url("/api/auth/logout")).send().await.unwrap();
    assert!(out.status().is_success(), "{}", out.status());
    let ended = server.client.get(server.url("/")).send().await.unwrap();
    assert_eq!(ended.status(), 200);
    assert_eq!(ended.url().path(), "/signin");
}
