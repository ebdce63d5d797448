//! The conversation as it reads: messages with the documents their turns made, the answer being written, a tool's
//! status line and the generating indicator; the view follows a growing answer while the person stays at the bottom.

use leptos::html;
use leptos::prelude::*;
use uuid::Uuid;

use super::actions::ChatActions;
use super::branches::MessageRow;
use crate::api::{Artifact, Message, MessageStatus, Role};
use crate::components::approval_card::approval_cards;
use crate::components::artifact_card::{card_key, ArtifactCard};
use crate::components::message_bubble::MessageBubble;
use crate::state::ChatState;

/// One row of the conversation.
#[derive(Clone, Debug, PartialEq)]
enum Row {
    Message(Message),
    Document(Artifact),
}

impl Row {
    fn key(&self) -> (Uuid, i64, MessageStatus, u64) {
        match self {
            Row::Message(m) => (m.id, 0, m.status, m.content.len() as u64),
            Row::Document(a) => {
                let (id, version, drawn) = card_key(a);
                (id, version, MessageStatus::Complete, drawn)
            }
        }
    }
}

/// Messages in order, each answer followed by the documents its turn made. Documents made silently (or not
/// yet linked) sit where their time puts them.
fn rows(messages: &[Message], artifacts: &[Artifact], live_ids: &[Uuid]) -> Vec<Row> {
    let mut rows = Vec::with_capacity(messages.len() + artifacts.len());
    let unlinked: Vec<&Artifact> = artifacts
        .iter()
        .filter(|a| {
            !live_ids.contains(&a.id) && a.assistant_message_id.is_none_or(|m| !messages.iter().any(|msg| msg.id == m))
        })
        .collect();
    let mut pending = unlinked.into_iter().peekable();
    for message in messages {
        while let Some(a) = pending.next_if(|a| message.seq > 0 && a.created_at < message.created_at) {
            rows.push(Row::Document(a.clone()));
        }
        rows.push(Row::Message(message.clone()));
        if message.role == Role::Assistant {
            rows.extend(
                artifacts.iter().filter(|a| a.assistant_message_id == Some(message.id)).cloned().map(Row::Document),
            );
        }
    }
    rows.extend(pending.cloned().map(Row::Document));
    rows
}

