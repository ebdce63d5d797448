//! Imports and listings held to the API's rules on both backends: a refused import creates nothing, a large
//! one is written whole, a failed one leaves nothing behind, numbers leave room for later messages, and no
//! filter or cursor a client makes up reaches a server error.

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde_json::{json, Value};
use store::{
    self,
    history::{ImportMessage, ImportThread},
};
use uuid::Uuid;
use wire::{
    ErrorBody, ImportResult, Role, ThreadList, MAX_IMPORTED_SEQ, MAX_IMPORTED_TEXT_CHARS, MAX_IMPORT_DOCUMENTS,
    MAX_IMPORT_MESSAGES, MAX_IMPORT_THREADS, MAX_TAGS,
};

use crate::common::backends::{run_story, stories, Backend, Db, Raw};
use crate::common::TestServer;
use crate::history_story::import_thread;

async fn server(db: &Db) -> TestServer {
    TestServer::builtin(db.store.clone()).await
}

async fn threads_of(db: &Db, user: Uuid) -> i64 {
    db.raw.count("threads", "user_id", user).await
}

async fn import(server: &TestServer, body: &Value) -> reqwest::Response {
    server.client.post(server.url("/api/threads/import")).json(body).send().await.unwrap()
}

fn message(seq: i64, content: &str) -> Value {
    json!({
        "id": Uuid::now_v7(), "seq": seq, "role": if seq % 2 == 1 { "user" } else { "assistant" },
        "content": content, "status": "complete", "created_at": "2026-01-01T00:00:00Z"
    })
}

fn document(title: &str) -> Value {
    json!({"id": Uuid::now_v7(), "artifact_type": "custom", "title": title, "content": "text", "version": 1,
           "created_at": "2026-01-01T00:00:00Z"})
}

/// A Quire export of one conversation.
fn export(title: &str, messages: Vec<Value>) -> Value {
    json!({
        "format": "quire.thread", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
        "thread": {"id": Uuid::now_v7(), "title": title, "tags": ["imported"], "created_at": "2026-01-01T00:00:00Z",
                   "updated_at": "2026-01-02T00:00:00Z"},
        "messages": messages, "artifacts": []
    })
}

/// A ChatGPT conversation of one question.
fn chatgpt(n: usize) -> Value {
    json!({"title": format!("c{n}"), "current_node": "q", "mapping": {
        "q": {"parent": null, "message": {"author": {"role": "user"}, "content": {"parts": ["hello"]}}}}})
}

stories!(
    refused_imports_create_nothing,
    imported_numbers_leave_room_for_later_messages,
    a_large_import_is_written_whole,
    a_failed_import_leaves_nothing_behind,
    list_filters_and_cursors_are_bounded,
    conversations_numbered_to_the_limit_keep_working,
    nul_characters_never_reach_the_database,
);

