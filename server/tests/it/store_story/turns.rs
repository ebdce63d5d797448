//! Turns: taking a conversation, progress, ends, traces, usage.

use super::*;

stories!(
    traces,
    usage_is_recorded,
    turns,
    a_turn_ends_in_one_commit,
    progress_of_several_turns_is_saved_together,
    concurrent_turns_take_the_thread_once,
    a_turn_start_waits_for_a_change_holding_the_conversation,
    a_closing_turn_takes_the_conversation_before_its_own_row,
    a_turns_text_is_stored_in_runs_and_replayed_event_by_event,
    a_turn_taken_over_ends_without_touching_the_newer_turn,
    a_turn_taken_over_before_its_first_save_answers_its_own_question,
);

/// The tokens a turn of `model` in the person's `thread` spent, as its end reports them.
fn spent(user: Uuid, thread: Uuid, model: &str, input_tokens: u64, output_tokens: u64) -> SpentTokens {
    SpentTokens {
        user,
        payer: user,
        thread,
        model: model.into(),
        usage: Usage { input_tokens, output_tokens },
        counted_tokens: 0,
    }
}

async fn traces(db: Db) {
    let (s, u, t) = someones_thread(&db, "Traced").await;
    let other = s.create_thread(u, "Elsewhere", &[]).await.unwrap();
    let reply = answer(s, u, t.id, "done").await;
    let quiet = answer(s, u, t.id, "no tools").await;
    let failed_call = TraceStep::ModelCall(wire::ModelCall {
        purpose: wire::CallPurpose::Answer,
        provider: "openai".into(),
        model: "gpt-test".into(),
        input_tokens: 0,
        output_tokens: 0,
        counted: false,
        first_token_ms: None,
        duration_ms: 0,
        stop_reason: None,
        error: Some(wire::StepError { code: "rate_limited".into(), message: "Too many requests.".into() }),
        started_at: store::now(),
    });
    let steps = vec![
        tool_step("save_artifact", json!({ "title": "Stories", "nested": { "n": [1, 2.5, null, "x"] } }), 12),
        failed_call,
        tool_step("document_search", json!({ "query": "q" }), 30),
    ];
    let answered = trace_of(t.id, Some(reply.id), steps.clone());
    s.save_trace(u, &answered).await.unwrap();
    assert_eq!(s.trace(u, reply.id).await.unwrap(), answered);
    assert_eq!(s.turn_trace(u, answered.turn_id).await.unwrap(), answered);
    assert_not_found(s.trace(u, quiet.id).await);

    // A turn that kept no answer has a trace all the same, found by the turn.
    let silent = trace_of(t.id, None, steps[..1].to_vec());
    s.save_trace(u, &silent).await.unwrap();
    assert_eq!(s.turn_trace(u, silent.turn_id).await.unwrap(), silent);
    assert_eq!(s.thread_traces(u, t.id).await.unwrap(), vec![answered.clone(), silent.clone()], "oldest first");
    assert_eq!(s.thread_traces(u, other.id).await.unwrap(), vec![]);

    // Saving again under the same turn replaces the whole trace.
    let shorter = Trace { steps: steps[2..].to_vec(), ..answered.clone() };
    s.save_trace(u, &shorter).await.unwrap();
    assert_eq!(s.trace(u, reply.id).await.unwrap(), shorter);
    // An answer of another thread, a missing thread: refused.
    assert_not_found(s.save_trace(u, &trace_of(other.id, Some(reply.id), steps.clone())).await);
    assert_not_found(s.save_trace(u, &trace_of(Uuid::now_v7(), None, steps.clone())).await);
    assert_not_found(s.trace(u, Uuid::now_v7()).await);
    assert_not_found(s.turn_trace(u, Uuid::now_v7()).await);

    // Deleting the answer deletes its trace.
    s.delete_message(u, t.id, reply.id, None).await.unwrap();
    assert_not_found(s.turn_trace(u, answered.turn_id).await);
}

