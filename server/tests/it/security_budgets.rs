//! Money is never spent unseen, on both backends: every model call is metered however it ends (stopped after its
//! first words, a provider dropping the connection, a title call timing out), counted by Quire when the provider
//! reported nothing and marked so in the ledger and the trace; and a turn cannot spend far past the budget (its
//! calls' `max_tokens` fit what it reserved, turns started together share the remainder, an answer over the
//! budget ends with a plain note and no half-written document).

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use llm::openai::{OpenAiConfig, OpenAiProvider};
use llm::tokens::count_tokens;
use llm::{StopReason, StreamEvent, Usage};
use uuid::Uuid;
use wire::{ChatEvent, HistoryStats, MessageStatus, TraceStep};

use crate::chat_turns::chat_until_draft;
use crate::common::backends::{run_story, stories, Backend, Db};
use crate::common::{get_json, read_frames, tool_call, ScriptedModel, Step, TestServer};
use crate::fake_upstream::{openai_chunk, FakeServer, Reply, Step as Wire};

stories!(
    a_turn_stopped_after_its_first_words_is_metered,
    a_turn_of_the_builtin_assistant_stopped_early_is_metered,
    a_provider_that_drops_the_connection_is_metered,
    a_title_call_that_times_out_is_metered,
    turns_started_at_once_never_exceed_the_budget_by_more_than_one_turns_estimate,
    an_answer_over_the_budget_ends_with_a_note_and_no_half_written_document,
    the_tool_loop_makes_no_call_the_budget_cannot_pay_for,
    a_persons_own_budget_caps_the_answer_as_a_configured_one_does,
);

/// A budget far from spent: `used_today` shows every token.
const AMPLE: u64 = 1_000_000;

async fn used_today(server: &TestServer) -> u64 {
    let stats: HistoryStats = get_json(&server.client, &server.url("/api/stats")).await;
    stats.budget.expect("a budget").used_today
}

/// The tokens of `user`'s ledger today that Quire counted itself.
async fn counted_on_ledger(db: &Db, user: Uuid) -> i64 {
    db.raw
        .int("select cast(coalesce(sum(counted_tokens), 0) as bigint) from usage_ledger where user_id = ?", user)
        .await
}

/// The model calls of the traces of `thread`, in order.
async fn model_calls(db: &Db, user: Uuid, thread: Uuid) -> Vec<wire::ModelCall> {
    let traces = db.store.thread_traces(user, thread).await.unwrap();
    traces
        .into_iter()
        .flat_map(|t| t.steps)
        .filter_map(|step| match step {
            TraceStep::ModelCall(call) => Some(call),
            TraceStep::ToolCall(_) => None,
        })
        .collect()
}

/// What Quire counts for the `n`-th request `model` received, answered with `received`.
fn counted(model: &ScriptedModel, n: usize, received: &str) -> u64 {
    let prompt = model.requests.lock().unwrap()[n].prompt_tokens();
    prompt + count_tokens(received) as u64
}

async fn stop(server: &TestServer, thread: Uuid) {
    let stop = server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    assert_eq!(stop.status(), 202);
}

