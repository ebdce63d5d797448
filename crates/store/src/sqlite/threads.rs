//! Conversations on SQLite.

use uuid::Uuid;

use super::{write_tags, Shared, Sqlite, THREAD_COLUMNS};
use crate::threads::{ListedRow, ThreadRow};
use crate::{CursorKey, Result, StoreError, ThreadPage, ThreadQuery};

impl Sqlite {
    /// A page of the person's threads (see [`Threads::list_threads`](crate::Threads::list_threads)).
    async fn thread_page(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage> {
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
}

crate::threads::threads_for!(Sqlite, ThreadRow<String, i64, String>);
crate::projects::projects_for!(Sqlite, ThreadRow<String, i64, String>);
