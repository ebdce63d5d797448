//! Messages: order, numbering, counts.

use super::*;

stories!(
    messages_in_order,
    messages_between_turns,
    concurrent_appends_take_distinct_numbers,
    delete_message_keeps_the_count_true,
    message_heads_and_tails,
    the_stamp_changes_with_every_write_to_what_the_model_sees,
);

async fn messages_in_order(db: Db) {
    let (s, u, t) = someones_thread(&db, "Order").await;
    let mut appended = Vec::new();
    for i in 1..=6 {
        let role = if i % 2 == 1 { Role::User } else { Role::Assistant };
        let m = s.append_message(u, new_message(t.id, role, &format!("message {i}"))).await.unwrap();
        assert_eq!(m.seq, i);
        appended.push(m);
    }
    let listed = s.list_messages(u, t.id).await.unwrap();
    assert_eq!(listed, appended);
    assert_eq!(s.get_message(u, appended[2].id).await.unwrap(), appended[2]);

    let reply = appended[1].id;
    let context = json!({ "documents": [1, 2], "note": "kept" });
    let update = MessageUpdate {
        content: "final text".into(),
        status: MessageStatus::Stopped,
        usage: Usage { input_tokens: 3, output_tokens: 4 },
        model: Some("model-x".into()),
        context: Some(context.clone()),
    };
    s.update_message(u, reply, &update).await.unwrap();
    let updated = s.get_message(u, reply).await.unwrap();
    assert_eq!(updated.content, "final text");
    assert_eq!(updated.status, MessageStatus::Stopped);
    assert_eq!((updated.input_tokens, updated.output_tokens), (3, 4));
    assert_eq!(updated.model.as_deref(), Some("model-x"));
    assert_eq!(updated.seq, 2);
    assert_eq!(s.message_context(u, reply).await.unwrap(), Some(context.clone()));
    assert_eq!(s.message_context(u, appended[0].id).await.unwrap(), None);

    // Streaming progress without model or context leaves both as they were.
    let progress =
        MessageUpdate { content: "more".into(), status: MessageStatus::Complete, model: None, context: None, ..update };
    s.update_message(u, reply, &progress).await.unwrap();
    assert_eq!(s.get_message(u, reply).await.unwrap().model.as_deref(), Some("model-x"));
    assert_eq!(s.message_context(u, reply).await.unwrap(), Some(context));
    assert_not_found(s.update_message(u, Uuid::now_v7(), &progress).await);

    let thread = s.get_thread(u, t.id).await.unwrap();
    assert_eq!(thread.message_count, 6);
    assert!(thread.updated_at >= thread.created_at);
}

/// A message added between turns takes the next number and is counted; while a live turn holds the thread it
/// is refused, and a turn whose heartbeat went quiet holds nothing.
async fn messages_between_turns(db: Db) {
    let (s, u, t) = someones_thread(&db, "Notes").await;
    let note = |text: &str| new_message(t.id, Role::User, text);
    let first = s.append_message_between_turns(u, note("A note before anything"), 60_000).await.unwrap();
    assert_eq!((first.seq, first.role, first.content.as_str()), (1, Role::User, "A note before anything"));

    let turn = Uuid::now_v7();
    s.begin_turn(u, t.id, turn, 60_000).await.unwrap();
    assert_conflict(s.append_message_between_turns(u, note("While an answer is written"), 60_000).await);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let late = s.append_message_between_turns(u, note("After it went quiet"), 10).await.unwrap();
    assert_eq!(late.seq, 2);
    s.finish_turn(turn, TurnEnd::default()).await.unwrap();
    let after = s.append_message_between_turns(u, note("After the turn"), 60_000).await.unwrap();
    assert_eq!(after.seq, 3);
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 3);
    assert_eq!(s.list_messages(u, t.id).await.unwrap(), vec![first, late, after]);

    let intruder = new_user(s).await;
    assert_not_found(s.append_message_between_turns(intruder, note("Not mine"), 60_000).await);
    assert_not_found(s.append_message_between_turns(u, new_message(Uuid::now_v7(), Role::User, "x"), 60_000).await);
}