async fn a_turn_stopped_after_its_first_words_is_metered(db: Db) {
    // A draft is saved at most every 250 ms: the pause lets the second words be saved as the turn goes on.
    let pause = Step::Sleep(Duration::from_millis(300));
    let model = ScriptedModel::new(vec![vec![Step::delta("Quokkas "), pause, Step::delta("smile"), Step::Hang]]);
    let server = TestServer::with_configured(db.store.clone(), model.clone(), |c| c.user_daily_tokens = AMPLE).await;
    let thread = server.create_thread().await;
    let reader = chat_until_draft(&server, thread, "Tell me about marsupials", "Quokkas smile").await;
    stop(&server, thread).await;
    let frames = reader.await.unwrap();
    let Some(ChatEvent::MessageComplete { usage, stopped: true, .. }) = frames.last().map(|f| &f.event) else {
        panic!("stopped: {:?}", frames.last());
    };
    // The provider never reported: Quire counted the request it sent and the words it received.
    let spent = counted(&model, 0, "Quokkas smile");
    assert!(spent > 10, "{spent}");
    assert_eq!(usage.input_tokens + usage.output_tokens, spent);
    assert_eq!(used_today(&server).await, spent);
    assert_eq!(counted_on_ledger(&db, server.user.id).await, spent as i64, "marked as counted on the ledger");
    let calls = model_calls(&db, server.user.id, thread).await;
    assert_eq!(calls.len(), 1);
    assert!(calls[0].counted, "marked as counted in the trace");
    assert_eq!(calls[0].input_tokens + calls[0].output_tokens, spent);
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages[1].status, MessageStatus::Stopped);

    // A call the provider reported keeps its numbers, unmarked.
    let thread = server.create_thread().await;
    server.chat(thread, "And wombats?").await;
    assert_eq!(used_today(&server).await, spent + 10 + 1);
    assert_eq!(counted_on_ledger(&db, server.user.id).await, spent as i64);
    let calls = model_calls(&db, server.user.id, thread).await;
    assert_eq!((calls[0].input_tokens, calls[0].output_tokens, calls[0].counted), (10, 1, false));
}

/// The issue's own reproduction: the built-in assistant reports its tokens only at the end of its answer.
async fn a_turn_of_the_builtin_assistant_stopped_early_is_metered(db: Db) {
    let builtin = llm::builtin::Builtin::new().with_delay(Duration::from_millis(150));
    let server =
        TestServer::with_configured(db.store.clone(), Arc::new(builtin), |c| c.user_daily_tokens = AMPLE).await;
    let thread = server.create_thread().await;
    let response = server.send_text(thread, "Write a long plan for a garden with twelve beds.").await;
    assert_eq!(response.status(), 200);
    let reader = tokio::spawn(read_frames(response));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server.detail(thread).await.messages.get(1).is_none_or(|m| m.content.is_empty()) {
        assert!(std::time::Instant::now() < deadline, "no words came");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop(&server, thread).await;
    reader.await.unwrap();
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages[1].status, MessageStatus::Stopped);
    let used = used_today(&server).await;
    assert!(used > count_tokens("Write a long plan for a garden with twelve beds.") as u64, "{used}");
    assert_eq!(counted_on_ledger(&db, server.user.id).await, used as i64);
}

async fn a_provider_that_drops_the_connection_is_metered(db: Db) {
    let head = openai_chunk(serde_json::json!({"role": "assistant", "content": "Wombats dig "}), None)
        + &openai_chunk(serde_json::json!({"content": "burrows"}), None);
    let upstream = FakeServer::start(vec![Reply::sse_then(&head, Wire::Cut)]).await;
    let provider =
        OpenAiProvider::new(OpenAiConfig::with_base_url(format!("{}/v1", upstream.url), "fake-gpt")).unwrap();
    let server =
        TestServer::with_configured(db.store.clone(), Arc::new(provider), |c| c.user_daily_tokens = AMPLE).await;
    let thread = server.create_thread().await;
    let question = "Where do wombats live?";
    let frames = server.chat(thread, question).await;
    assert!(matches!(frames.last().map(|f| &f.event), Some(ChatEvent::Error { .. })), "{:?}", frames.last());
    let calls = model_calls(&db, server.user.id, thread).await;
    let answer = &calls[0];
    assert!(answer.error.is_some() && answer.counted, "{answer:?}");
    assert_eq!(answer.output_tokens, count_tokens("Wombats dig burrows") as u64);
    assert!(answer.input_tokens > count_tokens(question) as u64, "the request as sent: {}", answer.input_tokens);
    // The title call that followed was refused by the provider (no reply left): it cost nothing.
    assert_eq!(used_today(&server).await, answer.input_tokens + answer.output_tokens);
    assert_eq!(counted_on_ledger(&db, server.user.id).await as u64, answer.input_tokens + answer.output_tokens);
}

