//! Conversations: listing, ownership, cascades, cursors.

use super::*;

stories!(
    threads,
    other_users_rows_are_not_found,
    thread_delete_cascades,
    listing_order_and_cursors,
    model_choices,
    turn_reads_read_only_what_is_there,
);

async fn threads(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "First plan", &tags(&["work", "q3", "work"])).await.unwrap();
    assert_eq!(t.title, "First plan");
    assert_eq!(t.tags, tags(&["work", "q3"]), "tags keep their order; a repeat keeps its first place");
    assert_eq!((t.message_count, t.pinned, t.archived, t.first_message.clone()), (0, false, false, None));
    assert_eq!(t.created_at, t.updated_at);
    assert_eq!(s.get_thread(u, t.id).await.unwrap(), t);

    let patch = ThreadPatch {
        title: Some("Renamed".into()),
        tags: Some(tags(&["b", "a"])),
        pinned: Some(true),
        ..Default::default()
    };
    let patched = s.update_thread(u, t.id, &patch).await.unwrap();
    assert_eq!((patched.title.as_str(), patched.tags.clone(), patched.pinned), ("Renamed", tags(&["b", "a"]), true));
    assert!(!patched.archived);
    assert_eq!(patched.created_at, t.created_at);
    assert!(patched.updated_at >= t.updated_at);
    assert_eq!(s.get_thread(u, t.id).await.unwrap(), patched);

    let untouched = s.update_thread(u, t.id, &ThreadPatch::default()).await.unwrap();
    assert_eq!(
        (untouched.title, untouched.tags, untouched.pinned),
        (patched.title.clone(), patched.tags.clone(), true)
    );
    let cleared = s.update_thread(u, t.id, &ThreadPatch { tags: Some(vec![]), ..Default::default() }).await.unwrap();
    assert!(cleared.tags.is_empty());

    // The first user message (its first 200 characters) is shown in listings.
    answer(s, u, t.id, "an answer comes first here").await;
    let long = "é".repeat(300);
    say(s, u, t.id, &long).await;
    say(s, u, t.id, "second question").await;
    let shown = s.get_thread(u, t.id).await.unwrap();
    assert_eq!(shown.first_message, Some("é".repeat(200)));
    assert_eq!(shown.message_count, 3);

    // Archived threads only show in the archive.
    let other = s.create_thread(u, "Other", &[]).await.unwrap();
    s.update_thread(u, t.id, &ThreadPatch { archived: Some(true), ..Default::default() }).await.unwrap();
    assert_eq!(all_thread_ids::<Vec<_>>(s, u, &ThreadQuery::default()).await, vec![other.id]);
    let archive = ThreadQuery { archived: true, ..Default::default() };
    assert_eq!(all_thread_ids::<Vec<_>>(s, u, &archive).await, vec![t.id]);

    s.delete_thread(u, t.id).await.unwrap();
    assert_not_found(s.get_thread(u, t.id).await);
    assert_not_found(s.delete_thread(u, t.id).await);
    assert_not_found(s.update_thread(u, t.id, &ThreadPatch::default()).await);
    assert_eq!(s.get_thread(u, other.id).await.unwrap().id, other.id);
}