async fn refused_imports_create_nothing(db: Db) {
    let server = server(&db).await;
    let good = export("Good", vec![message(1, "hello"), message(2, "hi")]);
    assert_eq!(import(&server, &good).await.status(), 201, "the base case imports");
    let before = threads_of(&db, server.user.id).await;

    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = good.clone();
        change(&mut body);
        body
    };
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "a message longer than imports allow",
            with(&|b| b["messages"][1]["content"] = json!("x".repeat(MAX_IMPORTED_TEXT_CHARS + 1))),
            "messages[1].content",
        ),
        ("a title too long", with(&|b| b["thread"]["title"] = json!("t".repeat(501))), "thread.title"),
        ("a blank title", with(&|b| b["thread"]["title"] = json!(" \t ")), "thread.title"),
        ("a tag too long", with(&|b| b["thread"]["tags"] = json!(["g".repeat(51)])), "thread.tags"),
        (
            "too many tags",
            with(&|b| b["thread"]["tags"] = json!((0..=MAX_TAGS).map(|i| format!("g{i}")).collect::<Vec<_>>())),
            "thread.tags",
        ),
        (
            "a document title too long",
            with(&|b| b["artifacts"] = json!([document(&"d".repeat(5_000))])),
            "artifacts[0].title",
        ),
        ("the largest number", with(&|b| b["messages"][1]["seq"] = json!(i64::MAX)), "messages[1].seq"),
        ("number 0", with(&|b| b["messages"][0]["seq"] = json!(0)), "messages[0].seq"),
        ("a negative number", with(&|b| b["messages"][0]["seq"] = json!(-4)), "messages[0].seq"),
        ("one number twice", with(&|b| b["messages"][1]["seq"] = json!(1)), "messages"),
        (
            "too many messages",
            with(&|b| {
                b["messages"] = (1..=MAX_IMPORT_MESSAGES as i64 + 1).map(|seq| message(seq, "m")).collect();
            }),
            "messages",
        ),
        (
            "too many documents",
            with(&|b| b["artifacts"] = (0..=MAX_IMPORT_DOCUMENTS).map(|_| document("d")).collect()),
            "artifacts",
        ),
        ("a NUL in a message", with(&|b| b["messages"][0]["content"] = json!("a\u{0}b")), "messages[0].content"),
        (
            "tokens beyond any model",
            with(&|b| b["messages"][1]["output_tokens"] = json!(u64::MAX)),
            "messages[1].output_tokens",
        ),
        ("a model name too long", with(&|b| b["messages"][1]["model"] = json!("m".repeat(201))), "messages[1].model"),
        ("too many conversations", Value::Array((0..=MAX_IMPORT_THREADS).map(chatgpt).collect()), "conversations"),
        (
            "the good one, then a bad one",
            json!({"format": "quire.export", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
                   "threads": [good.clone(), with(&|b| b["messages"][0]["seq"] = json!(0))]}),
            "threads[1].messages[0].seq",
        ),
    ];
    for (case, body, field) in cases {
        let response = import(&server, &body).await;
        assert_eq!(response.status(), 422, "{case}");
        let error: ErrorBody = response.json().await.unwrap();
        assert_eq!(error.error.field.as_deref(), Some(field), "{case}: {}", error.error.message);
        assert_eq!(threads_of(&db, server.user.id).await, before, "{case}: nothing was created");
    }
    assert_eq!(db.raw.int("select count(*) from messages where user_id = ?", server.user.id).await, 2);
}

async fn imported_numbers_leave_room_for_later_messages(db: Db) {
    let server = server(&db).await;
    let body = export("Far along", vec![message(1, "first"), message(MAX_IMPORTED_SEQ, "last")]);
    let response = import(&server, &body).await;
    assert_eq!(response.status(), 201);
    let thread = response.json::<ImportResult>().await.unwrap().threads[0].id;
    let frames = server.chat(thread, "And one more, please.").await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    let detail = server.detail(thread).await;
    let numbers: Vec<i64> = detail.messages.iter().map(|m| m.seq).collect();
    assert_eq!(numbers, [1, MAX_IMPORTED_SEQ, MAX_IMPORTED_SEQ + 1, MAX_IMPORTED_SEQ + 2]);
}

