//! Operator control on both backends: the first account administers Quire (also when the first sign-ups come
//! at once), sign-up is open, by invitation or closed, invitations are counted atomically and refused clearly
//! once invalid, expired, revoked or used up; `/api/admin/...` is a 404 to everyone but an administrator;
//! disabling ends an account's sessions at once (on PostgreSQL also on another instance) and stops its answers
//! being written, deleting removes it as deleting one's own account does, and a reset link sets a new password
//! once and ends the old sessions.

use std::sync::Arc;

use futures::future::join_all;
use quire::config::Config;
use reqwest::Method;
use store::{NewUser, SignUpMode, SignUpRefusal};
use uuid::Uuid;
use wire::admin::{AdminAccountList, CreatedInvite, InviteList, ResetLink, SignUpMode as WireMode, SignUpSettings};
use wire::{AuthResponse, ErrorBody, MessageStatus};

use crate::chat_turns::{chat_until_draft_as, half_an_answer};
use crate::common::backends::{run_story, stories, Backend, Db, Raw};
use crate::common::{
    fresh_postgres_url, get_json, shared_instance, sign_up_or_in, ScriptedModel, TestServer, PASSWORD,
};

stories!(
    the_first_account_administers_and_later_ones_do_not,
    first_sign_ups_at_once_give_exactly_one_administrator,
    a_closed_quire_admits_only_the_first_account,
    a_closed_quire_refuses_sign_ups_after_the_first,
    admin_routes_are_a_404_to_everyone_else,
    sign_up_by_invitation_counts_each_use_and_refuses_clearly,
    a_one_use_invitation_admits_one_of_many_at_once,
    the_sign_up_mode_is_shared_and_closes_sign_up,
    a_disabled_account_is_signed_out_and_cannot_sign_in,
    disabling_an_account_stops_the_answers_it_has_being_written,
    administrators_are_made_and_never_all_removed,
    deleting_an_account_removes_it_and_ends_its_sessions,
    a_reset_link_sets_a_password_once_and_ends_the_old_sessions,
    accounts_are_listed_with_their_usage_and_budgets,
);

async fn server(db: &Db, configure: impl FnOnce(&mut Config)) -> TestServer {
    TestServer::with_configured(db.store.clone(), ScriptedModel::new(Vec::new()), configure).await
}

async fn invite_server(db: &Db) -> TestServer {
    server(db, |config| config.signup = SignUpMode::Invite).await
}

/// Posts a sign-up of `email`, with an invitation's token when given.
async fn register(server: &TestServer, email: &str, invite: Option<&str>) -> reqwest::Response {
    let mut body = serde_json::json!({ "email": email, "password": PASSWORD });
    if let Some(token) = invite {
        body["invite"] = token.into();
    }
    server.anonymous().post(server.url("/api/auth/register")).json(&body).send().await.unwrap()
}

/// Asserts the status and error code of a refusal.
async fn refused(response: reqwest::Response, status: u16, code: &str) {
    assert_eq!(response.status(), status, "expected {code}");
    let body: ErrorBody = response.json().await.unwrap();
    assert_eq!(body.error.code, code, "{}", body.error.message);
}

async fn post_invite(server: &TestServer, hours: u32, uses: u32) -> reqwest::Response {
    let invite = serde_json::json!({ "expires_in_hours": hours, "max_uses": uses });
    server.client.post(server.url("/api/admin/invites")).json(&invite).send().await.unwrap()
}

async fn create_invite(server: &TestServer, hours: u32, uses: u32) -> CreatedInvite {
    let response = post_invite(server, hours, uses).await;
    assert_eq!(response.status(), 201);
    response.json().await.unwrap()
}

