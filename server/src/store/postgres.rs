//! The server backend: PostgreSQL 15 or newer through one connection pool. Every method has the semantics of
//! the SQLite backend (the shared story suite runs against both); concurrency comes from row locks instead of
//! a single writer: appending a message locks its thread row while taking the next sequence number.

use std::{str::FromStr, time::Duration};

use app::api::{
    Artifact, ArtifactType, ArtifactVersion, Attachment, AttachmentMeta, DayTokens, HistoryStats, Message,
    MessageStatus, TagCount, Thread, Trace, TypeCount, Usage,
};
use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use sqlx::{
    postgres::{PgConnectOptions, PgPoolOptions, PgRow},
    PgPool, Postgres as Pg, QueryBuilder, Row,
};
use tracing::instrument;
use uuid::Uuid;

use super::documents::{check_attachment_limits, chunk_query_words, AttachmentLimits};
use super::{
    history::{self, ImportThread},
    micros_to_time, now, parse_role, renumbering_base, search_query, snippet, unnumberable, ArtifactRevision, ChunkHit,
    CursorKey, HitKind, IdempotencyClaim, MessageUpdate, NewArtifact, NewAttachment, NewMessage, NewUser, Result,
    SearchHit, SearchPage, Store, StoreError, StoredEvent, ThreadCursor, ThreadPage, ThreadPatch, ThreadQuery,
    ThreadSort, TurnRecord, TurnTrace, User, MAX_SEQ,
};

mod accounts;
mod summaries;

/// Most connections one server process opens.
const MAX_CONNECTIONS: u32 = 16;

/// How long a request waits for a free connection before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// PostgreSQL storage.
#[derive(Debug, Clone)]
pub struct Postgres {
    pool: PgPool,
}

impl Postgres {
    /// Saves the message that starts a turn the turn's statement could not number: its thread's count reached
    /// [`MAX_SEQ`], and [`insert_message`] numbers the thread again first.
    async fn save_request(
        &self,
        user: Uuid,
        request: Option<&NewMessage>,
        now: DateTime<Utc>,
    ) -> Result<Option<Message>> {
        let Some(request) = request else { return Ok(None) };
        let id = Uuid::now_v7();
        let mut tx = self.pool.begin().await?;
        let seq = insert_message(&mut tx, user, id, request, now, false).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(Some(request.clone().saved(id, seq, now)))
    }

    /// Whether a row with this id and owner exists in `table` (`threads` or `messages`). Used when a listing
    /// comes back empty, to tell an empty thread from one that is missing or another user's.
    async fn owns(&self, table: &str, user: Uuid, id: Uuid) -> Result<bool> {
        let sql = format!("select exists (select 1 from {table} where id = $1 and user_id = $2)");
        Ok(sqlx::query_scalar(&sql).bind(id).bind(user).fetch_one(&self.pool).await?)
    }

    /// Connects to the database named by a `postgres://` or `postgresql://` URL and runs the migrations.
    pub async fn connect(url: &str) -> Result<Self> {
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await?;
        // sqlx takes an advisory lock around migrations, so several instances may start at once.
        sqlx::migrate!("../migrations/postgres").run(&pool).await?;
        Ok(Self { pool })
    }
}

const THREAD_COLUMNS: &str = "t.id, t.title, t.pinned, t.archived, t.message_count, t.created_at, t.updated_at,
    array(select g.tag from thread_tags g where g.thread_id = t.id order by g.position) as tags,
    (select left(m.content, 200) from messages m where m.thread_id = t.id and m.role = 'user' order by m.seq limit 1)
        as first_message";

/// A snapshot mark from a cursor, checked as PostgreSQL checks a `pg_snapshot` before it parses it, so a forged
/// cursor is a bad request rather than a database error: `xmin:xmax:xip,...`, all numbers of 64 bits, `xmin` not
/// 0 nor above `xmax`, and the in-progress ids in order between them.
fn valid_snapshot(text: &str) -> Result<&str> {
    let number = |part: &str| part.bytes().all(|b| b.is_ascii_digit()).then(|| part.parse::<u64>().ok()).flatten();
    let check = || -> Option<()> {
        if text.len() > 4096 {
            return None;
        }
        let mut parts = text.split(':');
        let xmin = number(parts.next()?)?;
        let xmax = number(parts.next()?)?;
        let in_progress = parts.next()?;
        if parts.next().is_some() || xmin == 0 || xmax < xmin {
            return None;
        }
        let mut last = xmin;
        if !in_progress.is_empty() {
            for id in in_progress.split(',') {
                let id = number(id)?;
                if id < last || id >= xmax {
                    return None;
                }
                last = id;
            }
        }
        Some(())
    };
    check().map(|()| text).ok_or(StoreError::InvalidCursor)
}