/// Many conversations with long messages: more than one of SQLite's import transactions holds.
async fn a_large_import_is_written_whole(db: Db) {
    let server = server(&db).await;
    let paragraph = "Every unit of stock has a place and a count. ".repeat(40);
    let conversations: Vec<Value> = (0..40)
        .map(|t| {
            let messages = (1..=60).map(|seq| message(seq, &format!("{t}-{seq} {paragraph}"))).collect();
            let mut body = export(&format!("Stock {t}"), messages);
            body["artifacts"] = json!([document(&format!("Report {t}"))]);
            body
        })
        .collect();
    let body = json!({"format": "quire.export", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
                      "threads": conversations});
    assert!(serde_json::to_vec(&body).unwrap().len() > 4 << 20, "several megabytes");
    let response = import(&server, &body).await;
    assert_eq!(response.status(), 201);
    let result: ImportResult = response.json().await.unwrap();
    let titles: Vec<String> = result.threads.iter().map(|t| t.title.clone()).collect();
    assert_eq!(titles, (0..40).map(|t| format!("Stock {t}")).collect::<Vec<_>>(), "all, in order");
    assert!(result.threads.iter().all(|t| t.message_count == 60 && t.tags == ["imported"]));
    let user = server.user.id;
    assert_eq!(db.raw.int("select count(*) from messages where user_id = ?", user).await, 40 * 60);
    assert_eq!(db.raw.int("select count(*) from artifacts where user_id = ?", user).await, 40);
    if let Raw::Sqlite(_) = db.raw {
        // Indexed before the import answered: the first search does not wait for megabytes of text.
        let queued = "select count(*) from messages_to_index q join messages m on m.pk = q.pk where m.user_id = ?";
        assert_eq!(db.raw.int(queued, user).await, 0, "imported messages still queued for the index");
    }
    let last = server.detail(result.threads[39].id).await;
    assert!(last.messages[59].content.starts_with("39-60 "));
    // A first page ranks and counts only the newest hits; a page at the end counts them all.
    let first = db.store.search(user, "place count", 10, 0).await.unwrap();
    assert!(first.total_is_lower_bound, "{} hits counted", first.total);
    let end = db.store.search(user, "place count", 100, 40 * 60 - 50).await.unwrap();
    assert_eq!(
        (end.total, end.total_is_lower_bound, end.hits.len()),
        (40 * 60, false, 50),
        "every message is searchable"
    );
}

/// A conversation of `n` short messages, the last of them numbered like the first when `broken`.
fn stored_conversation(title: &str, n: i64, broken: bool) -> ImportThread {
    let messages = (1..=n)
        .map(|seq| {
            ImportMessage::new(
                if broken && seq == n { 1 } else { seq },
                if seq % 2 == 1 { Role::User } else { Role::Assistant },
                format!("findable words {seq} {}", "lorem ipsum ".repeat(30)),
                store::now(),
            )
        })
        .collect();
    ImportThread { tags: vec!["t".into()], ..import_thread(title, messages) }
}

/// The store fails part way (a number twice breaks the database's own uniqueness, after thousands of rows
/// were written): nothing of the import is left, not even in the search index.
async fn a_failed_import_leaves_nothing_behind(db: Db) {
    let s = &db.store;
    let importer = store::NewUser {
        email: format!("{}@example.com", Uuid::now_v7()),
        password_hash: String::new(),
        display_name: "Importer".into(),
    };
    let user = s.create_user(importer).await.unwrap().id;
    let mut threads: Vec<ImportThread> = (0..20).map(|i| stored_conversation(&format!("ok {i}"), 200, false)).collect();
    threads.push(stored_conversation("broken", 200, true));
    let failed = s.import_threads(user, threads).await;
    assert!(failed.is_err(), "{failed:?}");
    assert_eq!(threads_of(&db, user).await, 0);
    assert_eq!(db.raw.int("select count(*) from messages where user_id = ?", user).await, 0);
    assert_eq!(s.search(user, "findable", 10, 0).await.unwrap().total, 0);
    // The store takes imports again.
    let made = s.import_threads(user, vec![stored_conversation("again", 3, false)]).await.unwrap();
    assert_eq!(made.len(), 1);
    assert_eq!(s.search(user, "findable", 10, 0).await.unwrap().total, 3);
}

fn cursor(value: Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&value).unwrap())
}

/// The status of a listing and, for a refusal, its error's code and field.
async fn list_status(server: &TestServer, query: &str) -> (u16, Option<String>, Option<String>) {
    let response = server.get(&format!("/api/threads?{query}")).await;
    let status = response.status().as_u16();
    match response.json::<ErrorBody>().await {
        Ok(body) => (status, Some(body.error.code), body.error.field),
        Err(_) => (status, None, None),
    }
}

