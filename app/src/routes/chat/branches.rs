//! The branches of a conversation on screen: the versions of a message ("‹ 2 / 3 ›"), editing one of the person's
//! messages and sending it again, another answer, and deleting a message with everything after it.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use uuid::Uuid;

use super::actions::{start_answer, turn_failed, ChatActions};
use crate::api::{client, Branching, ChatRequest, Message, Role, ThreadDetail};
use crate::components::message_bubble::MessageBubble;
use crate::components::modal::ModalDialog;
use crate::state::{js_random_u128, ErrorNote};

/// Where a message stands among its versions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Versions {
    /// Its place, from 1.
    pub(super) place: usize,
    pub(super) count: usize,
    pub(super) previous: Option<Uuid>,
    pub(super) next: Option<Uuid>,
}

/// The versions of `message`, when it has others.
pub(super) fn versions_of(branches: &[Branching], message: Uuid) -> Option<Versions> {
    let siblings = &branches.iter().find(|b| b.message_id == message)?.siblings;
    let at = siblings.iter().position(|&id| id == message)?;
    (siblings.len() > 1).then(|| Versions {
        place: at + 1,
        count: siblings.len(),
        previous: at.checked_sub(1).map(|i| siblings[i]),
        next: siblings.get(at + 1).copied(),
    })
}

/// The turn that starts a branch.
enum Fork {
    /// The person's message `of`, sent again as `content`.
    Edit { of: Uuid, content: String },
    /// Another answer beside the answer `of`.
    Answer { of: Uuid },
}

impl ChatActions {
    /// Shows the conversation as the server has it.
    pub(super) fn show(&self, detail: ThreadDetail) {
        let state = self.state();
        if state.current.get_untracked() != Some(detail.thread.id) {
            return;
        }
        let id = detail.thread.id;
        state.title.set(detail.thread.title);
        state.messages.set(detail.messages);
        state.artifacts.set(detail.artifacts);
        state.access.set(detail.access);
        state.writers.set(detail.writers);
        self.branches().list.set(detail.branches);
        // The ledger follows the path shown.
        super::requirements::refresh(*self, id, false);
    }

    /// Loads the conversation again and shows it (after a turn that changed its branches).
    async fn reload(self, id: Uuid) {
        match client::get_thread(id).await {
            Ok(detail) if !detail.running => self.show(detail),
            Ok(_) => {}
            Err(e) => self.state().error.set(Some(ErrorNote::new(e.message))),
        }
    }

    /// The server's id of a message on screen. A message sent from this page carries an id of the page's own until
    /// the conversation is loaded again: it is loaded then, and the message found at the same place.
    async fn saved_id(self, message: Uuid) -> Option<Uuid> {
        let state = self.state();
        let (place, role, local) = state.messages.with_untracked(|list| {
            let at = list.iter().position(|m| m.id == message)?;
            Some((at, list[at].role, list[at].seq == 0))
        })?;
        if !local {
            return Some(message);
        }
        let id = state.current.get_untracked()?;
        let detail = match client::get_thread(id).await {
            Ok(detail) => detail,
            Err(e) => {
                state.error.set(Some(ErrorNote::new(e.message)));
                return None;
            }
        };
        let found = detail.messages.get(place).filter(|m| m.role == role).map(|m| m.id);
        self.show(detail);
        found
    }

    /// Opens the edit of the person's last message on the shown path.
    pub(super) fn edit_last(&self) -> bool {
        let last =
            self.state().messages.with_untracked(|list| list.iter().rfind(|m| m.role == Role::User).map(|m| m.id));
        if let Some(id) = last {
            self.branches().editing.set(Some(id));
        }
        last.is_some()
    }

    /// Sends a new version of the person's message `of` and follows its answer.
    pub(super) fn send_edit(self, of: Uuid, content: String) {
        if !content.trim().is_empty() {
            self.fork(of, Fork::Edit { of, content: content.trim().to_string() });
        }
    }

