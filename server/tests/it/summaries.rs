//! What stands in for the turns of a long conversation that no longer fit the token budget, and what the model
//! is told about attached files, on both backends: the summary written when turns first drop out (by a model on
//! the OpenAI wire format, and by the built-in assistant), refreshed from the newly dropped turns only, carried
//! in the note, counted in the usage ledger; and the passages `document_search` returned, named in the context
//! record.

use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};

use llm::tokens::count_tokens;
use llm::{
    builtin::Builtin,
    openai::{OpenAiConfig, OpenAiProvider},
    summary::SUMMARY_PROMPT,
    Provider,
};
use serde_json::{json, Value};
use uuid::Uuid;
use wire::{Attachment, ContextRecord, HistoryStats, Role};

use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::TestServer;
use crate::fake_upstream::{openai_chunk, openai_usage_and_done, FakeServer, Recorded, Reply};

stories!(
    a_long_conversation_gets_a_summary_that_refreshes_and_is_metered,
    a_summary_that_fails_leaves_the_plain_note,
    a_summary_of_deleted_messages_is_not_carried,
    a_summary_written_on_one_branch_is_not_carried_on_another,
    the_builtin_assistant_summarises_what_dropped_out,
    the_context_record_names_the_passages_the_model_received,
);

/// What the fake model answers and charges, by kind of request.
const ANSWER: &str = "Noted.";
const TITLE: &str = "Warehouse Stock Plan";
const CHAT_USAGE: (u64, u64) = (40, 12);
const TITLE_USAGE: (u64, u64) = (5, 3);
const SUMMARY_USAGE: (u64, u64) = (100, 20);

/// A streamed completion on the OpenAI wire format: `text`, then the usage.
fn completion(text: &str, (prompt, completion): (u64, u64)) -> Reply {
    let mut out = openai_chunk(json!({"role": "assistant", "content": ""}), None);
    out += &openai_chunk(json!({"content": text}), None);
    out += &openai_chunk(json!({}), Some("stop"));
    out += &openai_usage_and_done(prompt, completion);
    Reply::sse_chunked(&out, 64)
}