fn thread_from_row(row: &PgRow) -> Result<Thread> {
    Ok(Thread {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        tags: row.try_get("tags")?,
        pinned: row.try_get("pinned")?,
        archived: row.try_get("archived")?,
        message_count: row.try_get("message_count")?,
        first_message: row.try_get("first_message")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

const MESSAGE_COLUMNS: &str =
    "id, thread_id, seq, role, content, status, input_tokens, output_tokens, model, created_at";

fn message_from_row(row: &PgRow) -> Result<Message> {
    let status: String = row.try_get("status")?;
    Ok(Message {
        id: row.try_get("id")?,
        thread_id: row.try_get("thread_id")?,
        seq: row.try_get("seq")?,
        role: parse_role(row.try_get("role")?)?,
        content: row.try_get("content")?,
        status: MessageStatus::parse(&status).ok_or_else(|| StoreError::Corrupt(format!("status {status}")))?,
        input_tokens: row.try_get::<i64, _>("input_tokens")? as u64,
        output_tokens: row.try_get::<i64, _>("output_tokens")? as u64,
        model: row.try_get("model")?,
        created_at: row.try_get("created_at")?,
    })
}

const ARTIFACT_COLUMNS: &str =
    "id, thread_id, artifact_type, title, content, version, request_message_id, assistant_message_id, created_at";

fn artifact_from_row(row: &PgRow) -> Result<Artifact> {
    let kind: String = row.try_get("artifact_type")?;
    Ok(Artifact {
        id: row.try_get("id")?,
        thread_id: row.try_get("thread_id")?,
        artifact_type: ArtifactType::parse(&kind).ok_or_else(|| StoreError::Corrupt(format!("type {kind}")))?,
        title: row.try_get("title")?,
        content: row.try_get("content")?,
        version: row.try_get("version")?,
        request_message_id: row.try_get("request_message_id")?,
        assistant_message_id: row.try_get("assistant_message_id")?,
        created_at: row.try_get("created_at")?,
    })
}

fn version_from_row(row: &PgRow) -> Result<ArtifactVersion> {
    Ok(ArtifactVersion {
        artifact_id: row.try_get("artifact_id")?,
        version: row.try_get("version")?,
        title: row.try_get("title")?,
        content: row.try_get("content")?,
        request_message_id: row.try_get("request_message_id")?,
        created_at: row.try_get("created_at")?,
    })
}

fn user_from_row(row: &PgRow) -> Result<User> {
    Ok(User {
        id: row.try_get("id")?,
        email: row.try_get("email")?,
        password_hash: row.try_get("password_hash")?,
        display_name: row.try_get("display_name")?,
        created_at: row.try_get("created_at")?,
    })
}

fn is_unique_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// Replaces a thread's tags, keeping their order; a repeated tag keeps its first position.
async fn write_tags(tx: &mut sqlx::PgConnection, user: Uuid, thread: Uuid, tags: &[String]) -> Result<()> {
    sqlx::query("delete from thread_tags where thread_id = $1").bind(thread).execute(&mut *tx).await?;
    if tags.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "insert into thread_tags (thread_id, user_id, tag, position)
         select $1, $2, wanted.tag, wanted.position - 1
         from unnest($3::text[]) with ordinality as wanted (tag, position)
         order by wanted.position
         on conflict (thread_id, tag) do nothing",
    )
    .bind(thread)
    .bind(user)
    .bind(tags)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Whether a row with this id and owner exists in `table` (`threads` or `messages`), inside a transaction.
async fn owned_in(tx: &mut sqlx::PgConnection, table: &str, user: Uuid, id: Uuid) -> Result<bool> {
    let sql = format!("select exists (select 1 from {table} where id = $1 and user_id = $2)");
    Ok(sqlx::query_scalar(&sql).bind(id).bind(user).fetch_one(&mut *tx).await?)
}

/// Records that a document answers these earlier requests too: the person's messages of its own thread among
/// them (others are ignored).
async fn answer_requests(tx: &mut sqlx::PgConnection, artifact: Uuid, requests: &[Uuid]) -> Result<()> {
    if requests.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "insert into artifact_requests (artifact_id, message_id)
         select a.id, m.id from artifacts a join messages m on m.thread_id = a.thread_id and m.user_id = a.user_id
         where a.id = $1 and m.role = 'user' and m.id = any($2)
         on conflict do nothing",
    )
    .bind(artifact)
    .bind(requests)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

#[async_trait]
impl Store for Postgres {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    #[instrument(skip_all)]
    async fn create_user(&self, user: NewUser) -> Result<User> {
        let id = Uuid::now_v7();
        let created = now();
        let result = sqlx::query(
            "insert into users (id, email, password_hash, display_name, created_at) values ($1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(&user.email)
        .bind(&user.password_hash)
        .bind(&user.display_name)
        .bind(created)
        .execute(&self.pool)
        .await;
        match result {
            Ok(_) => Ok(User {
                id,
                email: user.email,
                password_hash: user.password_hash,
                display_name: user.display_name,
                created_at: created,
            }),
            Err(e) if is_unique_violation(&e) => Err(StoreError::Conflict("email already registered".into())),
            Err(e) => Err(e.into()),
        }
    }

    #[instrument(skip_all)]
    async fn user_by_email(&self, email: &str) -> Result<User> {
        let row = sqlx::query("select * from users where lower(email) = lower($1)")
            .bind(email)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        user_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn user_by_id(&self, id: Uuid) -> Result<User> {
        let row = sqlx::query("select * from users where id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        user_from_row(&row)
    }

    #[instrument(skip(self, title, tags))]
    async fn create_thread(&self, user: Uuid, title: &str, tags: &[String]) -> Result<Thread> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        sqlx::query("insert into threads (id, user_id, title, created_at, updated_at) values ($1, $2, $3, $4, $4)")
            .bind(id)
            .bind(user)
            .bind(title)
            .bind(created)
            .execute(&mut *tx)
            .await?;
        write_tags(&mut tx, user, id, tags).await?;
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = $1");
        let row = sqlx::query(&sql).bind(id).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        thread_from_row(&row)
    }

    #[instrument(skip(self, query))]
    async fn list_threads(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage> {
        // Later pages order and filter by each thread's state when the walk began (`s`, see ThreadCursor):
        // the versions written by transactions the first page's snapshot could not see tell what changed.
        // The first page reads the current state, straight from `threads` and its indexes.
        let walk = match &query.cursor {
            Some(cursor) => Some(valid_snapshot(cursor.check(query.sort)?)?.to_owned()),
            None => None,
        };
        let state = if walk.is_some() { "s" } else { "t" };
        // Titles compare byte-wise ("C" collation), as SQLite's BINARY does, so both backends page alike and
        // the order does not depend on the database's locale.
        let (key_column, text_key) = match query.sort {
            ThreadSort::UpdatedAt => (format!("{state}.updated_at"), false),
            ThreadSort::CreatedAt => ("t.created_at".to_owned(), false),
            ThreadSort::Title => (format!("{state}.title collate \"C\""), true),
        };
        let (cmp, dir) = if query.descending { ("<", "desc") } else { (">", "asc") };
        let mut q = QueryBuilder::<Pg>::new("");
        match &walk {
            Some(walk) => {
                q.push("with walk as (select ").push_bind(walk.clone()).push(
                    "::pg_snapshot as snap), changed as (
                        select v.thread_id, min(v.id) as first from thread_versions v, walk
                        where v.user_id = ",
                );
                q.push_bind(user).push(
                    " and v.xid >= pg_snapshot_xmin(walk.snap) and not pg_visible_in_snapshot(v.xid, walk.snap)
                        group by v.thread_id
                    ), s as (
                        select t.id, t.pinned, t.archived, t.title, t.updated_at, null::text[] as tags, true as existed
                            from threads t where t.user_id = ",
                );
                q.push_bind(user).push(format!(
                    " and t.id not in (select thread_id from changed)
                        union all
                        select v.thread_id, v.pinned, v.archived, v.title, v.updated_at, v.tags, v.existed
                            from changed c join thread_versions v on v.id = c.first
                    )
                    select {THREAD_COLUMNS}, {key_column} as sort_key, {state}.pinned as sort_pinned, '' as walk
                    from s join threads t on t.id = s.id where s.existed and s.archived = "
                ));
            }
            None => {
                q.push(format!(
                    "select {THREAD_COLUMNS}, {key_column} as sort_key, {state}.pinned as sort_pinned, pg_current_snapshot()::text as walk
                    from threads t where t.user_id = "
                ));
                q.push_bind(user).push(" and t.archived = ");
            }
        }
        q.push_bind(query.archived);
        if !query.tags.is_empty() {
            // No requested tag may be missing from the thread (as it was when the walk began).
            let tags_then = if walk.is_some() {
                "coalesce(s.tags, array(select g.tag from thread_tags g where g.thread_id = t.id))"
            } else {
                "array(select g.tag from thread_tags g where g.thread_id = t.id)"
            };
            q.push(" and ").push_bind(query.tags.clone()).push(format!("::text[] <@ {tags_then}"));
        }
        if let Some(cursor) = &query.cursor {
            q.push(format!(" and ({state}.pinned < "))
                .push_bind(cursor.pinned)
                .push(format!(" or ({state}.pinned = "))
                .push_bind(cursor.pinned)
                .push(format!(" and ({key_column} {cmp} "));
            match &cursor.key {
                CursorKey::Time(t) => q.push_bind(micros_to_time(*t)),
                CursorKey::Text(s) => q.push_bind(s.clone()),
            };
            q.push(format!(" or ({key_column} = "));
            match &cursor.key {
                CursorKey::Time(t) => q.push_bind(micros_to_time(*t)),
                CursorKey::Text(s) => q.push_bind(s.clone()),
            };
            q.push(format!(" and t.id {cmp} ")).push_bind(cursor.id).push("))))");
        }
        let limit = query.limit.clamp(1, 100);
        q.push(format!(" order by {state}.pinned desc, {key_column} {dir}, t.id {dir} limit "))
            .push_bind(limit as i64 + 1);
        let rows = q.build().fetch_all(&self.pool).await?;
        let mut threads = Vec::with_capacity(rows.len());
        let mut last_key = None;
        for row in rows.iter().take(limit as usize) {
            threads.push(thread_from_row(row)?);
            // The page shows current data, but the walk goes on from the state it was ordered by.
            last_key = Some((
                row.try_get::<bool, _>("sort_pinned")?,
                if text_key {
                    CursorKey::Text(row.try_get("sort_key")?)
                } else {
                    CursorKey::Time(row.try_get::<DateTime<Utc>, _>("sort_key")?.timestamp_micros())
                },
            ));
        }
        let next = match (rows.len() > limit as usize, threads.last(), last_key) {
            (true, Some(last), Some((pinned, key))) => {
                let (as_of, walk) = match &query.cursor {
                    Some(cursor) => (cursor.as_of, cursor.walk.clone()),
                    None => (Some(now().timestamp_micros()), Some(rows[0].try_get::<String, _>("walk")?)),
                };
                Some(ThreadCursor { pinned, key, id: last.id, as_of, walk })
            }
            _ => None,
        };
        Ok(ThreadPage { threads, next })
    }

    #[instrument(skip(self))]
    async fn get_thread(&self, user: Uuid, thread: Uuid) -> Result<Thread> {
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = $1 and t.user_id = $2");
        let row =
            sqlx::query(&sql).bind(thread).bind(user).fetch_optional(&self.pool).await?.ok_or(StoreError::NotFound)?;
        thread_from_row(&row)
    }

    #[instrument(skip(self, patch))]
    async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread> {
        let mut tx = self.pool.begin().await?;
        let updated = sqlx::query(
            "update threads set title = coalesce($1, title), pinned = coalesce($2, pinned),
             archived = coalesce($3, archived), summary = coalesce($4, summary), updated_at = greatest(updated_at, $5)
             where id = $6 and user_id = $7",
        )
        .bind(&patch.title)
        .bind(patch.pinned)
        .bind(patch.archived)
        .bind(&patch.summary)
        .bind(now())
        .bind(thread)
        .bind(user)
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        if let Some(tags) = &patch.tags {
            write_tags(&mut tx, user, thread, tags).await?;
        }
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = $1");
        let row = sqlx::query(&sql).bind(thread).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        thread_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()> {
        let deleted = sqlx::query("delete from threads where id = $1 and user_id = $2")
            .bind(thread)
            .bind(user)
            .execute(&self.pool)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, message), fields(thread = %message.thread_id))]
    async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        let seq = insert_message(&mut tx, user, id, &message, created, false).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(message.saved(id, seq, created))
    }

    #[instrument(skip(self, message), fields(thread = %message.thread_id))]
    async fn append_message_between_turns(
        &self,
        user: Uuid,
        message: NewMessage,
        stale_after_ms: i64,
    ) -> Result<Message> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        // The thread's row is locked first: a turn starting with a message of its own updates that row, so it
        // either committed before (and is seen below) or waits until this message is in.
        let owned: Option<i32> = sqlx::query_scalar("select 1 from threads where id = $1 and user_id = $2 for update")
            .bind(message.thread_id)
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
        owned.ok_or(StoreError::NotFound)?;
        let busy: bool = sqlx::query_scalar(
            "select exists (select 1 from turns
             where thread_id = $1 and user_id = $2 and status = 'running' and heartbeat_at >= $3)",
        )
        .bind(message.thread_id)
        .bind(user)
        .bind(created - chrono::Duration::milliseconds(stale_after_ms))
        .fetch_one(&mut *tx)
        .await?;
        if busy {
            return Err(StoreError::thread_busy());
        }
        let seq = insert_message(&mut tx, user, id, &message, created, false).await?.ok_or(StoreError::NotFound)?;
        tx.commit().await?;
        Ok(message.saved(id, seq, created))
    }

    #[instrument(skip(self, update))]
    async fn update_message(&self, user: Uuid, message: Uuid, update: &MessageUpdate) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        if !rewrite_message(&mut conn, user, message, update, false).await? {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self))]
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>> {
        let messages = self.list_messages_from(user, thread, i64::MIN).await?;
        if messages.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        Ok(messages)
    }

    #[instrument(skip(self))]
    async fn list_message_heads(&self, user: Uuid, thread: Uuid) -> Result<Vec<super::MessageHead>> {
        // Answered from the `messages_heads` index (an index-only scan once the table is vacuumed).
        let rows = sqlx::query("select id, seq, role from messages where thread_id = $1 and user_id = $2 order by seq")
            .bind(thread)
            .bind(user)
            .fetch_all(&self.pool)
            .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter()
            .map(|row| {
                Ok(super::MessageHead {
                    id: row.try_get("id")?,
                    seq: row.try_get("seq")?,
                    role: parse_role(row.try_get::<&str, _>("role")?)?,
                })
            })
            .collect()
    }

    #[instrument(skip(self))]
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>> {
        let sql = format!(
            "select {MESSAGE_COLUMNS} from messages where thread_id = $1 and user_id = $2 and seq >= $3 order by seq"
        );
        let rows = sqlx::query(&sql).bind(thread).bind(user).bind(from_seq).fetch_all(&self.pool).await?;
        rows.iter().map(message_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message> {
        let sql = format!("select {MESSAGE_COLUMNS} from messages where id = $1 and user_id = $2");
        let row =
            sqlx::query(&sql).bind(message).bind(user).fetch_optional(&self.pool).await?.ok_or(StoreError::NotFound)?;
        message_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>> {
        let context: Option<serde_json::Value> =
            sqlx::query_scalar("select context from messages where id = $1 and user_id = $2")
                .bind(message)
                .bind(user)
                .fetch_optional(&self.pool)
                .await?
                .ok_or(StoreError::NotFound)?;
        Ok(context)
    }

    #[instrument(skip(self))]
    async fn delete_message(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let deleted = sqlx::query("delete from messages where id = $1 and thread_id = $2 and user_id = $3")
            .bind(message)
            .bind(thread)
            .bind(user)
            .execute(&mut *tx)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        sqlx::query("update threads set message_count = message_count - 1 where id = $1")
            .bind(thread)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self, artifact), fields(thread = %artifact.thread_id))]
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        if !owned_in(&mut tx, "threads", user, artifact.thread_id).await? {
            return Err(StoreError::NotFound);
        }
        // A document may only point at its owner's messages (the foreign key alone would accept anyone's).
        for message in [artifact.request_message_id, artifact.assistant_message_id].into_iter().flatten() {
            if !owned_in(&mut tx, "messages", user, message).await? {
                return Err(StoreError::NotFound);
            }
        }
        sqlx::query(
            "insert into artifacts (id, thread_id, user_id, artifact_type, title, content, version, request_message_id,
             assistant_message_id, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $9)",
        )
        .bind(id)
        .bind(artifact.thread_id)
        .bind(user)
        .bind(artifact.artifact_type.as_str())
        .bind(&artifact.title)
        .bind(&artifact.content)
        .bind(artifact.request_message_id)
        .bind(artifact.assistant_message_id)
        .bind(created)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "insert into artifact_versions (artifact_id, version, title, content, created_at) values ($1, 1, $2, $3, $4)",
        )
        .bind(id)
        .bind(&artifact.title)
        .bind(&artifact.content)
        .bind(created)
        .execute(&mut *tx)
        .await?;
        answer_requests(&mut tx, id, &artifact.answers).await?;
        tx.commit().await?;
        Ok(Artifact {
            id,
            thread_id: artifact.thread_id,
            artifact_type: artifact.artifact_type,
            title: artifact.title,
            content: artifact.content,
            version: 1,
            request_message_id: artifact.request_message_id,
            assistant_message_id: artifact.assistant_message_id,
            created_at: created,
        })
    }

    #[instrument(skip(self))]
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>> {
        let sql = format!(
            "select {ARTIFACT_COLUMNS} from artifacts where thread_id = $1 and user_id = $2 order by created_at, pk"
        );
        let rows = sqlx::query(&sql).bind(thread).bind(user).fetch_all(&self.pool).await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(artifact_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact> {
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = $1 and user_id = $2");
        let row = sqlx::query(&sql)
            .bind(artifact)
            .bind(user)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        artifact_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()> {
        let deleted = sqlx::query("delete from artifacts where id = $1 and user_id = $2")
            .bind(artifact)
            .bind(user)
            .execute(&self.pool)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, artifacts))]
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        if !owned_in(&mut tx, "messages", user, assistant_message).await? {
            return Err(StoreError::NotFound);
        }
        link_artifacts_to(&mut tx, user, artifacts, assistant_message).await?;
        tx.commit().await?;
        Ok(())
    }

    // Documents: versions and attachments.

    #[instrument(skip(self, revision))]
    async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact> {
        let updated = now();
        let mut tx = self.pool.begin().await?;
        // A version may only point at its owner's messages (the foreign key alone would accept anyone's).
        if let Some(message) = revision.request_message_id {
            if !owned_in(&mut tx, "messages", user, message).await? {
                return Err(StoreError::NotFound);
            }
        }
        let version: Option<i64> = sqlx::query_scalar(
            "update artifacts set title = $1, content = $2, version = version + 1, updated_at = greatest(updated_at, $3)
             where id = $4 and user_id = $5 returning version",
        )
        .bind(&revision.title)
        .bind(&revision.content)
        .bind(updated)
        .bind(artifact)
        .bind(user)
        .fetch_optional(&mut *tx)
        .await?;
        let version = version.ok_or(StoreError::NotFound)?;
        sqlx::query(
            "insert into artifact_versions (artifact_id, version, title, content, created_at, request_message_id)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(artifact)
        .bind(version)
        .bind(&revision.title)
        .bind(&revision.content)
        .bind(updated)
        .bind(revision.request_message_id)
        .execute(&mut *tx)
        .await?;
        answer_requests(&mut tx, artifact, &revision.answers).await?;
        let sql = format!("select {ARTIFACT_COLUMNS} from artifacts where id = $1");
        let row = sqlx::query(&sql).bind(artifact).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        artifact_from_row(&row)
    }

    #[instrument(skip(self))]
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>> {
        let rows = sqlx::query(
            "select v.artifact_id, v.version, v.title, v.content, v.created_at,
                    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
             from artifact_versions v
             join artifacts a on a.id = v.artifact_id where a.id = $1 and a.user_id = $2 order by v.version",
        )
        .bind(artifact)
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(version_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar(
            "select request_message_id from artifacts
             where thread_id = $1 and user_id = $2 and request_message_id is not null
             union
             select v.request_message_id from artifact_versions v join artifacts a on a.id = v.artifact_id
             where a.thread_id = $1 and a.user_id = $2 and v.request_message_id is not null
             union
             select r.message_id from artifact_requests r join artifacts a on a.id = r.artifact_id
             where a.thread_id = $1 and a.user_id = $2",
        )
        .bind(thread)
        .bind(user)
        .fetch_all(&self.pool)
        .await?)
    }

    #[instrument(skip(self))]
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion> {
        let row = sqlx::query(
            "select v.artifact_id, v.version, v.title, v.content, v.created_at,
                    coalesce(v.request_message_id, case when v.version = 1 then a.request_message_id end) as request_message_id
             from artifact_versions v
             join artifacts a on a.id = v.artifact_id where a.id = $1 and a.user_id = $2 and v.version = $3",
        )
        .bind(artifact)
        .bind(user)
        .bind(version)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        version_from_row(&row)
    }

    #[instrument(skip(self, attachment), fields(thread = %attachment.thread_id, chunks = attachment.chunks.len()))]
    async fn create_attachment(
        &self,
        user: Uuid,
        attachment: NewAttachment,
        limits: AttachmentLimits,
    ) -> Result<Attachment> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        // The thread row's lock makes the count and the insert one step for concurrent uploads.
        let owned: Option<Uuid> =
            sqlx::query_scalar("select id from threads where id = $1 and user_id = $2 for update")
                .bind(attachment.thread_id)
                .bind(user)
                .fetch_optional(&mut *tx)
                .await?;
        owned.ok_or(StoreError::NotFound)?;
        // The account's row lock makes the allowance check and the insert one step for uploads to several of
        // its conversations at once.
        sqlx::query("select 1 from users where id = $1 for update").bind(user).execute(&mut *tx).await?;
        let (count, used): (i64, i64) = sqlx::query_as(
            "select (select count(*) from attachments where thread_id = $1),
                    (select coalesce(sum(size), 0)::bigint from attachments where user_id = $2)",
        )
        .bind(attachment.thread_id)
        .bind(user)
        .fetch_one(&mut *tx)
        .await?;
        check_attachment_limits(limits, count, used, attachment.size)?;
        sqlx::query(
            "insert into attachments (id, thread_id, user_id, filename, content_type, size, created_at)
             values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(attachment.thread_id)
        .bind(user)
        .bind(&attachment.filename)
        .bind(&attachment.content_type)
        .bind(attachment.size)
        .bind(created)
        .execute(&mut *tx)
        .await?;
        if !attachment.chunks.is_empty() {
            let seqs: Vec<i64> = (0..attachment.chunks.len() as i64).collect();
            sqlx::query(
                "insert into attachment_chunks (attachment_id, thread_id, seq, content)
                 select $1, $2, s, c from unnest($3::bigint[], $4::text[]) as t (s, c)",
            )
            .bind(id)
            .bind(attachment.thread_id)
            .bind(&seqs)
            .bind(&attachment.chunks)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(Attachment {
            id,
            thread_id: attachment.thread_id,
            filename: attachment.filename,
            content_type: attachment.content_type,
            size: attachment.size,
            chunks: attachment.chunks.len() as i64,
            created_at: created,
        })
    }

    #[instrument(skip(self))]
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>> {
        let rows = sqlx::query(
            "select a.id, a.thread_id, a.filename, a.content_type, a.size, a.created_at,
                    (select count(*) from attachment_chunks c where c.attachment_id = a.id) as chunks
             from attachments a where a.thread_id = $1 and a.user_id = $2 order by a.created_at, a.id",
        )
        .bind(thread)
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter()
            .map(|row| {
                Ok(Attachment {
                    id: row.try_get("id")?,
                    thread_id: row.try_get("thread_id")?,
                    filename: row.try_get("filename")?,
                    content_type: row.try_get("content_type")?,
                    size: row.try_get("size")?,
                    chunks: row.try_get("chunks")?,
                    created_at: row.try_get("created_at")?,
                })
            })
            .collect()
    }

    #[instrument(skip(self))]
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()> {
        let deleted = sqlx::query("delete from attachments where id = $1 and thread_id = $2 and user_id = $3")
            .bind(attachment)
            .bind(thread)
            .bind(user)
            .execute(&self.pool)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    #[instrument(skip(self, query))]
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>> {
        if !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        let words = chunk_query_words(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let any: Vec<String> = words.iter().map(|w| format!("'{}'", w.replace('\'', "''").replace('\\', ""))).collect();
        let rows = sqlx::query(
            "with q as (select to_tsquery('simple', $1) as q)
             select c.attachment_id, a.filename, c.seq, c.content, ts_rank(c.search, q.q)::float8 as score
             from attachment_chunks c join attachments a on a.id = c.attachment_id, q
             where c.thread_id = $2 and a.user_id = $3 and c.search @@ q.q
             order by score desc, c.attachment_id, c.seq limit $4",
        )
        .bind(any.join(" | "))
        .bind(thread)
        .bind(user)
        .bind(limit.clamp(1, 20) as i64)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ChunkHit {
                    attachment_id: row.try_get("attachment_id")?,
                    filename: row.try_get("filename")?,
                    seq: row.try_get("seq")?,
                    content: row.try_get("content")?,
                    score: row.try_get("score")?,
                })
            })
            .collect()
    }

    #[instrument(skip(self, trace), fields(turn = %trace.turn_id))]
    async fn save_trace(&self, user: Uuid, trace: &Trace) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        if let Some(message) = trace.message_id {
            let in_thread: bool = sqlx::query_scalar(
                "select exists (select 1 from messages where id = $1 and thread_id = $2 and user_id = $3)",
            )
            .bind(message)
            .bind(trace.thread_id)
            .bind(user)
            .fetch_one(&mut *tx)
            .await?;
            if !in_thread {
                return Err(StoreError::NotFound);
            }
        }
        let turn = TurnTrace { user, thread: trace.thread_id, steps: trace.steps.clone() };
        if !write_trace(&mut tx, trace.turn_id, &turn, trace.message_id).await? {
            return Err(StoreError::NotFound);
        }
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn trace(&self, user: Uuid, message: Uuid) -> Result<Trace> {
        let row = sqlx::query("select * from turn_traces where message_id = $1 and user_id = $2")
            .bind(message)
            .bind(user)
            .fetch_optional(&self.pool)
            .await?;
        trace_from_row(&row.ok_or(StoreError::NotFound)?)
    }

    #[instrument(skip(self))]
    async fn turn_trace(&self, user: Uuid, turn: Uuid) -> Result<Trace> {
        let row = sqlx::query("select * from turn_traces where turn_id = $1 and user_id = $2")
            .bind(turn)
            .bind(user)
            .fetch_optional(&self.pool)
            .await?;
        trace_from_row(&row.ok_or(StoreError::NotFound)?)
    }

    #[instrument(skip(self))]
    async fn thread_traces(&self, user: Uuid, thread: Uuid) -> Result<Vec<Trace>> {
        let rows =
            sqlx::query("select * from turn_traces where thread_id = $1 and user_id = $2 order by created_at, turn_id")
                .bind(thread)
                .bind(user)
                .fetch_all(&self.pool)
                .await?;
        if rows.is_empty() && !self.owns("threads", user, thread).await? {
            return Err(StoreError::NotFound);
        }
        rows.iter().map(trace_from_row).collect()
    }

    #[instrument(skip(self))]
    async fn record_usage(&self, user: Uuid, thread: Uuid, model: &str, usage: Usage) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        add_usage(&mut tx, &super::SpentTokens { user, thread, model: model.to_string(), usage }).await?;
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self, key, fingerprint))]
    async fn claim_idempotency_key(
        &self,
        user: Uuid,
        key: &str,
        fingerprint: &str,
        ttl_secs: i64,
    ) -> Result<IdempotencyClaim> {
        let now = now();
        let mut tx = self.pool.begin().await?;
        sqlx::query("delete from idempotency_keys where user_id = $1 and key = $2 and expires_at < $3")
            .bind(user)
            .bind(key)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        let inserted = sqlx::query(
            "insert into idempotency_keys (user_id, key, fingerprint, created_at, expires_at)
             values ($1, $2, $3, $4, $5) on conflict (user_id, key) do nothing",
        )
        .bind(user)
        .bind(key)
        .bind(fingerprint)
        .bind(now)
        .bind(now + chrono::Duration::seconds(ttl_secs))
        .execute(&mut *tx)
        .await?;
        let claim = if inserted.rows_affected() == 1 {
            IdempotencyClaim::Fresh
        } else {
            let row = sqlx::query("select fingerprint, response from idempotency_keys where user_id = $1 and key = $2")
                .bind(user)
                .bind(key)
                .fetch_one(&mut *tx)
                .await?;
            IdempotencyClaim::Existing { fingerprint: row.try_get("fingerprint")?, response: row.try_get("response")? }
        };
        tx.commit().await?;
        Ok(claim)
    }

    #[instrument(skip(self, key, response))]
    async fn complete_idempotency_key(&self, user: Uuid, key: &str, response: &str) -> Result<()> {
        sqlx::query("update idempotency_keys set response = $1 where user_id = $2 and key = $3")
            .bind(response)
            .bind(user)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    #[instrument(skip(self, key))]
    async fn release_idempotency_key(&self, user: Uuid, key: &str) -> Result<()> {
        sqlx::query("delete from idempotency_keys where user_id = $1 and key = $2 and response is null")
            .bind(user)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    #[instrument(skip(self, query))]
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage> {
        let terms = search_query::parse(query);
        let Some(tsquery) = search_query::to_tsquery(&terms) else {
            return Ok(SearchPage { hits: Vec::new(), total: 0 });
        };
        // The owner filter and the match are both index conditions (user_id btree, search GIN). Hits are ranked
        // from their ids, times and scores alone, counted in the same pass, and only the page is joined to its
        // conversation and text. Snippets are made from the texts: ts_headline takes time that grows with the
        // square of a phrase's hits in one text.
        const RANKED: &str = "q as (select to_tsquery('simple', $2) as q),
            ranked as (
                select 'message' as kind, m.id as ref_id, m.created_at, ts_rank(m.search, q.q) as score
                from q cross join messages m where m.user_id = $1 and m.search @@ q.q
                union all
                select 'thread', t.id, t.created_at, ts_rank(t.search, q.q)
                from q cross join threads t where t.user_id = $1 and t.search @@ q.q
                union all
                select 'artifact', a.id, a.created_at, ts_rank(a.search, q.q)
                from q cross join artifacts a where a.user_id = $1 and a.search @@ q.q
            )";
        let sql = format!(
            "with {RANKED},
             page as (
                select kind, ref_id, created_at, score, count(*) over () as total from ranked
                order by score desc, created_at desc, ref_id desc limit $3 offset $4
             )
             select page.kind, page.ref_id, page.total, t.id as thread_id, t.title as thread_title, m.role,
                    page.created_at, -page.score::float8 as rank,
                    case page.kind when 'message' then m.content when 'thread' then t.title
                        else a.title || E'\\n' || a.content end as body
             from page
             left join messages m on page.kind = 'message' and m.id = page.ref_id
             left join artifacts a on page.kind = 'artifact' and a.id = page.ref_id
             join threads t on t.id = coalesce(m.thread_id, a.thread_id, page.ref_id)
             order by page.score desc, page.created_at desc, page.ref_id desc"
        );
        // Enough memory that the bitmap of a common word's hits stays exact instead of going lossy (and every
        // heap page of the person's messages being read again to recheck).
        let mut tx = self.pool.begin().await?;
        sqlx::query("set local work_mem = '32MB'").execute(&mut *tx).await?;
        let rows = sqlx::query(&sql)
            .bind(user)
            .bind(&tsquery)
            .bind(limit.clamp(1, 100) as i64)
            .bind(offset as i64)
            .fetch_all(&mut *tx)
            .await?;
        let total: i64 = match rows.first() {
            Some(row) => row.try_get("total")?,
            // A page past the end: the count on its own.
            None => {
                sqlx::query_scalar(&format!("with {RANKED} select count(*) from ranked"))
                    .bind(user)
                    .bind(&tsquery)
                    .fetch_one(&mut *tx)
                    .await?
            }
        };
        tx.commit().await?;
        let texts = rows.iter().map(|row| row.try_get("body")).collect::<Result<Vec<String>, _>>()?;
        let snippets = snippet::snippets(terms, texts).await?;
        let hits = rows
            .iter()
            .zip(snippets)
            .map(|(row, snippet)| {
                let kind: String = row.try_get("kind")?;
                let kind = match kind.as_str() {
                    "message" => HitKind::Message,
                    "thread" => HitKind::Thread,
                    _ => HitKind::Artifact,
                };
                let ref_id: Uuid = row.try_get("ref_id")?;
                let role_text: Option<String> = row.try_get("role")?;
                Ok(SearchHit {
                    kind,
                    thread_id: row.try_get("thread_id")?,
                    thread_title: row.try_get("thread_title")?,
                    message_id: (kind == HitKind::Message).then_some(ref_id),
                    artifact_id: (kind == HitKind::Artifact).then_some(ref_id),
                    role: role_text.as_deref().map(parse_role).transpose()?,
                    snippet,
                    created_at: row.try_get("created_at")?,
                    rank: row.try_get("rank")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SearchPage { hits, total: total as u64 })
    }

    #[instrument(skip(self))]
    async fn begin_turn_with(
        &self,
        user: Uuid,
        thread: Uuid,
        turn: Uuid,
        stale_after_ms: i64,
        request: Option<NewMessage>,
    ) -> Result<Option<Message>> {
        let now = now();
        // The common case, no other turn marked running in the thread, is one statement: one round trip, and a
        // pooled connection held for no longer. Only a conflict looks at the running turn.
        match take_thread(&self.pool, user, thread, turn, now, request.as_ref()).await {
            Err(StoreError::Database(e)) if is_unique_violation(&e) => {}
            Ok(None) if request.is_some() => return self.save_request(user, request.as_ref(), now).await,
            other => return other,
        }
        let mut tx = self.pool.begin().await?;
        // Turns carry their thread's owner: another person's thread matches nothing here, and is refused below.
        let taken_over = sqlx::query(
            "update turns set status = 'done'
             where thread_id = $1 and user_id = $2 and status = 'running' and heartbeat_at < $3",
        )
        .bind(thread)
        .bind(user)
        .bind(now - chrono::Duration::milliseconds(stale_after_ms))
        .execute(&mut *tx)
        .await?
        .rows_affected()
            > 0;
        if !taken_over {
            return Err(StoreError::thread_busy());
        }
        // The dead turn's answer, still marked as being written, was cut off.
        sqlx::query("update messages set writing = false where thread_id = $1 and writing")
            .bind(thread)
            .execute(&mut *tx)
            .await?;
        // A concurrent begin blocks on the partial unique index until the other commits, then fails.
        let saved = match take_thread(&mut *tx, user, thread, turn, now, request.as_ref()).await {
            Err(StoreError::Database(e)) if is_unique_violation(&e) => return Err(StoreError::thread_busy()),
            other => other?,
        };
        tx.commit().await?;
        match saved {
            None if request.is_some() => self.save_request(user, request.as_ref(), now).await,
            saved => Ok(saved),
        }
    }

    #[instrument(skip_all, fields(turns = turns.len()))]
    async fn heartbeat_turns(&self, turns: &[Uuid]) -> Result<Vec<Uuid>> {
        if turns.is_empty() {
            return Ok(Vec::new());
        }
        let beaten: Vec<(Uuid, bool)> =
            sqlx::query_as("update turns set heartbeat_at = $1 where id = any($2) returning id, stop_requested")
                .bind(now())
                .bind(turns)
                .fetch_all(&self.pool)
                .await?;
        Ok(beaten.into_iter().filter_map(|(id, stop)| stop.then_some(id)).collect())
    }

    #[instrument(skip(self))]
    async fn request_stop(&self, user: Uuid, thread: Uuid) -> Result<bool> {
        let updated = sqlx::query(
            "update turns set stop_requested = true where thread_id = $1 and user_id = $2 and status = 'running'",
        )
        .bind(thread)
        .bind(user)
        .execute(&self.pool)
        .await?;
        Ok(updated.rows_affected() > 0)
    }

    #[instrument(skip(self, end))]
    async fn finish_turn(&self, turn: Uuid, end: super::TurnEnd) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let mut answer_saved = false;
        if let Some(answer) = &end.answer {
            answer_saved = save_answer(&mut tx, answer.user, &answer.draft).await?;
            if answer_saved {
                link_artifacts_to(&mut tx, answer.user, &answer.artifacts, answer.draft.id).await?;
            }
        }
        if let Some(trace) = &end.trace {
            let answer = end.answer.as_ref().filter(|_| answer_saved).map(|a| a.draft.id);
            write_trace(&mut tx, turn, trace, answer).await?;
        }
        insert_turn_events(&mut tx, turn, &end.events).await?;
        sqlx::query("update turns set status = 'done' where id = $1").bind(turn).execute(&mut *tx).await?;
        // A turn saves one answer: saved just now, it left nothing else being written in the thread.
        if !answer_saved {
            sqlx::query(
                "update messages set writing = false
                 where writing and thread_id = (select thread_id from turns where id = $1)",
            )
            .bind(turn)
            .execute(&mut *tx)
            .await?;
        }
        // Only the newest turn's events are kept for re-attaching. Written as a list of turns, which the planner
        // looks up in the primary key one by one: as `in (select ...)` it joined the subquery against a scan of
        // every turn's events (a few milliseconds per turn's end with hundreds streaming).
        sqlx::query(
            "delete from turn_events where turn_id = any(array(
             select id from turns where thread_id = (select thread_id from turns where id = $1) and id <> $1))",
        )
        .bind(turn)
        .execute(&mut *tx)
        .await?;
        // Last before the commit: the owner's ledger row for the day is shared by all their turns, and whoever
        // updates it holds it until the commit, so each of their other turns ending meanwhile waits that long.
        if let Some(spent) = &end.usage {
            add_usage(&mut tx, spent).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn latest_turn(&self, user: Uuid, thread: Uuid) -> Result<Option<TurnRecord>> {
        let row = sqlx::query(
            "select id, thread_id, status, stop_requested, heartbeat_at from turns
             where thread_id = $1 and user_id = $2 order by started_at desc, pk desc limit 1",
        )
        .bind(thread)
        .bind(user)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| {
            let status: String = row.try_get("status")?;
            Ok(TurnRecord {
                id: row.try_get("id")?,
                thread_id: row.try_get("thread_id")?,
                running: status == "running",
                stop_requested: row.try_get("stop_requested")?,
                heartbeat_at: row.try_get("heartbeat_at")?,
            })
        })
        .transpose()
    }

    #[instrument(skip(self, events))]
    async fn append_turn_events(&self, turn: Uuid, events: &[StoredEvent]) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        insert_turn_events(&mut conn, turn, events).await
    }

    #[instrument(skip_all, fields(turns = progress.len()))]
    async fn save_progress_in(&self, _turn: super::ProgressTurn<'_>, progress: &[super::TurnProgress]) -> Result<()> {
        if progress.is_empty() {
            return Ok(());
        }
        // Every statement is a round trip, and a batch's transaction holds its answers' rows until it commits
        // (a turn ending meanwhile waits for them): the events of all its turns are one statement, the answers
        // saved before one more, and their first saves a third.
        let mut tx = self.pool.begin().await?;
        let (events, answers) = super::progress_parts(progress);
        insert_events(&mut tx, &events).await?;
        match answers {
            Ok(answers) => {
                let unsaved = rewrite_drafts(&mut tx, &answers).await?;
                insert_first_drafts(&mut tx, &unsaved).await?;
            }
            Err(in_order) => {
                for (user, answer) in in_order {
                    save_answer(&mut tx, user, answer).await?;
                }
            }
        }
        tx.commit().await?;
        Ok(())
    }

    #[instrument(skip(self))]
    async fn release_abandoned_answers(&self, stale_after_ms: i64) -> Result<u64> {
        let released = sqlx::query(
            "update messages m set writing = false where m.writing and not exists (select 1 from turns t
             where t.thread_id = m.thread_id and t.status = 'running' and t.heartbeat_at >= $1)",
        )
        .bind(now() - chrono::Duration::milliseconds(stale_after_ms))
        .execute(&self.pool)
        .await?;
        Ok(released.rows_affected())
    }

    #[instrument(skip(self))]
    async fn turn_events_after(&self, turn: Uuid, after_seq: i64) -> Result<Vec<StoredEvent>> {
        let rows = sqlx::query("select seq, name, data from turn_events where turn_id = $1 and seq > $2 order by seq")
            .bind(turn)
            .bind(after_seq)
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(StoredEvent { seq: row.try_get("seq")?, name: row.try_get("name")?, data: row.try_get("data")? })
            })
            .collect()
    }

    // History: stats, export, import.

    #[instrument(skip(self))]
    async fn history_stats(&self, user: Uuid, today: NaiveDate) -> Result<HistoryStats> {
        let totals = sqlx::query(
            "select count(*) as threads, coalesce(sum(message_count), 0)::bigint as messages, min(created_at) as first,
             max(updated_at) as last from threads where user_id = $1",
        )
        .bind(user)
        .fetch_one(&self.pool)
        .await?;
        let threads: i64 = totals.try_get("threads")?;
        let messages: i64 = totals.try_get("messages")?;
        let first: Option<DateTime<Utc>> = totals.try_get("first")?;
        let last: Option<DateTime<Utc>> = totals.try_get("last")?;
        // Tags compare byte-wise, as SQLite's BINARY does, so ties break alike on both backends.
        let tags = sqlx::query(
            "select tag, count(*) as n from thread_tags where user_id = $1
             group by tag order by n desc, tag collate \"C\" limit $2",
        )
        .bind(user)
        .bind(history::TOP_TAGS)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| Ok(TagCount { tag: row.try_get("tag")?, count: row.try_get::<i64, _>("n")? as u64 }))
        .collect::<Result<Vec<_>>>()?;
        let tokens = sqlx::query(
            "select coalesce(sum(input_tokens), 0)::bigint as input, coalesce(sum(output_tokens), 0)::bigint as output
             from usage_ledger where user_id = $1",
        )
        .bind(user)
        .fetch_one(&self.pool)
        .await?;
        let used = sqlx::query(
            "select day, sum(input_tokens)::bigint as input, sum(output_tokens)::bigint as output from usage_ledger
             where user_id = $1 and day >= $2 and day <= $3 group by day",
        )
        .bind(user)
        .bind(history::stats_window_start(today))
        .bind(today)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| {
            Ok(DayTokens {
                day: row.try_get("day")?,
                input_tokens: row.try_get::<i64, _>("input")? as u64,
                output_tokens: row.try_get::<i64, _>("output")? as u64,
                messages: 0,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        let (from, until) = history::stats_window_bounds(today);
        let written = sqlx::query(
            "select (created_at at time zone 'UTC')::date as day, count(*) as n from messages
             where user_id = $1 and created_at >= $2 and created_at < $3 group by day",
        )
        .bind(user)
        .bind(from)
        .bind(until)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| Ok((row.try_get::<NaiveDate, _>("day")?, row.try_get::<i64, _>("n")? as u64)))
        .collect::<Result<Vec<_>>>()?;
        let artifacts = sqlx::query(
            "select artifact_type, count(*) as n from artifacts where user_id = $1
             group by artifact_type order by n desc, artifact_type collate \"C\"",
        )
        .bind(user)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| {
            let kind: String = row.try_get("artifact_type")?;
            Ok(TypeCount {
                artifact_type: ArtifactType::parse(&kind).ok_or_else(|| StoreError::Corrupt(format!("type {kind}")))?,
                count: row.try_get::<i64, _>("n")? as u64,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        Ok(HistoryStats {
            total_threads: threads as u64,
            total_messages: messages as u64,
            average_messages_per_thread: if threads == 0 { 0.0 } else { messages as f64 / threads as f64 },
            first_conversation_at: first,
            last_conversation_at: last,
            top_tags: tags,
            input_tokens: tokens.try_get::<i64, _>("input")? as u64,
            output_tokens: tokens.try_get::<i64, _>("output")? as u64,
            tokens_per_day: history::fill_days(today, &used, &written),
            artifacts_by_type: artifacts,
        })
    }

    #[instrument(skip(self))]
    async fn all_thread_ids(&self, user: Uuid) -> Result<Vec<Uuid>> {
        Ok(sqlx::query_scalar("select id from threads where user_id = $1 order by created_at, id")
            .bind(user)
            .fetch_all(&self.pool)
            .await?)
    }

    #[instrument(skip(self))]
    async fn list_user_attachments(&self, user: Uuid) -> Result<Vec<AttachmentMeta>> {
        let rows = sqlx::query(
            "select id, thread_id, filename, content_type, size, created_at from attachments where user_id = $1
             order by created_at, id",
        )
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AttachmentMeta {
                    id: row.try_get("id")?,
                    thread_id: row.try_get("thread_id")?,
                    filename: row.try_get("filename")?,
                    content_type: row.try_get("content_type")?,
                    size: row.try_get("size")?,
                    created_at: row.try_get("created_at")?,
                })
            })
            .collect()
    }

    #[instrument(skip_all, fields(count = threads.len()))]
    async fn import_threads(&self, user: Uuid, threads: Vec<ImportThread>) -> Result<Vec<Thread>> {
        // One transaction: other writers are not held up by it (it locks only rows of its own), and a failure
        // leaves nothing. Rows go in many per statement.
        let prepared = history::Prepared::all(&threads);
        let mut tx = self.pool.begin().await?;
        for group in history::import_groups(&prepared, IMPORT_STATEMENTS) {
            for part in &group {
                write_import_part(&mut tx, user, &prepared, part).await?;
            }
        }
        let ids: Vec<Uuid> = prepared.iter().map(|p| p.id).collect();
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = any($1)");
        let rows = sqlx::query(&sql).bind(&ids).fetch_all(&mut *tx).await?;
        tx.commit().await?;
        let mut found = rows
            .iter()
            .map(|row| thread_from_row(row).map(|t| (t.id, t)))
            .collect::<Result<std::collections::HashMap<_, _>>>()?;
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    #[instrument(skip(self))]
    async fn list_tags(&self, user: Uuid) -> Result<Vec<TagCount>> {
        sqlx::query(
            "select tag, count(*) as n from thread_tags where user_id = $1 group by tag order by n desc, tag collate \"C\"",
        )
        .bind(user)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|row| Ok(TagCount { tag: row.try_get("tag")?, count: row.try_get::<i64, _>("n")? as u64 }))
        .collect()
    }
}

