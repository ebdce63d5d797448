//! Full-text search over a person's messages, conversation titles and documents: the storage interface both
//! backends implement, and how both turn the rows of a page into hits.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use wire::Role;

use super::columns::Stored;
use super::search_query::Term;
use super::{parse_role, snippet, Result};

/// Hits of one kind ranked together on either backend: a first page ranks and counts each kind's newest ones. For
/// a word found in more of a person's rows than this, the best of its newest hits come first and the total is a
/// lower bound; see [`Window`] for the pages after them.
pub const RANKED_CANDIDATES: u32 = 200;

/// The hits a page is taken from. Each kind's hits, newest first, fall into windows of [`RANKED_CANDIDATES`]; hits
/// are ordered by window, then by rank within it: the best of each kind's newest 200 first, then the best of the
/// next 200, and so on. A hit's place therefore does not depend on how deep the page asking for it is, so paging
/// never repeats or skips a hit, and a page reads only the windows it reaches.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// Hits of each kind read: the whole windows up to the page's end.
    pub(crate) candidates: i64,
}

impl Window {
    /// The size of one window, as SQL takes it.
    pub(crate) const SIZE: i64 = RANKED_CANDIDATES as i64;

    /// The windows a page of `limit` hits after `offset` reaches. Every whole window but a person's last one
    /// holds at least [`RANKED_CANDIDATES`] hits (one kind filled it), so these hold the page.
    pub(crate) fn reaching(offset: u32, limit: u32) -> Self {
        let end = i64::from(offset) + i64::from(limit);
        Self { candidates: Self::SIZE * (end.max(1) + Self::SIZE - 1).div_euclid(Self::SIZE) }
    }
}

/// What a search hit points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HitKind {
    Message,
    Thread,
    Artifact,
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub kind: HitKind,
    pub thread_id: Uuid,
    pub thread_title: String,
    pub message_id: Option<Uuid>,
    pub artifact_id: Option<Uuid>,
    pub role: Option<Role>,
    /// HTML-escaped text with the matching words wrapped in `<mark>`.
    pub snippet: String,
    pub created_at: DateTime<Utc>,
    /// Relevance on the backend's own scale, lower is better on both (SQLite's bm25 is negative, PostgreSQL's
    /// `ts_rank` is negated); hits come ordered by it, then newest first. Not comparable across backends.
    pub rank: f64,
}

/// A page of search results and how many there are in all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchPage {
    pub hits: Vec<SearchHit>,
    /// Every hit, or (when `total_is_lower_bound`) the hits ranked: a kind had more than could be ranked.
    pub total: u64,
    pub total_is_lower_bound: bool,
}

/// How many hits a search ranked, and whether one kind had more than the windows read (see [`Window`]).
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub(crate) struct Counted {
    pub(crate) ranked: i64,
    pub(crate) cut: bool,
}

impl Counted {
    /// The page of these hits.
    pub(crate) fn page(self, hits: Vec<SearchHit>) -> SearchPage {
        SearchPage { hits, total: self.ranked.max(0) as u64, total_is_lower_bound: self.cut }
    }
}

/// A hit of a page as both backends read it, with their id (`I`) and time (`T`) columns (see [`Stored`]): what
/// it is (`message`, `thread` or `artifact`), the row it points at, its conversation, and the text its snippet
/// is made from.
#[derive(sqlx::FromRow)]
pub(crate) struct HitRow<I, T> {
    pub(crate) kind: String,
    ref_id: I,
    thread_id: I,
    thread_title: String,
    role: Option<String>,
    body: String,
    created_at: T,
}

/// A page's hits with their ranks, in order, as callers see them: snippets are made from their texts (on the
/// blocking pool, see [`snippet::snippets`]).
pub(crate) async fn hits<I, T>(terms: Vec<Term>, page: Vec<(HitRow<I, T>, f64)>) -> Result<Vec<SearchHit>>
where
    I: Stored<Uuid>,
    T: Stored<DateTime<Utc>>,
{
    let (page, texts): (Vec<_>, Vec<_>) = page
        .into_iter()
        .map(|(mut row, rank)| {
            let text = std::mem::take(&mut row.body);
            ((row, rank), text)
        })
        .unzip();
    let snippets = snippet::snippets(terms, texts).await?;
    page.into_iter()
        .zip(snippets)
        .map(|((row, rank), snippet)| {
            let kind = match row.kind.as_str() {
                "message" => HitKind::Message,
                "thread" => HitKind::Thread,
                _ => HitKind::Artifact,
            };
            let ref_id = row.ref_id.read("ref_id")?;
            Ok(SearchHit {
                kind,
                thread_id: row.thread_id.read("thread_id")?,
                thread_title: row.thread_title,
                message_id: (kind == HitKind::Message).then_some(ref_id),
                artifact_id: (kind == HitKind::Artifact).then_some(ref_id),
                role: row.role.as_deref().map(parse_role).transpose()?,
                snippet,
                created_at: row.created_at.read("created_at")?,
                rank,
            })
        })
        .collect()
}

/// Full-text search over a person's messages, conversation titles and documents.
#[async_trait]
pub trait Search: Send + Sync {
    /// The user's messages, thread titles and documents matching the query (see [`search_query`]), best first.
    async fn search(&self, user: Uuid, query: &str, limit: u32, offset: u32) -> Result<SearchPage>;
    /// The same over the conversations of a project the user is a member of (whoever wrote them); `NotFound`
    /// for a project they are not a member of.
    async fn search_project(
        &self,
        user: Uuid,
        project: Uuid,
        query: &str,
        limit: u32,
        offset: u32,
    ) -> Result<SearchPage>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_reads_the_whole_windows_it_reaches() {
        let reads = |offset, limit| Window::reaching(offset, limit).candidates;
        assert_eq!(reads(0, 20), 200);
        assert_eq!(reads(180, 20), 200);
        assert_eq!(reads(181, 20), 400);
        assert_eq!(reads(10_000, 100), 10_200);
        assert_eq!(reads(u32::MAX, 100), 200 * ((i64::from(u32::MAX) + 100 + 199) / 200));
    }
}
