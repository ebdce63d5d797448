//! What the app keeps above its pages: the signed-in account, the conversation on screen (it survives the
//! address changing from `/` to `/c/<id>` after a first message), and the signal that tells the sidebar to reload.

use leptos::prelude::*;
use uuid::Uuid;

use crate::api::{
    Artifact, ArtifactType, Attachment, ChatEvent, Ledger, Message, MessageStatus, Quote, Role, Thread, ToolApproval,
    UserProfile,
};

/// Bumped whenever the person's projects may have changed (made, renamed, archived, deleted, joined or left), so
/// the sidebar lists them again; a message sent changes none of them.
#[derive(Clone, Copy)]
pub struct ProjectsChanged(pub RwSignal<u64>);

impl ProjectsChanged {
    pub fn notify(&self) {
        self.0.update(|n| *n += 1);
    }
}

/// Bumped whenever the list of conversations may have changed, so the sidebar reloads it.
#[derive(Clone, Copy)]
pub struct ThreadsChanged(pub RwSignal<u64>);

impl ThreadsChanged {
    pub fn notify(&self) {
        self.0.update(|n| *n += 1);
    }
}

/// The signed-in account, once known (`None` before `/api/auth/me` answered, and after signing out).
#[derive(Clone, Copy)]
pub struct CurrentUser(pub RwSignal<Option<UserProfile>>);

/// False while the calling component hydrates, true from its first effect on. The server renders without the
/// signed-in account, and a page loaded lazily may hydrate after `/api/auth/me` answered: a view whose *shape*
/// depends on the account (a form shown only to people with a password) must first render as the server did,
/// or hydration meets other elements than it expects and stops. Text that only changes is safe without it.
pub fn hydrated() -> Signal<bool> {
    let done = RwSignal::new(false);
    Effect::new(move |_| done.set(true));
    done.into()
}

/// The answer being written right now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveAnswer {
    pub(crate) text: String,
    /// The model's reasoning so far, shown folded under the answer while it streams (never saved with it).
    pub(crate) reasoning: String,
}

/// Shortest time a tool's status line stays on screen. A quick tool (saving a document takes a few
/// milliseconds) would otherwise come and go within one frame, and people would never see what happened.
const MIN_STATUS_MS: f64 = 700.0;

/// The status line of the tool a turn runs ("Saving artifact…").
#[derive(Clone, Copy)]
pub(crate) struct ToolStatus {
    pub(crate) text: RwSignal<Option<String>>,
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
    pub(crate) message: String,
    pub(crate) retry: Option<Retry>,
}

impl ErrorNote {
    pub(crate) fn new(message: String) -> Self {
        Self { message, retry: None }
    }
}

/// What "Retry" does after a message failed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Retry {
    /// The server refused the message before saving it: it is sent again, in place of its bubble.
    Resend { content: String, bubble: Uuid },
    /// The message may be saved: its turn is run again if it is (the server keeps it once), and it is sent
    /// again if it is not. `saved`: the turn had started, so the message is the conversation's latest.
    Rerun { content: String, saved: bool },
}

/// The person's latest message when every answer after it failed (what Retry runs again), if it is the one
/// sent as `content` (any text when `content` is `None`).
pub(crate) fn failed_request<'a>(messages: &'a [Message], content: Option<&str>) -> Option<&'a Message> {
    let position = messages.iter().rposition(|m| m.role == Role::User)?;
    let request = &messages[position];
    let failed = messages[position + 1..]
        .iter()
        .all(|m| m.role == Role::Assistant && matches!(m.status, MessageStatus::Interrupted | MessageStatus::Error));
    (failed && content.is_none_or(|c| c.trim() == request.content)).then_some(request)
}

/// Where a file picked in the message box stands.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FileStage {
    /// Being sent: the share sent so far, 0 to 100.
    Uploading(u8),
    /// Sent; the server is reading its text.
    Reading,
    Attached(Attachment),
    /// Refused or failed, with the reason to show.
    Failed(String),
}

/// A file picked in the message box, shown as a chip until the next message is sent.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PendingFile {
    /// Tells chips of files with the same name apart.
    pub(crate) key: u64,
    pub(crate) name: String,
    pub(crate) stage: FileStage,
}