/// How an import's rows are cut into statements (in one transaction: the groups do not matter).
const IMPORT_STATEMENTS: history::Budget =
    history::Budget { rows: usize::MAX, bytes: 4 * 1024 * 1024, rows_per_statement: 500 };

async fn write_import_part(
    tx: &mut sqlx::PgConnection,
    user: Uuid,
    prepared: &[history::Prepared<'_>],
    part: &history::Part,
) -> Result<()> {
    match part {
        history::Part::Thread(t) => {
            let p = &prepared[*t];
            sqlx::query(
                "insert into threads (id, user_id, title, pinned, archived, message_count, last_seq, created_at, updated_at)
                 values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(p.id)
            .bind(user)
            .bind(&p.thread.title)
            .bind(p.thread.pinned)
            .bind(p.thread.archived)
            .bind(p.thread.messages.len() as i64)
            .bind(p.last_seq())
            .bind(p.thread.created_at)
            .bind(p.updated_at())
            .execute(&mut *tx)
            .await?;
            write_tags(tx, user, p.id, &p.thread.tags).await?;
        }
        history::Part::Messages(t, range) => {
            let p = &prepared[*t];
            let mut insert = QueryBuilder::<Pg>::new(
                "insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens,
                 output_tokens, model, created_at) ",
            );
            insert.push_values(range.clone(), |mut row, i| {
                let message = &p.thread.messages[i];
                row.push_bind(p.message_ids[i])
                    .push_bind(p.id)
                    .push_bind(user)
                    .push_bind(message.seq)
                    .push_bind(message.role.as_str())
                    .push_bind(message.content.as_str())
                    .push_bind(message.status.as_str())
                    .push_bind(message.usage.input_tokens as i64)
                    .push_bind(message.usage.output_tokens as i64)
                    .push_bind(message.model.as_deref())
                    .push_bind(message.created_at);
            });
            insert.build().persistent(false).execute(&mut *tx).await?;
        }
        history::Part::Artifacts(t, range) => {
            let p = &prepared[*t];
            let mut insert = QueryBuilder::<Pg>::new(
                "insert into artifacts (id, thread_id, user_id, artifact_type, title, content, version,
                 request_message_id, assistant_message_id, created_at, updated_at) ",
            );
            insert.push_values(range.clone(), |mut row, i| {
                let artifact = &p.thread.artifacts[i];
                row.push_bind(p.artifact_ids[i])
                    .push_bind(p.id)
                    .push_bind(user)
                    .push_bind(artifact.artifact_type.as_str())
                    .push_bind(artifact.title.as_str())
                    .push_bind(artifact.content.as_str())
                    .push_bind(artifact.version)
                    .push_bind(p.link(artifact.request_message))
                    .push_bind(p.link(artifact.assistant_message))
                    .push_bind(artifact.created_at)
                    .push_bind(artifact.created_at);
            });
            insert.build().persistent(false).execute(&mut *tx).await?;
            let mut versions = QueryBuilder::<Pg>::new(
                "insert into artifact_versions (artifact_id, version, title, content, created_at) ",
            );
            versions.push_values(range.clone(), |mut row, i| {
                let artifact = &p.thread.artifacts[i];
                row.push_bind(p.artifact_ids[i])
                    .push_bind(artifact.version)
                    .push_bind(artifact.title.as_str())
                    .push_bind(artifact.content.as_str())
                    .push_bind(artifact.created_at);
            });
            versions.build().persistent(false).execute(&mut *tx).await?;
        }
    }
    Ok(())
}

