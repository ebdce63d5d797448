//! The conversation's requirements ledger, in a panel beside it behind a toggle in the chat header: each requirement
//! with its kind, status, the documents that cover it and its history, changed, dropped and restored by hand; the
//! requirements no document covers stand out, and a document can be generated for them.

use leptos::prelude::*;
use leptos::task::spawn_local;
use uuid::Uuid;

use crate::api::MAX_REQUIREMENT_CHARS;
use crate::api::{client, Ledger, Requirement, RequirementChange, RequirementStatus, UpdateRequirement, VersionAuthor};
use crate::format::moment;

/// The toggle's element id: focus comes back to it when the panel closes.
pub const REQUIREMENTS_TOGGLE_ID: &str = "requirements-toggle";
/// The panel's element id.
pub const REQUIREMENTS_PANEL_ID: &str = "requirements-panel";

/// How long a requirement brought into view stays marked.
const SPOTLIT_MS: u64 = 4_000;

/// The panel as the chat page holds it.
#[derive(Clone, Copy)]
pub struct LedgerPanel {
    pub open: RwSignal<bool>,
    /// The requirement to bring into view and focus once it is drawn (a cited key was followed).
    pub wanted: RwSignal<Option<String>>,
    /// A word about one requirement, shown with it: its key and the text.
    pub note: RwSignal<Option<(String, String)>>,
    /// Why the ledger could not be read.
    pub error: RwSignal<Option<String>>,
}

impl LedgerPanel {
    pub fn new() -> Self {
        Self {
            open: RwSignal::new(false),
            wanted: RwSignal::new(None),
            note: RwSignal::new(None),
            error: RwSignal::new(None),
        }
    }

    /// Closes the panel and gives focus back to its toggle.
    pub fn close(&self) {
        self.open.set(false);
        self.wanted.set(None);
        self.note.set(None);
        focus_by_selector(format!("#{REQUIREMENTS_TOGGLE_ID}"));
    }
}

impl Default for LedgerPanel {
    fn default() -> Self {
        Self::new()
    }
}

/// What the panel asks the page to do.
#[derive(Clone, Copy)]
pub struct LedgerActions {
    /// Open the viewer of a document that covers a requirement.
    pub open_document: Callback<Uuid>,
    /// A requirement was changed here: as the server has it now.
    pub changed: Callback<Requirement>,
    /// Generate a document covering these requirements (those no document covers).
    pub generate: Callback<Vec<String>>,
}

/// The number of requirements in force.
fn in_force(ledger: &Option<Ledger>) -> usize {
    ledger.as_ref().map_or(0, |l| l.requirements.iter().filter(|r| r.status.in_force()).count())
}

/// "Requirements (N)", N the requirements in force; opens and closes the panel.
#[component]
pub fn RequirementsToggle(#[prop(into)] ledger: Signal<Option<Ledger>>, panel: LedgerPanel) -> impl IntoView {
    let toggle = move |_| {
        if panel.open.get_untracked() {
            panel.close();
        } else {
            panel.open.set(true);
        }
    };
    view! {
        <button
            type="button"
            class="button panel-toggle"
            id=REQUIREMENTS_TOGGLE_ID
            aria-expanded=move || panel.open.get().to_string()
            aria-controls=REQUIREMENTS_PANEL_ID
            on:click=toggle
        >
            {move || format!("Requirements ({})", ledger.with(in_force))}
        </button>
    }
}

