//! "What the model saw" under an answer: the context record, told in terms of the conversation's messages, and
//! the steps taken to write the answer.

use leptos::prelude::*;
use send_wrapper::SendWrapper;
use uuid::Uuid;

use crate::api::{client, shortened, Artifact, ContextPassage, ContextRecord, ContextRequirement, Message, Role};
use crate::components::counted_list::CountedList;
use crate::components::trace_steps::TraceSteps;
use crate::format::grouped;

/// Longest excerpt of a message shown in the record, in characters.
const EXCERPT_CHARS: usize = 160;

/// One message named by the record, as people read it.
#[derive(Clone, Debug, PartialEq)]
pub struct SeenMessage {
    pub who: &'static str,
    pub excerpt: String,
    /// Why it was left out (empty for messages that were sent).
    pub reason: String,
}

/// The record of one answer with its messages looked up.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextView {
    pub included: Vec<SeenMessage>,
    pub filtered: Vec<SeenMessage>,
    pub truncated: Vec<SeenMessage>,
    pub tokens: usize,
    pub budget: usize,
    pub provider: String,
    pub model: String,
    pub note: Option<String>,
    /// Tokens metered for the answer itself (input, output), when it is still there.
    pub metered: Option<(u64, u64)>,
    /// Passages of attached files the model was given.
    pub passages: Vec<ContextPassage>,
    /// The requirements ledger as the model was given it.
    pub ledger: Vec<ContextRequirement>,
}

fn excerpt(text: &str) -> String {
    shortened(&text.split_whitespace().collect::<Vec<_>>().join(" "), EXCERPT_CHARS)
}

/// A message's excerpt, after the passage it asked about (which the model was shown with it).
fn with_quote(message: &Message, artifacts: &[Artifact]) -> String {
    match &message.quote {
        None => excerpt(&message.content),
        Some(quote) => {
            let title = artifacts.iter().find(|a| a.id == quote.artifact_id).map_or("a document", |a| a.title.as_str());
            format!("About “{title}”: “{}” — {}", excerpt(&quote.text), excerpt(&message.content))
        }
    }
}

fn who(role: Role) -> &'static str {
    match role {
        Role::User => "You",
        Role::Assistant => "Assistant",
    }
}

/// Why a filtered message was left out: the context builder drops a request once a document was made from it
/// (or from a revision it asked for), together with its answers, and answers that no request comes before.
fn filtered_reason(id: Uuid, messages: &[Message], artifacts: &[Artifact], filtered: &[Uuid]) -> String {
    let Some(position) = messages.iter().position(|m| m.id == id) else {
        return "Already fulfilled; the message has since been deleted.".to_string();
    };
    match messages[position].role {
        Role::User => match artifacts.iter().find(|a| a.request_message_id == Some(id)) {
            Some(a) => format!("Already fulfilled: “{}” ({}) was made from it.", a.title, a.artifact_type.label()),
            None => "Already fulfilled: a document was revised from it.".to_string(),
        },
        Role::Assistant => {
            let request = messages[..position].iter().rev().find(|m| m.role == Role::User);
            match request {
                Some(r) if filtered.contains(&r.id) => "The answer to a request already fulfilled.".to_string(),
                Some(_) => "Left out with its request.".to_string(),
                None => "An answer with no request before it.".to_string(),
            }
        }
    }
}

/// Puts the record's message ids next to the messages of the conversation (`messages`, `artifacts`).
pub fn describe(answer: Uuid, record: ContextRecord, messages: &[Message], artifacts: &[Artifact]) -> ContextView {
    let seen = |id: &Uuid, reason: String| match messages.iter().find(|m| m.id == *id) {
        Some(m) => SeenMessage { who: who(m.role), excerpt: with_quote(m, artifacts), reason },
        None => SeenMessage { who: "Deleted", excerpt: "(this message has since been deleted)".to_string(), reason },
    };
    ContextView {
        included: record.included.iter().map(|id| seen(id, String::new())).collect(),
        filtered: record
            .filtered
            .iter()
            .map(|id| seen(id, filtered_reason(*id, messages, artifacts, &record.filtered)))
            .collect(),
        truncated: record
            .truncated
            .iter()
            .map(|id| seen(id, "Older than what fitted in the token budget.".to_string()))
            .collect(),
        tokens: record.tokens,
        budget: record.budget,
        provider: record.provider,
        model: record.model,
        note: record.note,
        metered: messages.iter().find(|m| m.id == answer).map(|m| (m.input_tokens, m.output_tokens)),
        passages: record.passages,
        ledger: record.ledger,
    }
}

