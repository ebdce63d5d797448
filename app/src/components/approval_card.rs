//! The calls of the answer being written that ask first, below it: which server's tool wants to run with what
//! arguments, Approve and Deny for those who write in the conversation, and then what was decided.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::{client, ApprovalState, ToolApproval};
use crate::state::{ChatState, ErrorNote};

/// One card per question of the answer being written. Loaded at a first question (split out of the main wasm
/// bundle in release builds).
#[lazy]
pub fn approval_cards(state: ChatState) -> AnyView {
    view! {
        <For each=move || state.approvals.get() key=|a| (a.id, a.state) let:approval>
            <ApprovalCard approval state/>
        </For>
    }
    .into_any()
}

/// A question: "<label> wants to run <tool>", the arguments, and the buttons or the decision.
#[component]
fn ApprovalCard(approval: ToolApproval, state: ChatState) -> impl IntoView {
    let ToolApproval { id, thread_id, label, tool, input, state: decided, .. } = approval;
    let sending = RwSignal::new(false);
    let decide = move |approve: bool| {
        sending.set(true);
        spawn_local(async move {
            match client::decide_approval(thread_id, id, approve).await {
                Ok(answer) => state.upsert_approval(answer),
                Err(e) => {
                    sending.set(false);
                    state.error.set(Some(ErrorNote::new(e.message)));
                }
            }
        });
    };
    let question = format!("{label} wants to run {tool}");
    // A string is the start of arguments too long to show whole.
    let arguments = match input {
        serde_json::Value::String(cut) => cut,
        other => serde_json::to_string_pretty(&other).unwrap_or_default(),
    };
    let footer = match decided {
        ApprovalState::Pending if state.access.get_untracked().writes() => view! {
            <div class="approval-actions">
                <button type="button" class="primary" disabled=move || sending.get() on:click=move |_| decide(true)>
                    "Approve"
                </button>
                <button type="button" disabled=move || sending.get() on:click=move |_| decide(false)>"Deny"</button>
            </div>
        }
        .into_any(),
        ApprovalState::Pending => {
            view! { <p class="approval-outcome">"Waiting for someone who writes here to decide."</p> }.into_any()
        }
        ApprovalState::Approved => view! { <p class="approval-outcome" role="status">"Approved"</p> }.into_any(),
        ApprovalState::Denied => view! { <p class="approval-outcome" role="status">"Denied"</p> }.into_any(),
        ApprovalState::Expired => {
            view! { <p class="approval-outcome" role="status">"Not approved in time"</p> }.into_any()
        }
    };
    view! {
        <div class="approval-card" data-testid="approval" data-state=decided.as_str() role="group"
            aria-label=question.clone()>
            <p class="approval-question"><strong>{label}</strong>" wants to run "<code>{tool}</code></p>
            <pre class="approval-input" aria-label="Arguments">{arguments}</pre>
            {footer}
        </div>
    }
}
