//! The first administrator needs what only the operator has, and no secret of a link reaches the log. By
//! invitation or closed, a fresh Quire admits nobody until someone signs up with a setup link from the server's
//! log (any instance's, once) or the operator runs `quire admin create`; in `open` mode the first account
//! administers Quire as before. Invitation, reset, setup, OAuth-style `code` and `state` values never appear in
//! the log, even at `RUST_LOG=trace`, but for the one line that prints the setup link.

use std::{process::Stdio, sync::Arc, time::Duration};

use quire::auth::setup;
use quire::config::Config;
use store::{SignUpMode, StoreError};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::TcpListener,
    sync::oneshot,
};
use wire::{AuthResponse, ErrorBody};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{test_config, PASSWORD};

stories!(
    by_invitation_nobody_signs_up_before_the_setup_link_makes_the_administrator,
    closed_quire_makes_no_account_but_the_setup_links,
    open_quire_makes_its_first_account_administrator_without_a_link,
    the_setup_link_works_through_the_plain_sign_up_form,
);

/// A server on `db` in sign-up `mode` that nobody has signed up to yet.
struct Fresh {
    base: String,
    state: quire::AppState,
    _stop: oneshot::Sender<()>,
    _dir: tempfile::TempDir,
}

impl Fresh {
    async fn start(db: &Db, mode: SignUpMode) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config: Config = test_config(dir.path());
        config.signup = mode;
        let provider = Arc::new(llm::builtin::Builtin::new());
        let state = quire::AppState::new(config, db.store.clone(), provider).await.unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = state.clone();
        tokio::spawn(async move {
            let _ = quire::serve(listener, serving, async {
                let _ = stopped.await;
            })
            .await;
        });
        Self { base, state, _stop: stop, _dir: dir }
    }

    /// Posts a sign-up of `email` with the extra fields of `pass` (`invite`, `setup`).
    async fn register(&self, email: &str, pass: serde_json::Value) -> reqwest::Response {
        let mut body = serde_json::json!({ "email": email, "password": PASSWORD });
        body.as_object_mut().unwrap().extend(pass.as_object().unwrap().clone());
        reqwest::Client::new().post(format!("{}/api/auth/register", self.base)).json(&body).send().await.unwrap()
    }

    async fn exists(&self, email: &str) -> bool {
        match self.state.store.user_by_email(email).await {
            Ok(_) => true,
            Err(StoreError::NotFound) => false,
            Err(e) => panic!("{e}"),
        }
    }
}

/// A page's plain sign-up form, posted before its WebAssembly is alive (or without scripts): where the answer
/// sends the browser, and whether it signed in.
async fn post_sign_up_form(base: &str, fields: &[(&str, &str)]) -> (String, bool) {
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = browser
        .post(format!("{base}/signup"))
        .header("origin", base)
        .header("sec-fetch-site", "same-origin")
        .form(fields)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let location = response.headers()["location"].to_str().unwrap().to_string();
    (location, response.headers().contains_key("set-cookie"))
}

/// Asserts the status and error code of a refusal.
async fn refused(response: reqwest::Response, status: u16, code: &str) {
    assert_eq!(response.status(), status, "expected {code}");
    let body: ErrorBody = response.json().await.unwrap();
    assert_eq!(body.error.code, code, "{}", body.error.message);
}

async fn signed_up(response: reqwest::Response) -> AuthResponse {
    assert_eq!(response.status(), 201);
    response.json().await.unwrap()
}

async fn by_invitation_nobody_signs_up_before_the_setup_link_makes_the_administrator(db: Db) {
    let quire = Fresh::start(&db, SignUpMode::Invite).await;
    let none = serde_json::json!({});
    refused(quire.register("first@example.com", none.clone()).await, 403, "setup_required").await;
    let made_up = serde_json::json!({ "invite": "made-up-invitation" });
    refused(quire.register("first@example.com", made_up).await, 403, "setup_required").await;
    assert!(!quire.exists("first@example.com").await, "nobody is let in before an administrator exists");

    // Two instances started on this database, each with its link: neither start spoils the other's.
    let first_link = setup::issue(&quire.state.store).await.unwrap().expect("a link while nobody administers");
    let second_link = setup::issue(&quire.state.store).await.unwrap().expect("a second instance's link");
    assert_ne!(first_link, second_link);
    refused(quire.register("first@example.com", serde_json::json!({ "setup": "guess" })).await, 422, "setup_invalid")
        .await;
    let too_long = "x".repeat(200);
    refused(quire.register("first@example.com", serde_json::json!({ "setup": too_long })).await, 422, "setup_invalid")
        .await;

    let admin = signed_up(quire.register("first@example.com", serde_json::json!({ "setup": second_link })).await).await;
    assert!(admin.user.admin, "the setup link makes the administrator");
    // Used once, every link is done: the other instance's too.
    for link in [&first_link, &second_link] {
        let again = quire.register("second@example.com", serde_json::json!({ "setup": link })).await;
        refused(again, 422, "setup_invalid").await;
    }
    assert!(!quire.exists("second@example.com").await);
    refused(quire.register("second@example.com", none).await, 403, "invite_required").await;
    assert_eq!(setup::issue(&quire.state.store).await.unwrap(), None, "no link is made once there is an administrator");
    assert!(!setup::announce(&quire.state.store, SignUpMode::Invite, &quire.base).await.unwrap());

    // Invitations work as before, and make no administrator.
    let admin_client = crate::common::bearer_client(&admin.token);
    let invite = serde_json::json!({ "expires_in_hours": 1, "max_uses": 1 });
    let created = admin_client.post(format!("{}/api/admin/invites", quire.base)).json(&invite).send().await.unwrap();
    let created: wire::admin::CreatedInvite = created.json().await.unwrap();
    let invited = quire.register("second@example.com", serde_json::json!({ "invite": created.token })).await;
    assert!(!signed_up(invited).await.user.admin);
}

