//! Several model providers at once: the providers file, the lists of models and their cache, and which model
//! answers (the conversation's, else the person's default, else the server's).

use std::time::Duration;

use llm::models_file::{parse, ModelsConfig};
use llm::Registry;
use serde_json::json;
use store::ThreadPatch;
use wire::{ChatEvent, ModelList, Settings, Thread};

use crate::common::{get_json, TestServer};
use crate::fake_upstream::{FakeServer, Reply};

const TWO_BUILTINS: &str = r#"
default_model = "fast/quire-fast"

[[providers]]
name = "fast"
kind = "builtin"
models = ["quire-fast"]

[[providers]]
name = "deep"
kind = "builtin"
models = ["quire-deep", "quire-deeper"]
"#;

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse_error(text: &str) -> String {
    parse(text, &no_env).expect_err(text)
}

#[test]
fn a_providers_file_is_checked_before_quire_starts() {
    let unknown = parse_error("[[providers]]\nname = \"a\"\nkind = \"builtin\"\nmodel = \"x\"\n");
    assert!(unknown.contains("line 4") && unknown.contains("model"), "{unknown}");
    let kind = parse_error("[[providers]]\nname = \"a\"\nkind = \"gemini\"\n");
    assert!(kind.contains("line 3"), "{kind}");
    assert!(parse_error("default_model = \"a/b\"\nproviders = []\n").contains("at least one provider"));
    let twice = "[[providers]]\nname = \"a\"\nkind = \"builtin\"\n[[providers]]\nname = \"a\"\nkind = \"builtin\"\n";
    assert!(parse_error(twice).contains("used twice"));
    assert!(parse_error("[[providers]]\nname = \"Work\"\nkind = \"builtin\"\n").contains("a-z"));
    let missing_key =
        "default_model = \"w/m\"\n[[providers]]\nname = \"w\"\nkind = \"openai\"\napi_key_env = \"W_KEY\"\n";
    let error = parse_error(missing_key);
    assert!(error.contains("W_KEY") && error.contains("not set"), "{error}");
    let both = "[[providers]]\nname = \"w\"\nkind = \"openai\"\napi_key_env = \"K\"\napi_key_file = \"/k\"\n";
    assert!(parse_error(both).contains("not both"));
    let elsewhere = "default_model = \"other/m\"\n[[providers]]\nname = \"w\"\nkind = \"builtin\"\n";
    assert!(parse_error(elsewhere).contains("no provider is named"));
    let unlisted = "default_model = \"w/m\"\n[[providers]]\nname = \"w\"\nkind = \"openai\"\nmodels = [\"n\"]\n";
    assert!(parse_error(unlisted).contains("does not list"));
    let no_default = "[[providers]]\nname = \"w\"\nkind = \"openai\"\n";
    assert!(parse_error(no_default).contains("set default_model"));

    // A good file: the key comes from the environment and never shows in `Debug`.
    let good = "default_model = \"work/gpt-4o-mini\"\n[[providers]]\nname = \"work\"\nkind = \"openai\"\n\
                base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"WORK_KEY\"\n";
    let env = |var: &str| (var == "WORK_KEY").then(|| "sk-secret-value".to_string());
    let config: ModelsConfig = parse(good, &env).unwrap();
    assert_eq!(config.default_model, "work/gpt-4o-mini");
    assert_eq!(config.providers[0].api_key.as_ref().map(|k| k.expose()), Some("sk-secret-value"));
    assert!(!format!("{config:?}").contains("sk-secret-value"));
    // Without a default, the first model of the first provider.
    let config = parse(&TWO_BUILTINS.replace("default_model = \"fast/quire-fast\"", ""), &no_env).unwrap();
    assert_eq!(config.default_model, "fast/quire-fast");
}

#[tokio::test]
async fn a_bad_providers_file_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("quire.toml");
    std::fs::write(&file, "[[providers]]\nname = \"a\"\nkind = \"builtin\"\ncolour = \"red\"\n").unwrap();
    let mut config = crate::common::test_config(dir.path());
    config.models_file = Some(file);
    let error = quire::AppState::from_config(config).await.err().expect("refused").to_string();
    assert!(error.contains("QUIRE_CONFIG") && error.contains("colour") && error.contains("line 4"), "{error}");
}

fn openai_file(url: &str) -> ModelsConfig {
    let text = format!(
        "default_model = \"local/llama\"\n[[providers]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"{url}/v1\"\n\
         api_key_env = \"LOCAL_KEY\"\n"
    );
    parse(&text, &|_| Some("local-key".into())).unwrap()
}

fn list_of(ids: &[&str]) -> Reply {
    let data: Vec<_> = ids.iter().map(|id| json!({ "id": id, "object": "model" })).collect();
    Reply::status(200, &json!({ "object": "list", "data": data }).to_string())
}

fn ids(models: &[llm::registry::Offered]) -> Vec<&str> {
    models.iter().map(|m| m.id.as_str()).collect()
}

