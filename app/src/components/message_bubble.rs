//! One chat message as a bubble.

use leptos::prelude::*;
use uuid::Uuid;

use crate::api::{MessageStatus, Role};
use crate::components::model_context::ModelContext;
use crate::markdown::Renderer;

/// A user or assistant bubble, an answer as safe Markdown. `saved` (message and thread ids) lets search results
/// point at it and an answer offer "What the model saw"; `highlighted` marks the message a search opened or a
/// followed requirement came from.
#[component]
pub fn MessageBubble(
    role: Role,
    #[prop(into)] content: Signal<String>,
    #[prop(into, optional)] status: Option<Signal<MessageStatus>>,
    #[prop(optional)] streaming: bool,
    #[prop(optional)] saved: Option<(Uuid, Uuid)>,
    #[prop(into, optional)] highlighted: Option<Signal<bool>>,
    /// The passage of a document the message asks about: the document's title and the passage.
    #[prop(optional_no_strip)]
    quote: Option<(String, String)>,
    /// Who wrote a person's message, in a conversation more than its author writes in ("You" for the reader).
    #[prop(optional_no_strip)]
    writer: Option<String>,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    let status = status.unwrap_or_else(|| Signal::stored(MessageStatus::Complete));
    let highlighted = highlighted.unwrap_or_else(|| Signal::stored(false));
    let (testid, label) = match role {
        Role::User => ("message-user", writer.clone().unwrap_or_else(|| "You".to_string())),
        Role::Assistant => ("message-assistant", "Assistant".to_string()),
    };
    let note = move || match status.get() {
        MessageStatus::Interrupted => Some("Interrupted: the answer was cut short."),
        MessageStatus::Stopped => Some("Stopped."),
        MessageStatus::Error => Some("The answer failed."),
        MessageStatus::Complete => None,
    };
    let markdown = expect_context::<Renderer>();
    let body = move || match role {
        Role::User => view! { <div class="bubble-text plain">{content.get()}</div> }.into_any(),
        Role::Assistant => {
            view! { <div class="bubble-text md" inner_html=move || content.with(|text| markdown.html(text))></div> }
                .into_any()
        }
    };
    view! {
        <article
            class=format!("bubble {}", role.as_str())
            class:streaming=streaming
            data-testid=testid
            aria-label=label
            aria-busy=move || streaming.to_string()
            data-message-id=saved.map(|(id, _)| id.to_string())
            class:highlighted=move || highlighted.get()
            data-highlighted=move || highlighted.get().then_some("true")
            aria-current=move || highlighted.get().then_some("true")
        >
            {writer.map(|name| view! { <span class="message-writer" data-testid="message-writer">{name}</span> })}
            {quote.map(|(title, text)| view! {
                <blockquote class="message-quote" data-testid="message-quote">
                    <span class="quote-source">{format!("About “{title}”")}</span>
                    <span class="quote-text">{text}</span>
                </blockquote>
            })}
            {body}
            {move || note().map(|n| view! { <p class="bubble-note">{n}</p> })}
            {saved.filter(|_| role == Role::Assistant && !streaming).map(|(message_id, thread_id)| view! {
                <ModelContext message_id thread_id/>
            })}
            {children.map(|tools| tools())}
        </article>
    }
}
