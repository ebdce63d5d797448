//! Changes to a conversation made outside a turn, in one place: each writes through the store and then tells the
//! engine, which forgets what it keeps of the conversation's context so the next turn starts from what is stored.
//! Handlers change conversations here, never straight through the store. (A turn's own writes go through
//! `turn.rs`, which keeps its context up to date itself.)

use uuid::Uuid;
use wire::validate::Invalid;
use wire::{Artifact, EditArtifact, Message, MessageStatus, Role, Thread, Usage, VersionAuthor};

use super::engine::Engine;
use super::error::{busy_or, ChatError};
use super::hub::STALE_AFTER_MS;
use super::title::DEFAULT_TITLE;
use store::{ArtifactRevision, NewMessage, ThreadPatch};

type Result<T> = std::result::Result<T, ChatError>;

impl Engine {
    /// Saves a person's message between turns, without an answer (refused while one is being written). A
    /// conversation that starts here is named after the message's first words.
    pub async fn add_message(&self, user: Uuid, thread: Uuid, content: &str) -> Result<Message> {
        let message = NewMessage {
            thread_id: thread,
            role: Role::User,
            content: self.person_message(content)?,
            status: MessageStatus::Complete,
            usage: Usage::default(),
            model: None,
            quote: None,
            author: None,
        };
        let saved = self.store.append_message_between_turns(user, message, STALE_AFTER_MS).await.map_err(busy_or)?;
        self.conversation_changed(thread);
        if saved.seq == 1 && self.store.get_thread(user, thread).await?.title == DEFAULT_TITLE {
            let patch = ThreadPatch { title: Some(store::title_from_message(&saved.content)), ..Default::default() };
            self.store.update_thread(user, thread, &patch).await?;
        }
        Ok(saved)
    }

    /// Shows the branch through `message`, down to its newest message (refused while an answer is being written).
    pub async fn switch_branch(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<()> {
        self.store.switch_branch(user, thread, message, STALE_AFTER_MS).await.map_err(busy_or)?;
        self.conversation_changed(thread);
        Ok(())
    }

    /// Deletes a message with every message after it on its branches (refused while an answer is being written).
    pub async fn delete_message(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<()> {
        self.store.delete_message(user, thread, message, Some(STALE_AFTER_MS)).await.map_err(busy_or)?;
        self.conversation_changed(thread);
        Ok(())
    }

    /// Changes a conversation's title, tags, pin or archive mark. None of these is part of what a model reads, so
    /// the context kept for the conversation stays.
    pub async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread> {
        Ok(self.store.update_thread(user, thread, patch).await?)
    }

    /// Deletes a conversation with everything in it.
    pub async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()> {
        self.store.delete_thread(user, thread).await?;
        self.conversation_changed(thread);
        self.changes.thread_deleted(thread).await;
        Ok(())
    }

    /// Saves a new version of a document.
    pub async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact> {
        let revised = self.store.revise_artifact(user, artifact, revision).await?;
        self.conversation_changed(revised.thread_id);
        self.changes.saved(&revised).await;
        Ok(revised)
    }

    /// Saves a person's version of a document, made from version `edit.base_version`: refused with
    /// `VersionConflict` (and the document as it is now) when another version was saved since, and nothing changes.
    /// The title is kept unless the edit gives one.
    pub async fn edit_artifact(&self, user: Uuid, artifact: Uuid, edit: EditArtifact) -> Result<Artifact> {
        let EditArtifact { content, title, base_version } = edit;
        if base_version < 1 {
            return Err(Invalid::new("base_version", "The base version is a version number, 1 or more.").into());
        }
        let mut content = wire::validate::artifact_content(&content)?;
        let current = self.store.get_artifact(user, artifact).await?;
        let title = match title {
            Some(title) => wire::validate::title(&title)?,
            // The current title: were it changed since, so would the version be, and the save refused.
            None => current.title,
        };
        if self.limits.redact_pii {
            // Personal data is replaced in what people write, documents too; linear, off the async workers.
            content = tokio::task::spawn_blocking(move || crate::privacy::redact(&content))
                .await
                .map_err(|e| ChatError::Internal(e.into()))?;
        }
        let cites =
            self.cites_kept(user, current.thread_id, &content, super::ledger::Citing::Edit { artifact }).await?;
        let revision = ArtifactRevision {
            title,
            content,
            request_message_id: None,
            answers: Vec::new(),
            author: VersionAuthor::Person { user_id: user },
            base_version: Some(base_version),
            cites,
        };
        self.revise_artifact(user, artifact, revision).await
    }

    /// What a person's new version of a document of `thread` cites (see [`super::ledger::citations`]): what its
    /// version before cited, as it cited it, and the keys its Markdown newly cites as they stand now, on the path
    /// shown.
    pub async fn cites_kept(
        &self,
        user: Uuid,
        thread: Uuid,
        content: &str,
        citing: super::ledger::Citing,
    ) -> Result<Vec<store::Citation>> {
        let rows = super::ledger::rows_for_citing(&self.store, user, thread, &[], content).await?;
        let path = rows.shown_path();
        Ok(super::ledger::citations(&rows, &path, &[], content, citing).unwrap_or_default())
    }

    /// Deletes a document with all its versions.
    pub async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()> {
        // Read first for its conversation, whose context kept in memory this changes.
        let thread = self.store.get_artifact(user, artifact).await?.thread_id;
        self.store.delete_artifact(user, artifact).await?;
        self.conversation_changed(thread);
        self.changes.deleted(thread, artifact).await;
        Ok(())
    }
}