async fn a_title_call_that_times_out_is_metered(db: Db) {
    let answer = ScriptedModel::text(&["Marsupials."]);
    let title = vec![Step::delta("Marsupial"), Step::Hang];
    let model = ScriptedModel::naming(vec![answer, title]);
    let server = TestServer::with_configured(db.store.clone(), model.clone(), |c| c.user_daily_tokens = AMPLE).await;
    let thread = server.create_thread().await;
    // The title is asked for after the answer and given up on after ten seconds.
    server.chat(thread, "Tell me about marsupials").await;
    let title_spent = counted(&model, 1, "Marsupial");
    assert_eq!(used_today(&server).await, 10 + 1 + title_spent);
    assert_eq!(counted_on_ledger(&db, server.user.id).await, title_spent as i64);
    let calls = model_calls(&db, server.user.id, thread).await;
    let title = calls.iter().find(|c| c.purpose == wire::CallPurpose::Title).expect("the title call");
    assert!(title.counted && title.error.is_some(), "{title:?}");
    assert_eq!(title.input_tokens + title.output_tokens, title_spent);
    // The conversation is named after its first words instead.
    assert_ne!(server.detail(thread).await.thread.title, "New conversation");
}

async fn turns_started_at_once_never_exceed_the_budget_by_more_than_one_turns_estimate(db: Db) {
    let question = "Write a short plan for a vegetable garden.";
    let builtin = llm::builtin::Builtin::new().with_delay(Duration::from_millis(20));
    // What one such turn costs, measured alone by someone without a budget of their own.
    let measure = TestServer::with_configured(db.store.clone(), Arc::new(builtin.clone()), |_| {}).await;
    let alone = measure.create_thread().await;
    measure.chat(alone, question).await;
    let limits = store::TurnLimits { user_daily_tokens: AMPLE, ..Default::default() };
    let one_turn = db.store.spending(measure.user.id, 30_000, &limits).await.unwrap().user_used as u64;
    assert!(one_turn > 100, "{one_turn}");

    // A budget of one turn and a half: three turns at once would spend twice as much.
    let budget = one_turn * 3 / 2;
    let server =
        TestServer::with_configured(db.store.clone(), Arc::new(builtin), |c| c.user_daily_tokens = budget).await;
    let mut threads = Vec::new();
    for _ in 0..3 {
        threads.push(server.create_thread().await);
    }
    let responses = join_all(threads.iter().map(|&thread| server.send_text(thread, question))).await;
    let mut answered = 0;
    for response in responses {
        match response.status().as_u16() {
            200 => {
                answered += 1;
                read_frames(response).await;
            }
            429 => {}
            status => panic!("status {status}"),
        }
    }
    assert!(answered >= 1, "the first start is admitted");
    let used = used_today(&server).await;
    assert!(used <= budget + one_turn, "{used} spent of {budget} by turns of {one_turn} each");
    // Whatever is left, nothing more starts once it is spent.
    if used >= budget {
        let thread = server.create_thread().await;
        assert_eq!(server.send_text(thread, question).await.status(), 429);
    }
}

/// The budget a turn cannot pay a full answer of, whatever its request: its calls are capped.
const SMALL_BUDGET: u64 = 300;

