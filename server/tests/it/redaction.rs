//! `QUIRE_REDACT_PII` past typed messages, on both backends: attached files' text (before it is split and
//! indexed), imported conversations and documents, titles people and models write. In each, an e-mail address
//! and a phone number reach neither the database nor the model.

use std::sync::Arc;

use llm::Part;
use serde_json::json;
use uuid::Uuid;
use wire::{ChatEvent, Thread};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{ExpectJson, ScriptedModel, TestServer};

stories!(
    attached_text_is_redacted_before_it_is_indexed,
    imported_conversations_and_documents_are_redacted,
    titles_people_and_models_write_are_redacted,
);

const EMAIL: &str = "jane.doe@example.com";
const PHONE: &str = "+44 20 7946 0958";
/// Pieces of [`EMAIL`] and [`PHONE`] that no redacted text holds.
const TRACES: [&str; 2] = ["jane.doe", "7946"];

fn assert_clean(what: &str, text: &str) {
    for trace in TRACES {
        assert!(!text.contains(trace), "{what} holds {trace}: {text}");
    }
}

async fn redacting_server(db: &Db, model: Arc<ScriptedModel>) -> TestServer {
    TestServer::with_configured(db.store.clone(), model, |config| config.redact_pii = true).await
}

/// Rows of `table` in the thread whose `column` holds a trace of the personal data.
async fn rows_with_traces(db: &Db, table: &str, column: &str, thread: Uuid) -> i64 {
    let mut found = 0;
    for trace in TRACES {
        let sql = format!("select count(*) from {table} where thread_id = ? and {column} like '%{trace}%'");
        found += db.raw.int(&sql, thread).await;
    }
    found
}

/// Everything the model was sent, as one text.
fn sent(model: &ScriptedModel) -> String {
    let requests = model.requests.lock().unwrap();
    let mut out = String::new();
    for request in requests.iter() {
        for message in &request.messages {
            for part in &message.parts {
                match part {
                    Part::Text { text } => out.push_str(text),
                    Part::ToolResult { content, .. } => out.push_str(content),
                    Part::ToolCall(call) => out.push_str(&call.arguments.to_string()),
                }
                out.push('\n');
            }
        }
    }
    out
}

async fn attached_text_is_redacted_before_it_is_indexed(db: Db) {
    let search = json!({"query": "refunds contact", "limit": 5});
    let model =
        ScriptedModel::new(vec![ScriptedModel::tool_use("document_search", search), ScriptedModel::text(&["Done."])]);
    let server = redacting_server(&db, model.clone()).await;
    let thread = server.create_thread().await;
    let text = format!("Refunds: write to {EMAIL} or call {PHONE} within 45 days.\n\nContact the desk first.");
    let response = server.upload(thread, &format!("contact {EMAIL}.txt"), "text/plain", text.as_bytes().to_vec()).await;
    assert_eq!(response.status(), 201);
    let attachment: wire::Attachment = response.json().await.unwrap();
    assert_clean("the file name", &attachment.filename);

    // Neither the stored chunks nor the search index hold it: a search for it finds nothing.
    assert_eq!(rows_with_traces(&db, "attachment_chunks", "content", thread).await, 0);
    for word in ["jane", "7946"] {
        let hits = server.state.store.search_chunks(server.user.id, thread, word, 5).await.unwrap();
        assert!(hits.is_empty(), "{word}: {hits:?}");
    }

    // The model gets the passage with placeholders.
    server.chat(thread, "Who do customers contact about refunds?").await;
    let seen = sent(&model);
    assert!(seen.contains("write to [EMAIL] or call [PHONE]"), "{seen}");
    assert_clean("what the model was sent", &seen);
    let answer = server.wait_idle(thread).await.messages.pop().unwrap();
    let record: wire::ContextRecord = server.get_json(&format!("/api/messages/{}/context", answer.id)).await;
    assert!(!record.passages.is_empty());
    for passage in &record.passages {
        assert_clean("a passage", &passage.excerpt);
        assert_clean("a passage's file", &passage.filename);
    }
}

