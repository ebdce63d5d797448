//! The chat page: [`timeline`], [`branches`], the message box ([`composer`]), the [`header`] with documents,
//! requirements and exports, the [`requirements`] panel beside the conversation, and what people's actions do
//! ([`actions`]); the state lives above the router ([`crate::state::ChatState`]).

mod actions;
mod attach;
mod branches;
mod budget_banner;
mod composer;
mod header;
mod requirements;
mod timeline;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};
use uuid::Uuid;

use crate::api::{client, Artifact, Quote, Role, ThreadChange};
use crate::components::artifact_card::{artifact_viewer, ViewerActions, ViewerContext};
use crate::components::artifacts_panel::ARTIFACTS_TOGGLE_ID;
use crate::components::requirements_panel::{LedgerActions, RequirementsPanel};
use crate::state::{ChatState, ErrorNote, LiveAnswer, QuoteDraft, ThreadsChanged};
use actions::ChatActions;
use branches::DeleteMessageDialog;
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
    let ChatState { current, messages, artifacts, busy, title, open, files, model, .. } = state;
    let follow = RwSignal::new(true);
    let actions = ChatActions::new(state, changed, follow, use_navigate());
    let branches = actions.branches();
    let panel = actions.ledger_panel();
    // The message a followed requirement came from, highlighted a while.
    let spotlight = RwSignal::new(None::<Uuid>);
    let occupied = Signal::derive(move || busy.get() || state.generating.get().is_some());

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
        branches.clear();
        let Some(id) = id else { return };
        attach::load_files(state, id);
        spawn_local(show_thread(actions, id, wanted, false));
    });

    // A requirement the address asks for (`?requirement=R-2`: a document of another conversation of the project
    // cites it), followed once the conversation and its ledger are read.
    let asked = Memo::new(move |_| query.with(|q| q.get("requirement")));
    let followed = StoredValue::new(None::<(Uuid, String)>);
    Effect::new(move |_| {
        let (Some(key), Some(id)) = (asked.get(), route_id()) else { return };
        // The conversation the address names, read (not the one shown before it).
        let ready = current.get() == Some(id) && state.ledger.with(Option::is_some) && !messages.with(Vec::is_empty);
        if !ready || followed.get_value().is_some_and(|(t, k)| t == id && k == key) {
            return;
        }
        followed.set_value(Some((id, key.clone())));
        actions.follow_requirement(key, spotlight);
    });

    // The ledger is read again when the panel opens and whenever a turn, a generation or an update ends (any may
    // change it, and the documents' marks with it).
    Effect::new(move |was_open: Option<bool>| {
        let now_open = panel.open.get();
        if now_open && was_open == Some(false) {
            if let Some(id) = current.get_untracked() {
                requirements::refresh(actions, id, false);
            }
        }
        now_open
    });
    Effect::new(move |was_working: Option<bool>| {
        let working = occupied.get();
        if was_working == Some(true) && !working {
            if let Some(id) = current.get_untracked() {
                requirements::refresh(actions, id, true);
            }
        }
        working
    });

    // The element that opened the viewer gets focus back when it closes.
    let opener = StoredValue::new_local(None::<web_sys::HtmlElement>);
    let open_card = Callback::new(move |a: Artifact| {
        opener.set_value(focused_element());
        open.set(Some(a));
    });
    Effect::new(move |was_open: Option<Option<Uuid>>| {
        let now_open = open.with(|a| a.as_ref().map(|a| a.id));
        if let (Some(Some(document)), None) = (was_open, now_open) {
            return_focus(opener.get_value(), document);
        }
        now_open
    });
    // Everyone watching the conversation sees its documents change: saved here, by the assistant, or elsewhere.
    // A hidden tab lets go of its stream (browsers allow a few connections per server, and every open tab would
    // hold one) and catches up on the documents when it is shown again.
    let watch = StoredValue::new_local(None::<client::ChangeWatch>);
    // Taken as shown until the browser says otherwise (the server has no page to ask).
    let shown = RwSignal::new(true);
    Effect::new(move |_| shown.set(page_visible()));
    let visibility = window_event_listener(leptos::ev::visibilitychange, move |_| shown.set(page_visible()));
    on_cleanup(move || visibility.remove());
    Effect::new(move |was: Option<(Option<Uuid>, bool)>| {
        let (id, visible) = (current.get(), shown.get());
        watch.set_value(None);
        if let (Some(id), true) = (id, visible) {
            if was.is_some_and(|(before, seen)| before == Some(id) && !seen) {
                catch_up(state, id);
            }
            let on_change = move |change| {
                if current.get_untracked() != Some(id) {
                    return;
                }
                match change {
                    ThreadChange::ArtifactSaved { artifact } => state.upsert_artifact(artifact),
                    ThreadChange::ArtifactDeleted { artifact_id } => state.remove_artifact(artifact_id),
                    // An answer someone else started (this page's own, or its silent generation, keeps it
                    // occupied): shown as it is written.
                    ThreadChange::TurnStarted { .. } if !occupied.get_untracked() => {
                        spawn_local(show_thread(actions, id, None, true));
                    }
                    ThreadChange::TurnStarted { .. } => {}
                }
            };
            watch.set_value(client::watch_changes(id, on_change));
        }
        (id, visible)
    });
    on_cleanup(move || watch.set_value(None));

    // The viewer is drawn once per document opened, and follows that document's versions.
    let open_id = Memo::new(move |_| open.with(|a| a.as_ref().map(|a| a.id)));
    let document = Memo::new(move |_| open.get());
    let viewer = ViewerActions {
        close: Callback::new(move |_| open.set(None)),
        delete: Callback::new(move |a: Artifact| actions.delete_artifact(a)),
        saved: Callback::new(move |a: Artifact| {
            state.upsert_artifact(a.clone());
            open.set(Some(a));
        }),
        ask: Callback::new(move |(a, text): (Artifact, String)| {
            state.quote.set(Some(QuoteDraft { quote: Quote { artifact_id: a.id, text }, title: a.title }));
            // Focus goes to the message box, not back to what opened the viewer.
            opener.set_value(message_box());
            open.set(None);
        }),
        update: Callback::new(move |a: Artifact| actions.update_document(a)),
        cite: Callback::new(move |key: String| {
            open.set(None);
            actions.follow_requirement(key, spotlight);
        }),
    };
    let requirement_keys = Memo::new(move |_| {
        // Those stated on other branches link too: a document shown on every branch may cite them.
        state.ledger.with(|l| {
            l.as_ref().map(|l| {
                l.requirements.iter().map(|r| r.key.clone()).chain(l.elsewhere.iter().cloned()).collect::<Vec<_>>()
            })
        })
    });
    let around =
        ViewerContext { keys: Signal::derive(move || requirement_keys.get().unwrap_or_default()), busy: occupied };
    // The conversation whose ledger the panel shows, while it is open.
    let panel_thread = Memo::new(move |_| panel.open.get().then(|| current.get()).flatten());
    let ledger_actions = LedgerActions {
        open_document: Callback::new(move |id: Uuid| {
            if let Some(a) = artifacts.with_untracked(|list| list.iter().find(|a| a.id == id).cloned()) {
                open_card.run(a);
            }
        }),
        changed: Callback::new(move |r| actions.requirement_changed(r)),
        generate: Callback::new(move |keys| actions.generate_covering(keys)),
    };
    let remove_file = Callback::new(move |f| actions.remove_file(f));
    let choose_model = Callback::new(move |choice| actions.choose_model(choice));

    view! {
        <div class="chat-page">
            <section class="chat" aria-label="Conversation">
                <ChatHeader title current artifacts files on_open=open_card on_remove_file=remove_file model
                    on_model=choose_model ledger=state.ledger panel state/>
                <Timeline state actions follow target spotlight on_open=open_card/>
                <ErrorBanner state actions/>
                <BudgetBanner state/>
                <Show when=move || state.access.get().writes() fallback=move || view! {
                    <p class="read-only-note" role="note" data-testid="read-only-note">
                        "You are reading this conversation as a viewer of its project."
                    </p>
                }>
                    <Composer state actions/>
                </Show>
                <DeleteMessageDialog actions/>
                {move || open_id.get().map(|_| view! {
                    <Suspense fallback=|| ()>{Suspend::new(artifact_viewer(document, viewer, around))}</Suspense>
                })}
            </section>
            {move || panel_thread.get().map(|thread| view! {
                <RequirementsPanel thread ledger=state.ledger busy=occupied panel actions=ledger_actions/>
            })}
        </div>
    }
}