async fn concurrent_appends_take_distinct_numbers(db: Db) {
    let (s, u, t) = someones_thread(&db, "Busy").await;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = s.clone();
            tokio::spawn(async move { say(&store, u, t.id, &format!("parallel {i}")).await.seq })
        })
        .collect();
    let mut seqs = BTreeSet::new();
    for task in tasks {
        assert!(seqs.insert(task.await.unwrap()), "a sequence number was taken twice");
    }
    assert_eq!(seqs, (1..=20).collect::<BTreeSet<i64>>());
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 20);
    let listed: Vec<i64> = s.list_messages(u, t.id).await.unwrap().iter().map(|m| m.seq).collect();
    assert_eq!(listed, (1..=20).collect::<Vec<i64>>());
}

async fn delete_message_keeps_the_count_true(db: Db) {
    let (s, u, t) = someones_thread(&db, "Edits").await;
    let other = s.create_thread(u, "Elsewhere", &[]).await.unwrap();
    let mut ids = Vec::new();
    for i in 1..=5 {
        ids.push(say(s, u, t.id, &format!("line {i}")).await.id);
    }
    let doc = NewArtifact { request_message_id: Some(ids[1]), ..new_artifact(t.id, "Doc", "text") };
    let doc = s.create_artifact(u, doc).await.unwrap();

    // A message goes with everything after it on its branch.
    assert_eq!(s.delete_message(u, t.id, ids[3], None).await.unwrap(), 2);
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 3);
    assert_eq!(s.delete_message(u, t.id, ids[1], None).await.unwrap(), 2);
    assert_not_found(s.delete_message(u, t.id, ids[1], None).await);
    assert_not_found(s.delete_message(u, t.id, ids[4], None).await);
    assert_not_found(s.delete_message(u, other.id, ids[0], None).await);
    assert_not_found(s.get_message(u, ids[1]).await);

    let seqs: Vec<i64> = s.list_messages(u, t.id).await.unwrap().iter().map(|m| m.seq).collect();
    assert_eq!(seqs, vec![1]);
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 1);
    assert_eq!(s.get_artifact(u, doc.id).await.unwrap().request_message_id, None, "the link is cleared, not the doc");

    // Numbers are never reused; the next message follows what is left.
    let after = say(s, u, t.id, "after").await;
    assert_eq!((after.seq, after.parent_id), (6, Some(ids[0])));
    assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, 2);
    assert_eq!(s.get_thread(u, other.id).await.unwrap().message_count, 0);
}

async fn message_heads_and_tails(db: Db) {
    let (s, u, t) = someones_thread(&db, "Heads").await;
    assert_eq!(s.message_tree(u, t.id).await.unwrap(), store::Tree::default());
    let long = "A long answer. ".repeat(200);
    let texts = ["Question", "", " \t\n ", long.as_str(), "Next"];
    let mut saved = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
        saved.push(s.append_message(u, new_message(t.id, role, text)).await.unwrap());
    }
    let tree = s.message_tree(u, t.id).await.unwrap();
    let expected: Vec<store::MessageHead> =
        saved.iter().map(|m| store::MessageHead { id: m.id, seq: m.seq, role: m.role, parent: m.parent_id }).collect();
    assert_eq!(tree.heads, expected);
    assert_eq!(tree.active, saved.last().map(|m| m.id));
    // Each message follows the one before.
    assert!(saved.windows(2).all(|w| w[1].parent_id == Some(w[0].id)) && saved[0].parent_id.is_none());

    assert_eq!(s.list_messages_from(u, t.id, 4).await.unwrap(), saved[3..].to_vec());
    assert_eq!(s.list_messages_from(u, t.id, 1).await.unwrap(), saved);
    assert!(s.list_messages_from(u, t.id, 6).await.unwrap().is_empty());
    let intruder = new_user(s).await;
    assert_not_found(s.message_tree(intruder, t.id).await);
    assert!(s.list_messages_from(intruder, t.id, 1).await.unwrap().is_empty());
}

/// Adds `now` to the stamps `seen`, which must not hold it: the write before changed the thread's stamp.
fn changed(seen: &mut Vec<store::ThreadStamp>, now: store::ThreadStamp, what: &str) {
    assert!(!seen.contains(&now), "{what} left the stamp as it was before: {now:?}");
    seen.push(now);
}

