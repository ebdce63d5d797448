//! The chat page: bubbles, document cards, the live answer, the message box, Stop and Generate.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};
use leptos_router::NavigateOptions;
use uuid::Uuid;

use crate::api::{
    client, Artifact, ArtifactType, ChatEvent, ChatRequest, CreateThread, Message, MessageStatus, Role, Thread,
};
use crate::components::artifact_card::{artifact_viewer, ArtifactCard, DocumentsPanel};
use crate::components::generate_menu::GenerateMenu;
use crate::components::message_bubble::MessageBubble;
use crate::ThreadsChanged;

/// The answer being written right now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveAnswer {
    text: String,
}

/// Shortest time a tool's status line stays on screen. A quick tool (saving a document takes a few
/// milliseconds) would otherwise come and go within one frame, and people would never see what happened.
const MIN_STATUS_MS: f64 = 700.0;

/// The status line of the tool a turn runs ("Saving artifact…").
#[derive(Clone, Copy)]
struct ToolStatus {
    text: RwSignal<Option<String>>,
    /// When the line appeared (`Date.now()`), and which line it is, so a late clear never hides a newer one.
    /// Nothing renders from these, so they are plain stored values rather than signals.
    shown_at: StoredValue<f64>,
    shown: StoredValue<u64>,
}

impl ToolStatus {
    fn new() -> Self {
        Self { text: RwSignal::new(None), shown_at: StoredValue::new(0.0), shown: StoredValue::new(0) }
    }

    fn show(&self, tool: &str) {
        self.shown.update_value(|n| *n += 1);
        self.shown_at.set_value(js_sys::Date::now());
        self.text.set(Some(tool_status(tool)));
    }

    /// Hides the line once it has been on screen for [`MIN_STATUS_MS`].
    fn clear(&self) {
        if self.text.with_untracked(Option::is_none) {
            return;
        }
        let left = MIN_STATUS_MS - (js_sys::Date::now() - self.shown_at.get_value());
        if left <= 0.0 {
            self.text.set(None);
            return;
        }
        let (this, line) = (*self, self.shown.get_value());
        set_timeout(
            move || {
                if this.shown.get_value() == line {
                    this.text.set(None);
                }
            },
            std::time::Duration::from_millis(left as u64),
        );
    }
}

/// An error shown in place, with what "Retry" does.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorNote {
    message: String,
    retry: Option<Retry>,
}

impl ErrorNote {
    fn new(message: String) -> Self {
        Self { message, retry: None }
    }
}

/// What "Retry" does after a message failed.
#[derive(Clone, Debug, PartialEq)]
enum Retry {
    /// The server refused the message before saving it: it is sent again, in place of its bubble.
    Resend { content: String, bubble: Uuid },
    /// The message may be saved: its turn is run again if it is (the server keeps it once), and it is sent
    /// again if it is not. `saved`: the turn had started, so the message is the conversation's latest.
    Rerun { content: String, saved: bool },
}

/// The person's latest message when every answer after it failed (what Retry runs again), if it is the one
/// sent as `content` (any text when `content` is `None`).
fn failed_request<'a>(messages: &'a [Message], content: Option<&str>) -> Option<&'a Message> {
    let position = messages.iter().rposition(|m| m.role == Role::User)?;
    let request = &messages[position];
    let failed = messages[position + 1..]
        .iter()
        .all(|m| m.role == Role::Assistant && matches!(m.status, MessageStatus::Interrupted | MessageStatus::Error));
    (failed && content.is_none_or(|c| c.trim() == request.content)).then_some(request)
}

/// The conversation on screen. It lives above the router, so a running stream keeps its state when the
/// address changes from `/` to `/c/<id>` after the first message.
#[derive(Clone, Copy)]
pub struct ChatState {
    current: RwSignal<Option<Uuid>>,
    messages: RwSignal<Vec<Message>>,
    artifacts: RwSignal<Vec<Artifact>>,
    live: RwSignal<Option<LiveAnswer>>,
    tool: ToolStatus,
    /// Documents made by the running turn, linked to its answer when it completes.
    turn_artifacts: RwSignal<Vec<Uuid>>,
    busy: RwSignal<bool>,
    generating: RwSignal<Option<ArtifactType>>,
    error: RwSignal<Option<ErrorNote>>,
    title: RwSignal<String>,
    open: RwSignal<Option<Artifact>>,
}