/// Reads conversation `id` and shows it, scrolled to `wanted` (a search hit: on a branch not shown, the path
/// through it is shown instead); an answer being written is followed until it ends, whoever started it. When
/// `following` an answer someone else started, nothing changes if this page began one of its own meanwhile.
async fn show_thread(actions: ChatActions, id: Uuid, wanted: Option<Uuid>, following: bool) {
    let state = actions.state();
    let ChatState { current, messages, artifacts, live, busy, error, title, model, .. } = state;
    let (branches, changed) = (actions.branches(), actions.changed());
    match client::get_thread(id).await {
        Ok(detail) if current.get_untracked() == Some(id) => {
            let hidden = wanted.filter(|m| !detail.running && !detail.messages.iter().any(|x| x.id == *m));
            let detail = match hidden {
                Some(m) => match client::switch_branch(id, m).await {
                    Ok(shown) => shown,
                    Err(e) => {
                        // A hit on a message deleted since is only not scrolled to.
                        if e.status != 404 {
                            error.set(Some(ErrorNote::new(e.message)));
                        }
                        detail
                    }
                },
                None => detail,
            };
            let occupied = busy.get_untracked() || state.generating.with_untracked(Option::is_some);
            if current.get_untracked() != Some(id) || (following && occupied) {
                return;
            }
            branches.list.set(detail.branches);
            state.access.set(detail.access);
            state.writers.set(detail.writers);
            title.set(detail.thread.title);
            model.set(detail.thread.model);
            state.mcp_servers.set(detail.thread.mcp_servers);
            state.approvals.set(detail.approvals);
            let mut list = detail.messages;
            if detail.running && list.last().is_some_and(|m| m.role == Role::Assistant) {
                // The answer being written is replayed below from the turn's events.
                list.pop();
            }
            messages.set(list);
            artifacts.set(detail.artifacts);
            requirements::refresh(actions, id, false);
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
}

/// Whether the page is on screen (not in a background tab or a minimised window).
fn page_visible() -> bool {
    web_sys::window()
        .and_then(|w| w.document())
        .is_none_or(|d| d.visibility_state() != web_sys::VisibilityState::Hidden)
}

/// Reads conversation `id`'s documents again, for a tab that was hidden while they may have changed.
fn catch_up(state: ChatState, id: Uuid) {
    spawn_local(read_documents(state, id));
}

/// Reads conversation `id`'s documents again and shows them as the server has them (with their out-of-date marks).
async fn read_documents(state: ChatState, id: Uuid) {
    if let Ok(list) = client::list_artifacts(id).await {
        if state.current.get_untracked() != Some(id) {
            return;
        }
        let kept: Vec<Uuid> = list.artifacts.iter().map(|a| a.id).collect();
        let gone: Vec<Uuid> =
            state.artifacts.with_untracked(|shown| shown.iter().map(|a| a.id).filter(|a| !kept.contains(a)).collect());
        for artifact in gone {
            state.remove_artifact(artifact);
        }
        for artifact in list.artifacts {
            state.upsert_artifact(artifact);
        }
    }
}

/// The message box.
fn message_box() -> Option<web_sys::HtmlElement> {
    use wasm_bindgen::JsCast;
    let page = web_sys::window()?.document()?;
    page.query_selector("textarea[aria-label=Message]").ok().flatten()?.dyn_into().ok()
}

/// The element that has focus, if it is one that can take it back.
fn focused_element() -> Option<web_sys::HtmlElement> {
    use wasm_bindgen::JsCast;
    let active = web_sys::window()?.document()?.active_element()?;
    active.dyn_into::<web_sys::HtmlElement>().ok()
}

/// Gives focus back to `element` once the viewer of `document` is gone; if it left the page, to the documents
/// panel's toggle (for a panel entry), the document's card (redrawn at a new version), else the message box.
fn return_focus(element: Option<web_sys::HtmlElement>, document: Uuid) {
    use wasm_bindgen::JsCast;
    request_animation_frame(move || {
        let Some(page) = web_sys::window().and_then(|w| w.document()) else { return };
        let from_panel = element.as_ref().is_some_and(|e| e.class_list().contains("document-entry"));
        let target = match element {
            Some(element) if element.is_connected() => Some(element.unchecked_into()),
            _ if from_panel => page.get_element_by_id(ARTIFACTS_TOGGLE_ID),
            _ => page.query_selector(&format!(".artifact-open[data-artifact-id=\"{document}\"]")).ok().flatten(),
        };
        let target = target.or_else(|| page.query_selector("textarea[aria-label=Message]").ok().flatten());
        if let Some(target) = target.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
            let _ = target.focus();
        }
    });
}
