//! The chat page: the conversation ([`timeline`]), the message box ([`composer`]), the header with documents
//! and exports ([`header`]), and what people's actions do ([`actions`]). The conversation's state lives above the
//! router, in [`crate::state::ChatState`].

mod actions;
mod budget_banner;
mod composer;
mod header;
mod timeline;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};
use uuid::Uuid;

use crate::api::{client, Artifact, Role};
use crate::components::artifact_card::artifact_viewer;
use crate::state::{ChatState, ErrorNote, LiveAnswer, ThreadsChanged};
use actions::ChatActions;
use budget_banner::BudgetBanner;
use composer::{Composer, ErrorBanner};
use header::ChatHeader;
use timeline::Timeline;

/// Shows a conversation (`/c/:id`) or an empty one (`/`) that is created on the first message.
#[component]
pub fn ChatPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let changed = expect_context::<ThreadsChanged>();
    let state = expect_context::<ChatState>();
    let ChatState { current, messages, artifacts, live, busy, error, title, open, .. } = state;
    let draft = RwSignal::new(String::new());
    let follow = RwSignal::new(true);
    let actions = ChatActions::new(state, changed, draft, follow, use_navigate());

    let route_id = move || params.with(|p| p.get("id").and_then(|s| Uuid::parse_str(&s).ok()));
    // The message a search result points at (`?m=<id>`): scrolled to and highlighted.
    let target = Memo::new(move |_| query.with(|q| q.get("m").and_then(|s| Uuid::parse_str(&s).ok())));
    // `current` is set before navigating to a thread this page just created, so it is not reloaded (unless the
    // message asked for is not among those on screen, e.g. one sent from this page before the server named it).
    Effect::new(move |_| {
        let id = route_id();
        let wanted = target.get();
        let on_screen = wanted.is_none_or(|m| messages.with_untracked(|list| list.iter().any(|x| x.id == m)));
        if id == current.get_untracked() && id.is_some() && on_screen {
            return;
        }
        state.reset(id);
        let Some(id) = id else { return };
        spawn_local(async move {
            match client::get_thread(id).await {
                Ok(detail) if current.get_untracked() == Some(id) => {
                    title.set(detail.thread.title);
                    let mut list = detail.messages;
                    if detail.running && list.last().is_some_and(|m| m.role == Role::Assistant) {
                        // The answer being written is replayed below from the turn's events.
                        list.pop();
                    }
                    messages.set(list);
                    artifacts.set(detail.artifacts);
                    if detail.running {
                        busy.set(true);
                        live.set(Some(LiveAnswer::default()));
                        let result = client::resume(id, |event| state.apply(id, event, "", changed)).await;
                        if let Err(e) = result {
                            error.set(Some(ErrorNote::new(e.message)));
                        }
                        live.set(None);
                        busy.set(false);
                    }
                }
                Ok(_) => {}
                Err(e) => error.set(Some(ErrorNote::new(e.message))),
            }
        });
    });

    let open_card = Callback::new(move |a: Artifact| open.set(Some(a)));
    let close_viewer = Callback::new(move |_| open.set(None));
    let delete_artifact = Callback::new(move |a: Artifact| actions.delete_artifact(a));

    view! {
        <section class="chat" aria-label="Conversation">
            <ChatHeader title current artifacts on_open=open_card/>
            <Timeline state follow target on_open=open_card/>
            <ErrorBanner state actions/>
            <BudgetBanner state/>
            <Composer state draft actions/>
            {move || open.get().map(|a| view! {
                <Suspense fallback=|| ()>{Suspend::new(artifact_viewer(a, close_viewer, delete_artifact))}</Suspense>
            })}
        </section>
    }
}
