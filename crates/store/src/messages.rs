//! The messages of a conversation. The storage interface both backends implement, and what both make of the
//! rows they read.
//!
//! A conversation is a tree: every message has a parent (none for a first message), an edit or another answer
//! to the same question is a sibling, and one path, from a first message to the conversation's active message,
//! is what the chat shows and the model sees. The shape ([`Tree`]) is read as heads and worked out here, once
//! for both backends.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use uuid::Uuid;
use wire::{Branching, Message, MessageStatus, ProjectRole::Viewer};

use super::columns::{convert, shared_sql, stored_row, Stored as _};
use super::projects::{readable, thread_row_access};
use super::threads::found;
use super::{
    now, parse_role, renumbering_base, unnumberable, MessageHead, MessageUpdate, NewMessage, Result, StoreError,
    MAX_SEQ,
};

/// The messages of a conversation.
#[async_trait]
pub trait Messages: Send + Sync {
    /// Appends with the next sequence number and bumps the thread's count, in one transaction.
    async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message>;
    /// [`append_message`](Self::append_message) outside any turn: `Conflict` while a turn heard from within
    /// `stale_after_ms` holds the thread, checked in the same transaction; `NotFound` when the thread is
    /// missing or another user's.
    async fn append_message_between_turns(
        &self,
        user: Uuid,
        message: NewMessage,
        stale_after_ms: i64,
    ) -> Result<Message>;
    /// Rewrites an answer's text, status, usage and context, as finished (searchable at once).
    async fn update_message(&self, user: Uuid, message: Uuid, update: &MessageUpdate) -> Result<()>;
    /// The thread's messages, every branch's, by sequence number; `NotFound` when the thread is missing or
    /// another user's.
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>>;
    /// The thread's shape: every message without its text, by sequence number, and the active message;
    /// `NotFound` when the thread is missing or another user's.
    async fn message_tree(&self, user: Uuid, thread: Uuid) -> Result<Tree> {
        self.message_tree_stamped(user, thread).await.map(|(tree, _)| tree)
    }
    /// [`message_tree`](Self::message_tree) with the thread's stamp read in the same statement as its active
    /// message.
    async fn message_tree_stamped(&self, user: Uuid, thread: Uuid) -> Result<(Tree, ThreadStamp)>;
    /// The thread's stamp; `NotFound` when the thread is missing or another user's.
    async fn thread_stamp(&self, user: Uuid, thread: Uuid) -> Result<ThreadStamp>;
    /// These messages of the thread (those that exist), by sequence number.
    async fn messages_by_id(&self, user: Uuid, thread: Uuid, ids: &[Uuid]) -> Result<Vec<Message>>;
    /// Makes `leaf` (a message of the thread; `None`: before its first message) the active message. With
    /// `stale_after_ms`, `Conflict` while a turn heard from within it holds the thread (checked in the same
    /// write); `NotFound` when the thread is missing or another user's, or `leaf` is not one of its messages.
    async fn set_active(&self, user: Uuid, thread: Uuid, leaf: Option<Uuid>, stale_after_ms: Option<i64>)
        -> Result<()>;
    /// The thread's messages numbered `from_seq` or later, by sequence number; empty when there are none or
    /// the thread is missing or another user's.
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>>;
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message>;
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>>;
    /// Deletes the message and every message after it on its branches (its subtree); an active message among
    /// them gives way to the newest message left on the branches of its parent. How many were deleted. With
    /// `stale_after_ms`, `Conflict` while a turn heard from within it holds the thread (checked in the same
    /// write); `NotFound` when the thread is missing or another user's, or `message` is not one of its messages.
    async fn delete_message(&self, user: Uuid, thread: Uuid, message: Uuid, stale_after_ms: Option<i64>)
        -> Result<u64>;