#[tokio::test]
async fn a_providers_list_is_asked_for_once_and_kept() {
    let upstream = FakeServer::start(vec![list_of(&["llama", "qwen"]).head_delay(Duration::from_millis(100))]).await;
    let registry = Registry::from_file(&openai_file(&upstream.url), Duration::ZERO, None);
    // Asked for at once by many: one request.
    let lists = futures::future::join_all((0..5).map(|_| registry.models())).await;
    for list in &lists {
        assert_eq!(ids(list), ["local/llama", "local/qwen"]);
    }
    assert!(registry.knows("local/qwen").await && !registry.knows("local/mistral").await);
    assert_eq!(upstream.request_count(), 1, "kept for ten minutes");
    let request = &upstream.requests()[0];
    assert_eq!(request.path, "/v1/models");
    assert_eq!(request.headers.get("authorization").unwrap(), "Bearer local-key");
}

/// Lets a list kept for no time at all go stale, reads it (which asks the provider again in the background), waits
/// for that refresh to end and says what the read answered: the list from before the refresh.
async fn refresh_once(registry: &Registry) -> Vec<String> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    let seen = registry.models().await.into_iter().map(|m| m.id).collect();
    registry.until_refreshed().await;
    seen
}

#[tokio::test]
async fn a_failed_refresh_keeps_the_last_list() {
    let upstream = FakeServer::start(vec![
        list_of(&["llama", "qwen"]),
        Reply::status(500, "{}"),
        Reply::status(200, &format!("{{\"data\":[{{\"id\":\"{}\"}}]}}", "x".repeat(2 * 1024 * 1024))),
        list_of(&["mistral"]),
    ])
    .await;
    let registry = Registry::from_file(&openai_file(&upstream.url), Duration::ZERO, None).with_list_ttl(Duration::ZERO);
    assert_eq!(ids(&registry.models().await), ["local/llama", "local/qwen"]);
    assert_eq!(refresh_once(&registry).await, ["local/llama", "local/qwen"], "stale, answered while asked again");
    assert_eq!(refresh_once(&registry).await, ["local/llama", "local/qwen"], "a failure keeps the last list");
    assert_eq!(refresh_once(&registry).await, ["local/llama", "local/qwen"], "an oversized list is refused");
    assert_eq!(upstream.request_count(), 4);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(ids(&registry.models().await), ["local/mistral"]);
}

#[tokio::test]
async fn a_stale_list_answers_at_once_while_it_is_asked_for_again() {
    // The second list never comes: the provider hangs (a turn must not wait for it).
    let upstream =
        FakeServer::start(vec![list_of(&["llama", "qwen"]), list_of(&["llama"]).head_delay(Duration::from_secs(3600))])
            .await;
    let registry = Registry::from_file(&openai_file(&upstream.url), Duration::ZERO, None).with_list_ttl(Duration::ZERO);
    assert_eq!(ids(&registry.models().await), ["local/llama", "local/qwen"]);
    tokio::time::sleep(Duration::from_millis(5)).await;
    for _ in 0..3 {
        let chosen = tokio::time::timeout(Duration::from_secs(5), registry.choose(&[Some("local/qwen")]))
            .await
            .expect("a stale list is answered without waiting for the provider");
        assert_eq!(chosen.model(), "qwen");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(upstream.request_count(), 2, "one refresh at a time");
}

#[tokio::test]
async fn a_model_its_provider_dropped_gives_way_even_after_it_answered() {
    let upstream = FakeServer::start(vec![list_of(&["llama", "qwen"]), list_of(&["llama"])]).await;
    let registry = Registry::from_file(&openai_file(&upstream.url), Duration::ZERO, None).with_list_ttl(Duration::ZERO);
    assert_eq!(registry.choose(&[Some("local/qwen")]).await.model(), "qwen");
    refresh_once(&registry).await;
    assert_eq!(registry.choose(&[Some("local/qwen")]).await.model(), "llama", "no longer on offer: the default");
    assert_eq!(upstream.request_count(), 2);
}

#[tokio::test]
async fn without_a_list_the_default_still_answers() {
    let upstream = FakeServer::start(vec![Reply::status(401, "{}")]).await;
    let registry = Registry::from_file(&openai_file(&upstream.url), Duration::ZERO, None);
    assert!(registry.models().await.is_empty());
    assert!(registry.knows("local/llama").await, "the configured default is always on offer");
    assert_eq!(registry.choose(&[Some("local/gone")]).await.model(), "llama");
}

async fn two_builtins() -> TestServer {
    TestServer::start_with(|config| {
        let file = config.data_dir.join("quire.toml");
        std::fs::create_dir_all(&config.data_dir).unwrap();
        std::fs::write(&file, TWO_BUILTINS).unwrap();
        config.models_file = Some(file);
    })
    .await
}

/// The model that wrote the answer of a turn, as its last event and the stored message say.
async fn answered_by(server: &TestServer, thread: uuid::Uuid) -> String {
    let frames = server.chat(thread, "Hello there").await;
    let Some(ChatEvent::MessageComplete { model: Some(model), .. }) = frames.last().map(|f| f.event.clone()) else {
        panic!("no answer: {:?}", frames.last());
    };
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages.last().unwrap().model.as_deref(), Some(model.as_str()));
    model
}