async fn closed_quire_makes_no_account_but_the_setup_links(db: Db) {
    let quire = Fresh::start(&db, SignUpMode::Closed).await;
    refused(quire.register("first@example.com", serde_json::json!({})).await, 403, "setup_required").await;
    assert!(!quire.exists("first@example.com").await, "closed means no account at all without the link");
    assert!(setup::announce(&quire.state.store, SignUpMode::Closed, &quire.base).await.unwrap());
    let link = setup::issue(&quire.state.store).await.unwrap().unwrap();
    let admin = signed_up(quire.register("first@example.com", serde_json::json!({ "setup": link })).await).await;
    assert!(admin.user.admin);
    refused(quire.register("later@example.com", serde_json::json!({})).await, 403, "signup_closed").await;
    refused(quire.register("later@example.com", serde_json::json!({ "setup": link })).await, 422, "setup_invalid")
        .await;
    assert!(!quire.exists("later@example.com").await);
}

async fn open_quire_makes_its_first_account_administrator_without_a_link(db: Db) {
    let quire = Fresh::start(&db, SignUpMode::Open).await;
    assert!(!setup::announce(&quire.state.store, SignUpMode::Open, &quire.base).await.unwrap(), "no link when open");
    let first = signed_up(quire.register("first@example.com", serde_json::json!({})).await).await;
    assert!(first.user.admin, "in open mode the first account administers Quire");
    let second = signed_up(quire.register("second@example.com", serde_json::json!({})).await).await;
    assert!(!second.user.admin);
}