async fn other_users_rows_are_not_found(db: Db) {
    let s = &db.store;
    let owner = new_user(s).await;
    let intruder = new_user(s).await;
    let t = s.create_thread(owner, "Secret plan", &tags(&["private"])).await.unwrap();
    let question = say(s, owner, t.id, "secret launch codes").await;
    let reply = answer(s, owner, t.id, "secret answer").await;
    let doc = s.create_artifact(owner, new_artifact(t.id, "Secret doc", "secret content")).await.unwrap();
    let trace = trace_of(t.id, Some(reply.id), vec![tool_step("save_artifact", json!({}), 1)]);
    s.save_trace(owner, &trace).await.unwrap();
    s.begin_turn(owner, t.id, Uuid::now_v7(), 60_000).await.unwrap();
    let own_thread = s.create_thread(intruder, "Mine", &[]).await.unwrap();

    assert_not_found(s.get_thread(intruder, t.id).await);
    assert_not_found(
        s.update_thread(intruder, t.id, &ThreadPatch { title: Some("x".into()), ..Default::default() }).await,
    );
    assert_not_found(s.delete_thread(intruder, t.id).await);
    assert_not_found(s.append_message(intruder, new_message(t.id, Role::User, "hi")).await);
    assert_not_found(s.list_messages(intruder, t.id).await);
    assert_not_found(s.get_message(intruder, question.id).await);
    assert_not_found(s.message_context(intruder, question.id).await);
    let update = message_update("x", MessageStatus::Complete);
    assert_not_found(s.update_message(intruder, reply.id, &update).await);
    assert_not_found(s.delete_message(intruder, t.id, question.id, None).await);
    assert_not_found(s.delete_message(intruder, own_thread.id, question.id, None).await);
    assert_not_found(s.list_artifacts(intruder, t.id).await);
    assert_not_found(s.get_artifact(intruder, doc.id).await);
    assert_not_found(s.delete_artifact(intruder, doc.id).await);
    assert_not_found(s.create_artifact(intruder, new_artifact(t.id, "x", "y")).await);
    let pointing = NewArtifact { request_message_id: Some(question.id), ..new_artifact(own_thread.id, "x", "y") };
    assert_not_found(s.create_artifact(intruder, pointing).await);
    assert_not_found(s.link_artifacts(intruder, &[doc.id], reply.id).await);
    assert_not_found(s.save_trace(intruder, &trace_of(t.id, None, Vec::new())).await);
    assert_not_found(s.save_trace(intruder, &Trace { thread_id: own_thread.id, ..trace.clone() }).await);
    assert_not_found(s.trace(intruder, reply.id).await);
    assert_not_found(s.turn_trace(intruder, trace.turn_id).await);
    assert_not_found(s.thread_traces(intruder, t.id).await);
    assert_eq!(s.trace(owner, reply.id).await.unwrap(), trace, "the owner's trace is untouched");
    assert_not_found(s.begin_turn(intruder, t.id, Uuid::now_v7(), 0).await);
    assert!(!s.request_stop(intruder, t.id).await.unwrap());
    assert_eq!(s.latest_turn(intruder, t.id).await.unwrap(), None);
    let found = s.search(intruder, "secret", 50, 0).await.unwrap();
    assert_eq!((found.total, found.hits.len()), (0, 0));
    assert_eq!(all_thread_ids::<Vec<_>>(s, intruder, &ThreadQuery::default()).await, vec![own_thread.id]);
    let tagged = all_threads(s, intruder, &ThreadQuery { tags: tags(&["private"]), ..Default::default() }).await;
    assert!(tagged.is_empty());

    // The intruder's own ids in the owner's calls are just as missing.
    assert_not_found(s.link_artifacts(owner, &[doc.id], Uuid::now_v7()).await);
    let other_doc = s.create_artifact(intruder, new_artifact(own_thread.id, "theirs", "z")).await.unwrap();
    s.link_artifacts(owner, &[doc.id, other_doc.id], reply.id).await.unwrap();
    assert_eq!(s.get_artifact(intruder, other_doc.id).await.unwrap().assistant_message_id, None);
    assert_eq!(s.get_artifact(owner, doc.id).await.unwrap().assistant_message_id, Some(reply.id));

    // Missing ids behave the same, and an empty thread of one's own is simply empty.
    assert_not_found(s.list_messages(owner, Uuid::now_v7()).await);
    assert_not_found(s.list_artifacts(owner, Uuid::now_v7()).await);
    assert!(s.list_messages(intruder, own_thread.id).await.unwrap().is_empty());
    assert_eq!(s.list_artifacts(intruder, own_thread.id).await.unwrap().len(), 1);

    // Nothing of the owner's changed.
    let kept = s.get_thread(owner, t.id).await.unwrap();
    assert_eq!((kept.title.as_str(), kept.message_count), ("Secret plan", 2));
    assert_eq!(s.list_messages(owner, t.id).await.unwrap().len(), 2);
    assert_eq!(s.list_artifacts(owner, t.id).await.unwrap().len(), 1);
    assert!(s.latest_turn(owner, t.id).await.unwrap().is_some_and(|turn| turn.running && !turn.stop_requested));
}

