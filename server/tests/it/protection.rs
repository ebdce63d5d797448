//! Input limits, rate limits, personal-data redaction and the OpenAPI document.

use crate::common::{post_raw_json, ExpectJson, TestServer, PASSWORD};
use quire::auth::throttle::{delay_after, FREE_FAILURES};
use serde_json::json;
use wire::{ErrorBody, Role, ThreadDetail, ThreadList};

async fn error_of(response: reqwest::Response) -> (u16, ErrorBody) {
    let status = response.status().as_u16();
    (status, response.json::<ErrorBody>().await.unwrap())
}

#[tokio::test]
async fn oversized_fields_are_refused_and_change_nothing() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let before = server.detail(thread).await;
    let long_tag = "t".repeat(51);
    let eleven_tags: Vec<String> = (0..11).map(|i| format!("tag{i}")).collect();
    let cases = [
        (json!({"title": "x".repeat(501)}), "title"),
        (json!({"tags": eleven_tags}), "tags"),
        (json!({"tags": [long_tag]}), "tags"),
    ];
    for (body, field) in cases {
        let create = server.client.post(server.url("/api/threads")).json(&body).send().await.unwrap();
        let (status, error) = error_of(create).await;
        assert_eq!((status, error.error.field.as_deref()), (422, Some(field)), "create {body}");
        let patch = server.patch_thread(thread, &body).await;
        let (status, error) = error_of(patch).await;
        assert_eq!((status, error.error.field.as_deref()), (422, Some(field)), "patch {body}");
    }
    // The limits themselves are allowed.
    let at_limit = json!({"title": "x".repeat(500), "tags": (0..10).map(|i| format!("{i}{}", "t".repeat(49))).collect::<Vec<_>>()});
    let ok = server.client.post(server.url("/api/threads")).json(&at_limit).send().await.unwrap();
    assert_eq!(ok.status(), 201);

    let long_message = server.send_text(thread, &"m".repeat(10_001)).await;
    let (status, error) = error_of(long_message).await;
    assert_eq!((status, error.error.field.as_deref()), (422, Some("content")));

    assert_eq!(server.detail(thread).await, before, "nothing changed");
    let list: ThreadList = server.get_json("/api/threads").await;
    assert_eq!(list.threads.len(), 2, "only the two accepted threads exist");
}

#[tokio::test]
async fn malformed_requests_name_the_problem() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let before = server.detail(thread).await;
    let url = server.url(&format!("/api/threads/{thread}"));

    let chat = server.url(&format!("/api/threads/{thread}/chat"));
    let too_big =
        post_raw_json(&server.client, &chat, format!("{{\"content\": \"{}\"}}", "a".repeat(1024 * 1024 + 10))).await;
    let (status, error) = error_of(too_big).await;
    assert_eq!((status, error.error.code.as_str()), (413, "payload_too_large"));

    let malformed = server.client.patch(&url).header("content-type", "application/json").body("{\"title\": ").send();
    let (status, error) = error_of(malformed.await.unwrap()).await;
    assert_eq!((status, error.error.code.as_str()), (400, "malformed_json"));

    let wrong_type = server.client.patch(&url).json(&json!({"pinned": "yes"})).send().await.unwrap();
    let (status, error) = error_of(wrong_type).await;
    assert_eq!(status, 422);
    assert!(error.error.message.contains("pinned"), "{}", error.error.message);

    let unknown_field = server.client.patch(&url).json(&json!({"owner": "me"})).send().await.unwrap();
    let (status, error) = error_of(unknown_field).await;
    assert_eq!(status, 422);
    assert!(error.error.message.contains("owner"), "{}", error.error.message);

    // serde alone would read a request struct from an array of its field values; bodies are objects only.
    for body in [json!([null, null]), json!(["title", ["tag"]]), json!(null), json!(7)] {
        let response = server.client.post(server.url("/api/threads")).json(&body).send().await.unwrap();
        let (status, error) = error_of(response).await;
        assert_eq!((status, error.error.code.as_str()), (422, "invalid_body"), "{body}");
    }

    let not_json = server.client.patch(&url).body("title=x").send().await.unwrap();
    assert_eq!(not_json.status(), 415);

    let bad_sort = server.get("/api/threads?sort=size").await;
    let (status, error) = error_of(bad_sort).await;
    assert_eq!((status, error.error.field.as_deref()), (422, Some("sort")));
    let bad_bool = server.get("/api/threads?archived=maybe").await;
    let (status, error) = error_of(bad_bool).await;
    assert_eq!((status, error.error.code.as_str()), (400, "invalid_query"));

    for path in ["/api/threads/42", "/api/messages/nope/context", &format!("/api/threads/{thread}/messages/x")] {
        let response = server.get(path).await;
        let response = if response.status() == 405 {
            server.client.delete(server.url(path)).send().await.unwrap()
        } else {
            response
        };
        let (status, error) = error_of(response).await;
        assert_eq!((status, error.error.code.as_str()), (400, "invalid_path"), "{path}");
    }
    assert_eq!(server.detail(thread).await, before, "nothing changed");
}

