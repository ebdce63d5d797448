//! Conversation history over real HTTP: listing, organising, search, stats, export and import.

use crate::common::{new_artifact, new_message, post_raw_json, ExpectJson, TestServer};
use proptest::{prelude::*, test_runner::Config as ProptestConfig};
use serde_json::{json, Value};
use store::NewMessage;
use uuid::Uuid;
use wire::{
    AccountExport, ArtifactType, ErrorBody, HistoryStats, ImportResult, Role, SearchKind, SearchResults, Thread,
    ThreadDetail, ThreadExport, ThreadList, Usage,
};

async fn create(server: &TestServer, body: Value) -> Thread {
    let response = server.client.post(server.url("/api/threads")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 201);
    response.json().await.unwrap()
}

async fn patch(server: &TestServer, id: Uuid, body: Value) {
    let response = server.patch_thread(id, &body).await;
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
}

async fn list(server: &TestServer, query: &str) -> ThreadList {
    let response = server.get(&format!("/api/threads?{query}")).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

async fn say(server: &TestServer, thread: Uuid, role: Role, content: &str) -> wire::Message {
    let message = NewMessage {
        usage: Usage { input_tokens: 3, output_tokens: 4 },
        model: (role == Role::Assistant).then(|| "test-model".to_string()),
        ..new_message(thread, role, content)
    };
    server.state.store.append_message(server.user.id, message).await.unwrap()
}

async fn document(server: &TestServer, thread: Uuid, title: &str, content: &str) -> wire::Artifact {
    let artifact = new_artifact(thread, ArtifactType::UserStories, title, content);
    server.state.store.create_artifact(server.user.id, artifact).await.unwrap()
}

async fn thread_count(server: &TestServer) -> usize {
    let user = server.user.id;
    server.state.store.all_thread_ids(user).await.unwrap().len()
}

#[tokio::test]
async fn listing_puts_pinned_first_hides_archived_and_filters_tags() {
    let server = TestServer::start().await;
    let a = create(&server, json!({"title": "Apple", "tags": ["work", "rust"]})).await;
    let b = create(&server, json!({"title": "banana", "tags": ["work"]})).await;
    let c = create(&server, json!({"title": "Cherry"})).await;
    let d = create(&server, json!({"title": "Date", "tags": ["rust"]})).await;
    patch(&server, a.id, json!({"pinned": true})).await;
    patch(&server, d.id, json!({"archived": true})).await;
    say(&server, c.id, Role::User, "first words of cherry").await;

    let default = list(&server, "").await;
    let ids: Vec<Uuid> = default.threads.iter().map(|t| t.id).collect();
    assert_eq!(ids, [a.id, c.id, b.id], "pinned first, then latest activity; archived hidden");
    let cherry = &default.threads[1];
    assert_eq!((cherry.message_count, cherry.first_message.as_deref()), (1, Some("first words of cherry")));

    let by_title = list(&server, "sort=title&order=asc").await;
    let titles: Vec<&str> = by_title.threads.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(titles, ["Apple", "Cherry", "banana"]);
    let created = list(&server, "sort=created_at&order=asc").await;
    assert_eq!(created.threads.iter().map(|t| t.id).collect::<Vec<_>>(), [a.id, b.id, c.id]);

    let archived = list(&server, "archived=true").await;
    assert_eq!(archived.threads.iter().map(|t| t.id).collect::<Vec<_>>(), [d.id]);
    let work = list(&server, "tags=work").await;
    assert_eq!(work.threads.iter().map(|t| t.id).collect::<Vec<_>>(), [a.id, b.id]);
    let both = list(&server, "tags=work,rust").await;
    assert_eq!(both.threads.iter().map(|t| t.id).collect::<Vec<_>>(), [a.id]);

    for bad in ["limit=0", "limit=101", "sort=size", "order=up", "cursor=%21%21"] {
        let response = server.get(&format!("/api/threads?{bad}")).await;
        assert!(matches!(response.status().as_u16(), 400 | 422), "{bad}: {}", response.status());
        let body: ErrorBody = response.json().await.unwrap();
        assert!(!body.error.code.is_empty());
    }
}

#[tokio::test]
async fn walking_pages_over_http_survives_new_and_changed_threads() {
    let server = TestServer::start().await;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(create(&server, json!({ "title": format!("t{i}") })).await.id);
    }
    // Oldest activity first: a changed thread now belongs at the end, where it would come again (if seen).
    let first = list(&server, "limit=3&order=asc").await;
    assert_eq!(first.threads.iter().map(|t| t.id).collect::<Vec<_>>(), ids[..3]);
    // Meanwhile: a new thread, a seen one and an unseen one get messages, another unseen one is renamed.
    create(&server, json!({"title": "new"})).await;
    let changed = [ids[1], ids[4], ids[5]];
    say(&server, ids[1], Role::User, "bump").await;
    say(&server, ids[4], Role::User, "bump").await;
    patch(&server, ids[5], json!({"title": "renamed"})).await;
    let mut seen: Vec<Uuid> = first.threads.iter().map(|t| t.id).collect();
    let mut cursor = first.next_cursor;
    while let Some(c) = cursor {
        let page = list(&server, &format!("limit=3&order=asc&cursor={c}")).await;
        seen.extend(page.threads.iter().map(|t| t.id));
        cursor = page.next_cursor;
    }
    assert_eq!(seen, ids, "every thread of the walk's start once, where it was then; nothing twice");
    // A fresh walk shows the changed and new threads, where they now belong.
    let fresh = list(&server, "limit=1").await;
    assert_eq!(fresh.threads[0].title, "renamed");
    let all = list(&server, "limit=100").await;
    assert_eq!(all.threads.len(), 8);
    assert!(changed.iter().all(|id| all.threads[..4].iter().any(|t| t.id == *id)));
}

