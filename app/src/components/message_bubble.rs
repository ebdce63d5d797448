//! One chat message as a bubble.

use leptos::prelude::*;

use uuid::Uuid;

use crate::api::{MessageStatus, Role};
use crate::components::model_context::ModelContext;
use crate::markdown::to_safe_html;

/// A user or assistant bubble. Assistant text is rendered as safe Markdown; user text stays plain. A saved
/// answer (`saved`: its id and its thread's) offers "What the model saw".
#[component]
pub fn MessageBubble(
    role: Role,
    #[prop(into)] content: Signal<String>,
    #[prop(into, optional)] status: Option<Signal<MessageStatus>>,
    #[prop(optional)] streaming: bool,
    #[prop(optional)] saved: Option<(Uuid, Uuid)>,
) -> impl IntoView {
    let status = status.unwrap_or_else(|| Signal::stored(MessageStatus::Complete));
    let (testid, label) = match role {
        Role::User => ("message-user", "You"),
        Role::Assistant => ("message-assistant", "Assistant"),
    };
    let note = move || match status.get() {
        MessageStatus::Interrupted => Some("Interrupted: the answer was cut short."),
        MessageStatus::Stopped => Some("Stopped."),
        MessageStatus::Error => Some("The answer failed."),
        MessageStatus::Complete => None,
    };
    let body = move || match role {
        Role::User => view! { <div class="bubble-text plain">{content.get()}</div> }.into_any(),
        Role::Assistant => {
            view! { <div class="bubble-text md" inner_html=move || to_safe_html(&content.get())></div> }.into_any()
        }
    };
    view! {
        <article
            class=format!("bubble {}", role.as_str())
            class:streaming=streaming
            data-testid=testid
            aria-label=label
            aria-busy=move || streaming.to_string()
        >
            {body}
            {move || note().map(|n| view! { <p class="bubble-note">{n}</p> })}
            {saved.filter(|_| role == Role::Assistant && !streaming).map(|(message_id, thread_id)| view! {
                <ModelContext message_id thread_id/>
            })}
        </article>
    }
}