impl ChatState {
    pub fn new() -> Self {
        Self {
            current: RwSignal::new(None),
            messages: RwSignal::new(Vec::new()),
            artifacts: RwSignal::new(Vec::new()),
            live: RwSignal::new(None),
            tool: ToolStatus::new(),
            turn_artifacts: RwSignal::new(Vec::new()),
            busy: RwSignal::new(false),
            generating: RwSignal::new(None),
            error: RwSignal::new(None),
            title: RwSignal::new(String::new()),
            open: RwSignal::new(None),
        }
    }

    fn reset(&self, id: Option<Uuid>) {
        self.current.set(id);
        self.messages.set(Vec::new());
        self.artifacts.set(Vec::new());
        self.live.set(None);
        self.tool.text.set(None);
        self.turn_artifacts.set(Vec::new());
        self.error.set(None);
        self.title.set(String::new());
        self.open.set(None);
    }

    /// Applies one event of a typed turn of thread `id`.
    fn apply(&self, id: Uuid, event: ChatEvent, retry: &str, changed: ThreadsChanged) {
        // The person may have opened another conversation meanwhile: only the one on screen changes.
        if self.current.get_untracked() != Some(id) {
            return;
        }
        match event {
            ChatEvent::TextDelta { text } => {
                self.live.update(|a| a.get_or_insert_with(LiveAnswer::default).text.push_str(&text));
                self.tool.clear();
            }
            ChatEvent::ThreadName { title, .. } => {
                self.title.set(title);
                changed.notify();
            }
            ChatEvent::ToolExecuting { tool, .. } => {
                self.live.update(|a| {
                    a.get_or_insert_with(LiveAnswer::default);
                });
                self.tool.show(&tool);
            }
            ChatEvent::ArtifactCreated { artifact } => {
                self.turn_artifacts.update(|t| t.push(artifact.id));
                self.upsert_artifact(artifact);
            }
            ChatEvent::MessageComplete { message_id, stopped, .. } => {
                let status = if stopped { MessageStatus::Stopped } else { MessageStatus::Complete };
                self.end_turn(id, message_id, status)
            }
            ChatEvent::Error { message, .. } => {
                let partial = self.live.with_untracked(|a| a.as_ref().is_some_and(|a| !a.text.is_empty()));
                self.end_turn(id, partial.then(|| Uuid::from_u128(js_random_u128())), MessageStatus::Interrupted);
                let retry = Retry::Rerun { content: retry.to_string(), saved: true };
                self.error.set(Some(ErrorNote { message, retry: Some(retry) }));
            }
        }
    }

    fn upsert_artifact(&self, artifact: Artifact) {
        self.artifacts.update(|list| match list.iter_mut().find(|a| a.id == artifact.id) {
            Some(existing) => *existing = artifact,
            None => list.push(artifact),
        });
    }

    /// Turns the live answer into a message (when one was saved) and links the turn's documents to it.
    fn end_turn(&self, thread: Uuid, message_id: Option<Uuid>, status: MessageStatus) {
        let text = self.live.get_untracked().map(|a| a.text).unwrap_or_default();
        self.live.set(None);
        self.tool.clear();
        let made = std::mem::take(&mut *self.turn_artifacts.write());
        if let Some(id) = message_id {
            let mut message = local_message(thread, Role::Assistant, text);
            message.id = id;
            message.status = status;
            self.messages.update(|m| m.push(message));
            self.artifacts.update(|list| {
                for a in list.iter_mut().filter(|a| made.contains(&a.id)) {
                    a.assistant_message_id = Some(id);
                }
            });
        }
    }
}

impl ChatState {
    /// Shows a new title when the conversation on screen was renamed elsewhere (the sidebar).
    pub fn renamed(&self, thread: &Thread) {
        if self.current.get_untracked() == Some(thread.id) {
            self.title.set(thread.title.clone());
        }
    }

