//! Chat turns over real HTTP: tools, closed tabs, stop, resume, one turn at a time, model failures.

use std::time::Duration;

use crate::common::backends::{run_story, stories, Backend, Db, Raw};
use crate::common::{
    bearer_client, fresh_postgres_url, message_update, names, new_user, read_frames, read_some_frames, seq_of,
    slow_builtin_server, sqlite_store, sqlite_url, ExpectJson, Frame, ScriptedModel, Step, TestServer,
};
use futures::StreamExt;
use llm::{LlmError, StopReason, StreamEvent};
use store::{AnswerDraft, DynStore, EventRun, StoredEvent, TurnEnd, TurnProgress};
use wire::{ChatEvent, ErrorBody, MessageStatus, Role};

#[tokio::test]
async fn a_tool_call_saves_the_document_and_events_come_in_order() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    server.chat(thread, "We are building a library app. Members must be able to reserve books.").await;
    let frames = server.chat(thread, "Generate user stories from this conversation").await;
    let order = names(&frames);
    let executing = order.iter().position(|n| *n == "tool_executing").expect("tool_executing");
    let created = order.iter().position(|n| *n == "artifact_created").expect("artifact_created");
    assert!(executing < created, "{order:?}");
    assert_eq!(order.last(), Some(&"message_complete"));
    assert!(order[created + 1..].contains(&"text_delta"), "the model confirms after the tool result: {order:?}");

    let ChatEvent::ArtifactCreated { artifact } = &frames[created].event else { unreachable!() };
    assert_eq!(artifact.artifact_type.as_str(), "user_stories");
    assert!(artifact.content.contains("As a"), "{}", artifact.content);
    assert!(artifact.content.contains("reserve books"), "{}", artifact.content);

    let detail = server.detail(thread).await;
    assert_eq!(detail.messages.len(), 4);
    assert_eq!(detail.artifacts.len(), 1);
    let saved = &detail.artifacts[0];
    assert_eq!(saved.request_message_id, Some(detail.messages[2].id), "linked to the request");
    assert_eq!(saved.assistant_message_id, Some(detail.messages[3].id), "linked to the answer");
    let ChatEvent::MessageComplete { message_id, .. } = &frames.last().unwrap().event else { unreachable!() };
    assert_eq!(*message_id, Some(detail.messages[3].id));
}

#[tokio::test]
async fn closing_the_tab_still_saves_the_whole_answer() {
    let (server, _dir) = slow_builtin_server(Duration::from_millis(15)).await;
    let thread = server.create_thread().await;
    let response = server.send_text(thread, "The system must send reminders. Users should pick the time.").await;
    let mut body = response.bytes_stream();
    let _first = body.next().await.expect("some bytes");
    drop(body);

    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages.len(), 2);
    let answer = &detail.messages[1];
    assert_eq!(answer.role, Role::Assistant);
    assert_eq!(answer.status, MessageStatus::Complete);
    assert!(answer.content.contains("Users should pick the time"), "{}", answer.content);
}

#[tokio::test]
async fn stop_keeps_the_partial_answer_as_stopped() {
    let (store, _dir) = sqlite_store().await;
    let script = vec![Step::delta("Partial "), Step::delta("answer"), Step::Hang];
    let server = TestServer::with(store, ScriptedModel::new(vec![script])).await;
    let thread = server.create_thread().await;
    let response = server.send_text(thread, "Tell me a long story").await;
    let reader = tokio::spawn(read_frames(response));
    // Wait for the partial text to be on its way, then stop.
    for _ in 0..200 {
        if server.detail(thread).await.running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stop = server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    assert_eq!(stop.status(), 202);
    let frames = reader.await.unwrap();
    assert_eq!(names(&frames).last(), Some(&"message_complete"));
    let ChatEvent::MessageComplete { message_id: Some(id), stopped, .. } = &frames.last().unwrap().event else {
        panic!("the stopped answer is saved");
    };
    assert!(*stopped, "the last event says the turn was stopped");

    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages.len(), 2);
    assert_eq!(detail.messages[1].id, *id);
    assert_eq!(detail.messages[1].status, MessageStatus::Stopped);
    assert_eq!(detail.messages[1].content, "Partial answer");
}