    /// The shown path: the messages from the first to the active one, and those of them that have siblings;
    /// `NotFound` when the thread is missing or another user's.
    async fn list_path(&self, user: Uuid, thread: Uuid) -> Result<(Vec<Message>, Vec<Branching>)> {
        let tree = self.message_tree(user, thread).await?;
        let path = tree.path();
        let ids: Vec<Uuid> = path.iter().map(|h| h.id).collect();
        let branches = tree.branches(&ids);
        let mut messages = self.messages_by_id(user, thread, &ids).await?;
        // A message deleted between the two reads leaves the path at its parent.
        if let Some(gap) = messages.iter().zip(&ids).position(|(m, id)| m.id != *id) {
            messages.truncate(gap);
        }
        Ok((messages, branches))
    }

    /// Shows the branch through `message`, down to its newest message; refused (`Conflict`) while an answer is
    /// being written. The new active message.
    async fn switch_branch(&self, user: Uuid, thread: Uuid, message: Uuid, stale_after_ms: i64) -> Result<Uuid> {
        let tree = self.message_tree(user, thread).await?;
        let leaf = tree.newest_under(message).ok_or(StoreError::NotFound)?;
        self.set_active(user, thread, Some(leaf), Some(stale_after_ms)).await?;
        Ok(leaf)
    }
}

/// Where a conversation stands in what the model's view of it is made from: the number of changes the
/// database counted (`context_version`: every change but the text of an answer being written, see the migration
/// `0150_context_versions`), its last message number and its active message. While a thread's stamp
/// is unchanged, so are its messages (but the text of an answer being written, which only the turn holding the
/// thread writes), its documents and the requests they answer, and its active path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadStamp {
    pub version: i64,
    pub last_seq: i64,
    pub active: Option<Uuid>,
}

/// The columns of `threads` a [`ThreadStamp`] is read from, in its order.
pub(crate) const STAMP_COLUMNS: &str = "context_version as version, last_seq, active_id as active";

stored_row! {
    /// A [`ThreadStamp`]'s row (see [`STAMP_COLUMNS`]).
    StampRow<I> -> ThreadStamp {
        version: i64,
        last_seq: i64,
        active: Option<I>,
    }
}

/// The shape of a conversation: every message without its text, by sequence number, and the active message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tree {
    pub heads: Vec<MessageHead>,
    pub active: Option<Uuid>,
}

impl Tree {
    fn parents(&self) -> HashMap<Uuid, Option<Uuid>> {
        self.heads.iter().map(|h| (h.id, h.parent)).collect()
    }

    /// The tree as it was before `message`, a leaf, was added: without it, and with its parent active if it was.
    pub fn forget(&mut self, message: Uuid) {
        let Some(at) = self.heads.iter().position(|h| h.id == message) else { return };
        let head = self.heads.remove(at);
        if self.active == Some(message) {
            self.active = head.parent;
        }
    }

    /// The active path, first message first. With no active message (or one that is gone), the path to the
    /// newest message.
    pub fn path(&self) -> Vec<MessageHead> {
        let by_id: HashMap<Uuid, &MessageHead> = self.heads.iter().map(|h| (h.id, h)).collect();
        let mut next = self.active.filter(|id| by_id.contains_key(id)).or_else(|| self.heads.last().map(|h| h.id));
        let mut path = Vec::new();
        // A parent always comes before its child, so a walk up is never longer than the thread.
        while let Some(head) = next.and_then(|id| by_id.get(&id)).filter(|_| path.len() < self.heads.len()) {
            path.push((*head).clone());
            next = head.parent;
        }
        path.reverse();
        path
    }

    /// The versions of `message` (it included: the messages with its parent), oldest first.
    pub fn siblings(&self, message: Uuid) -> Vec<Uuid> {
        let parents = self.parents();
        let Some(parent) = parents.get(&message) else { return Vec::new() };
        let parent = parent.filter(|p| parents.contains_key(p));
        self.heads.iter().filter(|h| h.parent.filter(|p| parents.contains_key(p)) == parent).map(|h| h.id).collect()
    }

    /// The messages of `path` that have siblings, with them.
    pub fn branches(&self, path: &[Uuid]) -> Vec<Branching> {
        let parents = self.parents();
        let mut children: HashMap<Option<Uuid>, Vec<Uuid>> = HashMap::new();
        for head in &self.heads {
            children.entry(head.parent.filter(|p| parents.contains_key(p))).or_default().push(head.id);
        }
        path.iter()
            .filter_map(|id| {
                let parent = parents.get(id)?.filter(|p| parents.contains_key(p));
                let siblings = children.get(&parent)?;
                (siblings.len() > 1).then(|| Branching { message_id: *id, siblings: siblings.clone() })
            })
            .collect()
    }