#[tokio::test]
async fn deleting_cascades_and_message_counts_stay_true() {
    let server = TestServer::start().await;
    let t = create(&server, json!({"title": "Cascade"})).await;
    let m1 = say(&server, t.id, Role::User, "zebra crossing").await;
    say(&server, t.id, Role::Assistant, "zebra answer").await;
    document(&server, t.id, "Zebra doc", "stripes").await;

    let url = server.url(&format!("/api/threads/{}/messages/{}", t.id, m1.id));
    assert_eq!(server.client.delete(&url).send().await.unwrap().status(), 204);
    assert_eq!(server.client.delete(&url).send().await.unwrap().status(), 404);
    // The answer after it goes with it.
    let detail: ThreadDetail = server.detail(t.id).await;
    assert_eq!((detail.thread.message_count, detail.messages.len()), (0, 0));
    assert_eq!(server.search("zebra").await.total, 1, "the document");

    let url = server.url(&format!("/api/threads/{}", t.id));
    assert_eq!(server.client.delete(&url).send().await.unwrap().status(), 204);
    assert_eq!(server.client.get(&url).send().await.unwrap().status(), 404);
    assert_eq!(server.search("zebra").await.total, 0, "nothing of it is found any more");
    let export = server.get(&format!("/api/threads/{}/export", t.id)).await;
    assert_eq!(export.status(), 404);
    let stats: HistoryStats = server.get_json("/api/stats").await;
    assert_eq!((stats.total_threads, stats.total_messages), (0, 0));
    assert!(stats.artifacts_by_type.is_empty());
}

