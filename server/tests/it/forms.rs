//! The pages' plain HTML form posts (a page whose WebAssembly has not loaded, or a browser without scripts): they
//! sign up, in, change and reset the password and delete the account as the JSON routes do, answer with a
//! redirect that never holds what was typed, pass the same cross-site check, limits and throttling, and keep
//! passwords out of the log. Also the pages' policy while cargo-leptos watches the sources.

use reqwest::{header, redirect, StatusCode};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{TestServer, PASSWORD};

/// A browser without scripts that follows no redirect: the test looks at each.
fn browser() -> reqwest::Client {
    reqwest::Client::builder().redirect(redirect::Policy::none()).build().unwrap()
}

/// An answer to a form post: where it sends the browser, and the session cookie it sets, if any.
struct Posted {
    status: StatusCode,
    location: String,
    cookie: Option<String>,
}

impl Posted {
    /// The cookie's `name=value`, for the next requests.
    fn session(&self) -> String {
        let cookie = self.cookie.as_deref().expect("a session cookie");
        cookie.split(';').next().unwrap().to_string()
    }
}

/// Posts `fields` to `path` as a page of Quire's own does, with `cookie` when given.
async fn post_form(server: &TestServer, path: &str, fields: &[(&str, &str)], cookie: Option<&str>) -> Posted {
    post_form_from(server, path, fields, cookie, Some(&server.base), "same-origin").await
}

/// Posts `fields` to `path` from a page whose origin the browser gives as `origin` (`None`: no `Origin`).
async fn post_form_from(
    server: &TestServer,
    path: &str,
    fields: &[(&str, &str)],
    cookie: Option<&str>,
    origin: Option<&str>,
    fetch_site: &str,
) -> Posted {
    let mut request = browser().post(server.url(path)).form(fields).header("sec-fetch-site", fetch_site);
    if let Some(origin) = origin {
        request = request.header(header::ORIGIN, origin);
    }
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    let response = request.send().await.unwrap();
    let header_text =
        |name| response.headers().get(name).map(|v: &header::HeaderValue| v.to_str().unwrap().to_string());
    let location = header_text(header::LOCATION).unwrap_or_default();
    let cookie = header_text(header::SET_COOKIE);
    // What the browser asks for next: the fragment stays in the browser.
    let next_request = location.split('#').next().unwrap_or_default();
    for (name, value) in fields.iter().filter(|(_, value)| !value.is_empty()) {
        if name.contains("password") {
            assert!(!location.contains(value), "{path}: {name} in the address {location}");
        }
        if name.contains("password") || *name == "invite" || *name == "token" {
            assert!(!next_request.contains(value), "{path}: {name} in the next request {location}");
        }
    }
    Posted { status: response.status(), location, cookie }
}

/// Who the session cookie `cookie` signs in, or the status of the refusal.
async fn me(server: &TestServer, cookie: &str) -> Result<String, StatusCode> {
    let response = browser().get(server.url("/api/auth/me")).header(header::COOKIE, cookie).send().await.unwrap();
    if response.status() != StatusCode::OK {
        return Err(response.status());
    }
    Ok(response.json::<wire::UserProfile>().await.unwrap().email)
}

stories!(a_person_without_scripts_signs_up_in_changes_the_password_and_leaves);