/// The panel of conversation `thread`'s ledger. Focus moves to its heading when it opens (or to the requirement
/// wanted); Escape or "Close" closes it.
#[component]
pub fn RequirementsPanel(
    thread: Uuid,
    #[prop(into)] ledger: Signal<Option<Ledger>>,
    #[prop(into)] busy: Signal<bool>,
    panel: LedgerPanel,
    actions: LedgerActions,
) -> impl IntoView {
    // Once the panel is on the page (a detached element cannot take focus), unless a requirement is wanted.
    Effect::new(move |_| {
        if panel.wanted.get_untracked().is_none() {
            focus_by_selector("#requirements-title".to_string());
        }
    });
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Escape" {
            ev.stop_propagation();
            panel.close();
        }
    };
    let keys = Memo::new(move |_| {
        ledger.with(|l| l.as_ref().map(|l| l.requirements.iter().map(|r| r.key.clone()).collect::<Vec<_>>()))
    });
    // A requirement asked for is brought into view, focused and marked a while, once it is drawn.
    let spotlit = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let Some(key) = panel.wanted.get() else { return };
        if !keys.with(|k| k.as_ref().is_some_and(|k| k.contains(&key))) {
            return;
        }
        panel.wanted.set(None);
        spotlit.set(Some(key.clone()));
        let selector = format!("#{REQUIREMENTS_PANEL_ID} [data-testid=requirement][data-key=\"{key}\"]");
        // After whatever else takes focus as the page changes (a closing viewer gives it back to its opener).
        request_animation_frame(move || {
            set_timeout(move || reveal(&selector), std::time::Duration::from_millis(30));
        });
        set_timeout(
            move || {
                if spotlit.try_get_untracked().flatten().as_deref() == Some(key.as_str()) {
                    spotlit.try_set(None);
                }
            },
            std::time::Duration::from_millis(SPOTLIT_MS),
        );
    });
    let list = RequirementList { thread, ledger, keys, spotlit, busy, panel, actions };
    view! {
        <section id=REQUIREMENTS_PANEL_ID class="requirements-panel" aria-labelledby="requirements-title"
            data-testid="requirements-panel" on:keydown=on_keydown>
            <header class="requirements-head">
                <h2 id="requirements-title" tabindex="-1">"Requirements"</h2>
                <button type="button" class="icon-button" aria-label="Close requirements" on:click=move |_| panel.close()>
                    "✕"
                </button>
            </header>
            {move || panel.error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <Suspense fallback=|| ()>{Suspend::new(requirement_list(list))}</Suspense>
        </section>
    }
}

/// What the panel's list is drawn from; its signals belong to the panel, which outlives the list's loading.
#[derive(Clone, Copy)]
struct RequirementList {
    thread: Uuid,
    ledger: Signal<Option<Ledger>>,
    /// The keys of the requirements, in order; `None` until the ledger is read.
    keys: Memo<Option<Vec<String>>>,
    /// The requirement brought into view a moment ago.
    spotlit: RwSignal<Option<String>>,
    busy: Signal<bool>,
    panel: LedgerPanel,
    actions: LedgerActions,
}

/// The panel's content: the requirements no document covers with "Generate document", then every requirement.
/// Loaded when the panel first opens (split out of the main wasm bundle in release builds).
#[lazy]
fn requirement_list(list: RequirementList) -> AnyView {
    let RequirementList { thread, ledger, keys, spotlit, busy, panel, actions } = list;
    let uncovered = move || ledger.with(|l| l.as_ref().map(|l| l.uncovered.clone()).unwrap_or_default());
    let generate = move |_| actions.generate.run(uncovered());
    view! {
        {move || match keys.get() {
            None => view! { <p class="muted" role="status">"Loading…"</p> }.into_any(),
            Some(keys) if keys.is_empty() => view! {
                <p class="muted requirements-empty">
                    "No requirements yet. Say what the product must do, and each requirement is listed here."
                </p>
            }
            .into_any(),
            Some(_) => ().into_any(),
        }}
        // A cited requirement this branch's ledger does not hold.
        {move || {
            let elsewhere = |key: &String| keys.with(|ks| ks.as_ref().is_some_and(|ks| !ks.contains(key)));
            panel.note.with(|n| n.as_ref().filter(|(k, _)| elsewhere(k)).map(|(_, text)| text.clone())).map(|text| view! {
                <p class="requirement-note" role="status" data-testid="requirement-elsewhere">{text}</p>
            })
        }}
        {move || (!uncovered().is_empty()).then(|| view! {
            <div class="uncovered-note">
                <p>{move || format!("Not covered by any document: {}.", uncovered().join(", "))}</p>
                {move || crate::state::access().get().writes().then(|| view! {
                    <button type="button" class="primary" disabled=move || busy.get() on:click=generate>
                        "Generate document"
                    </button>
                })}
            </div>
        })}
        <ul class="requirement-list">
            <For each=move || keys.get().unwrap_or_default() key=|k| k.clone() let:key>
                <RequirementEntry thread key ledger panel actions spotlit/>
            </For>
        </ul>
        {move || keys.with(|k| k.as_ref().is_some_and(|k| !k.is_empty())).then(|| view! {
            <div class="requirements-exports" role="group" aria-label="Export requirements">
                {[
                    ("requirements", "csv", "Requirements (CSV)"),
                    ("requirements", "md", "Requirements (Markdown)"),
                    ("traceability", "csv", "Traceability (CSV)"),
                    ("traceability", "md", "Traceability (Markdown)"),
                ]
                    .into_iter()
                    .map(|(table, format, label)| view! {
                        <a class="button" href=client::requirements_export_url(thread, table, format) download>{label}</a>
                    })
                    .collect_view()}
            </div>
        })}
    }
    .into_any()
}