impl PendingFile {
    /// Whether the file is still on its way (the message waits for it).
    pub(crate) fn in_flight(&self) -> bool {
        matches!(self.stage, FileStage::Uploading(_) | FileStage::Reading)
    }

    /// Changes whenever the chip must be drawn again: the file, and how far along it is.
    pub(crate) fn drawn_as(&self) -> (u64, u8) {
        let stage = match self.stage {
            FileStage::Uploading(share) => share.min(100),
            FileStage::Reading => 101,
            FileStage::Attached(_) => 102,
            FileStage::Failed(_) => 103,
        };
        (self.key, stage)
    }
}

/// The conversation on screen. It lives above the router, so a running stream keeps its state when the
/// address changes from `/` to `/c/<id>` after the first message.
#[derive(Clone, Copy)]
pub struct ChatState {
    pub(crate) current: RwSignal<Option<Uuid>>,
    pub(crate) messages: RwSignal<Vec<Message>>,
    pub(crate) artifacts: RwSignal<Vec<Artifact>>,
    pub(crate) live: RwSignal<Option<LiveAnswer>>,
    pub(crate) tool: ToolStatus,
    /// Documents made by the running turn, linked to its answer when it completes.
    pub(crate) turn_artifacts: RwSignal<Vec<Uuid>>,
    pub(crate) busy: RwSignal<bool>,
    pub(crate) generating: RwSignal<Option<ArtifactType>>,
    pub(crate) error: RwSignal<Option<ErrorNote>>,
    /// Why messages are refused until the daily token budget resets, once one was.
    pub(crate) budget: RwSignal<Option<String>>,
    pub(crate) title: RwSignal<String>,
    /// The model the person chose for the conversation (`provider/model`); `None`: their default.
    pub(crate) model: RwSignal<Option<String>>,
    pub(crate) open: RwSignal<Option<Artifact>>,
    /// The files attached to the conversation.
    pub(crate) files: RwSignal<Vec<Attachment>>,
    /// Files picked in the message box since the last message.
    pub(crate) pending: RwSignal<Vec<PendingFile>>,
    /// The text in the message box; kept here so it survives the address changing when a first file creates
    /// the conversation.
    pub(crate) draft: RwSignal<String>,
    /// The passage of a document the next message is about ("Ask about this"), shown above the message box.
    pub(crate) quote: RwSignal<Option<QuoteDraft>>,
    /// The requirements ledger of the path shown; `None` until it is read.
    pub(crate) ledger: RwSignal<Option<Ledger>>,
    /// What the person may do in the conversation (its author everything; a member of its project less).
    pub(crate) access: RwSignal<crate::api::ThreadAccess>,
    /// Who wrote in a project's conversation, its author first; empty where only its author wrote.
    pub(crate) writers: RwSignal<Vec<crate::api::Writer>>,
    /// The MCP servers the person turned on for the conversation; `None`: as in their settings.
    pub(crate) mcp_servers: RwSignal<Option<Vec<String>>>,
    /// The calls of the answer being written that ask first, as asked and (once decided) as decided.
    pub(crate) approvals: RwSignal<Vec<ToolApproval>>,
}

