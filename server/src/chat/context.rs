//! What the model sees of a conversation.
//!
//! The model sees the conversation's active path only (see [`store::Tree`]), and de-duplication follows
//! it: a document made on another branch fulfils no request of this one ([`fulfilled_on`]).
//!
//! Filter first, then truncate: a request that already produced a document (an artifact points at it through
//! `request_message_id`) is removed together with the answer(s) of its turn, so the model can never act on it
//! again. What is left is cut to the token budget from the newest turn backwards; the latest request is always
//! kept, a short note stands in for what was dropped, and the roles stay valid for every provider (the first
//! message is the user's, consecutive messages of one role are merged). The database is never changed.
//!
//! What the model sees may still hold requests for documents that none answers: one whose turn failed, or whose
//! document was deleted. They are named in [`BuiltContext::open_requests`] with the kinds they ask for, so a
//! document of such a kind made in this turn answers them too, and no later turn acts on them again.

use std::collections::{HashMap, HashSet};

use uuid::Uuid;
pub use wire::ContextRecord;
use wire::{Artifact, ArtifactType, Message, Role};

use analysis::requests::requested_artifacts;
use llm::tokens::{count_message_tokens, count_tokens};
use llm::Part;
use store::{Fulfilment, MessageHead, Store, StoreError, ThreadStamp, Tree};

/// Default token budget for the conversation sent to the model.
pub const DEFAULT_BUDGET: usize = 24_000;

/// What the context is built from.
#[derive(Debug, Clone, Copy)]
pub struct ContextInput<'a> {
    /// The thread's messages in order.
    pub messages: &'a [Message],
    /// Requests that produced a document or a later version of one (see [`fulfilled_by`]).
    pub fulfilled: &'a [Uuid],
    /// The thread summary, used in the note for dropped turns.
    pub summary: Option<&'a str>,
    pub budget: usize,
    /// Text appended to the last user message and never stored (silent generation).
    pub ephemeral: Option<&'a str>,
}

/// The built context: messages for the model and the record of how they were chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltContext {
    pub messages: Vec<llm::Message>,
    pub record: ContextRecord,
    /// The requests for documents among the person's messages the model sees, in order.
    pub open_requests: Vec<OpenRequest>,
    /// The messages left out to fit the budget (as in [`ContextRecord::truncated`]), in order.
    pub dropped: Vec<MessageHead>,
    /// The number of every message the context was built from, in order.
    seqs: Vec<i64>,
    /// The messages it was built from: the shown path (what a document of another branch is not on).
    pub path: HashSet<Uuid>,
}

impl BuiltContext {
    /// How many of the messages it was built from are numbered `seq` or lower.
    pub fn messages_through(&self, seq: i64) -> usize {
        self.seqs.partition_point(|s| *s <= seq)
    }

    /// Whether the message numbered `seq` is one it was built from (numbers are unique in a conversation, and
    /// a message's earlier ones on its path are its ancestors: so whatever covers the path through that
    /// message covers this path's beginning, and nothing of another branch).
    pub fn has_message_numbered(&self, seq: i64) -> bool {
        self.seqs.binary_search(&seq).is_ok()
    }

    /// Puts `summary` into the note that stands in for the dropped turns (nothing when none were dropped).
    pub fn carry_summary(&mut self, summary: &str) {
        if self.record.truncated.is_empty() {
            return;
        }
        let note = note_text(self.record.truncated.len(), Some(summary));
        let before = self.record.note.as_deref().map(count_tokens).unwrap_or(0);
        self.record.tokens = self.record.tokens - before + count_tokens(&note);
        // The note is always the first part of the first message (see `build`).
        if let Some(Part::Text { text }) = self.messages.first_mut().and_then(|m| m.parts.first_mut()) {
            *text = note.clone();
        }
        self.record.note = Some(note);
    }
}

