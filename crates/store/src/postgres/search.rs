//! Search on PostgreSQL: see [`crate::Search`].

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tracing::instrument;
use uuid::Uuid;

use super::{search_query, Postgres, Search, SearchPage};
use crate::search::{hits, Counted, HitRow, Window};
use crate::Result;

/// A hit of the page, with its rank and how many hits were ranked.
#[derive(sqlx::FromRow)]
struct Ranked {
    #[sqlx(flatten)]
    hit: HitRow<Uuid, DateTime<Utc>>,
    rank: f64,
    #[sqlx(flatten)]
    counted: Counted,
}

/// Each kind's newest `$3` + 1 hits (`$1` the owner, `$2` the query; the one more says whether there are more): the owner and the match are index conditions,
/// and the order is that of the `(user_id, created_at, id)` indexes. Walking one of them newest first stops at
/// the last candidate, so a word found in thousands of a person's messages reads a few hundred rows; for a word
/// found in few the planner reads all of them from the GIN index instead (each statement is planned with its own
/// words, see `search`). The messages' GIN index holds the owner too (migration 0140), so that read never
/// fetches another account's matches from the table. A document whose vector is not computed yet for its current
/// version (see [`super::index`]) has it computed here, from the few such rows of the owner's partial index.
///
/// In a project's search (`project`: the parameter the project is bound to), the rows are those of the project's
/// conversations instead of the owner's, for a member of the project only.
fn newest(project: Option<&str>) -> String {
    let vector = super::index::VECTOR;
    let (m, t, a) = match project {
        None => ("m.user_id = $1".to_string(), "t.user_id = $1".to_string(), "a.user_id = $1".to_string()),
        Some(p) => {
            let member = crate::projects::member_with(&format!("{p}::uuid"), "$1", wire::ProjectRole::Viewer);
            let threads = format!("(select pt.id from threads pt where pt.project_id = {p}::uuid)");
            (
                format!("m.thread_id in {threads} and {member}"),
                format!("t.project_id = {p}::uuid and {member}"),
                format!("a.thread_id in {threads} and {member}"),
            )
        }
    };
    format!(
        "(select 'message' as kind, m.id as ref_id, m.created_at, m.search from messages m
            where {m} and m.search @@ to_tsquery('simple', $2)
            order by m.created_at desc, m.id desc limit $3 + 1)
        union all
        (select 'thread', t.id, t.created_at, t.search from threads t
            where {t} and t.search @@ to_tsquery('simple', $2)
            order by t.created_at desc, t.id limit $3 + 1)
        union all
        (select * from
            ((select 'artifact', a.id, a.created_at, a.search from artifacts a
                where {a} and a.search @@ to_tsquery('simple', $2) and a.search_version = a.version
                order by a.created_at desc, a.id desc limit $3 + 1)
            union all
            (select 'artifact', a.id, a.created_at, {vector} from artifacts a
                where {a} and a.search_version is distinct from a.version
                    and {vector} @@ to_tsquery('simple', $2)
                order by a.created_at desc, a.id desc limit $3 + 1)) d
         order by 3 desc, 2 desc limit $3 + 1)"
    )
}

#[async_trait]
impl Search for Postgres {
    #[instrument(skip(self, query))]
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage> {
        self.search_in(user, None, query, limit, offset).await
    }

    #[instrument(skip(self, query))]
    async fn search_project(
        &self,
        user: Uuid,
        project: Uuid,
        query: &str,
        limit: u32,
        offset: u32,
    ) -> Result<SearchPage> {
        // Every statement of the search reads a project's rows for its members only; a page with nothing on it
        // says whether that is because the person is not one.
        let page = self.search_in(user, Some(project), query, limit, offset).await?;
        if page.hits.is_empty() {
            let sql = format!("select {}", crate::projects::member_with("$1", "$2", wire::ProjectRole::Viewer));
            let member: bool = sqlx::query_scalar(&sql).bind(project).bind(user).fetch_one(&self.pool).await?;
            if !member {
                return Err(crate::StoreError::NotFound);
            }
        }
        Ok(page)
    }
}