#[tokio::test]
async fn search_ranks_marks_and_pages() {
    let server = TestServer::start().await;
    let t = create(&server, json!({"title": "Payments <script>"})).await;
    say(&server, t.id, Role::User, "Refunds must reach the customer within five days").await;
    say(&server, t.id, Role::Assistant, "Refund policy: <b>five</b> business days & a receipt").await;
    document(&server, t.id, "Refund stories", "As a customer I want a refund").await;
    let other = create(&server, json!({"title": "Unrelated"})).await;
    say(&server, other.id, Role::User, "nothing to see here").await;

    let hits = server.search("refund*").await;
    assert_eq!(hits.total, 3);
    for hit in &hits.results {
        assert!(hit.snippet.to_lowercase().contains("<mark>refund"), "{hit:?}");
        assert_eq!(hit.thread_id, t.id);
        assert_eq!(hit.thread_title, "Payments <script>");
    }
    let kinds: Vec<SearchKind> = hits.results.iter().map(|h| h.kind).collect();
    assert!(kinds.contains(&SearchKind::Artifact) && kinds.contains(&SearchKind::Message));
    let answer = hits.results.iter().find(|h| h.role == Some(Role::Assistant)).expect("the answer");
    assert!(answer.snippet.contains("&lt;b&gt;five&lt;/b&gt;"), "escaped: {}", answer.snippet);
    assert!(answer.message_id.is_some());

    let phrase = server.search("\"five days\"").await;
    assert_eq!(phrase.total, 1);
    assert!(phrase.results[0].snippet.contains("<mark>five"), "{}", phrase.results[0].snippet);
    let title = server.search("payments").await;
    assert_eq!((title.total, title.results[0].kind), (1, SearchKind::Thread));
    assert!(title.results[0].snippet.contains("&lt;script&gt;"));
    assert_eq!(server.search("").await.total, 0);

    // Pages of one hit cover all three, once each.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut request = server.client.get(server.url("/api/search")).query(&[("q", "refund*"), ("limit", "1")]);
        if let Some(c) = &cursor {
            request = request.query(&[("cursor", c)]);
        }
        let page: SearchResults = request.expect_json().await;
        seen.extend(page.results.iter().map(|h| (h.message_id, h.artifact_id)));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen.len(), 3);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 3);
    let bad = server.get("/api/search?q=x&cursor=zzz").await;
    assert_eq!(bad.status(), 400);
}

/// Whatever is typed into the search box, the answer is a 200 with well-formed results.
#[test]
fn fuzzed_search_queries_never_fail() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = runtime.block_on(async {
        let server = TestServer::start().await;
        let t = create(&server, json!({"title": "Fuzz target"})).await;
        say(&server, t.id, Role::User, "alpha beta \"gamma\" (delta) e-mail NEAR/2 x*y o'clock").await;
        server
    });
    let noise = prop::sample::select(
        &[
            "\"", "*", "(", ")", ":", "^", "-", "'", "\\", "&", "|", "!", "<->", ":*", "NEAR", "AND", "OR", "NOT",
            "alpha", "%",
        ][..],
    );
    let query = prop_oneof![
        ".{0,80}",
        prop::collection::vec(noise.clone(), 0..8).prop_map(|parts| parts.join(" ")),
        prop::collection::vec(noise, 0..8).prop_map(|parts| parts.concat()),
    ];
    let config = ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() };
    proptest::test_runner::TestRunner::new(config)
        .run(&query, |q| {
            runtime.block_on(async {
                let response =
                    server.client.get(server.url("/api/search")).query(&[("q", q.as_str())]).send().await.unwrap();
                assert_eq!(response.status(), 200, "{q:?}");
                let page: SearchResults = response.json().await.unwrap();
                assert!(page.results.len() as u64 <= page.total);
            });
            Ok(())
        })
        .unwrap();
    runtime.block_on(async move { drop(server) });
}

#[tokio::test]
async fn stats_describe_a_known_data_set() {
    let server = TestServer::start().await;
    let a = create(&server, json!({"title": "A", "tags": ["x", "y"]})).await;
    let b = create(&server, json!({"title": "B", "tags": ["x"]})).await;
    say(&server, a.id, Role::User, "one").await;
    say(&server, a.id, Role::Assistant, "two").await;
    say(&server, b.id, Role::User, "three").await;
    document(&server, a.id, "Doc", "text").await;
    let user = server.user.id;
    server.state.store.record_usage(user, a.id, "m", Usage { input_tokens: 40, output_tokens: 2 }).await.unwrap();

    let response = server.get("/api/stats").await;
    assert_eq!(response.status(), 200);
    let raw: Value = response.json().await.unwrap();
    let stats: HistoryStats = serde_json::from_value(raw.clone()).unwrap();
    assert_eq!((stats.total_threads, stats.total_messages), (2, 3));
    assert_eq!(stats.average_messages_per_thread, 1.5);
    assert_eq!(raw["top_tags"], json!([{"tag": "x", "count": 2}, {"tag": "y", "count": 1}]));
    assert_eq!(raw["artifacts_by_type"], json!([{"artifact_type": "user_stories", "count": 1}]));
    assert_eq!((stats.input_tokens, stats.output_tokens), (40, 2));
    assert_eq!(stats.tokens_per_day.len(), 30);
    assert_eq!(stats.tokens_per_day.iter().map(|d| d.input_tokens).sum::<u64>(), 40);
    assert!(stats.first_conversation_at <= stats.last_conversation_at);
}