/// Marks the turn running, which also checks the thread's owner, and saves the person's message if there is
/// one, with the thread's next number: one statement, so one round trip. `NotFound` when the thread is missing
/// or another person's; a unique violation when another turn is marked running in it.
async fn take_thread<'c>(
    conn: impl sqlx::PgExecutor<'c>,
    user: Uuid,
    thread: Uuid,
    turn: Uuid,
    now: DateTime<Utc>,
    request: Option<&NewMessage>,
) -> Result<Option<Message>> {
    let id = Uuid::now_v7();
    let (taken, seq): (i64, Option<i64>) = sqlx::query_as(
        "with taken as (
             insert into turns (id, thread_id, user_id, status, started_at, heartbeat_at)
             select $1, $2, $3, 'running', $4, $4 where exists (select 1 from threads where id = $2 and user_id = $3)
             returning thread_id
         ), counted as (
             update threads set message_count = message_count + 1, last_seq = last_seq + 1,
             updated_at = greatest(updated_at, $4)
             where $5::uuid is not null and id = (select thread_id from taken) and user_id = $3 and last_seq < $12
             returning id, user_id, last_seq
         ), saved as (
             insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens, output_tokens,
             model, created_at, writing)
             select $5, id, user_id, last_seq, $6, $7, $8, $9, $10, $11, $4, false from counted
             returning seq
         )
         select (select count(*) from taken), (select seq from saved)",
    )
    .bind(turn)
    .bind(thread)
    .bind(user)
    .bind(now)
    .bind(request.map(|_| id))
    .bind(request.map(|m| m.role.as_str()))
    .bind(request.map(|m| m.content.as_str()))
    .bind(request.map(|m| m.status.as_str()))
    .bind(request.map(|m| m.usage.input_tokens as i64))
    .bind(request.map(|m| m.usage.output_tokens as i64))
    .bind(request.and_then(|m| m.model.as_deref()))
    .bind(MAX_SEQ)
    .fetch_one(conn)
    .await?;
    if taken == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(match (request, seq) {
        (Some(message), Some(seq)) => Some(message.clone().saved(id, seq, now)),
        _ => None,
    })
}