async fn an_answer_over_the_budget_ends_with_a_note_and_no_half_written_document(db: Db) {
    // The model starts a document and is cut off by the length limit it was given.
    let cut_off = vec![
        Step::delta("I'll write the plan."),
        Step::Emit(tool_call(
            "call_1",
            "save_artifact",
            serde_json::json!({"artifact_type": "requirements_doc", "title": "Plan", "content": "# Pl"}),
        )),
        Step::Emit(StreamEvent::Usage(Usage { input_tokens: 20, output_tokens: 200 })),
        Step::Emit(StreamEvent::Stop(StopReason::MaxTokens)),
    ];
    let model = ScriptedModel::new(vec![cut_off]);
    let server =
        TestServer::with_configured(db.store.clone(), model.clone(), |c| c.user_daily_tokens = SMALL_BUDGET).await;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "Write a plan as a document.").await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    // Asked for no more than the budget leaves once the request is paid for (and a small answer at least).
    let request = model.requests.lock().unwrap()[0].clone();
    let left = SMALL_BUDGET.saturating_sub(request.prompt_tokens());
    assert!(u64::from(request.max_tokens) <= left.max(64), "max_tokens {}", request.max_tokens);
    let detail = server.wait_idle(thread).await;
    let answer = &detail.messages[1];
    assert_eq!(answer.status, MessageStatus::Complete);
    assert!(answer.content.starts_with("I'll write the plan.\n\n"), "{}", answer.content);
    assert!(answer.content.contains("today's budget"), "a plain note ends it: {}", answer.content);
    assert_eq!(db.raw.count("artifacts", "thread_id", thread).await, 0, "no half-written document");
    assert_eq!(model.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

async fn the_tool_loop_makes_no_call_the_budget_cannot_pay_for(db: Db) {
    // A whole document, then nothing left for the call that would answer with its result.
    let saved = vec![
        Step::Emit(tool_call(
            "call_1",
            "save_artifact",
            serde_json::json!({"artifact_type": "requirements_doc", "title": "Plan", "content": "# Plan\n\nBeds of beans and kale."}),
        )),
        Step::Emit(StreamEvent::Usage(Usage { input_tokens: 20, output_tokens: 250 })),
        Step::Emit(StreamEvent::Stop(StopReason::ToolUse)),
    ];
    let model = ScriptedModel::new(vec![saved]);
    let server =
        TestServer::with_configured(db.store.clone(), model.clone(), |c| c.user_daily_tokens = SMALL_BUDGET).await;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "Write a plan as a document.").await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    assert_eq!(model.calls.load(std::sync::atomic::Ordering::SeqCst), 1, "no call past the budget");
    let detail = server.wait_idle(thread).await;
    let answer = &detail.messages[1];
    assert_eq!(answer.status, MessageStatus::Complete);
    assert!(answer.content.contains("today's budget"), "{}", answer.content);
    assert_eq!(db.raw.count("artifacts", "thread_id", thread).await, 1, "the whole document is kept");
    assert_eq!(used_today(&server).await, 270);
}

async fn a_persons_own_budget_caps_the_answer_as_a_configured_one_does(db: Db) {
    // Nothing configured, so the model is asked while the message commits; the person's own budget, set by an
    // administrator, leaves room for two requests and a short answer, not for a whole one.
    let answer = || {
        vec![
            Step::delta("Beds of beans."),
            Step::Emit(StreamEvent::Usage(Usage { input_tokens: 20, output_tokens: 5 })),
            Step::Emit(StreamEvent::Stop(StopReason::EndTurn)),
        ]
    };
    let model = ScriptedModel::new(vec![answer(), answer(), answer()]);
    let server = TestServer::with(db.store.clone(), model.clone()).await;
    const OWN_BUDGET: u64 = 3_500;
    db.store.set_daily_token_budget(server.user.id, Some(OWN_BUDGET)).await.unwrap();
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "What should we plant?").await;
    assert_eq!(frames.last().unwrap().event.name(), "message_complete");
    let requests = model.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "the call opened early is opened again, fitted to the budget");
    let prompt = requests[1].prompt_tokens();
    assert!(2 * prompt + 64 <= OWN_BUDGET, "the test's budget leaves room for a fitted call: prompt {prompt}");
    // The early call's request is paid for (its meter counts it), and the answer fits what is left after both.
    assert!(u64::from(requests[1].max_tokens) <= OWN_BUDGET - 2 * prompt, "max_tokens {}", requests[1].max_tokens);
    assert_eq!(server.wait_idle(thread).await.messages[1].content, "Beds of beans.");
    assert!(used_today(&server).await <= OWN_BUDGET);
    // The next message waits for its start: one call, fitted from the first.
    server.chat(thread, "And in winter?").await;
    let requests = model.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    assert!(u64::from(requests[2].max_tokens) < u64::from(quire::chat::turn::ANSWER_MAX_TOKENS));
}
