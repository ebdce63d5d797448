//! sqlite: see [`crate::store::Search`].

#[allow(unused_imports)]
use super::*;

#[async_trait]
impl Search for Sqlite {
    #[instrument(skip(self, query))]
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage> {
        let terms = search_query::parse(query);
        let Some(body) = search_query::to_fts5(&terms) else {
            return Ok(SearchPage { hits: Vec::new(), total: 0 });
        };
        // The owner token is part of the MATCH, so FTS5 intersects posting lists instead of filtering rows.
        let expression = format!("owner : \"{}\" AND {body}", owner_token(user));
        // 1. Rank by the index rows alone (no joins, no snippets) and keep the page. bm25 costs a few
        //    microseconds a row, so ranking a word found in thousands of a person's messages would take tens of
        //    milliseconds: only the newest RANKED_CANDIDATES hits of each kind (or as many as the page reaches)
        //    are ranked; FTS5 walks its rowids newest first without sorting. Among equal ranks the newer row
        //    comes first.
        let candidates = RANKED_CANDIDATES.max(offset.saturating_add(limit.clamp(1, 100)));
        let candidates_sql = |table: &str, kind: &str| {
            format!(
                "select * from (select '{kind}' as kind, rowid as pk, bm25({table}, 0.0, 1.0) as rank from {table}
                 where {table} match ?1 order by rowid desc limit {candidates})"
            )
        };
        let sql = format!(
            "select kind, pk, rank, count(*) over () as ranked from ({} union all {} union all {})
             order by rank, pk desc, kind limit ?2 offset ?3",
            candidates_sql("messages_fts", "message"),
            candidates_sql("threads_fts", "thread"),
            candidates_sql("artifacts_fts", "artifact"),
        );
        let page: Vec<(String, i64, f64, i64)> = sqlx::query_as(&sql)
            .bind(&expression)
            .bind(limit.clamp(1, 100) as i64)
            .bind(offset as i64)
            .fetch_all(&self.reader)
            .await?;
        // Fewer hits than one kind's candidates: none was cut, so they were all counted already.
        let total: i64 = match page.first() {
            Some(first) if first.3 < i64::from(candidates) => first.3,
            _ => {
                sqlx::query_scalar(
                    "select (select count(*) from messages_fts where messages_fts match ?1)
                          + (select count(*) from threads_fts where threads_fts match ?1)
                          + (select count(*) from artifacts_fts where artifacts_fts match ?1)",
                )
                .bind(&expression)
                .fetch_one(&self.reader)
                .await?
            }
        };
        // 2. Details and texts for the page only (the pks are integers read from the database). Every part
        //    names its columns: any of them may come first in the union. Snippets are made from the texts:
        //    FTS5's snippet() and highlight() take time that grows with the square of the hits in one text.
        let pks =
            |kind: &str| page.iter().filter(|p| p.0 == kind).map(|p| p.1.to_string()).collect::<Vec<_>>().join(", ");
        let mut parts = Vec::new();
        let (messages, threads, artifacts) = (pks("message"), pks("thread"), pks("artifact"));
        if !messages.is_empty() {
            parts.push(format!(
                "select 'message' as kind, m.pk, m.id as ref_id, m.thread_id, t.title as thread_title, m.role,
                        m.content as body, m.created_at
                 from messages m join threads t on t.id = m.thread_id
                 where m.pk in ({messages})"
            ));
        }
        if !threads.is_empty() {
            parts.push(format!(
                "select 'thread' as kind, t.pk, t.id as ref_id, t.id as thread_id, t.title as thread_title,
                        null as role, t.title as body, t.created_at
                 from threads t
                 where t.pk in ({threads})"
            ));
        }
        if !artifacts.is_empty() {
            parts.push(format!(
                "select 'artifact' as kind, a.pk, a.id as ref_id, a.thread_id, t.title as thread_title,
                        null as role, a.title || char(10) || a.content as body, a.created_at
                 from artifacts a join threads t on t.id = a.thread_id
                 where a.pk in ({artifacts})"
            ));
        }
        let details = if parts.is_empty() {
            Vec::new()
        } else {
            sqlx::query(&parts.join(" union all ")).fetch_all(&self.reader).await?
        };
        let mut rows = Vec::with_capacity(page.len());
        for (kind, pk, rank, _) in &page {
            let found = details.iter().find(|row| {
                row.try_get::<String, _>("kind").is_ok_and(|k| k == *kind)
                    && row.try_get::<i64, _>("pk").is_ok_and(|p| p == *pk)
            });
            // A row deleted between the two reads is left out.
            if let Some(row) = found {
                rows.push((row, *rank));
            }
        }
        let texts = rows.iter().map(|(row, _)| row.try_get("body")).collect::<Result<Vec<String>, _>>()?;
        let snippets = snippet::snippets(terms, texts).await?;
        let hits = rows
            .iter()
            .zip(snippets)
            .map(|((row, rank), snippet)| {
                let kind: String = row.try_get("kind")?;
                let kind = match kind.as_str() {
                    "message" => HitKind::Message,
                    "thread" => HitKind::Thread,
                    _ => HitKind::Artifact,
                };
                let ref_id = uuid(row, "ref_id")?;
                let role_text: Option<String> = row.try_get("role")?;
                Ok(SearchHit {
                    kind,
                    thread_id: uuid(row, "thread_id")?,
                    thread_title: row.try_get("thread_title")?,
                    message_id: (kind == HitKind::Message).then_some(ref_id),
                    artifact_id: (kind == HitKind::Artifact).then_some(ref_id),
                    role: role_text.as_deref().map(role).transpose()?,
                    snippet,
                    created_at: time(row, "created_at")?,
                    rank: *rank,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SearchPage { hits, total: total as u64 })
    }
}
