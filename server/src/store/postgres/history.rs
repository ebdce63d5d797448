//! postgres: see [`crate::store::History`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl History for Postgres {
    #[instrument(skip(self))]
    async fn record_usage(&self, user: Uuid, thread: Uuid, model: &str, usage: Usage) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        add_usage(&mut tx, &crate::store::SpentTokens { user, thread, model: model.to_string(), usage }).await?;
        tx.commit().await?;
        Ok(())
    }

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
        .bind(crate::store::history::TOP_TAGS)
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
        .bind(crate::store::history::stats_window_start(today))
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
        let (from, until) = crate::store::history::stats_window_bounds(today);
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
            tokens_per_day: crate::store::history::fill_days(today, &used, &written),
            artifacts_by_type: artifacts,
            budget: None,
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
        let prepared = crate::store::history::Prepared::all(&threads);
        let mut tx = self.pool.begin().await?;
        for group in crate::store::history::import_groups(&prepared, IMPORT_STATEMENTS) {
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
}
