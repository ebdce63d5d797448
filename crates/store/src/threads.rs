//! Conversations: create, list, read, change, delete. The storage interface both backends implement, and what
//! both make of the rows they read.

use std::future::Future;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::Thread;

use super::columns::{shared_sql, stored_row, Stored};
use super::projects::Scope;
use super::{now, CursorKey, Result, StoreError, ThreadCursor, ThreadPage, ThreadPatch, ThreadQuery, ThreadSort};

shared_sql! {
    rows((String, i64));
    /// Whether a row with this id and owner exists in `table` (`threads` or `messages`). Used when a listing
    /// comes back empty, to tell an empty thread from one that is missing or another user's.
    pub(crate) async fn owns(conn: &mut D::Connection, table: &str, user: Uuid, id: Uuid) -> Result<bool> {
        let sql = format!("select exists (select 1 from {table} where id = $1 and user_id = $2)");
        Ok(sqlx::query_scalar(&sql).bind(D::id(id)).bind(D::id(user)).fetch_one(conn).await?)
    }

    /// The row `sql` selects by an id (`$1`) and its owner (`$2`), as callers see it; `None` when there is none
    /// (missing, or another user's).
    pub(crate) async fn owned_row<R, T>(conn: &mut D::Connection, sql: &str, id: Uuid, user: Uuid) -> Result<Option<T>>
    where
        R: for<'r> sqlx::FromRow<'r, D::Row> + Send + Unpin,
        T: TryFrom<R, Error = StoreError>,
    {
        let row: Option<R> = sqlx::query_as(sql).bind(D::id(id)).bind(D::id(user)).fetch_optional(conn).await?;
        row.map(T::try_from).transpose()
    }

    /// Whether the person reads the thread: theirs, or in a project of theirs.
    pub(crate) async fn reads_thread(conn: &mut D::Connection, user: Uuid, thread: Uuid) -> Result<bool> {
        let sql = format!("select {}", crate::projects::readable("$1", "$2"));
        Ok(sqlx::query_scalar(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_one(conn).await?)
    }

    /// The thread as the person reads it (theirs, or in a project of theirs), read with `columns` (the backend's `THREAD_COLUMNS`, over `threads t`) as `R`.
    pub(crate) async fn thread_as<R>(conn: &mut D::Connection, columns: &str, user: Uuid, thread: Uuid) -> Result<Thread>
    where
        R: for<'r> sqlx::FromRow<'r, D::Row> + Send + Unpin,
        Thread: TryFrom<R, Error = StoreError>,
    {
        let sql = format!(
            "select {columns} from threads t where t.id = $1 and {}",
            crate::projects::thread_row_access("t", "$2", wire::ProjectRole::Viewer)
        );
        Self::owned_row::<R, Thread>(conn, &sql, thread, user).await?.ok_or(StoreError::NotFound)
    }

    /// `NotFound` unless the person owns the row with this id in `table`.
    pub(crate) async fn must_own(conn: &mut D::Connection, table: &str, user: Uuid, id: Uuid) -> Result<()> {
        found(Self::owns(conn, table, user, id).await?)
    }

    /// `NotFound` unless `message` is the person's and in `thread`.
    pub(crate) async fn must_be_in_thread(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        message: Uuid,
    ) -> Result<()> {
        let sql = "select exists (select 1 from messages where id = $1 and thread_id = $2 and user_id = $3)";
        found(sqlx::query_scalar(sql).bind(D::id(message)).bind(D::id(thread)).bind(D::id(user)).fetch_one(conn).await?)
    }

    /// Saves a new thread of the person's, without tags.
    pub(crate) async fn insert_thread(
        conn: &mut D::Connection,
        id: Uuid,
        user: Uuid,
        title: String,
        created: DateTime<Utc>,
    ) -> Result<()> {
        sqlx::query(INSERT_THREAD)
            .bind(D::id(id))
            .bind(D::id(user))
            .bind(title)
            .bind(D::time(created))
            .execute(conn)
            .await?;
        Ok(())
    }

    /// Changes the fields of the person's thread that `patch` carries, but its tags; `NotFound` when the thread
    /// is missing or another user's.
    pub(crate) async fn patch_thread(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
        patch: &ThreadPatch,
        updated: DateTime<Utc>,
    ) -> Result<()> {
        let sql = format!(
            "update threads set title = coalesce($1, title), pinned = coalesce($2, pinned),
             archived = coalesce($3, archived), summary = coalesce($4, summary), updated_at = {}(updated_at, $5),
             model = case when $6 is null then model else nullif($7, '') end,
             mcp_servers = case when $10 then $11 else mcp_servers end
             where id = $8 and user_id = $9",
            D::GREATEST
        );
        let done = sqlx::query(&sql)
            .bind(patch.title.clone())
            .bind(patch.pinned)
            .bind(patch.archived)
            .bind(patch.summary.clone())
            .bind(D::time(updated))
            .bind(patch.model.clone())
            .bind(patch.model.clone())
            .bind(D::id(thread))
            .bind(D::id(user))
            .bind(patch.mcp_servers.is_some())
            .bind(crate::settings::stored_server_names(patch.mcp_servers.as_ref().and_then(Option::as_ref)))
            .execute(conn)
            .await?;
        found(D::rows_affected(&done) > 0)
    }

    /// See [`Threads::list_tags`].
    pub(crate) async fn tag_counts(conn: &mut D::Connection, user: Uuid, scope: Scope) -> Result<Vec<wire::TagCount>> {
        let sql = format!(
            "select tt.tag, count(*) as n from thread_tags tt where {} group by tt.tag order by n desc, tt.tag{}",
            scope.rows("tt"),
            D::BYTEWISE
        );
        let rows: Vec<(String, i64)> = Self::scoped(sqlx::query_as(&sql), user, scope).fetch_all(&mut *conn).await?;
        if rows.is_empty() {
            Self::must_reach(conn, user, scope).await?;
        }
        Ok(rows.into_iter().map(|(tag, n)| wire::TagCount { tag, count: n as u64 }).collect())
    }
}

/// Conversations: create, list, read, change, delete.
#[async_trait]
pub trait Threads: Send + Sync {
    async fn create_thread(&self, user: Uuid, title: &str, tags: &[String]) -> Result<Thread>;
    async fn list_threads(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage>;
    async fn get_thread(&self, user: Uuid, thread: Uuid) -> Result<Thread>;
    async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread>;
    async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()>;
    /// Every tag of the conversations of `scope` (archived ones too) with how many carry it, most used first, ties
    /// by name compared byte-wise; `NotFound` for a project the person is not a member of.
    async fn list_tags(&self, user: Uuid, scope: Scope) -> Result<Vec<wire::TagCount>>;
}

/// Saves a new thread: id, owner, title and the time it was made.
pub(crate) const INSERT_THREAD: &str =
    "insert into threads (id, user_id, title, created_at, updated_at) values ($1, $2, $3, $4, $4)";

/// `NotFound` unless the row was there: every statement is scoped to its owner, so another user's row is
/// indistinguishable from a missing one.
pub(crate) fn found(there: bool) -> Result<()> {
    there.then_some(()).ok_or(StoreError::NotFound)
}

/// The rows of a listing of what a thread holds; when there are none, `NotFound` if `owned` (awaited only then)
/// says the thread is missing or another user's, so an empty thread is told from one that is not there.
pub(crate) async fn listing<R>(rows: Vec<R>, owned: impl Future<Output = Result<bool>>) -> Result<Vec<R>> {
    if rows.is_empty() {
        found(owned.await?)?;
    }
    Ok(rows)
}

stored_row! {
    /// A thread's row: ids, times and the tag list as the backend keeps them (see [`Stored`]).
    ThreadRow<I, T, L> -> Thread {
        id: I,
        title: String,
        model: Option<String>,
        mcp_servers: Option<String>,
        project_id: Option<I>,
        tags: L,
        pinned: bool,
        archived: bool,
        message_count: i64,
        first_message: Option<String>,
        created_at: T,
        updated_at: T,
    }
}

impl Stored<Vec<String>> for Vec<String> {
    fn read(self, _: &str) -> Result<Vec<String>> {
        Ok(self)
    }
}

/// A list SQLite keeps as a JSON array.
impl Stored<Vec<String>> for String {
    fn read(self, column: &str) -> Result<Vec<String>> {
        serde_json::from_str(&self).map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
    }
}

/// A thread of a listing with what its page is cut by: its state the walk orders it by (see [`ThreadCursor`]),
/// and on a first page the backend's mark of where the walk begins.
#[derive(sqlx::FromRow)]
pub(crate) struct ListedRow<I, T, L> {
    #[sqlx(flatten)]
    thread: ThreadRow<I, T, L>,
    sort_pinned: bool,
    sort_time: Option<T>,
    sort_title: Option<String>,
    walk: String,
}

/// How a listing's statement orders its threads (see [`ThreadQuery::order`]).
pub(crate) struct ListingOrder {
    /// Whose state orders and filters: `s`, each thread's as it was when the walk began (later pages), or `t`,
    /// as it is (the first page, straight from `threads` and its indexes).
    pub state: &'static str,
    /// The sort key's column, and the comparison that goes past the cursor.
    pub key: String,
    pub past: &'static str,
    /// The columns a [`ListedRow`] reads besides the thread's and the walk mark.
    pub columns: String,
    /// The statement's end, but for the number of rows.
    pub order_by: String,
}

impl ThreadQuery {
    /// Threads a page holds.
    pub(crate) fn page_size(&self) -> u32 {
        self.limit.clamp(1, 100)
    }

    /// The order of this listing; `collate` follows a title key.
    pub(crate) fn order(&self, collate: &str) -> ListingOrder {
        let state = if self.cursor.is_some() { "s" } else { "t" };
        let key = match self.sort {
            ThreadSort::UpdatedAt => format!("{state}.updated_at"),
            ThreadSort::CreatedAt => "t.created_at".to_owned(),
            ThreadSort::Title => format!("{state}.title{collate}"),
        };
        let (past, dir) = if self.descending { ("<", "desc") } else { (">", "asc") };
        let (time, title) =
            if self.sort == ThreadSort::Title { ("null", key.as_str()) } else { (key.as_str(), "null") };
        let columns = format!("{time} as sort_time, {title} as sort_title, {state}.pinned as sort_pinned");
        let order_by = format!(" order by {state}.pinned desc, {key} {dir}, t.id {dir} limit ");
        ListingOrder { state, key, past, columns, order_by }
    }

    /// The page `rows` hold (read with one more than [`page_size`](Self::page_size) when another page follows)
    /// and the cursor to the next one.
    pub(crate) fn page<I, T, L>(&self, mut rows: Vec<ListedRow<I, T, L>>) -> Result<ThreadPage>
    where
        I: Stored<Uuid>,
        T: Stored<DateTime<Utc>>,
        L: Stored<Vec<String>>,
    {
        let size = self.page_size() as usize;
        let more = rows.len() > size;
        rows.truncate(size);
        let first_walk = rows.first().map(|row| row.walk.clone());
        let mut threads = Vec::with_capacity(rows.len());
        let mut last_key = None;
        for row in rows {
            // The page shows current data, but the walk goes on from the state it was ordered by.
            let key = match (row.sort_time, row.sort_title) {
                (Some(time), _) => CursorKey::Time(time.read("sort_key")?.timestamp_micros()),
                (None, Some(title)) => CursorKey::Text(title),
                (None, None) => return Err(StoreError::Corrupt("sort key".into())),
            };
            last_key = Some((row.sort_pinned, key));
            threads.push(Thread::try_from(row.thread)?);
        }
        let next = match (more, threads.last(), last_key) {
            (true, Some(last), Some((pinned, key))) => {
                let (as_of, walk) = match &self.cursor {
                    Some(cursor) => (cursor.as_of, cursor.walk.clone()),
                    None => (Some(now().timestamp_micros()), first_walk),
                };
                Some(ThreadCursor { pinned, key, id: last.id, as_of, walk })
            }
            _ => None,
        };
        Ok(ThreadPage { threads, next })
    }
}

/// Implements [`Threads`] for a backend, written once for both, as [`accounts_for`](super::accounts::accounts_for)
/// does, given the row type the backend reads a thread's `THREAD_COLUMNS` into. The module it is used in has the
/// backend's `Shared` statements, `THREAD_COLUMNS` and `write_tags` (replaces a thread's tags); the backend has
/// `read`, `write_together`, `delete` and `thread_page` (a page of a listing).
macro_rules! threads_for {
    ($backend:ty, $row:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::{TagCount, Thread};
            use $crate::{now, Result, ThreadPage, ThreadPatch, ThreadQuery, Threads};

            #[async_trait::async_trait]
            impl Threads for $backend {
                #[instrument(skip(self, title, tags))]
                async fn create_thread(&self, user: Uuid, title: &str, tags: &[String]) -> Result<Thread> {
                    let (id, title, tags) = (Uuid::now_v7(), title.to_owned(), tags.to_vec());
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            Shared::insert_thread(&mut *tx, id, user, title, now()).await?;
                            write_tags(&mut *tx, user, id, &tags).await?;
                            Shared::thread_as::<$row>(tx, THREAD_COLUMNS, user, id).await
                        })
                    })
                    .await
                }

                #[instrument(skip(self, query))]
                async fn list_threads(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage> {
                    self.thread_page(user, query).await
                }

                #[instrument(skip(self))]
                async fn get_thread(&self, user: Uuid, thread: Uuid) -> Result<Thread> {
                    Shared::thread_as::<$row>(&mut *self.read().await?, THREAD_COLUMNS, user, thread).await
                }

                #[instrument(skip(self, patch))]
                async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread> {
                    let patch = patch.clone();
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            // A move alone may be a project owner's, of someone else's conversation.
                            let moved_only = ThreadPatch { project: None, ..patch.clone() } == ThreadPatch::default();
                            if !moved_only || patch.project.is_none() {
                                Shared::patch_thread(&mut *tx, user, thread, &patch, now()).await?;
                            }
                            if let Some(tags) = &patch.tags {
                                write_tags(&mut *tx, user, thread, tags).await?;
                            }
                            let mut reader = user;
                            if let Some(project) = patch.project {
                                // Once out of the project, an owner who did not write it no longer reads it: it
                                // is given as its author sees it.
                                reader = Shared::move_thread(&mut *tx, user, thread, project).await?;
                            }
                            Shared::thread_as::<$row>(tx, THREAD_COLUMNS, reader, thread).await
                        })
                    })
                    .await
                }

                #[instrument(skip(self))]
                async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()> {
                    self.delete("delete from threads where id = $1 and user_id = $2", &[thread, user]).await
                }

                #[instrument(skip(self))]
                async fn list_tags(&self, user: Uuid, scope: $crate::Scope) -> Result<Vec<TagCount>> {
                    Shared::tag_counts(&mut *self.read().await?, user, scope).await
                }
            }
        };
    };
}
pub(crate) use threads_for;