/// Inserts a message under `id` with the thread's next number and bumps the thread's count; `None` when the
/// thread is missing or another user's. The update locks the thread row until commit, so concurrent appends
/// take consecutive numbers. A message inserted as `writing` has no search vector. A thread whose count
/// reached [`MAX_SEQ`] is numbered again first.
async fn insert_message(
    conn: &mut sqlx::PgConnection,
    user: Uuid,
    id: Uuid,
    message: &NewMessage,
    created: DateTime<Utc>,
    writing: bool,
) -> Result<Option<i64>> {
    let thread = message.thread_id;
    let seq = match count_message(&mut *conn, user, thread, created).await? {
        Some(seq) => seq,
        None if renumber_if_full(&mut *conn, user, thread).await? => {
            count_message(&mut *conn, user, thread, created).await?.ok_or(StoreError::NotFound)?
        }
        None => return Ok(None),
    };
    sqlx::query(
        "insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens, output_tokens,
         model, created_at, writing) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(id)
    .bind(message.thread_id)
    .bind(user)
    .bind(seq)
    .bind(message.role.as_str())
    .bind(&message.content)
    .bind(message.status.as_str())
    .bind(message.usage.input_tokens as i64)
    .bind(message.usage.output_tokens as i64)
    .bind(&message.model)
    .bind(created)
    .bind(writing)
    .execute(&mut *conn)
    .await?;
    Ok(Some(seq))
}