async fn usage_is_recorded(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let other = new_user(s).await;
    let t = s.create_thread(u, "Costly", &[]).await.unwrap();
    s.record_usage(u, t.id, "model-a", Usage { input_tokens: 10, output_tokens: 5 }).await.unwrap();
    s.record_usage(u, t.id, "model-a", Usage { input_tokens: 10, output_tokens: 5 }).await.unwrap();
    s.record_usage(u, t.id, "model-b", Usage { input_tokens: 1, output_tokens: 2 }).await.unwrap();
    // Someone else's tokens never land on this thread.
    s.record_usage(other, t.id, "model-a", Usage { input_tokens: 100, output_tokens: 100 }).await.unwrap();

    let raw = &db.raw;
    assert_eq!(raw.int("select input_tokens from threads where id = ?", t.id).await, 21);
    assert_eq!(raw.int("select output_tokens from threads where id = ?", t.id).await, 12);
    let ledger = |column: &str, model: &str| {
        format!("select cast(coalesce(sum({column}), 0) as bigint) from usage_ledger where user_id = ? and model = '{model}'")
    };
    assert_eq!(raw.int(&ledger("input_tokens", "model-a"), u).await, 20);
    assert_eq!(raw.int(&ledger("output_tokens", "model-a"), u).await, 10);
    assert_eq!(raw.int(&ledger("input_tokens", "model-b"), u).await, 1);
    assert_eq!(raw.count("usage_ledger", "user_id", u).await, 2, "one row per day and model");
}

async fn turns(db: Db) {
    let (s, u, t) = someones_thread(&db, "Turns").await;
    assert_eq!(s.latest_turn(u, t.id).await.unwrap(), None);
    assert!(!s.request_stop(u, t.id).await.unwrap(), "nothing is running");

    let first = Uuid::now_v7();
    s.begin_turn(u, t.id, first, 60_000).await.unwrap();
    let latest = s.latest_turn(u, t.id).await.unwrap().unwrap();
    assert_eq!((latest.id, latest.thread_id, latest.running, latest.stop_requested), (first, t.id, true, false));
    assert_conflict(s.begin_turn(u, t.id, Uuid::now_v7(), 60_000).await);
    assert_conflict(s.begin_turn(u, t.id, first, 60_000).await);

    // A refused turn saves nothing of its message.
    let refused = start_with(s, u, t.id, Uuid::now_v7(), new_message(t.id, Role::User, "again?")).await;
    assert_conflict(refused);
    assert!(s.list_messages(u, t.id).await.unwrap().is_empty());

    // Another thread is not held by it; its turn starts with the person's message, saved in the same step.
    let other = s.create_thread(u, "Parallel", &[]).await.unwrap();
    let request = new_message(other.id, Role::User, "Start here");
    let saved = start_with(s, u, other.id, Uuid::now_v7(), request).await.unwrap().unwrap();
    assert_eq!((saved.seq, saved.role, saved.content.as_str()), (1, Role::User, "Start here"));
    assert_eq!(s.list_messages(u, other.id).await.unwrap(), vec![saved]);
    assert_eq!(s.get_thread(u, other.id).await.unwrap().message_count, 1);

    assert_eq!(s.heartbeat_turns(&[first]).await.unwrap(), Vec::<Uuid>::new());
    let beat = s.latest_turn(u, t.id).await.unwrap().unwrap().heartbeat_at;
    assert!(beat >= latest.heartbeat_at);
    assert!(s.request_stop(u, t.id).await.unwrap());
    let unknown = Uuid::now_v7();
    assert_eq!(
        s.heartbeat_turns(&[unknown, first]).await.unwrap(),
        vec![unknown, first],
        "the heartbeat sees the stop request, and a turn with no row (deleted with its conversation) stops too"
    );
    assert!(s.latest_turn(u, t.id).await.unwrap().unwrap().stop_requested);
    assert_eq!(s.heartbeat_turns(&[unknown]).await.unwrap(), vec![unknown]);
    assert_eq!(s.heartbeat_turns(&[]).await.unwrap(), Vec::<Uuid>::new());

    let event = |seq: i64, name: &str, data: &str| StoredEvent { seq, name: name.into(), data: data.into() };
    s.append_turn_events(
        first,
        &[event(1, "start", "{}").into(), event(2, "delta", "a").into(), event(3, "delta", "b").into()],
    )
    .await
    .unwrap();
    // A repeated number keeps the first event; the batch goes on.
    s.append_turn_events(first, &[event(3, "delta", "replaced?").into(), event(4, "done", "{}").into()]).await.unwrap();
    s.append_turn_events(first, &[]).await.unwrap();
    let all = s.turn_events_after(first, 0).await.unwrap();
    assert_eq!(
        all,
        vec![event(1, "start", "{}"), event(2, "delta", "a"), event(3, "delta", "b"), event(4, "done", "{}")]
    );
    assert_eq!(s.turn_events_after(first, 2).await.unwrap(), all[2..].to_vec());
    // Stored as given, whatever the text holds.
    let odd = event(9, "text_delta", "{\"text\":\"a \\\"quoted\\\" line\\nnext — ✓ \\u0000 ' ; --\"}");
    s.append_turn_events(first, &[odd.clone().into()]).await.unwrap();
    assert_eq!(s.turn_events_after(first, 4).await.unwrap(), vec![odd.clone()]);
    let all = [all, vec![odd]].concat();
    assert!(s.turn_events_after(first, 9).await.unwrap().is_empty());
    assert!(s.turn_events_after(Uuid::now_v7(), 0).await.unwrap().is_empty());

    s.finish_turn(first, TurnEnd::default()).await.unwrap();
    assert!(!s.latest_turn(u, t.id).await.unwrap().unwrap().running);
    assert!(!s.request_stop(u, t.id).await.unwrap());

    // The next turn takes over; once it ends, only its events are kept.
    let second = Uuid::now_v7();
    s.begin_turn(u, t.id, second, 60_000).await.unwrap();
    assert_eq!(s.turn_events_after(first, 0).await.unwrap(), all, "dropped when the next turn ends");
    let latest = s.latest_turn(u, t.id).await.unwrap().unwrap();
    assert_eq!((latest.id, latest.running, latest.stop_requested), (second, true, false));

    // A turn whose heartbeat went quiet is taken over; a live one is not.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let third = Uuid::now_v7();
    assert_conflict(s.begin_turn(u, t.id, third, 60_000).await);
    s.begin_turn(u, t.id, third, 10).await.unwrap();
    assert_eq!(s.latest_turn(u, t.id).await.unwrap().unwrap().id, third);
    assert_eq!(
        s.heartbeat_turns(&[second, third]).await.unwrap(),
        vec![second],
        "a turn taken over is told to stop at its next heartbeat, should it still be running somewhere"
    );
    assert_conflict(s.begin_turn(u, t.id, Uuid::now_v7(), 60_000).await);
    assert_not_found(s.begin_turn(u, Uuid::now_v7(), Uuid::now_v7(), 0).await);
    s.append_turn_events(second, &[event(1, "start", "{}").into()]).await.unwrap();
    s.finish_turn(third, TurnEnd { events: vec![event(1, "done", "{}").into()], ..TurnEnd::default() }).await.unwrap();
    assert!(s.turn_events_after(first, 0).await.unwrap().is_empty());
    assert!(s.turn_events_after(second, 0).await.unwrap().is_empty());
    assert_eq!(s.turn_events_after(third, 0).await.unwrap(), vec![event(1, "done", "{}")]);
}