async fn accounts(server: &TestServer) -> AdminAccountList {
    let response = server.get("/api/admin/users").await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

async fn put(server: &TestServer, path: &str, body: serde_json::Value) -> reqwest::Response {
    server.client.put(server.url(path)).json(&body).send().await.unwrap()
}

/// Makes account `id` an administrator or takes that away, as whoever `client` signs in as.
async fn set_admin(server: &TestServer, client: &reqwest::Client, id: Uuid, admin: bool) -> reqwest::Response {
    let url = server.url(&format!("/api/admin/users/{id}/role"));
    client.put(url).json(&serde_json::json!({ "admin": admin })).send().await.unwrap()
}

/// Disables account `id` or enables it again, as this server's user.
async fn set_disabled(server: &TestServer, id: Uuid, disabled: bool) -> reqwest::Response {
    put(server, &format!("/api/admin/users/{id}/disabled"), serde_json::json!({ "disabled": disabled })).await
}

async fn status_of_me(server: &TestServer, client: &reqwest::Client) -> u16 {
    client.get(server.url("/api/auth/me")).send().await.unwrap().status().as_u16()
}

/// Moves a row's expiry into the past: damage no API can make.
async fn expire(db: &Db, table: &str, column: &str, id: Uuid) {
    let past = match db.raw {
        Raw::Sqlite(_) => "1",
        Raw::Postgres(_) => "now() - interval '1 hour'",
    };
    db.raw.exec(&format!("update {table} set expires_at = {past} where {column} = ?"), id).await;
}

fn new_user(n: usize) -> NewUser {
    NewUser { email: format!("person{n}@example.com"), password_hash: "hash".into(), display_name: String::new() }
}

async fn the_first_account_administers_and_later_ones_do_not(db: Db) {
    let server = server(&db, |_| {}).await;
    assert!(server.user.admin, "the first account administers Quire");
    let (client, bob) = server.second_user("bob@example.com").await;
    assert!(!bob.user.admin);
    let me: wire::UserProfile = get_json(&client, &server.url("/api/auth/me")).await;
    assert!(!me.admin);
    let me: wire::UserProfile = server.get_json("/api/auth/me").await;
    assert!(me.admin);
}

async fn first_sign_ups_at_once_give_exactly_one_administrator(db: Db) {
    let made = join_all((0..8).map(|n| db.store.sign_up(new_user(n), SignUpMode::Open, None))).await;
    let users: Vec<_> = made.into_iter().map(|made| made.unwrap().unwrap()).collect();
    assert_eq!(users.len(), 8);
    assert_eq!(users.iter().filter(|user| user.is_admin).count(), 1, "exactly one first account");
    let admins = db.store.accounts(0, 100).await.unwrap().into_iter().filter(|a| a.is_admin).count();
    assert_eq!(admins, 1);
}

async fn a_closed_quire_admits_only_the_first_account(db: Db) {
    // The first comes with the setup link the server logged (without it, nobody: see `security_setup`).
    let setup = quire::auth::setup::issue(&db.store).await.unwrap().expect("no administrator yet");
    let pass = || Some(store::SignUpPass::Setup(quire::auth::one_time::hash(&setup)));
    let made = join_all((0..6).map(|n| db.store.sign_up(new_user(n), SignUpMode::Closed, pass()))).await;
    let made: Vec<_> = made.into_iter().map(Result::unwrap).collect();
    assert_eq!(made.iter().filter(|m| m.as_ref().is_ok_and(|user| user.is_admin)).count(), 1);
    assert_eq!(made.iter().filter(|m| **m == Err(SignUpRefusal::SetupInvalid)).count(), 5);
    let late = db.store.sign_up(new_user(6), SignUpMode::Closed, None).await.unwrap();
    assert_eq!(late, Err(SignUpRefusal::Closed));
}

async fn a_closed_quire_refuses_sign_ups_after_the_first(db: Db) {
    let server = server(&db, |config| config.signup = SignUpMode::Closed).await;
    assert!(server.user.admin, "the first account signs up even when sign-up is closed");
    refused(register(&server, "late@example.com", None).await, 403, "signup_closed").await;
    assert_eq!(accounts(&server).await.accounts.len(), 1);
}

async fn admin_routes_are_a_404_to_everyone_else(db: Db) {
    let server = server(&db, |_| {}).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    let foreign = bob.get(server.url(&format!("/api/threads/{}", Uuid::new_v4()))).send().await.unwrap();
    assert_eq!(foreign.status(), 404);
    let foreign: ErrorBody = foreign.json().await.unwrap();
    let routes: Vec<(Method, String, Option<serde_json::Value>)> = vec![
        (Method::GET, "/api/admin/users".into(), None),
        (Method::GET, "/api/admin/projects".into(), None),
        (Method::DELETE, format!("/api/admin/users/{id}"), None),
        (Method::PUT, format!("/api/admin/users/{id}/role"), Some(serde_json::json!({"admin": true}))),
        (Method::PUT, format!("/api/admin/users/{id}/disabled"), Some(serde_json::json!({"disabled": true}))),
        (Method::PUT, format!("/api/admin/users/{id}/budget"), Some(serde_json::json!({"daily_tokens": 5}))),
        (Method::POST, format!("/api/admin/users/{id}/reset-link"), None),
        (Method::GET, "/api/admin/invites".into(), None),
        (Method::POST, "/api/admin/invites".into(), Some(serde_json::json!({"expires_in_hours": 1, "max_uses": 1}))),
        (Method::DELETE, format!("/api/admin/invites/{}", Uuid::new_v4()), None),
        (Method::GET, "/api/admin/signup".into(), None),
        (Method::PUT, "/api/admin/signup".into(), Some(serde_json::json!({"mode": "open"}))),
    ];
    for client in [&bob, &server.anonymous()] {
        for (method, path, body) in &routes {
            let mut request = client.request(method.clone(), server.url(path));
            if let Some(body) = body {
                request = request.json(body);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 404, "{method} {path}");
            let body: ErrorBody = response.json().await.unwrap();
            assert_eq!(body, foreign, "{method} {path} answers like a foreign object");
        }
    }
    // Nothing happened: bob is no administrator and still enabled.
    let listed = accounts(&server).await;
    let bob_row = listed.accounts.iter().find(|a| a.id == id).unwrap();
    assert!(!bob_row.admin && !bob_row.disabled && bob_row.own_daily_tokens.is_none());
    // Made an administrator, bob is answered.
    assert_eq!(set_admin(&server, &server.client, id, true).await.status(), 204);
    let now: AdminAccountList = get_json(&bob, &server.url("/api/admin/users")).await;
    assert_eq!(now.accounts.len(), 2, "an administrator now");
}

async fn sign_up_by_invitation_counts_each_use_and_refuses_clearly(db: Db) {
    let server = invite_server(&db).await;
    refused(register(&server, "nobody@example.com", None).await, 403, "invite_required").await;
    refused(register(&server, "guess@example.com", Some("not-a-token")).await, 422, "invite_invalid").await;
    refused(register(&server, "long@example.com", Some(&"x".repeat(5000))).await, 422, "invite_invalid").await;

    let invite = create_invite(&server, 24, 2).await;
    assert!(invite.link.ends_with(&invite.token));
    assert_eq!(register(&server, "ann@example.com", Some(&invite.token)).await.status(), 201);
    // A taken address does not use the invitation up.
    refused(register(&server, "ann@example.com", Some(&invite.token)).await, 409, "conflict").await;
    let joined = register(&server, "ben@example.com", Some(&invite.token)).await;
    assert_eq!(joined.status(), 201);
    let joined: AuthResponse = joined.json().await.unwrap();
    assert!(!joined.user.admin);
    refused(register(&server, "cat@example.com", Some(&invite.token)).await, 422, "invite_used_up").await;

    let listed: InviteList = server.get_json("/api/admin/invites").await;
    let row = listed.invites.iter().find(|i| i.id == invite.invite.id).unwrap();
    assert_eq!((row.uses, row.max_uses, row.revoked), (2, 2, false));

    let revoked = create_invite(&server, 24, 5).await;
    let revoke = server.client.delete(server.url(&format!("/api/admin/invites/{}", revoked.invite.id)));
    assert_eq!(revoke.send().await.unwrap().status(), 204);
    refused(register(&server, "dan@example.com", Some(&revoked.token)).await, 422, "invite_invalid").await;
    let again = server.client.delete(server.url(&format!("/api/admin/invites/{}", revoked.invite.id)));
    assert_eq!(again.send().await.unwrap().status(), 404);

    let expired = create_invite(&server, 1, 5).await;
    expire(&db, "invites", "id", expired.invite.id).await;
    refused(register(&server, "eve@example.com", Some(&expired.token)).await, 422, "invite_expired").await;

    for (hours, uses) in [(0, 1), (721, 1), (1, 0), (1, 1001)] {
        refused(post_invite(&server, hours, uses).await, 422, "validation_failed").await;
    }
    let accounts = accounts(&server).await.accounts;
    assert_eq!(accounts.len(), 3, "the owner, ann and ben");
}

async fn a_one_use_invitation_admits_one_of_many_at_once(db: Db) {
    let server = invite_server(&db).await;
    let invite = create_invite(&server, 24, 1).await;
    let emails: Vec<String> = (0..5).map(|n| format!("racer{n}@example.com")).collect();
    let responses = join_all(emails.iter().map(|email| register(&server, email, Some(&invite.token)))).await;
    let statuses: Vec<u16> = responses.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 422).count(), 4, "{statuses:?}");
    assert_eq!(accounts(&server).await.accounts.len(), 2);
}

