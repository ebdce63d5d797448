//! The tag filter above the conversations: the tag the list is narrowed to, with "Clear filter", and every tag
//! of the account with how many conversations carry it.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::{client, TagCount};
use crate::state::ThreadsChanged;

/// `tag` is the filter the list follows; picking a tag here (or a chip in the list) sets it.
#[component]
pub(super) fn TagFilter(tag: RwSignal<Option<String>>) -> impl IntoView {
    let changed = expect_context::<ThreadsChanged>();
    let tags = RwSignal::new(Vec::<TagCount>::new());
    let expanded = RwSignal::new(false);
    // Again whenever a conversation changed: its tags may have.
    Effect::new(move |_| {
        changed.0.track();
        spawn_local(async move {
            if let Ok(list) = client::list_tags().await {
                tags.try_set(list.tags);
            }
        });
    });
    view! {
        {move || tag.get().map(|active| view! {
            <div class="tag-filter" data-testid="tag-filter">
                <span class="tag-filter-label">"Tagged "<strong>{active}</strong></span>
                <button type="button" class="toggle" on:click=move |_| tag.set(None)>"Clear filter"</button>
            </div>
        })}
        <Show when=move || tags.with(|t| !t.is_empty())>
            <button type="button" class="toggle tags-toggle" aria-expanded=move || expanded.get().to_string()
                aria-controls="tag-list" on:click=move |_| expanded.update(|e| *e = !*e)>
                "Tags"
            </button>
            <Show when=move || expanded.get()>
                <Suspense fallback=|| ()>{Suspend::new(tag_list(tags, tag))}</Suspense>
            </Show>
        </Show>
    }
}

/// Every tag with its count. Loaded when the list is first shown (split out of the main wasm bundle in release
/// builds).
#[lazy]
fn tag_list(tags: RwSignal<Vec<TagCount>>, tag: RwSignal<Option<String>>) -> AnyView {
    view! {
        <ul id="tag-list" class="tag-list" aria-label="Tags">
            <For each=move || tags.get() key=|t| (t.tag.clone(), t.count) let:entry>
                <TagEntry entry tag/>
            </For>
        </ul>
    }
    .into_any()
}

/// A tag and its count; pressed while the list is filtered by it (pressing it again clears the filter).
#[component]
fn TagEntry(entry: TagCount, tag: RwSignal<Option<String>>) -> impl IntoView {
    let TagCount { tag: name, count } = entry;
    let label = format!("{name}, {count} conversation{}", if count == 1 { "" } else { "s" });
    let active = {
        let name = name.clone();
        move || tag.with(|t| t.as_deref() == Some(name.as_str()))
    };
    let pick = {
        let name = name.clone();
        let active = active.clone();
        move |_| tag.set(if active() { None } else { Some(name.clone()) })
    };
    view! {
        <li>
            <button type="button" class="chip tag-entry" aria-label=label aria-pressed=move || active().to_string() on:click=pick>
                {name}
                <span class="tag-count" aria-hidden="true">{count}</span>
            </button>
        </li>
    }
}