async fn a_person_without_scripts_signs_up_in_changes_the_password_and_leaves(db: Db) {
    let server = TestServer::builtin(db.store.clone()).await;
    let email = "plain@example.com";
    let new_password = "a different long passphrase";

    let signed_up = post_form(&server, "/signup", &[("email", email), ("password", PASSWORD)], None).await;
    assert_eq!((signed_up.status, signed_up.location.as_str()), (StatusCode::SEE_OTHER, "/"));
    let cookie = signed_up.cookie.clone().unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax") && cookie.contains("Path=/"), "{cookie}");
    let first = signed_up.session();
    assert_eq!(me(&server, &first).await.as_deref(), Ok(email));

    let taken = post_form(&server, "/signup", &[("email", email), ("password", PASSWORD)], None).await;
    assert_eq!((taken.location.as_str(), taken.cookie), ("/signup?error=email_taken", None));
    let weak =
        post_form(&server, "/signup", &[("email", "weak@example.com"), ("password", "password1234")], None).await;
    assert_eq!(weak.location, "/signup?error=weak_password");

    let wrong = post_form(&server, "/signin", &[("email", email), ("password", "not the password")], None).await;
    assert_eq!((wrong.status, wrong.location.as_str()), (StatusCode::SEE_OTHER, "/signin?error=invalid_credentials"));
    assert!(wrong.cookie.is_none());
    let unknown = post_form(&server, "/signin", &[("email", "nobody@example.com"), ("password", PASSWORD)], None).await;
    assert_eq!(unknown.location, wrong.location, "an unknown address is answered as a wrong password");
    let incomplete = post_form(&server, "/signin", &[("email", email)], None).await;
    assert_eq!((incomplete.location.as_str(), incomplete.cookie), ("/signin?error=incomplete", None));

    let signed_in = post_form(&server, "/signin", &[("email", email), ("password", PASSWORD)], None).await;
    assert_eq!((signed_in.status, signed_in.location.as_str()), (StatusCode::SEE_OTHER, "/"));
    let second = signed_in.session();
    assert_ne!(first, second, "each sign-in is a session of its own");

    let change = |current: &'static str, new: &'static str| {
        let cookie = second.clone();
        let server = &server;
        async move {
            let fields = [("current_password", current), ("new_password", new)];
            post_form(server, "/settings/password", &fields, Some(&cookie)).await.location
        }
    };
    assert_eq!(
        change("not the password", new_password).await,
        "/settings?form=change-password&error=current_password_wrong"
    );
    assert_eq!(change(PASSWORD, "short").await, "/settings?form=change-password&error=weak_password");
    assert_eq!(me(&server, &first).await.as_deref(), Ok(email), "nothing changed yet");
    assert_eq!(change(PASSWORD, new_password).await, "/settings?form=change-password&done=password_changed");
    assert_eq!(me(&server, &first).await, Err(StatusCode::UNAUTHORIZED), "the other session ended");
    assert_eq!(me(&server, &second).await.as_deref(), Ok(email), "this one goes on");
    assert_eq!(server.sign_in(email, PASSWORD).await.status(), 401);
    assert_eq!(server.sign_in(email, new_password).await.status(), 200);

    let not_signed_in = post_form(&server, "/settings/password", &[("current_password", new_password)], None).await;
    assert_eq!(not_signed_in.location, "/signin?error=signed_out");

    let delete = |password: &'static str| {
        let cookie = second.clone();
        let server = &server;
        async move { post_form(server, "/settings/delete-account", &[("password", password)], Some(&cookie)).await }
    };
    let refused = delete(PASSWORD).await;
    assert_eq!(refused.location, "/settings?form=delete-account&error=password_wrong");
    assert_eq!(me(&server, &second).await.as_deref(), Ok(email), "the account is still there");
    let deleted = delete(new_password).await;
    assert_eq!((deleted.status, deleted.location.as_str()), (StatusCode::SEE_OTHER, "/signin?done=account_deleted"));
    assert!(deleted.cookie.as_deref().is_some_and(|c| c.contains("Max-Age=0")), "{:?}", deleted.cookie);
    assert_eq!(me(&server, &second).await, Err(StatusCode::UNAUTHORIZED));
    assert_eq!(server.sign_in(email, new_password).await.status(), 401);
}