async fn the_sign_up_mode_is_shared_and_closes_sign_up(db: Db) {
    let first = server(&db, |config| config.signup = SignUpMode::Open).await;
    let settings: SignUpSettings = first.get_json("/api/admin/signup").await;
    assert_eq!(settings.mode, WireMode::Open, "the configured mode until an administrator sets one");
    assert_eq!(register(&first, "ann@example.com", None).await.status(), 201);

    let set = put(&first, "/api/admin/signup", serde_json::json!({"mode": "closed"})).await;
    assert_eq!(set.status(), 200);
    // Another instance on the same database, configured `open`, follows the stored mode.
    let second = server(&db, |config| config.signup = SignUpMode::Open).await;
    refused(register(&second, "ben@example.com", None).await, 403, "signup_closed").await;
    let invite = create_invite(&first, 1, 1).await;
    refused(register(&second, "ben@example.com", Some(&invite.token)).await, 403, "signup_closed").await;
    let settings: SignUpSettings = second.get_json("/api/admin/signup").await;
    assert_eq!(settings.mode, WireMode::Closed);

    assert_eq!(put(&first, "/api/admin/signup", serde_json::json!({"mode": "invite"})).await.status(), 200);
    assert_eq!(register(&second, "ben@example.com", Some(&invite.token)).await.status(), 201);
    let bad = put(&first, "/api/admin/signup", serde_json::json!({"mode": "everyone"})).await;
    assert_eq!(bad.status(), 422);
}