/// The body's pieces as they came (chunks of the HTTP answer) and the events in them.
async fn pieces_and_frames(response: reqwest::Response) -> (usize, Vec<Frame>) {
    let mut parser = wire::sse::SseParser::new();
    let (mut pieces, mut frames) = (0, Vec::new());
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        pieces += 1;
        for f in parser.feed(&chunk.expect("chunk")).expect("an event of a sane size") {
            let event = ChatEvent::from_parts(&f.event, &f.data).expect("an event Quire sends");
            frames.push(Frame { id: f.id, event });
        }
    }
    (pieces, frames)
}

#[tokio::test]
async fn a_client_that_is_behind_gets_what_waits_in_larger_pieces_each_event_with_its_id() {
    let (server, _dir) = slow_builtin_server(Duration::from_millis(10)).await;
    let thread = server.create_thread().await;
    let response =
        server.send_text(thread, "Customers need invoices by email. Admins must export reports monthly.").await;
    let seen = read_some_frames(response, 6).await;

    // Joining the running turn late: the events so far wait, and come in one piece; the rest as they happen.
    let (late_pieces, late) = pieces_and_frames(server.open_stream(thread, None).await).await;
    assert!(late.len() >= seen.len());
    assert!(late_pieces <= late.len() - seen.len() + 1, "{late_pieces} pieces for {} events", late.len());
    assert_eq!(late.iter().map(seq_of).collect::<Vec<_>>(), (1..=late.len() as i64).collect::<Vec<_>>());

    // Replayed from the store once the turn is over: pieces of many events, the same events with the same ids.
    server.wait_idle(thread).await;
    let (pieces, replayed) = pieces_and_frames(server.open_stream(thread, None).await).await;
    assert!(pieces * 4 <= replayed.len(), "{pieces} pieces for {} events", replayed.len());
    let ids = |frames: &[Frame]| frames.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&replayed), ids(&late));
    let events = |frames: &[Frame]| frames.iter().map(|f| f.event.clone()).collect::<Vec<_>>();
    assert_eq!(events(&replayed), events(&late));
    assert_eq!(replayed.last().map(|f| f.event.name()), Some("message_complete"));

    // Resuming after any event in a piece goes on right after it.
    let middle = replayed[replayed.len() / 2].id.clone();
    let rest = read_frames(server.open_stream(thread, middle).await).await;
    assert_eq!(ids(&rest), ids(&replayed[replayed.len() / 2 + 1..]));
}

#[tokio::test]
async fn resuming_with_last_event_id_yields_exactly_the_missing_events() {
    let (server, _dir) = slow_builtin_server(Duration::from_millis(10)).await;
    let thread = server.create_thread().await;
    let response =
        server.send_text(thread, "Customers need invoices by email. Admins must export reports monthly.").await;
    let seen = read_some_frames(response, 4).await;
    let last_id = seen.last().unwrap().id.clone().unwrap();

    let resumed = server.open_stream(thread, Some(last_id)).await;
    assert_eq!(resumed.status(), 200);
    let rest = read_frames(resumed).await;
    assert_eq!(seq_of(&rest[0]), seq_of(seen.last().unwrap()) + 1, "continues right after the last seen event");

    // The whole turn, replayed from the store once it is over, equals what the two reads got together.
    server.wait_idle(thread).await;
    let full = read_frames(server.open_stream(thread, None).await).await;
    let mut joined: Vec<i64> = seen.iter().map(seq_of).collect();
    joined.extend(rest.iter().map(seq_of));
    assert_eq!(joined, full.iter().map(seq_of).collect::<Vec<_>>(), "no event lost or duplicated");
    let joined_events: Vec<ChatEvent> = seen.iter().chain(rest.iter()).map(|f| f.event.clone()).collect();
    let full_events: Vec<ChatEvent> = full.iter().map(|f| f.event.clone()).collect();
    assert_eq!(joined_events, full_events);
    assert_eq!(full.last().unwrap().event.name(), "message_complete");
}

