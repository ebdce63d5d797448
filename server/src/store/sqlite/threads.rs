//! Conversations on SQLite.

use app::api::Thread;
use async_trait::async_trait;
use sqlx::SqliteConnection;
use tracing::instrument;
use uuid::Uuid;

use super::{write_tags, Shared, Sqlite, THREAD_COLUMNS};
use crate::store::threads::{ListedRow, ThreadRow};
use crate::store::{now, CursorKey, Result, StoreError, ThreadPage, ThreadPatch, ThreadQuery, Threads};

/// A thread as it is now.
async fn read_thread(conn: &mut SqliteConnection, thread: Uuid) -> Result<Thread> {
    let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = ?");
    let row: ThreadRow<String, i64, String> = sqlx::query_as(&sql).bind(thread.to_string()).fetch_one(conn).await?;
    row.try_into()
}

#[async_trait]
impl Threads for Sqlite {
    #[instrument(skip(self, title, tags))]
    async fn create_thread(&self, user: Uuid, title: &str, tags: &[String]) -> Result<Thread> {
        let id = Uuid::now_v7();
        let created = now();
        let (title, tags) = (title.to_owned(), tags.to_vec());
        self.write(move |tx| {
            Box::pin(async move {
                Shared::insert_thread(&mut *tx, id, user, title, created).await?;
                write_tags(tx, user, id, &tags).await?;
                read_thread(tx, id).await
            })
        })
        .await
    }

    #[instrument(skip(self, query))]
    async fn list_threads(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage> {
        // Later pages order and filter by each thread's state when the walk began (`s`, see ThreadCursor);
        // the first page by the current one, straight from `threads` and its indexes.
        let walk = match &query.cursor {
            Some(cursor) => Some(cursor.check(query.sort)?.parse::<i64>().map_err(|_| StoreError::InvalidCursor)?),
            None => None,
        };
        let order = query.order("");
        let (state, key_column, cmp, sort_columns) = (order.state, &order.key, order.past, &order.columns);
        let mut sql = if walk.is_some() {
            format!(
                "with changed as (
                    select thread_id, min(id) as first from thread_versions where user_id = ? and id > ? group by thread_id
                ), s as (
                    select t.id, t.pinned, t.archived, t.title, t.updated_at, null as tags, 1 as existed
                        from threads t where t.user_id = ? and t.id not in (select thread_id from changed)
                    union all
                    select v.thread_id, v.pinned, v.archived, v.title, v.updated_at, v.tags, v.existed
                        from changed c join thread_versions v on v.id = c.first
                )
                select {THREAD_COLUMNS}, {sort_columns}, '' as walk
                from s join threads t on t.id = s.id where s.existed = 1 and s.archived = ?"
            )
        } else {
            format!(
                "select {THREAD_COLUMNS}, {sort_columns},
                    (select cast(coalesce(max(id), 0) as text) from thread_versions) as walk
                from threads t where t.user_id = ? and t.archived = ?"
            )
        };
        for _ in &query.tags {
            sql.push_str(if walk.is_some() {
                " and (case when s.tags is null
                    then exists (select 1 from thread_tags g where g.thread_id = t.id and g.tag = ?)
                    else exists (select 1 from json_each(s.tags) where json_each.value = ?) end)"
            } else {
                " and exists (select 1 from thread_tags g where g.thread_id = t.id and g.tag = ?)"
            });
        }
        if query.cursor.is_some() {
            sql.push_str(&format!(
                " and ({state}.pinned < ? or ({state}.pinned = ? and ({key_column} {cmp} ? or ({key_column} = ? and t.id {cmp} ?))))"
            ));
        }
        sql.push_str(&order.order_by);
        sql.push('?');
        let mut q = sqlx::query_as(&sql);
        if let Some(walk) = walk {
            q = q.bind(user.to_string()).bind(walk);
        }
        q = q.bind(user.to_string()).bind(query.archived);
        for tag in &query.tags {
            q = q.bind(tag);
            if walk.is_some() {
                q = q.bind(tag);
            }
        }
        if let Some(cursor) = &query.cursor {
            q = q.bind(cursor.pinned).bind(cursor.pinned);
            q = match &cursor.key {
                CursorKey::Time(t) => q.bind(*t).bind(*t),
                CursorKey::Text(s) => q.bind(s.clone()).bind(s.clone()),
            };
            q = q.bind(cursor.id.to_string());
        }
        let rows: Vec<ListedRow<String, i64, String>> =
            q.bind(query.page_size() as i64 + 1).fetch_all(&self.reader).await?;
        query.page(rows)
    }

    #[instrument(skip(self))]
    async fn get_thread(&self, user: Uuid, thread: Uuid) -> Result<Thread> {
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = ? and t.user_id = ?");
        let row: Option<ThreadRow<String, i64, String>> =
            sqlx::query_as(&sql).bind(thread.to_string()).bind(user.to_string()).fetch_optional(&self.reader).await?;
        row.ok_or(StoreError::NotFound)?.try_into()
    }

    #[instrument(skip(self, patch))]
    async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread> {
        let patch = patch.clone();
        self.write(move |tx| {
            Box::pin(async move {
                Shared::patch_thread(&mut *tx, user, thread, &patch, now()).await?;
                if let Some(tags) = &patch.tags {
                    write_tags(tx, user, thread, tags).await?;
                }
                read_thread(tx, thread).await
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()> {
        self.delete("delete from threads where id = ? and user_id = ?", &[thread, user]).await
    }

    #[instrument(skip(self))]
    async fn list_tags(&self, user: Uuid) -> Result<Vec<app::api::TagCount>> {
        Shared::tag_counts(&mut *self.read().await?, user).await
    }
}