/// Counts one more message in `user`'s `thread`; its number, or `None` when the thread is missing or its count
/// reached [`MAX_SEQ`].
async fn count_message(
    conn: &mut sqlx::PgConnection,
    user: Uuid,
    thread: Uuid,
    at: DateTime<Utc>,
) -> Result<Option<i64>> {
    Ok(sqlx::query_scalar(
        "update threads set message_count = message_count + 1, last_seq = last_seq + 1,
         updated_at = greatest(updated_at, $1) where id = $2 and user_id = $3 and last_seq < $4 returning last_seq",
    )
    .bind(at)
    .bind(thread)
    .bind(user)
    .bind(MAX_SEQ)
    .fetch_optional(conn)
    .await?)
}

/// Numbers the messages of `user`'s `thread` again from 1, in their order, when its count has reached
/// [`MAX_SEQ`]; whether it did.
async fn renumber_if_full(conn: &mut sqlx::PgConnection, user: Uuid, thread: Uuid) -> Result<bool> {
    let full: Option<bool> =
        sqlx::query_scalar("select last_seq >= $1 from threads where id = $2 and user_id = $3 for update")
            .bind(MAX_SEQ)
            .bind(thread)
            .bind(user)
            .fetch_optional(&mut *conn)
            .await?;
    if full != Some(true) {
        return Ok(false);
    }
    let (lowest, count): (Option<i64>, i64) =
        sqlx::query_as("select min(seq), count(*) from messages where thread_id = $1")
            .bind(thread)
            .fetch_one(&mut *conn)
            .await?;
    let base = renumbering_base(lowest.unwrap_or(1), count).ok_or_else(unnumberable)?;
    sqlx::query(
        "update messages set seq = moved.seq
         from (select id, $1 - row_number() over (order by seq) as seq from messages where thread_id = $2) as moved
         where messages.id = moved.id",
    )
    .bind(base)
    .bind(thread)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "update messages set seq = numbered.seq
         from (select id, row_number() over (order by seq desc) as seq from messages where thread_id = $1)
         as numbered where messages.id = numbered.id",
    )
    .bind(thread)
    .execute(&mut *conn)
    .await?;
    sqlx::query("update threads set last_seq = $1 where id = $2").bind(count).bind(thread).execute(&mut *conn).await?;
    Ok(true)
}