/// The scrolling list of the conversation. `follow` is set by whoever starts a turn; `target` is the message a
/// search result opened (`?m=<id>`), and `spotlight` the one a followed requirement came from: each is scrolled to
/// and highlighted.
#[component]
pub(super) fn Timeline(
    state: ChatState,
    actions: ChatActions,
    follow: RwSignal<bool>,
    #[prop(into)] target: Signal<Option<Uuid>>,
    #[prop(into)] spotlight: Signal<Option<Uuid>>,
    on_open: Callback<Artifact>,
) -> impl IntoView {
    let ChatState { messages, artifacts, live, tool, turn_artifacts, generating, .. } = state;
    let scroller = NodeRef::<html::Div>::new();
    // Where following last put the view: the view stops following only when it is moved up from there.
    let followed_to = StoredValue::new(0);

    // Follow the stream while the person is at the bottom; leave them alone once they scroll up.
    Effect::new(move |_| {
        live.track();
        messages.track();
        artifacts.track();
        if !follow.get_untracked() {
            return;
        }
        let Some(el) = scroller.get_untracked() else { return };
        // Once the change is drawn: scrolling now would stop short of what it adds.
        request_animation_frame(move || {
            if follow.try_get_untracked() == Some(true) {
                el.set_scroll_top(el.scroll_height());
                followed_to.try_set_value(el.scroll_top());
            }
        });
    });
    // Bring the message a search opened into view once it is drawn (after the follow effect's scroll).
    Effect::new(move |_| {
        let Some(wanted) = target.get() else { return };
        if !messages.with(|list| list.iter().any(|m| m.id == wanted)) {
            return;
        }
        follow.set(false);
        request_animation_frame(move || scroll_to_message(wanted));
    });
    Effect::new(move |_| {
        let Some(wanted) = spotlight.get() else { return };
        follow.set(false);
        request_animation_frame(move || scroll_to_message(wanted));
    });
    let on_scroll = move |_| {
        if let Some(el) = scroller.get_untracked() {
            let at_bottom = el.scroll_height() - el.scroll_top() - el.client_height() < 80;
            // Rows added below (a long message of the person's own) leave the view where it was: only moving it up
            // stops following.
            let kept = follow.get_untracked() && el.scroll_top() >= followed_to.get_value();
            follow.set(at_bottom || kept);
        }
    };

    let timeline = move || {
        let live_ids = turn_artifacts.get();
        messages.with(|m| artifacts.with(|a| rows(m, a, &live_ids)))
    };
    let live_cards = move || {
        let ids = turn_artifacts.get();
        artifacts.with(|list| list.iter().filter(|a| ids.contains(&a.id)).cloned().collect::<Vec<_>>())
    };
    let tool_line = tool.text;
    let on_update = Callback::new(move |a: Artifact| actions.update_document(a));
    let occupied = Signal::derive(move || state.busy.get() || generating.get().is_some());
    let asking = Memo::new(move |_| state.approvals.with(|a| !a.is_empty()));

    view! {
        <div class="messages" role="log" aria-live="polite" node_ref=scroller on:scroll=on_scroll on:click=copy_code>
            {move || (messages.with(Vec::is_empty) && live.with(Option::is_none) && artifacts.with(Vec::is_empty)).then(|| view! {
                <p class="empty">"Describe what you are building. Quire keeps track of your requirements and drafts documents from them."</p>
            })}
            <For each=timeline key=Row::key let:row>
                {match row {
                    Row::Message(m) => {
                        let id = m.id;
                        let highlighted = Signal::derive(move || target.get() == Some(id) || spotlight.get() == Some(id));
                        view! { <MessageRow message=m actions highlighted/> }.into_any()
                    }
                    Row::Document(a) => view! { <ArtifactCard artifact=a on_open on_update busy=occupied/> }.into_any(),
                }}
            </For>
            {move || live.get().map(|answer| view! {
                <MessageBubble role=Role::Assistant content=answer.text streaming=true/>
            })}
            // One element for the whole answer, its text updated in place: a fold the person opened stays open
            // while more reasoning arrives.
            <Show when=move || live.with(|a| a.as_ref().is_some_and(|a| !a.reasoning.is_empty()))>
                <details class="reasoning" data-testid="reasoning">
                    <summary>"Reasoning"</summary>
                    <p class="reasoning-text">
                        {move || live.with(|a| a.as_ref().map(|a| a.reasoning.clone()).unwrap_or_default())}
                    </p>
                </details>
            </Show>
            {move || tool_line.get().map(|s| view! { <p class="tool-status" role="status">{s}</p> })}
            {move || asking.get().then(|| view! {
                <Suspense fallback=|| ()>{Suspend::new(approval_cards(state))}</Suspense>
            })}
            <For each=live_cards key=card_key let:a>
                <ArtifactCard artifact=a on_open on_update busy=occupied/>
            </For>
            {move || generating.get().map(|kind| view! {
                <div class="generating" role="status" data-testid="generating-indicator">
                    <span class="spinner" aria-hidden="true"></span>
                    {format!("Generating {}…", kind.label())}
                </div>
            })}
        </div>
    }
    .into_any()
}

/// Scrolls the message `id` to the middle of the view.
fn scroll_to_message(id: Uuid) {
    let selector = format!("[data-message-id=\"{id}\"]");
    let element = web_sys::window().and_then(|w| w.document()).and_then(|d| d.query_selector(&selector).ok().flatten());
    if let Some(element) = element {
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Center);
        element.scroll_into_view_with_scroll_into_view_options(&options);
    }
}

/// Copies a code block when its "Copy" button (rendered with the Markdown) is clicked.
fn copy_code(ev: leptos::ev::MouseEvent) {
    use wasm_bindgen::JsCast;
    let Some(button) = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else { return };
    if button.class_list().contains("copy-code") {
        leptos::task::spawn_local(copy_block(button));
    }
}

/// Puts the text of the code block of a "Copy" `button` on the clipboard. Loaded at a first copy (split out of the
/// main wasm bundle in release builds).
#[lazy]
async fn copy_block(button: web_sys::Element) {
    use wasm_bindgen::JsCast;
    let Some(code) = button.parent_element().and_then(|block| block.query_selector("pre").ok().flatten()) else {
        return;
    };
    let text = code.text_content().unwrap_or_default();
    let Some(window) = web_sys::window() else { return };
    // navigator.clipboard.writeText(text), looked up dynamically (the Clipboard API is not in web-sys's stable set).
    let clipboard = js_sys::Reflect::get(&window.navigator(), &"clipboard".into()).ok();
    let write = clipboard
        .as_ref()
        .and_then(|c| js_sys::Reflect::get(c, &"writeText".into()).ok())
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
    if let (Some(clipboard), Some(write)) = (clipboard, write) {
        let _ = write.call1(&clipboard, &text.into());
        button.set_text_content(Some("Copied"));
    }
}
