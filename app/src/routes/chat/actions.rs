//! What the chat page does when people act: send a message, run a failed turn again, stop, generate a document
//! silently, delete a document. The state they change is [`ChatState`]; this holds only what the page adds.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::NavigateOptions;
use uuid::Uuid;

use super::budget_banner::show_if_over_budget;
use crate::api::client::ApiError;
use crate::api::{
    client, Artifact, ArtifactType, Branching, ChatEvent, ChatRequest, CreateThread, MessageStatus, UpdateThread,
};
use crate::components::model_picker::ModelChoice;
use crate::components::requirements_panel::LedgerPanel;
use crate::state::{failed_request, ChatState, ErrorNote, LiveAnswer, Retry, ThreadsChanged};

/// Moves the browser to another address of the app.
type Navigate = Box<dyn Fn(&str, NavigateOptions)>;

/// What the chat page knows of the shown path's branches, and which message is being edited or deleted.
#[derive(Clone, Copy)]
pub(super) struct Branches {
    /// The messages of the shown path that have other versions.
    pub(super) list: RwSignal<Vec<Branching>>,
    /// The message shown as a text box to edit.
    pub(super) editing: RwSignal<Option<Uuid>>,
    /// The message whose deletion waits for a confirmation.
    pub(super) deleting: RwSignal<Option<Uuid>>,
}

impl Branches {
    pub(super) fn new() -> Self {
        Self { list: RwSignal::new(Vec::new()), editing: RwSignal::new(None), deleting: RwSignal::new(None) }
    }

    /// Forgets everything of the conversation shown before.
    pub(super) fn clear(&self) {
        self.list.set(Vec::new());
        self.editing.set(None);
        self.deleting.set(None);
    }
}

/// The chat page's actions. `Copy`, so every handler of the page can hold it.
#[derive(Clone, Copy)]
pub(super) struct ChatActions {
    state: ChatState,
    changed: ThreadsChanged,
    /// The text in the message box (given back when a message is refused).
    draft: RwSignal<String>,
    /// Whether the view follows the answer as it grows (set again whenever a turn starts).
    follow: RwSignal<bool>,
    navigate: StoredValue<Navigate, LocalStorage>,
    branches: Branches,
    /// The requirements panel beside the conversation.
    panel: LedgerPanel,
}

impl ChatActions {
    pub(super) fn new(
        state: ChatState,
        changed: ThreadsChanged,
        follow: RwSignal<bool>,
        navigate: impl Fn(&str, NavigateOptions) + 'static,
    ) -> Self {
        Self {
            state,
            changed,
            draft: state.draft,
            follow,
            navigate: StoredValue::new_local(Box::new(navigate)),
            branches: Branches::new(),
            panel: LedgerPanel::new(),
        }
    }

    /// The conversation's state these actions change.
    pub(super) fn state(&self) -> ChatState {
        self.state
    }

    /// The branches of the conversation on screen.
    pub(super) fn branches(&self) -> Branches {
        self.branches
    }

    /// The requirements panel beside the conversation.
    pub(super) fn ledger_panel(&self) -> LedgerPanel {
        self.panel
    }

    /// Tells the sidebar the list of conversations may have changed.
    pub(super) fn changed(&self) -> ThreadsChanged {
        self.changed
    }

    /// Whether a turn or a silent generation is running (no other may start meanwhile).
    pub(super) fn occupied(&self) -> bool {
        self.state.busy.get_untracked() || self.state.generating.get_untracked().is_some()
    }

    /// Marks a turn as running and followed, the last error and budget notice gone.
    pub(super) fn begin_turn(&self) {
        self.state.busy.set(true);
        self.state.error.set(None);
        self.state.budget.set(None);
        self.follow.set(true);
    }

    /// Sends what the message box holds, once the files picked for it are attached. The files' chips go: the
    /// files stay listed among the conversation's documents.
    pub(super) fn send_draft(&self) {
        let content = self.draft.get_untracked().trim().to_string();
        let waiting = self.state.pending.with_untracked(|files| files.iter().any(|f| f.in_flight()));
        // While an answer or a document is being written the text stays in the box (Send is disabled then too).
        if !content.is_empty() && !self.occupied() && !waiting {
            self.draft.set(String::new());
            self.state.pending.set(Vec::new());
            self.send(content);
        }
    }

