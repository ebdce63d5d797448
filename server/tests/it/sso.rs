//! Single sign-on through an OpenID Connect provider on loopback (`common/oidc_provider.rs`): the whole flow as a
//! browser makes it (start, the provider's consent, the callback with the sign-in's cookie), every refusal with
//! its code and nothing created, accounts made, linked and found again, roles from groups, keys rotated, sign-out
//! at the provider, password sign-in turned off, and a sign-in that starts on one instance and ends on another.

use std::sync::Arc;

use reqwest::{header, redirect::Policy, StatusCode};
use tempfile::TempDir;
use tokio::{net::TcpListener, sync::oneshot};

use crate::common::oidc_provider::{FakeProvider, Person, CLIENT_ID, CLIENT_SECRET};
use crate::common::{bearer_client, fresh_postgres_url, sign_up, test_config, ExpectJson, PASSWORD};
use quire::{config::Config, AppState};
use store::{DynStore, SignUpMode};

/// A Quire whose identity provider is `issuer`, on its own port (its public URL), sign-up by invitation.
struct Quire {
    base: String,
    state: AppState,
    _stop: oneshot::Sender<()>,
    _dir: TempDir,
}

impl Quire {
    async fn start(issuer: &str, configure: impl FnOnce(&mut Config)) -> Self {
        Self::over(issuer, None, configure).await
    }

    async fn over(issuer: &str, store: Option<DynStore>, configure: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().expect("dir");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let mut config = test_config(dir.path());
        config.public_url = Some(base.parse().expect("public url"));
        config.signup = SignUpMode::Invite;
        config.oidc.issuer = Some(issuer.to_owned());
        config.oidc.client_id = Some(CLIENT_ID.to_owned());
        config.oidc.client_secret = Some(CLIENT_SECRET.parse().expect("secret"));
        config.oidc.label = "Acme".into();
        configure(&mut config);
        let state = match store {
            Some(store) => AppState::new(config, store, Arc::new(llm::builtin::Builtin::new())).await,
            None => AppState::from_config(config).await,
        }
        .expect("state");
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = state.clone();
        tokio::spawn(async move {
            quire::serve(listener, serving, async {
                let _ = stopped.await;
            })
            .await
            .expect("serve")
        });
        Self { base, state, _stop: stop, _dir: dir }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn users(&self) -> usize {
        self.state.store.accounts(0, 1000).await.expect("accounts").len()
    }
}

/// A browser that follows no redirect on its own.
fn browser() -> reqwest::Client {
    reqwest::Client::builder().redirect(Policy::none()).build().expect("client")
}

fn location(response: &reqwest::Response) -> String {
    assert_eq!(response.status(), StatusCode::SEE_OTHER, "{}", response.url());
    response.headers()[header::LOCATION].to_str().expect("location").to_owned()
}

/// The value of the cookie `name` the response sets (`name=value`), if it sets it to something.
fn set_cookie(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.split(';').next())
        .find(|pair| pair.starts_with(&format!("{name}=")) && pair.len() > name.len() + 1)
        .map(str::to_owned)
}

/// A sign-in brought back from the provider, not yet handed to Quire.
struct Started {
    callback: String,
    cookie: String,
}

/// Starts a sign-in at Quire (to open `next` afterwards) and lets the provider consent.
async fn begin(quire: &Quire, next: &str) -> Started {
    let browser = browser();
    let start = browser.get(quire.url(&format!("/api/auth/oidc/start?next={next}"))).send().await.unwrap();
    let cookie = set_cookie(&start, "quire_sso").expect("the sign-in's cookie");
    let to_provider = location(&start);
    assert!(to_provider.contains("code_challenge_method=S256") && to_provider.contains("nonce="), "{to_provider}");
    let consented = browser.get(&to_provider).send().await.unwrap();
    let callback = location(&consented);
    assert!(callback.starts_with(&quire.url("/api/auth/oidc/callback?")), "{callback}");
    Started { callback, cookie }
}

/// Where Quire sends the browser back to, and the session cookie it sets.
struct Landing {
    location: String,
    session: Option<String>,
}

async fn finish(callback: &str, cookie: Option<&str>) -> Landing {
    let mut request = browser().get(callback);
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    let back = request.send().await.unwrap();
    Landing { location: location(&back), session: set_cookie(&back, "quire_session") }
}

async fn sign_in(quire: &Quire, next: &str) -> Landing {
    let started = begin(quire, next).await;
    finish(&started.callback, Some(&started.cookie)).await
}