/// One requirement: its key, kind, status and text, the documents covering it, Edit and Drop (or Restore), and its
/// history.
#[component]
fn RequirementEntry(
    thread: Uuid,
    key: String,
    ledger: Signal<Option<Ledger>>,
    panel: LedgerPanel,
    actions: LedgerActions,
    spotlit: RwSignal<Option<String>>,
) -> impl IntoView {
    let key = StoredValue::new(key);
    let requirement = Memo::new(move |_| {
        let key = key.get_value();
        ledger.with(|l| l.as_ref().and_then(|l| l.requirements.iter().find(|r| r.key == key).cloned()))
    });
    let uncovered =
        Memo::new(move |_| ledger.with(|l| l.as_ref().is_some_and(|l| l.uncovered.contains(&key.get_value()))));
    let status = Memo::new(move |_| requirement.with(|r| r.as_ref().map_or(RequirementStatus::Active, |r| r.status)));
    let editing = RwSignal::new(false);
    let working = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let change = move |body: UpdateRequirement, then_focus: &'static str| {
        working.set(true);
        error.set(None);
        let key = key.get_value();
        spawn_local(async move {
            match client::update_requirement(thread, &key, &body).await {
                Ok(requirement) => {
                    editing.try_set(false);
                    actions.changed.run(requirement);
                    focus_by_selector(format!("#{REQUIREMENTS_PANEL_ID} button[aria-label=\"{then_focus} {key}\"]"));
                }
                Err(e) => {
                    error.try_set(Some(e.message));
                }
            }
            working.try_set(false);
        });
    };
    let drop_or_restore = move |_| {
        let (status, then) = if status.get_untracked().in_force() {
            (RequirementStatus::Dropped, "Restore")
        } else {
            (RequirementStatus::Active, "Drop")
        };
        change(UpdateRequirement { text: None, status: Some(status) }, then);
    };
    let save = Callback::new(move |text: String| change(UpdateRequirement { text: Some(text), status: None }, "Edit"));
    let cancel = Callback::new(move |_| {
        editing.set(false);
        error.set(None);
        focus_by_selector(format!("#{REQUIREMENTS_PANEL_ID} button[aria-label=\"Edit {}\"]", key.get_value()));
    });
    let k = key.get_value();
    view! {
        <li
            class="requirement"
            class:dropped=move || !status.get().in_force()
            class:uncovered=move || uncovered.get()
            class:spotlit=move || spotlit.with(|s| s.as_deref() == Some(k.as_str()))
            data-testid="requirement"
            data-key=key.get_value()
            data-status=move || status.get().as_str()
            tabindex="-1"
        >
            {move || requirement.get().map(|r| view! { <RequirementSummary requirement=r uncovered=uncovered.get() actions/> })}
            {move || if editing.get() {
                let text = requirement.with_untracked(|r| r.as_ref().map(|r| r.text.clone()).unwrap_or_default());
                view! { <RequirementEditor key=key.get_value() text working on_save=save on_cancel=cancel/> }.into_any()
            } else if !crate::state::access().get().writes() {
                ().into_any()
            } else {
                let name = key.get_value();
                view! {
                    <div class="requirement-actions">
                        <button type="button" aria-label=format!("Edit {name}")
                            disabled=move || working.get() || !status.get().in_force()
                            on:click=move |_| {
                                error.set(None);
                                editing.set(true);
                            }>"Edit"</button>
                        <button type="button" aria-label=move || format!("{} {name}", if status.get().in_force() { "Drop" } else { "Restore" })
                            disabled=move || working.get() on:click=drop_or_restore>
                            {move || if status.get().in_force() { "Drop" } else { "Restore" }}
                        </button>
                    </div>
                }
                .into_any()
            }}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <p class="requirement-note" role="status">
                {move || panel.note.with(|n| n.as_ref().filter(|(k, _)| *k == key.get_value()).map(|(_, text)| text.clone()))}
            </p>
            {move || requirement.get().map(|r| view! { <RequirementHistory history=r.history/> })}
        </li>
    }
}