/// The note that stands in for `dropped` messages, with the conversation's summary when there is one.
fn note_text(dropped: usize, summary: Option<&str>) -> String {
    let mut note = format!("[{dropped} earlier messages of this conversation are not shown.");
    // The summary on lines of its own, so its last sentence does not run into the closing bracket.
    if let Some(summary) = summary.map(str::trim).filter(|s| !s.is_empty()) {
        note.push_str(&format!(" Summary of the conversation so far:\n{summary}\n"));
    }
    note.push(']');
    note
}

/// A person's message the model sees that asks for documents no document answers yet: a request that failed,
/// or whose document was deleted, or the one of this turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRequest {
    pub message: Uuid,
    /// The kinds of document it asks for, in the order it names them.
    pub types: Vec<ArtifactType>,
}

/// A user message and the answers that followed it.
struct Turn<'a> {
    messages: Vec<&'a Message>,
    tokens: usize,
}

/// The requests these documents were made from: what [`ContextInput::fulfilled`] holds for a thread whose
/// documents have no later versions.
pub fn fulfilled_by(artifacts: &[Artifact]) -> Vec<Uuid> {
    artifacts.iter().filter_map(|a| a.request_message_id).collect()
}

/// The requests fulfilled on a path (`on_path`: its messages): those whose document an answer on it made, or an
/// answer not known (one still being written, or gone). A document made on another branch fulfils nothing here,
/// so a request answered again on a branch of its own is acted on again.
pub fn fulfilled_on(fulfilments: &[Fulfilment], on_path: &HashSet<Uuid>) -> Vec<Uuid> {
    fulfilments.iter().filter(|f| f.made_by.is_none_or(|m| on_path.contains(&m))).map(|f| f.request).collect()
}

/// Messages read with their text at first when the context of a long thread is built; the window grows
/// fourfold until the budget runs out inside it.
const FIRST_WINDOW: usize = 256;

/// What the model's view of a conversation is built from: its shape, the requests its documents answer and the
/// text of its newest messages. Read from the store, or kept in memory from the conversation's last turn (see
/// [`super::memory`]).
#[derive(Debug, Clone)]
pub struct Materials {
    tree: Tree,
    fulfilments: Vec<Fulfilment>,
    /// Every message numbered `texts_from` or later, of every branch, in order, with its text.
    texts: Vec<Message>,
    texts_from: i64,
}

impl Materials {
    /// The conversation's shape, every branch.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// Nothing read yet, for `tree` and `fulfilments`.
    fn of(tree: Tree, fulfilments: Vec<Fulfilment>) -> Self {
        Self { tree, fulfilments, texts: Vec::new(), texts_from: i64::MAX }
    }

    /// The materials once a turn added `question` (on the active path) and its `answer`, as stored.
    pub fn with_turn(mut self, question: &Message, answer: &Message) -> Self {
        for message in [question, answer] {
            self.tree.heads.push(MessageHead {
                id: message.id,
                seq: message.seq,
                role: message.role,
                parent: message.parent_id,
            });
            self.texts.push(message.clone());
        }
        self.tree.active = Some(answer.id);
        self
    }

    /// About how many bytes they hold (what their vectors and texts reserved).
    pub fn weight(&self) -> usize {
        let texts: usize = self
            .texts
            .iter()
            .map(|m| {
                m.content.capacity()
                    + m.model.as_ref().map_or(0, String::capacity)
                    + m.quote.as_ref().map_or(0, |q| q.text.capacity())
            })
            .sum();
        texts
            + self.texts.capacity() * std::mem::size_of::<Message>()
            + self.tree.heads.capacity() * std::mem::size_of::<MessageHead>()
            + self.fulfilments.capacity() * std::mem::size_of::<Fulfilment>()
    }
}

/// A context and what it was built from.
#[derive(Debug)]
pub struct Loaded {
    pub built: BuiltContext,
    pub materials: Materials,
    /// The stamp of the thread whose state the materials are (without `pending`): the one given with them, or
    /// the one read first when they were read. Every read came after it, so the materials are at least as new.
    pub stamp: ThreadStamp,
}

