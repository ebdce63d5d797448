//! Search on PostgreSQL: see [`crate::store::Search`].

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{search_query, Postgres, Search, SearchPage};
use crate::store::search::{hits, HitRow};
use crate::store::Result;

/// A hit of the page, with its rank and how many hits there are in all.
#[derive(sqlx::FromRow)]
struct Ranked {
    #[sqlx(flatten)]
    hit: HitRow<Uuid, DateTime<Utc>>,
    rank: f64,
    total: i64,
}

#[async_trait]
impl Search for Postgres {
    #[instrument(skip(self, query))]
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage> {
        let terms = search_query::parse(query);
        let Some(tsquery) = search_query::to_tsquery(&terms) else {
            return Ok(SearchPage::default());
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
        let rows: Vec<Ranked> = sqlx::query_as(&sql)
            .bind(user)
            .bind(&tsquery)
            .bind(limit.clamp(1, 100) as i64)
            .bind(offset as i64)
            .fetch_all(&mut *tx)
            .await?;
        let total: i64 = match rows.first() {
            Some(row) => row.total,
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
        let hits = hits(terms, rows.into_iter().map(|row| (row.hit, row.rank)).collect()).await?;
        Ok(SearchPage { hits, total: total as u64 })
    }
}
