//! Reliability under failure and load: clients that leave mid-answer, re-attaching at random points, a model
//! provider that fails in every way it can, and many sends at once.
//!
//! Each check repeats `QUIRE_RELIABILITY_ITERATIONS` times (a few by default, so the suite stays quick;
//! `bench/reliability.sh` runs the long counts). Random choices come from `QUIRE_RELIABILITY_SEED`, printed
//! when it is picked at random, so a failing run can be repeated exactly.

use std::{collections::HashSet, sync::Arc, time::Duration};

use llm::{
    openai::{OpenAiConfig, OpenAiProvider},
    retry::{RetryPolicy, RetryingProvider},
    HttpTimeouts,
};
use serde_json::json;
use tempfile::TempDir;
use uuid::Uuid;
use wire::{ChatEvent, Message, MessageStatus, Role, ThreadDetail};

use crate::common::{
    read_frames, read_frames_until, seq_of, slow_builtin_server, sqlite_store, text_of, Frame, TestServer,
};
use crate::fake_upstream::{openai_chunk, openai_usage_and_done, FakeServer, Reply, Step};

/// How many times a check runs: `QUIRE_RELIABILITY_ITERATIONS`, else `default`.
fn iterations(default: usize) -> usize {
    std::env::var("QUIRE_RELIABILITY_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A random source that tells its seed.
fn rng(test: &str) -> fastrand::Rng {
    let seed =
        std::env::var("QUIRE_RELIABILITY_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    eprintln!("{test}: QUIRE_RELIABILITY_SEED={seed}");
    fastrand::Rng::with_seed(seed)
}

/// A message the built-in assistant answers at some length (it restates each requirement).
const REQUIREMENTS: &str = "We are building a booking system for a chain of climbing gyms. \
    Members must be able to book a slot from their phone. Staff need a daily list of bookings. \
    The system should send a reminder two hours before each slot. Admins want a monthly usage report. \
    Payments must be refunded automatically when a gym closes early.";

/// A server whose built-in model writes slowly, and its answer to [`REQUIREMENTS`] in a conversation of its own, as
/// events and as the stored text: what every run is compared with.
async fn slow_server_with_reference() -> (TestServer, TempDir, Vec<Frame>, String) {
    let (server, dir) = slow_builtin_server(Duration::from_millis(2)).await;
    let thread = server.create_thread().await;
    let events = server.chat(thread, REQUIREMENTS).await;
    let answer = server.detail(thread).await.messages[1].content.clone();
    (server, dir, events, answer)
}

/// The event without what differs from one conversation to the next (ids).
fn normalized(event: &ChatEvent) -> ChatEvent {
    match event {
        ChatEvent::ThreadName { title, .. } => ChatEvent::ThreadName { thread_id: Uuid::nil(), title: title.clone() },
        ChatEvent::MessageComplete { usage, stopped, model, .. } => {
            ChatEvent::MessageComplete { message_id: None, usage: *usage, stopped: *stopped, model: model.clone() }
        }
        other => other.clone(),
    }
}

/// The whole stored event sequence of the thread's last turn (once it is over).
async fn replay(server: &TestServer, thread: Uuid) -> Vec<Frame> {
    let response = server.open_stream(thread, None).await;
    assert_eq!(response.status(), 200);
    read_frames(response).await
}

#[tokio::test]
async fn a_client_that_leaves_mid_answer_always_gets_the_whole_answer_saved() {
    let runs = iterations(4);
    let mut rng = rng("client_disconnect");
    let (server, _dir, reference, reference_answer) = slow_server_with_reference().await;
    assert!(reference.len() > 20, "the answer is long enough to leave in the middle: {} events", reference.len());

    for run in 0..runs {
        let thread = server.create_thread().await;
        let response = server.send_text(thread, REQUIREMENTS).await;
        assert_eq!(response.status(), 200);
        let read = rng.usize(0..reference.len() - 1);
        let seen = read_frames_until(response, read).await;

        let detail = server.wait_idle(thread).await;
        assert_eq!(detail.messages.len(), 2, "run {run}: the question and one answer");
        let answer = &detail.messages[1];
        assert_eq!(answer.role, Role::Assistant);
        assert_eq!(answer.status, MessageStatus::Complete, "run {run}, left after {} events", seen.len());
        assert_eq!(answer.content, reference_answer, "run {run}, left after {} events", seen.len());
        let stored = replay(&server, thread).await;
        assert_eq!(stored.last().map(|f| f.event.name()), Some("message_complete"), "run {run}");
        assert_eq!(text_of(&stored), reference_answer, "run {run}: the stored events carry the whole answer");
    }
}

#[tokio::test]
async fn resuming_at_random_points_loses_and_repeats_no_event() {
    let runs = iterations(8);
    let mut rng = rng("resume");
    let (server, _dir, reference, _) = slow_server_with_reference().await;
    let reference: Vec<ChatEvent> = reference.iter().map(|f| normalized(&f.event)).collect();

    for run in 0..runs {
        let thread = server.create_thread().await;
        let first = server.send_text(thread, REQUIREMENTS).await;
        assert_eq!(first.status(), 200);
        let mut response = Some(first);
        let mut seen: Vec<Frame> = Vec::new();
        let mut resumes = 0;
        // Up to three departures, each after a random number of events and a random pause.
        for _ in 0..rng.usize(1..=3) {
            let open = response.take().expect("an open stream");
            seen.extend(read_frames_until(open, rng.usize(0..reference.len())).await);
            if seen.last().is_some_and(|f| f.event.is_terminal()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(rng.u64(0..30))).await;
            let resumed = server.open_stream(thread, seen.last().and_then(|f| f.id.clone())).await;
            assert_eq!(resumed.status(), 200, "run {run}: re-attaching");
            response = Some(resumed);
            resumes += 1;
        }
        if let Some(open) = response {
            seen.extend(read_frames(open).await);
        }

        let seqs: Vec<i64> = seen.iter().map(seq_of).collect();
        let expected: Vec<i64> = (1..=reference.len() as i64).collect();
        assert_eq!(seqs, expected, "run {run} ({resumes} resumes): every event once, in order");
        let events: Vec<ChatEvent> = seen.iter().map(|f| normalized(&f.event)).collect();
        assert_eq!(events, reference, "run {run} ({resumes} resumes): the same events as without interruption");
        server.wait_idle(thread).await;
        let stored = replay(&server, thread).await;
        let stored_ids: Vec<_> = stored.iter().map(|f| f.id.clone()).collect();
        let seen_ids: Vec<_> = seen.iter().map(|f| f.id.clone()).collect();
        assert_eq!(seen_ids, stored_ids, "run {run}: what the client pieced together is the stored turn");
    }
}

/// One way for the model provider to behave during a turn.
#[derive(Debug, Clone, Copy)]
enum Fault {
    None,
    RateLimitedThenOk,
    RateLimited,
    ServerErrorThenOk,
    ServerError,
    Overloaded,
    MalformedFirstLine,
    MalformedMidway,
    StallBeforeFirstToken,
    StallMidway,
    CutMidway,
}

const FAULTS: [Fault; 11] = [
    Fault::None,
    Fault::RateLimitedThenOk,
    Fault::RateLimited,
    Fault::ServerErrorThenOk,
    Fault::ServerError,
    Fault::Overloaded,
    Fault::MalformedFirstLine,
    Fault::MalformedMidway,
    Fault::StallBeforeFirstToken,
    Fault::StallMidway,
    Fault::CutMidway,
];

/// Attempts the provider makes before giving up.
const ATTEMPTS: u32 = 3;

/// How a turn must end.
enum Outcome {
    Complete(String),
    /// An `error` event with this code; the text that came before it is kept as `interrupted`.
    Failed {
        code: &'static str,
        partial: String,
    },
}

fn openai_text(pieces: &[&str]) -> String {
    pieces.iter().map(|p| openai_chunk(json!({ "content": p }), None)).collect()
}

fn openai_end() -> String {
    openai_chunk(json!({}), Some("stop")) + &openai_usage_and_done(30, 4)
}

fn bytes(text: String) -> Step {
    Step::Bytes(text.into_bytes())
}

/// The provider's replies for one turn (retries included) and how the turn must end.
fn script(fault: Fault, turn: usize) -> (Vec<Reply>, Outcome) {
    let first = format!("Answer {turn}: ");
    let pieces = [first.as_str(), "the plan ", "is ", "ready."];
    let whole: String = pieces.concat();
    let ok = || Reply::sse(vec![bytes(openai_text(&pieces)), bytes(openai_end())]);
    let head = || bytes(openai_text(&pieces[..2]));
    let partial = pieces[..2].concat();
    let times = |reply: Reply| vec![reply; ATTEMPTS as usize];
    let rate_limited = || {
        Reply::status(429, r#"{"error":{"message":"Rate limit reached","type":"requests"}}"#).header("retry-after", "0")
    };
    let server_error =
        || Reply::status(500, r#"{"error":{"message":"The server had an error","type":"server_error"}}"#);
    let failed = |code, partial: &str| Outcome::Failed { code, partial: partial.to_string() };
    match fault {
        Fault::None => (vec![ok()], Outcome::Complete(whole)),
        Fault::RateLimitedThenOk => (vec![rate_limited(), ok()], Outcome::Complete(whole)),
        Fault::RateLimited => (times(rate_limited()), failed("rate_limited", "")),
        Fault::ServerErrorThenOk => (vec![server_error(), server_error(), ok()], Outcome::Complete(whole)),
        Fault::ServerError => (times(server_error()), failed("upstream_error", "")),
        Fault::Overloaded => (
            times(Reply::status(
                503,
                r#"{"error":{"message":"The engine is currently overloaded","type":"server_error"}}"#,
            )),
            failed("overloaded", ""),
        ),
        Fault::MalformedFirstLine => (
            times(Reply::sse(vec![bytes("data: {\"choices\": [{\"delta\"\n\n".into())])),
            failed("upstream_protocol", ""),
        ),
        Fault::MalformedMidway => (
            vec![Reply::sse(vec![head(), bytes("data: {not json at all\n\n".into()), bytes(openai_end())])],
            failed("upstream_protocol", &partial),
        ),
        Fault::StallBeforeFirstToken => (times(Reply::sse(vec![Step::Stall])), failed("upstream_timeout", "")),
        Fault::StallMidway => (vec![Reply::sse(vec![head(), Step::Stall])], failed("upstream_timeout", &partial)),
        Fault::CutMidway => (vec![Reply::sse(vec![head(), Step::Cut])], failed("upstream_unreachable", &partial)),
    }
}

async fn faulty_provider_server(fake: &FakeServer) -> (TestServer, tempfile::TempDir) {
    let mut config = OpenAiConfig::with_base_url(format!("{}/v1", fake.url), "gpt-test");
    config.endpoint.timeouts = HttpTimeouts {
        connect: Duration::from_secs(5),
        first_byte: Duration::from_secs(5),
        idle: Duration::from_millis(400),
    };
    let policy = RetryPolicy {
        max_attempts: ATTEMPTS,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_millis(10),
    };
    let provider = RetryingProvider::new(OpenAiProvider::new(config).expect("provider"), policy);
    let (store, dir) = sqlite_store().await;
    (TestServer::with(store, Arc::new(provider)).await, dir)
}

/// A conversation with a title of its own, so the model is not asked to name it.
#[tokio::test]
async fn every_provider_fault_ends_the_turn_cleanly_and_loses_nothing_saved() {
    let turns = iterations(FAULTS.len());
    let mut rng = rng("provider_faults");
    let fake = FakeServer::start(Vec::new()).await;
    let (server, _dir) = faulty_provider_server(&fake).await;
    // Every message ever saved, by thread, as it must stay.
    let mut saved: Vec<(Uuid, Vec<Message>)> = Vec::new();

    for turn in 0..turns {
        if turn % 25 == 0 {
            saved.push((server.create_titled_thread(&format!("Faults {turn}")).await, Vec::new()));
        }
        // Each kind once per round, in a random order within the round.
        let fault = if turn % FAULTS.len() == 0 || turns < FAULTS.len() {
            FAULTS[turn % FAULTS.len()]
        } else {
            FAULTS[rng.usize(..FAULTS.len())]
        };
        let (replies, outcome) = script(fault, turn);
        fake.clear();
        fake.push(replies);
        let (thread, before) = saved.last().cloned().expect("a thread");
        let question = format!("Question {turn} ({fault:?})");
        let response = server.send_text(thread, &question).await;
        assert_eq!(response.status(), 200, "turn {turn} ({fault:?})");
        let frames = read_frames(response).await;
        let last = frames.last().map(|f| f.event.clone());

        let detail = server.wait_idle(thread).await;
        assert_eq!(&detail.messages[..before.len()], &before[..], "turn {turn} ({fault:?}): earlier messages intact");
        let new = &detail.messages[before.len()..];
        assert_eq!(new[0].role, Role::User, "turn {turn} ({fault:?})");
        assert_eq!(new[0].content, question, "turn {turn} ({fault:?}): the question is saved");
        match outcome {
            Outcome::Complete(text) => {
                assert!(
                    matches!(last, Some(ChatEvent::MessageComplete { message_id: Some(_), .. })),
                    "turn {turn} ({fault:?}): {last:?}"
                );
                assert_eq!(new.len(), 2, "turn {turn} ({fault:?})");
                assert_eq!((new[1].status, new[1].content.as_str()), (MessageStatus::Complete, text.as_str()));
            }
            Outcome::Failed { code, partial } => {
                match &last {
                    Some(ChatEvent::Error { code: got, message }) => {
                        assert_eq!(got, code, "turn {turn} ({fault:?}): {message}");
                        assert!(!message.trim().is_empty(), "turn {turn} ({fault:?}): the error says why");
                    }
                    other => panic!("turn {turn} ({fault:?}): ended with {other:?}, not an error"),
                }
                if partial.is_empty() {
                    assert_eq!(new.len(), 1, "turn {turn} ({fault:?}): no empty answer saved");
                } else {
                    assert_eq!(new.len(), 2, "turn {turn} ({fault:?})");
                    assert_eq!(
                        (new[1].status, new[1].content.as_str()),
                        (MessageStatus::Interrupted, partial.as_str())
                    );
                }
            }
        }
        assert_eq!(
            text_of(&frames),
            new.get(1).map(|m| m.content.clone()).unwrap_or_default(),
            "turn {turn}: streamed = saved"
        );
        assert_eq!(detail.thread.message_count, detail.messages.len() as i64, "turn {turn}");
        saved.last_mut().expect("a thread").1 = detail.messages;
    }

    // At the end, every conversation still holds exactly what was saved in it.
    for (thread, messages) in &saved {
        assert_eq!(&server.detail(*thread).await.messages, messages);
    }
}

/// What must hold of a conversation after parallel sends: each accepted message once, answered once, in
/// order, and the counts agree.
fn check_consistent(detail: &ThreadDetail, accepted: &HashSet<String>) {
    let users: Vec<&str> =
        detail.messages.iter().filter(|m| m.role == Role::User).map(|m| m.content.as_str()).collect();
    let unique: HashSet<String> = users.iter().map(|s| s.to_string()).collect();
    assert_eq!(users.len(), unique.len(), "no message saved twice: {users:?}");
    assert_eq!(&unique, accepted, "exactly the accepted messages are saved");
    let answers = detail.messages.iter().filter(|m| m.role == Role::Assistant).count();
    assert_eq!(answers, accepted.len(), "one answer per accepted message");
    for pair in detail.messages.chunks(2) {
        assert_eq!(pair.iter().map(|m| m.role).collect::<Vec<_>>(), [Role::User, Role::Assistant], "question, answer");
        assert_eq!(pair[1].status, MessageStatus::Complete);
    }
    let seqs: Vec<i64> = detail.messages.iter().map(|m| m.seq).collect();
    let unique_seqs: HashSet<i64> = seqs.iter().copied().collect();
    assert_eq!(unique_seqs.len(), seqs.len(), "sequence numbers are unique: {seqs:?}");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "messages come in sequence order: {seqs:?}");
    assert_eq!(detail.thread.message_count, detail.messages.len() as i64, "message_count is the real count");
}

/// Sends `per_thread` messages to each thread, all at once; returns the contents that were accepted (200),
/// by thread. Every other answer must be a 409 (the conversation is busy).
async fn send_all_at_once(server: &TestServer, threads: &[Uuid], per_thread: usize) -> Vec<HashSet<String>> {
    let mut sends = Vec::new();
    for (t, thread) in threads.iter().enumerate() {
        for i in 0..per_thread {
            let (client, url) = (server.client.clone(), server.url(&format!("/api/threads/{thread}/chat")));
            let content = format!("Message {i} to conversation {t}: the app must work offline.");
            sends.push(tokio::spawn(async move {
                let response = client.post(url).json(&json!({ "content": content })).send().await.expect("send");
                let status = response.status().as_u16();
                let ended =
                    if status == 200 { read_frames(response).await.last().map(|f| f.event.clone()) } else { None };
                (t, content, status, ended)
            }));
        }
    }
    let mut accepted = vec![HashSet::new(); threads.len()];
    for send in sends {
        let (t, content, status, ended) = send.await.expect("send task");
        match status {
            200 => {
                assert!(matches!(ended, Some(ChatEvent::MessageComplete { .. })), "{content}: ended with {ended:?}");
                accepted[t].insert(content);
            }
            409 => {}
            other => panic!("{content}: answered {other}"),
        }
    }
    accepted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_parallel_sends_to_one_conversation_save_each_accepted_message_once() {
    let server = TestServer::start().await;
    for round in 0..iterations(1) {
        let thread = server.create_thread().await;
        let accepted = send_all_at_once(&server, &[thread], 50).await;
        assert!(!accepted[0].is_empty(), "round {round}: at least one send gets through");
        check_consistent(&server.wait_idle(thread).await, &accepted[0]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_parallel_sends_to_fifty_conversations_keep_counts_consistent() {
    let server = TestServer::start().await;
    for round in 0..iterations(1) {
        let mut threads = Vec::new();
        for _ in 0..50 {
            threads.push(server.create_thread().await);
        }
        let accepted = send_all_at_once(&server, &threads, 10).await;
        let mut total = 0;
        for (thread, accepted) in threads.iter().zip(&accepted) {
            assert!(!accepted.is_empty(), "round {round}: at least one send per conversation gets through");
            check_consistent(&server.wait_idle(*thread).await, accepted);
            total += accepted.len();
        }
        eprintln!("round {round}: {total} of 500 sends accepted, the others found their conversation busy (409)");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_retries_with_one_idempotency_key_save_once() {
    let server = TestServer::start().await;
    for round in 0..iterations(1) {
        let thread = server.create_thread().await;
        let key = format!("retry-{round}");
        let mut sends = Vec::new();
        for _ in 0..20 {
            let request = server
                .chat_request(thread)
                .header("Idempotency-Key", &key)
                .json(&json!({ "content": "Members must be able to cancel a booking." }));
            sends.push(tokio::spawn(async move {
                let response = request.send().await.expect("send");
                let status = response.status().as_u16();
                (status, if status == 200 { read_frames(response).await } else { Vec::new() })
            }));
        }
        let mut turns = HashSet::new();
        for send in sends {
            let (status, frames) = send.await.expect("send task");
            assert!(status == 200 || status == 409, "round {round}: answered {status}");
            if let Some(id) = frames.first().and_then(|f| f.id.as_deref()) {
                turns.insert(id.split_once(':').map(|(turn, _)| turn.to_string()).expect("event id"));
            }
        }
        assert_eq!(turns.len(), 1, "round {round}: every 200 streams the one turn");
        let detail = server.wait_idle(thread).await;
        assert_eq!(detail.messages.len(), 2, "round {round}: the message and its answer, once");
        assert_eq!(detail.thread.message_count, 2);
    }
}