async fn a_disabled_account_is_signed_out_and_cannot_sign_in(db: Db) {
    let server = server(&db, |_| {}).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    assert_eq!(status_of_me(&server, &bob).await, 200);

    let disable = set_disabled(&server, id, true).await;
    assert_eq!(disable.status(), 204);
    assert_eq!(status_of_me(&server, &bob).await, 401, "the session ends at once");
    refused(server.sign_in("bob@example.com", PASSWORD).await, 403, "account_disabled").await;
    refused(server.sign_in("bob@example.com", "a wrong password here").await, 401, "invalid_credentials").await;
    assert!(accounts(&server).await.accounts.iter().any(|a| a.id == id && a.disabled));

    let enable = set_disabled(&server, id, false).await;
    assert_eq!(enable.status(), 204);
    assert_eq!(status_of_me(&server, &bob).await, 401, "ended sessions stay ended");
    assert_eq!(server.sign_in("bob@example.com", PASSWORD).await.status(), 200);

    // Not oneself, not an unknown account.
    let me = server.user.id;
    refused(set_disabled(&server, me, true).await, 409, "conflict").await;
    let unknown = Uuid::new_v4();
    let missing = set_disabled(&server, unknown, true).await;
    assert_eq!(missing.status(), 404);
}

/// An administrator cutting an account off also stops what it spends: its answer being written stops at the next
/// heartbeat of whichever instance writes it, and keeps what it had.
async fn disabling_an_account_stops_the_answers_it_has_being_written(db: Db) {
    let server = TestServer::with(db.store.clone(), ScriptedModel::new(vec![half_an_answer()])).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let (id, thread) = (session.user.id, server.create_thread_as(&bob).await);
    let _reader = chat_until_draft_as(&server, &bob, thread, "Tell me everything", "Half an answer").await;

    assert_eq!(set_disabled(&server, id, true).await.status(), 204);
    let stopped = ("Half an answer".to_string(), MessageStatus::Stopped);
    assert_eq!(answer_once(&db, id, thread, &stopped).await, Some(stopped), "it stops within a heartbeat or two");
    assert!(!db.store.latest_turn(id, thread).await.unwrap().unwrap().running);
}