    /// `message` and everything after it on its branches, in order.
    pub fn subtree(&self, message: Uuid) -> Vec<Uuid> {
        let mut inside: HashSet<Uuid> = HashSet::new();
        let mut out = Vec::new();
        // Children come after their parents in number order, so one pass finds the whole subtree.
        for head in &self.heads {
            if head.id == message || head.parent.is_some_and(|p| inside.contains(&p)) {
                inside.insert(head.id);
                out.push(head.id);
            }
        }
        out
    }

    /// The newest message of `message`'s subtree (a leaf: a child is always newer than its parent).
    pub fn newest_under(&self, message: Uuid) -> Option<Uuid> {
        self.subtree(message).last().copied()
    }

    /// What deleting `message`'s subtree leaves: the messages deleted, and the active message after (`None`:
    /// nothing left). `None` when `message` is not in the tree.
    pub fn after_deleting(&self, message: Uuid) -> Option<(Vec<Uuid>, Option<Uuid>)> {
        let head = self.heads.iter().find(|h| h.id == message)?;
        let gone = self.subtree(message);
        let removed: HashSet<Uuid> = gone.iter().copied().collect();
        let active = match self.active {
            Some(active) if !removed.contains(&active) => Some(active),
            _ => {
                let left = Tree {
                    heads: self.heads.iter().filter(|h| !removed.contains(&h.id)).cloned().collect(),
                    active: None,
                };
                match head.parent.filter(|p| left.heads.iter().any(|h| h.id == *p)) {
                    Some(parent) => left.newest_under(parent),
                    None => left.heads.last().map(|h| h.id),
                }
            }
        };
        Some((gone, active))
    }
}

/// Whether a turn of a thread (`$1`) of a user (`$2`) heard from since `$3` holds it.
/// Whether a turn heard from since `$2` holds the thread `$1` (whoever sent it; the caller has checked who may
/// write, in the statement that locked the thread).
const TURN_RUNNING: &str = "select exists (select 1 from turns
    where thread_id = $1 and status = 'running' and heartbeat_at >= $2)";

