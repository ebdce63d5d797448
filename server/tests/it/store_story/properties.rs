//! Properties of every backend, checked by proptest over generated inputs.

use super::*;

/// Cases per property: each case is a few dozen round trips to a real database.
const CASES: u32 = 16;

/// Words the generated texts and queries are made of: prefixes of each other, digits, and words that only
/// ever appear in queries, so searches have hits, misses and ties.
const WORDS: &[&str] = &[
    "rust",
    "rusty",
    "trust",
    "post",
    "postgres",
    "sqlite",
    "search",
    "searching",
    "alpha",
    "beta",
    "gamma",
    "x1",
    "42",
    "plan",
    "planet",
];

/// What stands between words. Both backends split on all of these the same way (HTML tags are left out on
/// purpose: PostgreSQL's parser drops `<b>` as a tag, SQLite indexes the `b`).
const SEPARATORS: &[&str] = &[" ", "  ", ", ", "\n", " & ", " \"", "\" ", " (", ") ", "! ", " - ", " < ", " > ", "'"];

/// Query pieces that are pure syntax to one backend or the other.
const NOISE: &[&str] = &["*", "(", ")", ":", "^", "-", "'", "\\", "&", "|", "!", "<->", ":*", "NEAR", "AND", "\""];

/// A text of vocabulary words and separators.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(WORDS), prop::sample::select(SEPARATORS)), 1..10)
        .prop_map(|parts| parts.into_iter().map(|(word, sep)| format!("{word}{sep}")).collect::<String>())
}

/// A search box input: words, prefixes, phrases and syntax noise.
fn query() -> impl Strategy<Value = String> {
    let word = prop::sample::select(WORDS).prop_map(String::from);
    let prefix = (prop::sample::select(WORDS), 1usize..4).prop_map(|(w, n)| format!("{}*", &w[..n.min(w.len())]));
    let phrase = (prop::sample::select(WORDS), prop::sample::select(WORDS)).prop_map(|(a, b)| format!("\"{a} {b}\""));
    let noise = prop::sample::select(NOISE).prop_map(String::from);
    prop::collection::vec(prop_oneof![4 => word, 3 => prefix, 2 => phrase, 1 => noise], 1..4)
        .prop_map(|parts| parts.join(" "))
}

/// Any text PostgreSQL can store (it has no NUL in text).
fn any_text() -> impl Strategy<Value = String> {
    "[^\u{0}]{0,60}"
}

properties!(
    users_are_isolated,
    messages_come_back_in_order,
    thread_delete_leaves_no_orphans,
    titles_are_deterministic,
    every_search_hit_matches,
    updated_at_never_precedes_created_at,
    tag_filter_requires_every_tag,
    message_count_is_the_real_count,
    pages_cover_the_listing_exactly,
    context_read_by_window_equals_building_from_every_message,
);

/// (1) Listings and searches only ever show the caller's rows.
fn users_are_isolated(backend: Backend, test: &str) {
    let strategy = prop::collection::vec((0usize..3, text(), text()), 1..8);
    check_property(backend, test, CASES, strategy, |db, threads| async move {
        let s = &db.store;
        let mut users = Vec::new();
        for _ in 0..3 {
            users.push(new_user(s).await);
        }
        let mut owned: Vec<HashSet<Uuid>> = vec![HashSet::new(); 3];
        for (owner, title, content) in &threads {
            let t = s.create_thread(users[*owner], title, &tags(&["shared"])).await.unwrap();
            say(s, users[*owner], t.id, content).await;
            s.create_artifact(users[*owner], new_artifact(t.id, title, content)).await.unwrap();
            owned[*owner].insert(t.id);
        }
        for (n, user) in users.iter().enumerate() {
            let listed: HashSet<Uuid> = all_thread_ids(s, *user, &ThreadQuery { limit: 3, ..Default::default() }).await;
            assert_eq!(listed, owned[n]);
            let tagged = ThreadQuery { tags: tags(&["shared"]), ..Default::default() };
            let tagged: HashSet<Uuid> = all_thread_ids(s, *user, &tagged).await;
            assert_eq!(tagged, owned[n]);
            for word in WORDS {
                let page = s.search(*user, word, 100, 0).await.unwrap();
                assert!(page.hits.iter().all(|h| owned[n].contains(&h.thread_id)), "{word}: {page:?}");
                assert!(page.total as usize <= 3 * owned[n].len());
            }
            // Everyone else's threads, reached by id, are missing.
            for thread in owned.iter().enumerate().filter(|(other, _)| *other != n).flat_map(|(_, ids)| ids) {
                assert_not_found(s.list_messages(*user, *thread).await);
                assert_not_found(s.get_thread(*user, *thread).await);
                assert_not_found(s.list_artifacts(*user, *thread).await);
            }
        }
    });
}

