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
        assert!(headers.get("strict-transport-security").is_none(), "{path}: HSTS over plain HTTP");
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
        let response = server.get(&path).await;
        let headers = response.headers();
        let cache = headers.get("cache-control").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        assert!(cache.contains("no-store"), "{path}: Cache-Control {cache:?}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.starts_with("default-src 'none'"), "{path}: {policy}");
    }
    // The event stream of a turn, too.
    let stream = server.open_stream(thread, None).await;
    assert!(stream.headers()["cache-control"].to_str().unwrap().contains("no-store"));
}

/// A request sent the way a browser sends it: with the session cookie, and `Origin` when given.
fn by_cookie(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    origin: Option<&str>,
) -> reqwest::RequestBuilder {
    let request = server
        .anonymous()
        .request(method, server.url(path))
        .header("cookie", format!("quire_session={}", server.token));
    match origin {
        Some(origin) => request.header("origin", origin),
        None => request,
    }
}

/// A content type and a body of that type.
type Body = (&'static str, Vec<u8>);

/// The bodies another site can make a browser send without asking first: JSON (sent with a `fetch` in
/// `no-cors` mode), a multipart form, plain text, a URL-encoded form and nothing at all.
fn attacks(thread: uuid::Uuid) -> Vec<(&'static str, reqwest::Method, String, Option<Body>)> {
    let multipart = "--x\r\ncontent-disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\ncontent-type: text/plain\r\n\r\nhello\r\n--x--\r\n";
    let planted: &[u8] = br#"{"title":"planted"}"#;
    let post = |name, path: &str, content_type, body: &[u8]| {
        (name, reqwest::Method::POST, path.to_string(), Some((content_type, body.to_vec())))
    };
    let attachments = format!("/api/threads/{thread}/attachments");
    vec![
        post("json", "/api/threads", "application/json", planted),
        post("multipart", &attachments, "multipart/form-data; boundary=x", multipart.as_bytes()),
        post("text/plain", "/api/threads", "text/plain", planted),
        post("form", "/api/threads", "application/x-www-form-urlencoded", b"title=planted"),
        ("no body", reqwest::Method::DELETE, format!("/api/threads/{thread}"), None),
        ("sign-out", reqwest::Method::POST, "/api/auth/logout".into(), None),
    ]
}

#[tokio::test]
async fn requests_from_other_sites_are_refused_whatever_their_body() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let before = server.detail(thread).await;
    for (name, method, path, body) in attacks(thread) {
        for origin in [Some("https://evil.example"), Some("null"), None] {
            let mut request = by_cookie(&server, method.clone(), &path, origin);
            if let Some((content_type, bytes)) = &body {
                request = request.header("content-type", *content_type).body(bytes.clone());
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 403, "{name} from {origin:?}");
            let error: wire::ErrorBody = response.json().await.unwrap();
            assert_eq!(error.error.code, "cross_site_request", "{name}");
        }
        // A browser that sends `Sec-Fetch-Site` but no `Origin` says where the request comes from that way.
        let cross = by_cookie(&server, method.clone(), &path, None).header("sec-fetch-site", "cross-site");
        assert_eq!(cross.send().await.unwrap().status(), 403, "{name}, cross-site by Sec-Fetch-Site");
    }
    // Nothing changed and the session still works.
    assert_eq!(server.detail(thread).await, before);
    let list: wire::ThreadList = server.get_json("/api/threads").await;
    assert_eq!(list.threads.len(), 1);
    assert!(server.state.store.list_attachments(server.user.id, thread).await.unwrap().is_empty());
    assert_eq!(by_cookie(&server, reqwest::Method::GET, "/api/auth/me", None).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn quire_s_own_pages_and_programs_with_a_token_are_let_through() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let own = server.base.clone();
    let create = by_cookie(&server, reqwest::Method::POST, "/api/threads", Some(&own)).json(&serde_json::json!({}));
    assert_eq!(create.send().await.unwrap().status(), 201);
    let same = by_cookie(&server, reqwest::Method::POST, "/api/threads", None)
        .header("sec-fetch-site", "same-origin")
        .json(&serde_json::json!({}));
    assert_eq!(same.send().await.unwrap().status(), 201);
    // Past the check, a body that is not JSON gets the usual answer.
    let text = by_cookie(&server, reqwest::Method::POST, "/api/threads", Some(&own))
        .header("content-type", "text/plain")
        .body("{}");
    assert_eq!(text.send().await.unwrap().status(), 415);
    let part = reqwest::multipart::Part::bytes(b"hello".to_vec()).file_name("a.txt").mime_str("text/plain").unwrap();
    let upload = by_cookie(&server, reqwest::Method::POST, &format!("/api/threads/{thread}/attachments"), Some(&own))
        .multipart(reqwest::multipart::Form::new().part("file", part));
    assert_eq!(upload.send().await.unwrap().status(), 201);
    // A bearer token is never sent by a browser on another site's behalf: its Origin does not matter.
    let bearer = server
        .client
        .post(server.url("/api/threads"))
        .header("origin", "https://evil.example")
        .json(&serde_json::json!({}));
    assert_eq!(bearer.send().await.unwrap().status(), 201);
    // Signing up from a program without a session needs no Origin; from another site's page it is refused.
    let program = server.anonymous().post(server.url("/api/auth/register"));
    let body = serde_json::json!({"email": "new@example.com", "password": crate::common::PASSWORD});
    assert_eq!(program.json(&body).send().await.unwrap().status(), 201);
    let planted =
        server.anonymous().post(server.url("/api/auth/login")).header("origin", "https://evil.example").json(&body);
    assert_eq!(planted.send().await.unwrap().status(), 403);
    let signed_out = by_cookie(&server, reqwest::Method::POST, "/api/auth/logout", Some(&own));
    assert_eq!(signed_out.send().await.unwrap().status(), 204);
}

async fn status_of(client: &reqwest::Client, server: &TestServer, path: &str) -> u16 {
    client.get(server.url(path)).send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn signing_out_everywhere_ends_every_session_of_the_account_only() {
    let server = TestServer::start().await;
    let (laptop, _) = crate::common::sign_up_or_in(&server.base, "owner@example.com").await;
    let (other, _) = server.second_user("other@example.com").await;
    let out = laptop.post(server.url("/api/auth/logout-all")).send().await.unwrap();
    assert_eq!(out.status(), 204);
    assert!(out.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    assert_eq!(status_of(&laptop, &server, "/api/auth/me").await, 401);
    assert_eq!(status_of(&server.client, &server, "/api/auth/me").await, 401, "the first session ended too");
    assert_eq!(status_of(&other, &server, "/api/auth/me").await, 200, "another account is untouched");
    let (again, _) = crate::common::sign_up_or_in(&server.base, "owner@example.com").await;
    assert_eq!(status_of(&again, &server, "/api/auth/me").await, 200, "signing in again works");
}

#[tokio::test]
async fn a_session_unused_for_longer_than_the_idle_timeout_ends() {
    let server = TestServer::start_with(|c| c.session_idle_hours = 1).await;
    assert_eq!(status_of(&server.client, &server, "/api/auth/me").await, 200);
    // Two hours pass without a request: the session's last use is set back as if they had.
    let Some(mut session) = server.state.store.session(session_id(&server.token)).await.unwrap() else {
        panic!("no session")
    };
    session.last_seen_at -= chrono::Duration::hours(2);
    set_last_seen(&server, &session).await;
    assert_eq!(status_of(&server.client, &server, "/api/auth/me").await, 401);
}

/// The session id (`jti`) inside a token.
fn session_id(token: &str) -> uuid::Uuid {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap();
    let claims: quire::auth::Claims =
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    claims.jti
}

/// Writes a session's `last_seen_at` straight into the test server's SQLite file.
async fn set_last_seen(server: &TestServer, session: &store::Session) {
    let url = server.state.config.database_url();
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("update sessions set last_seen_at = ? where id = ?")
        .bind(session.last_seen_at.timestamp_micros())
        .bind(session.id.to_string())
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

#[tokio::test]
async fn signing_out_ends_the_session_s_open_streams_within_a_second() {
    use futures::StreamExt;
    let model = crate::common::ScriptedModel::new(vec![vec![
        crate::common::Step::delta("Thinking"),
        crate::common::Step::Hang,
    ]]);
    let (store, _dir) = crate::common::sqlite_store().await;
    let server = TestServer::with(store, model).await;
    let thread = server.create_thread().await;
    let response = server.send_text(thread, "Tell me everything").await;
    let mut body = response.bytes_stream();
    assert!(body.next().await.is_some(), "the stream started");
    // A second stream of the same session, re-attached.
    let resumed = server.open_stream(thread, None).await;
    let mut resumed = resumed.bytes_stream();
    assert_eq!(server.client.post(server.url("/api/auth/logout")).send().await.unwrap().status(), 204);
    for stream in [&mut body, &mut resumed] {
        session_list::ends_within_a_second(stream).await;
    }
}

/// Signs up with `password`, which must be refused as unprocessable; the error.
async fn refused_sign_up(server: &TestServer, password: &str) -> wire::ErrorBody {
    let response = server
        .anonymous()
        .post(server.url("/api/auth/register"))
        .json(&serde_json::json!({"email": "newcomer@example.com", "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422, "{password}");
    response.json().await.unwrap()
}

#[tokio::test]
async fn sign_up_refuses_short_common_and_breached_passwords_with_a_field_error() {
    let server = TestServer::start().await;
    for password in ["password", "12345678", "passwordpassword", "123456789012", "qwertyuiopasdf", "newcomer2024!"] {
        let error = refused_sign_up(&server, password).await;
        assert_eq!(error.error.field.as_deref(), Some("password"), "{password}");
        assert!(!error.error.message.is_empty());
    }
    // A breached password of any length is named as such, whatever its letter case.
    for password in ["iloveyou1234", "QwertyUiop123"] {
        let error = refused_sign_up(&server, password).await;
        assert_eq!(error.error.field.as_deref(), Some("password"));
        assert!(error.error.message.contains("lists of breached passwords"), "{}", error.error.message);
    }
    let good = serde_json::json!({"email": "newcomer@example.com", "password": "lantern orchard velvet"});
    let response = server.anonymous().post(server.url("/api/auth/register")).json(&good).send().await.unwrap();
    assert_eq!(response.status(), 201);
}

#[tokio::test]
async fn changing_the_password_needs_the_old_one_and_ends_every_other_session() {
    let server = TestServer::start().await;
    let (phone, _) = crate::common::sign_up_or_in(&server.base, "owner@example.com").await;
    let change = |current: &str, new: &str| {
        server
            .client
            .post(server.url("/api/auth/password"))
            .json(&serde_json::json!({"current_password": current, "new_password": new}))
            .send()
    };
    for (current, new, field) in [
        ("not the password", "lantern orchard velvet", "current_password"),
        (crate::common::PASSWORD, "password1234", "new_password"),
    ] {
        let response = change(current, new).await.unwrap();
        assert_eq!(response.status(), 422);
        let error: wire::ErrorBody = response.json().await.unwrap();
        assert_eq!(error.error.field.as_deref(), Some(field));
    }
    assert_eq!(status_of(&phone, &server, "/api/auth/me").await, 200, "refused changes end nothing");
    // A wrong current password counts against the account like a failed sign-in.
    assert_eq!(change("still not it", "lantern orchard velvet").await.unwrap().status(), 422);
    let failures = server.state.store.sign_in_failures("owner@example.com").await.unwrap();
    assert_eq!(failures.map(|(n, _)| n), Some(1));
    assert_eq!(change(crate::common::PASSWORD, "lantern orchard velvet").await.unwrap().status(), 204);
    assert_eq!(status_of(&server.client, &server, "/api/auth/me").await, 200, "this session goes on");
    assert_eq!(status_of(&phone, &server, "/api/auth/me").await, 401, "the other one ended");
    let login = |password: &str| server.sign_in("owner@example.com", password);
    assert_eq!(login(crate::common::PASSWORD).await.status(), 401);
    assert_eq!(login("lantern orchard velvet").await.status(), 200);
}

#[tokio::test]
async fn failed_sign_ins_slow_down_the_account_from_every_address() {
    // The per-address limit is out of reach here: only the per-account delays apply.
    let server = TestServer::start().await;
    let attempt = |email: &str, password: &str| server.sign_in(email, password);
    for email in ["owner@example.com", "nobody@example.com"] {
        for _ in 0..quire::auth::throttle::FREE_FAILURES {
            assert_eq!(attempt(email, "a wrong guess").await.status(), 401, "{email}");
        }
        let wrong = attempt(email, "a wrong guess").await;
        assert_eq!(wrong.status(), 401, "the first failure past the free ones is answered, then waits begin");
        // Now even the right password waits: the answer is the same for a known and an unknown address.
        let held = attempt(email, crate::common::PASSWORD).await;
        assert_eq!(held.status(), 429, "{email}");
        let retry: u64 = held.headers()["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=quire::auth::throttle::MAX_DELAY_SECS as u64).contains(&retry), "{retry}");
    }
    // Another account signs in as usual.
    let (_, other) = server.second_user("other@example.com").await;
    assert_eq!(attempt(&other.user.email, crate::common::PASSWORD).await.status(), 200);
    // Once the wait is over the owner gets in, and the count starts again.
    let pool = sqlx::SqlitePool::connect(&server.state.config.database_url()).await.unwrap();
    sqlx::query("update sign_in_failures set last_failed_at = last_failed_at - 600000000")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert_eq!(attempt("OWNER@example.com", crate::common::PASSWORD).await.status(), 200);
    assert!(server.state.store.sign_in_failures("owner@example.com").await.unwrap().is_none());
}

mod deletion {
    use std::collections::BTreeMap;

    use crate::common::backends::{run_story, stories, Backend, Db, Raw};
    use crate::common::{get_json, post_json, read_frames, upload, TestServer, PASSWORD};

    stories!(deleting_an_account_removes_every_row_it_owns);

    /// Rows in every table (the search index's own storage tables aside: they are counted through the index).
    /// Rows per table once what was saved is in the search index (SQLite indexes messages in batches, in the
    /// background).
    async fn counts(raw: &Raw) -> BTreeMap<String, i64> {
        if let Raw::Sqlite(pool) = raw {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let queued = || sqlx::query_scalar::<_, i64>("select count(*) from messages_to_index").fetch_one(pool);
            while queued().await.unwrap() > 0 {
                assert!(std::time::Instant::now() < deadline, "the messages queued for search were not indexed");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        let tables: Vec<String> = match raw {
            Raw::Sqlite(pool) => sqlx::query_scalar(
                "select name from sqlite_master where type = 'table' and name not like 'sqlite_%'
                 and name not like '_sqlx%' and name not like '%_fts_%'",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
            Raw::Postgres(pool) => sqlx::query_scalar(
                "select tablename::text from pg_tables where schemaname = current_schema() and tablename not like '_sqlx%'",
            )
            .fetch_all(pool)
            .await
            .unwrap(),
        };
        let mut counts = BTreeMap::new();
        // Rate-limit counters (PostgreSQL keeps one row per key, forgotten a minute after its last use) come and go
        // with every request of anyone.
        for table in tables.into_iter().filter(|t| t != "rate_limits") {
            let sql = format!("select count(*) from {table}");
            let n: i64 = match raw {
                Raw::Sqlite(pool) => sqlx::query_scalar(&sql).fetch_one(pool).await.unwrap(),
                Raw::Postgres(pool) => sqlx::query_scalar(&sql).fetch_one(pool).await.unwrap(),
            };
            counts.insert(table, n);
        }
        counts
    }

    /// What an account leaves behind in ordinary use: a conversation with answers, a document and a revision
    /// of it, an attachment, a request with an idempotency key, a failed sign-in, and an API token used once.
    async fn use_account(server: &TestServer, client: &reqwest::Client, email: &str) {
        let thread: wire::Thread =
            post_json(client, &server.url("/api/threads"), &serde_json::json!({"tags": ["work"]})).await;
        let chat = |content: &'static str, key: Option<&'static str>| {
            let mut request = client
                .post(server.url(&format!("/api/threads/{}/chat", thread.id)))
                .json(&serde_json::json!({"content": content}));
            if let Some(key) = key {
                request = request.header("Idempotency-Key", key);
            }
            request.send()
        };
        read_frames(chat("We plan a library app. Members renew loans online.", Some("first")).await.unwrap()).await;
        read_frames(chat("Generate user stories from this conversation", None).await.unwrap()).await;
        read_frames(chat("Add a story about overdue reminders to the user stories", None).await.unwrap()).await;
        let policy = b"Loans last three weeks. Renewals are free.".to_vec();
        let upload = upload(client, &server.base, thread.id, "policy.txt", "text/plain", policy).await;
        assert_eq!(upload.status(), 201);
        server.sign_in(email, "a wrong guess").await;
        let token = serde_json::json!({"name": "Script", "scope": "read", "expires_in_days": 7});
        let token: wire::CreatedToken = post_json(client, &server.url("/api/tokens"), &token).await;
        let program = crate::common::bearer_client(&token.token);
        let _: wire::ThreadList = get_json(&program, &server.url("/api/threads")).await;
    }

    async fn deleting_an_account_removes_every_row_it_owns(db: Db) {
        let server = TestServer::builtin(db.store.clone()).await;
        let (other, _) = server.second_user("other@example.com").await;
        use_account(&server, &other, "other@example.com").await;
        let before = counts(&db.raw).await;
        let (leaver, _) = server.second_user("leaver@example.com").await;
        use_account(&server, &leaver, "leaver@example.com").await;
        let during = counts(&db.raw).await;
        for table in [
            "users",
            "sessions",
            "api_tokens",
            "threads",
            "messages",
            "artifacts",
            "artifact_versions",
            "attachments",
            "attachment_chunks",
            "turns",
            "turn_events",
            "usage_ledger",
            "idempotency_keys",
            "sign_in_failures",
        ] {
            assert!(during[table] > before[table], "the account's use left no row in {table}: {during:?}");
        }

        let wrong = leaver.delete(server.url("/api/auth/me")).json(&serde_json::json!({"password": "nope nope nope"}));
        assert_eq!(wrong.send().await.unwrap().status(), 422);
        assert_eq!(counts(&db.raw).await, during, "a wrong password deletes nothing");

        let deleted = leaver.delete(server.url("/api/auth/me")).json(&serde_json::json!({"password": PASSWORD}));
        assert_eq!(deleted.send().await.unwrap().status(), 204);
        assert_eq!(counts(&db.raw).await, before, "every row of the account is gone, and only those");

        assert_eq!(leaver.get(server.url("/api/auth/me")).send().await.unwrap().status(), 401);
        let login = serde_json::json!({"email": "leaver@example.com", "password": PASSWORD});
        let response = server.sign_in("leaver@example.com", PASSWORD).await;
        assert_eq!(response.status(), 401);
        let hits: wire::SearchResults = get_json(&other, &server.url("/api/search?q=library")).await;
        assert!(!hits.results.is_empty(), "the other account's conversation is still found");
        // The address can be used again.
        let again = reqwest::Client::new().post(server.url("/api/auth/register")).json(&login).send().await.unwrap();
        assert_eq!(again.status(), 201);
    }
}

#[cfg(unix)]
#[tokio::test]
async fn the_data_directory_database_and_key_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let server = TestServer::start().await;
    server.create_thread().await;
    let dir = server.state.config.data_dir.clone();
    let mode = |name: &str| std::fs::metadata(dir.join(name)).unwrap().permissions().mode() & 0o777;
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    for file in ["quire.db", "quire.db-wal", "quire.db-shm", "jwt_secret"] {
        assert_eq!(mode(file), 0o600, "{file}");
    }
}

#[tokio::test]
async fn a_failing_model_provider_is_described_plainly_with_a_reference_to_the_log() {
    use crate::common::{ScriptedModel, Step};
    let internal = "error sending request for url (http://llm.internal.example:8080/v1/chat/completions): \
                    tcp connect error: Connection refused (os error 111)";
    let failures = vec![
        (llm::LlmError::Network(internal.into()), "The model provider could not be reached. Try again in a minute."),
        (llm::LlmError::Protocol(format!("malformed JSON from {internal}")), "The model provider sent an answer"),
    ];
    for (failure, expected) in failures {
        let (store, _dir) = crate::common::sqlite_store().await;
        let server = TestServer::with(store, ScriptedModel::new(vec![vec![Step::Fail(failure)]])).await;
        let thread = server.create_thread().await;
        let frames = server.chat(thread, "Hello").await;
        let last = frames.last().unwrap();
        let wire::ChatEvent::Error { message, .. } = &last.event else { panic!("{frames:?}") };
        assert!(message.starts_with(expected), "{message}");
        for leak in ["llm.internal", "8080", "os error", "Connection refused", "http"] {
            assert!(!message.contains(leak), "{leak} shown: {message}");
        }
        // The reference is the turn's id, under which the log keeps the details.
        let turn = last.id.as_deref().unwrap().split(':').next().unwrap();
        assert!(message.contains(&format!("Reference: {turn}")), "{message}");
    }
}

#[tokio::test]
async fn every_answer_carries_its_request_id() {
    let server = TestServer::start().await;
    let mut ids = Vec::new();
    for path in ["/api/health", "/api/threads", "/signin"] {
        let response = server.get(path).await;
        let id = response.headers()["x-request-id"].to_str().unwrap().to_string();
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{path}: {id}");
        ids.push(id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 3);
}

#[tokio::test]
async fn behind_an_https_address_the_cookie_is_host_only_and_secure() {
    let server = TestServer::start_with(|c| c.public_url = Some("https://quire.example.org".parse().unwrap())).await;
    let response = server.sign_in("owner@example.com", crate::common::PASSWORD).await;
    assert_eq!(response.status(), 200);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.starts_with("__Host-quire_session="), "{cookie}");
    assert!(cookie.contains("; Secure") && cookie.contains("Path=/") && !cookie.contains("Domain"), "{cookie}");
    // Two years, for Quire's host and the names below it.
    let hsts = "max-age=63072000; includeSubDomains";
    assert_eq!(response.headers()["strict-transport-security"], hsts);
    let page = server.anonymous().get(server.url("/signin")).send().await.unwrap();
    assert_eq!(page.headers()["strict-transport-security"], hsts, "pages carry it too");
    let token = response.json::<wire::AuthResponse>().await.unwrap().token;
    // Only the prefixed cookie signs in: a plain one could be planted by a neighbouring subdomain.
    let me = |cookie: String| server.anonymous().get(server.url("/api/auth/me")).header("cookie", cookie).send();
    assert_eq!(me(format!("__Host-quire_session={token}")).await.unwrap().status(), 200);
    assert_eq!(me(format!("quire_session={token}")).await.unwrap().status(), 401);
    // Changes must come from the public origin.
    let from = |origin: &str| {
        server
            .anonymous()
            .post(server.url("/api/threads"))
            .header("cookie", format!("__Host-quire_session={token}"))
            .header("origin", origin)
            .json(&serde_json::json!({}))
            .send()
    };
    assert_eq!(from(&server.base).await.unwrap().status(), 403, "the listening address is not the public one");
    assert_eq!(from("https://quire.example.org").await.unwrap().status(), 201);
}

#[tokio::test]
async fn signing_out_on_one_instance_ends_the_streams_on_another() {
    use crate::common::{fresh_postgres_url, shared_instance, ScriptedModel, Step};
    use futures::StreamExt;
    let Some(url) = fresh_postgres_url("signing_out_on_one_instance_ends_the_streams_on_another").await else { return };
    let hanging = vec![Step::delta("Thinking"), Step::Hang];
    let a = shared_instance(&url, ScriptedModel::new(vec![]), |_| {}).await;
    let b = shared_instance(&url, ScriptedModel::new(vec![hanging]), |_| {}).await;
    // The same session (A's harness signed in to the account B made) streams on B and signs out on A.
    let mut body = session_list::open_stream(&b, &a.client).await;
    assert_eq!(a.client.post(a.url("/api/auth/logout")).send().await.unwrap().status(), 204);
    let ended =
        tokio::time::timeout(std::time::Duration::from_secs(2), async { while let Some(Ok(_)) = body.next().await {} })
            .await;
    assert!(ended.is_ok(), "the stream on the other instance is still open");
}

/// The list of sessions and ending one of them, on both backends.
mod session_list {
    use futures::StreamExt;
    use wire::SessionList;

    use crate::common::backends::{run_story, stories, Backend, Db};
    use crate::common::{bearer_client, ScriptedModel, Step, TestServer, PASSWORD};

    stories!(people_see_their_sessions_and_end_one, ending_a_session_in_any_way_ends_its_open_streams);

    const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

    /// Signs in to `email` from a browser that says `user_agent`; a client carrying the new token.
    async fn sign_in_from(server: &TestServer, email: &str, password: &str, user_agent: &str) -> reqwest::Client {
        let body = serde_json::json!({"email": email, "password": password});
        let client = reqwest::Client::builder().user_agent(user_agent).build().unwrap();
        let response = client.post(server.url("/api/auth/login")).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 200);
        bearer_client(&response.json::<wire::AuthResponse>().await.unwrap().token)
    }

    async fn list(server: &TestServer, client: &reqwest::Client) -> SessionList {
        let response = client.get(server.url("/api/auth/sessions")).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["cache-control"], "no-store");
        response.json().await.unwrap()
    }

    async fn end(client: &reqwest::Client, server: &TestServer, id: &str) -> reqwest::Response {
        client.delete(server.url(&format!("/api/auth/sessions/{id}"))).send().await.unwrap()
    }

    async fn people_see_their_sessions_and_end_one(db: Db) {
        let server = TestServer::builtin(db.store.clone()).await;
        let laptop = &server.client;
        let phone = sign_in_from(&server, "owner@example.com", PASSWORD, FIREFOX).await;
        let (other, _) = server.second_user("other@example.com").await;

        let sessions = list(&server, laptop).await.sessions;
        assert_eq!(sessions.len(), 2, "{sessions:?}");
        let (this, that) = (&sessions[1], &sessions[0]);
        assert!(this.current && !that.current, "the most recently signed in first: {sessions:?}");
        assert_eq!(that.device.as_deref(), Some("Firefox on Linux"));
        assert_eq!(that.ip_prefix.as_deref(), Some("127.0.0.0/24"), "the network, not the address");
        assert!(that.last_seen_at >= that.created_at);
        let listed = serde_json::to_string(&sessions).unwrap();
        assert!(!listed.contains(&super::session_id(&server.token).to_string()), "no token id is shown: {listed}");
        let from_phone = list(&server, &phone).await.sessions;
        assert_eq!(from_phone.iter().find(|s| s.current).map(|s| &s.id), Some(&that.id), "ids are the same for both");
        assert_eq!(list(&server, &other).await.sessions.len(), 1, "another account sees only its own");

        // Another account, an unknown id and garbage are all simply not found.
        for (client, id) in [(&other, that.id.as_str()), (laptop, "0123456789abcdef0123456789abcdef"), (laptop, "%00")]
        {
            let response = end(client, &server, id).await;
            assert_eq!(response.status(), 404, "{id}");
            let _: wire::ErrorBody = response.json().await.unwrap();
        }
        assert_eq!(phone.get(server.url("/api/auth/me")).send().await.unwrap().status(), 200);

        let ended = end(laptop, &server, &that.id).await;
        assert_eq!(ended.status(), 204);
        assert!(ended.headers().get("set-cookie").is_none(), "this device stays signed in");
        assert_eq!(phone.get(server.url("/api/auth/me")).send().await.unwrap().status(), 401, "the phone is out");
        assert_eq!(laptop.get(server.url("/api/auth/me")).send().await.unwrap().status(), 200);
        assert_eq!(end(laptop, &server, &that.id).await.status(), 404, "ended once only");
        let left = list(&server, laptop).await.sessions;
        assert_eq!(left.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), vec![this.id.as_str()]);

        // Ending the current session from the list signs out.
        let out = end(laptop, &server, &this.id).await;
        assert_eq!(out.status(), 204);
        assert!(out.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
        assert_eq!(laptop.get(server.url("/api/auth/sessions")).send().await.unwrap().status(), 401);
        assert_eq!(other.get(server.url("/api/auth/me")).send().await.unwrap().status(), 200, "others are untouched");
    }

    /// Starts an answer that never finishes, from `client`; its event stream.
    pub(super) async fn open_stream(
        server: &TestServer,
        client: &reqwest::Client,
    ) -> impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin {
        let thread = server.create_thread_as(client).await;
        let response = client
            .post(server.url(&format!("/api/threads/{thread}/chat")))
            .json(&serde_json::json!({"content": "Tell me everything"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let mut stream = response.bytes_stream();
        assert!(stream.next().await.is_some(), "the stream started");
        stream
    }

    pub(super) async fn ends_within_a_second(
        stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    ) {
        let ended = tokio::time::timeout(std::time::Duration::from_secs(1), async {
            while let Some(Ok(_)) = stream.next().await {}
        })
        .await;
        assert!(ended.is_ok(), "the stream is still open a second after its session ended");
    }

    async fn ending_a_session_in_any_way_ends_its_open_streams(db: Db) {
        let hanging = || vec![Step::delta("Thinking"), Step::Hang];
        let model = ScriptedModel::new(vec![hanging(), hanging(), hanging(), hanging()]);
        let server = TestServer::with(db.store.clone(), model).await;
        let laptop = &server.client;

        // Ended from the list on another device.
        let phone = sign_in_from(&server, "owner@example.com", PASSWORD, FIREFOX).await;
        let mut stream = open_stream(&server, &phone).await;
        let id = list(&server, &phone).await.sessions.into_iter().find(|s| s.current).unwrap().id;
        assert_eq!(end(laptop, &server, &id).await.status(), 204);
        ends_within_a_second(&mut stream).await;

        // A new password set on another device.
        let phone = sign_in_from(&server, "owner@example.com", PASSWORD, FIREFOX).await;
        let mut stream = open_stream(&server, &phone).await;
        let change = serde_json::json!({"current_password": PASSWORD, "new_password": "lantern orchard velvet"});
        let changed = laptop.post(server.url("/api/auth/password")).json(&change).send().await.unwrap();
        assert_eq!(changed.status(), 204);
        ends_within_a_second(&mut stream).await;

        // Signing out everywhere from another device.
        let phone = sign_in_from(&server, "owner@example.com", "lantern orchard velvet", FIREFOX).await;
        let mut stream = open_stream(&server, &phone).await;
        assert_eq!(laptop.post(server.url("/api/auth/logout-all")).send().await.unwrap().status(), 204);
        ends_within_a_second(&mut stream).await;

        // The account deleted from another device (the first account administers Quire: another administrator
        // first, since the last one may not leave).
        let (_, keeper) = server.second_user("keeper@example.com").await;
        server.state.store.set_admin(keeper.user.id, true).await.unwrap();
        let laptop = sign_in_from(&server, "owner@example.com", "lantern orchard velvet", "curl/8.5.0").await;
        let phone = sign_in_from(&server, "owner@example.com", "lantern orchard velvet", FIREFOX).await;
        let mut stream = open_stream(&server, &phone).await;
        let password = serde_json::json!({"password": "lantern orchard velvet"});
        assert_eq!(laptop.delete(server.url("/api/auth/me")).json(&password).send().await.unwrap().status(), 204);
        ends_within_a_second(&mut stream).await;
    }
}