async fn load(answer: Uuid, thread: Uuid) -> Result<ContextView, String> {
    let record = client::message_context(answer).await.map_err(|e| {
        if e.status == 404 {
            "Quire kept no record of what the model saw for this answer.".to_string()
        } else {
            e.message
        }
    })?;
    let detail = client::get_thread(thread).await.map_err(|e| e.message)?;
    Ok(describe(answer, record, &detail.messages, &detail.artifacts))
}

/// The record's panel, fetched and described when first opened. Its code is loaded then too (it is split out of
/// the main wasm bundle in release builds).
#[lazy]
async fn context_panel(answer: Uuid, thread: Uuid) -> AnyView {
    match load(answer, thread).await {
        Ok(view) => view! { <ContextDetails view/> }.into_any(),
        Err(message) => view! { <p class="error" role="alert">{message}</p> }.into_any(),
    }
}

/// A button under an answer that opens the record of what the model saw for it.
#[component]
pub fn ModelContext(message_id: Uuid, thread_id: Uuid) -> impl IntoView {
    let open = RwSignal::new(false);
    let panel_id = format!("context-{message_id}");
    view! {
        <div class="model-context">
            <button
                type="button"
                class="link-button"
                aria-expanded=move || open.get().to_string()
                aria-controls=panel_id.clone()
                on:click=move |_| open.update(|o| *o = !*o)
            >
                "What the model saw"
            </button>
            <Show when=move || open.get()>
                <section class="context-panel" id=panel_id.clone() aria-label="What the model saw">
                    <Suspense fallback=|| view! { <p class="muted" role="status">"Loading…"</p> }>
                        // Opened by a click, so only ever awaited in the browser, on its one thread.
                        {Suspend::new(SendWrapper::new(context_panel(message_id, thread_id)))}
                    </Suspense>
                    <TraceSteps message_id/>
                </section>
            </Show>
        </div>
    }
}

#[component]
fn ContextDetails(view: ContextView) -> impl IntoView {
    let ContextView { included, filtered, truncated, tokens, budget, provider, model, note, metered, passages, ledger } =
        view;
    view! {
        <dl class="context-numbers">
            <dt>"Tokens sent"</dt>
            <dd data-testid="context-tokens">{format!("{} of {} budget", grouped(tokens as u64), grouped(budget as u64))}</dd>
            <dt>"Model"</dt>
            <dd>{format!("{model} ({provider})")}</dd>
            {metered.map(|(input, output)| view! {
                <dt>"This answer"</dt>
                <dd>{format!("{} tokens in, {} out", grouped(input), grouped(output))}</dd>
            })}
        </dl>
        <p class="muted context-hint">"Token counts cover the conversation; the instructions and tools are not counted."</p>
        <MessageGroup heading="Included" empty="No messages." items=included ordered=true/>
        <MessageGroup heading="Left out: already fulfilled" empty="None." items=filtered ordered=false/>
        <MessageGroup heading="Left out: over the token budget" empty="None." items=truncated ordered=false/>
        {note.map(|n| view! {
            <p class="context-note"><strong>"Note sent in their place: "</strong>{n}</p>
        })}
        <PassageList passages/>
        <LedgerList ledger/>
    }
}

/// The requirements ledger the model was given: each requirement's key, status and text.
#[component]
fn LedgerList(ledger: Vec<ContextRequirement>) -> impl IntoView {
    let row = |r: ContextRequirement| {
        view! {
            <li>
                <span class="context-who">{r.key}</span>
                " "
                <span class="context-status">{format!("({})", r.status.as_str())}</span>
                " "
                <span class="context-excerpt">{r.text}</span>
            </li>
        }
    };
    view! { <CountedList heading="Requirements ledger" items=ledger row testid="context-ledger"/> }
}

/// The passages of attached files the model was given, with where each comes from and how well it matched.
#[component]
fn PassageList(passages: Vec<ContextPassage>) -> impl IntoView {
    let row = |p: ContextPassage| {
        view! {
            <li>
                <span class="context-who">{p.filename}</span>
                {p.conversation.map(|title| view! {
                    " "<span class="context-from" data-testid="passage-conversation">{format!("from “{title}”")}</span>
                })}
                " "
                <span class="context-reason">{format!("passage {}, score {:.2}", p.chunk + 1, p.score)}</span>
                " "
                <span class="context-excerpt">{p.excerpt}</span>
            </li>
        }
    };
    view! { <CountedList heading="Passages from attached files" items=passages row testid="context-passages"/> }
}