/// (2) Messages come back in the order they were appended, numbered 1..n, exactly as written.
fn messages_come_back_in_order(backend: Backend, test: &str) {
    let strategy = prop::collection::vec((any::<bool>(), any_text()), 0..15);
    check_property(backend, test, 24, strategy, |db, messages| async move {
        let (s, u, t) = someones_thread(&db, "Ordered").await;
        let mut appended = Vec::new();
        for (from_user, content) in &messages {
            let role = if *from_user { Role::User } else { Role::Assistant };
            appended.push(s.append_message(u, new_message(t.id, role, content)).await.unwrap());
        }
        let listed = s.list_messages(u, t.id).await.unwrap();
        assert_eq!(listed, appended);
        let contents: Vec<&String> = listed.iter().map(|m| &m.content).collect();
        assert_eq!(contents, messages.iter().map(|(_, c)| c).collect::<Vec<_>>());
        assert_eq!(listed.iter().map(|m| m.seq).collect::<Vec<_>>(), (1..=messages.len() as i64).collect::<Vec<_>>());
    });
}

/// (3) Deleting a thread leaves no row anywhere that belonged to it, and nothing to find.
fn thread_delete_leaves_no_orphans(backend: Backend, test: &str) {
    let strategy = (0usize..6, 0usize..4, prop::collection::vec("[a-z]{1,8}", 0..4), 0i64..5, any::<bool>());
    check_property(
        backend,
        test,
        CASES,
        strategy,
        |db, (messages, artifacts, thread_tags, events, running)| async move {
            let s = &db.store;
            let u = new_user(s).await;
            // A word no other case uses, to search for afterwards.
            let marker = format!("m{}", Uuid::new_v4().simple());
            let t = s.create_thread(u, &format!("doomed {marker}"), &thread_tags).await.unwrap();
            let keep = s.create_thread(u, "kept", &thread_tags).await.unwrap();
            say(s, u, keep.id, "kept message").await;
            let mut message_ids = Vec::new();
            for i in 0..messages {
                let m = say(s, u, t.id, &format!("{marker} number {i}")).await;
                let trace = trace_of(t.id, Some(m.id), vec![tool_step("save_artifact", json!({ "i": i }), 1)]);
                s.save_trace(u, &trace).await.unwrap();
                message_ids.push(m.id);
            }
            let mut artifact_ids = Vec::new();
            for i in 0..artifacts {
                let doc = NewArtifact {
                    request_message_id: message_ids.get(i).copied(),
                    ..new_artifact(t.id, &format!("{marker} doc"), "body")
                };
                artifact_ids.push(s.create_artifact(u, doc).await.unwrap().id);
            }
            let turn = Uuid::now_v7();
            s.begin_turn(u, t.id, turn, 60_000).await.unwrap();
            let batch: Vec<EventRun> =
                (1..=events).map(|seq| EventRun::single(seq, "delta", seq.to_string())).collect();
            s.append_turn_events(turn, &batch).await.unwrap();
            if !running {
                s.finish_turn(turn, TurnEnd::default()).await.unwrap();
            }

            s.delete_thread(u, t.id).await.unwrap();

            let raw = &db.raw;
            for (table, column) in [("threads", "id"), ("messages", "thread_id"), ("artifacts", "thread_id")] {
                assert_eq!(raw.count(table, column, t.id).await, 0, "{table}");
            }
            for (table, column) in [("thread_tags", "thread_id"), ("turns", "thread_id")] {
                assert_eq!(raw.count(table, column, t.id).await, 0, "{table}");
            }
            assert_eq!(raw.count("turn_events", "turn_id", turn).await, 0);
            assert_eq!(raw.count("turn_traces", "thread_id", t.id).await, 0);
            for id in &artifact_ids {
                assert_eq!(raw.count("artifact_versions", "artifact_id", *id).await, 0);
            }
            let page = s.search(u, &marker, 100, 0).await.unwrap();
            assert_eq!((page.total, page.hits.len()), (0, 0), "{page:?}");
            assert_eq!(s.latest_turn(u, t.id).await.unwrap(), None);
            assert_eq!(s.get_thread(u, keep.id).await.unwrap().message_count, 1);
            assert_eq!(
                s.get_thread(u, keep.id).await.unwrap().tags.len(),
                thread_tags.iter().collect::<HashSet<_>>().len()
            );
        },
    );
}