async fn patch(client: &reqwest::Client, url: String, body: serde_json::Value) -> reqwest::Response {
    client.patch(url).json(&body).send().await.unwrap()
}

/// A new conversation on `server` that chose `model`, and its address.
async fn thread_choosing(server: &TestServer, model: &str) -> (uuid::Uuid, String) {
    let thread = server.create_thread().await;
    let url = server.url(&format!("/api/threads/{thread}"));
    assert_eq!(patch(&server.client, url.clone(), json!({ "model": model })).await.status(), 200);
    (thread, url)
}

#[tokio::test]
async fn the_conversation_then_the_person_then_the_server_chooses() {
    let server = two_builtins().await;
    let list: ModelList = server.get_json("/api/models").await;
    let offered: Vec<&str> = list.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(offered, ["fast/quire-fast", "deep/quire-deep", "deep/quire-deeper"]);
    assert_eq!((list.default.as_str(), list.server_default.as_str()), ("fast/quire-fast", "fast/quire-fast"));

    let first = server.create_thread().await;
    assert_eq!(answered_by(&server, first).await, "quire-fast", "the server's default");

    let response =
        patch(&server.client, server.url("/api/settings"), json!({ "default_model": "deep/quire-deep" })).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<Settings>().await.unwrap().default_model.as_deref(), Some("deep/quire-deep"));
    let list: ModelList = server.get_json("/api/models").await;
    assert_eq!(list.default, "deep/quire-deep");
    let second = server.create_thread().await;
    assert_eq!(answered_by(&server, second).await, "quire-deep", "the person's default");

    let url = server.url(&format!("/api/threads/{second}"));
    let response = patch(&server.client, url.clone(), json!({ "model": "deep/quire-deeper" })).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<Thread>().await.unwrap().model.as_deref(), Some("deep/quire-deeper"));
    assert_eq!(answered_by(&server, second).await, "quire-deeper", "the conversation's own");
    assert_eq!(server.detail(second).await.thread.model.as_deref(), Some("deep/quire-deeper"));

    // Regenerating follows the same choice.
    let answer = server.detail(second).await.messages.last().unwrap().id;
    let response = server
        .client
        .post(server.url(&format!("/api/threads/{second}/messages/{answer}/regenerate")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    crate::common::read_frames(response).await;
    assert_eq!(server.wait_idle(second).await.messages.last().unwrap().model.as_deref(), Some("quire-deeper"));

    // An empty choice goes back to the default.
    let response = patch(&server.client, url, json!({ "model": "" })).await;
    assert_eq!(response.json::<Thread>().await.unwrap().model, None);
    assert_eq!(answered_by(&server, second).await, "quire-deep");
}

#[tokio::test]
async fn unknown_models_are_refused_and_nothing_changes() {
    let server = two_builtins().await;
    let (thread, url) = thread_choosing(&server, "deep/quire-deeper").await;
    for bad in ["deep/gpt-5", "nowhere/quire-fast", "quire-fast", "deep/quire-deep\u{7}", &"x".repeat(300)] {
        let response = patch(&server.client, url.clone(), json!({ "model": bad })).await;
        assert_eq!(response.status(), 422, "{bad:?}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "validation_failed", "{body}");
        let response = patch(&server.client, server.url("/api/settings"), json!({ "default_model": bad })).await;
        assert_eq!(response.status(), 422, "{bad:?}");
    }
    assert_eq!(server.detail(thread).await.thread.model.as_deref(), Some("deep/quire-deeper"));
    let settings: Settings = server.get_json("/api/settings").await;
    assert_eq!(settings.default_model, None);
}

#[tokio::test]
async fn a_choice_no_longer_on_offer_falls_back_to_the_default() {
    let server = two_builtins().await;
    let thread = server.create_thread().await;
    // Chosen under an earlier providers file.
    let patch = ThreadPatch { model: Some("retired/old-model".into()), ..Default::default() };
    server.state.store.update_thread(server.user.id, thread, &patch).await.unwrap();
    assert_eq!(answered_by(&server, thread).await, "quire-fast");
}

#[tokio::test]
async fn a_person_cannot_see_or_set_another_persons_choice() {
    let server = two_builtins().await;
    let (thread, url) = thread_choosing(&server, "deep/quire-deep").await;
    let settings = patch(&server.client, server.url("/api/settings"), json!({ "default_model": "deep/quire-deeper" }));
    assert_eq!(settings.await.status(), 200);

    let (other, _) = server.second_user("other@example.com").await;
    assert_eq!(patch(&other, url.clone(), json!({ "model": "fast/quire-fast" })).await.status(), 404);
    assert_eq!(other.get(url).send().await.unwrap().status(), 404);
    let theirs: ModelList = get_json(&other, &server.url("/api/models")).await;
    assert_eq!(theirs.default, "fast/quire-fast", "another person's default is theirs alone");
    assert_eq!(server.detail(thread).await.thread.model.as_deref(), Some("deep/quire-deep"));
    assert!(server.anonymous().get(server.url("/api/models")).send().await.unwrap().status() == 401);
}