#[tokio::test]
async fn invitations_and_reset_links_work_as_plain_posts_and_stay_out_of_the_address() {
    let server = TestServer::start_with(|config| config.signup = store::SignUpMode::Invite).await;
    let invite: wire::admin::CreatedInvite =
        server.post_json("/api/admin/invites", &serde_json::json!({ "expires_in_hours": 1, "max_uses": 1 })).await;
    let email = "invited@example.com";

    let uninvited = post_form(&server, "/signup", &[("email", email), ("password", PASSWORD)], None).await;
    assert_eq!((uninvited.location.as_str(), uninvited.cookie), ("/signup?error=invite_required", None));
    let weak = [("email", email), ("password", "password1234"), ("invite", invite.token.as_str())];
    let refused = post_form(&server, "/signup", &weak, None).await;
    // The invitation comes back in the fragment, which browsers never send.
    assert_eq!(refused.location, format!("/signup?error=weak_password#invite={}", invite.token));
    let forged = [("email", email), ("password", PASSWORD), ("invite", "forged-token")];
    assert_eq!(
        post_form(&server, "/signup", &forged, None).await.location,
        "/signup?error=invite_invalid#invite=forged-token"
    );
    let good = [("email", email), ("password", PASSWORD), ("invite", invite.token.as_str())];
    let joined = post_form(&server, "/signup", &good, None).await;
    assert_eq!(joined.location, "/");
    assert_eq!(me(&server, &joined.session()).await.as_deref(), Ok(email));
    let used = post_form(
        &server,
        "/signup",
        &[("email", "again@example.com"), ("password", PASSWORD), ("invite", invite.token.as_str())],
        None,
    )
    .await;
    assert_eq!(used.location, format!("/signup?error=invite_used_up#invite={}", invite.token));

    let account: wire::UserProfile = {
        let response = browser().get(server.url("/api/auth/me")).header(header::COOKIE, joined.session()).send().await;
        response.unwrap().json().await.unwrap()
    };
    let link: wire::admin::ResetLink =
        server.post_json(&format!("/api/admin/users/{}/reset-link", account.id), &serde_json::json!({})).await;
    let new_password = "a fresh passphrase for this";
    let bad =
        post_form(&server, "/reset-password", &[("token", "no-such-token"), ("new_password", new_password)], None)
            .await;
    assert_eq!(bad.location, "/reset-password?error=reset_invalid#token=no-such-token");
    let weak = post_form(&server, "/reset-password", &[("token", &link.token), ("new_password", "short")], None).await;
    assert_eq!(weak.location, format!("/reset-password?error=weak_password#token={}", link.token));
    let set =
        post_form(&server, "/reset-password", &[("token", &link.token), ("new_password", new_password)], None).await;
    assert_eq!(
        (set.status, set.location.as_str(), set.cookie),
        (StatusCode::SEE_OTHER, "/signin?done=password_set", None)
    );
    assert_eq!(me(&server, &joined.session()).await, Err(StatusCode::UNAUTHORIZED), "every session ended");
    assert_eq!(server.sign_in(email, new_password).await.status(), 200);
    let again =
        post_form(&server, "/reset-password", &[("token", &link.token), ("new_password", new_password)], None).await;
    assert_eq!(again.location, format!("/reset-password?error=reset_used#token={}", link.token));
}

/// A form's fields, as posted.
type Fields<'a> = &'a [(&'a str, &'a str)];