/// (4) A title made from a message is the same every time, short, and stored as made.
fn titles_are_deterministic(backend: Backend, test: &str) {
    check_property(backend, test, 24, any_text(), |db, content| async move {
        let title = store::title_from_message(&content);
        assert_eq!(title, store::title_from_message(&content));
        assert!(!title.is_empty());
        assert!(title.chars().count() <= 80, "{title:?}");
        assert!(title.split_whitespace().count() <= 5, "{title:?}");
        let (s, u, t) = someones_thread(&db, &title).await;
        assert_eq!(t.title, title);
        assert_eq!(s.get_thread(u, t.id).await.unwrap().title, title);
    });
}

/// (5) Every hit matches the query by [`search_query::matches`], and every matching text is found: the total
/// counts exactly the texts that match. Hits come best first.
fn every_search_hit_matches(backend: Backend, test: &str) {
    let strategy = (prop::collection::vec((0u8..3, text()), 1..10), prop::collection::vec(query(), 1..6));
    check_property(backend, test, CASES, strategy, |db, (docs, queries)| async move {
        let (s, u, container) = someones_thread(&db, "Container").await;
        // What each hit's text is, by the id the hit carries.
        let mut sources: HashMap<(HitKind, Uuid), String> = HashMap::new();
        sources.insert((HitKind::Thread, container.id), container.title.clone());
        for (kind, text) in &docs {
            match kind {
                0 => {
                    let m = say(s, u, container.id, text).await;
                    sources.insert((HitKind::Message, m.id), text.clone());
                }
                1 => {
                    let t = s.create_thread(u, text, &[]).await.unwrap();
                    sources.insert((HitKind::Thread, t.id), text.clone());
                }
                _ => {
                    let doc = s.create_artifact(u, new_artifact(container.id, "Doc", text)).await.unwrap();
                    sources.insert((HitKind::Artifact, doc.id), format!("Doc\n{text}"));
                }
            }
        }
        for query in &queries {
            let terms = search_query::parse(query);
            let page = s.search(u, query, 100, 0).await.unwrap_or_else(|e| panic!("{query:?}: {e}"));
            for hit in &page.hits {
                let id = match hit.kind {
                    HitKind::Message => hit.message_id.unwrap(),
                    HitKind::Thread => hit.thread_id,
                    HitKind::Artifact => hit.artifact_id.unwrap(),
                };
                let source = &sources[&(hit.kind, id)];
                assert!(search_query::matches(&terms, source), "{query:?} ({terms:?}) hit {source:?}");
                assert!(hit.snippet.contains("<mark>"), "{query:?}: {}", hit.snippet);
            }
            let expected = if terms.is_empty() {
                0
            } else {
                sources.values().filter(|text| search_query::matches(&terms, text)).count()
            };
            assert_eq!(page.total as usize, expected, "{query:?} ({terms:?}): {page:?}");
            assert_eq!(page.hits.len(), expected);
            assert_eq!(
                page.hits
                    .iter()
                    .map(|h| (h.kind, h.message_id, h.artifact_id, h.thread_id))
                    .collect::<HashSet<_>>()
                    .len(),
                expected
            );
            assert_ordered(&page);
        }
    });
}