    /// The conversation to talk in: the one on screen, or a new one created for the first message (or file).
    pub(super) async fn ensure_thread(self) -> Option<Uuid> {
        let state = self.state;
        if let Some(id) = state.current.get_untracked() {
            return Some(id);
        }
        match client::create_thread(&CreateThread::default()).await {
            Ok(thread) => {
                // A model chosen before the conversation existed becomes its own.
                if let Some(model) = state.model.get_untracked() {
                    let change = UpdateThread { model: Some(model), ..Default::default() };
                    if let Err(e) = client::update_thread(thread.id, &change).await {
                        state.error.set(Some(ErrorNote::new(e.message)));
                    }
                }
                state.current.set(Some(thread.id));
                let options = NavigateOptions { replace: true, ..Default::default() };
                self.navigate.with_value(|navigate| navigate(&format!("/c/{}", thread.id), options));
                self.changed.notify();
                Some(thread.id)
            }
            Err(e) => {
                state.error.set(Some(ErrorNote::new(e.message)));
                None
            }
        }
    }

    /// Makes `id` the conversation's model (empty: the person's default); before the conversation exists, it is
    /// kept for it.
    pub(super) fn choose_model(self, choice: ModelChoice) {
        let state = self.state;
        let Some(thread) = state.current.get_untracked() else { return };
        spawn_local(async move {
            let change = UpdateThread { model: Some(choice.id), ..Default::default() };
            let result = client::update_thread(thread, &change).await;
            // Another conversation may be open by now: its picker is not this one's to change.
            let still_open = state.current.get_untracked() == Some(thread);
            match result {
                Ok(saved) if still_open => state.model.set(saved.model),
                Ok(_) => {}
                Err(e) => {
                    if still_open {
                        state.model.set(choice.before);
                    }
                    state.error.set(Some(ErrorNote::new(e.message)));
                }
            }
        });
    }

    /// Sends a message and follows its answer.
    pub(super) fn send(self, content: String) {
        let state = self.state;
        if content.trim().is_empty() || self.occupied() {
            return;
        }
        self.begin_turn();
        spawn_local(async move {
            let Some(id) = self.ensure_thread().await else {
                self.draft.set(content);
                state.busy.set(false);
                return;
            };
            let quote = state.quote.get_untracked();
            let mut sent = state.sent_message(id, content.clone());
            sent.quote = quote.as_ref().map(|q| q.quote.clone());
            let sent_id = sent.id;
            state.messages.update(|m| m.push(sent));
            state.quote.set(None);
            start_answer(state);
            let request = ChatRequest {
                content: content.clone(),
                artifact_generation: None,
                edit_of: None,
                quote: quote.as_ref().map(|q| q.quote.clone()),
            };
            let mut started = false;
            let result = client::chat(id, &request, |event| {
                started = true;
                state.apply(id, event, &content, self.changed)
            })
            .await;
            if let Err(e) = result {
                if e.status == 409 || e.status == 422 || e.code == "budget_exceeded" {
                    // Not saved: drop the optimistic bubble and give the text back.
                    state.messages.update(|m| m.retain(|x| x.id != sent_id));
                    self.draft.set(content.clone());
                    state.quote.set(quote);
                }
                // An answer with an error status: the server did not save the message. A network failure may have
                // come before or after it did.
                let retry = match e.status {
                    422 => None,
                    0 => Some(Retry::Rerun { content, saved: started }),
                    _ => Some(Retry::Resend { content, bubble: sent_id }),
                };
                turn_failed(state, id, e, retry);
            }
            state.busy.set(false);
        });
    }

    /// Stops the running turn; the server keeps what was written.
    pub(super) fn stop(&self) {
        let state = self.state;
        if let Some(id) = state.current.get_untracked() {
            spawn_local(async move {
                if let Err(e) = client::stop(id).await {
                    state.error.set(Some(ErrorNote::new(e.message)));
                }
            });
        }
    }