/// A requirement as it stands: key, kind, status, whether anything covers it, its text and the documents that do.
#[component]
fn RequirementSummary(requirement: Requirement, uncovered: bool, actions: LedgerActions) -> impl IntoView {
    let Requirement { key, text, kind, status, covered_by, .. } = requirement;
    let status_label = match status {
        RequirementStatus::Active => None,
        RequirementStatus::Changed => Some("Changed"),
        RequirementStatus::Dropped => Some("Dropped"),
    };
    view! {
        <div class="requirement-head">
            <span class="requirement-key">{key}</span>
            <span class="requirement-kind">{kind.label()}</span>
            {status_label.map(|label| view! {
                <span class="requirement-status" data-status=status.as_str()>{label}</span>
            })}
            {uncovered.then(|| view! { <span class="uncovered-badge" data-testid="uncovered">"Not covered"</span> })}
        </div>
        <p class="requirement-text">{text}</p>
        {(!covered_by.is_empty()).then(|| view! {
            <div class="requirement-coverage">
                <span class="coverage-label">"Covered by"</span>
                <ul>
                    {covered_by.into_iter().map(|c| {
                        let document = c.artifact_id;
                        let name = format!("{} (v{})", c.title, c.version);
                        // Another conversation's document of the project: a link to that conversation.
                        let opener = match c.conversation {
                            Some(conversation) => view! {
                                <a class="coverage-link" data-testid="coverage-elsewhere"
                                    href=format!("/c/{}", conversation.thread_id)>
                                    {format!("{name} in “{}”", conversation.title)}
                                </a>
                            }.into_any(),
                            None => view! {
                                <button type="button" class="link-button coverage-link"
                                    on:click=move |_| actions.open_document.run(document)>
                                    {name}
                                </button>
                            }.into_any(),
                        };
                        view! {
                            <li>
                                {opener}
                                {(!c.current).then(|| view! { <span class="coverage-stale">"out of date"</span> })}
                            </li>
                        }
                    }).collect_view()}
                </ul>
            </div>
        })}
    }
}

/// The text box that changes a requirement's text: Save (or Enter) keeps it, Cancel (or Escape) leaves it.
#[component]
fn RequirementEditor(
    key: String,
    text: String,
    working: RwSignal<bool>,
    on_save: Callback<String>,
    on_cancel: Callback<()>,
) -> impl IntoView {
    let original = text.clone();
    let text = RwSignal::new(text);
    let node = NodeRef::<leptos::html::Textarea>::new();
    Effect::new(move |_| {
        if let Some(area) = node.get() {
            request_animation_frame(move || {
                let _ = area.focus();
                let end = area.value().len() as u32;
                let _ = area.set_selection_range(end, end);
            });
        }
    });
    let unchanged = move || text.with(|t| t.trim().is_empty() || t.trim() == original.trim());
    let save = move || {
        let value = text.get_untracked().trim().to_string();
        if !value.is_empty() {
            on_save.run(value);
        }
    };
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| match ev.key().as_str() {
        "Enter" if !ev.shift_key() && !ev.is_composing() => {
            ev.prevent_default();
            save();
        }
        "Escape" => {
            // Leaves the editor only, not the panel.
            ev.stop_propagation();
            on_cancel.run(());
        }
        _ => {}
    };
    let field = format!("requirement-text-{key}");
    view! {
        <form class="requirement-edit" on:submit=move |ev| {
            ev.prevent_default();
            save();
        }>
            <label for=field.clone()>"Requirement text"</label>
            <textarea id=field rows="3" maxlength=MAX_REQUIREMENT_CHARS.to_string() node_ref=node
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))
                on:keydown=on_keydown></textarea>
            <div class="editor-actions">
                <button type="button" on:click=move |_| on_cancel.run(())>"Cancel"</button>
                <button type="submit" class="primary" disabled=move || working.get() || unchanged()>"Save"</button>
            </div>
        </form>
    }
}

/// One step of a requirement's history as the panel tells it.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryLine {
    /// "Added by you", "Changed from a message"...
    pub what: String,
    pub at: String,
    pub text: String,
    /// The text before, when this step changed it.
    pub before: Option<String>,
}