/// Loads what the model's view of a thread is built from, or takes `kept` (materials and the stamp they are
/// the state of), and builds it with [`build`]. No summary (the turn adds it, see [`super::summary`]);
/// `ephemeral` as in [`ContextInput`]. `pending` is the person's message whose start is committing while this
/// reads: the thread is read as it was before it (whether or not the commit has landed) and the message added
/// last, on the active path.
///
/// A long thread is not read whole: every message's id and role (what the filter and the record need), and the
/// text only of the newest messages, a window starting at a request. Older messages stand in with a placeholder
/// text; the result is kept only if the budget ran out inside the window (the newest turn left out is a real
/// one), so no placeholder was ever counted or sent. Otherwise the window grows and the build runs again.
pub async fn load(
    store: &dyn Store,
    user: Uuid,
    thread: Uuid,
    budget: usize,
    ephemeral: Option<&str>,
    pending: Option<&Message>,
    kept: Option<(Materials, ThreadStamp)>,
) -> Result<Loaded, StoreError> {
    let (mut materials, stamp) = match kept {
        Some(kept) => kept,
        None => {
            // Each read after a stamp of its own: when the two agree, nothing read is older than it. (Else the
            // requests are read again after the tree's: rare, a write landed between the two.)
            let ((tree, stamp), (fulfilments, read_at)) = tokio::try_join!(
                store.message_tree_stamped(user, thread),
                store.fulfilled_requests_stamped(user, thread)
            )?;
            let fulfilments =
                if read_at == stamp { fulfilments } else { store.fulfilled_requests(user, thread).await? };
            (Materials::of(tree, fulfilments), stamp)
        }
    };
    if let Some(pending) = pending {
        materials.tree.forget(pending.id);
    }
    // The model sees the active path only.
    let heads = materials.tree.path();
    let on_path: HashSet<Uuid> = heads.iter().map(|h| h.id).collect();
    let mut window = FIRST_WINDOW;
    let mut fulfilled = None;
    let mut titles: HashMap<Uuid, Option<String>> = HashMap::new();
    loop {
        let mut from = heads.len().saturating_sub(window);
        while from > 0 && heads[from].role != Role::User {
            from -= 1;
        }
        // From the window's first request; the whole thread (and whatever came since the heads) at `from` 0.
        let from_seq = if from == 0 { i64::MIN } else { heads[from].seq };
        if from_seq < materials.texts_from {
            // A conversation with no message yet (but the pending one) has no text to read: its first turn
            // reads only the tree.
            let mut texts = match materials.tree.heads.is_empty() {
                true => Vec::new(),
                false => store.list_messages_from(user, thread, from_seq).await?,
            };
            // What was read after the pending message committed leaves it out, as the tree does.
            texts.retain(|m| pending.is_none_or(|p| p.id != m.id));
            materials.texts = texts;
            materials.texts_from = from_seq;
        }
        let fulfilled = fulfilled.get_or_insert_with(|| fulfilled_on(&materials.fulfilments, &on_path));
        let recent: Vec<&Message> =
            materials.texts.iter().filter(|m| m.seq >= from_seq && on_path.contains(&m.id)).collect();
        let read: HashSet<Uuid> = recent.iter().map(|m| m.id).collect();
        let messages: Vec<Message> = heads[..from]
            .iter()
            .map(|h| stand_in(h, thread))
            .chain(recent.into_iter().cloned())
            .chain(pending.cloned())
            .collect();
        // The titles of the documents quoted, each read once (a deleted one is named by its ID alone).
        for quote in messages.iter().filter_map(|m| m.quote.as_ref()) {
            if let std::collections::hash_map::Entry::Vacant(unread) = titles.entry(quote.artifact_id) {
                unread.insert(match store.get_artifact(user, quote.artifact_id).await {
                    Ok(artifact) if artifact.thread_id == thread => Some(artifact.title),
                    Ok(_) | Err(StoreError::NotFound) => None,
                    Err(e) => return Err(e),
                });
            }
        }
        let input =
            ContextInput { messages: &messages, fulfilled: fulfilled.as_slice(), summary: None, budget, ephemeral };
        let built = build_with_titles(input, &titles);
        let inside = from == 0 || built.record.truncated.last().is_some_and(|id| read.contains(id));
        if inside {
            return Ok(Loaded { built, materials, stamp });
        }
        window = window.saturating_mul(4);
    }
}