    /// What the error banner's "Retry" does.
    pub(super) fn retry(self) {
        if self.occupied() {
            return;
        }
        let Some(retry) = self.state.error.get_untracked().and_then(|note| note.retry) else { return };
        self.state.error.set(None);
        match retry {
            Retry::Resend { content, bubble } => {
                // Sent again in its place, so it shows once.
                self.state.messages.update(|m| m.retain(|x| x.id != bubble));
                self.send(content);
            }
            Retry::Rerun { content, saved } => self.rerun(content, saved),
        }
    }

    /// Runs the failed turn of a saved message again (see [`rerun_turn`]); a message the server does not have is sent
    /// again.
    fn rerun(self, content: String, saved: bool) {
        let state = self.state;
        let Some(id) = state.current.get_untracked() else { return self.send(content) };
        state.busy.set(true);
        self.follow.set(true);
        spawn_local(rerun_turn(self, id, content, saved));
    }

    /// Silent generation: no bubbles, only the indicator and then the card (see [`generate_document`]).
    pub(super) fn generate(&self, kind: ArtifactType) {
        self.generate_with(kind, format!("Generate {} from this conversation", kind.label()));
    }

    /// Silent generation of a requirements document covering the requirements `keys` (those no document covers).
    pub(super) fn generate_covering(&self, keys: Vec<String>) {
        if keys.is_empty() {
            return;
        }
        let content = format!("Generate a requirements document covering {} from this conversation", keys.join(", "));
        self.generate_with(ArtifactType::RequirementsDoc, content);
    }

    /// Silent generation of a document of `kind` asked for with `content`.
    fn generate_with(&self, kind: ArtifactType, content: String) {
        let state = self.state;
        if self.occupied() {
            return;
        }
        let Some(id) = state.current.get_untracked() else { return };
        state.generating.set(Some(kind));
        state.error.set(None);
        state.budget.set(None);
        spawn_local(generate_document(state, id, content));
    }

    /// "Update document": revises `artifact` to the requirements as they stand, silently like [`Self::generate`]
    /// (see [`update_document`]).
    pub(super) fn update_document(&self, artifact: Artifact) {
        let state = self.state;
        if self.occupied() {
            return;
        }
        let Some(id) = state.current.get_untracked() else { return };
        state.generating.set(Some(artifact.artifact_type));
        state.error.set(None);
        state.budget.set(None);
        spawn_local(update_document(state, id, artifact.id));
    }

    /// Deletes a document (from its viewer).
    pub(super) fn delete_artifact(&self, artifact: Artifact) {
        spawn_local(delete_document(self.state, artifact));
    }
}

/// Runs the failed turn of a saved message of conversation `id` again (so the server never stores it twice), or
/// sends again one it does not have. Loaded at a first retry (split out of the main wasm bundle in release builds).
#[lazy]
async fn rerun_turn(actions: ChatActions, id: Uuid, content: String, saved: bool) {
    let state = actions.state;
    let detail = match client::get_thread(id).await {
        Ok(detail) => detail,
        Err(e) => {
            state.busy.set(false);
            let retry = Some(Retry::Rerun { content, saved });
            state.error.set(Some(ErrorNote { message: e.message, retry }));
            return;
        }
    };
    if state.current.get_untracked() != Some(id) {
        state.busy.set(false);
        return;
    }
    let Some(request) = failed_request(&detail.messages, (!saved).then_some(content.as_str())).cloned() else {
        // Never saved: shown as the server has the conversation, then sent again.
        state.messages.set(detail.messages);
        state.busy.set(false);
        actions.send(content);
        return;
    };
    // The failed attempt's partial answer makes way for the new one.
    state.messages.set(detail.messages.into_iter().filter(|m| m.seq <= request.seq).collect());
    state.artifacts.set(detail.artifacts);
    start_answer(state);
    let result = client::retry(id, request.id, |event| state.apply(id, event, &content, actions.changed)).await;
    if let Err(e) = result {
        let retry = (e.status != 404).then_some(Retry::Rerun { content, saved: true });
        turn_failed(state, id, e, retry);
    }
    state.busy.set(false);
}