/// Rewrites an answer's text, status, usage, whether it is still being written, and model and context when
/// given; whether it exists.
async fn rewrite_message(
    conn: &mut sqlx::PgConnection,
    user: Uuid,
    message: Uuid,
    update: &MessageUpdate,
    writing: bool,
) -> Result<bool> {
    let updated = sqlx::query(
        "update messages set content = $1, status = $2, input_tokens = $3, output_tokens = $4,
         model = coalesce($5, model), context = coalesce($6, context), writing = $9 where id = $7 and user_id = $8",
    )
    .bind(&update.content)
    .bind(update.status.as_str())
    .bind(update.usage.input_tokens as i64)
    .bind(update.usage.output_tokens as i64)
    .bind(&update.model)
    .bind(&update.context)
    .bind(message)
    .bind(user)
    .bind(writing)
    .execute(&mut *conn)
    .await?;
    Ok(updated.rows_affected() > 0)
}

/// Saves an answer's state: rewrites it, or creates it at its first save. `false` when its thread is gone
/// (deleted meanwhile): there is nothing to keep it in.
async fn save_answer(conn: &mut sqlx::PgConnection, user: Uuid, answer: &super::AnswerDraft) -> Result<bool> {
    if rewrite_message(conn, user, answer.id, &answer.update, answer.writing).await? {
        return Ok(true);
    }
    // Inserted as being written, so a finished answer's search vector is computed once, with the rewrite.
    if insert_message(conn, user, answer.id, &answer.first_save(), now(), true).await?.is_none() {
        return Ok(false);
    }
    rewrite_message(conn, user, answer.id, &answer.update, answer.writing).await
}

