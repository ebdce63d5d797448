//! Search: syntax, ranking, isolation, freshness.

use super::*;

stories!(
    search_phrases_prefixes_and_ranking,
    search_escapes_html,
    search_syntax_never_errors,
    search_sees_only_the_callers_rows,
    search_ranks_and_counts_the_newest_hits_of_a_common_word,
    search_follows_changes_at_once,
    answers_are_searchable_once_finished,
    answers_cut_off_while_written_become_searchable,
);

async fn search_phrases_prefixes_and_ranking(db: Db) {
    let (s, u, t) = someones_thread(&db, "Roadmap").await;
    let phrase = say(s, u, t.id, "We should support single sign on for the login page").await;
    let scattered = say(s, u, t.id, "sign the single page on login").await;
    let prefixed = say(s, u, t.id, "authentication with authorization tokens").await;
    let dense = answer(s, u, t.id, "rust rust rust is fast").await;
    let sparse = say(
        s,
        u,
        t.id,
        "rust appears once in this much longer message about many other unrelated topics like gardening cooking and travel",
    )
    .await;
    let doc = s.create_artifact(u, new_artifact(t.id, "Quarterly budget", "numbers inside")).await.unwrap();

    let found = s.search(u, r#""single sign on""#, 20, 0).await.unwrap();
    assert_eq!(found.total, 1, "{found:?}");
    let hit = &found.hits[0];
    assert_eq!((hit.kind, hit.message_id, hit.artifact_id), (HitKind::Message, Some(phrase.id), None));
    assert_eq!((hit.thread_id, hit.thread_title.as_str(), hit.role), (t.id, "Roadmap", Some(Role::User)));
    assert!(hit.snippet.contains("<mark>"), "{}", hit.snippet);
    assert!(unmarked(&hit.snippet).contains("single sign on"), "{}", hit.snippet);
    assert_eq!(hit.created_at, phrase.created_at);

    let words = s.search(u, "single sign", 20, 0).await.unwrap();
    let ids: HashSet<_> = words.hits.iter().filter_map(|h| h.message_id).collect();
    assert_eq!(ids, HashSet::from([phrase.id, scattered.id]));

    let prefix = s.search(u, "auth*", 20, 0).await.unwrap();
    assert_eq!(prefix.hits.iter().filter_map(|h| h.message_id).collect::<Vec<_>>(), vec![prefixed.id]);
    assert!(prefix.hits[0].snippet.contains("<mark>"), "{}", prefix.hits[0].snippet);
    assert_eq!(s.search(u, "authen", 20, 0).await.unwrap().total, 0, "a word without * is a whole word");

    // More occurrences in a shorter text rank first, whatever the insertion order.
    let ranked = s.search(u, "RUST", 20, 0).await.unwrap();
    assert_eq!(ranked.hits.iter().filter_map(|h| h.message_id).collect::<Vec<_>>(), vec![dense.id, sparse.id]);
    assert_eq!(ranked.hits[0].role, Some(Role::Assistant));
    assert_ordered(&ranked);
    let first = s.search(u, "rust", 1, 0).await.unwrap();
    let second = s.search(u, "rust", 1, 1).await.unwrap();
    assert_eq!((first.total, second.total), (2, 2));
    assert_eq!(first.hits[0].message_id, Some(dense.id));
    assert_eq!(second.hits[0].message_id, Some(sparse.id));
    let past_the_end = s.search(u, "rust", 10, 2).await.unwrap();
    assert!(past_the_end.hits.is_empty());
    assert_eq!(past_the_end.total, 2, "a page past the end still tells how many there are");

    let title = s.search(u, "roadmap", 20, 0).await.unwrap();
    assert_eq!(title.total, 1);
    assert_eq!((title.hits[0].kind, title.hits[0].message_id, title.hits[0].role), (HitKind::Thread, None, None));
    assert_eq!(title.hits[0].thread_id, t.id);
    assert_eq!(title.hits[0].snippet, "<mark>Roadmap</mark>");

    // A document matches on its title and content together.
    let across = s.search(u, "quarterly numbers", 20, 0).await.unwrap();
    assert_eq!(across.total, 1);
    assert_eq!((across.hits[0].kind, across.hits[0].artifact_id), (HitKind::Artifact, Some(doc.id)));
    assert_eq!(across.hits[0].thread_title, "Roadmap");

    for nothing in ["", "   ", "*", "\"\""] {
        let page = s.search(u, nothing, 20, 0).await.unwrap();
        assert_eq!((page.total, page.hits.len()), (0, 0), "{nothing:?}");
    }
}

async fn search_escapes_html(db: Db) {
    let (s, u, t) = someones_thread(&db, "Markup").await;
    say(s, u, t.id, "<script>alert('x')</script> if a < b && c > \"d\" then needle").await;
    say(s, u, t.id, "sentinel \u{2}needle\u{3} \u{3} characters \u{2} in stored text").await;
    let page = s.search(u, "needle", 10, 0).await.unwrap();
    assert_eq!(page.total, 2);
    for hit in &page.hits {
        let snippet = &hit.snippet;
        assert!(snippet.contains("<mark>needle</mark>"), "{snippet}");
        assert_eq!(snippet.matches("<mark>").count(), snippet.matches("</mark>").count(), "{snippet}");
        let text = unmarked(snippet);
        assert!(!text.contains(['<', '>', '"', '\'', '\u{2}', '\u{3}']), "unescaped markup in {snippet}");
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|e| entity.starts_with(e)),
                "bare & in {snippet}"
            );
        }
    }
}