#[tokio::test]
async fn chat_turns_over_the_limit_get_429_with_retry_after() {
    let server = TestServer::start_with(|c| c.limits.chat = 2).await;
    let thread = server.create_thread().await;
    for i in 0..2 {
        server.chat(thread, &format!("Requirement {i}: the app must work offline.")).await;
        server.wait_idle(thread).await;
    }
    let third = server.send_text(thread, "One more").await;
    assert_eq!(third.status(), 429);
    let retry: u64 = third.headers().get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    assert_eq!(third.json::<ErrorBody>().await.unwrap().error.code, "rate_limited");
    assert_eq!(server.detail(thread).await.messages.len(), 4, "the refused turn saved nothing");

    // Another user has a quota of their own.
    let (other, _) = server.second_user("other@example.com").await;
    let own = server.create_thread_as(&other).await;
    let response = other.post(server.url(&format!("/api/threads/{own}/chat"))).json(&json!({"content": "Hi"})).send();
    assert_eq!(response.await.unwrap().status(), 200);
}

#[tokio::test]
async fn the_general_limit_applies_per_user() {
    let server = TestServer::start_with(|c| c.limits.general = 5).await;
    for _ in 0..5 {
        assert_eq!(server.get("/api/threads").await.status(), 200);
    }
    let over = server.get("/api/threads").await;
    assert_eq!(over.status(), 429);
    assert!(over.headers().get("retry-after").is_some());
    let (other, _) = server.second_user("other@example.com").await;
    assert_eq!(other.get(server.url("/api/threads")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn sign_in_attempts_are_limited_per_ip_address() {
    // The harness's own sign-up is the first attempt.
    let server = TestServer::start_with(|c| c.limits.auth = 3).await;
    let anon = server.anonymous();
    let login = || server.sign_in("owner@example.com", PASSWORD);
    assert_eq!(login().await.status(), 200);
    assert_eq!(login().await.status(), 200);
    let over = login().await;
    assert_eq!(over.status(), 429);
    assert!(over.headers().get("retry-after").is_some());
    let register = anon
        .post(server.url("/api/auth/register"))
        .json(&json!({"email": "late@example.com", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(register.status(), 429);
    // Signed-in use is not affected by the sign-in limit.
    assert_eq!(server.get("/api/auth/me").await.status(), 200);
}

/// The most wrong guesses at one account the throttle lets through within `elapsed` of the first, however they
/// are spread: the guess after `k` failures waits [`delay_after`]`(k)` after the one before it.
pub(crate) fn most_admitted_within(elapsed: std::time::Duration) -> usize {
    let elapsed = chrono::Duration::from_std(elapsed).expect("a short time");
    let (mut admitted, mut earliest) = (1, chrono::Duration::zero());
    loop {
        earliest += delay_after(u32::try_from(admitted).expect("few"));
        if earliest > elapsed {
            return admitted;
        }
        admitted += 1;
    }
}

/// Sends `guesses` wrong passwords for `email` all at once, spread over `servers` in turn, each from a client of
/// its own: how many were checked (401), how many refused unchecked (429), and how long they took together.
pub(crate) async fn guess_at_once(
    servers: &[&TestServer],
    email: &str,
    guesses: usize,
) -> (usize, usize, std::time::Duration) {
    let start = std::time::Instant::now();
    let sent = (0..guesses).map(|i| {
        let server = servers[i % servers.len()];
        server.sign_in(email, &format!("wrong guess {i}"))
    });
    let statuses: Vec<u16> = futures::future::join_all(sent).await.into_iter().map(|r| r.status().as_u16()).collect();
    let took = start.elapsed();
    assert!(statuses.iter().all(|s| [401, 429].contains(s)), "{statuses:?}");
    let checked = statuses.iter().filter(|&&s| s == 401).count();
    (checked, guesses - checked, took)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_guesses_at_once_get_no_more_checks_than_one_after_another() {
    // Only the per-account throttle applies here, not the per-address limit.
    let server = TestServer::start_with(|c| c.limits.auth = 1_000).await;
    for email in ["owner@example.com", "nobody@example.com"] {
        let (checked, refused, took) = guess_at_once(&[&server], email, 24).await;
        assert!(checked > FREE_FAILURES as usize, "{email}: the free failures are checked ({checked})");
        assert!(checked <= most_admitted_within(took), "{email}: {checked} checked in {took:?}, {refused} refused");
    }
}

mod sign_in_counts {
    use std::time::Duration;

    use chrono::Duration as Span;
    use quire::auth::throttle::{FORGET_AFTER_HOURS, FREE_FAILURES};
    use store::now;

    use crate::common::backends::{run_story, stories, Backend, Db};
    use crate::common::TestServer;

    stories!(attempts_at_once_are_counted_one_by_one, counts_a_day_old_are_deleted);

    async fn attempts_at_once_are_counted_one_by_one(db: Db) {
        let at = now();
        let attempts = (0..40).map(|_| {
            let store = db.store.clone();
            tokio::spawn(async move { store.count_sign_in_attempt("ada@example.org", at).await.unwrap() })
        });
        let outcomes: Vec<_> = futures::future::join_all(attempts).await.into_iter().map(Result::unwrap).collect();
        let counted = outcomes.iter().filter(|o| o.is_none()).count();
        assert_eq!(counted, FREE_FAILURES as usize + 1, "the free ones, then one that starts the waits");
        let counts = Some((FREE_FAILURES + 1, at));
        assert!(outcomes.iter().all(|o| o.is_none() || *o == counts), "{outcomes:?}");
        assert_eq!(db.store.sign_in_failures("ada@example.org").await.unwrap(), counts, "refusals count nothing");
        // A second later the next one is counted, and the wait doubles.
        let later = at + Span::seconds(1);
        assert_eq!(db.store.count_sign_in_attempt("ada@example.org", later).await.unwrap(), None);
        assert_eq!(db.store.count_sign_in_attempt("ada@example.org", later).await.unwrap(), Some((5, later)));
        assert!(db.store.count_sign_in_attempt("ada@example.org", later + Span::seconds(1)).await.unwrap().is_some());
        // A day after the last failure the count starts again.
        let next_day = later + Span::hours(FORGET_AFTER_HOURS) + Span::seconds(1);
        assert_eq!(db.store.count_sign_in_attempt("ada@example.org", next_day).await.unwrap(), None);
        assert_eq!(db.store.sign_in_failures("ada@example.org").await.unwrap(), Some((1, next_day)));
        // Other accounts are counted apart.
        assert_eq!(db.store.count_sign_in_attempt("grace@example.org", later).await.unwrap(), None);
        assert_eq!(db.store.sign_in_failures("grace@example.org").await.unwrap(), Some((1, later)));
    }

    async fn counts_a_day_old_are_deleted(db: Db) {
        let at = now();
        let day = Span::hours(FORGET_AFTER_HOURS);
        for (account, ago) in [("old", day + Span::seconds(1)), ("older", day * 30), ("recent", day - Span::minutes(1))]
        {
            assert_eq!(db.store.count_sign_in_attempt(account, at - ago).await.unwrap(), None);
        }
        assert_eq!(db.store.forget_sign_in_failures(at - day).await.unwrap(), 2);
        assert_eq!(db.store.sign_in_failures("old").await.unwrap(), None);
        assert_eq!(db.store.sign_in_failures("older").await.unwrap(), None);
        assert!(db.store.sign_in_failures("recent").await.unwrap().is_some());
        assert_eq!(db.store.forget_sign_in_failures(at - day).await.unwrap(), 0);
        // A running server deletes them by itself (the first time as it starts).
        assert_eq!(db.store.count_sign_in_attempt("stale", at - day * 2).await.unwrap(), None);
        let _server = TestServer::builtin(db.store.clone()).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while db.store.sign_in_failures("stale").await.unwrap().is_some() {
            assert!(std::time::Instant::now() < deadline, "the stale count is still there");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(db.store.sign_in_failures("recent").await.unwrap().is_some(), "a recent count stays");
    }
}

#[tokio::test]
async fn rate_limits_can_be_turned_off() {
    let server = TestServer::start_with(|c| {
        c.limits.general = 1;
        c.limits.enabled = "off".into();
    })
    .await;
    for _ in 0..5 {
        assert_eq!(server.get("/api/threads").await.status(), 200);
    }
}

const PERSONAL: &str = "Contact me at jane.doe@example.com or +1 415 555 2671. \
                        Pay to DE89 3704 0044 0532 0130 00 with card 4242 4242 4242 4242.";

async fn stored_question(server: &TestServer) -> (String, ThreadDetail) {
    let thread = server.create_thread().await;
    server.chat(thread, PERSONAL).await;
    let detail = server.wait_idle(thread).await;
    let question = detail.messages.iter().find(|m| m.role == Role::User).unwrap().content.clone();
    (question, detail)
}

#[tokio::test]
async fn personal_data_is_redacted_when_asked() {
    let server = TestServer::start_with(|c| c.redact_pii = true).await;
    let (question, detail) = stored_question(&server).await;
    assert_eq!(question, "Contact me at [EMAIL] or [PHONE]. Pay to [IBAN] with card [CARD].");
    for message in &detail.messages {
        for secret in ["jane.doe", "555 2671", "3704 0044", "4242 4242"] {
            assert!(!message.content.contains(secret), "{secret} reached {:?}", message.role);
        }
    }
}

#[tokio::test]
async fn personal_data_is_kept_by_default() {
    let server = TestServer::start().await;
    let (question, _) = stored_question(&server).await;
    assert_eq!(question, PERSONAL);
}

#[tokio::test]
async fn openapi_describes_every_route() {
    let server = TestServer::start().await;
    let doc: serde_json::Value = server.anonymous().get(server.url("/api/openapi.json")).expect_json().await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let expected = [
        ("/api/health", "get"),
        ("/api/ready", "get"),
        ("/api/auth/register", "post"),
        ("/api/auth/login", "post"),
        ("/api/auth/logout", "post"),
        ("/api/auth/logout-all", "post"),
        ("/api/auth/password", "post"),
        ("/api/auth/me", "get"),
        ("/api/auth/me", "delete"),
        ("/api/auth/sessions", "get"),
        ("/api/auth/sessions/{id}", "delete"),
        ("/api/auth/reset-password", "post"),
        ("/api/auth/methods", "get"),
        ("/api/auth/oidc/start", "get"),
        ("/api/auth/oidc/callback", "get"),
        ("/api/tokens", "post"),
        ("/api/tokens", "get"),
        ("/api/tokens/{id}", "delete"),
        ("/api/admin/users", "get"),
        ("/api/admin/projects", "get"),
        ("/api/admin/users/{id}", "delete"),
        ("/api/admin/users/{id}/role", "put"),
        ("/api/admin/users/{id}/disabled", "put"),
        ("/api/admin/users/{id}/budget", "put"),
        ("/api/admin/users/{id}/reset-link", "post"),
        ("/api/admin/users/{id}/tokens", "get"),
        ("/api/admin/tokens/{id}", "delete"),
        ("/api/admin/invites", "get"),
        ("/api/admin/invites", "post"),
        ("/api/admin/invites/{id}", "delete"),
        ("/api/admin/signup", "get"),
        ("/api/admin/signup", "put"),
        ("/api/threads", "get"),
        ("/api/threads", "post"),
        ("/api/threads/{id}", "get"),
        ("/api/threads/{id}", "patch"),
        ("/api/threads/{id}", "delete"),
        ("/api/threads/{id}/messages/{message_id}", "delete"),
        ("/api/threads/{id}/chat", "post"),
        ("/api/threads/{id}/stream", "get"),
        ("/api/threads/{id}/changes", "get"),
        ("/api/threads/{id}/stop", "post"),
        ("/api/threads/{id}/messages/{message_id}/retry", "post"),
        ("/api/threads/{id}/messages", "post"),
        ("/api/messages/{id}/context", "get"),
        ("/api/messages/{id}/trace", "get"),
        ("/api/turns/{id}/trace", "get"),
        ("/api/search", "get"),
        ("/api/stats", "get"),
        ("/api/threads/{id}/export", "get"),
        ("/api/export", "get"),
        ("/api/threads/import", "post"),
        ("/api/threads/{id}/artifacts", "get"),
        ("/api/artifacts/{id}", "get"),
        ("/api/artifacts/{id}", "put"),
        ("/api/artifacts/{id}", "delete"),
        ("/api/artifacts/{id}/versions", "get"),
        ("/api/artifacts/{id}/versions/{version}", "get"),
        ("/api/artifacts/{id}/versions/{version}/restore", "post"),
        ("/api/artifacts/{id}/diff", "get"),
        ("/api/artifacts/{id}/compare", "post"),
        ("/api/artifacts/{id}/update", "post"),
        ("/api/threads/{id}/requirements", "get"),
        ("/api/threads/{id}/requirements/{key}", "patch"),
        ("/api/threads/{id}/requirements/export", "get"),
        ("/api/tags", "get"),
        ("/api/artifacts/{id}/export", "get"),
        ("/api/threads/{id}/attachments", "post"),
        ("/api/threads/{id}/attachments", "get"),
        ("/api/threads/{id}/attachments/{attachment_id}", "delete"),
        ("/api/threads/{id}/messages/{message_id}/regenerate", "post"),
        ("/api/threads/{id}/branch", "post"),
        ("/api/settings", "get"),
        ("/api/settings", "patch"),
        ("/api/threads/{id}/shares", "post"),
        ("/api/threads/{id}/shares", "get"),
        ("/api/shares", "get"),
        ("/api/projects", "get"),
        ("/api/projects", "post"),
        ("/api/projects/{id}", "get"),
        ("/api/projects/{id}", "patch"),
        ("/api/projects/{id}", "delete"),
        ("/api/projects/{id}/members", "get"),
        ("/api/projects/{id}/members", "post"),
        ("/api/projects/{id}/members/{user_id}", "patch"),
        ("/api/projects/{id}/members/{user_id}", "delete"),
        ("/api/projects/{id}/invitations/{invitation_id}", "delete"),
        ("/api/projects/{id}/activity", "get"),
        ("/api/projects/{id}/threads", "get"),
        ("/api/projects/{id}/requirements", "get"),
        ("/api/projects/{id}/export", "get"),
        ("/api/shares/{id}", "delete"),
        ("/api/shared/{token}", "get"),
        ("/api/models", "get"),
        ("/api/mcp/servers", "get"),
        ("/api/threads/{id}/approvals/{approval_id}", "post"),
    ];
    for (path, method) in expected {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} missing");
    }
    assert_eq!(paths.values().map(|p| p.as_object().unwrap().len()).sum::<usize>(), expected.len());
    let chat = &paths["/api/threads/{id}/chat"]["post"]["responses"]["200"]["content"];
    assert!(chat.get("text/event-stream").is_some(), "{chat}");
    for schema in ["Thread", "ThreadDetail", "ChatRequest", "ChatEvent", "ErrorBody", "AuthResponse", "RegisterRequest"]
    {
        assert!(doc["components"]["schemas"].get(schema).is_some(), "schema {schema} missing");
    }
    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(bearer["scheme"], "bearer");
    assert!(bearer["description"].as_str().is_some_and(|d| d.contains("quire_pat_")), "{bearer}");
    let scope = &paths["/api/threads"]["post"]["responses"]["403"]["description"];
    assert!(scope.as_str().is_some_and(|d| d.contains("token_scope")), "{scope}");
}