/// A passage picked with "Ask about this", waiting for the message that asks about it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuoteDraft {
    pub quote: Quote,
    /// The document's title, to show with the passage.
    pub title: String,
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
            budget: RwSignal::new(None),
            title: RwSignal::new(String::new()),
            model: RwSignal::new(None),
            open: RwSignal::new(None),
            files: RwSignal::new(Vec::new()),
            pending: RwSignal::new(Vec::new()),
            draft: RwSignal::new(String::new()),
            quote: RwSignal::new(None),
            ledger: RwSignal::new(None),
            access: RwSignal::new(crate::api::ThreadAccess::Author),
            writers: RwSignal::new(Vec::new()),
            mcp_servers: RwSignal::new(None),
            approvals: RwSignal::new(Vec::new()),
        }
    }

    pub(crate) fn reset(&self, id: Option<Uuid>) {
        self.current.set(id);
        self.messages.set(Vec::new());
        self.artifacts.set(Vec::new());
        self.live.set(None);
        self.tool.text.set(None);
        self.turn_artifacts.set(Vec::new());
        self.error.set(None);
        self.title.set(String::new());
        self.model.set(None);
        self.open.set(None);
        self.files.set(Vec::new());
        self.pending.set(Vec::new());
        self.draft.set(String::new());
        self.quote.set(None);
        self.ledger.set(None);
        self.access.set(crate::api::ThreadAccess::Author);
        self.writers.set(Vec::new());
        self.mcp_servers.set(None);
        self.approvals.set(Vec::new());
    }

    /// The person's own message shown before the server's copy is loaded: marked as theirs where they are not the
    /// conversation's author.
    pub(crate) fn sent_message(&self, thread_id: Uuid, content: String) -> Message {
        let mut message = local_message(thread_id, Role::User, content);
        if self.access.get_untracked() != crate::api::ThreadAccess::Author {
            message.author_id =
                use_context::<CurrentUser>().and_then(|me| me.0.with_untracked(|u| u.as_ref().map(|u| u.id)));
        }
        message
    }

    /// Who wrote a person's message (its `author_id`), in a conversation more than its author wrote in: "You" for
    /// the person reading, else the writer's name; `None` where only its author writes. Tracked: a message shown
    /// before the writers were read is named once they are.
    pub(crate) fn writer_of(&self, author_id: Option<Uuid>) -> Option<String> {
        let me = use_context::<CurrentUser>().and_then(|me| me.0.with_untracked(|u| u.as_ref().map(|u| u.id)));
        self.writers.with(|writers| writer_name(writers, author_id, me))
    }

    /// Applies one event of a typed turn of thread `id`.
    pub(crate) fn apply(&self, id: Uuid, event: ChatEvent, retry: &str, changed: ThreadsChanged) {
        // The person may have opened another conversation meanwhile: only the one on screen changes.
        if self.current.get_untracked() != Some(id) {
            return;
        }
        match event {
            ChatEvent::TextDelta { text } => {
                self.live.update(|a| a.get_or_insert_with(LiveAnswer::default).text.push_str(&text));
                self.tool.clear();
            }
            ChatEvent::ReasoningDelta { text } => {
                self.live.update(|a| a.get_or_insert_with(LiveAnswer::default).reasoning.push_str(&text));
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
            ChatEvent::ApprovalRequested { approval } => self.upsert_approval(approval),
            ChatEvent::ApprovalDecided { approval_id, state } => {
                self.approvals.update(|list| {
                    if let Some(approval) = list.iter_mut().find(|a| a.id == approval_id) {
                        approval.state = state;
                    }
                });
            }
            ChatEvent::MessageComplete { message_id, stopped, model, .. } => {
                let status = if stopped { MessageStatus::Stopped } else { MessageStatus::Complete };
                self.end_turn(id, message_id, status);
                if let (Some(answer), Some(model)) = (message_id, model) {
                    self.messages.update(|list| {
                        if let Some(message) = list.iter_mut().find(|m| m.id == answer) {
                            message.model = Some(model);
                        }
                    });
                }
            }
            ChatEvent::Error { message, .. } => {
                let partial = self.live.with_untracked(|a| a.as_ref().is_some_and(|a| !a.text.is_empty()));
                self.end_turn(id, partial.then(|| Uuid::from_u128(js_random_u128())), MessageStatus::Interrupted);
                let retry = Retry::Rerun { content: retry.to_string(), saved: true };
                self.error.set(Some(ErrorNote { message, retry: Some(retry) }));
            }
        }
    }

    /// Shows a document at a version the server sent: in the list, and in the viewer if it is open there. A
    /// version older than the one shown (a change that arrived late) is ignored.
    pub(crate) fn upsert_artifact(&self, artifact: Artifact) {
        let (id, version) = (artifact.id, artifact.version);
        let newer = move |shown: &Artifact| shown.id == id && shown.version <= version;
        if self.open.with_untracked(|open| open.as_ref().is_some_and(newer)) {
            self.open.set(Some(artifact.clone()));
        }
        self.artifacts.update(|list| match list.iter_mut().find(|a| a.id == id) {
            Some(existing) if newer(existing) => *existing = artifact,
            Some(_) => {}
            None => list.push(artifact),
        });
    }

    /// Shows a question of the answer being written: a new one, or one the page has at a newer state. Replayed, a
    /// question asked earlier never takes back its decision.
    pub(crate) fn upsert_approval(&self, approval: ToolApproval) {
        self.approvals.update(|list| match list.iter_mut().find(|a| a.id == approval.id) {
            Some(shown) if shown.state == crate::api::ApprovalState::Pending => *shown = approval,
            Some(_) => {}
            None => list.push(approval),
        });
    }

    /// Takes a deleted document off the page (and out of the viewer).
    pub(crate) fn remove_artifact(&self, id: Uuid) {
        self.artifacts.update(|list| list.retain(|a| a.id != id));
        if self.open.with_untracked(|open| open.as_ref().is_some_and(|a| a.id == id)) {
            self.open.set(None);
        }
    }

    /// Turns the live answer into a message (when one was saved) and links the turn's documents to it.
    pub(crate) fn end_turn(&self, thread: Uuid, message_id: Option<Uuid>, status: MessageStatus) {
        let text = self.live.get_untracked().map(|a| a.text).unwrap_or_default();
        self.live.set(None);
        self.tool.clear();
        // The answer tells what came of its calls.
        self.approvals.set(Vec::new());
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
        self.reset(None);
        self.busy.set(false);
    }
}