    /// Asks for another answer in place of `answer` (which stays, one version back).
    pub(super) fn regenerate(self, answer: Uuid) {
        self.fork(answer, Fork::Answer { of: answer });
    }

    /// Starts a turn that starts a branch at the message `at` (see [`run_fork`]), unless one is running.
    fn fork(self, at: Uuid, fork: Fork) {
        let state = self.state();
        let Some(id) = state.current.get_untracked() else { return };
        if self.occupied() {
            return;
        }
        self.begin_turn();
        // An edited message's box stays until its row has left the list (see [`run_fork`]): a row switched back
        // to its bubble in the same tick as the list drops it could leave its text behind in the next row.
        if matches!(fork, Fork::Answer { .. }) {
            self.branches().editing.set(None);
        }
        spawn_local(run_fork(self, id, at, fork));
    }

    /// Shows the branch through `message` (another version of a message).
    pub(super) fn switch_to(self, message: Uuid) {
        let state = self.state();
        let Some(id) = state.current.get_untracked() else { return };
        spawn_local(async move {
            match client::switch_branch(id, message).await {
                Ok(detail) => {
                    state.error.set(None);
                    self.show(detail);
                }
                Err(e) => state.error.set(Some(ErrorNote::new(e.message))),
            }
        });
    }
}

/// Runs a turn that branches at message `at` of conversation `id`: the path up to there (and an edit), the answer
/// streaming below, then the conversation as stored. Loaded at a first edit or new answer (split out in release).
#[lazy]
async fn run_fork(actions: ChatActions, id: Uuid, at: Uuid, fork: Fork) {
    let state = actions.state();
    let Some(at) = actions.saved_id(at).await else {
        state.busy.set(false);
        return;
    };
    let fork = match fork {
        Fork::Edit { content, .. } => Fork::Edit { of: at, content },
        Fork::Answer { .. } => Fork::Answer { of: at },
    };
    state.messages.update(|list| {
        if let Some(place) = list.iter().position(|m| m.id == at) {
            list.truncate(place);
        }
        if let Fork::Edit { content, .. } = &fork {
            list.push(state.sent_message(id, content.clone()));
        }
    });
    start_answer(state);
    let changed = actions.changed();
    let result = match &fork {
        Fork::Edit { of, content } => {
            let request =
                ChatRequest { content: content.clone(), artifact_generation: None, edit_of: Some(*of), quote: None };
            client::chat(id, &request, |event| state.apply(id, event, content, changed)).await
        }
        Fork::Answer { of } => {
            let key = Uuid::from_u128(js_random_u128()).to_string();
            client::regenerate(id, *of, &key, |event| state.apply(id, event, "", changed)).await
        }
    };
    // The edited message's row is gone by now; nothing is left to switch back.
    actions.branches().editing.set(None);
    if let Err(e) = result {
        turn_failed(state, id, e, None);
    }
    actions.reload(id).await;
    state.busy.set(false);
}

/// Deletes `message` and everything after it, then shows what remains; a refusal is shown in `error`.
async fn delete_message(actions: ChatActions, message: Uuid, working: RwSignal<bool>, error: RwSignal<Option<String>>) {
    let state = actions.state();
    let deleting = actions.branches().deleting;
    let Some(id) = state.current.get_untracked() else { return };
    working.set(true);
    error.set(None);
    let Some(message) = actions.saved_id(message).await else {
        return deleting.set(None);
    };
    match client::delete_message(id, message).await {
        Ok(()) => {
            deleting.set(None);
            actions.reload(id).await;
        }
        Err(e) => {
            working.set(false);
            error.set(Some(e.message));
        }
    }
}

