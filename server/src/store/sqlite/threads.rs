//! sqlite: see [`crate::store::Threads`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl Threads for Sqlite {
    #[instrument(skip(self, title, tags))]
    async fn create_thread(&self, user: Uuid, title: &str, tags: &[String]) -> Result<Thread> {
        let id = Uuid::now_v7();
        let created = now().timestamp_micros();
        let (title, tags) = (title.to_owned(), tags.to_vec());
        self.write(move |tx| {
            Box::pin(async move {
                sqlx::query("insert into threads (id, user_id, title, created_at, updated_at) values (?, ?, ?, ?, ?)")
                    .bind(id.to_string())
                    .bind(user.to_string())
                    .bind(title)
                    .bind(created)
                    .bind(created)
                    .execute(&mut *tx)
                    .await?;
                write_tags(tx, user, id, &tags).await?;
                let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = ?");
                thread_from_row(&sqlx::query(&sql).bind(id.to_string()).fetch_one(&mut *tx).await?)
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
        let state = if walk.is_some() { "s" } else { "t" };
        let (key_column, text_key) = match query.sort {
            ThreadSort::UpdatedAt => (format!("{state}.updated_at"), false),
            ThreadSort::CreatedAt => ("t.created_at".to_owned(), false),
            ThreadSort::Title => (format!("{state}.title"), true),
        };
        let (cmp, dir) = if query.descending { ("<", "desc") } else { (">", "asc") };
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
                select {THREAD_COLUMNS}, {key_column} as sort_key, {state}.pinned as sort_pinned, 0 as walk
                from s join threads t on t.id = s.id where s.existed = 1 and s.archived = ?"
            )
        } else {
            format!(
                "select {THREAD_COLUMNS}, {key_column} as sort_key, {state}.pinned as sort_pinned,
                    (select coalesce(max(id), 0) from thread_versions) as walk
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
        sql.push_str(&format!(" order by {state}.pinned desc, {key_column} {dir}, t.id {dir} limit ?"));
        let mut q = sqlx::query(&sql);
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
        let limit = query.limit.clamp(1, 100);
        let rows = q.bind(limit as i64 + 1).fetch_all(&self.reader).await?;
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
                    CursorKey::Time(row.try_get("sort_key")?)
                },
            ));
        }
        let next = match (rows.len() > limit as usize, threads.last(), last_key) {
            (true, Some(last), Some((pinned, key))) => {
                let (as_of, walk) = match &query.cursor {
                    Some(cursor) => (cursor.as_of, cursor.walk.clone()),
                    None => (Some(now().timestamp_micros()), Some(rows[0].try_get::<i64, _>("walk")?.to_string())),
                };
                Some(ThreadCursor { pinned, key, id: last.id, as_of, walk })
            }
            _ => None,
        };
        Ok(ThreadPage { threads, next })
    }

    #[instrument(skip(self))]
    async fn get_thread(&self, user: Uuid, thread: Uuid) -> Result<Thread> {
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = ? and t.user_id = ?");
        let row = sqlx::query(&sql)
            .bind(thread.to_string())
            .bind(user.to_string())
            .fetch_optional(&self.reader)
            .await?
            .ok_or(StoreError::NotFound)?;
        thread_from_row(&row)
    }

    #[instrument(skip(self, patch))]
    async fn update_thread(&self, user: Uuid, thread: Uuid, patch: &ThreadPatch) -> Result<Thread> {
        let patch = patch.clone();
        self.write(move |tx| Box::pin(async move {
        let updated = sqlx::query(
            "update threads set title = coalesce(?, title), pinned = coalesce(?, pinned), archived = coalesce(?, archived),
             summary = coalesce(?, summary), updated_at = max(updated_at, ?) where id = ? and user_id = ?",
        )
        .bind(&patch.title)
        .bind(patch.pinned)
        .bind(patch.archived)
        .bind(&patch.summary)
        .bind(now().timestamp_micros())
        .bind(thread.to_string())
        .bind(user.to_string())
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        if let Some(tags) = &patch.tags {
            write_tags(tx, user, thread, tags).await?;
        }
        let sql = format!("select {THREAD_COLUMNS} from threads t where t.id = ?");
        thread_from_row(&sqlx::query(&sql).bind(thread.to_string()).fetch_one(&mut *tx).await?)
        })).await
    }

    #[instrument(skip(self))]
    async fn delete_thread(&self, user: Uuid, thread: Uuid) -> Result<()> {
        let deleted = self
            .write(move |conn| {
                Box::pin(async move {
                    Ok(sqlx::query("delete from threads where id = ? and user_id = ?")
                        .bind(thread.to_string())
                        .bind(user.to_string())
                        .execute(conn)
                        .await?)
                })
            })
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }
}
