//! The search page (`/search?q=`): hits grouped by conversation, each opening the conversation at the hit.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_query_map;
use uuid::Uuid;

use crate::api::{client, Role, SearchKind, SearchResult};
use crate::markdown::unescape;

/// A snippet (HTML-escaped, only `<mark>` as markup) split into unescaped text and marked hits: each is shown as
/// a text node, never inserted as HTML, so whatever else a snippet held shows as text.
pub fn snippet_parts(html: &str) -> Vec<(String, bool)> {
    let mut parts: Vec<(String, bool)> = Vec::new();
    let mut marked = false;
    let mut rest = html;
    while !rest.is_empty() {
        let tag = if marked { "</mark>" } else { "<mark>" };
        let (text, after) = match rest.find(tag) {
            Some(at) => (&rest[..at], Some(&rest[at + tag.len()..])),
            None => (rest, None),
        };
        if !text.is_empty() {
            parts.push((unescape(text), marked));
        }
        match after {
            Some(after) => {
                rest = after;
                marked = !marked;
            }
            None => break,
        }
    }
    parts
}

/// Hits of one conversation, in the order of their first (best) hit.
#[derive(Clone, Debug, PartialEq)]
pub struct HitGroup {
    pub thread_id: Uuid,
    pub thread_title: String,
    pub hits: Vec<SearchResult>,
}

/// Groups hits by conversation; the conversations keep the order of their best hit, the hits their own order.
pub fn group_by_thread(results: &[SearchResult]) -> Vec<HitGroup> {
    let mut groups: Vec<HitGroup> = Vec::new();
    for hit in results {
        match groups.iter_mut().find(|g| g.thread_id == hit.thread_id) {
            Some(group) => group.hits.push(hit.clone()),
            None => groups.push(HitGroup {
                thread_id: hit.thread_id,
                thread_title: hit.thread_title.clone(),
                hits: vec![hit.clone()],
            }),
        }
    }
    groups
}

/// Where a hit leads: the conversation, at the message when the hit is one.
pub fn hit_href(hit: &SearchResult) -> String {
    match (hit.kind, hit.message_id) {
        (SearchKind::Message, Some(m)) => format!("/c/{}?m={m}", hit.thread_id),
        _ => format!("/c/{}", hit.thread_id),
    }
}

fn hit_label(hit: &SearchResult) -> &'static str {
    match (hit.kind, hit.role) {
        (SearchKind::Message, Some(Role::Assistant)) => "Assistant",
        (SearchKind::Message, _) => "You",
        (SearchKind::Thread, _) => "Title",
        (SearchKind::Artifact, _) => "Document",
    }
}

/// A snippet with its hits marked.
#[component]
fn Snippet(html: String) -> impl IntoView {
    snippet_parts(&html)
        .into_iter()
        .map(|(text, marked)| if marked { view! { <mark>{text}</mark> }.into_any() } else { text.into_any() })
        .collect_view()
}