#[tokio::test]
async fn a_second_concurrent_message_gets_409() {
    let (store, _dir) = sqlite_store().await;
    let script = vec![Step::delta("Thinking"), Step::Hang];
    let server = TestServer::with(store, ScriptedModel::new(vec![script])).await;
    let thread = server.create_thread().await;
    let first = server.send_text(thread, "first").await;
    assert_eq!(first.status(), 200);
    let second = server.send_text(thread, "second").await;
    assert_eq!(second.status(), 409);
    assert_eq!(second.json::<ErrorBody>().await.unwrap().error.code, "conflict");
    server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    let detail = server.wait_idle(thread).await;
    let users: Vec<&str> =
        detail.messages.iter().filter(|m| m.role == Role::User).map(|m| m.content.as_str()).collect();
    assert_eq!(users, vec!["first"], "the refused message was not saved");
}

#[tokio::test]
async fn a_model_failure_mid_answer_keeps_the_partial_answer_as_interrupted() {
    let (store, _dir) = sqlite_store().await;
    let script = vec![Step::delta("The first "), Step::delta("half"), Step::Fail(LlmError::Upstream { status: 500 })];
    let server = TestServer::with(store, ScriptedModel::new(vec![script])).await;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "Explain the plan").await;
    let ChatEvent::Error { code, message } = &frames.last().unwrap().event else {
        panic!("expected an error event, got {:?}", names(&frames));
    };
    assert_eq!(code, "upstream_error");
    assert!(message.starts_with("The model provider answered with an error."), "{message}");
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages.len(), 2);
    assert_eq!(detail.messages[0].content, "Explain the plan");
    assert_eq!(detail.messages[1].status, MessageStatus::Interrupted);
    assert_eq!(detail.messages[1].content, "The first half");

    // The person can simply send again.
    let again = server.chat(thread, "Explain the plan").await;
    assert_eq!(names(&again).last(), Some(&"message_complete"));
}

#[tokio::test]
async fn an_idempotent_retry_replays_the_first_result_and_saves_once() {
    let server = TestServer::start().await;
    let thread = server.create_thread().await;
    let post = |key: &str, content: &str| {
        server.chat_request(thread).header("Idempotency-Key", key).json(&serde_json::json!({ "content": content }))
    };
    let first = read_frames(post("retry-42", "The app must work offline.").send().await.unwrap()).await;
    assert_eq!(first.last().unwrap().event.name(), "message_complete");
    let retry = post("retry-42", "The app must work offline.").send().await.unwrap();
    assert_eq!(retry.status(), 200);
    let replay = read_frames(retry).await;
    let ids = |frames: &[Frame]| frames.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&replay), ids(&first), "the same events, from the same turn");
    assert_eq!(
        replay.iter().map(|f| f.event.clone()).collect::<Vec<_>>(),
        first.iter().map(|f| f.event.clone()).collect::<Vec<_>>()
    );
    let detail = server.detail(thread).await;
    assert_eq!(detail.messages.len(), 2, "saved once");

    let other = post("retry-42", "Something else entirely").send().await.unwrap();
    assert_eq!(other.status(), 422);
    assert_eq!(other.json::<ErrorBody>().await.unwrap().error.code, "idempotency_key_reused");
    assert_eq!(server.detail(thread).await.messages.len(), 2, "nothing changed");

    let bad = post("", "hi").send().await.unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn a_real_model_names_the_conversation_and_a_failure_falls_back_to_the_first_words() {
    let (store, _dir) = sqlite_store().await;
    let title = ScriptedModel::text(&["\"Warehouse ", "Audit ", "Planning ", "For ", "Q3 ", "Season\""]);
    // The title is asked for once the answer is written (so it never delays it), before the turn ends.
    let model = ScriptedModel::naming(vec![
        ScriptedModel::text(&["Sure."]),
        title,
        ScriptedModel::text(&["Fine."]),
        vec![Step::Fail(LlmError::Upstream { status: 500 })],
    ]);
    let server = TestServer::with(store, model.clone()).await;
    let thread = server.create_thread().await;
    let frames = server.chat(thread, "Help me plan the stock count in our warehouse").await;
    assert_eq!(names(&frames), vec!["text_delta", "thread_name", "message_complete"]);
    let ChatEvent::ThreadName { title, .. } = &frames[1].event else { unreachable!() };
    assert_eq!(title, "Warehouse Audit Planning For Q3");
    assert_eq!(server.detail(thread).await.thread.title, "Warehouse Audit Planning For Q3");
    assert!(model.requests.lock().unwrap()[1].tools.is_empty(), "the title request offers no tools");

    let other = server.create_thread().await;
    let frames = server.chat(other, "Draft the onboarding checklist for new drivers please").await;
    let [.., ChatEvent::ThreadName { title, .. }, _] = &frames.iter().map(|f| f.event.clone()).collect::<Vec<_>>()[..]
    else {
        panic!("{:?}", names(&frames))
    };
    assert_eq!(title, "Draft the onboarding checklist for");
    assert_eq!(names(&frames).last(), Some(&"message_complete"));
}