#[derive(Debug, Clone)]
enum ThreadOp {
    Append(String),
    Rename(String),
    Pin(bool),
    Archive(bool),
    Retag(Vec<String>),
    DeleteFirstMessage,
    Usage(u32),
    Document,
    Pause,
}

fn thread_op() -> impl Strategy<Value = ThreadOp> {
    prop_oneof![
        3 => any_text().prop_map(ThreadOp::Append),
        1 => "[a-z ]{1,20}".prop_map(ThreadOp::Rename),
        1 => any::<bool>().prop_map(ThreadOp::Pin),
        1 => any::<bool>().prop_map(ThreadOp::Archive),
        1 => prop::collection::vec("[a-z]{1,6}", 0..3).prop_map(ThreadOp::Retag),
        1 => Just(ThreadOp::DeleteFirstMessage),
        1 => (0u32..1000).prop_map(ThreadOp::Usage),
        1 => Just(ThreadOp::Document),
        1 => Just(ThreadOp::Pause),
    ]
}

/// (6) Whatever happens to a thread, its `updated_at` never goes back and never precedes `created_at`.
fn updated_at_never_precedes_created_at(backend: Backend, test: &str) {
    check_property(backend, test, CASES, prop::collection::vec(thread_op(), 1..12), |db, ops| async move {
        let (s, u, t) = someones_thread(&db, "Timed").await;
        let mut last = t.updated_at;
        for op in &ops {
            match op {
                ThreadOp::Append(text) => drop(say(s, u, t.id, text).await),
                ThreadOp::Rename(title) => {
                    s.update_thread(u, t.id, &ThreadPatch { title: Some(title.clone()), ..Default::default() })
                        .await
                        .unwrap();
                }
                ThreadOp::Pin(on) => {
                    s.update_thread(u, t.id, &ThreadPatch { pinned: Some(*on), ..Default::default() }).await.unwrap();
                }
                ThreadOp::Archive(on) => {
                    s.update_thread(u, t.id, &ThreadPatch { archived: Some(*on), ..Default::default() }).await.unwrap();
                }
                ThreadOp::Retag(new_tags) => {
                    s.update_thread(u, t.id, &ThreadPatch { tags: Some(new_tags.clone()), ..Default::default() })
                        .await
                        .unwrap();
                }
                ThreadOp::DeleteFirstMessage => {
                    if let Some(first) = s.list_messages(u, t.id).await.unwrap().first() {
                        s.delete_message(u, t.id, first.id, None).await.unwrap();
                    }
                }
                ThreadOp::Usage(n) => {
                    let usage = Usage { input_tokens: u64::from(*n), output_tokens: 1 };
                    s.record_usage(u, t.id, "m", usage).await.unwrap();
                }
                ThreadOp::Document => drop(s.create_artifact(u, new_artifact(t.id, "d", "e")).await.unwrap()),
                ThreadOp::Pause => tokio::time::sleep(Duration::from_millis(2)).await,
            }
            let now = s.get_thread(u, t.id).await.unwrap();
            assert_eq!(now.created_at, t.created_at);
            assert!(now.updated_at >= now.created_at, "{op:?}: {now:?}");
            assert!(now.updated_at >= last, "{op:?} moved updated_at back");
            last = now.updated_at;
        }
        assert_eq!(db.raw.int("select count(*) from threads where id = ? and updated_at < created_at", t.id).await, 0);
    });
}