/// Shows an empty answer that a turn's events will write.
pub(super) fn start_answer(state: ChatState) {
    state.live.set(Some(LiveAnswer::default()));
    state.turn_artifacts.set(Vec::new());
}

/// Ends a turn of conversation `id` that failed: the answer so far goes, and `e` shows in the budget notice or
/// the error banner (with `retry`).
pub(super) fn turn_failed(state: ChatState, id: Uuid, e: ApiError, retry: Option<Retry>) {
    if state.live.get_untracked().is_some() {
        state.end_turn(id, None, MessageStatus::Interrupted);
    }
    if !show_if_over_budget(state, &e) {
        state.error.set(Some(ErrorNote { message: e.message, retry }));
    }
}

/// Asks for a document from the conversation `id` with `content` and without a message: the indicator shows
/// meanwhile, then the card, or what went wrong. Loaded at a first generation (split out of the main wasm bundle in
/// release builds).
#[lazy]
async fn generate_document(state: ChatState, id: Uuid, content: String) {
    let request = ChatRequest { content, artifact_generation: Some(true), edit_of: None, quote: None };
    let mut outcome = SilentTurn::default();
    let result = client::chat(id, &request, |event| outcome.take(state, id, event)).await;
    outcome.finish(state, id, result);
}

/// Revises document `artifact` of conversation `id` to the requirements as they stand, without a message, as
/// [`generate_document`] writes one; focus goes to the card if the button that asked for it went with the old
/// version. Loaded at a first update (split out of the main wasm bundle in release builds).
#[lazy]
async fn update_document(state: ChatState, id: Uuid, artifact: Uuid) {
    let mut outcome = SilentTurn::default();
    let result = client::update_document(artifact, |event| outcome.take(state, id, event)).await;
    outcome.finish(state, id, result);
    request_animation_frame(move || {
        use wasm_bindgen::JsCast;
        let Some(page) = web_sys::window().and_then(|w| w.document()) else { return };
        if page.active_element().is_some_and(|e| e.tag_name() != "BODY") {
            return;
        }
        let card = page.query_selector(&format!(".artifact-open[data-artifact-id=\"{artifact}\"]")).ok().flatten();
        if let Some(card) = card.and_then(|c| c.dyn_into::<web_sys::HtmlElement>().ok()) {
            let _ = card.focus();
        }
    });
}

/// What the events of a silent turn (a generation or an update) brought.
#[derive(Default)]
struct SilentTurn {
    made: bool,
    failure: Option<String>,
}

impl SilentTurn {
    /// Shows the document an event of conversation `id` carries, or keeps the error it reports.
    fn take(&mut self, state: ChatState, id: Uuid, event: ChatEvent) {
        match event {
            ChatEvent::ArtifactCreated { artifact } if state.current.get_untracked() == Some(id) => {
                self.made = true;
                state.upsert_artifact(artifact);
            }
            ChatEvent::Error { message, .. } => self.failure = Some(message),
            _ => {}
        }
    }

    /// Ends the turn: the indicator goes, and what went wrong shows (in the budget notice or the error banner).
    fn finish(self, state: ChatState, id: Uuid, result: Result<(), ApiError>) {
        state.generating.set(None);
        if result.as_ref().is_err_and(|e| show_if_over_budget(state, e)) {
            return;
        }
        let failure = self.failure.or_else(|| result.err().map(|e| e.message));
        if let Some(message) = failure.or_else(|| (!self.made).then(|| "No document came back. Try again.".to_string()))
        {
            if state.current.get_untracked() == Some(id) {
                state.error.set(Some(ErrorNote::new(message)));
            }
        }
    }
}

/// Deletes a document and closes its viewer. Loaded at a first deletion (split out of the main wasm bundle in
/// release builds).
#[lazy]
async fn delete_document(state: ChatState, artifact: Artifact) {
    match client::delete_artifact(artifact.id).await {
        Ok(()) => {
            state.artifacts.update(|list| list.retain(|x| x.id != artifact.id));
            state.open.set(None);
        }
        Err(e) => state.error.set(Some(ErrorNote::new(e.message))),
    }
}
