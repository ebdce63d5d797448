//! Personal API tokens on both backends: a token's secret is shown once and stored hashed; it signs requests in
//! as its owner (counted against their rate limit) until it is revoked, expires, or its account is disabled or
//! deleted; a `read` token is refused every route that writes, a `chat` token every one outside conversations
//! (both checked over every route the OpenAPI document describes, so routes added later are covered); no token
//! manages tokens, the account or Quire; another person can neither see nor revoke one; an administrator lists
//! and revokes any account's; the event streams a token opened end when it is revoked, on any instance.

use futures::StreamExt;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use uuid::Uuid;
use wire::{ApiTokenInfo, ApiTokenList, CreatedToken, ErrorBody, TokenScope, UserProfile};

use crate::common::backends::{run_story, stories, Backend, Db, Raw};
use crate::common::{bearer_client, read_frames, ExpectJson, ScriptedModel, Step, TestServer};

stories!(
    a_token_is_shown_once_stored_hashed_and_signs_in_as_its_owner,
    tokens_are_named_scoped_and_expire_within_limits,
    a_read_token_is_refused_every_route_that_writes,
    a_chat_token_writes_in_conversations_and_nowhere_else,
    revoked_expired_and_disabled_tokens_are_refused,
    a_deleted_account_takes_its_tokens_with_it,
    another_person_can_neither_see_nor_revoke_a_token,
    administrators_list_and_revoke_any_account_s_tokens,
    a_token_s_requests_count_against_its_owner_s_rate_limit,
    a_revoked_token_s_streams_end_on_every_instance,
);

async fn server(db: &Db) -> TestServer {
    TestServer::with(db.store.clone(), ScriptedModel::new(Vec::new())).await
}

/// Posts a new token with `client`: the answer, whatever its status.
async fn post_token(server: &TestServer, client: &reqwest::Client, body: Value) -> reqwest::Response {
    client.post(server.url("/api/tokens")).json(&body).send().await.unwrap()
}

/// A new token of the person `client` signs in, named `name`, with `scope`, lasting 30 days.
async fn make_token(server: &TestServer, client: &reqwest::Client, name: &str, scope: TokenScope) -> CreatedToken {
    let response = post_token(server, client, json!({ "name": name, "scope": scope, "expires_in_days": 30 })).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.unwrap()
}

async fn list(server: &TestServer, client: &reqwest::Client) -> Vec<ApiTokenInfo> {
    client.get(server.url("/api/tokens")).expect_json::<ApiTokenList>().await.tokens
}

async fn status(client: &reqwest::Client, server: &TestServer, path: &str) -> StatusCode {
    client.get(server.url(path)).send().await.unwrap().status()
}

/// Asserts the status and error code of a refusal.
async fn refused(response: reqwest::Response, status: StatusCode, code: &str) -> ErrorBody {
    let url = response.url().clone();
    assert_eq!(response.status(), status, "{url}: expected {code}");
    let body: ErrorBody = response.json().await.unwrap();
    assert_eq!(body.error.code, code, "{}", body.error.message);
    body
}

