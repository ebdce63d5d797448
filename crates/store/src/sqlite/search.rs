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

/// Which rows a search reads: the person's own, or those of one project's conversations.
#[derive(Debug, Clone, Copy)]
enum Scope {
    Own(Uuid),
    Project { member: Uuid, project: Uuid },
}

/// SQL that keeps an index row of `table` (`messages_fts`, `threads_fts` or `artifacts_fts`, whose rowids are
/// their rows' `pk`) only when its conversation is in the project bound to `project` and the person bound to
/// `member` is a member of it.
fn in_project(table: &str, project: &str, member: &str) -> String {
    let rows = match table {
        "messages_fts" => "messages r join threads t on t.id = r.thread_id",
        "threads_fts" => "threads r join threads t on t.id = r.id",
        _ => "artifacts r join threads t on t.id = r.thread_id",
    };
    let member = crate::projects::member_with(project, member, wire::ProjectRole::Viewer);
    format!("and exists (select 1 from {rows} where r.pk = {table}.rowid and t.project_id = {project}) and {member}")
}

#[async_trait]
impl Search for Sqlite {
    #[instrument(skip(self, query))]
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage> {
        self.search_in(Scope::Own(user), query, limit, offset).await
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
        self.search_in(Scope::Project { member: user, project }, query, limit, offset).await
    }
}

impl Sqlite {
    /// Searches the rows of `scope` (see [`Search::search`]).
    async fn search_in(&self, scope: Scope, query: &str, limit: u32, offset: u32) -> Result<SearchPage> {
        let terms = search_query::parse(query);
        // A project's members only: the membership and the authors whose rows are read, in one statement.
        let owners = match scope {
            Scope::Own(user) => vec![user],
            Scope::Project { member, project } => {
                let sql = format!(
                    "select exists (select 1 where {}) as member, null as author
                     union all select 1, t.user_id from threads t where t.project_id = ?1 and {}
                     group by t.user_id",
                    crate::projects::member_with("?1", "?2", wire::ProjectRole::Viewer),
                    crate::projects::member_with("?1", "?2", wire::ProjectRole::Viewer)
                );
                let rows: Vec<(bool, Option<String>)> = sqlx::query_as(&sql)
                    .bind(project.to_string())
                    .bind(member.to_string())
                    .fetch_all(&self.reader)
                    .await?;
                if !rows.first().is_some_and(|r| r.0) {
                    return Err(crate::StoreError::NotFound);
                }
                rows.iter().filter_map(|r| r.1.as_deref()).filter_map(|id| Uuid::parse_str(id).ok()).collect()
            }
        };
        let Some(body) = search_query::to_fts5(&terms).filter(|_| !owners.is_empty()) else {
            return Ok(SearchPage::default());
        };
        // The person's messages saved before the search and still queued for the index go in first (see
        // [`super::index`]), a project's authors' all; a store that cannot write now still searches what the
        // index holds.
        let writer = || Some(self.writer.clone());
        let queued_of = match scope {
            Scope::Own(user) => Some(user),
            Scope::Project { .. } => None,
        };
        if let Err(e) = super::index::index_queued(&self.reader, writer, Urgency::Waited, queued_of).await {
            tracing::warn!(error = %e, "indexing saved messages before a search failed");
        }
        // The owner tokens are part of the MATCH, so FTS5 intersects posting lists instead of filtering rows; a
        // project's rows are then kept by their conversation (`in_project`). (The tokens are read from ids.)
        let tokens: Vec<String> = owners.iter().map(|owner| format!("\"{}\"", owner_token(*owner))).collect();
        let expression = format!("owner : ({}) AND {body}", tokens.join(" OR "));
        let project = match scope {
            Scope::Own(_) => None,
            Scope::Project { project, .. } => Some(project.to_string()),
        };
        // 1. Rank by the index rows alone (no joins, no snippets) and keep the page. Hits are ranked in windows
        //    of each kind's newest RANKED_CANDIDATES (see `Window`): FTS5 walks its rowids newest first without
        //    sorting, and stops after the windows the page reaches (and one row more, to know whether there are
        //    more). Among equal ranks the newer row comes first.
        let limit = limit.clamp(1, 100);
        let window = Window::reaching(offset, limit);
        // `(at, member)`: the parameters the project and the member are bound to, in a project's search.
        let newest = |(at, member): (&str, &str)| {
            let candidates_sql = |table: &str, kind: &str| {
                let kept = project.as_ref().map(|_| in_project(table, at, member)).unwrap_or_default();
                format!(
                    "select * from (select '{kind}' as kind, rowid as pk, bm25({table}, 0.0, 1.0) as rank from {table}
                     where {table} match ?1 {kept} order by rowid desc limit ?2 + 1)"
                )
            };
            format!(
                "{} union all {} union all {}",
                candidates_sql("messages_fts", "message"),
                candidates_sql("threads_fts", "thread"),
                candidates_sql("artifacts_fts", "artifact"),
            )
        };
        let ranking = newest(("?6", "?7"));
        let sql = format!(
            "select kind, pk, rank, ranked, cut
             from (select *, count(*) over () as ranked, max(of_kind) over () > ?2 as cut
                   from (select *, count(*) over (partition by kind) as of_kind,
                                row_number() over (partition by kind order by pk desc) as newest
                         from ({ranking}))
                   where newest <= ?2)
             order by (newest - 1) / ?5, rank, pk desc, kind limit ?3 offset ?4"
        );
        let mut ranked = sqlx::query_as(&sql)
            .bind(&expression)
            .bind(window.candidates)
            .bind(i64::from(limit))
            .bind(i64::from(offset))
            .bind(Window::SIZE);
        if let (Some(project), Scope::Project { member, .. }) = (&project, scope) {
            ranked = ranked.bind(project).bind(member.to_string());
        }
        let page: Vec<(String, i64, f64, i64, bool)> = ranked.fetch_all(&self.reader).await?;
        let counted: Counted = match page.first() {
            Some(first) => Counted { ranked: first.3, cut: first.4 },
            // A page past the end: the count on its own.
            None => {
                let sql = format!(
                    "select coalesce(sum(min(n, ?2)), 0) as ranked, coalesce(max(n), 0) > ?2 as cut
                     from (select kind, count(*) as n from ({}) group by kind)",
                    newest(("?3", "?4"))
                );
                let mut count = sqlx::query_as(&sql).bind(&expression).bind(window.candidates);
                if let (Some(project), Scope::Project { member, .. }) = (&project, scope) {
                    count = count.bind(project).bind(member.to_string());
                }
                count.fetch_one(&self.reader).await?
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