async fn a_turn_ends_in_one_commit(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let intruder = new_user(s).await;
    let t = s.create_thread(u, "Ends", &[]).await.unwrap();
    let turn = Uuid::now_v7();
    start_with(s, u, t.id, turn, new_message(t.id, Role::User, "Write the plan")).await.unwrap();
    let doc = s.create_artifact(u, new_artifact(t.id, "Plan", "steps")).await.unwrap();
    let elsewhere = s.create_thread(intruder, "Theirs", &[]).await.unwrap();
    let theirs = s.create_artifact(intruder, new_artifact(elsewhere.id, "Theirs", "x")).await.unwrap();
    let answer_id = Uuid::now_v7();
    s.save_progress(&[answer_draft(turn, u, t.id, answer_id, "Quokkas need a pl", true)]).await.unwrap();
    assert!(found(s, u, "quokkas").await.is_empty(), "not searchable while written");

    let finished = answer_draft(turn, u, t.id, answer_id, "Quokkas need a plan", false).answer.unwrap();
    let step = tool_step("save_artifact", json!({"title": "Plan"}), 3);
    let event = |seq: i64, name: &str| StoredEvent { seq, name: name.into(), data: "{}".into() };
    let end = TurnEnd {
        events: vec![event(1, "text_delta").into(), event(2, "message_complete").into()],
        answer: Some(FinalAnswer { user: u, draft: finished, artifacts: vec![doc.id, theirs.id] }),
        usage: Some(spent(u, t.id, "model-a", 7, 3)),
        trace: Some(TurnTrace { user: u, thread: t.id, steps: vec![step.clone()] }),
    };
    s.finish_turn(turn, end).await.unwrap();

    let messages = s.list_messages(u, t.id).await.unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!((messages[1].id, messages[1].content.as_str()), (answer_id, "Quokkas need a plan"));
    assert_eq!(messages[1].status, MessageStatus::Complete);
    assert_eq!(found(s, u, "quokkas").await, vec![Some(answer_id)], "searchable once finished");
    assert_eq!(s.get_artifact(u, doc.id).await.unwrap().assistant_message_id, Some(answer_id));
    assert_eq!(s.get_artifact(intruder, theirs.id).await.unwrap().assistant_message_id, None, "not another's");
    let kept = s.trace(u, answer_id).await.unwrap();
    assert_eq!((kept.turn_id, kept.message_id, kept.steps), (turn, Some(answer_id), vec![step.clone()]));
    let raw = &db.raw;
    assert_eq!(raw.int("select input_tokens from threads where id = ?", t.id).await, 7);
    assert_eq!(raw.int("select output_tokens from threads where id = ?", t.id).await, 3);
    assert_eq!(raw.count("usage_ledger", "user_id", u).await, 1);
    assert!(!s.latest_turn(u, t.id).await.unwrap().unwrap().running);
    assert_eq!(s.turn_events_after(turn, 0).await.unwrap(), vec![event(1, "text_delta"), event(2, "message_complete")]);

    // A conversation deleted while its turn ran: nothing to keep the answer in, the turn is gone with it, and the
    // tokens spent are still metered on the owner's ledger.
    let gone = s.create_thread(u, "Gone", &[]).await.unwrap();
    let turn = Uuid::now_v7();
    s.begin_turn(u, gone.id, turn, 60_000).await.unwrap();
    s.delete_thread(u, gone.id).await.unwrap();
    let draft = answer_draft(turn, u, gone.id, Uuid::now_v7(), "Lost words", false).answer.unwrap();
    let end = TurnEnd {
        events: vec![event(1, "message_complete").into()],
        answer: Some(FinalAnswer { user: u, draft, artifacts: vec![doc.id] }),
        usage: Some(spent(u, gone.id, "model-b", 2, 1)),
        trace: Some(TurnTrace { user: u, thread: gone.id, steps: vec![step.clone()] }),
    };
    s.finish_turn(turn, end).await.unwrap();
    assert!(found(s, u, "lost").await.is_empty());
    assert_eq!(s.get_artifact(u, doc.id).await.unwrap().assistant_message_id, Some(answer_id), "left as it was");
    assert_eq!(raw.count("usage_ledger", "user_id", u).await, 2);
    assert_eq!(s.turn_events_after(turn, 0).await.unwrap(), vec![]);
    assert_not_found(s.turn_trace(u, turn).await);
}