#[tokio::test]
async fn export_downloads_and_imports_back() {
    let server = TestServer::start().await;
    let t = create(&server, json!({"title": "Launch plan: Q3/Q4", "tags": ["launch"]})).await;
    say(&server, t.id, Role::User, "We launch in **June**.").await;
    say(&server, t.id, Role::Assistant, "Noted: June.").await;
    document(&server, t.id, "Launch stories", "- As a PM I want a date").await;

    let response = server.get(&format!("/api/threads/{}/export", t.id)).await;
    assert_eq!(response.status(), 200);
    let disposition = response.headers()["content-disposition"].to_str().unwrap().to_string();
    assert_eq!(
        disposition,
        "attachment; filename=\"Launch plan Q3 Q4.json\"; filename*=UTF-8''Launch%20plan%20Q3%20Q4.json"
    );
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let export: ThreadExport = response.json().await.unwrap();
    assert_eq!((export.messages.len(), export.artifacts.len()), (2, 1));
    assert_eq!(export.messages[1].model.as_deref(), Some("test-model"));

    let md = server.get(&format!("/api/threads/{}/export?format=markdown", t.id)).await;
    assert_eq!(md.status(), 200);
    assert!(md.headers()["content-disposition"].to_str().unwrap().contains("filename=\"Launch plan Q3 Q4.md\""));
    let text = md.text().await.unwrap();
    assert!(text.starts_with("# Launch plan: Q3/Q4\n"), "{text}");
    assert!(text.contains("### You") && text.contains("We launch in **June**.") && text.contains("### Assistant"));
    assert!(text.contains("## Documents") && text.contains("Launch stories (User Stories)"));
    let bad = server.get(&format!("/api/threads/{}/export?format=pdf", t.id)).await;
    assert_eq!(bad.status(), 422);

    let response = server.client.post(server.url("/api/threads/import")).json(&export).send().await.unwrap();
    assert_eq!(response.status(), 201);
    let imported: ImportResult = response.json().await.unwrap();
    assert_eq!(imported.threads.len(), 1);
    let copy = &imported.threads[0];
    assert_ne!(copy.id, t.id);
    assert_eq!((copy.title.as_str(), copy.message_count), ("Launch plan: Q3/Q4", 2));
    let again: ThreadExport = server.get_json(&format!("/api/threads/{}/export", copy.id)).await;
    let strip = |e: &ThreadExport| {
        let messages: Vec<_> = e.messages.iter().map(|m| (m.seq, m.role, m.content.clone(), m.model.clone())).collect();
        let docs: Vec<_> = e.artifacts.iter().map(|a| (a.title.clone(), a.content.clone())).collect();
        (e.thread.title.clone(), e.thread.tags.clone(), messages, docs)
    };
    assert_eq!(strip(&again), strip(&export));

    let everything = server.get("/api/export").await;
    assert_eq!(everything.status(), 200);
    assert!(everything.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .starts_with("attachment; filename=\"quire-export-"));
    let all: AccountExport = everything.json().await.unwrap();
    assert_eq!(all.format, "quire.export");
    assert_eq!(all.threads.len(), 2);
    assert!(all.attachments.is_empty());
}

