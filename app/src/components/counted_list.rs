//! A heading that says how many entries follow, then the entries: the sections of "What the model saw".

use leptos::prelude::*;

/// "`heading` (n)" over `items`, each drawn by `row`, in a numbered list when `ordered`. With no items it says
/// `empty`, or shows nothing at all when there is no `empty`.
#[component]
pub fn CountedList<T, R, V>(
    heading: &'static str,
    items: Vec<T>,
    row: R,
    #[prop(optional)] empty: Option<&'static str>,
    #[prop(optional)] ordered: bool,
    #[prop(default = "context-list")] class: &'static str,
    #[prop(optional)] testid: Option<&'static str>,
) -> impl IntoView
where
    T: 'static,
    R: Fn(T) -> V + 'static,
    V: IntoView + 'static,
{
    let count = items.len();
    let rows = items.into_iter().map(row).collect_view();
    let list = if count == 0 {
        empty.map(|text| view! { <p class="muted">{text}</p> }.into_any())
    } else if ordered {
        Some(view! { <ol class=class data-testid=testid>{rows}</ol> }.into_any())
    } else {
        Some(view! { <ul class=class data-testid=testid>{rows}</ul> }.into_any())
    };
    list.map(|list| {
        view! {
            <h3 class="context-heading">{format!("{heading} ({count})")}</h3>
            {list}
        }
    })
}