impl Default for ChatState {
    fn default() -> Self {
        Self::new()
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

/// See [`ChatState::writer_of`]: the author is the first of `writers`; a writer not among them left the project.
fn writer_name(writers: &[crate::api::Writer], author_id: Option<Uuid>, me: Option<Uuid>) -> Option<String> {
    let author = writers.first()?;
    let id = author_id.unwrap_or(author.id);
    if Some(id) == me {
        return Some("You".to_string());
    }
    Some(writers.iter().find(|w| w.id == id).map_or_else(|| "A former member".to_string(), |w| w.name.clone()))
}

/// A message shown before the server's copy is loaded.
pub(crate) fn local_message(thread_id: Uuid, role: Role, content: String) -> Message {
    Message::complete(Uuid::from_u128(js_random_u128()), thread_id, 0, role, content)
}

pub(crate) fn js_random_u128() -> u128 {
    let mut value = 0u128;
    for _ in 0..4 {
        value = (value << 32) | (js_sys::Math::random() * u32::MAX as f64) as u128;
    }
    value
}

/// What the person may do in the conversation on screen (everything where no conversation is: a page of its own).
pub(crate) fn access() -> Signal<crate::api::ThreadAccess> {
    match use_context::<ChatState>() {
        Some(state) => state.access.into(),
        None => Signal::stored(crate::api::ThreadAccess::Author),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(seq: i64, role: Role, content: &str, status: MessageStatus) -> Message {
        Message { status, ..Message::complete(Uuid::from_u128(seq as u128), Uuid::nil(), seq, role, content) }
    }

    #[test]
    fn a_message_is_named_after_its_writer_where_more_than_the_author_writes() {
        let (author, editor, gone) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let writers = vec![
            crate::api::Writer { id: author, name: "Ann".into() },
            crate::api::Writer { id: editor, name: "Ed".into() },
        ];
        assert_eq!(writer_name(&[], Some(editor), None), None, "only the author writes: no names");
        assert_eq!(writer_name(&writers, None, Some(editor)).as_deref(), Some("Ann"), "no author_id: the author");
        assert_eq!(writer_name(&writers, Some(editor), Some(author)).as_deref(), Some("Ed"));
        assert_eq!(writer_name(&writers, Some(editor), Some(editor)).as_deref(), Some("You"));
        assert_eq!(writer_name(&writers, None, Some(author)).as_deref(), Some("You"));
        assert_eq!(writer_name(&writers, Some(gone), Some(author)).as_deref(), Some("A former member"));
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