shared_sql! {
    rows(MessageRow<D::Id, D::Time>, StampRow<D::Id>, MessageHeadRow<D::Id>);

    /// The stamp of `user`'s `thread`; `None` when it is missing or another user's.
    pub(crate) async fn stamp(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<Option<ThreadStamp>> {
        let sql = format!("select {STAMP_COLUMNS} from threads where id = $1 and user_id = $2");
        Self::owned_row::<StampRow<D::Id>, _>(conn, &sql, thread, user).await
    }

    /// The person's messages of `thread` numbered `from_seq` or later, in order.
    pub(crate) async fn messages_from(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        from_seq: i64,
    ) -> Result<Vec<Message>> {
        let sql = format!(
            "select {MESSAGE_COLUMNS} from messages where thread_id = $1 and {} and seq >= $3 order by seq",
            readable("$1", "$2")
        );
        let rows: Vec<MessageRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).bind(from_seq).fetch_all(conn).await?;
        convert(rows)
    }

    /// The person's message with this id.
    pub(crate) async fn message(conn: &mut D::Connection, user: Uuid, message: Uuid) -> Result<Message> {
        let sql = format!("select {MESSAGE_COLUMNS} from messages where id = $1 and user_id = $2");
        Self::owned_row::<MessageRow<D::Id, D::Time>, _>(conn, &sql, message, user).await?.ok_or(StoreError::NotFound)
    }

    /// `NotFound` unless the person's `thread` is there; its row stays locked until the transaction ends. A
    /// turn starting with a message of its own updates that row, so it either committed before (and is seen
    /// after this) or waits until this transaction is in. Nothing where one writer makes every write in turn
    /// (SQLite): there is nothing to wait for, and the change it guards finds a missing thread itself.
    pub(crate) async fn lock_thread(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<()> {
        if D::FOR_UPDATE.is_empty() {
            return Ok(());
        }
        let sql = format!("select id from threads where id = $1 and user_id = $2 {}", D::FOR_UPDATE);
        let owned: Option<D::Id> =
            sqlx::query_scalar(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_optional(conn).await?;
        found(owned.is_some())
    }

    /// [`lock_thread`](Self::lock_thread) for a person who reaches the thread with the role `least` (its author
    /// always does; see [`crate::projects::thread_access`]).
    pub(crate) async fn lock_thread_for(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        least: wire::ProjectRole,
    ) -> Result<()> {
        let sql = format!(
            "select t.id from threads t where t.id = $1 and {} {}",
            thread_row_access("t", "$2", least),
            D::FOR_UPDATE
        );
        let reached: Option<D::Id> =
            sqlx::query_scalar(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_optional(conn).await?;
        found(reached.is_some())
    }

    /// The person's messages of `thread` among `ids`, in order.
    pub(crate) async fn messages_by_id(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        ids: &[Uuid],
    ) -> Result<Vec<Message>> {
        let sql = format!(
            "select {MESSAGE_COLUMNS} from messages where thread_id = $1 and {} and {} order by seq",
            readable("$1", "$2"),
            D::in_ids("id", "$3")
        );
        let rows: Vec<MessageRow<D::Id, D::Time>> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).bind(D::ids(ids)).fetch_all(conn).await?;
        convert(rows)
    }

    /// The context the person's message was answered with, if it kept one.
    pub(crate) async fn message_context(
        conn: &mut D::Connection,
        user: Uuid,
        message: Uuid,
    ) -> Result<Option<serde_json::Value>> {
        let sql = format!("select context from messages where id = $1 and {}", readable("messages.thread_id", "$2"));
        let context: Option<Option<D::Json>> =
            sqlx::query_scalar(&sql)
                .bind(D::id(message))
                .bind(D::id(user))
                .fetch_optional(conn)
                .await?;
        context.ok_or(StoreError::NotFound)?.read("context")
    }

    /// Rewrites an answer's text, status, usage, whether it is still being written, and model and context when
    /// given; whether it exists.
    pub(crate) async fn rewrite_message(
        conn: &mut D::Connection,
        user: Uuid,
        message: Uuid,
        update: &MessageUpdate,
        writing: bool,
    ) -> Result<bool> {
        let updated = sqlx::query(
            "update messages set content = $1, status = $2, input_tokens = $3, output_tokens = $4, writing = $5,
             model = coalesce($6, model), context = coalesce($7, context) where id = $8 and user_id = $9",
        )
        .bind(update.content.as_str())
        .bind(update.status.as_str())
        .bind(update.usage.input_tokens as i64)
        .bind(update.usage.output_tokens as i64)
        .bind(writing)
        .bind(update.model.clone())
        .bind(update.context.as_ref().map(|c| D::json(c)).transpose()?)
        .bind(D::id(message))
        .bind(D::id(user))
        .execute(conn)
        .await?;
        Ok(D::rows_affected(&updated) > 0)
    }

    /// Makes `leaf` the active message of `thread` (`None`: before its first message), for its author or an
    /// editor of its project (the branch shown is the conversation's, for everyone who reads it); `NotFound`
    /// when the thread is missing or the person does not write in it, or `leaf` is not one of its messages.
    pub(crate) async fn set_active(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        leaf: Option<Uuid>,
    ) -> Result<()> {
        let sql = format!(
            "update threads set active_id = $1 where id = $2 and {}
             and ($1 is null or exists (select 1 from messages where id = $1 and thread_id = $2))",
            thread_row_access("threads", "$3", wire::ProjectRole::Editor)
        );
        let updated = sqlx::query(&sql)
        .bind(leaf.map(D::id))
        .bind(D::id(thread))
        .bind(D::id(user))
        .execute(conn)
        .await?;
        found(D::rows_affected(&updated) > 0)
    }

    /// Deletes the person's messages `gone` of `thread` and makes `active` its active message; how many went.
    pub(crate) async fn delete_messages(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        gone: &[Uuid],
        active: Option<Uuid>,
    ) -> Result<u64> {
        let sql = format!("delete from messages where thread_id = $1 and user_id = $2 and {}", D::in_ids("id", "$3"));
        let deleted =
            sqlx::query(&sql).bind(D::id(thread)).bind(D::id(user)).bind(D::ids(gone)).execute(&mut *conn).await?;
        let deleted = D::rows_affected(&deleted);
        sqlx::query("update threads set message_count = message_count - $1, active_id = $2 where id = $3")
            .bind(deleted as i64)
            .bind(active.map(D::id))
            .bind(D::id(thread))
            .execute(conn)
            .await?;
        Ok(deleted)
    }

    /// The shape of `user`'s `thread` and its stamp, its row locked until the transaction ends when `lock`;
    /// `None` when it is missing or another user's.
    pub(crate) async fn tree(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        lock: bool,
    ) -> Result<Option<(Tree, ThreadStamp)>> {
        // A read reaches the conversations of the person's projects; a write (which locks) only their own.
        let sql = if lock {
            format!("select {STAMP_COLUMNS} from threads where id = $1 and user_id = $2 {}", D::FOR_UPDATE)
        } else {
            format!("select {STAMP_COLUMNS} from threads t where id = $1 and {}", thread_row_access("t", "$2", Viewer))
        };
        let Some(stamp) = Self::owned_row::<StampRow<D::Id>, ThreadStamp>(&mut *conn, &sql, thread, user).await? else {
            return Ok(None);
        };
        // Answered from the `messages_heads` index alone: the rows (and their texts) are not read.
        let sql = format!(
            "select {HEAD_COLUMNS} from messages {} where thread_id = $1 and {} order by seq",
            D::indexed_by("messages_heads"),
            readable("$1", "$2")
        );
        let rows: Vec<MessageHeadRow<D::Id>> =
            sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_all(conn).await?;
        Ok(Some((Tree { heads: convert(rows)?, active: stamp.active }, stamp)))
    }

    /// `Conflict` while a turn heard from within `stale_after_ms` holds `user`'s `thread`: the message tree
    /// changes only between turns. Run in the transaction of the change it guards.
    pub(crate) async fn refuse_while_running(
        conn: &mut D::Connection,
        thread: Uuid,
        stale_after_ms: i64,
    ) -> Result<()> {
        let heard_since = now() - chrono::Duration::milliseconds(stale_after_ms);
        let busy: bool = sqlx::query_scalar(TURN_RUNNING)
            .bind(D::id(thread))
            .bind(D::time(heard_since))
            .fetch_one(conn)
            .await?;
        if busy {
            return Err(StoreError::thread_busy());
        }
        Ok(())
    }

    /// Numbers the messages of `user`'s `thread` again from 1, in their order, when its count has reached
    /// [`MAX_SEQ`]; whether it did.
    pub(crate) async fn renumber_if_full(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<bool> {
        let sql = format!("select last_seq >= $1 from threads where id = $2 and user_id = $3 {}", D::FOR_UPDATE);
        let full: Option<bool> = sqlx::query_scalar(&sql)
            .bind(MAX_SEQ)
            .bind(D::id(thread))
            .bind(D::id(user))
            .fetch_optional(&mut *conn)
            .await?;
        if full != Some(true) {
            return Ok(false);
        }
        // SQLite kept numbers past the 64-bit range as floating point: read as the integers nearest them.
        let (lowest, count): (Option<i64>, i64) =
            sqlx::query_as("select cast(min(seq) as bigint), count(*) from messages where thread_id = $1")
                .bind(D::id(thread))
                .fetch_one(&mut *conn)
                .await?;
        let base = renumbering_base(lowest.unwrap_or(1), count).ok_or_else(unnumberable)?;
        sqlx::query(
            "update messages set seq = moved.seq
             from (select id, $1 - row_number() over (order by seq) as seq from messages where thread_id = $2) as moved
             where messages.id = moved.id",
        )
        .bind(base)
        .bind(D::id(thread))
        .execute(&mut *conn)
        .await?;
        sqlx::query(
            "update messages set seq = numbered.seq
             from (select id, row_number() over (order by seq desc) as seq from messages where thread_id = $1)
             as numbered where messages.id = numbered.id",
        )
        .bind(D::id(thread))
        .execute(&mut *conn)
        .await?;
        sqlx::query("update threads set last_seq = $1 where id = $2")
            .bind(count)
            .bind(D::id(thread))
            .execute(conn)
            .await?;
        Ok(true)
    }
}

/// The columns a [`MessageRow`] reads.
pub(crate) const MESSAGE_COLUMNS: &str =
    "id, thread_id, seq, role, content, status, input_tokens, output_tokens, model, created_at, parent_id, \
     quote_artifact_id, quote_text, author_id";

stored_row! {
    /// A message's row: ids and times as the backend keeps them (see [`Stored`]).
    MessageRow<I, T> -> Message {
        id: I,
        thread_id: I,
        seq: i64,
        content: String,
        model: Option<String>,
        created_at: T,
        parent_id: Option<I>,
    } with {
        role: String,
        status: String,
        input_tokens: i64,
        output_tokens: i64,
        quote_artifact_id: Option<I>,
        quote_text: Option<String>,
        author_id: Option<I>,
    } => {
        role: parse_role(&role)?,
        status: MessageStatus::parse(&status).ok_or_else(|| StoreError::Corrupt(format!("status {status}")))?,
        input_tokens: input_tokens as u64,
        output_tokens: output_tokens as u64,
        quote: match (quote_artifact_id.read("quote_artifact_id")?, quote_text) {
            (Some(artifact_id), Some(text)) => Some(wire::Quote { artifact_id, text }),
            _ => None,
        },
        author_id: author_id.read("author_id")?,
    }
}

/// The columns a [`MessageHeadRow`] reads.
pub(crate) const HEAD_COLUMNS: &str = "id, seq, role, parent_id";

stored_row! {
    /// A [`MessageHead`]'s row.
    MessageHeadRow<I> -> MessageHead {
        id: I,
        seq: i64,
    } with {
        role: String,
        parent_id: Option<I>,
    } => {
        role: parse_role(&role)?,
        parent: parent_id.read("parent_id")?,
    }
}

/// Implements [`Messages`] for a backend, written once for both, as [`accounts_for`](super::accounts::accounts_for)
/// does, given the backend's way to save a new message (`$insert`: numbered, in a transaction; its place, `None`
/// when its thread is missing or another user's). The module it is used in has the backend's `Shared`
/// statements; the backend has `read`, `write`, `write_together` and `owns`.
macro_rules! messages_for {
    ($backend:ty, $insert:path) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::Message;
            use $crate::threads::{found, listing};
            use $crate::{now, MessageUpdate, Messages, NewMessage, Result, StoreError, ThreadStamp, Tree};

            #[async_trait::async_trait]
            impl Messages for $backend {
                #[instrument(skip(self, message), fields(thread = %message.thread_id))]
                async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message> {
                    let (id, created) = (Uuid::now_v7(), now());
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            let place = $insert(tx, user, id, &message, created).await?.ok_or(StoreError::NotFound)?;
                            Ok(message.saved(id, place, created))
                        })
                    })
                    .await
                }

                #[instrument(skip(self, message), fields(thread = %message.thread_id))]
                async fn append_message_between_turns(
                    &self,
                    user: Uuid,
                    message: NewMessage,
                    stale_after_ms: i64,
                ) -> Result<Message> {
                    let (id, created) = (Uuid::now_v7(), now());
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            Shared::lock_thread(&mut *tx, user, message.thread_id).await?;
                            Shared::refuse_while_running(&mut *tx, message.thread_id, stale_after_ms).await?;
                            let place = $insert(tx, user, id, &message, created).await?.ok_or(StoreError::NotFound)?;
                            Ok(message.saved(id, place, created))
                        })
                    })
                    .await
                }

                #[instrument(skip(self, update))]
                async fn update_message(&self, user: Uuid, message: Uuid, update: &MessageUpdate) -> Result<()> {
                    let update = update.clone();
                    self.write(move |conn| {
                        Box::pin(
                            async move { found(Shared::rewrite_message(conn, user, message, &update, false).await?) },
                        )
                    })
                    .await
                }

                #[instrument(skip(self))]
                async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>> {
                    let messages = self.list_messages_from(user, thread, i64::MIN).await?;
                    listing(messages, self.reads_thread(user, thread)).await
                }

                #[instrument(skip(self))]
                async fn message_tree_stamped(&self, user: Uuid, thread: Uuid) -> Result<(Tree, ThreadStamp)> {
                    Shared::tree(&mut *self.read().await?, user, thread, false).await?.ok_or(StoreError::NotFound)
                }

                #[instrument(skip(self))]
                async fn thread_stamp(&self, user: Uuid, thread: Uuid) -> Result<ThreadStamp> {
                    Shared::stamp(&mut *self.read().await?, user, thread).await?.ok_or(StoreError::NotFound)
                }

                #[instrument(skip(self, ids), fields(ids = ids.len()))]
                async fn messages_by_id(&self, user: Uuid, thread: Uuid, ids: &[Uuid]) -> Result<Vec<Message>> {
                    Shared::messages_by_id(&mut *self.read().await?, user, thread, ids).await
                }

                #[instrument(skip(self))]
                async fn set_active(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    leaf: Option<Uuid>,
                    stale_after_ms: Option<i64>,
                ) -> Result<()> {
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            Shared::lock_thread_for(&mut *tx, user, thread, wire::ProjectRole::Editor).await?;
                            if let Some(stale_after_ms) = stale_after_ms {
                                Shared::refuse_while_running(&mut *tx, thread, stale_after_ms).await?;
                            }
                            Shared::set_active(tx, user, thread, leaf).await
                        })
                    })
                    .await
                }

                #[instrument(skip(self))]
                async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>> {
                    Shared::messages_from(&mut *self.read().await?, user, thread, from_seq).await
                }

                #[instrument(skip(self))]
                async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message> {
                    Shared::message(&mut *self.read().await?, user, message).await
                }

                #[instrument(skip(self))]
                async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>> {
                    Shared::message_context(&mut *self.read().await?, user, message).await
                }

                #[instrument(skip(self))]
                async fn delete_message(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    message: Uuid,
                    stale_after_ms: Option<i64>,
                ) -> Result<u64> {
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            // Read with the thread's row locked, so no message joins the subtree meanwhile.
                            let (tree, _) =
                                Shared::tree(&mut *tx, user, thread, true).await?.ok_or(StoreError::NotFound)?;
                            let (gone, active) = tree.after_deleting(message).ok_or(StoreError::NotFound)?;
                            if let Some(stale_after_ms) = stale_after_ms {
                                Shared::refuse_while_running(&mut *tx, thread, stale_after_ms).await?;
                            }
                            Shared::delete_messages(tx, user, thread, &gone, active).await
                        })
                    })
                    .await
                }
            }
        };
    };
}
pub(crate) use messages_for;