async fn search_syntax_never_errors(db: Db) {
    let (s, u, t) = someones_thread(&db, "Syntax (test) \"quoted\"").await;
    say(s, u, t.id, "plain words, e-mail and C++ with 日本語 and a crab 🦀 plus x:y and a*b").await;
    let long_word = "a".repeat(3000);
    let many_words = "word ".repeat(100);
    let queries = [
        "\"",
        "\"\"",
        "*",
        "**",
        "(",
        ")",
        "()",
        "AND",
        "OR NOT",
        "NEAR(plain words)",
        "plain:words",
        "^plain",
        "-plain",
        "+plain",
        "'",
        "''",
        "\\",
        "\\'",
        "'; drop table users; --",
        "& | ! <->",
        ":*",
        "plain*words",
        "\"unterminated plain",
        "{}",
        "[]",
        "\0",
        "plain\0words",
        "e-mail",
        "C++",
        "日本語",
        "🦀",
        "x:y",
        "a*b",
        "body : plain",
        "owner : u1",
        "!plain",
        "plain & words",
        "plain | words",
        "plain <-> words",
        "plain:*",
        "'plain'",
        "$1",
        "?",
        "%",
        "_",
        long_word.as_str(),
        many_words.as_str(),
        "\u{2}\u{3}",
        "ÄÖÜ",
        "\t\n",
    ];
    for query in queries {
        let page = s.search(u, query, 10, 0).await.unwrap_or_else(|e| panic!("{query:?}: {e}"));
        assert!(page.total as usize >= page.hits.len(), "{query:?}");
        let terms = search_query::parse(query);
        for hit in &page.hits {
            let source = match hit.kind {
                HitKind::Message => s.get_message(u, hit.message_id.unwrap()).await.unwrap().content,
                HitKind::Thread => s.get_thread(u, hit.thread_id).await.unwrap().title,
                HitKind::Artifact => unreachable!("no documents here"),
            };
            assert!(search_query::matches(&terms, &source), "{query:?} matched {source:?}");
        }
    }
    // The phrase a hyphenated word becomes is found in both backends.
    assert_eq!(s.search(u, "e-mail", 10, 0).await.unwrap().total, 1);
    assert_eq!(s.search(u, "plain* words", 10, 0).await.unwrap().total, 1);
}

async fn search_sees_only_the_callers_rows(db: Db) {
    let s = &db.store;
    let mut owned: HashMap<Uuid, HashSet<Uuid>> = HashMap::new();
    let mut users = Vec::new();
    for n in 0..3 {
        let u = new_user(s).await;
        users.push(u);
        for i in 0..=n {
            let t = s.create_thread(u, &format!("shared topic {i}"), &[]).await.unwrap();
            say(s, u, t.id, "shared words about the shared topic").await;
            s.create_artifact(u, new_artifact(t.id, "shared doc", "shared body")).await.unwrap();
            owned.entry(u).or_default().insert(t.id);
        }
    }
    for (n, u) in users.iter().enumerate() {
        let page = s.search(*u, "shared", 100, 0).await.unwrap();
        assert_eq!(page.total as usize, 3 * (n + 1), "three hits per thread of one's own");
        assert_eq!(page.hits.len(), 3 * (n + 1));
        assert!(page.hits.iter().all(|h| owned[u].contains(&h.thread_id)));
        assert_ordered(&page);
    }
}