#[tokio::test]
async fn an_account_export_larger_than_a_piece_arrives_whole_and_in_order() {
    let server = TestServer::start().await;
    let mut expected = Vec::new();
    for i in 0..8 {
        let t = create(&server, json!({"title": format!("Long {i}"), "tags": [format!("t{i}")]})).await;
        // Every conversation half a piece, so that the text goes out in several.
        let text = format!("{i} ").repeat(quire::history::export::PIECE_BYTES / 4);
        say(&server, t.id, Role::User, &text).await;
        say(&server, t.id, Role::Assistant, "Noted.").await;
        document(&server, t.id, &format!("Stories {i}"), "- As a user").await;
        expected.push((t.id, format!("Long {i}"), text));
    }
    let deleted = create(&server, json!({"title": "Gone"})).await;
    let response = server.client.delete(server.url(&format!("/api/threads/{}", deleted.id))).send().await.unwrap();
    assert_eq!(response.status(), 204);

    let response = server.get("/api/export").await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let body = response.bytes().await.unwrap();
    assert!(body.len() > 2 * quire::history::export::PIECE_BYTES, "{}", body.len());
    let all: AccountExport = serde_json::from_slice(&body).unwrap();
    let got: Vec<_> =
        all.threads.iter().map(|t| (t.thread.id, t.thread.title.clone(), t.messages[0].content.clone())).collect();
    assert_eq!(got, expected);
    assert!(all.threads.iter().all(|t| t.messages.len() == 2 && t.artifacts.len() == 1 && t.thread.tags.len() == 1));
    // The same text as one conversation's own export gives.
    let one: ThreadExport = server.get_json(&format!("/api/threads/{}/export", expected[3].0)).await;
    assert_eq!(all.threads[3].messages, one.messages);
    assert_eq!(all.threads[3].artifacts, one.artifacts);
    // The export's place in the heavy-work queue was given back before its body ended.
    assert_eq!(server.state.heavy.admitted(), 0);
}

#[tokio::test]
async fn invalid_imports_are_refused_and_create_nothing() {
    let server = TestServer::start().await;
    let t = create(&server, json!({"title": "Original"})).await;
    let m = say(&server, t.id, Role::User, "hello").await;
    let export: Value = server.get_json(&format!("/api/threads/{}/export", t.id)).await;
    let before = thread_count(&server).await;

    let mut dangling = export.clone();
    dangling["artifacts"] = json!([{
        "id": Uuid::now_v7(), "artifact_type": "custom", "title": "Doc", "content": "x", "version": 1,
        "request_message_id": Uuid::now_v7(), "assistant_message_id": m.id, "created_at": "2026-01-01T00:00:00Z"
    }]);
    let mut bad_role = export.clone();
    bad_role["messages"][0]["role"] = json!("system");
    let mut long_title = export.clone();
    long_title["thread"]["title"] = json!("x".repeat(501));
    let mut future = export.clone();
    future["version"] = json!(99);
    let mut duplicate = export.clone();
    duplicate["messages"] = json!([export["messages"][0], export["messages"][0]]);
    let cases = [
        json!({"hello": "world"}),
        json!([]),
        json!([1, 2]),
        json!({"format": "other.tool"}),
        json!({"mapping": {}, "current_node": "missing"}),
        json!({"mapping": {"a": {"parent": "b"}, "b": {"parent": "a"}}, "current_node": "a"}),
        dangling,
        bad_role,
        long_title,
        future,
        duplicate,
    ];
    for body in cases {
        let response = server.client.post(server.url("/api/threads/import")).json(&body).send().await.unwrap();
        let status = response.status().as_u16();
        assert!(matches!(status, 400 | 422), "{body}: {status}");
        let error: ErrorBody = response.json().await.unwrap();
        assert!(!error.error.message.is_empty());
    }
    let malformed = post_raw_json(&server.client, &server.url("/api/threads/import"), "{\"format\": ").await;
    assert_eq!(malformed.status(), 400);
    assert_eq!(thread_count(&server).await, before, "nothing was created");
}

/// A ChatGPT node.
fn node(id: &str, parent: Option<&str>, children: &[&str], message: Value) -> (String, Value) {
    (id.to_string(), json!({"id": id, "parent": parent, "children": children, "message": message}))
}

fn chatgpt_message(role: &str, text: &str, time: f64) -> Value {
    json!({
        "id": format!("m-{time}"),
        "author": {"role": role, "name": null, "metadata": {}},
        "create_time": time,
        "update_time": null,
        "content": {"content_type": "text", "parts": [text]},
        "status": "finished_successfully",
        "end_turn": true,
        "weight": 1.0,
        "metadata": {"model_slug": "gpt-4o"},
        "recipient": "all"
    })
}