    /// The conversation open in the chat view (it stays open while another page is shown).
    pub fn open_thread(&self) -> Option<Uuid> {
        self.current.get()
    }

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

/// One row of the conversation.
#[derive(Clone, Debug, PartialEq)]
enum Row {
    Message(Message),
    Document(Artifact),
}

impl Row {
    fn key(&self) -> (Uuid, i64, MessageStatus, usize) {
        match self {
            Row::Message(m) => (m.id, 0, m.status, m.content.len()),
            Row::Document(a) => (a.id, a.version, MessageStatus::Complete, a.title.len()),
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

/// Shows a conversation (`/c/:id`) or an empty one (`/`) that is created on the first message.
#[component]
pub fn ChatPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let navigate = use_navigate();
    let changed = expect_context::<ThreadsChanged>();
    let state = expect_context::<ChatState>();
    let ChatState { current, messages, artifacts, live, tool, turn_artifacts, busy, generating, error, title, open } =
        state;
    let tool_line = tool.text;
    let draft = RwSignal::new(String::new());
    let scroller = NodeRef::<html::Div>::new();
    let follow = RwSignal::new(true);
    // Where following last put the view: the view stops following only when it is moved up from there.
    let followed_to = StoredValue::new(0);

    let route_id = move || params.with(|p| p.get("id").and_then(|s| Uuid::parse_str(&s).ok()));
    // The message a search result points at (`?m=<id>`): scrolled to and highlighted.
    let target = Memo::new(move |_| query.with(|q| q.get("m").and_then(|s| Uuid::parse_str(&s).ok())));
    // `current` is set before navigating to a thread this page just created, so it is not reloaded (unless the
    // message asked for is not among those on screen, e.g. one sent from this page before the server named it).
    Effect::new(move |_| {
        let id = route_id();
        let wanted = target.get();
        let on_screen = wanted.is_none_or(|m| messages.with_untracked(|list| list.iter().any(|x| x.id == m)));
        if id == current.get_untracked() && id.is_some() && on_screen {
            return;
        }
        state.reset(id);
        let Some(id) = id else { return };
        spawn_local(async move {
            match client::get_thread(id).await {
                Ok(detail) if current.get_untracked() == Some(id) => {
                    title.set(detail.thread.title);
                    let mut list = detail.messages;
                    if detail.running && list.last().is_some_and(|m| m.role == Role::Assistant) {
                        // The answer being written is replayed below from the turn's events.
                        list.pop();
                    }
                    messages.set(list);
                    artifacts.set(detail.artifacts);
                    if detail.running {
                        busy.set(true);
                        live.set(Some(LiveAnswer::default()));
                        let result = client::resume(id, |event| state.apply(id, event, "", changed)).await;
                        if let Err(e) = result {
                            error.set(Some(ErrorNote::new(e.message)));
                        }
                        live.set(None);
                        busy.set(false);
                    }
                }
                Ok(_) => {}
                Err(e) => error.set(Some(ErrorNote::new(e.message))),
            }
        });
    });

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
        request_animation_frame(move || {
            let selector = format!("[data-message-id=\"{wanted}\"]");
            let element =
                web_sys::window().and_then(|w| w.document()).and_then(|d| d.query_selector(&selector).ok().flatten());
            if let Some(element) = element {
                let options = web_sys::ScrollIntoViewOptions::new();
                options.set_block(web_sys::ScrollLogicalPosition::Center);
                element.scroll_into_view_with_scroll_into_view_options(&options);
            }
        });
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

    // Makes sure there is a thread to talk in: creates one on the first message.
    let ensure_thread = move || {
        let navigate = navigate.clone();
        async move {
            if let Some(id) = current.get_untracked() {
                return Some(id);
            }
            match client::create_thread(&CreateThread::default()).await {
                Ok(thread) => {
                    current.set(Some(thread.id));
                    navigate(&format!("/c/{}", thread.id), NavigateOptions { replace: true, ..Default::default() });
                    changed.notify();
                    Some(thread.id)
                }
                Err(e) => {
                    error.set(Some(ErrorNote::new(e.message)));
                    None
                }
            }
        }
    };

    let send_text = {
        let ensure_thread = ensure_thread.clone();
        move |content: String| {
            if content.trim().is_empty() || busy.get_untracked() || generating.get_untracked().is_some() {
                return;
            }
            busy.set(true);
            error.set(None);
            follow.set(true);
            let ensure_thread = ensure_thread.clone();
            spawn_local(async move {
                let Some(id) = ensure_thread().await else {
                    draft.set(content);
                    busy.set(false);
                    return;
                };
                let sent = local_message(id, Role::User, content.clone());
                let sent_id = sent.id;
                messages.update(|m| m.push(sent));
                live.set(Some(LiveAnswer::default()));
                turn_artifacts.set(Vec::new());
                let request = ChatRequest { content: content.clone(), artifact_generation: None };
                let mut started = false;
                let result = client::chat(id, &request, |event| {
                    started = true;
                    state.apply(id, event, &content, changed)
                })
                .await;
                if let Err(e) = result {
                    if live.get_untracked().is_some() {
                        state.end_turn(id, None, MessageStatus::Interrupted);
                    }
                    if e.status == 409 || e.status == 422 {
                        // Not saved: drop the optimistic bubble and give the text back.
                        messages.update(|m| m.retain(|x| x.id != sent_id));
                        draft.set(content.clone());
                    }
                    // An answer with an error status: the server did not save the message. A network failure
                    // may have come before or after it did.
                    let retry = match e.status {
                        422 => None,
                        0 => Some(Retry::Rerun { content, saved: started }),
                        _ => Some(Retry::Resend { content, bubble: sent_id }),
                    };
                    error.set(Some(ErrorNote { message: e.message, retry }));
                }
                busy.set(false);
            });
        }
    };
    let send = {
        let send_text = send_text.clone();
        move || {
            let content = draft.get_untracked().trim().to_string();
            if !content.is_empty() && !busy.get_untracked() {
                draft.set(String::new());
                send_text(content);
            }
        }
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
    let stop = move |_| {
        if let Some(id) = current.get_untracked() {
            spawn_local(async move {
                if let Err(e) = client::stop(id).await {
                    error.set(Some(ErrorNote::new(e.message)));
                }
            });
        }
    };
    // Runs the failed turn of a saved message again, so the server never stores the message twice; a message it
    // does not have is sent again.
    let rerun = {
        let send_text = send_text.clone();
        move |content: String, saved: bool| {
            let Some(id) = current.get_untracked() else { return send_text(content) };
            busy.set(true);
            follow.set(true);
            let send_text = send_text.clone();
            spawn_local(async move {
                let detail = match client::get_thread(id).await {
                    Ok(detail) => detail,
                    Err(e) => {
                        busy.set(false);
                        error.set(Some(ErrorNote { message: e.message, retry: Some(Retry::Rerun { content, saved }) }));
                        return;
                    }
                };
                if current.get_untracked() != Some(id) {
                    busy.set(false);
                    return;
                }
                let Some(request) = failed_request(&detail.messages, (!saved).then_some(content.as_str())).cloned()
                else {
                    // Never saved: shown as the server has the conversation, then sent again.
                    messages.set(detail.messages);
                    busy.set(false);
                    send_text(content);
                    return;
                };
                // The failed attempt's partial answer makes way for the new one.
                messages.set(detail.messages.into_iter().filter(|m| m.seq <= request.seq).collect());
                artifacts.set(detail.artifacts);
                live.set(Some(LiveAnswer::default()));
                turn_artifacts.set(Vec::new());
                let result = client::retry(id, request.id, |event| state.apply(id, event, &content, changed)).await;
                if let Err(e) = result {
                    if live.get_untracked().is_some() {
                        state.end_turn(id, None, MessageStatus::Interrupted);
                    }
                    let retry = (e.status != 404).then_some(Retry::Rerun { content, saved: true });
                    error.set(Some(ErrorNote { message: e.message, retry }));
                }
                busy.set(false);
            });
        }
    };
    let retry = {
        let send_text = send_text.clone();
        move |_| {
            if busy.get_untracked() || generating.get_untracked().is_some() {
                return;
            }
            let Some(retry) = error.get_untracked().and_then(|note| note.retry) else { return };
            error.set(None);
            match retry {
                Retry::Resend { content, bubble } => {
                    // Sent again in its place, so it shows once.
                    messages.update(|m| m.retain(|x| x.id != bubble));
                    send_text(content);
                }
                Retry::Rerun { content, saved } => rerun(content, saved),
            }
        }
    };

    // Silent generation: no bubbles, only the indicator and then the card.
    let generate = Callback::new(move |kind: ArtifactType| {
        if busy.get_untracked() || generating.get_untracked().is_some() {
            return;
        }
        let Some(id) = current.get_untracked() else { return };
        generating.set(Some(kind));
        error.set(None);
        spawn_local(async move {
            let request = ChatRequest {
                content: format!("Generate {} from this conversation", kind.label()),
                artifact_generation: Some(true),
            };
            let mut made = false;
            let mut failure = None;
            let result = client::chat(id, &request, |event| match event {
                ChatEvent::ArtifactCreated { artifact } if current.get_untracked() == Some(id) => {
                    made = true;
                    state.upsert_artifact(artifact);
                }
                ChatEvent::Error { message, .. } => failure = Some(message),
                _ => {}
            })
            .await;
            generating.set(None);
            let failure = failure.or_else(|| result.err().map(|e| e.message));
            if let Some(message) = failure.or_else(|| (!made).then(|| "No document came back. Try again.".to_string()))
            {
                if current.get_untracked() == Some(id) {
                    error.set(Some(ErrorNote::new(message)));
                }
            }
        });
    });

    let open_card = Callback::new(move |a: Artifact| open.set(Some(a)));
    let close_viewer = Callback::new(move |_| open.set(None));
    let delete_artifact = Callback::new(move |a: Artifact| {
        spawn_local(async move {
            match client::delete_artifact(a.id).await {
                Ok(()) => {
                    artifacts.update(|list| list.retain(|x| x.id != a.id));
                    open.set(None);
                }
                Err(e) => error.set(Some(ErrorNote::new(e.message))),
            }
        });
    });

    let timeline = move || {
        let live_ids = turn_artifacts.get();
        messages.with(|m| artifacts.with(|a| rows(m, a, &live_ids)))
    };
    let live_cards = move || {
        let ids = turn_artifacts.get();
        artifacts.with(|list| list.iter().filter(|a| ids.contains(&a.id)).cloned().collect::<Vec<_>>())
    };
    let no_thread = Signal::derive(move || current.get().is_none() || busy.get() || generating.get().is_some());

    view! {
        <section class="chat" aria-label="Conversation">
            <ChatHeader title current artifacts on_open=open_card/>
            <div class="messages" role="log" aria-live="polite" node_ref=scroller on:scroll=on_scroll on:click=copy_code>
                {move || (messages.with(Vec::is_empty) && live.with(Option::is_none) && artifacts.with(Vec::is_empty)).then(|| view! {
                    <p class="empty">"Describe what you are building. Quire keeps track of your requirements and drafts documents from them."</p>
                })}
                <For each=timeline key=Row::key let:row>
                    {match row {
                        Row::Message(m) => {
                            let id = m.id;
                            let highlighted = Signal::derive(move || target.get() == Some(id));
                            view! {
                                <MessageBubble role=m.role content=m.content.clone() status=m.status saved=(m.id, m.thread_id) highlighted/>
                            }.into_any()
                        }
                        Row::Document(a) => view! { <ArtifactCard artifact=a on_open=open_card/> }.into_any(),
                    }}
                </For>
                {move || live.get().map(|answer| view! {
                    <MessageBubble role=Role::Assistant content=answer.text streaming=true/>
                })}
                {move || tool_line.get().map(|s| view! { <p class="tool-status" role="status">{s}</p> })}
                <For each=live_cards key=|a| (a.id, a.version) let:a>
                    <ArtifactCard artifact=a on_open=open_card/>
                </For>
                {move || generating.get().map(|kind| view! {
                    <div class="generating" role="status" data-testid="generating-indicator">
                        <span class="spinner" aria-hidden="true"></span>
                        {format!("Generating {}…", kind.label())}
                    </div>
                })}
            </div>
            {move || error.get().map(|e| {
                let can_retry = e.retry.is_some();
                view! {
                    <div class="error" role="alert">
                        <span>{e.message}</span>
                        {can_retry.then(|| view! { <button type="button" on:click=retry.clone()>"Retry"</button> })}
                    </div>
                }
            })}
            <form class="composer" on:submit=move |ev| ev.prevent_default()>
                <GenerateMenu disabled=no_thread on_pick=generate/>
                <textarea
                    aria-label="Message"
                    placeholder="Message Quire (Enter to send, Shift+Enter for a new line)"
                    rows="2"
                    maxlength="10000"
                    prop:value=move || draft.get()
                    on:input=move |ev| draft.set(event_target_value(&ev))
                    on:keydown=on_keydown
                ></textarea>
                {move || if busy.get() {
                    view! { <button type="button" class="stop" on:click=stop>"Stop"</button> }.into_any()
                } else {
                    view! { <button type="button" class="primary" on:click=send_click.clone()>"Send"</button> }.into_any()
                }}
            </form>
            {move || open.get().map(|a| view! {
                <Suspense fallback=|| ()>{Suspend::new(artifact_viewer(a, close_viewer, delete_artifact))}</Suspense>
            })}
        </section>
    }
}

/// The conversation's title, its documents and its downloads (once it exists).
#[component]
fn ChatHeader(
    title: RwSignal<String>,
    current: RwSignal<Option<Uuid>>,
    artifacts: RwSignal<Vec<Artifact>>,
    on_open: Callback<Artifact>,
) -> impl IntoView {
    // Erased: the chat page's view type is deep enough without this one nested in it.
    view! {
        <header class="chat-head">
            <h1>{move || if title.get().is_empty() { "New conversation".to_string() } else { title.get() }}</h1>
            {move || current.get().map(|id| view! {
                <DocumentsPanel artifacts on_open/>
                <div class="chat-actions" role="group" aria-label="Export conversation">
                    <a class="button" href=client::thread_export_url(id, "json") download>"Export JSON"</a>
                    <a class="button" href=client::thread_export_url(id, "markdown") download>"Export Markdown"</a>
                </div>
            })}
        </header>
    }
    .into_any()
}

/// Copies a code block when its "Copy" button (rendered with the Markdown) is clicked.
fn copy_code(ev: leptos::ev::MouseEvent) {
    use wasm_bindgen::JsCast;
    let Some(button) = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else { return };
    if !button.class_list().contains("copy-code") {
        return;
    }
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

/// The status line shown while a tool runs.
fn tool_status(tool: &str) -> String {
    match tool {
        "save_artifact" => "Saving artifact…".to_string(),
        "document_search" => "Searching your documents…".to_string(),
        other => format!("Running {other}…"),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn message(seq: i64, role: Role, content: &str, status: MessageStatus) -> Message {
        Message {
            id: Uuid::from_u128(seq as u128),
            thread_id: Uuid::nil(),
            seq,
            role,
            content: content.into(),
            status,
            input_tokens: 0,
            output_tokens: 0,
            model: None,
            created_at: chrono::DateTime::<chrono::Utc>::default(),
        }
    }

    #[test]
    fn retry_runs_the_latest_message_again_only_when_its_answers_failed() {
        let mut conversation = vec![
            message(1, Role::User, "Hi", MessageStatus::Complete),
            message(2, Role::Assistant, "Hello", MessageStatus::Complete),
            message(3, Role::User, "Plan the launch", MessageStatus::Complete),
        ];
        let request = Some(Uuid::from_u128(3));
        assert_eq!(failed_request(&conversation, None).map(|m| m.id), request, "nothing came back");
        conversation.push(message(4, Role::Assistant, "The first half", MessageStatus::Interrupted));
        assert_eq!(failed_request(&conversation, None).map(|m| m.id), request, "cut short");
        assert_eq!(failed_request(&conversation, Some(" Plan the launch ")).map(|m| m.id), request);
        assert_eq!(failed_request(&conversation, Some("Another message")), None, "never saved");
        conversation.push(message(5, Role::Assistant, "All of it", MessageStatus::Complete));
        assert_eq!(failed_request(&conversation, None), None, "answered");
        assert_eq!(failed_request(&conversation[..2], None), None);
    }
}