/// Events as a turn hands them over, each a run of one.
fn runs(events: &[StoredEvent]) -> Vec<EventRun> {
    events.iter().cloned().map(EventRun::from).collect()
}

async fn progress_of_several_turns_is_saved_together(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let event = |seq: i64, data: &str| StoredEvent { seq, name: "text_delta".into(), data: data.into() };
    let draft = |thread: Uuid, id: Uuid, content: &str, context: Option<serde_json::Value>| store::AnswerDraft {
        id,
        thread_id: thread,
        update: MessageUpdate {
            content: content.into(),
            status: MessageStatus::Interrupted,
            usage: Usage { input_tokens: 3, output_tokens: content.len() as u64 },
            model: Some("model-a".into()),
            context,
        },
        writing: true,
        question: None,
    };
    let (a, b, gone) = (
        s.create_thread(u, "A", &[]).await.unwrap(),
        s.create_thread(u, "B", &[]).await.unwrap(),
        s.create_thread(u, "Deleted", &[]).await.unwrap(),
    );
    say(s, u, a.id, "Question A").await;
    let (turn_a, turn_b, turn_gone) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    for (thread, turn) in [(a.id, turn_a), (b.id, turn_b), (gone.id, turn_gone)] {
        s.begin_turn(u, thread, turn, 60_000).await.unwrap();
    }
    let (answer_a, answer_gone) = (Uuid::now_v7(), Uuid::now_v7());
    s.delete_thread(u, gone.id).await.unwrap();

    // One batch: A's first draft (created with the next number), B's events only, and a turn whose thread was
    // deleted meanwhile (skipped without failing the others).
    let batch = vec![
        store::TurnProgress {
            turn: turn_a,
            user: u,
            events: vec![event(1, "He").into()],
            answer: Some(draft(a.id, answer_a, "He", Some(json!({"included": 1})))),
        },
        store::TurnProgress {
            turn: turn_b,
            user: u,
            events: vec![event(1, "x").into(), event(2, "y").into()],
            answer: None,
        },
        store::TurnProgress {
            turn: turn_gone,
            user: u,
            events: vec![event(1, "lost").into()],
            answer: Some(draft(gone.id, answer_gone, "lost", None)),
        },
    ];
    s.save_progress(&batch).await.unwrap();
    let messages = s.list_messages(u, a.id).await.unwrap();
    assert_eq!(messages.len(), 2);
    let saved = &messages[1];
    assert_eq!((saved.id, saved.seq, saved.role, saved.content.as_str()), (answer_a, 2, Role::Assistant, "He"));
    assert_eq!(
        (saved.status, saved.output_tokens, saved.model.as_deref()),
        (MessageStatus::Interrupted, 2, Some("model-a"))
    );
    assert_eq!(s.message_context(u, answer_a).await.unwrap(), Some(json!({"included": 1})));
    assert_eq!(s.get_thread(u, a.id).await.unwrap().message_count, 2);
    assert_eq!(s.turn_events_after(turn_b, 0).await.unwrap(), vec![event(1, "x"), event(2, "y")]);
    assert!(s.turn_events_after(turn_gone, 0).await.unwrap().is_empty());
    assert_not_found(s.get_message(u, answer_gone).await);

    // The next batch rewrites the same answer in place; a repeated event keeps its first text; a draft without
    // a context record keeps the saved one.
    let next = store::TurnProgress {
        turn: turn_a,
        user: u,
        events: vec![event(1, "again?").into(), event(2, "llo").into()],
        answer: Some(draft(a.id, answer_a, "Hello", None)),
    };
    s.save_progress(&[next]).await.unwrap();
    let messages = s.list_messages(u, a.id).await.unwrap();
    assert_eq!(messages.len(), 2, "no second answer");
    assert_eq!((messages[1].content.as_str(), messages[1].seq), ("Hello", 2));
    assert_eq!(s.message_context(u, answer_a).await.unwrap(), Some(json!({"included": 1})));
    assert_eq!(s.turn_events_after(turn_a, 0).await.unwrap(), vec![event(1, "He"), event(2, "llo")]);
    assert_eq!(s.get_thread(u, a.id).await.unwrap().message_count, 2);

    // Another user's draft never lands in this user's thread.
    let intruder = new_user(s).await;
    let forged = store::TurnProgress {
        turn: Uuid::now_v7(),
        user: intruder,
        events: Vec::new(),
        answer: Some(draft(a.id, answer_a, "overwritten", None)),
    };
    s.save_progress(&[forged]).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Hello");
    assert_eq!(s.list_messages(u, a.id).await.unwrap().len(), 2);
    s.save_progress(&[]).await.unwrap();

    // A batch with more events than one insert statement takes keeps every one of them, in order, for each turn.
    let many =
        |from: i64, tag: &str| (from..from + 601).map(|seq| event(seq, &format!("{tag}{seq}"))).collect::<Vec<_>>();
    let (more_a, more_b) = (many(3, "a"), many(3, "b"));
    s.save_progress(&[
        store::TurnProgress { turn: turn_a, user: u, events: runs(&more_a), answer: None },
        store::TurnProgress { turn: turn_b, user: u, events: runs(&more_b), answer: None },
        store::TurnProgress { turn: turn_gone, user: u, events: runs(&many(2, "lost")), answer: None },
    ])
    .await
    .unwrap();
    assert_eq!(s.turn_events_after(turn_a, 2).await.unwrap(), more_a);
    assert_eq!(s.turn_events_after(turn_b, 2).await.unwrap(), more_b);
    assert!(s.turn_events_after(turn_gone, 0).await.unwrap().is_empty());

    // Several saved answers rewritten in one batch, beside a first save; then one answer twice in a batch, which
    // ends as its second draft says.
    let answer_b = Uuid::now_v7();
    let drafts = |a_text: &str, b_text: &str| {
        vec![
            store::TurnProgress {
                turn: turn_a,
                user: u,
                events: vec![],
                answer: Some(draft(a.id, answer_a, a_text, None)),
            },
            store::TurnProgress {
                turn: turn_b,
                user: u,
                events: vec![],
                answer: Some(draft(b.id, answer_b, b_text, None)),
            },
        ]
    };
    s.save_progress(&drafts("Hello, w", "Fir")).await.unwrap();
    s.save_progress(&drafts("Hello, world", "First")).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Hello, world");
    assert_eq!(s.message_context(u, answer_a).await.unwrap(), Some(json!({"included": 1})));
    let b_messages = s.list_messages(u, b.id).await.unwrap();
    assert_eq!(b_messages.len(), 1);
    assert_eq!((b_messages[0].id, b_messages[0].content.as_str(), b_messages[0].output_tokens), (answer_b, "First", 5));
    let mut twice = drafts("Hello, world!", "First draft");
    twice.extend(drafts("Hello, world! Bye", "First draft, longer"));
    s.save_progress(&twice).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Hello, world! Bye");
    assert_eq!(s.get_message(u, answer_b).await.unwrap().content, "First draft, longer");
    assert_eq!(s.list_messages(u, b.id).await.unwrap().len(), 1);
}