/// The answer in `user`'s `thread` (its text and status) once it is `wanted`, else as it stands 10 s later.
async fn answer_once(
    db: &Db,
    user: Uuid,
    thread: Uuid,
    wanted: &(String, MessageStatus),
) -> Option<(String, MessageStatus)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let answer = db.store.list_messages(user, thread).await.unwrap().get(1).map(|m| (m.content.clone(), m.status));
        if answer.as_ref() == Some(wanted) || std::time::Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

async fn administrators_are_made_and_never_all_removed(db: Db) {
    let server = server(&db, |_| {}).await;
    let me = server.user.id;
    refused(set_admin(&server, &server.client, me, false).await, 409, "conflict").await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    assert_eq!(bob.get(server.url("/api/admin/users")).send().await.unwrap().status(), 404);
    assert_eq!(set_admin(&server, &server.client, id, true).await.status(), 204);
    assert_eq!(bob.get(server.url("/api/admin/users")).send().await.unwrap().status(), 200);
    // With two, one may step down; then the other may not.
    assert_eq!(set_admin(&server, &server.client, me, false).await.status(), 204);
    assert_eq!(server.get("/api/admin/users").await.status(), 404);
    refused(set_admin(&server, &bob, id, false).await, 409, "conflict").await;
    let listed: AdminAccountList = get_json(&bob, &server.url("/api/admin/users")).await;
    assert_eq!(listed.accounts.iter().filter(|a| a.admin).count(), 1);
    // Nor may the last administrator delete their own account.
    let body = serde_json::json!({ "password": PASSWORD });
    refused(bob.delete(server.url("/api/auth/me")).json(&body).send().await.unwrap(), 409, "conflict").await;
    assert_eq!(status_of_me(&server, &bob).await, 200);
    assert_eq!(set_admin(&server, &server.client, me, true).await.status(), 404);
    assert_eq!(set_admin(&server, &bob, me, true).await.status(), 204);
    assert_eq!(bob.delete(server.url("/api/auth/me")).json(&body).send().await.unwrap().status(), 204);
    let listed = accounts(&server).await;
    assert_eq!((listed.accounts.len(), listed.accounts[0].admin), (1, true));
}

async fn deleting_an_account_removes_it_and_ends_its_sessions(db: Db) {
    let server = server(&db, |_| {}).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    server.create_thread_as(&bob).await;
    assert_eq!(db.raw.count("threads", "user_id", id).await, 1);

    let me = server.user.id;
    refused(server.client.delete(server.url(&format!("/api/admin/users/{me}"))).send().await.unwrap(), 409, "conflict")
        .await;
    let deleted = server.client.delete(server.url(&format!("/api/admin/users/{id}"))).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    assert_eq!(status_of_me(&server, &bob).await, 401);
    for table in ["threads", "sessions", "messages"] {
        assert_eq!(db.raw.count(table, "user_id", id).await, 0, "{table}");
    }
    assert_eq!(db.raw.count("users", "id", id).await, 0);
    let again = server.client.delete(server.url(&format!("/api/admin/users/{id}"))).send().await.unwrap();
    assert_eq!(again.status(), 404);
    refused(server.sign_in("bob@example.com", PASSWORD).await, 401, "invalid_credentials").await;
}