impl Postgres {
    /// Searches the person's rows, or a project's (see [`newest`]).
    async fn search_in(
        &self,
        user: Uuid,
        project: Option<Uuid>,
        query: &str,
        limit: u32,
        offset: u32,
    ) -> Result<SearchPage> {
        let terms = search_query::parse(query);
        let Some(tsquery) = search_query::to_tsquery(&terms) else {
            return Ok(SearchPage::default());
        };
        let limit = limit.clamp(1, 100);
        // Hits are ranked in windows of each kind's newest RANKED_CANDIDATES, as on SQLite (see `Window`); only
        // the page is joined to its conversation and text. Snippets are made from the texts: ts_headline takes time
        // that grows with the square of a phrase's hits in one text.
        let window = Window::reaching(offset, limit);
        let candidates = newest(project.map(|_| "$7"));
        let sql = format!(
            "with newest as ({candidates}),
             page as (
                select kind, ref_id, created_at, score, ranked, cut, (newest - 1) / $6 as win
                from (select *, count(*) over () as ranked, max(of_kind) over () > $3 as cut
                      from (select kind, ref_id, created_at, ts_rank(search, to_tsquery('simple', $2)) as score,
                                   count(*) over (partition by kind) as of_kind,
                                   row_number() over (partition by kind order by created_at desc, ref_id desc) as newest
                            from newest) n
                      where newest <= $3) c
                order by win, score desc, created_at desc, ref_id desc limit $4 offset $5
             )
             select page.kind, page.ref_id, page.ranked, page.cut, t.id as thread_id, t.title as thread_title, m.role,
                    page.created_at, -page.score::float8 as rank,
                    case page.kind when 'message' then m.content when 'thread' then t.title
                        else a.title || E'\\n' || a.content end as body
             from page
             left join messages m on page.kind = 'message' and m.id = page.ref_id
             left join artifacts a on page.kind = 'artifact' and a.id = page.ref_id
             join threads t on t.id = coalesce(m.thread_id, a.thread_id, page.ref_id)
             order by page.win, page.score desc, page.created_at desc, page.ref_id desc"
        );
        let mut tx = self.pool.begin().await?;
        // For this transaction only:
        // - whether walking the newest rows or reading a word's GIN entry is cheaper depends on how common the word
        //   is: a plan made once for any words (a prepared statement's generic plan) would pick one for all;
        // - rows are read at random from memory or SSD: at the default cost of a random read (4, for spinning
        //   disks) the planner builds a bitmap of all of a person's messages to save reading a few other rows;
        // - enough memory that a bitmap of many hits stays exact instead of going lossy (and every heap page of
        //   the person's messages being read again to recheck).
        sqlx::query(
            "select set_config('plan_cache_mode', 'force_custom_plan', true),
                    set_config('random_page_cost', '1.1', true), set_config('work_mem', '32MB', true)",
        )
        .execute(&mut *tx)
        .await?;
        let mut ranked = sqlx::query_as(&sql)
            .bind(user)
            .bind(&tsquery)
            .bind(window.candidates)
            .bind(i64::from(limit))
            .bind(i64::from(offset))
            .bind(Window::SIZE);
        if let Some(project) = project {
            ranked = ranked.bind(project);
        }
        let rows: Vec<Ranked> = ranked.fetch_all(&mut *tx).await?;
        let counted = match rows.first() {
            Some(row) => row.counted,
            // A page past the end: the count on its own.
            None => {
                let sql = format!(
                    "with newest as ({})
                     select coalesce(sum(least(n, $3)), 0)::int8 as ranked, coalesce(max(n), 0) > $3 as cut
                     from (select kind, count(*) as n from newest group by kind) k",
                    newest(project.map(|_| "$4"))
                );
                let mut count = sqlx::query_as(&sql).bind(user).bind(&tsquery).bind(window.candidates);
                if let Some(project) = project {
                    count = count.bind(project);
                }
                count.fetch_one(&mut *tx).await?
            }
        };
        tx.commit().await?;
        let hits = hits(terms, rows.into_iter().map(|row| (row.hit, row.rank)).collect()).await?;
        Ok(counted.page(hits))
    }
}