/// The text of a wire message's content (a string, or a list of text parts).
fn content(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

fn system(request: &Recorded) -> String {
    request.body["messages"].as_array().and_then(|m| m.first()).map(content).unwrap_or_default()
}

fn is_summary(request: &Recorded) -> bool {
    system(request) == SUMMARY_PROMPT
}

/// The first person's message of a request (where the note goes).
fn first_user_text(request: &Recorded) -> String {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    messages.iter().find(|m| m["role"] == "user").map(content).unwrap_or_default()
}

/// A model that answers chat turns with [`ANSWER`], titles with [`TITLE`] and summary requests with
/// "SUMMARY n." (n counting from 1), or fails summary requests while `failing` is set.
struct Upstream {
    server: FakeServer,
    failing: Arc<AtomicBool>,
}

impl Upstream {
    async fn start() -> Self {
        let summaries = Arc::new(AtomicUsize::new(0));
        let failing = Arc::new(AtomicBool::new(false));
        let fail = failing.clone();
        let server = FakeServer::answering(move |request| {
            if is_summary(request) {
                if fail.load(Ordering::SeqCst) {
                    return Reply::status(503, r#"{"error":{"message":"Overloaded.","type":"server_error"}}"#);
                }
                let n = summaries.fetch_add(1, Ordering::SeqCst) + 1;
                completion(&format!("SUMMARY {n}: the team plans stock counts."), SUMMARY_USAGE)
            } else if request.body.get("tools").is_none() {
                completion(TITLE, TITLE_USAGE)
            } else {
                completion(ANSWER, CHAT_USAGE)
            }
        })
        .await;
        Self { server, failing }
    }

    fn provider(&self) -> Arc<dyn Provider> {
        let config = OpenAiConfig::with_base_url(format!("{}/v1", self.server.url), "summary-gpt");
        Arc::new(OpenAiProvider::new(config).expect("provider"))
    }

    fn summary_requests(&self) -> Vec<Recorded> {
        self.server.requests().into_iter().filter(is_summary).collect()
    }

    /// The newest chat turn's request (one that offers tools).
    fn last_turn_request(&self) -> Recorded {
        self.server.requests().into_iter().rev().find(|r| r.body.get("tools").is_some()).expect("a turn")
    }
}

/// A long message of the same size for every `i` below 10.
fn long(i: usize) -> String {
    format!("Point {i}: the warehouse team must count the stock of every aisle each morning before the doors open.")
}

/// A budget that holds three long turns and a short one, never four long ones.
fn budget() -> usize {
    let turn = count_tokens(&long(1)) + count_tokens(ANSWER);
    assert!((1..10).all(|i| count_tokens(&long(i)) + count_tokens(ANSWER) == turn), "turns of one size");
    3 * turn + count_tokens("ok") + count_tokens(ANSWER)
}

async fn small_budget_server(db: &Db, provider: Arc<dyn Provider>) -> TestServer {
    let budget = budget();
    TestServer::with_configured(db.store.clone(), provider, move |config| config.context_tokens = budget).await
}

/// A conversation of `turns` turns on long messages (`long(1)` on), on a server with a small context budget
/// whose model is `upstream`.
async fn long_conversation(db: &Db, turns: usize) -> (Upstream, TestServer, Uuid) {
    let upstream = Upstream::start().await;
    let server = small_budget_server(db, upstream.provider()).await;
    let thread = server.create_thread().await;
    for i in 1..=turns {
        server.chat(thread, &long(i)).await;
    }
    (upstream, server, thread)
}

async fn context_of(server: &TestServer, message: Uuid) -> ContextRecord {
    let response = server.get(&format!("/api/messages/{message}/context")).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

async fn last_answer(server: &TestServer, thread: Uuid) -> Uuid {
    let detail = server.wait_idle(thread).await;
    detail.messages.iter().rev().find(|m| m.role == Role::Assistant).expect("an answer").id
}

async fn stats(server: &TestServer) -> HistoryStats {
    server.get_json("/api/stats").await
}

/// Tokens of the conversation's summaries, as stored beside them (one row per conversation).
async fn summary_tokens(db: &Db, thread: Uuid) -> (i64, i64) {
    let input = db.raw.int("select coalesce(max(input_tokens), 0) from thread_summaries where thread_id = ?", thread);
    let output = db.raw.int("select coalesce(max(output_tokens), 0) from thread_summaries where thread_id = ?", thread);
    (input.await, output.await)
}

async fn a_long_conversation_gets_a_summary_that_refreshes_and_is_metered(db: Db) {
    let (upstream, server, thread) = long_conversation(&db, 3).await;
    assert!(upstream.summary_requests().is_empty(), "nothing dropped yet, nothing summarised");
    let plain = context_of(&server, last_answer(&server, thread).await).await;
    assert!(plain.truncated.is_empty() && plain.note.is_none(), "{plain:?}");

    // The fourth turn drops the first: it is summarised before the turn's own call, which carries the summary.
    server.chat(thread, &long(4)).await;
    let summaries = upstream.summary_requests();
    assert_eq!(summaries.len(), 1);
    let asked = first_user_text(&summaries[0]);
    assert!(asked.contains(&long(1)) && asked.contains("<person>"), "{asked}");
    assert!(!asked.contains(&long(2)) && !asked.contains("<summary>"), "only what dropped: {asked}");
    let seen = first_user_text(&upstream.last_turn_request());
    assert!(
        seen.starts_with(
            "[2 earlier messages of this conversation are not shown. Summary of the conversation so far:\nSUMMARY 1"
        ),
        "{seen}"
    );
    let record = context_of(&server, last_answer(&server, thread).await).await;
    assert_eq!(record.truncated.len(), 2);
    assert!(record.note.as_deref().is_some_and(|n| n.contains("SUMMARY 1")), "{record:?}");

    // The fifth drops the second: it carries the summary there is, while the new one is made beside the answer
    // from the first summary and the second turn only.
    server.chat(thread, &long(5)).await;
    let summaries = upstream.summary_requests();
    assert_eq!(summaries.len(), 2);
    let asked = first_user_text(&summaries[1]);
    assert!(asked.contains("<summary>\nSUMMARY 1") && asked.contains(&long(2)), "{asked}");
    assert!(!asked.contains(&long(1)), "a turn is summarised once: {asked}");
    let seen = first_user_text(&upstream.last_turn_request());
    assert!(seen.contains("SUMMARY 1") && !seen.contains("SUMMARY 2"), "a refresh never delays the answer: {seen}");

    // A short turn drops nothing more: no new summary, the stored one goes on standing in.
    server.chat(thread, "ok").await;
    assert_eq!(upstream.summary_requests().len(), 2, "the summary is only written when it is stale");
    let seen = first_user_text(&upstream.last_turn_request());
    assert!(seen.starts_with("[4 earlier messages") && seen.contains("SUMMARY 2"), "{seen}");

    // Every summary's tokens are in the ledger: the totals are the turns', the title's and the summaries'.
    let (input, output) = summary_tokens(&db, thread).await;
    assert_eq!((input, output), (2 * SUMMARY_USAGE.0 as i64, 2 * SUMMARY_USAGE.1 as i64));
    let stats = stats(&server).await;
    let turns = 6;
    assert_eq!(stats.input_tokens, turns * CHAT_USAGE.0 + TITLE_USAGE.0 + 2 * SUMMARY_USAGE.0);
    assert_eq!(stats.output_tokens, turns * CHAT_USAGE.1 + TITLE_USAGE.1 + 2 * SUMMARY_USAGE.1);
}

async fn a_summary_that_fails_leaves_the_plain_note(db: Db) {
    let (upstream, server, thread) = long_conversation(&db, 3).await;
    upstream.failing.store(true, Ordering::SeqCst);
    let frames = server.chat(thread, &long(4)).await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete", "the turn goes on without a summary");
    assert_eq!(upstream.summary_requests().len(), 1);
    let seen = first_user_text(&upstream.last_turn_request());
    assert!(seen.starts_with("[2 earlier messages of this conversation are not shown.]"), "{seen}");
    assert_eq!(db.raw.count("thread_summaries", "thread_id", thread).await, 0);

    // Once it works again, the summary is written; when it fails later, the earlier one stands in.
    upstream.failing.store(false, Ordering::SeqCst);
    server.chat(thread, &long(5)).await;
    assert!(first_user_text(&upstream.last_turn_request()).contains("SUMMARY 1"));
    upstream.failing.store(true, Ordering::SeqCst);
    server.chat(thread, &long(6)).await;
    let seen = first_user_text(&upstream.last_turn_request());
    assert!(seen.starts_with("[6 earlier messages") && seen.contains("SUMMARY 1"), "{seen}");
    let stats = stats(&server).await;
    assert_eq!(stats.input_tokens, 6 * CHAT_USAGE.0 + TITLE_USAGE.0 + SUMMARY_USAGE.0, "failed summaries cost nothing");
}

async fn a_summary_of_deleted_messages_is_not_carried(db: Db) {
    let (upstream, server, thread) = long_conversation(&db, 5).await;
    assert_eq!(upstream.summary_requests().len(), 2);
    // The person deletes their first message, which the summary told of: everything after it on its branch goes
    // with it, and the summary with what it told of.
    let first = server.detail(thread).await.messages.into_iter().find(|m| m.content == long(1)).unwrap();
    let path = format!("/api/threads/{thread}/messages/{}", first.id);
    assert_eq!(server.client.delete(server.url(&path)).send().await.unwrap().status(), 204);

    server.chat(thread, "ok").await;
    assert_eq!(upstream.summary_requests().len(), 2, "nothing is left to summarise");
    let asked = first_user_text(&upstream.last_turn_request());
    assert!(!asked.contains("SUMMARY") && !asked.contains(&long(1)) && !asked.contains(&long(5)), "{asked}");
    assert_eq!(asked, "ok");
}

async fn a_summary_written_on_one_branch_is_not_carried_on_another(db: Db) {
    let (upstream, server, thread) = long_conversation(&db, 2).await;
    let detail = server.detail(thread).await;
    let (second, branch_point) = (detail.messages[2].id, detail.messages[3].id);
    // Branch B: the second message edited, and one turn more; its messages are numbered between branch A's.
    let edit = json!({ "content": long(7), "edit_of": second });
    assert_eq!(server.send_chat(thread, &edit).await.status(), 200);
    server.wait_idle(thread).await;
    server.chat(thread, &long(8)).await;
    let b_leaf = last_answer(&server, thread).await;

    // Back on A, four turns more: its summary comes to cover A's first three turns, as many messages as B has
    // up to the same number.
    let branch = |to: Uuid| {
        let body = json!({ "message_id": to });
        server.client.post(server.url(&format!("/api/threads/{thread}/branch"))).json(&body).send()
    };
    assert_eq!(branch(branch_point).await.unwrap().status(), 200);
    for i in 3..=6 {
        server.chat(thread, &long(i)).await;
    }
    last_answer(&server, thread).await;
    let written = upstream.summary_requests().len();
    assert!(written >= 2, "{written}");
    let covered = db.raw.int("select max(covered_count) from thread_summaries where thread_id = ?", thread).await;
    assert_eq!(covered, 6, "A's summary covers as many messages as B has up to its newest");

    // On B, the first turn drops out: the summary of A's turns is not carried, B's own is written. (Counting B's
    // messages up to the newest one the summary covers would not tell the two apart.)
    assert_eq!(branch(b_leaf).await.unwrap().status(), 200);
    let through = db.raw.int("select max(covers_through) from thread_summaries where thread_id = ?", thread).await;
    let on_b = server.detail(thread).await.messages;
    assert_eq!(on_b.iter().filter(|m| m.seq <= through).count(), 6, "{through} {on_b:?}");
    assert!(on_b.iter().all(|m| m.seq != through), "the newest message it covers is A's");
    server.chat(thread, &long(9)).await;
    let summaries = upstream.summary_requests();
    assert_eq!(summaries.len(), written + 1, "B's dropped turn is summarised");
    let asked = first_user_text(&summaries[written]);
    assert!(asked.contains(&long(1)) && !asked.contains("<summary>"), "from B's own messages only: {asked}");
    let seen = first_user_text(&upstream.last_turn_request());
    assert!(seen.contains(&format!("SUMMARY {}:", written + 1)), "{seen}");
    assert!(!seen.contains(&long(3)) && !seen.contains(&long(2)), "nothing of branch A: {seen}");
}

async fn the_builtin_assistant_summarises_what_dropped_out(db: Db) {
    let server = small_budget_server(&db, Arc::new(Builtin::new())).await;
    let thread = server.create_thread().await;
    let opening = "We are building a library app called ShelfMate. Members must renew loans online.";
    server.chat(thread, opening).await;
    for i in 2..=6 {
        server.chat(thread, &long(i)).await;
    }
    let answer = last_answer(&server, thread).await;
    let record = context_of(&server, answer).await;
    assert!(record.truncated.len() >= 2, "{record:?}");
    let note = record.note.expect("a note");
    assert!(note.contains("Summary of the conversation so far:"), "{note}");
    assert!(note.contains("ShelfMate") && note.contains("Members must renew loans online."), "{note}");

    // The assistant still knows the requirement that dropped out.
    let detail = server.detail(thread).await;
    let reply = &detail.messages.last().unwrap().content;
    assert!(reply.contains("Members must renew loans online"), "{reply}");

    // Its cost is metered with the answers'.
    let (input, output) = summary_tokens(&db, thread).await;
    assert!(input > 0 && output > 0, "{input} {output}");
    let answers: (u64, u64) =
        detail.messages.iter().fold((0, 0), |(i, o), m| (i + m.input_tokens, o + m.output_tokens));
    let stats = stats(&server).await;
    assert_eq!((stats.input_tokens, stats.output_tokens), (answers.0 + input as u64, answers.1 + output as u64));
}

const NOTES: &str = "# Billing notes

Invoices are sent on the first working day of each month.

The refund window for annual plans is forty-five days after purchase, and refunds go back to the original card.
";

/// Attaches a text file to the conversation.
async fn the_context_record_names_the_passages_the_model_received(db: Db) {
    let server = TestServer::builtin(db.store.clone()).await;
    let thread = server.create_thread().await;
    let response = server.upload(thread, "billing-notes.txt", "text/plain", NOTES.as_bytes().to_vec()).await;
    assert_eq!(response.status(), 201);
    let attachment: Attachment = response.json().await.unwrap();

    server.chat(thread, "We are building a billing portal.").await;
    let before = context_of(&server, last_answer(&server, thread).await).await;
    assert!(before.passages.is_empty(), "no search, no passages: {before:?}");

    server.chat(thread, "What does the attached document say about the refund window?").await;
    let answer = last_answer(&server, thread).await;
    let record = context_of(&server, answer).await;
    assert!(!record.passages.is_empty(), "{record:?}");
    let passage = &record.passages[0];
    assert_eq!((passage.attachment_id, passage.filename.as_str()), (attachment.id, "billing-notes.txt"));
    assert!(passage.chunk >= 0);
    assert!(passage.score > 0.0, "{}", passage.score);
    assert!(passage.excerpt.contains("refund window"), "{}", passage.excerpt);
    assert!(passage.excerpt.chars().count() <= wire::PASSAGE_EXCERPT_CHARS + 1);
    // The answer cites what the record names.
    let reply = server.detail(thread).await.messages.last().unwrap().content.clone();
    assert!(reply.contains("forty-five days"), "{reply}");

    // Another person sees nothing of it.
    let (other, _) = server.second_user("other@example.com").await;
    let response = other.get(server.url(&format!("/api/messages/{answer}/context"))).send().await.unwrap();
    assert_eq!(response.status(), 404);
}