async fn a_reset_link_sets_a_password_once_and_ends_the_old_sessions(db: Db) {
    let server = server(&db, |_| {}).await;
    let (bob, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    let made = server.client.post(server.url(&format!("/api/admin/users/{id}/reset-link"))).send().await.unwrap();
    assert_eq!(made.status(), 201);
    let link: ResetLink = made.json().await.unwrap();
    assert!(link.link.ends_with(&link.token));
    let reset = |token: String, password: &str| {
        let body = serde_json::json!({ "token": token, "new_password": password });
        server.anonymous().post(server.url("/api/auth/reset-password")).json(&body).send()
    };
    let new_password = "a fresh and long passphrase";
    refused(reset("no-such-token".into(), new_password).await.unwrap(), 422, "reset_invalid").await;
    refused(reset("x".repeat(10_000), new_password).await.unwrap(), 422, "reset_invalid").await;
    refused(reset(link.token.clone(), "short").await.unwrap(), 422, "validation_failed").await;
    assert_eq!(status_of_me(&server, &bob).await, 200, "a refused reset changes nothing");

    assert_eq!(reset(link.token.clone(), new_password).await.unwrap().status(), 204);
    assert_eq!(status_of_me(&server, &bob).await, 401, "the old sessions end");
    refused(server.sign_in("bob@example.com", PASSWORD).await, 401, "invalid_credentials").await;
    assert_eq!(server.sign_in("bob@example.com", new_password).await.status(), 200);
    refused(reset(link.token, "yet another long passphrase").await.unwrap(), 422, "reset_used").await;
    assert_eq!(server.sign_in("bob@example.com", new_password).await.status(), 200, "a used link changes nothing");

    let old = server.client.post(server.url(&format!("/api/admin/users/{id}/reset-link"))).send().await.unwrap();
    let old: ResetLink = old.json().await.unwrap();
    expire(&db, "password_resets", "user_id", id).await;
    refused(reset(old.token, "yet another long passphrase").await.unwrap(), 422, "reset_expired").await;
    let unknown = Uuid::new_v4();
    let missing =
        server.client.post(server.url(&format!("/api/admin/users/{unknown}/reset-link"))).send().await.unwrap();
    assert_eq!(missing.status(), 404);
}

async fn accounts_are_listed_with_their_usage_and_budgets(db: Db) {
    let server = server(&db, |config| config.user_daily_tokens = 1_000).await;
    let (_, session) = server.second_user("bob@example.com").await;
    let id = session.user.id;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "Hello there").await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete", "{frames:?}");

    let listed = accounts(&server).await;
    assert_eq!(listed.accounts.len(), 2);
    assert!(listed.next_offset.is_none());
    let owner = &listed.accounts[0];
    assert_eq!(owner.id, server.user.id, "in the order they were made");
    assert!(owner.admin && owner.messages == 2 && owner.tokens_today > 0, "{owner:?}");
    assert!(owner.last_seen_at.is_some());
    assert_eq!(owner.daily_tokens, Some(1_000));
    let bob = &listed.accounts[1];
    assert_eq!((bob.messages, bob.tokens_today, bob.own_daily_tokens, bob.daily_tokens), (0, 0, None, Some(1_000)));

    let path = format!("/api/admin/users/{id}/budget");
    assert_eq!(put(&server, &path, serde_json::json!({"daily_tokens": 50})).await.status(), 204);
    let bob = accounts(&server).await.accounts.into_iter().find(|a| a.id == id).unwrap();
    assert_eq!((bob.own_daily_tokens, bob.daily_tokens), (Some(50), Some(50)));
    assert_eq!(put(&server, &path, serde_json::json!({"daily_tokens": 0})).await.status(), 204);
    let bob = accounts(&server).await.accounts.into_iter().find(|a| a.id == id).unwrap();
    assert_eq!((bob.own_daily_tokens, bob.daily_tokens), (Some(0), None));
    assert_eq!(put(&server, &path, serde_json::json!({"daily_tokens": null})).await.status(), 204);
    let bob = accounts(&server).await.accounts.into_iter().find(|a| a.id == id).unwrap();
    assert_eq!(bob.daily_tokens, Some(1_000));
    refused(put(&server, &path, serde_json::json!({"daily_tokens": u64::MAX})).await, 422, "validation_failed").await;
    let paged: AdminAccountList = server.get_json("/api/admin/users?offset=1").await;
    assert_eq!(paged.accounts.len(), 1);
}

/// Two instances on one PostgreSQL: an account disabled on one is refused on the other at its next request.
#[tokio::test]
async fn a_disabled_account_is_refused_at_once_on_another_instance() {
    let Some(url) = fresh_postgres_url("a_disabled_account_is_refused_at_once_on_another_instance").await else {
        return;
    };
    let instance = || shared_instance(&url, Arc::new(llm::builtin::Builtin::new()), |_| {});
    let (a, b) = (instance().await, instance().await);
    let (bob, session) = sign_up_or_in(&b.base, "bob@example.com").await;
    assert_eq!(status_of_me(&b, &bob).await, 200);
    assert_eq!(set_disabled(&a, session.user.id, true).await.status(), 204);
    assert_eq!(status_of_me(&b, &bob).await, 401, "refused on the other instance at once");
    refused(b.sign_in("bob@example.com", PASSWORD).await, 403, "account_disabled").await;
}