#[tokio::test]
async fn form_posts_from_other_sites_are_refused_and_quire_s_own_pass_under_no_referrer() {
    let server = TestServer::start().await;
    let session = format!("quire_session={}", server.token);
    let email = &server.user.email;
    let sign_in = [("email", email.as_str()), ("password", PASSWORD)];
    let change = [("current_password", PASSWORD), ("new_password", "a hijacked passphrase here")];
    let delete = [("password", PASSWORD)];
    let attacks: [(&str, Fields, Option<&str>); 4] = [
        ("/signin", &sign_in, None),
        ("/signup", &[("email", "planted@example.com"), ("password", PASSWORD)], None),
        ("/settings/password", &change, Some(session.as_str())),
        ("/settings/delete-account", &delete, Some(session.as_str())),
    ];
    for (path, fields, cookie) in attacks {
        for (origin, site) in [
            (Some("https://evil.example"), "cross-site"),
            // A sandboxed frame or a `data:` page says `null`; its browser says where it really is.
            (Some("null"), "cross-site"),
            (Some("null"), "same-site"),
            (None, "cross-site"),
        ] {
            let posted = post_form_from(&server, path, fields, cookie, origin, site).await;
            assert_eq!(posted.status, StatusCode::FORBIDDEN, "{path} from {origin:?}, {site}");
            assert!(posted.cookie.is_none(), "{path}");
        }
    }
    assert_eq!(server.sign_in(email, PASSWORD).await.status(), 200, "the password did not change");
    assert_eq!(me(&server, &session).await.as_deref(), Ok(email.as_str()), "the account is still there");
    assert_eq!(server.sign_in("planted@example.com", PASSWORD).await.status(), 401);

    // Quire's own page under `Referrer-Policy: no-referrer`: the browser says `Origin: null`, `same-origin`.
    let own = post_form_from(&server, "/signin", &sign_in, None, Some("null"), "same-origin").await;
    assert_eq!((own.status, own.location.as_str()), (StatusCode::SEE_OTHER, "/"));
    assert!(own.cookie.is_some());
}

#[tokio::test]
async fn form_posts_count_against_the_same_limits_and_throttling() {
    let server = TestServer::start_with(|config| config.limits.auth = 4).await;
    let email = server.user.email.clone();
    let wrong = [("email", email.as_str()), ("password", "a wrong guess")];
    // Four attempts a minute from this address: the owner's sign-up, then three sign-ins (JSON ones count too).
    assert_eq!(server.sign_in(&email, "a wrong guess").await.status(), 401);
    for _ in 0..2 {
        assert_eq!(post_form(&server, "/signin", &wrong, None).await.location, "/signin?error=invalid_credentials");
    }
    let limited = post_form(&server, "/signin", &[("email", email.as_str()), ("password", PASSWORD)], None).await;
    assert_eq!((limited.location.as_str(), limited.cookie), ("/signin?error=rate_limited", None));
    assert_eq!(server.sign_in(&email, PASSWORD).await.status(), 429, "the JSON route shares the limit");
    let signup = post_form(&server, "/signup", &[("email", "late@example.com"), ("password", PASSWORD)], None).await;
    assert_eq!(signup.location, "/signup?error=rate_limited");

    // Per account, from every address: past the free failures even the right password waits.
    let server = TestServer::start().await;
    let email = server.user.email.clone();
    let wrong = [("email", email.as_str()), ("password", "a wrong guess")];
    for _ in 0..=quire::auth::throttle::FREE_FAILURES {
        assert_eq!(post_form(&server, "/signin", &wrong, None).await.location, "/signin?error=invalid_credentials");
    }
    let held = post_form(&server, "/signin", &[("email", email.as_str()), ("password", PASSWORD)], None).await;
    assert_eq!((held.location.as_str(), held.cookie), ("/signin?error=rate_limited", None));
    assert_eq!(server.sign_in(&email, PASSWORD).await.status(), 429);
}

/// The real binary, logging every request as JSON lines (as an access log would): its address and its log.
async fn logged_quire(dir: &std::path::Path) -> (String, tokio::process::Child, tokio::task::JoinHandle<Vec<String>>) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_quire"))
        .env_clear()
        .env("QUIRE_DATA_DIR", dir)
        .env("LEPTOS_SITE_ADDR", "127.0.0.1:0")
        .env("QUIRE_LOG_FORMAT", "json")
        .env("QUIRE_SIGNUP", "open")
        .env("RUST_LOG", "info,tower_http=debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut base = None;
    while let Some(line) = lines.next_line().await.unwrap() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        if event["fields"]["message"] == "Quire is listening" {
            base = Some(format!("http://{}", event["fields"]["addr"].as_str().unwrap()));
            break;
        }
    }
    let base = base.expect("quire exited before listening");
    // The rest of the log is read (so it never blocks the process) until it ends.
    let log = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            all.push(line);
        }
        all
    });
    (base, child, log)
}

