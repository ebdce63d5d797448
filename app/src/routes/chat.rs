//! The chat page: the conversation's bubbles, the live answer, and the message box.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_params_map};
use leptos_router::NavigateOptions;
use uuid::Uuid;

use crate::api::{client, ChatEvent, ChatRequest, CreateThread, Message, MessageStatus, Role};
use crate::components::message_bubble::MessageBubble;
use crate::ThreadsChanged;

/// The answer being written right now.
#[derive(Clone, Debug, Default)]
pub struct LiveAnswer {
    text: String,
}

/// The conversation on screen. It lives above the router, so a stream that is running keeps its state when
/// the address changes from `/` to `/c/<id>` after the first message.
#[derive(Clone, Copy)]
pub struct ChatState {
    current: RwSignal<Option<Uuid>>,
    messages: RwSignal<Vec<Message>>,
    live: RwSignal<Option<LiveAnswer>>,
    busy: RwSignal<bool>,
    error: RwSignal<Option<String>>,
    title: RwSignal<String>,
}

impl ChatState {
    pub fn new() -> Self {
        Self {
            current: RwSignal::new(None),
            messages: RwSignal::new(Vec::new()),
            live: RwSignal::new(None),
            busy: RwSignal::new(false),
            error: RwSignal::new(None),
            title: RwSignal::new(String::new()),
        }
    }
}

impl ChatState {
    /// Forgets the conversation on screen (after signing out).
    pub fn clear(&self) {
        self.current.set(None);
        self.messages.set(Vec::new());
        self.live.set(None);
        self.busy.set(false);
        self.error.set(None);
        self.title.set(String::new());
    }
}

impl Default for ChatState {
    fn default() -> Self {
        Self::new()
    }
}

/// Shows a conversation (`/c/:id`) or an empty one (`/`) that is created on the first message.
#[component]
pub fn ChatPage() -> impl IntoView {
    let params = use_params_map();
    let navigate = use_navigate();
    let changed = expect_context::<ThreadsChanged>();

    let route_id = move || params.with(|p| p.get("id").and_then(|s| Uuid::parse_str(&s).ok()));
    // `current` is set before navigating to a thread this page just created, so it is not reloaded.
    let ChatState { current, messages, live, busy, error, title } = expect_context::<ChatState>();
    let draft = RwSignal::new(String::new());

    Effect::new(move |_| {
        let id = route_id();
        if id == current.get_untracked() && id.is_some() {
            return;
        }
        current.set(id);
        messages.set(Vec::new());
        live.set(None);
        error.set(None);
        title.set(String::new());
        if let Some(id) = id {
            spawn_local(async move {
                match client::get_thread(id).await {
                    Ok(detail) if current.get_untracked() == Some(id) => {
                        title.set(detail.thread.title);
                        messages.set(detail.messages);
                    }
                    Ok(_) => {}
                    Err(e) => error.set(Some(e.message)),
                }
            });
        }
    });

    let send = move || {
        let content = draft.get_untracked().trim().to_string();
        if content.is_empty() || busy.get_untracked() {
            return;
        }
        busy.set(true);
        error.set(None);
        draft.set(String::new());
        let navigate = navigate.clone();
        spawn_local(async move {
            let id = match current.get_untracked() {
                Some(id) => id,
                None => match client::create_thread(&CreateThread::default()).await {
                    Ok(thread) => {
                        current.set(Some(thread.id));
                        navigate(&format!("/c/{}", thread.id), NavigateOptions { replace: true, ..Default::default() });
                        changed.notify();
                        thread.id
                    }
                    Err(e) => {
                        error.set(Some(e.message));
                        draft.set(content);
                        busy.set(false);
                        return;
                    }
                },
            };
            messages.update(|m| m.push(local_message(id, Role::User, content.clone())));
            live.set(Some(LiveAnswer::default()));
            let request = ChatRequest { content: content.clone(), artifact_generation: None };
            let result = client::chat(id, &request, |event| {
                // The person may have opened another conversation meanwhile: only the one on screen changes.
                if current.get_untracked() != Some(id) {
                    return;
                }
                match event {
                    ChatEvent::TextDelta { text } => live.update(|a| {
                        if let Some(a) = a {
                            a.text.push_str(&text)
                        }
                    }),
                    ChatEvent::ThreadName { title: t, .. } => {
                        title.set(t);
                        changed.notify();
                    }
                    ChatEvent::MessageComplete { message_id, .. } => {
                        let text = live.get_untracked().map(|a| a.text).unwrap_or_default();
                        live.set(None);
                        if message_id.is_some() {
                            let mut message = local_message(id, Role::Assistant, text);
                            message.id = message_id.unwrap_or(message.id);
                            messages.update(|m| m.push(message));
                        }
                    }
                    ChatEvent::Error { message, .. } => {
                        let text = live.get_untracked().map(|a| a.text).unwrap_or_default();
                        live.set(None);
                        if !text.is_empty() {
                            let mut message = local_message(id, Role::Assistant, text);
                            message.status = MessageStatus::Interrupted;
                            messages.update(|m| m.push(message));
                        }
                        error.set(Some(message));
                    }
                    ChatEvent::ToolExecuting { .. } | ChatEvent::ArtifactCreated { .. } => {}
                }
            })
            .await;
            if let Err(e) = result {
                live.set(None);
                error.set(Some(e.message));
            }
            busy.set(false);
        });
    };
    let send_click = {
        let send = send.clone();
        move |_| send()
    };
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            send();
        }
    };

    view! {
        <section class="chat" aria-label="Conversation">
            <header class="chat-head">
                <h1>{move || if title.get().is_empty() { "New conversation".to_string() } else { title.get() }}</h1>
            </header>
            <div class="messages" role="log" aria-live="polite">
                {move || (messages.with(Vec::is_empty) && live.with(Option::is_none)).then(|| view! {
                    <p class="empty">"Describe what you are building. Quire keeps track of your requirements and drafts documents from them."</p>
                })}
                <For each=move || messages.get() key=|m| m.id let:message>
                    <MessageBubble role=message.role content=message.content.clone() status=message.status/>
                </For>
                {move || live.get().map(|answer| view! {
                    <MessageBubble role=Role::Assistant content=answer.text streaming=true/>
                })}
            </div>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <form class="composer" on:submit=move |ev| ev.prevent_default()>
                <textarea
                    aria-label="Message"
                    placeholder="Message Quire (Enter to send, Shift+Enter for a new line)"
                    rows="2"
                    maxlength="10000"
                    prop:value=move || draft.get()
                    on:input=move |ev| draft.set(event_target_value(&ev))
                    on:keydown=on_keydown
                ></textarea>
                <button type="button" class="primary" on:click=send_click disabled=move || busy.get()>"Send"</button>
            </form>
        </section>
    }
}

/// A message shown before the server's copy is loaded.
fn local_message(thread_id: Uuid, role: Role, content: String) -> Message {
    Message {
        id: Uuid::from_u128(js_random_u128()),
        thread_id,
        seq: 0,
        role,
        content,
        status: MessageStatus::Complete,
        input_tokens: 0,
        output_tokens: 0,
        model: None,
        created_at: chrono::DateTime::<chrono::Utc>::default(),
    }
}

fn js_random_u128() -> u128 {
    let mut value = 0u128;
    for _ in 0..4 {
        value = (value << 32) | (js_sys::Math::random() * u32::MAX as f64) as u128;
    }
    value
}