#[cfg(test)]
mod tests {
    use super::*;
    use wire::Role;

    fn head(n: u128, parent: Option<u128>) -> MessageHead {
        let role = if n % 2 == 1 { Role::User } else { Role::Assistant };
        MessageHead { id: Uuid::from_u128(n), seq: n as i64, role, parent: parent.map(Uuid::from_u128) }
    }

    fn ids(ns: &[u128]) -> Vec<Uuid> {
        ns.iter().map(|n| Uuid::from_u128(*n)).collect()
    }

    /// 1 -> 2 -> 3 -> 4, with 5 a second answer to 3 and 6 -> 7 an edit of 3.
    fn tree(active: u128) -> Tree {
        let heads = vec![
            head(1, None),
            head(2, Some(1)),
            head(3, Some(2)),
            head(4, Some(3)),
            head(5, Some(3)),
            head(6, Some(2)),
            head(7, Some(6)),
        ];
        Tree { heads, active: Some(Uuid::from_u128(active)) }
    }

    #[test]
    fn the_path_runs_from_the_first_message_to_the_active_one() {
        let ids_of = |t: &Tree| t.path().iter().map(|h| h.id).collect::<Vec<_>>();
        assert_eq!(ids_of(&tree(5)), ids(&[1, 2, 3, 5]));
        assert_eq!(ids_of(&tree(7)), ids(&[1, 2, 6, 7]));
        let gone = Tree { active: Some(Uuid::from_u128(99)), ..tree(5) };
        assert_eq!(ids_of(&gone), ids(&[1, 2, 6, 7]), "the newest message's path when the active one is gone");
        assert!(Tree::default().path().is_empty());
    }