#[tokio::test]
async fn chatgpt_conversations_import_with_their_branches_the_current_one_shown() {
    let server = TestServer::start().await;
    let mut system = chatgpt_message("system", "You are ChatGPT", 1_700_000_000.0);
    system["metadata"]["is_visually_hidden_from_conversation"] = json!(true);
    let mut image = chatgpt_message("user", "", 1_700_000_050.0);
    image["content"] = json!({"content_type": "multimodal_text", "parts": [{"asset_pointer": "file-service://x"}, "And this picture?"]});
    let first: serde_json::Map<String, Value> = [
        node("root", None, &["sys"], Value::Null),
        node("sys", Some("root"), &["u1"], system),
        node("u1", Some("sys"), &["a1-old", "a1"], chatgpt_message("user", "How do I brew coffee?", 1_700_000_010.0)),
        node("a1-old", Some("u1"), &[], chatgpt_message("assistant", "A discarded answer", 1_700_000_020.0)),
        node("a1", Some("u1"), &["tool"], chatgpt_message("assistant", "Grind, bloom, pour.", 1_700_000_030.0)),
        node("tool", Some("a1"), &["u2"], chatgpt_message("tool", "browsing result", 1_700_000_040.0)),
        node("u2", Some("tool"), &["a2"], image),
        node("a2", Some("u2"), &[], chatgpt_message("assistant", "That is a V60.", 1_700_000_060.0)),
    ]
    .into_iter()
    .collect();
    let second: serde_json::Map<String, Value> = [
        node("r", None, &["q"], Value::Null),
        node("q", Some("r"), &[], chatgpt_message("user", "Name three rivers of Europe please", 1_700_100_000.0)),
    ]
    .into_iter()
    .collect();
    let body = json!([
        {"title": "Coffee brewing", "create_time": 1_700_000_000.0, "update_time": 1_700_000_070.0,
         "mapping": first, "current_node": "a2", "conversation_id": "c1", "id": "c1", "moderation_results": []},
        {"title": null, "create_time": 1_700_100_000.0, "update_time": 1_700_100_000.0,
         "mapping": second, "current_node": "q", "id": "c2"}
    ]);
    let response = server.client.post(server.url("/api/threads/import")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 201);
    let result: ImportResult = response.json().await.unwrap();
    assert_eq!(result.threads.len(), 2);
    let coffee = &result.threads[0];
    assert_eq!(coffee.title, "Coffee brewing");
    assert_eq!(coffee.created_at.timestamp(), 1_700_000_000);
    assert_eq!(coffee.updated_at.timestamp(), 1_700_000_070);
    let detail = server.detail(coffee.id).await;
    let texts: Vec<(Role, &str)> = detail.messages.iter().map(|m| (m.role, m.content.as_str())).collect();
    assert_eq!(
        texts,
        [
            (Role::User, "How do I brew coffee?"),
            (Role::Assistant, "Grind, bloom, pour."),
            (Role::User, "And this picture?"),
            (Role::Assistant, "That is a V60."),
        ]
    );
    // The discarded answer is kept beside the one shown, before it.
    assert_eq!(detail.messages.iter().map(|m| m.seq).collect::<Vec<_>>(), [1, 3, 4, 5]);
    assert_eq!(detail.thread.message_count, 5);
    assert_eq!(detail.branches.len(), 1);
    assert_eq!(detail.branches[0].message_id, detail.messages[1].id);
    let shown: ThreadDetail = server
        .post_json(
            &format!("/api/threads/{}/branch", coffee.id),
            &json!({ "message_id": detail.branches[0].siblings[0] }),
        )
        .await;
    let texts: Vec<&str> = shown.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["How do I brew coffee?", "A discarded answer"]);
    assert_eq!(detail.messages[1].model.as_deref(), Some("gpt-4o"));
    assert_eq!(detail.messages[1].created_at.timestamp(), 1_700_000_030);
    let rivers = &result.threads[1];
    assert_eq!(rivers.title, "Name three rivers of Europe", "titled from its first message");
    assert_eq!(server.search("bloom").await.total, 1, "imported messages are searchable");

    // A single conversation object works too.
    let single = body[1].clone();
    let response = server.client.post(server.url("/api/threads/import")).json(&single).send().await.unwrap();
    assert_eq!(response.status(), 201);
}

