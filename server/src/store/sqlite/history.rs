//! sqlite: see [`crate::store::History`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl History for Sqlite {
    #[instrument(skip(self))]
    async fn record_usage(&self, user: Uuid, thread: Uuid, model: &str, usage: Usage) -> Result<()> {
        let model = model.to_owned();
        self.write(move |tx| {
            Box::pin(async move {
                turn_writes::add_usage(
                    tx,
                    &crate::store::SpentTokens { user, thread, model: model.to_string(), usage },
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn history_stats(&self, user: Uuid, today: NaiveDate) -> Result<HistoryStats> {
        let user_id = user.to_string();
        let totals = sqlx::query(
            "select count(*) as threads, coalesce(sum(message_count), 0) as messages, min(created_at) as first,
             max(updated_at) as last from threads where user_id = ?",
        )
        .bind(&user_id)
        .fetch_one(&self.reader)
        .await?;
        let threads: i64 = totals.try_get("threads")?;
        let messages: i64 = totals.try_get("messages")?;
        let first: Option<i64> = totals.try_get("first")?;
        let last: Option<i64> = totals.try_get("last")?;
        let tags = sqlx::query(
            "select tag, count(*) as n from thread_tags where user_id = ? group by tag order by n desc, tag limit ?",
        )
        .bind(&user_id)
        .bind(crate::store::history::TOP_TAGS)
        .fetch_all(&self.reader)
        .await?
        .iter()
        .map(|row| Ok(TagCount { tag: row.try_get("tag")?, count: row.try_get::<i64, _>("n")? as u64 }))
        .collect::<Result<Vec<_>>>()?;
        let tokens = sqlx::query(
            "select coalesce(sum(input_tokens), 0) as input, coalesce(sum(output_tokens), 0) as output
             from usage_ledger where user_id = ?",
        )
        .bind(&user_id)
        .fetch_one(&self.reader)
        .await?;
        let start = crate::store::history::stats_window_start(today);
        let used = sqlx::query(
            "select day, sum(input_tokens) as input, sum(output_tokens) as output from usage_ledger
             where user_id = ? and day >= ? and day <= ? group by day",
        )
        .bind(&user_id)
        .bind(start.format("%Y-%m-%d").to_string())
        .bind(today.format("%Y-%m-%d").to_string())
        .fetch_all(&self.reader)
        .await?
        .iter()
        .map(|row| {
            let day: String = row.try_get("day")?;
            Ok(DayTokens {
                day: NaiveDate::parse_from_str(&day, "%Y-%m-%d")
                    .map_err(|e| StoreError::Corrupt(format!("day: {e}")))?,
                input_tokens: row.try_get::<i64, _>("input")? as u64,
                output_tokens: row.try_get::<i64, _>("output")? as u64,
                messages: 0,
            })
        })
        .collect::<Result<Vec<_>>>()?;
        let (from, until) = crate::store::history::stats_window_bounds(today);
        let written = sqlx::query(
            "select date(created_at / 1000000, 'unixepoch') as day, count(*) as n from messages
             where user_id = ? and created_at >= ? and created_at < ? group by day",
        )
        .bind(&user_id)
        .bind(from.timestamp_micros())
        .bind(until.timestamp_micros())
        .fetch_all(&self.reader)
        .await?
        .iter()
        .map(|row| {
            let day: String = row.try_get("day")?;
            let day =
                NaiveDate::parse_from_str(&day, "%Y-%m-%d").map_err(|e| StoreError::Corrupt(format!("day: {e}")))?;
            Ok((day, row.try_get::<i64, _>("n")? as u64))
        })
        .collect::<Result<Vec<_>>>()?;
        let artifacts = sqlx::query(
            "select artifact_type, count(*) as n from artifacts where user_id = ?
             group by artifact_type order by n desc, artifact_type",
        )
        .bind(&user_id)
        .fetch_all(&self.reader)
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
            first_conversation_at: first.map(micros_to_time),
            last_conversation_at: last.map(micros_to_time),
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
        let rows = sqlx::query("select id from threads where user_id = ? order by created_at, pk")
            .bind(user.to_string())
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(|row| uuid(row, "id")).collect()
    }

    #[instrument(skip(self))]
    async fn list_user_attachments(&self, user: Uuid) -> Result<Vec<AttachmentMeta>> {
        let rows = sqlx::query(
            "select id, thread_id, filename, content_type, size, created_at from attachments where user_id = ?
             order by created_at, id",
        )
        .bind(user.to_string())
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AttachmentMeta {
                    id: uuid(row, "id")?,
                    thread_id: uuid(row, "thread_id")?,
                    filename: row.try_get("filename")?,
                    content_type: row.try_get("content_type")?,
                    size: row.try_get("size")?,
                    created_at: time(row, "created_at")?,
                })
            })
            .collect()
    }

    #[instrument(skip_all, fields(count = threads.len()))]
    async fn import_threads(&self, user: Uuid, threads: Vec<ImportThread>) -> Result<Vec<Thread>> {
        import::import_threads(self, user, threads).await
    }
}