async fn search_ranks_and_counts_the_newest_hits_of_a_common_word(db: Db) {
    let (s, u, t) = someones_thread(&db, "Fruit").await;
    let n = RANKED_CANDIDATES as usize;
    // The best match of all, but older than the newest `n` hits.
    let oldest = say(s, u, t.id, "kiwi kiwi kiwi").await;
    let mut newest = Vec::new();
    for i in 0..n {
        let text =
            if i == n / 2 { "kiwi kiwi".to_string() } else { format!("a kiwi among many other words, number {i}") };
        newest.push(say(s, u, t.id, &text).await);
    }
    let rare = s.search(u, "number", 20, 0).await.unwrap();
    assert_eq!((rare.total, rare.total_is_lower_bound), (n as u64 - 1, false), "fewer hits than are ranked: exact");

    let page = s.search(u, "kiwi", 20, 0).await.unwrap();
    assert_eq!((page.total, page.total_is_lower_bound), (n as u64, true), "more hits than are ranked");
    assert_eq!(page.hits.len(), 20);
    assert_eq!(page.hits[0].message_id, Some(newest[n / 2].id), "the best of the newest hits first");
    assert!(page.hits.iter().all(|h| h.message_id != Some(oldest.id)), "older hits are not ranked");
    assert_ordered(&page);

    // A page that reaches past the candidates ranks and counts as many as it reaches: here all of them.
    let deep = s.search(u, "kiwi", 20, n as u32 - 10).await.unwrap();
    assert_eq!((deep.total, deep.total_is_lower_bound), (n as u64 + 1, false));
    assert_eq!(deep.hits.len(), 11);
    assert_eq!(s.search(u, "kiwi", 20, n as u32 + 1).await.unwrap().total, n as u64 + 1, "past the end");
    assert_eq!(deep.hits[10].message_id, Some(oldest.id), "the next window's best come after the newest hits");

    // Page after page: every hit once, each where the pages before put it, whichever pages reach it.
    let mut seen = Vec::new();
    for offset in (0..).step_by(30) {
        let page = s.search(u, "kiwi", 30, offset).await.unwrap();
        if page.hits.is_empty() {
            break;
        }
        seen.extend(page.hits.iter().map(|h| h.message_id.unwrap()));
    }
    assert_eq!(seen.len(), n + 1);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), n + 1, "no hit twice");
    let straddling = s.search(u, "kiwi", 20, n as u32 - 15).await.unwrap();
    let ids: Vec<Uuid> = straddling.hits.iter().map(|h| h.message_id.unwrap()).collect();
    assert_eq!(ids, seen[n - 15..], "a page across two windows");
}