/// A message of the conversation: its bubble with what can be done with it, or the box that edits it.
#[component]
pub(super) fn MessageRow(message: Message, actions: ChatActions, highlighted: Signal<bool>) -> impl IntoView {
    let id = message.id;
    let editing = actions.branches().editing;
    let is_editing = Memo::new(move |_| editing.get() == Some(id));
    move || {
        let m = message.clone();
        if is_editing.get() {
            return view! { <Suspense fallback=|| ()>{Suspend::new(message_editor(id, m.content, actions))}</Suspense> }
                .into_any();
        }
        let (role, content, status) = (m.role, m.content.clone(), m.status);
        let quote = m.quote.clone().map(|q| {
            let state = expect_context::<crate::state::ChatState>();
            let title = state
                .artifacts
                .with_untracked(|list| list.iter().find(|a| a.id == q.artifact_id).map(|a| a.title.clone()));
            (title.unwrap_or_else(|| "a document".to_string()), q.text)
        });
        // Who wrote a person's message, where more than the conversation's author writes.
        let writer =
            (role == Role::User).then(|| expect_context::<crate::state::ChatState>().writer_of(m.author_id)).flatten();
        // Which model wrote an answer.
        let written_by = m.model.clone().filter(|_| role == Role::Assistant).map(|model| {
            view! { <span class="answer-model" data-testid="answer-model" title="Model">{model}</span> }
        });
        view! {
            <MessageBubble role content status saved=(m.id, m.thread_id) highlighted quote writer>
                {written_by}
                <MessageTools id role actions/>
            </MessageBubble>
        }
        .into_any()
    }
}

/// Under a message: its versions ("‹ 2 / 3 ›"), Edit (the person's) or Regenerate (an answer), and Delete.
#[component]
fn MessageTools(id: Uuid, role: Role, actions: ChatActions) -> impl IntoView {
    let branches = actions.branches();
    let versions = Memo::new(move |_| branches.list.with(|list| versions_of(list, id)));
    let occupied = occupied(actions);
    let access = actions.state().access.get_untracked();
    // The branch shown is the conversation's, for everyone reading it: its author and editors switch it.
    let reads_only = !access.writes();
    let switcher = move || {
        versions.get().map(|v| {
            let go = move |to: Option<Uuid>| move |_| to.into_iter().for_each(|m| actions.switch_to(m));
            view! {
                <span class="message-versions" role="group" aria-label="Versions">
                    <button type="button" class="icon-button" aria-label="Previous version" title="Previous version"
                        disabled=v.previous.is_none() || reads_only on:click=go(v.previous)>"‹"</button>
                    <span class="version-place">{format!("{} / {}", v.place, v.count)}</span>
                    <button type="button" class="icon-button" aria-label="Next version" title="Next version"
                        disabled=v.next.is_none() || reads_only on:click=go(v.next)>"›"</button>
                </span>
            }
        })
    };
    if reads_only {
        return view! { <div class="message-tools">{switcher}</div> }.into_any();
    }
    let change = match role {
        Role::User => view! {
            <button type="button" aria-label="Edit message" on:click=move |_| branches.editing.set(Some(id))>"Edit"</button>
        }
        .into_any(),
        Role::Assistant => {
            view! { <button type="button" disabled=occupied on:click=move |_| actions.regenerate(id)>"Regenerate"</button> }.into_any()
        }
    };
    view! {
        <div class="message-tools">
            {switcher}
            {change}
            // Removing messages is the author's: a project's editors add to the conversation.
            {(access == crate::api::ThreadAccess::Author).then(|| view! {
                <button type="button" aria-label="Delete message" disabled=occupied on:click=move |_| branches.deleting.set(Some(id))>"Delete"</button>
            })}
        </div>
    }
    .into_any()
}