    #[test]
    fn a_forgotten_leaf_gives_the_tree_back_as_it_was_before_it() {
        let ids_of = |t: &Tree| t.path().iter().map(|h| h.id).collect::<Vec<_>>();
        let mut added = tree(7);
        added.heads.push(head(8, Some(7)));
        added.active = Some(Uuid::from_u128(8));
        added.forget(Uuid::from_u128(8));
        assert_eq!(ids_of(&added), ids_of(&tree(7)));
        assert_eq!(added.heads.len(), tree(7).heads.len());
        // Added to a thread with no active message (its parent none): none is active again.
        let mut unanchored = Tree { active: None, ..tree(5) };
        unanchored.heads.push(head(9, None));
        unanchored.active = Some(Uuid::from_u128(9));
        unanchored.forget(Uuid::from_u128(9));
        assert_eq!(unanchored.active, None);
        assert_eq!(ids_of(&unanchored), ids(&[1, 2, 6, 7]));
        // A message not in the tree (the commit not landed yet) changes nothing.
        let mut before = tree(5);
        before.forget(Uuid::from_u128(42));
        assert_eq!(ids_of(&before), ids(&[1, 2, 3, 5]));
    }

    #[test]
    fn siblings_and_branches_name_the_versions_of_a_message() {
        let t = tree(5);
        assert_eq!(t.siblings(Uuid::from_u128(5)), ids(&[4, 5]));
        assert_eq!(t.siblings(Uuid::from_u128(6)), ids(&[3, 6]));
        assert_eq!(t.siblings(Uuid::from_u128(1)), ids(&[1]));
        let path: Vec<Uuid> = t.path().iter().map(|h| h.id).collect();
        let branches = t.branches(&path);
        assert_eq!(
            branches,
            vec![
                Branching { message_id: Uuid::from_u128(3), siblings: ids(&[3, 6]) },
                Branching { message_id: Uuid::from_u128(5), siblings: ids(&[4, 5]) },
            ]
        );
    }