/// (8) A tag filter returns exactly the threads carrying every requested tag.
fn tag_filter_requires_every_tag(backend: Backend, test: &str) {
    const TAGS: &[&str] = &["red", "green", "blue", "cyan"];
    let tag_set = || prop::collection::btree_set(prop::sample::select(TAGS), 0..4);
    let strategy = (prop::collection::vec(tag_set(), 0..10), tag_set(), 1u32..5);
    check_property(backend, test, 24, strategy, |db, (threads, wanted, limit)| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let mut expected = HashSet::new();
        for thread_tags in &threads {
            let names: Vec<String> = thread_tags.iter().map(|t| t.to_string()).collect();
            let t = s.create_thread(u, "tagged", &names).await.unwrap();
            if wanted.is_subset(thread_tags) {
                expected.insert(t.id);
            }
        }
        let query = ThreadQuery { tags: wanted.iter().map(|t| t.to_string()).collect(), limit, ..Default::default() };
        let listed = all_threads(s, u, &query).await;
        let ids: HashSet<Uuid> = listed.iter().map(|t| t.id).collect();
        assert_eq!(ids.len(), listed.len(), "duplicates");
        assert_eq!(ids, expected, "wanted {wanted:?}");
        for thread in &listed {
            assert!(wanted.iter().all(|w| thread.tags.iter().any(|t| t == w)), "{thread:?}");
        }
    });
}

/// (9) `message_count` is the number of messages, whatever was appended and deleted (a message with everything
/// after it on its branches), and seqs never repeat.
fn message_count_is_the_real_count(backend: Backend, test: &str) {
    let op = prop_oneof![2 => Just(None), 1 => (0usize..20).prop_map(Some)];
    check_property(backend, test, 24, prop::collection::vec(op, 0..25), |db, ops| async move {
        let (s, u, t) = someones_thread(&db, "Counted").await;
        // Every message with its number and parent.
        let mut model: Vec<(Uuid, i64, Option<Uuid>)> = Vec::new();
        let mut next_seq = 1;
        for op in &ops {
            match op {
                None => {
                    let m = say(s, u, t.id, "counted").await;
                    assert_eq!(m.seq, next_seq);
                    assert!(
                        m.parent_id.is_none_or(|p| model.iter().any(|(id, ..)| *id == p)),
                        "a parent that is there"
                    );
                    next_seq += 1;
                    model.push((m.id, m.seq, m.parent_id));
                }
                Some(i) if !model.is_empty() => {
                    let (id, ..) = model[i % model.len()];
                    let mut gone = HashSet::from([id]);
                    for (m, _, parent) in &model {
                        if parent.is_some_and(|p| gone.contains(&p)) {
                            gone.insert(*m);
                        }
                    }
                    assert_eq!(s.delete_message(u, t.id, id, None).await.unwrap(), gone.len() as u64);
                    model.retain(|(m, ..)| !gone.contains(m));
                }
                Some(_) => assert_not_found(s.delete_message(u, t.id, Uuid::now_v7(), None).await),
            }
            assert_eq!(s.get_thread(u, t.id).await.unwrap().message_count, model.len() as i64);
        }
        let listed: Vec<(Uuid, i64, Option<Uuid>)> =
            s.list_messages(u, t.id).await.unwrap().iter().map(|m| (m.id, m.seq, m.parent_id)).collect();
        assert_eq!(listed, model);
        assert_eq!(db.raw.count("messages", "thread_id", t.id).await, model.len() as i64);
    });
}

/// A change made to the listing while a walk through its pages goes on.
#[derive(Debug, Clone)]
enum Change {
    Create(&'static str),
    Message(usize),
    Rename(usize, &'static str),
    Pin(usize),
    Archive(usize, bool),
    Tag(usize, bool),
    Delete(usize),
}

#[derive(Debug, Clone)]
struct Paging {
    /// Title (few distinct ones, so sort keys tie), pinned flag and whether it carries the tag "x", per thread.
    threads: Vec<(String, bool, bool)>,
    page_size: u32,
    sort: ThreadSort,
    descending: bool,
    /// List only the threads tagged "x".
    filter: bool,
    /// The changes made before fetching each page after the first; indexes pick an original thread.
    changes: Vec<Vec<Change>>,
}

fn paging() -> impl Strategy<Value = Paging> {
    const TITLES: &[&str] = &["a", "b", "B", "é", "a b"];
    let thread = (prop::sample::select(TITLES), prop::bool::weighted(0.2), any::<bool>());
    let sort = prop::sample::select(&[ThreadSort::UpdatedAt, ThreadSort::CreatedAt, ThreadSort::Title][..]);
    let change = prop_oneof![
        1 => prop::sample::select(TITLES).prop_map(Change::Create),
        3 => any::<usize>().prop_map(Change::Message),
        1 => (any::<usize>(), prop::sample::select(TITLES)).prop_map(|(i, t)| Change::Rename(i, t)),
        1 => any::<usize>().prop_map(Change::Pin),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, b)| Change::Archive(i, b)),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, b)| Change::Tag(i, b)),
        1 => any::<usize>().prop_map(Change::Delete),
    ];
    let changes = prop::collection::vec(prop::collection::vec(change, 0..4), 0..8);
    (prop::collection::vec(thread, 0..20), 1u32..8, sort, any::<bool>(), prop::bool::weighted(0.3), changes).prop_map(
        |(threads, page_size, sort, descending, filter, changes)| Paging {
            threads: threads.into_iter().map(|(t, p, x)| (t.to_string(), p, x)).collect(),
            page_size,
            sort,
            descending,
            filter,
            changes,
        },
    )
}