/// A turn that starts without a new message (a regenerate) holds the conversation's row against every change of its
/// messages (on PostgreSQL through the turn's foreign key): a delete holding the row is waited for, and a change
/// after the start sees the running turn (409). SQLite's one writer makes every write one after the other.
async fn a_turn_start_waits_for_a_change_holding_the_conversation(db: Db) {
    let Raw::Postgres(pool) = &db.raw else { return };
    let (s, u, t) = someones_thread(&db, "Held").await;
    let mut holding = pool.begin().await.unwrap();
    sqlx::query("select 1 from threads where id = $1 for update").bind(t.id).execute(&mut *holding).await.unwrap();
    let store = s.clone();
    let start = tokio::spawn(async move { store.begin_turn(u, t.id, Uuid::now_v7(), 60_000).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!start.is_finished(), "the start waits for the change holding the conversation");
    holding.commit().await.unwrap();
    start.await.unwrap().unwrap();
    let question = s.append_message_between_turns(u, new_message(t.id, Role::User, "Later"), 60_000).await;
    assert_conflict(question);
}

/// A turn closed without an answer (its end failed first) lets go of the answer it left being written before it
/// touches its own row: that release locks the conversation's row (its stamp counts it), and a start locks the
/// conversation's row and then waits for the turn's. The other order deadlocked with such a start (PostgreSQL;
/// SQLite's one writer makes every write one after the other).
async fn a_closing_turn_takes_the_conversation_before_its_own_row(db: Db) {
    let Raw::Postgres(pool) = &db.raw else { return };
    let (s, u, t) = someones_thread(&db, "Closing").await;
    let turn = Uuid::now_v7();
    s.begin_turn(u, t.id, turn, 60_000).await.unwrap();
    let update = MessageUpdate { model: Some("model-a".into()), ..message_update("Cut o", MessageStatus::Interrupted) };
    let answer = store::AnswerDraft { id: Uuid::now_v7(), thread_id: t.id, update, writing: true, question: None };
    s.save_progress(&[store::TurnProgress { turn, user: u, events: vec![], answer: Some(answer) }]).await.unwrap();
    assert_eq!(db.raw.int("select count(*) from messages where thread_id = ? and writing", t.id).await, 1);

    let held = db.raw.hold_writes(t.id).await;
    let store = s.clone();
    let closing = tokio::spawn(async move { store.finish_turn(turn, TurnEnd::default()).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!closing.is_finished(), "the close waits for the conversation's row");
    // Meanwhile the turn's row is free: what a start holding the conversation's row would wait for next.
    let mut start = pool.begin().await.unwrap();
    sqlx::query("set local lock_timeout = '10s'").execute(&mut *start).await.unwrap();
    sqlx::query("select 1 from turns where id = $1 for update")
        .bind(turn)
        .execute(&mut *start)
        .await
        .expect("the close holds the turn's row while it waits for the conversation's");
    start.rollback().await.unwrap();

    held.release().await;
    closing.await.unwrap().unwrap();
    assert_eq!(db.raw.int("select count(*) from messages where thread_id = ? and writing", t.id).await, 0);
    assert_eq!(db.raw.int("select count(*) from turns where id = ? and status = 'done'", turn).await, 1);
}

async fn concurrent_turns_take_the_thread_once(db: Db) {
    let (s, u, t) = someones_thread(&db, "Race").await;
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let store = s.clone();
            tokio::spawn(async move { store.begin_turn(u, t.id, Uuid::now_v7(), 60_000).await })
        })
        .collect();
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => won += 1,
            Err(StoreError::Conflict(_)) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(won, 1);
    assert_eq!(db.raw.int("select count(*) from turns where thread_id = ? and status = 'running'", t.id).await, 1);

    // Many conversations starting at once (on SQLite, those waiting for the writer start together): each start
    // gets its own outcome, and a refused one leaves nothing behind.
    let intruder = new_user(s).await;
    let mut threads = Vec::new();
    for i in 0..12 {
        threads.push(s.create_thread(u, &format!("Crowd {i}"), &[]).await.unwrap().id);
    }
    let mut tasks = Vec::new();
    for (i, &thread) in threads.iter().enumerate() {
        for (who, attempt) in [(u, 0), (u, 1), (intruder, 2)] {
            let store = s.clone();
            let message = new_message(thread, Role::User, &format!("Question {i}.{attempt}"));
            tasks.push(tokio::spawn(async move {
                let turn = Uuid::now_v7();
                (thread, who, turn, start_with(&store, who, thread, turn, message).await)
            }));
        }
    }
    let mut started = std::collections::HashMap::new();
    let mut turns = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (thread, who, turn, Ok(Some(saved))) if who == u => {
                assert_eq!((saved.thread_id, saved.seq), (thread, 1));
                assert!(started.insert(thread, saved.content).is_none(), "one start per conversation");
                turns.push((thread, turn));
            }
            (_, who, _, Err(StoreError::Conflict(_))) if who == u => {}
            (_, who, _, Err(StoreError::NotFound)) if who == intruder => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(started.len(), threads.len());
    for thread in &threads {
        let messages = s.list_messages(u, *thread).await.unwrap();
        assert_eq!(messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), vec![started[thread].as_str()]);
        assert_eq!(db.raw.int("select count(*) from turns where thread_id = ?", *thread).await, 1);
    }

    // And ending at once (on SQLite, those waiting for the writer end together): every answer, its tokens and
    // its last event are stored, and every conversation is free again.
    let ends: Vec<_> = turns
        .iter()
        .map(|&(thread, turn)| {
            let store = s.clone();
            tokio::spawn(async move {
                let draft = answer_draft(turn, u, thread, Uuid::now_v7(), "Crowded answer", false).answer.unwrap();
                let end = TurnEnd {
                    events: vec![EventRun::single(1, "message_complete", "{}".into())],
                    answer: Some(FinalAnswer { user: u, draft, artifacts: Vec::new() }),
                    usage: Some(spent(u, thread, "crowd", 2, 1)),
                    ..TurnEnd::default()
                };
                store.finish_turn(turn, end).await
            })
        })
        .collect();
    for end in ends {
        end.await.unwrap().unwrap();
    }
    for &(thread, turn) in &turns {
        let messages = s.list_messages(u, thread).await.unwrap();
        assert_eq!(messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>()[1..], ["Crowded answer"]);
        assert!(!s.latest_turn(u, thread).await.unwrap().unwrap().running);
        assert_eq!(s.turn_events_after(turn, 0).await.unwrap().len(), 1);
        assert_eq!(db.raw.int("select input_tokens from threads where id = ?", thread).await, 2);
    }
}