async fn search_follows_changes_at_once(db: Db) {
    let (s, u, t) = someones_thread(&db, "Fresh").await;
    let m = answer(s, u, t.id, "brandnew").await;
    let page = s.search(u, "brandnew", 10, 0).await.unwrap();
    assert_eq!(page.hits.iter().map(|h| h.message_id).collect::<Vec<_>>(), vec![Some(m.id)]);

    let update = message_update("rewritten entirely", MessageStatus::Complete);
    s.update_message(u, m.id, &update).await.unwrap();
    assert_eq!(s.search(u, "brandnew", 10, 0).await.unwrap().total, 0);
    assert_eq!(s.search(u, "rewritten", 10, 0).await.unwrap().total, 1);

    s.update_thread(u, t.id, &ThreadPatch { title: Some("Renamed heading".into()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(s.search(u, "fresh", 10, 0).await.unwrap().total, 0);
    let renamed = s.search(u, "heading", 10, 0).await.unwrap();
    assert_eq!(renamed.hits.iter().map(|h| (h.kind, h.thread_id)).collect::<Vec<_>>(), vec![(HitKind::Thread, t.id)]);
    assert_eq!(s.search(u, "rewritten", 10, 0).await.unwrap().hits[0].thread_title, "Renamed heading");

    let doc = s.create_artifact(u, new_artifact(t.id, "Spec", "instantly findable")).await.unwrap();
    assert_eq!(s.search(u, "findable", 10, 0).await.unwrap().hits[0].artifact_id, Some(doc.id));
    s.delete_artifact(u, doc.id).await.unwrap();
    assert_eq!(s.search(u, "findable", 10, 0).await.unwrap().total, 0);

    s.delete_message(u, t.id, m.id, None).await.unwrap();
    assert_eq!(s.search(u, "rewritten", 10, 0).await.unwrap().total, 0);
}

async fn answers_are_searchable_once_finished(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let (a, b) = (s.create_thread(u, "One", &[]).await.unwrap(), s.create_thread(u, "Two", &[]).await.unwrap());
    let question = say(s, u, a.id, "Tell me about quokkas").await;
    let (turn_a, turn_b, answer_a, answer_b) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    s.begin_turn(u, a.id, turn_a, 60_000).await.unwrap();
    s.begin_turn(u, b.id, turn_b, 60_000).await.unwrap();

    // First saves, then rewrites (two answers in one batch, then one alone): stored and shown, never found.
    s.save_progress(&[answer_draft(turn_a, u, a.id, answer_a, "Quokkas live", true)]).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Quokkas live");
    assert_eq!(found(s, u, "quokkas").await, vec![Some(question.id)], "only the question");
    s.save_progress(&[
        answer_draft(turn_a, u, a.id, answer_a, "Quokkas live on Rottnest", true),
        answer_draft(turn_b, u, b.id, answer_b, "Wombats dig", true),
    ])
    .await
    .unwrap();
    s.save_progress(&[answer_draft(turn_a, u, a.id, answer_a, "Quokkas live on Rottnest Island", true)]).await.unwrap();
    assert_eq!(s.get_message(u, answer_a).await.unwrap().content, "Quokkas live on Rottnest Island");
    assert_eq!(found(s, u, "rottnest").await, vec![]);
    assert_eq!(found(s, u, "wombats").await, vec![]);
    assert_eq!(found(s, u, "quokkas").await, vec![Some(question.id)]);

    // The final save lets the whole answer in, once.
    s.save_progress(&[answer_draft(turn_a, u, a.id, answer_a, "Quokkas live on Rottnest Island.", false)])
        .await
        .unwrap();
    assert_eq!(found(s, u, "rottnest").await, vec![Some(answer_a)]);
    assert_eq!(found(s, u, "quokkas").await.len(), 2);
    assert_eq!(found(s, u, "wombats").await, vec![], "the other answer is still being written");

    // An answer finished at its first save is found at once; an edited answer is found by its new words only.
    let short = Uuid::now_v7();
    s.save_progress(&[answer_draft(turn_b, u, b.id, short, "Echidnas lay eggs", false)]).await.unwrap();
    assert_eq!(found(s, u, "echidnas").await, vec![Some(short)]);
    let edit = message_update("Platypuses too", MessageStatus::Complete);
    s.update_message(u, short, &edit).await.unwrap();
    assert_eq!(found(s, u, "echidnas").await, vec![]);
    assert_eq!(found(s, u, "platypuses").await, vec![Some(short)]);
}

async fn answers_cut_off_while_written_become_searchable(db: Db) {
    let s = &db.store;
    let u = new_user(s).await;
    let thread = |title: &'static str| async move { s.create_thread(u, title, &[]).await.unwrap().id };
    let (live, taken_over, closed, swept) =
        (thread("Live").await, thread("Taken over").await, thread("Closed").await, thread("Swept").await);
    let ids: Vec<(Uuid, Uuid)> = (0..4).map(|_| (Uuid::now_v7(), Uuid::now_v7())).collect();
    let words = ["aardvark", "bandicoot", "cassowary", "dingo"];
    for ((thread, (turn, answer)), word) in [live, taken_over, closed, swept].into_iter().zip(&ids).zip(words) {
        s.begin_turn(u, thread, *turn, 60_000).await.unwrap();
        s.save_progress(&[answer_draft(*turn, u, thread, *answer, word, true)]).await.unwrap();
        assert_eq!(found(s, u, word).await, vec![]);
    }
    // Every turn goes quiet but the live one.
    tokio::time::sleep(Duration::from_millis(600)).await;
    s.heartbeat_turns(&[ids[0].0]).await.unwrap();

    // Closing a turn whose final save never came: its last draft is found.
    s.finish_turn(ids[2].0, TurnEnd::default()).await.unwrap();
    assert_eq!(found(s, u, "cassowary").await, vec![Some(ids[2].1)]);

    // A new turn taking over a dead one: the dead one's draft is found.
    s.begin_turn(u, taken_over, Uuid::now_v7(), 300).await.unwrap();
    assert_eq!(found(s, u, "bandicoot").await, vec![Some(ids[1].1)]);

    // The sweep leaves the drafts of turns heard from lately alone and releases the rest.
    assert_eq!(s.release_abandoned_answers(60_000).await.unwrap(), 0);
    assert_eq!(found(s, u, "dingo").await, vec![]);
    assert_eq!(s.release_abandoned_answers(300).await.unwrap(), 1, "only the turn that went quiet");
    assert_eq!(found(s, u, "dingo").await, vec![Some(ids[3].1)]);
    assert_eq!(found(s, u, "aardvark").await, vec![], "a live turn's draft stays out");

    // A process that died while writing: opening the database again (SQLite) or the sweep at start-up
    // (PostgreSQL, several instances: only once no live turn holds the thread) lets the draft in.
    match &db.raw {
        Raw::Sqlite(_) => {
            let dir = db._dir.as_ref().expect("the SQLite file's directory");
            let reopened = store::connect(&crate::common::sqlite_url(dir.path())).await.expect("reopen");
            assert_eq!(found(&reopened, u, "aardvark").await, vec![Some(ids[0].1)]);
        }
        Raw::Postgres(_) => {
            tokio::time::sleep(Duration::from_millis(350)).await;
            assert_eq!(s.release_abandoned_answers(300).await.unwrap(), 1);
            assert_eq!(found(s, u, "aardvark").await, vec![Some(ids[0].1)]);
        }
    }
    assert_eq!(db.raw.int("select count(*) from messages where user_id = ? and writing", u).await, 0);
}
