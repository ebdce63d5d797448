//! Search on SQLite: see [`crate::Search`].

use std::collections::HashMap;

use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::writer::Urgency;
use super::{owner_token, search_query, Search, SearchPage, Sqlite};
use crate::search::{hits, Counted, HitRow, Window};
use crate::Result;

/// Each kind's details, read by the index rows (`pk`) of a page. Every part names its columns: any of them may
/// come first in the union.
const DETAILS: [(&str, &str); 3] = [
    (
        "message",
        "select 'message' as kind, m.pk, m.id as ref_id, m.thread_id, t.title as thread_title, m.role,
        m.content as body, m.created_at from messages m join threads t on t.id = m.thread_id where m.pk in",
    ),
    (
        "thread",
        "select 'thread' as kind, t.pk, t.id as ref_id, t.id as thread_id, t.title as thread_title,
        null as role, t.title as body, t.created_at from threads t where t.pk in",
    ),
    (
        "artifact",
        "select 'artifact' as kind, a.pk, a.id as ref_id, a.thread_id, t.title as thread_title,
        null as role, a.title || char(10) || a.content as body, a.created_at
        from artifacts a join threads t on t.id = a.thread_id where a.pk in",
    ),
];

/// A hit's details, with the index row it was ranked by.
#[derive(sqlx::FromRow)]
struct Detail {
    pk: i64,
    #[sqlx(flatten)]
    hit: HitRow<String, i64>,
}

#[async_trait]
impl Search for Sqlite {
    #[instrument(skip(self, query))]
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage> {
        let terms = search_query::parse(query);
        let Some(body) = search_query::to_fts5(&terms) else {
            return Ok(SearchPage::default());
        };
        // The person's messages saved before the search and still queued for the index go in first (see
        // [`super::index`]); a store that cannot write now still searches what the index holds.
        let writer = || Some(self.writer.clone());
        if let Err(e) = super::index::index_queued(&self.reader, writer, Urgency::Waited, Some(user)).await {
            tracing::warn!(error = %e, "indexing saved messages before a search failed");
        }
        // The owner token is part of the MATCH, so FTS5 intersects posting lists instead of filtering rows.
        let expression = format!("owner : \"{}\" AND {body}", owner_token(user));
        // 1. Rank by the index rows alone (no joins, no snippets) and keep the page. Hits are ranked in windows
        //    of each kind's newest RANKED_CANDIDATES (see `Window`): FTS5 walks its rowids newest first without
        //    sorting, and stops after the windows the page reaches (and one row more, to know whether there are
        //    more). Among equal ranks the newer row comes first.
        let limit = limit.clamp(1, 100);
        let window = Window::reaching(offset, limit);
        let candidates_sql = |table: &str, kind: &str| {
            format!(
                "select * from (select '{kind}' as kind, rowid as pk, bm25({table}, 0.0, 1.0) as rank from {table}
                 where {table} match ?1 order by rowid desc limit ?2 + 1)"
            )
        };
        let newest = format!(
            "{} union all {} union all {}",
            candidates_sql("messages_fts", "message"),
            candidates_sql("threads_fts", "thread"),
            candidates_sql("artifacts_fts", "artifact"),
        );
        let sql = format!(
            "select kind, pk, rank, ranked, cut
             from (select *, count(*) over () as ranked, max(of_kind) over () > ?2 as cut
                   from (select *, count(*) over (partition by kind) as of_kind,
                                row_number() over (partition by kind order by pk desc) as newest
                         from ({newest}))
                   where newest <= ?2)
             order by (newest - 1) / ?5, rank, pk desc, kind limit ?3 offset ?4"
        );
        let page: Vec<(String, i64, f64, i64, bool)> = sqlx::query_as(&sql)
            .bind(&expression)
            .bind(window.candidates)
            .bind(i64::from(limit))
            .bind(i64::from(offset))
            .bind(Window::SIZE)
            .fetch_all(&self.reader)
            .await?;
        let counted: Counted = match page.first() {
            Some(first) => Counted { ranked: first.3, cut: first.4 },
            // A page past the end: the count on its own.
            None => {
                sqlx::query_as(&format!(
                    "select coalesce(sum(min(n, ?2)), 0) as ranked, coalesce(max(n), 0) > ?2 as cut
                     from (select kind, count(*) as n from ({newest}) group by kind)"
                ))
                .bind(&expression)
                .bind(window.candidates)
                .fetch_one(&self.reader)
                .await?
            }
        };
        // 2. Details and texts for the page only (the pks are integers read from the database). Snippets are made
        //    from the texts: FTS5's snippet() and highlight() take time that grows with the square of the hits in
        //    one text.
        let parts: Vec<String> = DETAILS
            .iter()
            .filter_map(|(kind, select)| {
                let pks: Vec<String> = page.iter().filter(|p| p.0 == *kind).map(|p| p.1.to_string()).collect();
                (!pks.is_empty()).then(|| format!("{select} ({})", pks.join(", ")))
            })
            .collect();
        let mut details: HashMap<(String, i64), HitRow<String, i64>> = if parts.is_empty() {
            HashMap::new()
        } else {
            let rows: Vec<Detail> = sqlx::query_as(&parts.join(" union all ")).fetch_all(&self.reader).await?;
            rows.into_iter().map(|d| ((d.hit.kind.clone(), d.pk), d.hit)).collect()
        };
        // A row deleted between the two reads is left out.
        let found = page.into_iter().filter_map(|(kind, pk, rank, ..)| Some((details.remove(&(kind, pk))?, rank)));
        let hits = hits(terms, found.collect()).await?;
        Ok(counted.page(hits))
    }
}