#[component]
fn MessageGroup(heading: &'static str, empty: &'static str, items: Vec<SeenMessage>, ordered: bool) -> impl IntoView {
    let row = |m: SeenMessage| {
        view! {
            <li>
                <span class="context-who">{m.who}</span>
                " "
                <span class="context-excerpt">{m.excerpt}</span>
                {(!m.reason.is_empty()).then(|| view! { <span class="context-reason">{m.reason}</span> })}
            </li>
        }
    };
    view! { <CountedList heading items row empty ordered/> }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ArtifactType;

    fn message(seq: i64, role: Role, content: &str) -> Message {
        Message {
            input_tokens: 10 * seq as u64,
            output_tokens: seq as u64,
            ..Message::complete(Uuid::from_u128(seq as u128), Uuid::nil(), seq, role, content)
        }
    }

    #[test]
    fn names_each_message_and_why_it_was_left_out() {
        let messages = vec![
            message(1, Role::User, "Write user stories"),
            message(2, Role::Assistant, "Done."),
            message(3, Role::User, "Old   question\nwith lines"),
            message(4, Role::Assistant, "Old answer"),
            message(5, Role::User, "Latest"),
            message(6, Role::Assistant, "Reply"),
        ];
        let artifact = Artifact {
            id: Uuid::from_u128(99),
            thread_id: Uuid::nil(),
            artifact_type: ArtifactType::UserStories,
            title: "Stories".into(),
            content: String::new(),
            version: 1,
            request_message_id: Some(messages[0].id),
            assistant_message_id: Some(messages[1].id),
            requirements: Vec::new(),
            out_of_date: Vec::new(),
            cited_conversations: Vec::new(),
            created_at: Default::default(),
        };
        let record = ContextRecord {
            included: vec![messages[4].id],
            filtered: vec![messages[0].id, messages[1].id],
            truncated: vec![messages[2].id, messages[3].id, Uuid::from_u128(42)],
            tokens: 1234,
            budget: 24000,
            provider: "builtin".into(),
            model: "quire-builtin-1".into(),
            note: None,
            passages: vec![ContextPassage {
                attachment_id: Uuid::from_u128(7),
                filename: "notes.md".into(),
                conversation: None,
                chunk: 2,
                excerpt: "Refunds take 14 days.".into(),
                score: 1.5,
            }],
            ledger: vec![ContextRequirement {
                key: "R-1".into(),
                text: "Customers book slots.".into(),
                kind: crate::api::RequirementKind::Functional,
                status: crate::api::RequirementStatus::Changed,
            }],
        };
        let view = describe(messages[5].id, record, &messages, &[artifact]);
        assert_eq!(view.included, vec![SeenMessage { who: "You", excerpt: "Latest".into(), reason: String::new() }]);
        assert_eq!(view.filtered[0].reason, "Already fulfilled: “Stories” (User Stories) was made from it.");
        assert_eq!(view.filtered[1].reason, "The answer to a request already fulfilled.");
        assert_eq!(view.truncated[0].excerpt, "Old question with lines");
        assert_eq!(view.truncated[2].who, "Deleted");
        assert_eq!(view.metered, Some((60, 6)));
        assert_eq!(view.passages.len(), 1);
        assert_eq!(view.passages[0].filename, "notes.md");
        assert_eq!(view.ledger[0].key, "R-1");
    }

    #[test]
    fn a_message_about_a_passage_shows_the_passage() {
        let mut asked = message(1, Role::User, "Make it 45");
        asked.quote = Some(crate::api::Quote { artifact_id: Uuid::from_u128(9), text: "Slots are 30 minutes".into() });
        let artifact = Artifact {
            id: Uuid::from_u128(9),
            thread_id: Uuid::nil(),
            artifact_type: ArtifactType::RequirementsDoc,
            title: "Salon".into(),
            content: String::new(),
            version: 1,
            request_message_id: None,
            assistant_message_id: None,
            requirements: Vec::new(),
            out_of_date: Vec::new(),
            cited_conversations: Vec::new(),
            created_at: Default::default(),
        };
        let record = ContextRecord { included: vec![asked.id], ..Default::default() };
        let view = describe(Uuid::from_u128(2), record, std::slice::from_ref(&asked), &[artifact]);
        assert_eq!(view.included[0].excerpt, "About “Salon”: “Slots are 30 minutes” — Make it 45");
    }

    #[test]
    fn long_messages_are_shortened() {
        let long = "word ".repeat(100);
        let short = excerpt(&long);
        assert_eq!(short.chars().count(), EXCERPT_CHARS + 1);
        assert!(short.ends_with('…'));
    }
}