/// Links the user's documents to the answer that wrote them, in one statement.
async fn link_artifacts_to(conn: &mut sqlx::PgConnection, user: Uuid, artifacts: &[Uuid], message: Uuid) -> Result<()> {
    if artifacts.is_empty() {
        return Ok(());
    }
    sqlx::query("update artifacts set assistant_message_id = $1 where id = any($2) and user_id = $3")
        .bind(message)
        .bind(artifacts)
        .bind(user)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Stores a turn's trace (replacing one of the same turn and owner), with the answer it kept if that is a
/// message of its thread; nothing when the thread is missing or another user's. Whether it was stored.
async fn write_trace(
    conn: &mut sqlx::PgConnection,
    turn: Uuid,
    trace: &TurnTrace,
    message: Option<Uuid>,
) -> Result<bool> {
    let written = sqlx::query(
        "insert into turn_traces (turn_id, thread_id, user_id, message_id, steps, created_at)
         select $1, t.id, t.user_id, (select m.id from messages m where m.id = $2 and m.thread_id = t.id), $3, $4
         from threads t where t.id = $5 and t.user_id = $6
         on conflict (turn_id) do update set message_id = excluded.message_id, steps = excluded.steps
         where turn_traces.user_id = excluded.user_id",
    )
    .bind(turn)
    .bind(message)
    .bind(sqlx::types::Json(&trace.steps))
    .bind(now())
    .bind(trace.thread)
    .bind(trace.user)
    .execute(&mut *conn)
    .await?;
    Ok(written.rows_affected() > 0)
}

fn trace_from_row(row: &PgRow) -> Result<Trace> {
    let sqlx::types::Json(steps) = row.try_get("steps")?;
    Ok(Trace {
        turn_id: row.try_get("turn_id")?,
        thread_id: row.try_get("thread_id")?,
        message_id: row.try_get("message_id")?,
        steps,
    })
}

/// Adds spent tokens to the thread's totals and to its owner's ledger for today and the model.
async fn add_usage(conn: &mut sqlx::PgConnection, spent: &super::SpentTokens) -> Result<()> {
    let super::SpentTokens { user, thread, ref model, usage } = *spent;
    sqlx::query(
        "update threads set input_tokens = input_tokens + $1, output_tokens = output_tokens + $2
         where id = $3 and user_id = $4",
    )
    .bind(usage.input_tokens as i64)
    .bind(usage.output_tokens as i64)
    .bind(thread)
    .bind(user)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "insert into usage_ledger (user_id, day, model, input_tokens, output_tokens) values ($1, $2, $3, $4, $5)
         on conflict (user_id, day, model) do update
         set input_tokens = usage_ledger.input_tokens + excluded.input_tokens,
             output_tokens = usage_ledger.output_tokens + excluded.output_tokens",
    )
    .bind(user)
    // The UTC day, as SQLite stores it; `current_date` would follow the session's time zone.
    .bind(Utc::now().date_naive())
    .bind(model)
    .bind(usage.input_tokens as i64)
    .bind(usage.output_tokens as i64)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Stores a turn's events in one statement. Skipped when the turn is gone (its thread was deleted meanwhile); a
/// number already stored keeps its first event.
async fn insert_turn_events(conn: &mut sqlx::PgConnection, turn: Uuid, events: &[StoredEvent]) -> Result<()> {
    insert_events(conn, &events.iter().map(|e| (turn, e)).collect::<Vec<_>>()).await
}

/// Stores events of turns in one statement. Events of a turn that no longer exists (its thread was deleted
/// meanwhile) are skipped; a number already stored keeps its first event.
async fn insert_events(conn: &mut sqlx::PgConnection, events: &[(Uuid, &StoredEvent)]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let turns: Vec<Uuid> = events.iter().map(|(turn, _)| *turn).collect();
    let seqs: Vec<i64> = events.iter().map(|(_, e)| e.seq).collect();
    let names: Vec<&str> = events.iter().map(|(_, e)| e.name.as_str()).collect();
    let data: Vec<&str> = events.iter().map(|(_, e)| e.data.as_str()).collect();
    sqlx::query(
        "insert into turn_events (turn_id, seq, name, data)
         select e.turn_id, e.seq, e.name, e.data
         from unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[]) as e (turn_id, seq, name, data)
         where exists (select 1 from turns where id = e.turn_id)
         on conflict (turn_id, seq) do nothing",
    )
    .bind(&turns)
    .bind(&seqs)
    .bind(&names)
    .bind(&data)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Answer drafts as columns, one array each, for statements that `unnest` them.
struct DraftColumns<'a> {
    ids: Vec<Uuid>,
    users: Vec<Uuid>,
    threads: Vec<Uuid>,
    contents: Vec<&'a str>,
    statuses: Vec<&'a str>,
    inputs: Vec<i64>,
    outputs: Vec<i64>,
    models: Vec<Option<&'a str>>,
    contexts: Vec<Option<&'a serde_json::Value>>,
    writing: Vec<bool>,
}

impl<'a> DraftColumns<'a> {
    /// Binds `$1` to `$10`: ids, owners, threads, contents, statuses, input and output tokens, models, context
    /// records, whether still being written.
    fn bind<'q>(
        &'q self,
        query: sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        query
            .bind(&self.ids)
            .bind(&self.users)
            .bind(&self.threads)
            .bind(&self.contents)
            .bind(&self.statuses)
            .bind(&self.inputs)
            .bind(&self.outputs)
            .bind(&self.models)
            .bind(&self.contexts)
            .bind(&self.writing)
    }

    fn of(drafts: &[(Uuid, &'a super::AnswerDraft)]) -> Self {
        Self {
            ids: drafts.iter().map(|(_, d)| d.id).collect(),
            users: drafts.iter().map(|(user, _)| *user).collect(),
            threads: drafts.iter().map(|(_, d)| d.thread_id).collect(),
            contents: drafts.iter().map(|(_, d)| d.update.content.as_str()).collect(),
            statuses: drafts.iter().map(|(_, d)| d.update.status.as_str()).collect(),
            inputs: drafts.iter().map(|(_, d)| d.update.usage.input_tokens as i64).collect(),
            outputs: drafts.iter().map(|(_, d)| d.update.usage.output_tokens as i64).collect(),
            models: drafts.iter().map(|(_, d)| d.update.model.as_deref()).collect(),
            contexts: drafts.iter().map(|(_, d)| d.update.context.as_ref()).collect(),
            writing: drafts.iter().map(|(_, d)| d.writing).collect(),
        }
    }
}

/// Inserts answers at their first save, all in one statement, each with its thread's next number (their
/// threads distinct, as a batch of running turns' progress has them: one running turn per thread); an answer
/// whose thread is gone is left out. Drafts of one thread twice go one by one instead.
async fn insert_first_drafts(conn: &mut sqlx::PgConnection, drafts: &[(Uuid, &super::AnswerDraft)]) -> Result<()> {
    if drafts.is_empty() {
        return Ok(());
    }
    let threads: std::collections::HashSet<Uuid> = drafts.iter().map(|(_, d)| d.thread_id).collect();
    if threads.len() != drafts.len() {
        for (user, draft) in drafts {
            save_answer(conn, *user, draft).await?;
        }
        return Ok(());
    }
    let c = DraftColumns::of(drafts);
    // The search vector is computed from the values inserted, so a finished one enters the index once here.
    c.bind(sqlx::query(
        "with v as (
             select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bigint[],
                                  $7::bigint[], $8::text[], $9::jsonb[], $10::bool[])
             as v (id, user_id, thread_id, content, status, input_tokens, output_tokens, model, context, writing)
         ), counted as (
             update threads t set message_count = t.message_count + 1, last_seq = t.last_seq + 1,
             updated_at = greatest(t.updated_at, $11)
             from v where t.id = v.thread_id and t.user_id = v.user_id
             and not exists (select 1 from messages m where m.id = v.id)
             returning t.id, t.last_seq
         )
         insert into messages (id, thread_id, user_id, seq, role, content, status, input_tokens, output_tokens, model,
         context, created_at, writing)
         select v.id, v.thread_id, v.user_id, c.last_seq, $12, v.content, v.status, v.input_tokens, v.output_tokens,
         v.model, v.context, $11, v.writing
         from v join counted c on c.id = v.thread_id",
    ))
    .bind(now())
    .bind(app::api::Role::Assistant.as_str())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Rewrites answer drafts saved before, all in one statement, as [`rewrite_message`] does one by one (their ids
/// distinct); gives back the drafts that matched no message of their user (first saves, and answers whose
/// thread is gone).
async fn rewrite_drafts<'a>(
    conn: &mut sqlx::PgConnection,
    drafts: &[(Uuid, &'a super::AnswerDraft)],
) -> Result<Vec<(Uuid, &'a super::AnswerDraft)>> {
    if drafts.is_empty() {
        return Ok(Vec::new());
    }
    let c = DraftColumns::of(drafts);
    let rewritten = c
        .bind(sqlx::query(
            "update messages m set content = v.content, status = v.status, input_tokens = v.input_tokens,
             output_tokens = v.output_tokens, model = coalesce(v.model, m.model),
             context = coalesce(v.context, m.context), writing = v.writing
             from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
                         $8::text[], $9::jsonb[], $10::bool[])
                  as v (id, user_id, thread_id, content, status, input_tokens, output_tokens, model, context, writing)
             where m.id = v.id and m.user_id = v.user_id
             returning m.id",
        ))
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|row| row.try_get("id"))
        .collect::<std::result::Result<std::collections::HashSet<Uuid>, _>>()?;
    Ok(drafts.iter().filter(|(_, d)| !rewritten.contains(&d.id)).copied().collect())
}
