//! postgres: see [`crate::store::Threads`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl Threads for Postgres {
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
}
