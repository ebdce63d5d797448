//! How a turn opens: a new message, an edit of one, another answer, a retry of a failed one, or a silent
//! generation. What each checks before the thread is taken, and the changes to the conversation each makes once
//! it is taken (see [`launch`]).

use std::sync::Arc;

use uuid::Uuid;
use wire::validate::Invalid;
use wire::{ChatRequest, MessageStatus, Quote, Role as ApiRole, Usage, MAX_MESSAGE_CHARS};

use super::engine::Engine;
use super::error::ChatError;
use super::hub::LiveTurn;
use super::ledger;
use super::taken::{failed_attempt, Opening, Writer};
use super::turn::launch;
use store::{NewMessage, Store, StoreError};

impl Engine {
    /// Who writes when `user` starts a turn in `thread`: its author, or an editor or owner of its project (the
    /// turn then writes the author's rows and counts against `user`'s budgets). `NotFound` for anyone else (a
    /// viewer too: the HTTP layer tells them it is read-only). The start's own statement checks again.
    pub(super) async fn writer(&self, user: Uuid, thread: Uuid) -> Result<Writer, ChatError> {
        // The author's next message in a conversation whose last turn ran here asks nothing.
        if self.memory.author_of(thread) == Some(user) {
            return Ok(Writer { author: user, sender: user });
        }
        let author = self.store.thread_author(user, thread, wire::ProjectRole::Editor).await?;
        Ok(Writer { author, sender: user })
    }

    /// The error of a refused start: a conflict says that an answer is being written, to whom when it is another
    /// person's.
    pub(super) async fn busy_or(&self, sender: Uuid, thread: Uuid, error: StoreError) -> ChatError {
        match error {
            StoreError::Conflict(_) => match self.store.running_sender(sender, thread).await {
                Ok(Some((writer, name))) if writer != sender => ChatError::Busy(Some(name)),
                _ => ChatError::Busy(None),
            },
            other => other.into(),
        }
    }

    /// The text of a person's message as it is stored: checked (not empty, not too long) and, when so
    /// configured, with personal data replaced.
    pub fn person_message(&self, content: &str) -> Result<String, ChatError> {
        let content = wire::validate::message(content, MAX_MESSAGE_CHARS)?;
        // Personal data is replaced before the message is stored or reaches a model.
        Ok(if self.limits.redact_pii { crate::privacy::redact(&content) } else { content })
    }

    /// A quoted passage as it is stored: checked (not blank, not too long, no NUL) and, when so configured, with
    /// personal data replaced. Whose document it is, the statement that saves the message checks.
    fn person_quote(&self, quote: Quote) -> Result<Quote, ChatError> {
        let text = wire::validate::quote(&quote.text)?;
        let text = if self.limits.redact_pii { crate::privacy::redact(&text) } else { text };
        Ok(Quote { artifact_id: quote.artifact_id, text })
    }

    /// Checks the request, takes the thread, saves the person's message and starts the turn in the background.
    pub async fn start(&self, user: Uuid, thread: Uuid, request: ChatRequest) -> Result<Arc<LiveTurn>, ChatError> {
        let content = self.person_message(&request.content)?;
        let quote = request.quote.map(|quote| self.person_quote(quote)).transpose()?;
        let silent = request.artifact_generation.unwrap_or(false);
        if silent && quote.is_some() {
            return Err(Invalid::new("quote", "A silent generation quotes nothing: it saves no message.").into());
        }
        let who = self.writer(user, thread).await?;
        let message = NewMessage {
            thread_id: thread,
            role: ApiRole::User,
            content,
            status: MessageStatus::Complete,
            usage: Usage::default(),
            model: None,
            quote,
            author: (who.sender != who.author).then_some(who.sender),
        };
        if let Some(quote) = &message.quote {
            // Checked before a model call may open: the statement that saves the message checks again.
            if self.store.get_artifact(user, quote.artifact_id).await?.thread_id != thread {
                return Err(ChatError::NotFound);
            }
        }
        let opening = match (request.edit_of, silent) {
            (Some(_), true) => {
                return Err(Invalid::new("edit_of", "A silent generation edits no message.").into());
            }
            (Some(edited), false) => {
                // Checked before the thread is taken; the message stays, and the new version goes beside it. The
                // messages are the author's, whoever writes.
                let parent = edited_message(self.store.as_ref(), who.author, thread, edited).await?;
                Opening::Edit { parent, message }
            }
            (None, true) => Opening::Silent(message.content),
            (None, false) => Opening::Message(message),
        };
        launch(self, who, thread, opening).await
    }

    /// "Update document": a silent turn that revises the document to the requirements it reflects as they stand
    /// now (see [`ledger::update_instruction`]); `Conflict` when it is up to date.
    pub async fn update_document(&self, user: Uuid, artifact: Uuid) -> Result<Arc<LiveTurn>, ChatError> {
        let document = self.store.get_artifact(user, artifact).await?;
        let (_, view) = ledger::marked(&self.store, user, document.thread_id).await?;
        let out_of_date = view.marks.get(&artifact).map(|m| m.out_of_date.clone()).unwrap_or_default();
        if out_of_date.is_empty() {
            return Err(ChatError::Conflict("The document is up to date with the requirements."));
        }
        let instruction = ledger::update_instruction(&document, &out_of_date);
        let who = self.writer(user, document.thread_id).await?;
        launch(self, who, document.thread_id, Opening::Update(instruction)).await
    }

    /// Another answer to the question `answer` answered: an ordinary turn whose answer is a sibling of it, the
    /// old branch kept.
    pub async fn regenerate(&self, user: Uuid, thread: Uuid, answer: Uuid) -> Result<Arc<LiveTurn>, ChatError> {
        let who = self.writer(user, thread).await?;
        let question = answered_question(self.store.as_ref(), who.author, thread, answer).await?;
        launch(self, who, thread, Opening::Again(question)).await
    }

    /// Runs the turn of a stored message again, after its answer failed, without storing the message again. The
    /// failed attempt's partial answer, if one was kept, makes way for the new one.
    pub async fn retry(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<Arc<LiveTurn>, ChatError> {
        // Checked before the thread is taken, so a refused retry leaves the last turn as it is; and again once it is
        // taken, against a retry that ran meanwhile.
        let who = self.writer(user, thread).await?;
        failed_attempt(self.store.as_ref(), who.author, thread, message).await?;
        launch(self, who, thread, Opening::Retry(message)).await
    }
}

/// The parent of the person's message `edited`, which an edit goes beside; another thread's message, or an
/// answer, is missing.
async fn edited_message(store: &dyn Store, user: Uuid, thread: Uuid, edited: Uuid) -> Result<Option<Uuid>, ChatError> {
    let message = store.get_message(user, edited).await?;
    if message.thread_id != thread || message.role != ApiRole::User {
        return Err(ChatError::NotFound);
    }
    Ok(message.parent_id)
}

/// The person's message `answer` answers, which a new answer follows; another thread's message, a person's
/// message, or an answer that follows none, is missing.
async fn answered_question(store: &dyn Store, user: Uuid, thread: Uuid, answer: Uuid) -> Result<Uuid, ChatError> {
    let message = store.get_message(user, answer).await?;
    if message.thread_id != thread || message.role != ApiRole::Assistant {
        return Err(ChatError::NotFound);
    }
    let question = store.get_message(user, message.parent_id.ok_or(ChatError::NotFound)?).await?;
    if question.role != ApiRole::User {
        return Err(ChatError::NotFound);
    }
    Ok(question.id)
}