/// A ChatGPT export of a long history is far above the 1 MiB limit of other requests: the import route has
/// its own (`QUIRE_MAX_IMPORT_MB`), and above it answers 413 with nothing created.
#[tokio::test]
async fn large_imports_have_their_own_limit() {
    let server = TestServer::start_with(|config| config.max_import_mb = 4).await;
    let conversation = |n: usize, words: usize| {
        let text = format!("conversation {n}: {}", "all work and no play ".repeat(words));
        let mapping: serde_json::Map<String, Value> = [
            node("r", None, &["q"], Value::Null),
            node("q", Some("r"), &["a"], chatgpt_message("user", &text, 1_700_000_000.0 + n as f64)),
            node("a", Some("q"), &[], chatgpt_message("assistant", &text, 1_700_000_001.0 + n as f64)),
        ]
        .into_iter()
        .collect();
        json!({"title": format!("Long {n}"), "create_time": 1_700_000_000.0, "update_time": 1_700_000_002.0,
               "mapping": mapping, "current_node": "a", "id": format!("c{n}")})
    };
    // About 3 MiB: accepted whole.
    let body = Value::Array((0..30).map(|n| conversation(n, 2_500)).collect());
    let size = serde_json::to_vec(&body).unwrap().len();
    assert!((2 << 20..4 << 20).contains(&size), "{size}");
    let response = server.client.post(server.url("/api/threads/import")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 201);
    let result: ImportResult = response.json().await.unwrap();
    assert_eq!(result.threads.len(), 30);
    assert_eq!(server.detail(result.threads[29].id).await.messages.len(), 2);

    // About 5 MiB: refused with the API's error body, nothing created.
    let body = Value::Array((0..50).map(|n| conversation(n, 2_500)).collect());
    let response = server.client.post(server.url("/api/threads/import")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 413);
    let error: ErrorBody = response.json().await.unwrap();
    assert_eq!(error.error.code, "payload_too_large");
    assert_eq!(list(&server, "limit=100").await.threads.len(), 30);

    // Every other request keeps the 1 MiB limit.
    let big = json!({ "title": "x", "tags": ["a".repeat(2 << 20)] });
    let response = server.client.post(server.url("/api/threads")).json(&big).send().await.unwrap();
    assert_eq!(response.status(), 413);
}

/// Over HTTP, `tags=a,b` lists exactly the conversations carrying every one of the tags, across pages.
#[test]
fn tag_filter_lists_exactly_the_tagged_threads() {
    const TAGS: &[&str] = &["red", "green", "blue"];
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = runtime.block_on(TestServer::start());
    let case = std::sync::atomic::AtomicUsize::new(0);
    let tag_set = || prop::collection::btree_set(prop::sample::select(TAGS), 0..4);
    let strategy =
        (prop::collection::vec(tag_set(), 0..8), tag_set().prop_filter("a filter", |s| !s.is_empty()), 1u32..4);
    let config = ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() };
    proptest::test_runner::TestRunner::new(config)
        .run(&strategy, |(threads, wanted, limit)| {
            // Tags of this case only, so cases never see each other's threads.
            let n = case.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let name = |tag: &str| format!("c{n}-{tag}");
            runtime.block_on(async {
                let mut expected = Vec::new();
                for tags in &threads {
                    let names: Vec<String> = tags.iter().map(|t| name(t)).collect();
                    let t = create(&server, json!({ "title": "tagged", "tags": names })).await;
                    if wanted.is_subset(tags) {
                        expected.push(t.id);
                    }
                }
                let filter: Vec<String> = wanted.iter().map(|t| name(t)).collect();
                let mut seen = Vec::new();
                let mut cursor = String::new();
                loop {
                    let query = format!("limit={limit}&order=asc&sort=created_at&tags={}{cursor}", filter.join(","));
                    let page = list(&server, &query).await;
                    for thread in &page.threads {
                        assert!(filter.iter().all(|f| thread.tags.contains(f)), "{thread:?} lacks one of {filter:?}");
                    }
                    seen.extend(page.threads.iter().map(|t| t.id));
                    match page.next_cursor {
                        Some(next) => cursor = format!("&cursor={next}"),
                        None => break,
                    }
                }
                assert_eq!(seen, expected);
            });
            Ok(())
        })
        .unwrap();
    runtime.block_on(async move { drop(server) });
}