/// (10) Walking the pages gives exactly the unpaginated listing, in order, without duplicates or gaps; with
/// threads added, given messages, renamed, pinned, archived, re-tagged or deleted between pages, the walk
/// still gives the listing as it was when it began, in that order, less the deleted threads.
fn pages_cover_the_listing_exactly(backend: Backend, test: &str) {
    check_property(backend, test, 32, paging(), |db, paging| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let mut ids = Vec::new();
        for (title, pinned, x) in &paging.threads {
            let tags = if *x { tags(&["x"]) } else { Vec::new() };
            let t = s.create_thread(u, title, &tags).await.unwrap();
            if *pinned {
                s.update_thread(u, t.id, &ThreadPatch { pinned: Some(true), ..Default::default() }).await.unwrap();
            }
            ids.push(t.id);
        }
        let base = ThreadQuery {
            sort: paging.sort,
            descending: paging.descending,
            tags: if paging.filter { tags(&["x"]) } else { Vec::new() },
            ..Default::default()
        };
        let everything = s.list_threads(u, &ThreadQuery { limit: 100, ..base.clone() }).await.unwrap();
        assert!(everything.next.is_none());
        let expected: Vec<Uuid> = everything.threads.iter().map(|t| t.id).collect();

        // Undisturbed: the same list, in the same order.
        let paged: Vec<Uuid> = all_thread_ids(s, u, &ThreadQuery { limit: paging.page_size, ..base.clone() }).await;
        assert_eq!(paged, expected);

        // With changes between pages: the listing as it was, less what was deleted.
        let mut query = ThreadQuery { limit: paging.page_size, ..base.clone() };
        let mut seen = Vec::new();
        let mut deleted = HashSet::new();
        let mut changes = paging.changes.iter();
        for pages in 1.. {
            assert!(pages <= 200, "the walk does not end");
            let page = s.list_threads(u, &query).await.unwrap();
            assert!(page.threads.len() <= paging.page_size as usize);
            seen.extend(page.threads.iter().map(|t| t.id));
            let Some(next) = page.next else { break };
            query.cursor = Some(next);
            for change in changes.next().into_iter().flatten() {
                let pick = |i: &usize| (!ids.is_empty()).then(|| ids[i % ids.len()]).filter(|id| !deleted.contains(id));
                let patch = |i: &usize, patch: ThreadPatch| pick(i).map(|id| (id, patch));
                let update = match change {
                    Change::Create(title) => {
                        s.create_thread(u, title, &tags(&["x"])).await.unwrap();
                        None
                    }
                    Change::Message(i) => {
                        if let Some(id) = pick(i) {
                            say(s, u, id, "between pages").await;
                        }
                        None
                    }
                    Change::Rename(i, title) => {
                        patch(i, ThreadPatch { title: Some(title.to_string()), ..Default::default() })
                    }
                    Change::Pin(i) => match pick(i) {
                        Some(id) => {
                            let pinned = !s.get_thread(u, id).await.unwrap().pinned;
                            patch(i, ThreadPatch { pinned: Some(pinned), ..Default::default() })
                        }
                        None => None,
                    },
                    Change::Archive(i, on) => patch(i, ThreadPatch { archived: Some(*on), ..Default::default() }),
                    Change::Tag(i, on) => {
                        let tags = if *on { tags(&["x", "y"]) } else { tags(&["y"]) };
                        patch(i, ThreadPatch { tags: Some(tags), ..Default::default() })
                    }
                    Change::Delete(i) => {
                        if let Some(id) = pick(i) {
                            s.delete_thread(u, id).await.unwrap();
                            deleted.insert(id);
                        }
                        None
                    }
                };
                if let Some((id, patch)) = update {
                    s.update_thread(u, id, &patch).await.unwrap();
                }
            }
        }
        // A thread deleted after its page was read has come already; all others come iff not deleted.
        let mut rest = expected.iter();
        assert!(seen.iter().all(|id| rest.any(|e| e == id)), "not the start's listing in its order: {seen:?}");
        let alive = |ids: &[Uuid]| ids.iter().copied().filter(|id| !deleted.contains(id)).collect::<Vec<_>>();
        assert_eq!(alive(&seen), alive(&expected), "the walk differs from the listing at its start");
    });
}