/// The person's message as the model sees it while its start commits (see [`load`]'s `pending`): numbered after
/// every stored message.
pub fn pending_message(id: Uuid, thread: Uuid, content: &str) -> Message {
    Message { created_at: chrono::Utc::now(), ..Message::complete(id, thread, i64::MAX, Role::User, content) }
}

/// A message whose text was not read: a placeholder.
fn stand_in(head: &MessageHead, thread: Uuid) -> Message {
    Message::complete(head.id, thread, head.seq, head.role, "\u{2026}")
}

fn blank(message: &Message) -> bool {
    message.content.trim().is_empty()
}

/// Builds the model's view of the conversation.
pub fn build(input: ContextInput<'_>) -> BuiltContext {
    build_with_titles(input, &HashMap::new())
}

/// What the model reads of a message: for a person's message with a quoted passage, the block that names the
/// document (`titles` has its title, unless it is gone) and quotes the passage, then the message.
fn model_text(message: &Message, titles: &HashMap<Uuid, Option<String>>) -> String {
    match (&message.quote, message.role) {
        (Some(quote), Role::User) => {
            let title = titles.get(&quote.artifact_id).and_then(Option::as_deref);
            analysis::quotes::with_quote(&message.content, title, &quote.artifact_id.to_string(), &quote.text)
        }
        _ => message.content.clone(),
    }
}