/// A refused sign-in: back to the sign-in page with `code`, without a session.
fn assert_refused(landing: &Landing, code: &str) {
    assert_eq!(landing.location, format!("/signin?error={code}"));
    assert_eq!(landing.session, None, "{code}: no session");
}

/// The account a session cookie signs in to.
async fn me(quire: &Quire, session: &str) -> wire::UserProfile {
    browser().get(quire.url("/api/auth/me")).header(header::COOKIE, session).expect_json().await
}

#[tokio::test]
async fn a_first_sign_in_makes_the_account_and_later_ones_find_it_by_subject() {
    let provider = FakeProvider::start(Person::new("alice-1", "Alice@Example.com")).await;
    let quire = Quire::start(&provider.issuer, |c| c.oidc.auto_create = true).await;

    let methods: wire::SignInMethods = browser().get(quire.url("/api/auth/methods")).expect_json().await;
    assert!(methods.password);
    assert_eq!(methods.sso.map(|s| s.label), Some("Acme".to_owned()));

    let landing = sign_in(&quire, "/search?q=rota").await;
    assert_eq!(landing.location, "/search?q=rota", "back where the sign-in started");
    let session = landing.session.expect("a session");
    let alice = me(&quire, &session).await;
    assert_eq!((alice.email.as_str(), alice.display_name.as_str()), ("alice@example.com", "Person alice-1"));
    assert!(alice.admin, "the first account administers Quire");
    // No password: the account signs in only through the provider.
    let by_password = browser()
        .post(quire.url("/api/auth/login"))
        .json(&serde_json::json!({ "email": "alice@example.com", "password": "" }))
        .send()
        .await
        .unwrap();
    assert!(by_password.status().is_client_error());

    // The provider's address changes: the account is found by its subject, not by its address.
    provider.next(Person::new("alice-1", "alice.smith@example.com"));
    let again = sign_in(&quire, "/").await;
    assert_eq!(me(&quire, &again.session.expect("a session")).await.id, alice.id);
    assert_eq!(quire.users().await, 1);

    // A hostile `next` goes home.
    let elsewhere = sign_in(&quire, "https://evil.example/").await;
    assert_eq!(elsewhere.location, "/");
}