/// (10) The model's view of a long thread, read from a window of its newest messages (the rest by id and role
/// only), is exactly the view built from every message: the same messages sent, the same record. With the
/// person's next message pending (read while its start commits), the view is the same whether the commit has
/// landed or not, and is the view of every message followed by it. Built from what a turn keeps in memory (what
/// it read, with its question and answer added), the next turn's view is the one read from the store.
fn context_read_by_window_equals_building_from_every_message(backend: Backend, test: &str) {
    use quire::chat::context::{self, ContextInput};
    use quire::chat::memory::Basis;
    use store::history::{ImportArtifact, ImportMessage, ImportThread, ImportVersion};
    // Per turn: words of the answer, a blank answer, a fulfilled request (a document was made from it).
    let turn = (1usize..150, prop::bool::weighted(0.05), prop::bool::weighted(0.1));
    let strategy = (prop::collection::vec(turn, 100..700), 50usize..60_000);
    check_property(backend, test, 6, strategy, |db, (turns, budget)| async move {
        let s = &db.store;
        let u = new_user(s).await;
        let start = chrono::Utc::now() - chrono::Duration::days(1);
        let mut messages = Vec::new();
        let mut artifacts = Vec::new();
        let words =
            |n: usize, seed: usize| (0..n).map(|k| format!("w{}", (k * 7 + seed) % 97)).collect::<Vec<_>>().join(" ");
        for (i, (answer_words, blank, fulfilled)) in turns.iter().enumerate() {
            let at = start + chrono::Duration::seconds(i as i64);
            let request = messages.len();
            for (role, content) in [
                (Role::User, words(5 + i % 40, i)),
                (Role::Assistant, if *blank { String::new() } else { words(*answer_words, i + 1) }),
            ] {
                messages.push(ImportMessage::new(messages.len() as i64 + 1, role, content, at));
            }
            if *fulfilled {
                artifacts.push(ImportArtifact {
                    artifact_type: ArtifactType::UserStories,
                    request_message: Some(request),
                    assistant_message: Some(request + 1),
                    earlier: Vec::new(),
                    current: ImportVersion::new(1, format!("Stories {i}"), "# Stories", at),
                });
            }
        }
        let thread = ImportThread::new("Long", start, messages, artifacts);
        let id = s.import_threads(u, vec![thread]).await.unwrap()[0].id;

        let loaded = context::load(s.as_ref(), u, id, budget, None, None, None).await.unwrap();
        let kept = (loaded.materials.clone(), loaded.stamp);
        let again = context::load(s.as_ref(), u, id, budget, None, None, Some(kept.clone())).await.unwrap();
        assert_eq!(again.built, loaded.built, "built again from what was read");
        let read = loaded.built;
        let every = s.list_messages(u, id).await.unwrap();
        let fulfilled: Vec<Uuid> = s.fulfilled_requests(u, id).await.unwrap().iter().map(|f| f.request).collect();
        let whole = context::build(ContextInput {
            messages: &every,
            fulfilled: &fulfilled,
            summary: None,
            budget,
            ephemeral: None,
        });
        assert_eq!(read.record, whole.record, "budget {budget}");
        let sent =
            |built: &context::BuiltContext| built.messages.iter().map(|m| (m.role, m.text())).collect::<Vec<_>>();
        assert_eq!(sent(&read), sent(&whole), "budget {budget}");
        assert!(!sent(&read).iter().any(|(_, text)| text.contains('\u{2026}')), "no placeholder reaches the model");

        let next = NewMessage {
            thread_id: id,
            role: Role::User,
            content: words(12, turns.len()),
            status: MessageStatus::Complete,
            usage: Usage::default(),
            model: None,
            quote: None,
            author: None,
        };
        let pending = context::pending_message(Uuid::now_v7(), id, &next.content);
        let before = context::load(s.as_ref(), u, id, budget, None, Some(&pending), None).await.unwrap().built;
        let from_memory = context::load(s.as_ref(), u, id, budget, None, Some(&pending), Some(kept)).await.unwrap();
        assert_eq!(from_memory.built, before, "budget {budget}");
        let start = TurnStart {
            user: u,
            sender: u,
            thread: id,
            turn: Uuid::now_v7(),
            stale_after_ms: 60_000,
            request: Some(next),
            message_id: pending.id,
        };
        let turn = start.turn;
        let started = s.start_turn_stamped(start, &TurnLimits::default()).await.unwrap();
        let saved = started.message.expect("the message is saved");
        assert_eq!(saved.id, pending.id, "saved under the id the start chose");
        assert_eq!(started.before, Some(from_memory.stamp), "what was read is the thread the start found");
        let read_after = context::load(s.as_ref(), u, id, budget, None, Some(&pending), None).await.unwrap();
        let basis = Basis { materials: from_memory.materials, stamp: from_memory.stamp, from_memory: true };
        assert!(basis.current(started.before, Some(&saved)));
        let after = read_after.built;
        assert_eq!(before.record, after.record, "budget {budget}");
        assert_eq!(sent(&before), sent(&after), "budget {budget}");
        let every_then_pending: Vec<Message> = every.iter().cloned().chain([pending.clone()]).collect();
        let whole = context::build(ContextInput {
            messages: &every_then_pending,
            fulfilled: &fulfilled,
            summary: None,
            budget,
            ephemeral: None,
        });
        assert_eq!(after.record, whole.record, "budget {budget}");
        assert_eq!(sent(&after), sent(&whole), "budget {budget}");
        // (After a blank answer, the request before it joins the pending message.)
        let last = after.messages.last().map(|m| m.text()).unwrap_or_default();
        assert!(last.ends_with(&pending.content), "the pending message goes last: {last}");

        // The turn ends with its answer; what it keeps builds the next turn's view as the store does.
        let answer_id = Uuid::now_v7();
        let draft = answer_draft(turn, u, id, answer_id, &words(30, 7), false).answer.unwrap();
        let end = TurnEnd {
            answer: Some(FinalAnswer { user: u, draft: draft.clone(), artifacts: Vec::new() }),
            ..TurnEnd::default()
        };
        let ended = s.finish_turn_stamped(turn, end).await.unwrap().expect("the answer is saved");
        let answer = s.get_message(u, answer_id).await.unwrap();
        let (materials, stamp) =
            basis.after_turn(started.before, &saved, &answer, ended).expect("nothing else was written");
        assert_eq!(stamp, s.thread_stamp(u, id).await.unwrap());
        let next = context::pending_message(Uuid::now_v7(), id, &words(5, 3));
        let stored = context::load(s.as_ref(), u, id, budget, None, Some(&next), None).await.unwrap();
        let kept = context::load(s.as_ref(), u, id, budget, None, Some(&next), Some((materials, stamp))).await.unwrap();
        assert_eq!(kept.built, stored.built, "budget {budget}");
    });
}