/// The search page.
#[component]
pub fn SearchPage() -> impl IntoView {
    let query = use_query_map();
    let q = Memo::new(move |_| query.with(|m| m.get("q").unwrap_or_default().trim().to_string()));
    // A project's search (`?project=<id>`, from the project's page): its conversations, whoever wrote them.
    let project = Memo::new(move |_| query.with(|m| m.get("project").and_then(|p| Uuid::parse_str(&p).ok())));
    let results = RwSignal::new(Vec::<SearchResult>::new());
    // How many hits, and whether that is a lower bound.
    let total = RwSignal::new((0u64, false));
    let next = RwSignal::new(None::<String>);
    let loading = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);

    // The page of hits for `text` at `cursor` (the first without one); dropped if the query changed meanwhile.
    let fetch = move |text: String, cursor: Option<String>| {
        loading.set(true);
        spawn_local(async move {
            let result = client::search(&text, cursor.as_deref(), project.get_untracked()).await;
            if q.get_untracked() != text {
                return;
            }
            loading.set(false);
            match result {
                Ok(page) => {
                    if cursor.is_some() {
                        results.update(|r| r.extend(page.results));
                    } else {
                        results.set(page.results);
                        total.set((page.total, page.total_is_lower_bound));
                    }
                    next.set(page.next_cursor);
                }
                Err(e) => error.set(Some(e.message)),
            }
        });
    };
    Effect::new(move |_| {
        let text = q.get();
        project.track();
        results.set(Vec::new());
        total.set((0, false));
        next.set(None);
        error.set(None);
        if !text.is_empty() {
            fetch(text, None);
        }
    });
    let more = move |_| {
        if let Some(cursor) = next.get_untracked() {
            fetch(q.get_untracked(), Some(cursor));
        }
    };

    let summary = move || {
        let text = q.get();
        if text.is_empty() {
            return "Type in the search box (Ctrl+K) and press Enter.".to_string();
        }
        if loading.get() && results.with(Vec::is_empty) {
            return "Searching…".to_string();
        }
        match total.get() {
            (0, _) => format!("Nothing matches “{text}”."),
            (n, true) => format!("At least {n} matches for “{text}”; the best of the newest come first."),
            (1, false) => format!("1 match for “{text}”."),
            (n, false) => format!("{n} matches for “{text}”."),
        }
    };

    view! {
        <section class="search-page" aria-labelledby="search-heading">
            <h1 id="search-heading">{move || if project.get().is_some() { "Search in the project" } else { "Search" }}</h1>
            <p class="search-summary" role="status">{summary}</p>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <For each=move || results.with(|r| group_by_thread(r)) key=|g| (g.thread_id, g.hits.len()) let:group>
                <section class="search-group" aria-label=group.thread_title.clone()>
                    <h2><a href=format!("/c/{}", group.thread_id)>{group.thread_title.clone()}</a></h2>
                    <ul class="search-hits">
                        {group
                            .hits
                            .into_iter()
                            .map(|hit| {
                                let (href, label) = (hit_href(&hit), hit_label(&hit));
                                view! {
                                    <li>
                                        <a class="search-result" data-testid="search-result" href=href>
                                            <span class="hit-kind">{label}</span>
                                            <span class="snippet"><Snippet html=hit.snippet/></span>
                                        </a>
                                    </li>
                                }
                            })
                            .collect_view()}
                    </ul>
                </section>
            </For>
            <Show when=move || next.with(Option::is_some)>
                <button type="button" class="more" disabled=move || loading.get() on:click=more>"More results"</button>
            </Show>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};

    #[test]
    fn snippets_keep_only_marks_as_markup() {
        assert_eq!(
            snippet_parts("a &lt;img src=x onerror=alert(1)&gt; <mark>rust</mark> &amp; &#39;q&quot;"),
            vec![
                ("a <img src=x onerror=alert(1)> ".to_string(), false),
                ("rust".to_string(), true),
                (" & 'q\"".to_string(), false),
            ]
        );
        // Markup other than `<mark>` is text; an unclosed mark runs to the end.
        assert_eq!(snippet_parts("<b>x</b><mark>y"), vec![("<b>x</b>".to_string(), false), ("y".to_string(), true)]);
        assert_eq!(snippet_parts("&amp;lt; &unknown; &"), vec![("&lt; &unknown; &".to_string(), false)]);
        assert!(snippet_parts("").is_empty());
    }

    fn hit(thread: u128, kind: SearchKind, message: Option<u128>) -> SearchResult {
        SearchResult {
            kind,
            thread_id: Uuid::from_u128(thread),
            thread_title: format!("thread {thread}"),
            message_id: message.map(Uuid::from_u128),
            artifact_id: None,
            role: Some(Role::User),
            snippet: String::new(),
            created_at: DateTime::<Utc>::default(),
        }
    }

    #[test]
    fn hits_group_by_conversation_in_order_of_their_best_hit() {
        let hits = [
            hit(2, SearchKind::Message, Some(20)),
            hit(1, SearchKind::Thread, None),
            hit(2, SearchKind::Message, Some(21)),
        ];
        let groups = group_by_thread(&hits);
        assert_eq!(groups.iter().map(|g| g.thread_id.as_u128()).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(groups[0].hits.iter().map(|h| h.message_id.unwrap().as_u128()).collect::<Vec<_>>(), vec![20, 21]);
    }

    #[test]
    fn message_hits_open_the_conversation_at_the_message() {
        let m = hit(1, SearchKind::Message, Some(7));
        assert_eq!(hit_href(&m), format!("/c/{}?m={}", Uuid::from_u128(1), Uuid::from_u128(7)));
        assert_eq!(hit_href(&hit(1, SearchKind::Artifact, None)), format!("/c/{}", Uuid::from_u128(1)));
    }
}