#[tokio::test]
async fn a_verified_address_links_an_existing_account_and_an_unverified_one_does_not() {
    let provider = FakeProvider::start(Person::new("bob-1", "bob@example.com")).await;
    let quire = Quire::start(&provider.issuer, |c| c.signup = SignUpMode::Open).await;
    let (_, admin) = sign_up(&quire.base, "admin@example.com").await;
    let (_, bob) = sign_up(&quire.base, "bob@example.com").await;

    let unverified = Person { email_verified: false, ..Person::new("bob-1", "bob@example.com") };
    provider.next(unverified);
    assert_refused(&sign_in(&quire, "/").await, "sso_unverified");
    let linked: i64 = sqlx_count(&quire, "select count(*) from sso_identities").await;
    assert_eq!(linked, 0, "nothing linked");

    provider.next(Person::new("bob-1", "BOB@example.com"));
    let landing = sign_in(&quire, "/").await;
    assert_eq!(me(&quire, &landing.session.expect("a session")).await.id, bob.user.id, "linked by address");
    // Linked: the subject finds the account even without an address now.
    provider.next(Person { email: None, ..Person::new("bob-1", "") });
    let landing = sign_in(&quire, "/").await;
    assert_eq!(me(&quire, &landing.session.expect("a session")).await.id, bob.user.id);
    assert_ne!(bob.user.id, admin.user.id);
    // The password still works for an account that had one.
    let by_password = browser()
        .post(quire.url("/api/auth/login"))
        .json(&serde_json::json!({ "email": "bob@example.com", "password": PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(by_password.status(), 200);
}

/// A count from the database behind `quire`.
async fn sqlx_count(quire: &Quire, sql: &str) -> i64 {
    let url = quire.state.config.database_url();
    if url.starts_with("sqlite") {
        let pool = sqlx::SqlitePool::connect(&url).await.expect("sqlite");
        sqlx::query_scalar(sql).fetch_one(&pool).await.expect(sql)
    } else {
        let pool = sqlx::PgPool::connect(&url).await.expect("postgres");
        sqlx::query_scalar(sql).fetch_one(&pool).await.expect(sql)
    }
}

#[tokio::test]
async fn sign_up_by_invitation_makes_no_account_unless_told_to() {
    let provider = FakeProvider::start(Person::new("carol-1", "carol@example.com")).await;
    let quire = Quire::start(&provider.issuer, |_| {}).await;
    assert_refused(&sign_in(&quire, "/").await, "sso_no_account");
    assert_eq!(quire.users().await, 0, "nothing created");
    assert_eq!(sqlx_count(&quire, "select count(*) from sso_identities").await, 0);
}

#[tokio::test]
async fn every_refusal_says_why_and_creates_nothing() {
    let provider = FakeProvider::start(Person::new("dan-1", "dan@example.com")).await;
    let quire = Quire::start(&provider.issuer, |c| c.oidc.auto_create = true).await;

    // Another browser's state, or none.
    let started = begin(&quire, "/").await;
    assert_refused(&finish(&started.callback, Some("quire_sso=someone-elses")).await, "sso_expired");
    assert_refused(&finish(&started.callback, None).await, "sso_expired");
    // The state was not taken by those: its own browser still finishes it.
    let landing = finish(&started.callback, Some(&started.cookie)).await;
    assert!(landing.session.is_some(), "{}", landing.location);
    // The same callback again: the sign-in is over.
    assert_refused(&finish(&started.callback, Some(&started.cookie)).await, "sso_expired");

    // A used code in another sign-in: the provider refuses it (and its PKCE verifier is another).
    let used_code = url::Url::parse(&started.callback).unwrap();
    let used_code = used_code.query_pairs().find(|(k, _)| k == "code").unwrap().1.into_owned();
    let fresh = begin(&quire, "/").await;
    let mut replay = url::Url::parse(&fresh.callback).unwrap();
    let fresh_state = replay.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    replay.query_pairs_mut().clear().append_pair("code", &used_code).append_pair("state", &fresh_state);
    assert_refused(&finish(replay.as_str(), Some(&fresh.cookie)).await, "sso_refused");

    let users = quire.users().await;
    let sessions = sqlx_count(&quire, "select count(*) from sessions").await;
    for (person, code) in [
        (Person { expires_in: -120, ..Person::new("eve-1", "eve@example.com") }, "sso_invalid"),
        (Person { issued_in: 600, ..Person::new("eve-1", "eve@example.com") }, "sso_invalid"),
        (Person { audience: Some("another-app".into()), ..Person::new("eve-1", "eve@example.com") }, "sso_invalid"),
        (Person { wrong_nonce: true, ..Person::new("eve-1", "eve@example.com") }, "sso_invalid"),
        (Person { email_verified: false, ..Person::new("eve-1", "eve@example.com") }, "sso_unverified"),
        (Person { email: None, ..Person::new("eve-1", "") }, "sso_unverified"),
    ] {
        provider.next(person);
        assert_refused(&sign_in(&quire, "/").await, code);
    }
    // Cancelled at the provider.
    let cancelled = begin(&quire, "/").await;
    let mut url = url::Url::parse(&cancelled.callback).unwrap();
    let state = url.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    url.query_pairs_mut().clear().append_pair("error", "access_denied").append_pair("state", &state);
    assert_refused(&finish(url.as_str(), Some(&cancelled.cookie)).await, "sso_cancelled");
    assert_eq!(quire.users().await, users, "no account made");
    assert_eq!(sqlx_count(&quire, "select count(*) from sessions").await, sessions, "no session made");

    // Within the allowed clock skew an expiry just past still passes.
    provider.next(Person { expires_in: -20, ..Person::new("dan-1", "dan@example.com") });
    assert!(sign_in(&quire, "/").await.session.is_some());
}

#[tokio::test]
async fn a_disabled_account_is_refused_and_a_provider_that_is_down_is_said_so() {
    let provider = FakeProvider::start(Person::new("fay-1", "fay@example.com")).await;
    let quire = Quire::start(&provider.issuer, |c| c.oidc.auto_create = true).await;
    let fay = sign_in(&quire, "/").await.session.expect("a session");
    let fay = me(&quire, &fay).await;
    provider.next(Person::new("gus-1", "gus@example.com"));
    let gus = sign_in(&quire, "/").await.session.expect("a session");
    let gus = me(&quire, &gus).await;
    assert!(fay.admin && !gus.admin);
    quire.state.store.set_disabled(gus.id, true).await.expect("disable");
    let sessions = sqlx_count(&quire, "select count(*) from sessions where ended_at is null").await;
    assert_refused(&sign_in(&quire, "/").await, "account_disabled");
    assert_eq!(sqlx_count(&quire, "select count(*) from sessions where ended_at is null").await, sessions);

    // Nothing listens at this issuer.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}/oidc", closed.local_addr().unwrap());
    drop(closed);
    let down = Quire::start(&issuer, |_| {}).await;
    let start = browser().get(down.url("/api/auth/oidc/start")).send().await.unwrap();
    assert_eq!(location(&start), "/signin?error=sso_unavailable");
}

#[tokio::test]
async fn groups_make_administrators_at_each_sign_in_and_keys_may_rotate() {
    let provider = FakeProvider::start(Person::new("hal-1", "hal@example.com")).await;
    let quire = Quire::start(&provider.issuer, |c| {
        c.signup = SignUpMode::Open;
        c.oidc.admin_groups = vec!["quire-admins".into()];
    })
    .await;
    sign_up(&quire.base, "first@example.com").await;
    let ivy = Person { groups: vec!["staff".into(), "quire-admins".into()], ..Person::new("ivy-1", "ivy@example.com") };
    provider.next(ivy.clone());
    let session = sign_in(&quire, "/").await.session.expect("a session");
    assert!(me(&quire, &session).await.admin, "the group makes an administrator");
    let reads = provider.key_reads();

    // The provider rotates its keys: Quire reads them again once and goes on.
    provider.rotate_keys();
    provider.next(Person { groups: vec!["staff".into()], ..ivy });
    let session = sign_in(&quire, "/").await.session.expect("a session after the keys rotated");
    assert!(!me(&quire, &session).await.admin, "out of the group, no longer an administrator");
    assert_eq!(provider.key_reads(), reads + 1);
}

#[tokio::test]
async fn the_address_may_come_from_user_info_and_sign_out_ends_the_providers_session() {
    let provider =
        FakeProvider::start(Person { email_in_user_info_only: true, ..Person::new("jo-1", "jo@example.com") }).await;
    let quire = Quire::start(&provider.issuer, |c| c.oidc.auto_create = true).await;
    let session = sign_in(&quire, "/").await.session.expect("a session");
    assert_eq!(me(&quire, &session).await.email, "jo@example.com");

    let out = browser().post(quire.url("/api/auth/logout")).header(header::COOKIE, &session);
    let out = out.header(header::ORIGIN, &quire.base).send().await.unwrap();
    assert_eq!(out.status(), 200);
    let out: wire::SignedOut = out.json().await.unwrap();
    let end = url::Url::parse(&out.end_session_url).unwrap();
    assert!(out.end_session_url.starts_with(&format!("{}/session/end?", provider.issuer)));
    let pairs: std::collections::HashMap<_, _> = end.query_pairs().into_owned().collect();
    assert_eq!(pairs["post_logout_redirect_uri"], quire.url("/signin"));
    assert_eq!(pairs["client_id"], CLIENT_ID);
    assert_eq!(pairs["id_token_hint"].split('.').count(), 3);
    let after = browser().get(quire.url("/api/auth/me")).header(header::COOKIE, &session).send().await.unwrap();
    assert_eq!(after.status(), 401, "Quire's session is over");
}

#[tokio::test]
async fn without_password_sign_in_no_password_route_answers() {
    let provider = FakeProvider::start(Person::new("kim-1", "kim@example.com")).await;
    let quire = Quire::start(&provider.issuer, |c| {
        c.password_login = false;
        c.oidc.auto_create = true;
    })
    .await;
    let methods: wire::SignInMethods = browser().get(quire.url("/api/auth/methods")).expect_json().await;
    assert!(!methods.password);
    let anyone = browser();
    let body = serde_json::json!({ "email": "x@example.com", "password": PASSWORD });
    for path in ["/api/auth/register", "/api/auth/login", "/api/auth/password", "/api/auth/reset-password"] {
        let response = anyone.post(quire.url(path)).json(&body).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
    let form = anyone.post(quire.url("/signin")).form(&[("email", "x@example.com"), ("password", PASSWORD)]);
    assert_eq!(form.header("origin", &quire.base).send().await.unwrap().status(), 404);
    assert_eq!(quire.users().await, 0);
    // The sign-in page itself still answers, and single sign-on works.
    assert_eq!(anyone.get(quire.url("/signin")).send().await.unwrap().status(), 200);
    let session = sign_in(&quire, "/").await.session.expect("a session");
    let me = me(&quire, &session).await;
    let reset = bearer_client(&session.replace("quire_session=", ""))
        .post(quire.url(&format!("/api/admin/users/{}/reset-link", me.id)))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 404, "no reset links either");
}

#[tokio::test]
async fn settings_that_cannot_work_stop_quire_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.oidc.issuer = Some("https://login.example.org".into());
    let refusal = AppState::from_config(config.clone()).await.err().expect("refused").to_string();
    assert!(refusal.contains("QUIRE_OIDC_CLIENT_ID"), "{refusal}");
    config.oidc.client_id = Some("quire".into());
    let refusal = AppState::from_config(config.clone()).await.err().expect("refused").to_string();
    assert!(refusal.contains("QUIRE_PUBLIC_URL"), "{refusal}");
    config.public_url = Some("https://quire.example.org".parse().unwrap());
    config.oidc.issuer = Some("http://login.example.org".into());
    let refusal = AppState::from_config(config).await.err().expect("refused").to_string();
    assert!(refusal.contains("QUIRE_OIDC_ISSUER"), "{refusal}");
}

#[tokio::test]
async fn a_sign_in_may_start_on_one_instance_and_end_on_another() {
    let Some(url) = fresh_postgres_url("a_sign_in_may_start_on_one_instance_and_end_on_another").await else { return };
    let provider = FakeProvider::start(Person::new("lee-1", "lee@example.com")).await;
    let shared = |c: &mut Config| {
        c.jwt_secret = Some("a shared session key for every instance of this test".parse().expect("secret"));
        c.oidc.auto_create = true;
    };
    let a = Quire::over(&provider.issuer, Some(store::connect(&url).await.unwrap()), shared).await;
    // Behind one address, as instances are.
    let public = a.base.clone();
    let b = Quire::over(&provider.issuer, Some(store::connect(&url).await.unwrap()), |c| {
        shared(c);
        c.public_url = Some(public.parse().expect("public url"));
    })
    .await;
    let started = begin(&a, "/").await;
    let on_b = started.callback.replace(&a.base, &b.base);
    let landing = finish(&on_b, Some(&started.cookie)).await;
    let session = landing.session.expect("signed in on the other instance");
    assert_eq!(me(&a, &session).await.email, "lee@example.com");
}

#[tokio::test]
async fn an_address_the_provider_does_not_vouch_for_counts_only_when_trusted() {
    let silent = Person { silent_on_verification: true, ..Person::new("max-1", "max@example.com") };
    let provider = FakeProvider::start(silent).await;
    let wary = Quire::start(&provider.issuer, |c| c.oidc.auto_create = true).await;
    assert_refused(&sign_in(&wary, "/").await, "sso_unverified");
    assert_eq!(wary.users().await, 0);
    let trusting = Quire::start(&provider.issuer, |c| {
        c.oidc.auto_create = true;
        c.oidc.trust_email = true;
    })
    .await;
    assert!(sign_in(&trusting, "/").await.session.is_some());
    // An address the token says is not verified stays unverified, trusted or not.
    provider.next(Person { email_verified: false, ..Person::new("nia-1", "nia@example.com") });
    assert_refused(&sign_in(&trusting, "/").await, "sso_unverified");
}

#[tokio::test]
async fn an_account_without_a_password_confirms_its_deletion_with_its_address() {
    let provider = FakeProvider::start(Person::new("ola-1", "ola@example.com")).await;
    let quire = Quire::start(&provider.issuer, |c| {
        c.signup = SignUpMode::Open;
        c.oidc.auto_create = true;
    })
    .await;
    let (_, first) = sign_up(&quire.base, "first@example.com").await;
    assert!(first.user.has_password);
    let session = sign_in(&quire, "/").await.session.expect("a session");
    let ola = me(&quire, &session).await;
    assert!(!ola.has_password, "made through the provider, without a password");
    let delete = |confirmation: &str| {
        let body = serde_json::json!({ "password": confirmation });
        browser()
            .delete(quire.url("/api/auth/me"))
            .header(header::COOKIE, &session)
            .header(header::ORIGIN, &quire.base)
            .json(&body)
            .send()
    };
    let refused = delete("").await.unwrap();
    assert_eq!(refused.status(), 422);
    assert_eq!(delete("someone@example.com").await.unwrap().status(), 422);
    assert_eq!(quire.users().await, 2, "nothing deleted");
    assert_eq!(delete(" OLA@example.com ").await.unwrap().status(), 204);
    assert_eq!(quire.users().await, 1);
    assert_eq!(sqlx_count(&quire, "select count(*) from sso_identities").await, 0, "its link went with it");
}
