//! Conversations on PostgreSQL.

use chrono::{DateTime, Utc};
use sqlx::{Postgres as Pg, QueryBuilder};
use uuid::Uuid;

use super::{write_tags, Postgres, Shared, THREAD_COLUMNS};
use crate::threads::{ListedRow, ThreadRow};
use crate::{micros_to_time, CursorKey, Result, StoreError, ThreadPage, ThreadQuery};

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

impl Postgres {
    /// A page of the person's threads (see [`Threads::list_threads`](crate::Threads::list_threads)).
    async fn thread_page(&self, user: Uuid, query: &ThreadQuery) -> Result<ThreadPage> {
        // Later pages order and filter by each thread's state when the walk began (`s`, see ThreadCursor):
        // the versions written by transactions the first page's snapshot could not see tell what changed.
        // The first page reads the current state, straight from `threads` and its indexes.
        let walk = match &query.cursor {
            Some(cursor) => Some(valid_snapshot(cursor.check(query.sort)?)?.to_owned()),
            None => None,
        };
        // Titles compare byte-wise ("C" collation), as SQLite's BINARY does, so both backends page alike and
        // the order does not depend on the database's locale.
        let order = query.order(" collate \"C\"");
        let (state, key_column, cmp, sort_columns) = (order.state, &order.key, order.past, &order.columns);
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
                    select {THREAD_COLUMNS}, {sort_columns}, '' as walk
                    from s join threads t on t.id = s.id where s.existed and s.archived = "
                ));
            }
            None => {
                q.push(format!(
                    "select {THREAD_COLUMNS}, {sort_columns}, pg_current_snapshot()::text as walk
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
            let key = |q: &mut QueryBuilder<'_, Pg>| {
                match &cursor.key {
                    CursorKey::Time(t) => q.push_bind(micros_to_time(*t)),
                    CursorKey::Text(s) => q.push_bind(s.clone()),
                };
            };
            q.push(format!(" and ({state}.pinned < "))
                .push_bind(cursor.pinned)
                .push(format!(" or ({state}.pinned = "))
                .push_bind(cursor.pinned)
                .push(format!(" and ({key_column} {cmp} "));
            key(&mut q);
            q.push(format!(" or ({key_column} = "));
            key(&mut q);
            q.push(format!(" and t.id {cmp} ")).push_bind(cursor.id).push("))))");
        }
        q.push(&order.order_by).push_bind(query.page_size() as i64 + 1);
        let rows: Vec<ListedRow<Uuid, DateTime<Utc>, Vec<String>>> = q.build_query_as().fetch_all(&self.pool).await?;
        query.page(rows)
    }
}

crate::threads::threads_for!(Postgres, ThreadRow<Uuid, DateTime<Utc>, Vec<String>>);
crate::projects::projects_for!(Postgres, ThreadRow<Uuid, DateTime<Utc>, Vec<String>>);