/// Every write to what the model's view of a conversation is made from (its messages, the active one, its
/// documents and the requests they answer) changes the conversation's stamp; an answer being written does not,
/// nor do changes the model does not see.
async fn the_stamp_changes_with_every_write_to_what_the_model_sees(db: Db) {
    let (s, u, t) = someones_thread(&db, "Stamps").await;
    let stamp = || async { s.thread_stamp(u, t.id).await.unwrap() };
    let mut seen = vec![stamp().await];

    let q = say(s, u, t.id, "Plan a garden").await;
    changed(&mut seen, stamp().await, "a message");
    let a = answer(s, u, t.id, "Start with the soil").await;
    changed(&mut seen, stamp().await, "an answer");
    let edit = message_update("Start with the light", MessageStatus::Complete);
    s.update_message(u, a.id, &edit).await.unwrap();
    changed(&mut seen, stamp().await, "rewriting an answer");
    s.set_active(u, t.id, Some(q.id), None).await.unwrap();
    changed(&mut seen, stamp().await, "another active message");
    s.set_active(u, t.id, Some(a.id), None).await.unwrap();
    changed(&mut seen, stamp().await, "the active message back");
    let doc = NewArtifact { request_message_id: Some(q.id), ..new_artifact(t.id, "Plan", "# Plan") };
    let doc = s.create_artifact(u, doc).await.unwrap();
    changed(&mut seen, stamp().await, "a document");
    let revision = store::ArtifactRevision {
        title: "Plan".into(),
        content: "# Plan v2".into(),
        request_message_id: Some(q.id),
        answers: Vec::new(),
        author: wire::VersionAuthor::default(),
        base_version: None,
        cites: Vec::new(),
    };
    s.revise_artifact(u, doc.id, revision).await.unwrap();
    changed(&mut seen, stamp().await, "a document's new version");
    s.link_artifacts(u, &[doc.id], a.id).await.unwrap();
    changed(&mut seen, stamp().await, "a document linked to its answer");
    s.delete_artifact(u, doc.id).await.unwrap();
    changed(&mut seen, stamp().await, "a document deleted");
    s.delete_message(u, t.id, a.id, None).await.unwrap();
    changed(&mut seen, stamp().await, "a message deleted");

    // A title the model does not see leaves the stamp as it is.
    let before = stamp().await;
    s.update_thread(u, t.id, &ThreadPatch { title: Some("Garden".into()), ..Default::default() }).await.unwrap();
    assert_eq!(stamp().await, before);

    // A turn: its message, the answer's first save and its last change it; the answer being written in between
    // does not.
    let turn = Uuid::now_v7();
    let idle = stamp().await;
    let start = TurnStart {
        user: u,
        sender: u,
        thread: t.id,
        turn,
        stale_after_ms: 60_000,
        request: Some(new_message(t.id, Role::User, "And a pond?")),
        message_id: Uuid::now_v7(),
    };
    let started = s.start_turn_stamped(start, &TurnLimits::default()).await.unwrap();
    assert_eq!(started.before, Some(idle), "the start reports the thread as it found it");
    let question = started.message.expect("the message is saved");
    changed(&mut seen, stamp().await, "a turn's message");
    // The question became the active message: one change counted.
    let asked = store::ThreadStamp { version: idle.version + 1, last_seq: question.seq, active: Some(question.id) };
    assert_eq!(stamp().await, asked);
    let answer_id = Uuid::now_v7();
    s.save_progress(&[answer_draft(turn, u, t.id, answer_id, "A pond needs", true)]).await.unwrap();
    changed(&mut seen, stamp().await, "the answer's first save");
    let written = stamp().await;
    assert_eq!(
        written,
        store::ThreadStamp { version: asked.version + 1, last_seq: asked.last_seq + 1, active: Some(answer_id) }
    );
    s.save_progress(&[answer_draft(turn, u, t.id, answer_id, "A pond needs shade", true)]).await.unwrap();
    assert_eq!(stamp().await, written, "an answer being written is its turn's own");
    let draft = answer_draft(turn, u, t.id, answer_id, "A pond needs shade and plants.", false).answer.unwrap();
    let end = TurnEnd { answer: Some(FinalAnswer { user: u, draft, artifacts: Vec::new() }), ..TurnEnd::default() };
    let ended = s.finish_turn_stamped(turn, end).await.unwrap().expect("the answer is saved");
    assert_eq!(ended, stamp().await, "the end's stamp is the thread's after it");
    assert_eq!(ended, store::ThreadStamp { version: written.version + 1, ..written }, "finishing it counts once");
    changed(&mut seen, ended, "the answer finished");

    let intruder = new_user(s).await;
    assert_not_found(s.thread_stamp(intruder, t.id).await);
}