async fn imported_conversations_and_documents_are_redacted(db: Db) {
    let model = ScriptedModel::new(vec![ScriptedModel::text(&["Noted."])]);
    let server = redacting_server(&db, model.clone()).await;
    let (request, answer) = (Uuid::now_v7(), Uuid::now_v7());
    let body = json!({
        "format": "quire.thread", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
        "thread": {"id": Uuid::now_v7(), "title": format!("Call {PHONE}"), "created_at": "2026-01-01T00:00:00Z",
                   "updated_at": "2026-01-02T00:00:00Z"},
        "messages": [
            {"id": request, "seq": 1, "role": "user", "content": format!("Mail {EMAIL} about the launch."),
             "status": "complete", "created_at": "2026-01-01T00:00:00Z"},
            {"id": answer, "seq": 2, "role": "assistant", "content": format!("I will call {PHONE}."),
             "status": "complete", "created_at": "2026-01-01T00:00:01Z"}
        ],
        "artifacts": [
            {"id": Uuid::now_v7(), "artifact_type": "meeting_summary", "title": format!("Notes for {EMAIL}"),
             "content": format!("# Notes\n\nPhone {PHONE}."), "version": 1, "created_at": "2026-01-01T00:00:02Z"}
        ]
    });
    let response = server.client.post(server.url("/api/threads/import")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 201);
    let imported: wire::ImportResult = response.json().await.unwrap();
    let thread = imported.threads[0].id;
    assert_eq!(imported.threads[0].title, "Call [PHONE]");

    let detail = server.detail(thread).await;
    assert_eq!(detail.messages[0].content, "Mail [EMAIL] about the launch.");
    assert_eq!(detail.messages[1].content, "I will call [PHONE].");
    assert_eq!(detail.artifacts[0].title, "Notes for [EMAIL]");
    assert_eq!(detail.artifacts[0].content, "# Notes\n\nPhone [PHONE].");
    for (table, column) in [("messages", "content"), ("artifacts", "title"), ("artifacts", "content")] {
        assert_eq!(rows_with_traces(&db, table, column, thread).await, 0, "{table}.{column}");
    }
    assert_eq!(
        db.raw.int("select count(*) from threads where id = ? and title like '%7946%'", thread).await,
        0,
        "the title"
    );

    // The model, asked in the imported conversation, gets placeholders only.
    server.chat(thread, "What did we decide?").await;
    let seen = sent(&model);
    assert!(seen.contains("Mail [EMAIL]"), "{seen}");
    assert_clean("what the model was sent", &seen);
}

async fn titles_people_and_models_write_are_redacted(db: Db) {
    let document = json!({"artifact_type": "requirements_doc", "title": format!("Plan for {EMAIL}"),
                          "content": "# Plan\n\nShip in spring."});
    let model = ScriptedModel::naming(vec![
        ScriptedModel::tool_use("save_artifact", document),
        ScriptedModel::text(&["Saved."]),
        ScriptedModel::text(&[format!("Call {PHONE}").as_str()]),
    ]);
    let server = redacting_server(&db, model.clone()).await;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "Write the requirements doc for the spring launch").await;

    // The model's conversation title, as announced and as stored.
    let announced = frames.iter().find_map(|f| match &f.event {
        ChatEvent::ThreadName { title, .. } => Some(title.clone()),
        _ => None,
    });
    assert_eq!(announced.as_deref(), Some("Call [PHONE]"));
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.thread.title, "Call [PHONE]");
    // The model's document title, as stored and as the model was told it.
    assert_eq!(detail.artifacts.len(), 1);
    assert_eq!(detail.artifacts[0].title, "Plan for [EMAIL]");
    assert_eq!(rows_with_traces(&db, "artifacts", "title", thread).await, 0);
    assert_eq!(
        rows_with_traces(&db, "artifact_versions a join artifacts b on a.artifact_id = b.id", "a.title", thread).await,
        0
    );
    let told = sent(&model);
    assert!(told.contains("'Plan for [EMAIL]'"), "{told}");

    // A title a person gives is redacted too, when a conversation is made and when it is renamed.
    let made: Thread = server.post_json("/api/threads", &json!({"title": format!("Ask {EMAIL}")})).await;
    assert_eq!(made.title, "Ask [EMAIL]");
    let renamed: Thread = server
        .client
        .patch(server.url(&format!("/api/threads/{}", made.id)))
        .json(&json!({"title": format!("Ring {PHONE}")}))
        .expect_json()
        .await;
    assert_eq!(renamed.title, "Ring [PHONE]");
}