async fn list_filters_and_cursors_are_bounded(db: Db) {
    let server = server(&db).await;
    for i in 0..3 {
        let body = json!({"title": format!("t{i}"), "tags": ["a"]});
        server.client.post(server.url("/api/threads")).json(&body).send().await.unwrap();
    }
    let page: ThreadList = server.get_json("/api/threads?limit=1").await;
    let real: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(page.next_cursor.unwrap()).unwrap()).unwrap();
    let (status, ..) = list_status(&server, &format!("limit=1&cursor={}", cursor(real.clone()))).await;
    assert_eq!(status, 200, "the real cursor");

    // Tags: at most ten, each as long as a tag can be.
    let tags = |n: usize| (0..n).map(|i| format!("t{i}")).collect::<Vec<_>>().join(",");
    for (filter, expected) in [(tags(1_100), 400), (tags(MAX_TAGS + 1), 400), (tags(MAX_TAGS), 200)] {
        let (status, _, field) = list_status(&server, &format!("tags={filter}")).await;
        assert_eq!(status, expected, "{} tags", filter.split(',').count());
        if expected == 400 {
            assert_eq!(field.as_deref(), Some("tags"));
        }
    }
    for filter in ["x".repeat(51), "a%00b".into()] {
        let (status, _, field) = list_status(&server, &format!("tags={filter}")).await;
        assert_eq!((status, field.as_deref()), (400, Some("tags")), "{filter}");
    }

    // Cursors: base64 of JSON with every inner field made up.
    let with = |field: &str, value: Value| {
        let mut forged = real.clone();
        forged[field] = value;
        cursor(forged)
    };
    let mut forged = vec![
        "!!".to_string(),
        "x".repeat(20_000),
        URL_SAFE_NO_PAD.encode("not json"),
        cursor(json!({})),
        cursor(json!([1, 2, 3])),
        with("walk", json!("5:3:")),
        with("walk", json!("0:0:")),
        with("walk", json!("3:9:2")),
        with("walk", json!("3:9:5,4")),
        with("walk", json!("3:9:9")),
        with("walk", json!("18446744073709551616:18446744073709551617:")),
        with("walk", json!("abc")),
        with("walk", json!("")),
        with("walk", json!(null)),
        with("walk", json!(12)),
        with("as_of", json!(i64::MIN)),
        with("as_of", json!(i64::MAX)),
        with("as_of", json!("soon")),
        with("key", json!({"Time": i64::MAX})),
        with("key", json!({"Time": i64::MIN})),
        with("key", json!({"Time": -200_000_000_000_000_000_i64})),
        with("key", json!({"Text": "a title"})),
        with("key", json!({"Other": 1})),
        with("id", json!("not a uuid")),
        with("pinned", json!("yes")),
    ];
    for (key, sort) in [(json!({"Text": "a\u{0}b"}), "title"), (json!({"Text": "t".repeat(501)}), "title")] {
        forged.push(format!("{}&sort={sort}", with("key", key)));
    }
    for forged in forged {
        let (status, code, _) = list_status(&server, &format!("limit=1&cursor={forged}")).await;
        assert_eq!((status, code.as_deref()), (400, Some("invalid_cursor")), "{forged:.80}");
    }

    // Search: a query too long, a cursor that is not an offset we gave out.
    let search = |query: String| {
        let url = server.url(&format!("/api/search?{query}"));
        let client = server.client.clone();
        async move { client.get(url).send().await.unwrap() }
    };
    assert_eq!(search(format!("q={}", "w".repeat(1_001))).await.status(), 400);
    assert_eq!(search(format!("q={}", "w".repeat(1_000))).await.status(), 200);
    for made_up in ["o-1", "o10000", "o99999999999", "1", "o", "o1e3"] {
        let response = search(format!("q=t0&cursor={}", URL_SAFE_NO_PAD.encode(made_up))).await;
        assert_eq!(response.status(), 400, "{made_up}");
        let error: ErrorBody = response.json().await.unwrap();
        assert_eq!(error.error.code, "invalid_cursor");
    }
}