/// What each step of `history` did and who did it: a person by hand, or the assistant from a message.
pub fn history_lines(history: &[RequirementChange]) -> Vec<HistoryLine> {
    history
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let previous = i.checked_sub(1).map(|p| &history[p]);
            let did = match previous {
                None => "Added",
                Some(p) if p.status.in_force() && !step.status.in_force() => "Dropped",
                Some(p) if !p.status.in_force() && step.status.in_force() => "Restored",
                Some(_) => "Changed",
            };
            let who = match step.author {
                VersionAuthor::Person { .. } => "by you",
                VersionAuthor::Assistant { .. } => "from a message",
            };
            HistoryLine {
                what: format!("{did} {who}"),
                at: moment(step.at),
                text: step.text.clone(),
                before: step.before.clone().filter(|before| *before != step.text),
            }
        })
        .collect()
}

/// A requirement's history, folded under "History".
#[component]
fn RequirementHistory(history: Vec<RequirementChange>) -> impl IntoView {
    let lines = history_lines(&history);
    view! {
        <details class="requirement-history">
            <summary>"History"</summary>
            <ol>
                {lines.into_iter().map(|line| view! {
                    <li>
                        <span class="history-what">{line.what}</span>
                        " "
                        <span class="history-at">{line.at}</span>
                        <span class="history-text">{line.text}</span>
                        {line.before.map(|before| view! {
                            <span class="history-before">{format!("Before: {before}")}</span>
                        })}
                    </li>
                }).collect_view()}
            </ol>
        </details>
    }
}

/// Focuses the element `selector` finds once the page has drawn the latest change.
fn focus_by_selector(selector: String) {
    use wasm_bindgen::JsCast;
    request_animation_frame(move || {
        let page = web_sys::window().and_then(|w| w.document());
        let element = page.and_then(|d| d.query_selector(&selector).ok().flatten());
        if let Some(element) = element.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
            let _ = element.focus();
        }
    });
}

/// Scrolls the element `selector` finds into view within the panel and focuses it.
fn reveal(selector: &str) {
    use wasm_bindgen::JsCast;
    let page = web_sys::window().and_then(|w| w.document());
    let element = page.and_then(|d| d.query_selector(selector).ok().flatten());
    if let Some(element) = element.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Nearest);
        element.scroll_into_view_with_scroll_into_view_options(&options);
        let _ = element.focus();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RequirementKind;

    fn step(text: &str, before: Option<&str>, status: RequirementStatus, person: bool) -> RequirementChange {
        RequirementChange {
            revision: 1,
            text: text.into(),
            before: before.map(Into::into),
            kind: RequirementKind::Functional,
            status,
            message_id: None,
            author: if person {
                VersionAuthor::Person { user_id: Uuid::nil() }
            } else {
                VersionAuthor::Assistant { model: None }
            },
            at: Default::default(),
        }
    }

    #[test]
    fn the_history_says_what_each_step_did_and_who_did_it() {
        let history = vec![
            step("Book 30-minute slots.", None, RequirementStatus::Active, false),
            step("Book 45-minute slots.", Some("Book 30-minute slots."), RequirementStatus::Changed, false),
            step("Book 60-minute slots.", Some("Book 45-minute slots."), RequirementStatus::Changed, true),
            step("Book 60-minute slots.", Some("Book 60-minute slots."), RequirementStatus::Dropped, true),
            step("Book 60-minute slots.", None, RequirementStatus::Changed, true),
        ];
        let lines = history_lines(&history);
        let what: Vec<&str> = lines.iter().map(|l| l.what.as_str()).collect();
        assert_eq!(
            what,
            ["Added from a message", "Changed from a message", "Changed by you", "Dropped by you", "Restored by you"]
        );
        assert_eq!(lines[2].before.as_deref(), Some("Book 45-minute slots."));
        assert_eq!(lines[3].before, None, "a drop keeps the text");
        assert_eq!(lines[0].text, "Book 30-minute slots.");
    }

    #[test]
    fn the_toggle_counts_the_requirements_in_force() {
        let requirement = |key: &str, status| Requirement {
            key: key.into(),
            text: String::new(),
            kind: RequirementKind::Functional,
            status,
            sources: Vec::new(),
            history: Vec::new(),
            covered_by: Vec::new(),
        };
        let ledger = Ledger {
            requirements: vec![
                requirement("R-1", RequirementStatus::Changed),
                requirement("R-2", RequirementStatus::Dropped),
                requirement("R-3", RequirementStatus::Active),
            ],
            uncovered: Vec::new(),
            elsewhere: Vec::new(),
        };
        assert_eq!(in_force(&Some(ledger)), 2);
        assert_eq!(in_force(&None), 0);
    }
}