/// The stored hash of a secret: its SHA-256, in hex.
fn sha256_hex(secret: &str) -> String {
    Sha256::digest(secret.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// One text column of the token's row, read straight from the database.
async fn stored(db: &Db, column: &str, id: Uuid) -> String {
    let sql = format!("select cast({column} as text) from api_tokens where id = ?");
    match &db.raw {
        Raw::Sqlite(pool) => sqlx::query_scalar(&sql).bind(id.to_string()).fetch_one(pool).await.unwrap(),
        Raw::Postgres(pool) => sqlx::query_scalar(&sql.replace('?', "$1")).bind(id).fetch_one(pool).await.unwrap(),
    }
}

async fn a_token_is_shown_once_stored_hashed_and_signs_in_as_its_owner(db: Db) {
    let server = server(&db).await;
    let thread = server.create_titled_thread("Library booking").await;
    let created = make_token(&server, &server.client, "  Nightly report  ", TokenScope::Read).await;
    let secret = created.token.clone();
    assert!(secret.starts_with("quire_pat_") && secret.len() == 53, "{secret}");
    assert_eq!(created.info.name, "Nightly report");
    assert_eq!((created.info.scope, created.info.last_used_at), (TokenScope::Read, None));
    assert_eq!(created.info.prefix, secret["quire_pat_".len()..][..8]);
    assert_eq!(created.info.expires_at - created.info.created_at, chrono::Duration::days(30));

    // Listed without its secret, in any form.
    let listed = server.client.get(server.url("/api/tokens")).send().await.unwrap().text().await.unwrap();
    assert!(!listed.contains(&secret) && !listed.contains("\"token\""), "{listed}");
    let tokens: ApiTokenList = serde_json::from_str(&listed).unwrap();
    assert_eq!(tokens.tokens, vec![created.info.clone()]);

    // Kept as a hash: the secret is in no column of its row.
    assert_eq!(stored(&db, "token_hash", created.info.id).await, sha256_hex(&secret));
    for column in ["id", "name", "prefix", "token_hash", "scope"] {
        assert!(!stored(&db, column, created.info.id).await.contains(&secret["quire_pat_".len()..]), "{column}");
    }

    // It signs requests in as its owner.
    let program = bearer_client(&secret);
    let me: UserProfile = program.get(server.url("/api/auth/me")).expect_json().await;
    assert_eq!(me.id, server.user.id);
    let threads: Value = program.get(server.url("/api/threads")).expect_json().await;
    assert_eq!(threads["threads"][0]["id"], json!(thread));
    assert_eq!(status(&program, &server, &format!("/api/threads/{thread}")).await, StatusCode::OK);
    // Its session list marks no session as the one asking.
    let sessions: wire::SessionList = program.get(server.url("/api/auth/sessions")).expect_json().await;
    assert!(!sessions.sessions.is_empty() && sessions.sessions.iter().all(|s| !s.current));

    // Its use is recorded, off the request's path.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let used = loop {
        let token = list(&server, &server.client).await.remove(0);
        if token.last_used_at.is_some() || std::time::Instant::now() > deadline {
            break token.last_used_at;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(used.is_some_and(|at| at >= created.info.created_at), "{used:?}");

    // A secret a letter off, a made-up one, or one far too long: 401.
    let mut wrong = secret.clone();
    wrong.pop();
    wrong.push(if secret.ends_with('A') { 'B' } else { 'A' });
    let too_long = format!("{secret}{}", "A".repeat(100));
    for bad in [wrong.as_str(), "quire_pat_", "quire_pat_nothing", too_long.as_str()] {
        assert_eq!(status(&bearer_client(bad), &server, "/api/threads").await, StatusCode::UNAUTHORIZED, "{bad}");
    }
}

async fn tokens_are_named_scoped_and_expire_within_limits(db: Db) {
    let server = server(&db).await;
    let post = |body: Value| post_token(&server, &server.client, body);
    let long_name = "x".repeat(wire::MAX_TOKEN_NAME_CHARS + 1);
    for (body, field) in [
        (json!({ "name": "   ", "scope": "read", "expires_in_days": 30 }), Some("name")),
        (json!({ "name": long_name, "scope": "read", "expires_in_days": 30 }), Some("name")),
        (json!({ "name": "a\u{0}b", "scope": "read", "expires_in_days": 30 }), Some("name")),
        (json!({ "name": "CI", "scope": "read", "expires_in_days": 0 }), Some("expires_in_days")),
        (json!({ "name": "CI", "scope": "read", "expires_in_days": 366 }), Some("expires_in_days")),
        (json!({ "name": "CI", "scope": "write", "expires_in_days": 30 }), None),
        (json!({ "name": "CI", "scope": "admin", "expires_in_days": 30 }), None),
        // Every token expires.
        (json!({ "name": "CI", "scope": "read" }), None),
        (json!({ "name": "CI", "scope": "read", "expires_in_days": null }), None),
    ] {
        let response = post(body.clone()).await;
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let error: ErrorBody = response.json().await.unwrap();
        if field.is_some() {
            assert_eq!(error.error.field.as_deref(), field, "{body}");
        }
    }
    assert!(list(&server, &server.client).await.is_empty(), "nothing refused was kept");

    let longest = post(json!({ "name": "Yearly", "scope": "chat", "expires_in_days": 365 })).await;
    assert_eq!(longest.status(), StatusCode::CREATED);
    let longest: CreatedToken = longest.json().await.unwrap();
    assert_eq!(longest.info.expires_at - longest.info.created_at, chrono::Duration::days(365));
    assert_eq!(longest.info.scope, TokenScope::Chat);

    // Up to 50 live tokens; revoking one makes room.
    for n in 1..wire::MAX_LIVE_TOKENS {
        make_token(&server, &server.client, &format!("Token {n}"), TokenScope::Read).await;
    }
    let listed = list(&server, &server.client).await;
    assert_eq!(listed.len(), wire::MAX_LIVE_TOKENS as usize);
    assert_eq!(listed[0].name, format!("Token {}", wire::MAX_LIVE_TOKENS - 1), "the newest first");
    let over = post(json!({ "name": "One more", "scope": "read", "expires_in_days": 1 })).await;
    refused(over, StatusCode::CONFLICT, "conflict").await;
    let revoke = server.client.delete(server.url(&format!("/api/tokens/{}", listed[3].id))).send().await.unwrap();
    assert_eq!(revoke.status(), StatusCode::NO_CONTENT);
    make_token(&server, &server.client, "One more", TokenScope::Read).await;
}

/// A value for each parameter in `path` of the OpenAPI document's `operation`: a whole number where one is
/// wanted, else a random UUID (which names nothing).
fn filled(path: &str, operation: &Value) -> String {
    let mut filled = path.to_string();
    for parameter in operation["parameters"].as_array().into_iter().flatten().filter(|p| p["in"] == "path") {
        let name = parameter["name"].as_str().unwrap();
        let value = match parameter["schema"]["type"].as_str() {
            Some("integer") => "1".to_string(),
            _ => Uuid::new_v4().to_string(),
        };
        filled = filled.replace(&format!("{{{name}}}"), &value);
    }
    assert!(!filled.contains('{'), "a parameter of {path} was left unfilled");
    filled
}

/// Every operation of the API's document that takes a signed-in caller: its method, its path (as documented)
/// and that path with its parameters filled in.
async fn signed_in_routes(server: &TestServer) -> Vec<(Method, String, String)> {
    let doc: Value = server.anonymous().get(server.url("/api/openapi.json")).expect_json().await;
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let signed_in = operation["security"].as_array().is_some_and(|s| !s.is_empty());
            if signed_in {
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                routes.push((method, path.clone(), filled(path, operation)));
            }
        }
    }
    assert!(routes.len() > 60, "the document describes the API: {}", routes.len());
    routes
}

/// `method path` with `client` and an empty JSON object as its body.
async fn send(server: &TestServer, client: &reqwest::Client, method: Method, path: &str) -> reqwest::Response {
    client.request(method, server.url(path)).json(&json!({})).send().await.unwrap()
}

async fn a_read_token_is_refused_every_route_that_writes(db: Db) {
    let server = server(&db).await;
    // The owner administers Quire: even so, the token reaches no administration.
    let thread = server.create_thread().await;
    let reader = bearer_client(&make_token(&server, &server.client, "Reader", TokenScope::Read).await.token);
    let before: Value = server.get_json(&format!("/api/threads/{thread}")).await;
    let mut writes = 0;
    for (method, path, filled) in signed_in_routes(&server).await {
        let administration = path.starts_with("/api/admin/");
        if method == Method::GET && !administration {
            continue;
        }
        writes += usize::from(method != Method::GET);
        let response = send(&server, &reader, method.clone(), &filled).await;
        let body = refused(response, StatusCode::FORBIDDEN, "token_scope").await;
        let why = if administration { "sign" } else { "read" };
        assert!(body.error.message.contains(why), "{method} {path}: {}", body.error.message);
    }
    assert!(writes > 40, "every route that writes was tried: {writes}");
    // Its own conversation, too, and nothing changed.
    for (method, path) in [
        (Method::PATCH, format!("/api/threads/{thread}")),
        (Method::DELETE, format!("/api/threads/{thread}")),
        (Method::POST, format!("/api/threads/{thread}/messages")),
    ] {
        refused(send(&server, &reader, method, &path).await, StatusCode::FORBIDDEN, "token_scope").await;
    }
    let after: Value = server.get_json(&format!("/api/threads/{thread}")).await;
    assert_eq!(before, after);
    // It still reads.
    assert_eq!(status(&reader, &server, &format!("/api/threads/{thread}")).await, StatusCode::OK);
    assert_eq!(reader.head(server.url("/api/threads")).send().await.unwrap().status(), StatusCode::OK);
    assert_eq!(list(&server, &reader).await.len(), 1, "it lists the person's tokens, never their secrets");
}

async fn a_chat_token_writes_in_conversations_and_nowhere_else(db: Db) {
    let model = ScriptedModel::new(vec![ScriptedModel::text(&["Here ", "you ", "are."])]);
    let server = TestServer::with(db.store.clone(), model).await;
    let chat = bearer_client(&make_token(&server, &server.client, "Assistant", TokenScope::Chat).await.token);

    // A conversation, a message and an answer.
    let thread: wire::Thread = chat.post(server.url("/api/threads")).json(&json!({})).expect_json().await;
    let response = chat.post(server.url(&format!("/api/threads/{}/chat", thread.id))).json(&json!({"content": "Hi"}));
    let response = response.send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    read_frames(response).await;
    let renamed = chat.patch(server.url(&format!("/api/threads/{}", thread.id))).json(&json!({"title": "Renamed"}));
    assert_eq!(renamed.send().await.unwrap().status(), StatusCode::OK);
    let detail: wire::ThreadDetail = server.get_json(&format!("/api/threads/{}", thread.id)).await;
    assert_eq!(detail.thread.title, "Renamed");
    assert_eq!(detail.messages.len(), 2, "{:?}", detail.messages);
    assert_eq!(detail.messages[1].content, "Here you are.");

    // Every route that writes outside conversations and their documents is refused, and so are share links.
    let mut refusals = 0;
    for (method, path, filled) in signed_in_routes(&server).await {
        let in_conversations = path.starts_with("/api/threads") || path.starts_with("/api/artifacts/");
        let allowed = if path.starts_with("/api/admin/") {
            false
        } else {
            method == Method::GET || (in_conversations && !path.ends_with("/shares"))
        };
        let response = send(&server, &chat, method.clone(), &filled).await;
        if allowed {
            if response.status() == StatusCode::FORBIDDEN {
                let body: ErrorBody = response.json().await.unwrap();
                assert_ne!(body.error.code, "token_scope", "{method} {path}");
            }
        } else {
            refused(response, StatusCode::FORBIDDEN, "token_scope").await;
            refusals += 1;
        }
    }
    assert!(refusals > 20, "{refusals}");
    // Named here too, so that the sweep above cannot pass by missing them.
    for (method, path) in [
        (Method::POST, "/api/tokens".to_string()),
        (Method::POST, "/api/auth/password".to_string()),
        (Method::POST, "/api/auth/logout".to_string()),
        (Method::DELETE, "/api/auth/me".to_string()),
        (Method::PATCH, "/api/settings".to_string()),
        (Method::POST, format!("/api/threads/{}/shares", thread.id)),
        (Method::PUT, format!("/api/admin/users/{}/role", server.user.id)),
        (Method::GET, "/api/admin/users".to_string()),
    ] {
        refused(send(&server, &chat, method, &path).await, StatusCode::FORBIDDEN, "token_scope").await;
    }
    let body = json!({"name": "Minted", "scope": "chat", "expires_in_days": 1});
    refused(post_token(&server, &chat, body).await, StatusCode::FORBIDDEN, "token_scope").await;
    assert_eq!(list(&server, &server.client).await.len(), 1, "a token made no token");
    // The account is still there and still signed in.
    assert_eq!(status(&server.client, &server, "/api/auth/me").await, StatusCode::OK);
}

/// Moves the token's expiry into the past: time no test waits for.
async fn expire(db: &Db, id: Uuid) {
    let past = match db.raw {
        Raw::Sqlite(_) => "1",
        Raw::Postgres(_) => "now() - interval '1 second'",
    };
    db.raw.exec(&format!("update api_tokens set expires_at = {past} where id = ?"), id).await;
}

async fn revoked_expired_and_disabled_tokens_are_refused(db: Db) {
    let server = server(&db).await;
    let (bob, session) = server.second_user("bob@example.com").await;

    let revoked = make_token(&server, &bob, "Revoked", TokenScope::Read).await;
    let program = bearer_client(&revoked.token);
    assert_eq!(status(&program, &server, "/api/threads").await, StatusCode::OK);
    let revoke = bob.delete(server.url(&format!("/api/tokens/{}", revoked.info.id))).send().await.unwrap();
    assert_eq!(revoke.status(), StatusCode::NO_CONTENT);
    let after = program.get(server.url("/api/threads")).send().await.unwrap();
    refused(after, StatusCode::UNAUTHORIZED, "unauthorized").await;
    assert!(list(&server, &bob).await.is_empty());
    let again = bob.delete(server.url(&format!("/api/tokens/{}", revoked.info.id))).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_FOUND);

    let expired = make_token(&server, &bob, "Expired", TokenScope::Read).await;
    expire(&db, expired.info.id).await;
    assert_eq!(status(&bearer_client(&expired.token), &server, "/api/threads").await, StatusCode::UNAUTHORIZED);
    assert!(list(&server, &bob).await.is_empty(), "an expired token is not listed");
    let gone = bob.delete(server.url(&format!("/api/tokens/{}", expired.info.id))).send().await.unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);

    // Refused while the account is disabled; the administrator may enable it again.
    let live = make_token(&server, &bob, "Live", TokenScope::Chat).await;
    let program = bearer_client(&live.token);
    assert_eq!(status(&program, &server, "/api/threads").await, StatusCode::OK);
    let disable = |disabled: bool| {
        let path = format!("/api/admin/users/{}/disabled", session.user.id);
        server.client.put(server.url(&path)).json(&json!({ "disabled": disabled })).send()
    };
    assert_eq!(disable(true).await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(status(&program, &server, "/api/threads").await, StatusCode::UNAUTHORIZED);
    assert_eq!(program.post(server.url("/api/threads")).json(&json!({})).send().await.unwrap().status(), 401);
    assert_eq!(disable(false).await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(status(&program, &server, "/api/threads").await, StatusCode::OK);
}

async fn a_deleted_account_takes_its_tokens_with_it(db: Db) {
    let server = server(&db).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let (carol, carol_session) = server.second_user("carol@example.com").await;
    let bobs = make_token(&server, &bob, "Bob's", TokenScope::Chat).await;
    let carols = make_token(&server, &carol, "Carol's", TokenScope::Read).await;
    assert_eq!(db.raw.count("api_tokens", "user_id", session.user.id).await, 1);

    // Deleted by its owner (with a session: a token cannot delete the account).
    let body = json!({ "password": crate::common::PASSWORD });
    let by_token = bearer_client(&bobs.token).delete(server.url("/api/auth/me")).json(&body).send().await;
    refused(by_token.unwrap(), StatusCode::FORBIDDEN, "token_scope").await;
    let deleted = bob.delete(server.url("/api/auth/me")).json(&body).send().await.unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(status(&bearer_client(&bobs.token), &server, "/api/threads").await, StatusCode::UNAUTHORIZED);
    assert_eq!(db.raw.count("api_tokens", "user_id", session.user.id).await, 0);

    // Deleted by an administrator.
    let removed = server.client.delete(server.url(&format!("/api/admin/users/{}", carol_session.user.id))).send();
    assert_eq!(removed.await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(status(&bearer_client(&carols.token), &server, "/api/threads").await, StatusCode::UNAUTHORIZED);
    assert_eq!(db.raw.count("api_tokens", "user_id", carol_session.user.id).await, 0);
    drop(carol);
}

async fn another_person_can_neither_see_nor_revoke_a_token(db: Db) {
    let server = server(&db).await;
    let mine = make_token(&server, &server.client, "Mine", TokenScope::Read).await;
    let (bob, _) = server.second_user("bob@example.com").await;
    assert!(list(&server, &bob).await.is_empty());
    let revoke = bob.delete(server.url(&format!("/api/tokens/{}", mine.info.id))).send().await.unwrap();
    refused(revoke, StatusCode::NOT_FOUND, "not_found").await;
    // Nor with a token of theirs, nor through administration.
    let bobs = bearer_client(&make_token(&server, &bob, "Bob's", TokenScope::Chat).await.token);
    let revoke = bobs.delete(server.url(&format!("/api/tokens/{}", mine.info.id))).send().await.unwrap();
    assert_eq!(revoke.status(), StatusCode::FORBIDDEN);
    let listed = bob.get(server.url(&format!("/api/admin/users/{}/tokens", server.user.id))).send().await.unwrap();
    assert_eq!(listed.status(), StatusCode::NOT_FOUND);
    let revoke = bob.delete(server.url(&format!("/api/admin/tokens/{}", mine.info.id))).send().await.unwrap();
    assert_eq!(revoke.status(), StatusCode::NOT_FOUND);
    // Bob's token reads Bob's things only.
    server.create_thread().await;
    let threads: Value = bobs.get(server.url("/api/threads")).expect_json().await;
    assert_eq!(threads["threads"], json!([]));
    assert_eq!(status(&bearer_client(&mine.token), &server, "/api/threads").await, StatusCode::OK);
    assert_eq!(list(&server, &server.client).await.len(), 1);
}

async fn administrators_list_and_revoke_any_account_s_tokens(db: Db) {
    let server = server(&db).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let first = make_token(&server, &bob, "First", TokenScope::Read).await;
    let second = make_token(&server, &bob, "Second", TokenScope::Chat).await;
    let path = format!("/api/admin/users/{}/tokens", session.user.id);
    let listed: ApiTokenList = server.get_json(&path).await;
    assert_eq!(listed.tokens, vec![second.info.clone(), first.info.clone()]);
    let text = server.get(&path).await.text().await.unwrap();
    assert!(!text.contains(&first.token) && !text.contains(&second.token));
    assert_eq!(server.get(&format!("/api/admin/users/{}/tokens", Uuid::new_v4())).await.status(), 404);

    let revoke = |id: Uuid| server.client.delete(server.url(&format!("/api/admin/tokens/{id}"))).send();
    assert_eq!(revoke(first.info.id).await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(status(&bearer_client(&first.token), &server, "/api/threads").await, StatusCode::UNAUTHORIZED);
    assert_eq!(status(&bearer_client(&second.token), &server, "/api/threads").await, StatusCode::OK);
    let left: Vec<Uuid> = list(&server, &bob).await.into_iter().map(|t| t.id).collect();
    assert_eq!(left, vec![second.info.id]);
    assert_eq!(revoke(first.info.id).await.unwrap().status(), StatusCode::NOT_FOUND);
    assert_eq!(revoke(Uuid::new_v4()).await.unwrap().status(), StatusCode::NOT_FOUND);
}

async fn a_token_s_requests_count_against_its_owner_s_rate_limit(db: Db) {
    let server = TestServer::with_configured(db.store.clone(), ScriptedModel::new(Vec::new()), |config| {
        config.limits.general = 6;
    })
    .await;
    let (bob, _) = server.second_user("bob@example.com").await;
    // One request of the session's, then the token's.
    let program = bearer_client(&make_token(&server, &server.client, "Busy", TokenScope::Read).await.token);
    for _ in 0..5 {
        assert_eq!(status(&program, &server, "/api/threads").await, StatusCode::OK);
    }
    let over = program.get(server.url("/api/threads")).send().await.unwrap();
    assert!(over.headers().get("retry-after").is_some());
    refused(over, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // The same person, whichever way they sign in; nobody else.
    assert_eq!(status(&server.client, &server, "/api/threads").await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(status(&bob, &server, "/api/threads").await, StatusCode::OK);
}

/// A new conversation's answer being written, as a stream opened with `token`, once it has started.
async fn open_with(
    server: &TestServer,
    token: &str,
) -> impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin {
    let client = bearer_client(token);
    let thread: wire::Thread = client.post(server.url("/api/threads")).json(&json!({})).expect_json().await;
    let chat = client.post(server.url(&format!("/api/threads/{}/chat", thread.id)));
    let response = chat.json(&json!({"content": "Tell me everything"})).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = response.bytes_stream();
    assert!(stream.next().await.is_some(), "the stream started");
    stream
}

/// Waits for `stream` to end, at most `within`.
async fn ends_within(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    within: std::time::Duration,
) {
    let ended = tokio::time::timeout(within, async { while let Some(Ok(_)) = stream.next().await {} }).await;
    assert!(ended.is_ok(), "the stream is still open {within:?} after its token was revoked");
}

async fn a_revoked_token_s_streams_end_on_every_instance(db: Db) {
    let hanging = || vec![Step::delta("Thinking"), Step::Hang];
    let model = ScriptedModel::new(vec![hanging(), hanging()]);
    let here = TestServer::with(db.store.clone(), model.clone()).await;
    // Another instance on the same database.
    let there = TestServer::with(db.store.clone(), model).await;
    let local = make_token(&here, &here.client, "Local", TokenScope::Chat).await;
    let remote = make_token(&here, &here.client, "Remote", TokenScope::Chat).await;
    let mut on_this_instance = open_with(&here, &local.token).await;
    let mut on_another_instance = open_with(&there, &remote.token).await;
    for token in [&local, &remote] {
        let revoke = here.client.delete(here.url(&format!("/api/tokens/{}", token.info.id))).send().await.unwrap();
        assert_eq!(revoke.status(), StatusCode::NO_CONTENT);
    }
    ends_within(&mut on_this_instance, std::time::Duration::from_secs(1)).await;
    // The other instance looks for revoked tokens every half second.
    ends_within(&mut on_another_instance, std::time::Duration::from_secs(3)).await;
}