#[tokio::test]
async fn the_log_never_holds_a_password_posted_by_a_form() {
    let dir = tempfile::tempdir().unwrap();
    let (base, mut child, log) = logged_quire(dir.path()).await;
    let post = |path: &str, fields: &[(&str, &str)], cookie: Option<String>| {
        let mut request = browser().post(format!("{base}{path}")).form(fields).header(header::ORIGIN, &base);
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        async move { request.send().await.unwrap() }
    };
    let location = |response: &reqwest::Response| response.headers()[header::LOCATION].to_str().unwrap().to_string();
    let email = "logged@example.com";
    let password = "a passphrase nobody logs 7Q";
    let changed = "another passphrase nobody logs 8R";
    let guess = "a guess nobody logs 9S";

    assert_eq!(location(&post("/signup", &[("email", email), ("password", password)], None).await), "/");
    let wrong = post("/signin", &[("email", email), ("password", guess)], None).await;
    assert_eq!(location(&wrong), "/signin?error=invalid_credentials");
    let signed_in = post("/signin", &[("email", email), ("password", password)], None).await;
    let cookie = signed_in.headers()[header::SET_COOKIE].to_str().unwrap().split(';').next().unwrap().to_string();
    let fields = [("current_password", password), ("new_password", changed)];
    let change = post("/settings/password", &fields, Some(cookie)).await;
    assert_eq!(location(&change), "/settings?form=change-password&done=password_changed");

    child.kill().await.unwrap();
    let log = log.await.unwrap().join("\n");
    for path in ["/signup", "/signin", "/settings/password"] {
        assert!(log.contains(&format!("\"uri\":\"{path}\"")), "the request to {path} is logged:\n{log}");
    }
    for secret in [password, changed, guess] {
        for form in [secret.to_string(), secret.replace(' ', "+"), secret.replace(' ', "%20")] {
            assert!(!log.contains(&form), "{form:?} is in the log");
        }
    }
}

#[tokio::test]
async fn pages_may_reach_the_live_reload_socket_only_while_cargo_leptos_watches() {
    let page_policy = |server: &TestServer, host: Option<&'static str>| {
        let mut request = server.anonymous().get(server.url("/signin"));
        if let Some(host) = host {
            request = request.header(header::HOST, host);
        }
        async move {
            let response = request.send().await.unwrap();
            response.headers()["content-security-policy"].to_str().unwrap().to_string()
        }
    };
    let connect_src = |policy: &str| {
        policy.split(';').map(str::trim).find(|d| d.starts_with("connect-src")).unwrap_or_default().to_string()
    };

    let release = TestServer::start().await;
    assert!(!release.state.config.leptos_watch);
    let policy = page_policy(&release, Some("localhost:3000")).await;
    assert_eq!(connect_src(&policy), "connect-src 'self'", "{policy}");
    assert!(!policy.contains("ws:"), "{policy}");

    let watched = TestServer::start_with(|config| {
        config.leptos_watch = true;
        config.reload_port = 3101;
    })
    .await;
    assert_eq!(
        connect_src(&page_policy(&watched, None).await),
        "connect-src 'self' ws://127.0.0.1:3101",
        "the site's own host"
    );
    assert_eq!(
        connect_src(&page_policy(&watched, Some("localhost:3000")).await),
        "connect-src 'self' ws://127.0.0.1:3101 ws://localhost:3101",
        "and the host the page was asked for"
    );
    // The rest of the policy is the release one.
    let dev = page_policy(&watched, None).await;
    let without_connect = |policy: &str| -> Vec<String> {
        policy
            .split(';')
            .map(str::trim)
            .filter(|d| !d.starts_with("connect-src") && !d.starts_with("script-src"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(without_connect(&dev), without_connect(&policy));
    // Answers that are not pages may still load nothing.
    let api = watched.get("/api/auth/me").await;
    assert!(api.headers()["content-security-policy"].to_str().unwrap().starts_with("default-src 'none'"));
}