/// Conversations stored before imports were checked may carry numbers at the very end of the range (or below
/// 1): the next message renumbers them 1, 2, 3... in their order, and the conversation carries on.
async fn conversations_numbered_to_the_limit_keep_working(db: Db) {
    let server = server(&db).await;
    for (first, last) in [(i64::MAX - 1, i64::MAX), (-5, i64::MAX)] {
        let body = export("Stored long ago", vec![message(1, "first"), message(2, "second")]);
        let response = import(&server, &body).await;
        assert_eq!(response.status(), 201);
        let thread = response.json::<ImportResult>().await.unwrap().threads[0].id;
        db.raw.exec(&format!("update messages set seq = {last} where thread_id = ? and seq = 2"), thread).await;
        db.raw.exec(&format!("update messages set seq = {first} where thread_id = ? and seq = 1"), thread).await;
        db.raw.exec(&format!("update threads set last_seq = {last} where id = ?"), thread).await;

        let added = server.add_message(thread, &json!({"content": "Still here?"})).await;
        assert_eq!(added.status(), 201, "{}", added.text().await.unwrap());
        let frames = server.chat(thread, "And one more, please.").await;
        assert_eq!(frames.last().unwrap().event.name(), "message_complete");
        let detail = server.detail(thread).await;
        let numbers: Vec<i64> = detail.messages.iter().map(|m| m.seq).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5]);
        let texts: Vec<&str> = detail.messages.iter().take(4).map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["first", "second", "Still here?", "And one more, please."]);
    }
}

/// A NUL character cannot be stored in PostgreSQL's text: it is refused (or, in a file's text, dropped) alike
/// on both backends, and never reaches the database as a server error.
async fn nul_characters_never_reach_the_database(db: Db) {
    let server = server(&db).await;
    let thread = server.create_thread().await;
    let post = |path: String, body: Value| {
        let (client, url) = (server.client.clone(), server.url(&path));
        async move { client.post(url).json(&body).send().await.unwrap() }
    };
    let refused = [
        post(format!("/api/threads/{thread}/messages"), json!({"content": "a\u{0}b"})).await,
        post(format!("/api/threads/{thread}/chat"), json!({"content": "a\u{0}b"})).await,
        post("/api/threads".into(), json!({"title": "a\u{0}b"})).await,
        post("/api/threads".into(), json!({"tags": ["a\u{0}b"]})).await,
        server.patch_thread(thread, &json!({"title": "a\u{0}b"})).await,
        import(&server, &export("a\u{0}b", vec![message(1, "hello")])).await,
    ];
    for (i, response) in refused.into_iter().enumerate() {
        assert_eq!(response.status(), 422, "case {i}");
        let error: ErrorBody = response.json().await.unwrap();
        assert_eq!(error.error.code, "validation_failed", "case {i}");
    }

    // A text file's NULs are dropped: its words are kept and found.
    let text = b"Rackets\0 and\0\0 nets are stored in the\0 shed.".to_vec();
    let response = server.upload(thread, "nul.txt", "text/plain", text).await;
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    let found = db.store.search_chunks(server.user.id, thread, "rackets shed", 5).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].content, "Rackets and nets are stored in the shed.");

    // Searches and filters with a NUL are answered, not failed.
    for query in ["/api/search?q=a%00b", "/api/search?q=%00", "/api/threads?tags=a%00b"] {
        let status = server.get(query).await.status().as_u16();
        assert!(status == 200 || status == 400, "{query}: {status}");
    }
    assert_eq!(threads_of(&db, server.user.id).await, 1);
}