async fn thread_delete_cascades(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let t = s.create_thread(u, "Doomed zebra", &tags(&["a", "b"])).await.unwrap();
    let keep = s.create_thread(u, "Survivor zebra", &tags(&["a"])).await.unwrap();
    let question = say(s, u, t.id, "zebra question").await;
    let reply = answer(s, u, t.id, "zebra answer").await;
    say(s, u, keep.id, "zebra elsewhere").await;
    let trace = trace_of(t.id, Some(reply.id), vec![tool_step("document_search", json!({"query": "zebra"}), 5)]);
    s.save_trace(u, &trace).await.unwrap();
    let doc = NewArtifact {
        request_message_id: Some(question.id),
        assistant_message_id: Some(reply.id),
        ..new_artifact(t.id, "Zebra doc", "stripes")
    };
    let doc = s.create_artifact(u, doc).await.unwrap();
    let turn = Uuid::now_v7();
    s.begin_turn(u, t.id, turn, 60_000).await.unwrap();
    let events = vec![EventRun::single(1, "delta", "{}".into())];
    s.append_turn_events(turn, &events).await.unwrap();
    s.record_usage(u, t.id, "m", Usage { input_tokens: 1, output_tokens: 1 }).await.unwrap();
    let before = s.search(u, "zebra", 100, 0).await.unwrap();
    assert_eq!(before.total, 6, "{before:?}");

    s.delete_thread(u, t.id).await.unwrap();

    let raw = &db.raw;
    assert_eq!(raw.count("threads", "id", t.id).await, 0);
    assert_eq!(raw.count("messages", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("thread_tags", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("artifacts", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("artifact_versions", "artifact_id", doc.id).await, 0);
    assert_eq!(raw.count("turn_traces", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("turns", "thread_id", t.id).await, 0);
    assert_eq!(raw.count("turn_events", "turn_id", turn).await, 0);
    assert_eq!(s.turn_events_after(turn, 0).await.unwrap(), vec![]);

    // The search index forgot it too: `total` counts index entries, so a leftover would show there.
    let after = s.search(u, "zebra", 100, 0).await.unwrap();
    assert_eq!(after.total, 2, "{after:?}");
    assert!(after.hits.iter().all(|h| h.thread_id == keep.id));
    assert_eq!(s.search(u, "stripes", 10, 0).await.unwrap().total, 0);

    // The other thread is whole.
    assert_eq!(raw.count("thread_tags", "thread_id", keep.id).await, 1);
    assert_eq!(s.list_messages(u, keep.id).await.unwrap().len(), 1);
}

async fn listing_order_and_cursors(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let mut by_title = HashMap::new();
    for title in ["b", "B", "a", "é", "Z", "a"] {
        let t = s.create_thread(u, title, &[]).await.unwrap();
        by_title.entry(title).or_insert_with(Vec::new).push(t.id);
    }
    let pinned = s.create_thread(u, "zz pinned", &[]).await.unwrap();
    s.update_thread(u, pinned.id, &ThreadPatch { pinned: Some(true), ..Default::default() }).await.unwrap();

    // Pinned first; titles compare byte-wise on both backends; ties broken by id.
    let query = ThreadQuery { sort: ThreadSort::Title, descending: false, limit: 2, ..Default::default() };
    let titles: Vec<String> = all_threads(s, u, &query).await.into_iter().map(|t| t.title).collect();
    assert_eq!(titles, ["zz pinned", "B", "Z", "a", "a", "b", "é"]);
    let desc = ThreadQuery { descending: true, ..query.clone() };
    let titles: Vec<String> = all_threads(s, u, &desc).await.into_iter().map(|t| t.title).collect();
    assert_eq!(titles, ["zz pinned", "é", "b", "a", "a", "Z", "B"]);

    // Newest activity first by default.
    let newest = all_threads(s, u, &ThreadQuery::default()).await;
    assert_eq!(newest[0].id, pinned.id);
    assert_eq!(newest[1].title, "a");
    assert_eq!(newest.len(), 7);

    // A cursor of one sort does not fit another.
    let real = s.list_threads(u, &ThreadQuery { limit: 1, ..ThreadQuery::default() }).await.unwrap().next.unwrap();
    let cursor = ThreadCursor { key: CursorKey::Time(0), ..real.clone() };
    let wrong = s.list_threads(u, &ThreadQuery { cursor: Some(cursor), ..query.clone() }).await;
    assert!(matches!(wrong, Err(StoreError::InvalidCursor)), "{wrong:?}");
    let cursor = ThreadCursor { key: CursorKey::Text("a".into()), ..real.clone() };
    let wrong = s.list_threads(u, &ThreadQuery { cursor: Some(cursor), ..ThreadQuery::default() }).await;
    assert!(matches!(wrong, Err(StoreError::InvalidCursor)), "{wrong:?}");
    // A forged walk mark or none at all is refused too, never a database error.
    for walk in [None, Some(""), Some("x"), Some("1:2:3:4"), Some("'; drop table threads; --")] {
        let cursor = ThreadCursor { walk: walk.map(str::to_owned), ..real.clone() };
        let wrong = s.list_threads(u, &ThreadQuery { cursor: Some(cursor), ..ThreadQuery::default() }).await;
        assert!(matches!(wrong, Err(StoreError::InvalidCursor)), "{walk:?}: {wrong:?}");
    }
    // A walk that began too long ago has expired.
    let old = chrono::Utc::now().timestamp_micros() - (store::WALK_LIFETIME_DAYS * 86_400_000_000 + 1_000_000);
    let cursor = ThreadCursor { as_of: Some(old), ..real.clone() };
    let expired = s.list_threads(u, &ThreadQuery { cursor: Some(cursor), ..ThreadQuery::default() }).await;
    assert!(matches!(expired, Err(StoreError::ExpiredCursor)), "{expired:?}");
    assert!(s.list_threads(u, &ThreadQuery { cursor: Some(real), ..ThreadQuery::default() }).await.is_ok());

    // Limits are clamped to 1..=100.
    let one = s.list_threads(u, &ThreadQuery { limit: 0, ..ThreadQuery::default() }).await.unwrap();
    assert_eq!(one.threads.len(), 1);
    assert!(one.next.is_some());
}

/// The conversation's model and the person's default: set, kept by other changes, cleared, read together for a turn,
/// and another person's conversation lends its model to nobody.
async fn model_choices(db: Db) {
    let s = &db.store;
    let (u, other) = (new_user(s).await, new_user(s).await);
    let t = s.create_thread(u, "Plan", &[]).await.unwrap();
    assert_eq!(t.model, None);
    let chosen = ThreadPatch { model: Some("deep/quire-deep".into()), ..Default::default() };
    assert_eq!(s.update_thread(u, t.id, &chosen).await.unwrap().model.as_deref(), Some("deep/quire-deep"));
    let renamed = ThreadPatch { title: Some("Renamed".into()), ..Default::default() };
    assert_eq!(s.update_thread(u, t.id, &renamed).await.unwrap().model.as_deref(), Some("deep/quire-deep"));
    assert!(matches!(s.update_thread(other, t.id, &chosen).await, Err(StoreError::NotFound)));

    let change = wire::UpdateSettings { default_model: Some("fast/quire-fast".into()), ..Default::default() };
    assert_eq!(s.update_settings(u, &change).await.unwrap().default_model.as_deref(), Some("fast/quire-fast"));
    let theme = wire::UpdateSettings { theme: Some(wire::Theme::Dark), ..Default::default() };
    assert_eq!(s.update_settings(u, &theme).await.unwrap().default_model.as_deref(), Some("fast/quire-fast"));
    let read = s.turn_settings(u, t.id, u).await.unwrap();
    assert_eq!(read.thread_model.as_deref(), Some("deep/quire-deep"));
    assert_eq!(read.settings, s.settings(u).await.unwrap());
    let theirs = s.turn_settings(other, t.id, other).await.unwrap();
    assert_eq!((theirs.thread_model, theirs.settings.default_model), (None, None));

    let cleared = ThreadPatch { model: Some(String::new()), ..Default::default() };
    assert_eq!(s.update_thread(u, t.id, &cleared).await.unwrap().model, None);
    let back = wire::UpdateSettings { default_model: Some(String::new()), ..Default::default() };
    assert_eq!(s.update_settings(u, &back).await.unwrap().default_model, None);
    assert_eq!(s.turn_settings(u, t.id, u).await.unwrap().thread_model, None);

    // Whether files are attached (which decides the tools a turn offers): the conversation's own, never
    // another's.
    assert!(!s.turn_settings(u, t.id, u).await.unwrap().has_attachments);
    let file = store::NewAttachment {
        thread_id: t.id,
        filename: "plan.txt".into(),
        content_type: "text/plain".into(),
        size: 5,
        chunks: vec!["Plans".into()],
    };
    let limits = store::AttachmentLimits { per_thread: 20, user_bytes: None };
    let attached = s.create_attachment(u, file, limits).await.unwrap();
    let other_thread = s.create_thread(u, "Other", &[]).await.unwrap();
    assert!(s.turn_settings(u, t.id, u).await.unwrap().has_attachments);
    assert!(!s.turn_settings(u, other_thread.id, u).await.unwrap().has_attachments);
    assert!(!s.turn_settings(other, t.id, other).await.unwrap().has_attachments);
    s.delete_attachment(u, t.id, attached.id).await.unwrap();
    assert!(!s.turn_settings(u, t.id, u).await.unwrap().has_attachments);
}

/// What a turn reads besides the conversation: one read of a bare conversation is empty but for the settings; once
/// it holds a document and requirements, the same as the separate reads give; another person reads nothing of it.
async fn turn_reads_read_only_what_is_there(db: Db) {
    let s = &db.store;
    let (u, other) = (new_user(s).await, new_user(s).await);
    let t = s.create_thread(u, "Plan", &[]).await.unwrap();
    let limits = store::TurnReadLimits { documents: 50, document_text_chars: 16_000, project_ledgers: 10 };
    let bare = s.turn_reads(u, t.id, u, limits).await.unwrap();
    assert_eq!(bare.settings, s.turn_settings(u, t.id, u).await.unwrap());
    assert!(!bare.settings.has_artifacts && !bare.settings.has_requirements && !bare.settings.in_project);
    assert_eq!(bare.settings.thread_title.as_deref(), Some("Plan"));
    assert!(bare.documents.is_empty() && bare.ledger.requirements.is_empty() && bare.ledger.documents.is_empty());

    let write = |text: &str| store::LedgerWrite::Add {
        text: text.into(),
        kind: wire::RequirementKind::Functional,
        message_id: None,
    };
    let author = wire::VersionAuthor::Person { user_id: u };
    s.record_requirements(u, t.id, vec![write("Export to PDF"), write("Sign in with SSO")], author).await.unwrap();
    let ledger_only = s.turn_reads(u, t.id, u, limits).await.unwrap();
    assert!(ledger_only.settings.has_requirements && !ledger_only.settings.has_artifacts);
    assert_eq!(ledger_only.ledger.requirements.len(), 2, "requirements alone are read");
    assert!(ledger_only.documents.is_empty());

    s.create_artifact(u, new_artifact(t.id, "Stories", "# Stories\n\nAs a buyer...")).await.unwrap();
    let full = s.turn_reads(u, t.id, u, limits).await.unwrap();
    assert!(full.settings.has_requirements && full.settings.has_artifacts);
    assert_eq!(full.documents, s.artifact_briefs(u, t.id, 50, 16_000).await.unwrap());
    assert_eq!(full.documents.len(), 1);
    let separate = s.ledger_rows_without_tree(u, t.id).await.unwrap();
    let ids = |rows: &store::requirements::LedgerRows| {
        (
            rows.requirements.iter().map(|r| r.id).collect::<Vec<_>>(),
            rows.documents.iter().map(|d| d.id).collect::<Vec<_>>(),
        )
    };
    assert_eq!(ids(&full.ledger), ids(&separate));
    assert_eq!(full.ledger.documents.len(), 1);

    let theirs = s.turn_reads(other, t.id, other, limits).await.unwrap();
    assert!(!theirs.settings.has_artifacts && !theirs.settings.has_requirements);
    assert_eq!(theirs.settings.thread_title, None);
    assert!(theirs.documents.is_empty() && theirs.ledger.requirements.is_empty() && theirs.foreign.is_empty());
}