fn draft(
    turn: uuid::Uuid,
    user: uuid::Uuid,
    thread: uuid::Uuid,
    answer: uuid::Uuid,
    seq: i64,
    text: &str,
) -> TurnProgress {
    TurnProgress {
        turn,
        user,
        events: vec![EventRun::single(seq, "text_delta", format!("{{\"text\":\"{text}\"}}"))],
        answer: Some(AnswerDraft {
            id: answer,
            thread_id: thread,
            update: message_update(text, MessageStatus::Interrupted),
            writing: true,
            question: None,
        }),
    }
}

fn last_event(seq: i64) -> EventRun {
    EventRun::single(seq, "message_complete", "{}".into())
}

/// Progress handed over is written (the answer so far at once; the events on SQLite only with the turn's end),
/// and a turn's end takes what is not written yet into its own commit: nothing of the turn lands after it.
async fn handed_over_progress_is_written_and_the_end_takes_the_rest(store: DynStore) {
    let user = new_user(&store).await;
    let thread = store.create_thread(user, "Progress", &[]).await.unwrap().id;
    let turn = uuid::Uuid::now_v7();
    store.begin_turn(user, thread, turn, 60_000).await.unwrap();
    let answer = uuid::Uuid::now_v7();
    store.submit_progress(draft(turn, user, thread, answer, 1, "He"));
    store.submit_progress(draft(turn, user, thread, answer, 2, "Hello"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while store.get_message(user, answer).await.map(|m| m.content).ok().as_deref() != Some("Hello") {
        assert!(tokio::time::Instant::now() < deadline, "the answer so far was never written");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Handed over right before the end: either written before it or taken into it, never after it.
    store.submit_progress(draft(turn, user, thread, answer, 3, "Hello there"));
    store.finish_turn(turn, TurnEnd { events: vec![last_event(4)], ..TurnEnd::default() }).await.unwrap();
    let seqs = |events: Vec<StoredEvent>| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(seqs(store.turn_events_after(turn, 0).await.unwrap()), vec![1, 2, 3, 4]);
    let content = store.get_message(user, answer).await.unwrap().content;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(store.get_message(user, answer).await.unwrap().content, content, "nothing lands after the end");
    assert_eq!(seqs(store.turn_events_after(turn, 0).await.unwrap()), vec![1, 2, 3, 4]);
}

#[tokio::test]
async fn on_sqlite_handed_over_progress_is_written_and_the_end_takes_the_rest() {
    let (store, _dir) = sqlite_store().await;
    handed_over_progress_is_written_and_the_end_takes_the_rest(store).await;
}

#[tokio::test]
async fn on_postgres_handed_over_progress_is_written_and_the_end_takes_the_rest() {
    let Some(url) = fresh_postgres_url("on_postgres_handed_over_progress_is_written_and_the_end_takes_the_rest").await
    else {
        return;
    };
    handed_over_progress_is_written_and_the_end_takes_the_rest(store::connect(&url).await.unwrap()).await;
}

/// While SQLite's writer is held up writing a batch of running turns' answers (another connection holds the
/// database's write lock), forty turns end. Each end waits only for that batch: it takes its turn's progress
/// still waiting to be written into its own commit, and none of that progress is written after it.
#[tokio::test]
async fn an_ending_turn_waits_only_for_the_batch_being_written_and_takes_its_progress() {
    use sqlx::Connection;
    let (store, dir) = sqlite_store().await;
    let url = sqlite_url(dir.path());
    let user = new_user(&store).await;
    let mut running = Vec::new();
    for i in 0..40 {
        let thread = store.create_thread(user, &format!("Running {i}"), &[]).await.unwrap().id;
        let turn = uuid::Uuid::now_v7();
        store.begin_turn(user, thread, turn, 60_000).await.unwrap();
        running.push((turn, thread, uuid::Uuid::now_v7()));
    }
    let mut other = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query("begin immediate").execute(&mut other).await.unwrap();
    // Handed over together: the writer takes the first 32 answers in a batch, whose commit waits for the lock.
    for &(turn, thread, answer) in &running {
        store.submit_progress(draft(turn, user, thread, answer, 1, "draft"));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut ending: futures::stream::FuturesUnordered<_> = running
        .iter()
        .map(|&(turn, _, _)| {
            let store = store.clone();
            tokio::spawn(async move {
                store.finish_turn(turn, TurnEnd { events: vec![last_event(2)], ..TurnEnd::default() }).await
            })
        })
        .collect();
    let held = tokio::time::timeout(Duration::from_millis(200), ending.next()).await;
    assert!(held.is_err(), "the ends wait for the batch being written");
    sqlx::query("rollback").execute(&mut other).await.unwrap();
    while let Some(ended) = tokio::time::timeout(Duration::from_secs(5), ending.next()).await.expect("ended soon") {
        ended.unwrap().unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    for (i, &(turn, _, answer)) in running.iter().enumerate() {
        let events = store.turn_events_after(turn, 0).await.unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2], "with its end");
        let saved = store.get_message(user, answer).await;
        if i < 32 {
            assert_eq!(saved.unwrap().content, "draft", "written by the batch the ends waited for");
        } else {
            assert!(saved.is_err(), "taken by its end, which kept no answer, and never written after it");
        }
    }
}

#[tokio::test]
async fn on_sqlite_a_restart_frees_a_conversation_whose_turn_was_cut_off() {
    let (store, dir) = sqlite_store().await;
    let user = new_user(&store).await;
    let thread = store.create_thread(user, "Cut off", &[]).await.unwrap().id;
    store.begin_turn(user, thread, uuid::Uuid::now_v7(), 60_000).await.unwrap();
    assert!(store.begin_turn(user, thread, uuid::Uuid::now_v7(), 60_000).await.is_err(), "held while running");
    drop(store);

    // The process that ran it is gone (killed): opening the database again frees the conversation at once.
    let store = store::connect(&sqlite_url(dir.path())).await.unwrap();
    assert!(!store.latest_turn(user, thread).await.unwrap().unwrap().running);
    store.begin_turn(user, thread, uuid::Uuid::now_v7(), 60_000).await.unwrap();
}

/// The message ids a search finds.
async fn found(server: &TestServer, q: &str) -> Vec<Option<uuid::Uuid>> {
    server.search(q).await.results.iter().map(|r| r.message_id).collect()
}

/// Sends a message and waits until the answer's draft reads `draft` (saved while the answer is being written);
/// the stream's frames come from the returned task.
pub(crate) async fn chat_until_draft(
    server: &TestServer,
    thread: uuid::Uuid,
    content: &str,
    draft: &str,
) -> tokio::task::JoinHandle<Vec<Frame>> {
    chat_until_draft_as(server, &server.client, thread, content, draft).await
}

/// [`chat_until_draft`] as whoever `client` signs in as.
pub(crate) async fn chat_until_draft_as(
    server: &TestServer,
    client: &reqwest::Client,
    thread: uuid::Uuid,
    content: &str,
    draft: &str,
) -> tokio::task::JoinHandle<Vec<Frame>> {
    let url = server.url(&format!("/api/threads/{thread}"));
    let response = client.post(format!("{url}/chat")).json(&serde_json::json!({ "content": content })).send();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    let reader = tokio::spawn(read_frames(response));
    // The first turn of a test process waits for the tokenizer to be built (seconds in a debug build).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let detail: wire::ThreadDetail = client.get(&url).expect_json().await;
        if detail.messages.get(1).is_some_and(|m| m.content == draft) {
            return reader;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the draft was never saved while the answer was being written");
}

/// An answer is found by search once it is finished (stopped or complete), never while it is being written,
/// though its draft is saved and shown meanwhile.
async fn answers_are_found_once_finished(store: DynStore) {
    let pause = Step::Sleep(Duration::from_millis(300));
    let stopped = vec![Step::delta("Quokkas "), pause.clone(), Step::delta("smile"), Step::Hang];
    let done =
        vec![Step::delta("Wombats "), pause, Step::delta("dig"), Step::Emit(StreamEvent::Stop(StopReason::EndTurn))];
    let server = TestServer::with(store, ScriptedModel::new(vec![stopped, done])).await;
    let thread = server.create_thread().await;
    let reader = chat_until_draft(&server, thread, "Tell me about marsupials", "Quokkas smile").await;
    assert_eq!(found(&server, "quokkas").await, vec![]);
    assert_eq!(found(&server, "smile").await, vec![]);
    assert_eq!(found(&server, "marsupials").await.len(), 2, "the question and the conversation's title");
    assert!(server.detail(thread).await.running, "still being written while searched");

    let stop = server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    assert_eq!(stop.status(), 202);
    assert_eq!(names(&reader.await.unwrap()).last(), Some(&"message_complete"));
    let detail = server.wait_idle(thread).await;
    assert_eq!(detail.messages[1].status, MessageStatus::Stopped);
    assert_eq!(found(&server, "quokkas smile").await, vec![Some(detail.messages[1].id)]);

    let frames = server.chat(thread, "And the other one?").await;
    assert_eq!(names(&frames).last(), Some(&"message_complete"));
    let detail = server.wait_idle(thread).await;
    assert_eq!(
        (detail.messages[3].content.as_str(), detail.messages[3].status),
        ("Wombats dig", MessageStatus::Complete)
    );
    assert_eq!(found(&server, "wombats").await, vec![Some(detail.messages[3].id)]);
}

#[tokio::test]
async fn on_sqlite_answers_are_found_once_finished() {
    let (store, _dir) = sqlite_store().await;
    answers_are_found_once_finished(store).await;
}

#[tokio::test]
async fn on_postgres_answers_are_found_once_finished() {
    let Some(url) = fresh_postgres_url("on_postgres_answers_are_found_once_finished").await else { return };
    answers_are_found_once_finished(store::connect(&url).await.expect("connect")).await;
}

/// A running turn's events are stored as they come where another instance may follow it (PostgreSQL), and only
/// when it ends where one process owns the store (SQLite, which follows it in memory); either way the answer so
/// far is saved as it comes, and once the turn is over every event is stored and replays after any of them.
async fn a_running_turns_events_are_stored_for_other_instances(store: DynStore, shared: bool) {
    let script =
        vec![Step::delta("Koalas "), Step::Sleep(Duration::from_millis(300)), Step::delta("sleep"), Step::Hang];
    let server = TestServer::with(store.clone(), ScriptedModel::new(vec![script])).await;
    let thread = server.create_thread().await;
    let reader = chat_until_draft(&server, thread, "Tell me about koalas", "Koalas sleep").await;
    let user = server.user.id;
    let turn = store.latest_turn(user, thread).await.unwrap().expect("a turn").id;
    let stored = store.turn_events_after(turn, 0).await.unwrap();
    if shared {
        assert!(stored.iter().any(|e| e.name == "text_delta"), "stored with the draft: {stored:?}");
    } else {
        assert_eq!(stored, vec![], "kept in memory while the turn runs");
    }

    let stop = server.client.post(server.url(&format!("/api/threads/{thread}/stop"))).send().await.unwrap();
    assert_eq!(stop.status(), 202);
    let live = reader.await.unwrap();
    server.wait_idle(thread).await;
    let stored = store.turn_events_after(turn, 0).await.unwrap();
    assert_eq!(stored.iter().map(|e| e.seq).collect::<Vec<_>>(), live.iter().map(seq_of).collect::<Vec<_>>());
    assert_eq!(stored.last().map(|e| e.name.as_str()), Some("message_complete"));
    let after_first = live[0].id.clone().expect("an id");
    let replayed = server.open_stream(thread, Some(after_first)).await;
    let replayed: Vec<ChatEvent> = read_frames(replayed).await.into_iter().map(|f| f.event).collect();
    assert_eq!(replayed, live[1..].iter().map(|f| f.event.clone()).collect::<Vec<_>>());
}

#[tokio::test]
async fn on_sqlite_a_running_turns_events_are_stored_when_it_ends() {
    let (store, _dir) = sqlite_store().await;
    a_running_turns_events_are_stored_for_other_instances(store, false).await;
}

#[tokio::test]
async fn on_postgres_a_running_turns_events_are_stored_as_they_come() {
    let Some(url) = fresh_postgres_url("on_postgres_a_running_turns_events_are_stored_as_they_come").await else {
        return;
    };
    a_running_turns_events_are_stored_for_other_instances(store::connect(&url).await.expect("connect"), true).await;
}

/// A request that goes away while its turn starts (the client gives up after a few milliseconds) never leaves
/// the conversation taken: either no turn started, or it runs to its end, and the next message is answered.
#[tokio::test]
async fn a_request_abandoned_while_its_turn_starts_leaves_the_conversation_usable() {
    let (server, _dir) = slow_builtin_server(Duration::from_millis(1)).await;
    let thread = server.create_thread().await;
    let impatient = bearer_client(&server.token);
    for attempt in 0..20u64 {
        let sent = impatient
            .post(server.url(&format!("/api/threads/{thread}/chat")))
            .timeout(Duration::from_micros(500 + attempt * 250))
            .json(&serde_json::json!({"content": format!("Question {attempt}")}))
            .send()
            .await;
        if let Ok(response) = sent {
            drop(response);
        }
        server.wait_idle(thread).await;
    }
    // A request the client gave up on may still reach the point where its turn starts after the conversation
    // looked idle: give such late starts time to happen and end before the last question.
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.wait_idle(thread).await;
    let mut frames = Vec::new();
    for _ in 0..20 {
        let response = server.send_text(thread, "Are you still there?").await;
        if response.status() == 409 {
            // A late start of an abandoned request holds the conversation for its (short) answer.
            server.wait_idle(thread).await;
            continue;
        }
        assert_eq!(response.status(), 200);
        frames = crate::common::read_frames(response).await;
        break;
    }
    assert_eq!(names(&frames).last(), Some(&"message_complete"));
    let detail = server.wait_idle(thread).await;
    // Every question that was saved has its answer right after it.
    for pair in detail.messages.chunks(2) {
        assert_eq!(pair.len(), 2, "{:?}", detail.messages);
        assert_eq!((pair[0].role, pair[1].role), (Role::User, Role::Assistant));
    }
}

stories!(deleting_a_conversation_stops_its_answer, a_turn_taken_over_stops_and_the_newer_one_answers);

/// Half an answer, saved as a draft (its second part comes after the first was handed over), and then nothing.
pub(crate) fn half_an_answer() -> Vec<Step> {
    vec![
        Step::delta("Half "),
        Step::Sleep(quire::chat::turn::FLUSH_EVERY + Duration::from_millis(50)),
        Step::delta("an answer"),
        Step::Hang,
    ]
}

/// Sends `content` to `thread` once the thread's running turn looks dead (its heartbeat made old through `raw`)
/// and reads the answer. The turn's own heartbeat (every two seconds) may come between the two: the start is then
/// refused, and tried again.
pub(crate) async fn take_over(raw: &Raw, server: &TestServer, thread: uuid::Uuid, content: &str) -> Vec<Frame> {
    let quiet = match raw {
        Raw::Sqlite(_) => "update turns set heartbeat_at = 0 where thread_id = ?",
        Raw::Postgres(_) => "update turns set heartbeat_at = now() - interval '1 hour' where thread_id = ?",
    };
    for _ in 0..5 {
        raw.exec(quiet, thread).await;
        let response = server.send_text(thread, content).await;
        if response.status() == 200 {
            return read_frames(response).await;
        }
        assert_eq!(response.status(), 409);
    }
    panic!("the quiet turn was never taken over");
}

/// A turn's last event, which must say it was stopped.
pub(crate) fn assert_stopped(frames: &[Frame]) {
    let last = frames.last().map(|f| &f.event);
    assert!(matches!(last, Some(ChatEvent::MessageComplete { stopped: true, .. })), "{:?}", names(frames));
}

/// A conversation deleted while its answer is being written: the turn stops at its next heartbeat instead of
/// spending on an answer nobody can read any more.
async fn deleting_a_conversation_stops_its_answer(db: Db) {
    let script = half_an_answer();
    let server = TestServer::with(db.store.clone(), ScriptedModel::new(vec![script])).await;
    let thread = server.create_thread().await;
    let reader = chat_until_draft(&server, thread, "Tell me everything", "Half an answer").await;
    let deleted = server.client.delete(server.url(&format!("/api/threads/{thread}"))).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    let frames = tokio::time::timeout(Duration::from_secs(10), reader).await.expect("the turn stops").unwrap();
    assert_stopped(&frames);
}

/// A turn whose heartbeat went quiet while it still ran (its instance could not reach the database for a while)
/// is taken over by the conversation's next message: the old turn stops with its answer so far, the new one
/// answers, and re-attaching replays the new one.
async fn a_turn_taken_over_stops_and_the_newer_one_answers(db: Db) {
    let old = half_an_answer();
    let model = ScriptedModel::new(vec![old, ScriptedModel::text(&["The ", "newer ", "answer."])]);
    let server = TestServer::with(db.store.clone(), model).await;
    let thread = server.create_thread().await;
    let reader = chat_until_draft(&server, thread, "First question", "Half an answer").await;
    let newer = take_over(&db.raw, &server, thread, "Second question").await;
    assert!(matches!(newer.last().map(|f| &f.event), Some(ChatEvent::MessageComplete { stopped: false, .. })));
    let frames = tokio::time::timeout(Duration::from_secs(10), reader).await.expect("the old turn stops").unwrap();
    assert_stopped(&frames);

    let detail = server.wait_idle(thread).await;
    let shown: Vec<_> = detail.messages.iter().map(|m| (m.content.as_str(), m.status)).collect();
    let (done, stopped) = (MessageStatus::Complete, MessageStatus::Stopped);
    assert_eq!(
        shown,
        [("First question", done), ("Half an answer", stopped), ("Second question", done), ("The newer answer.", done)]
    );
    let replayed = read_frames(server.open_stream(thread, None).await).await;
    let events = |frames: &[Frame]| frames.iter().map(|f| f.event.clone()).collect::<Vec<_>>();
    assert_eq!(events(&replayed), events(&newer), "the newer turn's events are kept");
}