/// The person's message as a text box: Send makes it a new version and asks again; Cancel (or Escape) leaves it.
/// Loaded when a first message is edited (split out of the main wasm bundle in release builds).
#[lazy]
fn message_editor(id: Uuid, content: String, actions: ChatActions) -> AnyView {
    let text = RwSignal::new(content);
    let editing = actions.branches().editing;
    let occupied = occupied(actions);
    let node = NodeRef::<html::Textarea>::new();
    // Once the box is in the page (it is drawn before it is put there).
    Effect::new(move |_| {
        if let Some(area) = node.get() {
            request_animation_frame(move || {
                // Someone quicker (typing already, or a test filling the box) keeps their caret and selection.
                let focused = web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.active_element())
                    .is_some_and(|active| active == **area);
                if !focused {
                    let _ = area.focus();
                    let end = area.value().len() as u32;
                    let _ = area.set_selection_range(end, end);
                }
                area.scroll_into_view_with_bool(false);
            });
        }
    });
    let send = move || actions.send_edit(id, text.get_untracked());
    let cancel = move || {
        editing.set(None);
        focus_message_box();
    };
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Enter" if !ev.shift_key() && !ev.is_composing() => {
            ev.prevent_default();
            send();
        }
        "Escape" => cancel(),
        _ => {}
    };
    view! {
        <form class="bubble user message-editor" aria-label="Edit message" on:submit=move |ev| {
            ev.prevent_default();
            send();
        }>
            <textarea aria-label="Edited text" rows="3" maxlength="10000" node_ref=node
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev)) on:keydown=on_keydown
            ></textarea>
            <div class="editor-actions">
                <button type="button" on:click=move |_| cancel()>"Cancel"</button>
                <button type="submit" class="primary" disabled=move || occupied.get() || text.with(|t| t.trim().is_empty())>"Send"</button>
            </div>
        </form>
    }
    .into_any()
}

/// Whether an answer or a document is being written: no new branch starts and nothing is deleted meanwhile.
fn occupied(actions: ChatActions) -> Signal<bool> {
    let state = actions.state();
    Signal::derive(move || state.busy.get() || state.generating.get().is_some())
}

/// Gives focus back to the message box once the editor is gone.
fn focus_message_box() {
    use wasm_bindgen::JsCast;
    request_animation_frame(|| {
        let page = web_sys::window().and_then(|w| w.document());
        let area = page.and_then(|d| d.query_selector("textarea[aria-label=Message]").ok().flatten());
        if let Some(area) = area.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
            let _ = area.focus();
        }
    });
}

/// Asks before a message goes, saying that what follows it goes too.
#[component]
pub(super) fn DeleteMessageDialog(actions: ChatActions) -> impl IntoView {
    let deleting = actions.branches().deleting;
    move || {
        deleting.get().map(|id| {
            view! { <Suspense fallback=|| ()>{Suspend::new(delete_message_dialog(id, actions))}</Suspense> }
        })
    }
}

/// The dialog that confirms deleting `id`. Loaded when a first message is about to be deleted (split out of the
/// main wasm bundle in release builds).
#[lazy]
fn delete_message_dialog(id: Uuid, actions: ChatActions) -> AnyView {
    let deleting = actions.branches().deleting;
    let error = RwSignal::new(None::<String>);
    let working = RwSignal::new(false);
    let cancel = Callback::new(move |_| deleting.set(None));
    let confirm = move |_| spawn_local(delete_message(actions, id, working, error));
    view! {
        <ModalDialog title="Delete message?" on_close=cancel>
            <p>"This message and every later message that follows from it, on every branch, will be deleted. This cannot be undone."</p>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <div class="modal-actions">
                <button type="button" autofocus on:click=move |_| cancel.run(())>"Cancel"</button>
                <button type="button" class="danger" disabled=move || working.get() on:click=confirm>"Delete"</button>
            </div>
        </ModalDialog>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_say_where_a_message_stands_among_its_siblings() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let branches = vec![Branching { message_id: b, siblings: vec![a, b, c] }];
        assert_eq!(versions_of(&branches, b), Some(Versions { place: 2, count: 3, previous: Some(a), next: Some(c) }));
        let first = vec![Branching { message_id: a, siblings: vec![a, b] }];
        assert_eq!(versions_of(&first, a), Some(Versions { place: 1, count: 2, previous: None, next: Some(b) }));
        assert_eq!(versions_of(&branches, a), None, "not on the shown path");
        assert_eq!(versions_of(&[Branching { message_id: a, siblings: vec![a] }], a), None, "alone");
    }
}