    #[test]
    fn a_subtree_and_its_newest_leaf() {
        let t = tree(5);
        assert_eq!(t.subtree(Uuid::from_u128(3)), ids(&[3, 4, 5]));
        assert_eq!(t.subtree(Uuid::from_u128(2)), ids(&[2, 3, 4, 5, 6, 7]));
        assert_eq!(t.newest_under(Uuid::from_u128(3)), Some(Uuid::from_u128(5)));
        assert_eq!(t.newest_under(Uuid::from_u128(99)), None);
    }

    #[test]
    fn deleting_the_active_branch_shows_the_newest_one_left_beside_it() {
        let (gone, active) = tree(5).after_deleting(Uuid::from_u128(5)).unwrap();
        assert_eq!((gone, active), (ids(&[5]), Some(Uuid::from_u128(4))));
        let (gone, active) = tree(5).after_deleting(Uuid::from_u128(3)).unwrap();
        assert_eq!((gone, active), (ids(&[3, 4, 5]), Some(Uuid::from_u128(7))));
        let (_, active) = tree(5).after_deleting(Uuid::from_u128(7)).unwrap();
        assert_eq!(active, Some(Uuid::from_u128(5)), "another branch's deletion leaves the active one");
        let (gone, active) = tree(5).after_deleting(Uuid::from_u128(1)).unwrap();
        assert_eq!((gone.len(), active), (7, None));
        assert!(tree(5).after_deleting(Uuid::from_u128(99)).is_none());
    }
}