/// A turn's text deltas handed over in pieces, then its end: stored as a few rows (on SQLite, where they all go
/// with the end, the whole text as one), and read back as the events they were, from any point, whatever their
/// text holds.
async fn a_turns_text_is_stored_in_runs_and_replayed_event_by_event(db: Db) {
    let (s, u, t) = someones_thread(&db, "Runs").await;
    let turn = Uuid::now_v7();
    s.begin_turn(u, t.id, turn, 60_000).await.unwrap();
    let texts = ["He", "llo", " \"quoted\", [brackets]", ",]", "— ✓", "\\n", "end"];
    let data: Vec<String> = texts.iter().map(|t| json!({ "text": t }).to_string()).collect();
    let handed = |from: usize, to: usize| store::TurnProgress {
        turn,
        user: u,
        events: vec![EventRun::of(from as i64 + 1, "text_delta", data[from..to].iter().map(String::as_str))],
        answer: None,
    };
    s.submit_progress(handed(0, 3));
    s.submit_progress(handed(3, 4));
    s.submit_progress(handed(4, 6));
    let end = TurnEnd {
        events: vec![
            EventRun::of(7, "text_delta", data[6..].iter().map(String::as_str)),
            EventRun::single(8, "message_complete", "{}".into()),
        ],
        ..TurnEnd::default()
    };
    s.finish_turn(turn, end).await.unwrap();

    let mut events: Vec<StoredEvent> = (1..=7)
        .map(|seq| StoredEvent { seq, name: "text_delta".into(), data: data[seq as usize - 1].clone() })
        .collect();
    events.push(StoredEvent { seq: 8, name: "message_complete".into(), data: "{}".into() });
    for after in 0..=8 {
        assert_eq!(s.turn_events_after(turn, after).await.unwrap(), events[after as usize..], "after {after}");
    }
    let rows = db.raw.count("turn_events", "turn_id", turn).await;
    match s.backend() {
        // Stored with the end, in one run.
        "sqlite" => assert_eq!(rows, 2),
        // Stored as they were handed over, for listeners on other instances.
        _ => assert!(rows <= 5, "{rows} rows"),
    }
}