/// [`build`], naming each quoted document by its title in `titles`.
pub fn build_with_titles(input: ContextInput<'_>, titles: &HashMap<Uuid, Option<String>>) -> BuiltContext {
    let fulfilled: HashSet<Uuid> = input.fulfilled.iter().copied().collect();
    let mut record = ContextRecord { budget: input.budget, ..Default::default() };

    // 1. Group into turns; drop fulfilled turns whole, and answers with no request before them.
    let mut turns: Vec<Turn<'_>> = Vec::new();
    let mut skipping = true;
    for message in input.messages {
        match message.role {
            Role::User => {
                skipping = fulfilled.contains(&message.id);
                if skipping {
                    record.filtered.push(message.id);
                } else {
                    turns.push(Turn { messages: vec![message], tokens: 0 });
                }
            }
            Role::Assistant => {
                if skipping {
                    record.filtered.push(message.id);
                } else if let Some(turn) = turns.last_mut() {
                    turn.messages.push(message);
                }
            }
        }
    }

    // 2. Keep turns from the newest while they fit; the newest is kept whatever its size. Tokens are counted
    // only for the turns looked at here, so a long history costs no more than its newest part.
    let ephemeral_tokens = input.ephemeral.map(count_tokens).unwrap_or(0);
    let mut used = ephemeral_tokens;
    let total = turns.len();
    let mut keep_from = total;
    for (i, turn) in turns.iter_mut().enumerate().rev() {
        turn.tokens = turn
            .messages
            .iter()
            .filter(|m| !blank(m))
            .map(|m| count_message_tokens(m.id, &m.content) + m.quote.as_ref().map_or(0, |q| count_tokens(&q.text)))
            .sum();
        if keep_from < total && used + turn.tokens > input.budget {
            break;
        }
        used += turn.tokens;
        keep_from = i;
    }
    let mut dropped = Vec::new();
    for turn in &turns[..keep_from] {
        record.truncated.extend(turn.messages.iter().map(|m| m.id));
        dropped.extend(turn.messages.iter().map(|m| MessageHead {
            id: m.id,
            seq: m.seq,
            role: m.role,
            parent: m.parent_id,
        }));
    }
    let kept = &turns[keep_from..];
    let note = (!record.truncated.is_empty()).then(|| note_text(record.truncated.len(), input.summary));

    // 3. Messages with valid roles: consecutive messages of one role merged.
    let mut messages: Vec<llm::Message> = Vec::new();
    let mut push = |role: llm::Role, text: String| match messages.last_mut() {
        Some(last) if last.role == role => last.parts.push(Part::Text { text: format!("\n\n{text}") }),
        _ => messages.push(llm::Message { role, parts: vec![Part::Text { text }] }),
    };
    if let Some(note) = &note {
        push(llm::Role::User, note.clone());
    }
    let mut open_requests = Vec::new();
    for turn in kept {
        // A blank message (an answer that only made a document) is neither sent nor listed as seen.
        for m in turn.messages.iter().filter(|m| !blank(m)) {
            record.included.push(m.id);
            if m.role == Role::User {
                // Quire's request detection, as the built-in assistant reads requests too.
                let types = requested_artifacts(&m.content);
                if !types.is_empty() {
                    open_requests.push(OpenRequest { message: m.id, types });
                }
            }
            let role = match m.role {
                Role::User => llm::Role::User,
                Role::Assistant => llm::Role::Assistant,
            };
            push(role, model_text(m, titles));
        }
    }
    if let Some(extra) = input.ephemeral {
        push(llm::Role::User, extra.to_string());
    }
    record.tokens = used + note.as_deref().map(count_tokens).unwrap_or(0);
    record.note = note;
    let seqs = input.messages.iter().map(|m| m.seq).collect();
    let path = input.messages.iter().map(|m| m.id).collect();
    BuiltContext { messages, record, open_requests, dropped, seqs, path }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use wire::ArtifactType;

    fn message(seq: i64, role: Role, content: &str) -> Message {
        Message::complete(Uuid::from_u128(seq as u128), Uuid::nil(), seq, role, content)
    }

    fn artifact(request: Option<Uuid>) -> Artifact {
        Artifact {
            id: Uuid::new_v4(),
            thread_id: Uuid::nil(),
            artifact_type: ArtifactType::UserStories,
            title: "Stories".into(),
            content: "# Stories".into(),
            version: 1,
            request_message_id: request,
            assistant_message_id: None,
            requirements: Vec::new(),
            out_of_date: Vec::new(),
            cited_conversations: Vec::new(),
            created_at: Utc::now(),
        }
    }

    fn conversation(pairs: &[(&str, &str)], last: &str) -> Vec<Message> {
        let mut out = Vec::new();
        let mut seq = 1;
        for (q, a) in pairs {
            out.push(message(seq, Role::User, q));
            out.push(message(seq + 1, Role::Assistant, a));
            seq += 2;
        }
        out.push(message(seq, Role::User, last));
        out
    }

    fn texts(built: &BuiltContext) -> Vec<String> {
        built.messages.iter().map(|m| m.text()).collect()
    }

    fn input<'a>(messages: &'a [Message], fulfilled: &'a [Uuid], budget: usize) -> ContextInput<'a> {
        ContextInput { messages, fulfilled, summary: None, budget, ephemeral: None }
    }

    #[test]
    fn blank_answers_are_never_sent_and_are_left_out_with_their_turn() {
        let old = "an old question that is long enough to be dropped ".repeat(20);
        let messages = conversation(&[(old.as_str(), " "), ("Recent question", "\n")], "Now");
        let budget = count_tokens("Recent question") + count_tokens("Now") + 2;
        let built = build(input(&messages, &[], budget));
        let note = "[2 earlier messages of this conversation are not shown.]";
        assert_eq!(texts(&built), vec![format!("{note}\n\nRecent question\n\nNow")], "one user message: nothing blank");
        assert_eq!(built.record.truncated, vec![messages[0].id, messages[1].id], "the blank answer goes with its turn");
        assert_eq!(built.record.included, vec![messages[2].id, messages[4].id], "a blank answer is not seen");
    }

    #[test]
    fn a_fulfilled_request_and_its_answer_are_removed_together() {
        let messages = conversation(
            &[
                ("We need a shop.", "Noted."),
                ("Generate user stories", "Saved the stories."),
                ("Add payments.", "Noted payments."),
            ],
            "Generate a BRD",
        );
        let artifacts = [artifact(Some(messages[2].id))];
        let built = build(input(&messages, &fulfilled_by(&artifacts), DEFAULT_BUDGET));
        let all = texts(&built).join("|");
        assert!(!all.contains("Generate user stories"));
        assert!(!all.contains("Saved the stories."));
        assert!(all.contains("We need a shop.") && all.contains("Add payments.") && all.contains("Generate a BRD"));
        assert_eq!(built.record.filtered, vec![messages[2].id, messages[3].id]);
        assert_eq!(built.messages.first().unwrap().role, llm::Role::User);
        assert_eq!(built.messages.last().unwrap().text(), "Generate a BRD");
    }

    #[test]
    fn a_request_that_revised_a_document_is_fulfilled_too() {
        let messages =
            conversation(&[("Generate user stories", "Saved."), ("Add a story about refunds", "Revised.")], "Thanks");
        let artifacts = [artifact(Some(messages[0].id))];
        let built = build(ContextInput {
            fulfilled: &[fulfilled_by(&artifacts), vec![messages[2].id]].concat(),
            ..input(&messages, &[], DEFAULT_BUDGET)
        });
        assert_eq!(built.record.filtered, vec![messages[0].id, messages[1].id, messages[2].id, messages[3].id]);
        assert_eq!(texts(&built), vec!["Thanks".to_string()]);
    }

    #[test]
    fn an_unfulfilled_request_stays_so_it_can_be_retried() {
        let messages = conversation(&[("Generate user stories", "Sorry, something failed.")], "Generate user stories");
        let built = build(input(&messages, &[], DEFAULT_BUDGET));
        assert_eq!(built.record.included.len(), 3);
        assert!(built.record.filtered.is_empty());
    }

    #[test]
    fn deleting_the_artifact_brings_the_pair_back() {
        let messages = conversation(&[("Generate user stories", "Done.")], "Thanks");
        let with = build(input(&messages, &[messages[0].id], DEFAULT_BUDGET));
        assert_eq!(with.record.included, vec![messages[2].id]);
        let without = build(input(&messages, &[], DEFAULT_BUDGET));
        assert_eq!(without.record.included, vec![messages[0].id, messages[1].id, messages[2].id]);
    }

    #[test]
    fn several_artifacts_of_one_turn_remove_it_once() {
        let messages = conversation(&[("Generate user stories and a BRD", "Saved both.")], "Now acceptance criteria");
        let artifacts = [artifact(Some(messages[0].id)), artifact(Some(messages[0].id))];
        let built = build(input(&messages, &fulfilled_by(&artifacts), DEFAULT_BUDGET));
        assert_eq!(built.record.filtered, vec![messages[0].id, messages[1].id]);
        assert_eq!(texts(&built), vec!["Now acceptance criteria".to_string()]);
    }

    #[test]
    fn filtering_happens_before_truncation_on_a_long_thread() {
        let filler = "The warehouse team needs accurate stock counts every morning. ".repeat(20);
        let mut pairs: Vec<(String, String)> =
            (0..8).map(|i| (format!("Requirement {i}: {filler}"), format!("Noted {i}."))).collect();
        pairs[1] = ("Generate user stories".into(), "Saved stories.".into());
        pairs[4] = ("Generate a BRD".into(), "Saved BRD.".into());
        pairs[6] = ("Write acceptance criteria".into(), "Saved criteria.".into());
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let messages = conversation(&borrowed, "Generate a requirements document");
        assert!(messages.len() >= 15);
        let artifacts =
            [artifact(Some(messages[2].id)), artifact(Some(messages[8].id)), artifact(Some(messages[12].id))];
        let per_turn = count_tokens(&format!("Requirement 0: {filler}")) + count_tokens("Noted 0.");
        let budget = per_turn * 3;
        let built = build(ContextInput {
            messages: &messages,
            fulfilled: &fulfilled_by(&artifacts),
            summary: Some("A stock-keeping app for a warehouse."),
            budget,
            ephemeral: None,
        });
        // Fulfilled pairs are gone and never counted against the budget.
        assert_eq!(built.record.filtered.len(), 6);
        let all = texts(&built).join("|");
        for gone in ["Generate user stories", "Generate a BRD", "Write acceptance criteria"] {
            assert!(!all.contains(gone), "{gone} should be filtered");
        }
        assert!(!built.record.truncated.is_empty());
        assert!(built.record.tokens <= budget + count_tokens(built.record.note.as_deref().unwrap()));
        assert!(texts(&built)[0].contains("earlier messages of this conversation are not shown"));
        assert!(texts(&built)[0].contains("A stock-keeping app"));
        assert!(all.ends_with("Generate a requirements document"));
        // Every message is accounted for exactly once.
        let mut seen: Vec<Uuid> = built
            .record
            .included
            .iter()
            .chain(&built.record.filtered)
            .chain(&built.record.truncated)
            .copied()
            .collect();
        seen.sort();
        let mut all_ids: Vec<Uuid> = messages.iter().map(|m| m.id).collect();
        all_ids.sort();
        assert_eq!(seen, all_ids);
        // Roles alternate and start with the user.
        assert_eq!(built.messages[0].role, llm::Role::User);
        assert!(built.messages.windows(2).all(|w| w[0].role != w[1].role));
    }

    #[test]
    fn a_summary_joins_the_note_and_its_tokens_are_counted() {
        let old = "an old question that is long enough to be dropped ".repeat(20);
        let messages = conversation(&[(old.as_str(), "Old answer"), ("Recent question", "Recent answer")], "Now");
        let budget = count_tokens("Recent question Recent answer Now") + 10;
        let mut built = build(input(&messages, &[], budget));
        assert_eq!(built.dropped.iter().map(|m| m.seq).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(built.messages_through(2), 2);
        assert_eq!(built.messages_through(0), 0);
        assert_eq!(built.messages_through(99), messages.len());
        let plain_tokens = built.record.tokens;

        built.carry_summary("A stock-keeping app.\nStaff must count stock daily.");
        let note = "[2 earlier messages of this conversation are not shown. Summary of the conversation so far:\n\
                    A stock-keeping app.\nStaff must count stock daily.\n]";
        assert_eq!(built.record.note.as_deref(), Some(note));
        assert!(texts(&built)[0].starts_with(&format!("{note}\n\nRecent question")), "{:?}", texts(&built));
        let plain = count_tokens("[2 earlier messages of this conversation are not shown.]");
        assert_eq!(built.record.tokens, plain_tokens - plain + count_tokens(note));

        // Nothing dropped: nothing to carry.
        let mut short = build(input(&messages[2..], &[], DEFAULT_BUDGET));
        short.carry_summary("Unused.");
        assert!(short.record.note.is_none());
        assert!(short.dropped.is_empty());
    }

    #[test]
    fn the_latest_request_is_kept_even_over_budget() {
        let messages = conversation(&[("Old question", "Old answer")], &"very long request ".repeat(200));
        let built = build(input(&messages, &[], 10));
        assert_eq!(built.record.included, vec![messages[2].id]);
        assert_eq!(built.record.truncated, vec![messages[0].id, messages[1].id]);
    }

    #[test]
    fn a_manually_deleted_request_leaves_a_sane_context() {
        // The user message of the first turn was deleted: its answer cannot open the conversation.
        let mut messages = conversation(&[("First", "Answer one"), ("Second", "Answer two")], "Third");
        messages.remove(0);
        let built = build(input(&messages, &[], DEFAULT_BUDGET));
        assert_eq!(built.messages[0].role, llm::Role::User);
        assert_eq!(built.messages[0].text(), "Second");
        assert_eq!(built.record.filtered, vec![messages[0].id]);
        // Two user messages in a row (an answer was deleted) are merged.
        let mut gap = conversation(&[("One", "Reply")], "Two");
        gap.remove(1);
        let merged = build(input(&gap, &[], DEFAULT_BUDGET));
        assert_eq!(merged.messages.len(), 1);
        assert_eq!(merged.messages[0].text(), "One\n\nTwo");
    }

    #[test]
    fn open_requests_are_the_requests_for_documents_the_model_sees() {
        let filler = "The warehouse team needs accurate stock counts every morning. ".repeat(40);
        let messages = conversation(
            &[
                ("Generate user stories", "Sorry, something failed."),
                ("Generate a BRD", "Saved."),
                ("What else do we need?", "A summary."),
                (filler.as_str(), "Noted."),
                ("Write the meeting summary and the acceptance criteria", "Saved both."),
            ],
            "Generate a requirements document",
        );
        let open =
            |built: &BuiltContext| built.open_requests.iter().map(|r| (r.message, r.types.clone())).collect::<Vec<_>>();
        // The BRD request is fulfilled; the rest are open, the latest too.
        let built = build(input(&messages, &[messages[2].id], DEFAULT_BUDGET));
        assert_eq!(
            open(&built),
            vec![
                (messages[0].id, vec![ArtifactType::UserStories]),
                (messages[8].id, vec![ArtifactType::MeetingSummary, ArtifactType::AcceptanceCriteria]),
                (messages[10].id, vec![ArtifactType::RequirementsDoc]),
            ]
        );
        // A request cut off by the budget is not seen, so it is not open here.
        let budget = count_tokens(&filler) / 2;
        let built = build(input(&messages, &[messages[2].id], budget));
        assert!(built.record.truncated.contains(&messages[0].id));
        assert_eq!(open(&built).iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![messages[8].id, messages[10].id]);
    }

    #[test]
    fn a_quoted_passage_comes_before_its_message_naming_the_document() {
        let mut messages = conversation(&[("We need bookings.", "Noted.")], "Is this long enough?");
        let doc = Uuid::from_u128(99);
        messages[2].quote = Some(wire::Quote { artifact_id: doc, text: "Slots are 30 minutes.".into() });
        let titles = HashMap::from([(doc, Some("Booking Plan".to_string()))]);
        let built = build_with_titles(input(&messages, &[], DEFAULT_BUDGET), &titles);
        let last = built.messages.last().unwrap().text();
        assert!(
            last.starts_with(&format!(
                "[The message below is about this passage of the document \"Booking Plan\" (ID: {doc})"
            )),
            "{last}"
        );
        assert!(last.ends_with("> Slots are 30 minutes.\n\nIs this long enough?"), "{last}");
        let plain = build(input(&messages, &[], DEFAULT_BUDGET));
        assert!(plain.messages.last().unwrap().text().contains(&format!("a document (ID: {doc})")), "no title known");
        assert!(
            built.record.tokens
                > build(input(
                    &conversation(&[("We need bookings.", "Noted.")], "Is this long enough?"),
                    &[],
                    DEFAULT_BUDGET
                ))
                .record
                .tokens,
            "the passage counts"
        );
        // Only a person's message shows its quote.
        assert_eq!(built.messages[1].text(), "Noted.");
    }

    #[test]
    fn the_ephemeral_instruction_goes_last_and_is_not_a_stored_message() {
        let messages = conversation(&[("We need a CRM.", "Noted.")], "Thanks");
        let built = build(ContextInput {
            ephemeral: Some("Generate the document now."),
            ..input(&messages, &[], DEFAULT_BUDGET)
        });
        assert!(built.messages.last().unwrap().text().ends_with("Generate the document now."));
        assert_eq!(built.record.included.len(), 3);
    }
}