/// Runs `quire admin create` on the database in `dir` with `args` after it, `password` on its standard input
/// and `env` beside the directory; its exit status and what it printed.
async fn admin_create(
    dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
    password: &str,
) -> (bool, String, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_quire"))
        .env_clear()
        .env("QUIRE_DATA_DIR", dir)
        .envs(env.iter().copied())
        .args(["admin", "create"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{password}\n").as_bytes()).await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (output.status.success(), text(output.stdout), text(output.stderr))
}

#[tokio::test]
async fn quire_admin_create_makes_an_administrator_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let store_url = crate::common::sqlite_url(dir.path());
    let password = "a sturdy operator passphrase";
    let (ok, out, err) = admin_create(dir.path(), &["--email", "root@example.com"], &[], password).await;
    assert!(ok, "{out}{err}");
    assert!(!out.contains(password) && !err.contains(password));
    let store = store::connect(&store_url).await.unwrap();
    let root = store.user_by_email("root@example.com").await.unwrap();
    assert!(root.is_admin, "an administrator, though sign-up is by invitation");
    let verified = quire::auth::password::verify(password.into(), Some(root.password_hash.clone())).await.unwrap();
    assert!(verified, "the password read from standard input");
    assert_eq!(setup::issue(&store).await.unwrap(), None, "no setup link once an administrator exists");

    // The password from the environment, or from a file; never one too weak, and never a taken address.
    let env = [("QUIRE_ADMIN_PASSWORD", "another sturdy passphrase")];
    let (ok, out, err) = admin_create(dir.path(), &["--email", "ops@example.com"], &env, "ignored").await;
    assert!(ok, "{out}{err}");
    let ops = store.user_by_email("ops@example.com").await.unwrap();
    assert!(quire::auth::password::verify("another sturdy passphrase".into(), Some(ops.password_hash)).await.unwrap());
    let file = dir.path().join("password.txt");
    std::fs::write(&file, "a third sturdy passphrase\n").unwrap();
    let args = ["--email", "file@example.com", "--password-file", file.to_str().unwrap()];
    assert!(admin_create(dir.path(), &args, &[], "").await.0);
    assert!(store.user_by_email("file@example.com").await.unwrap().is_admin);

    let (ok, _, err) = admin_create(dir.path(), &["--email", "weak@example.com"], &[], "short").await;
    assert!(!ok && err.contains("12 characters"), "{err}");
    let (ok, _, err) = admin_create(dir.path(), &["--email", "ROOT@example.com"], &[], password).await;
    assert!(!ok && err.contains("exists already"), "{err}");
    assert!(matches!(store.user_by_email("weak@example.com").await, Err(StoreError::NotFound)));
    // There is no flag for the password itself.
    let (ok, _, err) = admin_create(dir.path(), &["--email", "x@example.com", "--password", password], &[], "").await;
    assert!(!ok, "{err}");
}

/// A `quire` process on port 0 whose JSON log lines are all kept.
struct Logged {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    seen: Vec<String>,
}

impl Logged {
    /// The field `field` of the first line whose message starts with `message`.
    async fn field(&mut self, message: &str, field: &str) -> String {
        while let Some(line) = self.lines.next_line().await.unwrap() {
            self.seen.push(line.clone());
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
            if event["fields"]["message"].as_str().is_some_and(|m| m.starts_with(message)) {
                return event["fields"][field].as_str().unwrap().to_string();
            }
        }
        panic!("quire exited before logging {message:?}: {:?}", self.seen);
    }
}

#[tokio::test]
async fn the_setup_link_is_logged_once_and_no_secret_of_a_link_is_logged_at_any_level() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_quire"))
        .env_clear()
        .env("QUIRE_DATA_DIR", dir.path())
        .env("LEPTOS_SITE_ADDR", "127.0.0.1:0")
        .env("QUIRE_LOG_FORMAT", "json")
        .env("QUIRE_RATE_LIMITS", "off")
        // Sign-up by invitation (the default), and every line any crate writes.
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut quire = Logged { child, lines, seen: Vec::new() };
    let link = quire.field("Quire has no administrator yet", "link").await;
    let base = format!("http://{}", quire.field("Quire is listening", "addr").await);
    let (page, token) = link.split_once("?setup=").expect("a setup link");
    assert_eq!(page, format!("{base}/signup"));
    let mut lines = quire.lines;
    let log = tokio::spawn(async move {
        let mut all = quire.seen;
        while let Ok(Some(line)) = lines.next_line().await {
            all.push(line);
        }
        all
    });

    let client = reqwest::Client::new();
    assert_eq!(client.get(&link).send().await.unwrap().status(), 200, "the sign-up page opens from the link");
    let body = serde_json::json!({ "email": "first@example.com", "password": PASSWORD, "setup": token });
    let admin = signed_up(client.post(format!("{base}/api/auth/register")).json(&body).send().await.unwrap()).await;
    assert!(admin.user.admin);
    for path in [
        "/signup?invite=SECRET-invite-1",
        "/reset-password?token=SECRET-reset-2",
        "/api/threads?code=SECRET-code-3&state=SECRET-state-4",
        "/chat?page=2&token=SECRET-token-5",
        "/signin?next=%2Fsignup%3Finvite%3DSECRET-encoded-6",
        "/no-such-page?setup=SECRET-setup-7",
    ] {
        client.get(format!("{base}{path}")).send().await.unwrap();
    }

    let pid = rustix::process::Pid::from_raw(quire.child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let exited = tokio::time::timeout(Duration::from_secs(30), quire.child.wait()).await;
    assert!(exited.is_ok(), "quire stops on SIGTERM");
    let log = log.await.unwrap();
    let leaks: Vec<&String> = log.iter().filter(|line| line.contains("SECRET-")).collect();
    assert!(leaks.is_empty(), "secrets in the log: {leaks:#?}");
    let with_token: Vec<&String> = log.iter().filter(|line| line.contains(token)).collect();
    assert_eq!(with_token.len(), 1, "only the line for the operator holds the setup token: {with_token:#?}");
    // The requests were logged, with their secrets replaced.
    assert!(log.iter().any(|line| line.contains(r#""uri":"/signup?[redacted]""#)), "{log:#?}");
    assert!(log.iter().any(|line| line.contains("code=[redacted]&state=[redacted]")), "{log:#?}");
}

async fn the_setup_link_works_through_the_plain_sign_up_form(db: Db) {
    let quire = Fresh::start(&db, SignUpMode::Invite).await;
    let link = setup::issue(&quire.state.store).await.unwrap().expect("a link while nobody administers");
    let email = ("email", "first@example.com");

    let (location, signed_in) = post_sign_up_form(&quire.base, &[email, ("password", PASSWORD)]).await;
    assert_eq!(location, "/signup?error=setup_required");
    assert!(!signed_in);
    // A wrong token comes back only in the fragment, which the browser never sends.
    let (location, signed_in) =
        post_sign_up_form(&quire.base, &[email, ("password", PASSWORD), ("setup", "guess")]).await;
    assert_eq!(location, "/signup?error=setup_invalid#setup=guess");
    assert!(!signed_in && !quire.exists("first@example.com").await);
    // A weak password keeps the real link in the fragment, so the next try still carries it.
    let (location, _) = post_sign_up_form(&quire.base, &[email, ("password", "short"), ("setup", &link)]).await;
    assert_eq!(location, format!("/signup?error=weak_password#setup={link}"));

    let (location, signed_in) =
        post_sign_up_form(&quire.base, &[email, ("password", PASSWORD), ("setup", &link)]).await;
    assert_eq!(location, "/");
    assert!(signed_in, "the new administrator is signed in");
    let admin = quire.state.store.user_by_email("first@example.com").await.unwrap();
    assert!(admin.is_admin);
}