/// A turn whose heartbeat went quiet while it still ran (its instance could not reach the database for a while)
/// is taken over by the conversation's next turn, and ends after it started: it keeps the tokens it spent, and
/// leaves the newer turn's events and its answer being written as they are.
async fn a_turn_taken_over_ends_without_touching_the_newer_turn(db: Db) {
    let (s, u, t) = someones_thread(&db, "Taken over").await;
    let old = Uuid::now_v7();
    start_with(s, u, t.id, old, new_message(t.id, Role::User, "First question")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    let new = Uuid::now_v7();
    s.begin_turn(u, t.id, new, 10).await.unwrap();
    assert_eq!(s.heartbeat_turns(&[old, new]).await.unwrap(), vec![old], "the old turn is told to stop");
    let answer = Uuid::now_v7();
    s.save_progress(&[answer_draft(new, u, t.id, answer, "Wombats dig", true)]).await.unwrap();
    let event = |seq: i64, name: &str| StoredEvent { seq, name: name.into(), data: "{}".into() };
    s.append_turn_events(new, &[event(1, "text_delta").into()]).await.unwrap();

    // The old turn ends last, stopped before it wrote a word.
    let end = TurnEnd {
        events: vec![event(1, "message_complete").into()],
        usage: Some(spent(u, t.id, "model-a", 9, 0)),
        ..TurnEnd::default()
    };
    s.finish_turn(old, end).await.unwrap();
    assert_eq!(
        s.turn_events_after(new, 0).await.unwrap(),
        vec![event(1, "text_delta")],
        "the newer turn's events stay"
    );
    assert!(s.turn_events_after(old, 0).await.unwrap().is_empty(), "only the newest turn keeps its events");
    assert!(found(s, u, "wombats").await.is_empty(), "the newer answer is still being written");
    let latest = s.latest_turn(u, t.id).await.unwrap().unwrap();
    assert_eq!((latest.id, latest.running), (new, true));
    assert_eq!(db.raw.count("usage_ledger", "user_id", u).await, 1, "the old turn's tokens are metered");

    // The newer turn ends as any turn does.
    let finished = answer_draft(new, u, t.id, answer, "Wombats dig burrows", false).answer.unwrap();
    let end = TurnEnd {
        events: vec![event(2, "message_complete").into()],
        answer: Some(FinalAnswer { user: u, draft: finished, artifacts: vec![] }),
        ..TurnEnd::default()
    };
    s.finish_turn(new, end).await.unwrap();
    assert_eq!(s.turn_events_after(new, 0).await.unwrap().len(), 2);
    assert_eq!(found(s, u, "wombats").await, vec![Some(answer)]);
}

/// A turn taken over before its first save (its heartbeat went quiet while its model was slow) saves its answer
/// after its own question, beside the newer turn's question, which stays on the path shown; the newer turn's
/// answer follows its own question. A first save comes in a progress batch or with a turn's end: both ways.
async fn a_turn_taken_over_before_its_first_save_answers_its_own_question(db: Db) {
    for old_ends_first in [true, false] {
        let (s, u, t) = someones_thread(&db, "Taken over early").await;
        let (old, new) = (Uuid::now_v7(), Uuid::now_v7());
        let first = start_with(s, u, t.id, old, new_message(t.id, Role::User, "First question")).await.unwrap();
        let first = first.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let request = Some(new_message(t.id, Role::User, "Second question"));
        let start = TurnStart {
            user: u,
            sender: u,
            thread: t.id,
            turn: new,
            stale_after_ms: 10,
            request,
            message_id: Uuid::now_v7(),
        };
        let second = s.start_turn(start, &TurnLimits::default()).await.unwrap().unwrap();
        assert_eq!(second.parent_id, Some(first.id), "no answer came between the questions");

        let answer = |turn: Uuid, question: &Message, text: &str, writing: bool| {
            let mut progress = answer_draft(turn, u, t.id, Uuid::now_v7(), text, writing);
            progress.answer.as_mut().unwrap().question = Some(question.id);
            progress
        };
        let (early, newer) =
            (answer(old, &first, "An early answer", false), answer(new, &second, "The newer one", false));
        let ids = [&early, &newer].map(|p| p.answer.as_ref().unwrap().id);
        let (ending, drafted) = if old_ends_first { (early, newer) } else { (newer, early) };
        let draft = ending.answer.unwrap();
        let end = TurnEnd { answer: Some(FinalAnswer { user: u, draft, artifacts: vec![] }), ..TurnEnd::default() };
        s.finish_turn(ending.turn, end).await.unwrap();
        s.save_progress(&[drafted]).await.unwrap();

        let parents = [s.get_message(u, ids[0]).await.unwrap(), s.get_message(u, ids[1]).await.unwrap()];
        let parents = parents.map(|m| m.parent_id);
        assert_eq!(parents, [Some(first.id), Some(second.id)], "each answer follows its own question");
        let (path, _) = s.list_path(u, t.id).await.unwrap();
        let shown: Vec<_> = path.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(shown, ["First question", "Second question", "The newer one"], "old answer first: {old_ends_first}");
    }
}
