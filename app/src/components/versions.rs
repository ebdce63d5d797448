//! A document's versions in its viewer: the list, the changes between any two, and bringing one back as the
//! newest version. Only the viewer, which is loaded on first use, shows it.

use leptos::prelude::*;
use leptos::task::spawn_local;
use uuid::Uuid;

use crate::api::{client, Artifact, ArtifactVersion, VersionAuthor, VersionDiff};
use crate::components::diff_view::diff_lines;
use crate::format::moment;

/// The versions of document `artifact`, whose current version is `current`.
#[component]
pub fn VersionList(artifact: Uuid, current: i64, on_restored: Callback<Artifact>) -> impl IntoView {
    let versions = RwSignal::new(None::<Result<Vec<ArtifactVersion>, String>>);
    let from = RwSignal::new((current - 1).max(1));
    let to = RwSignal::new(current);
    let restoring = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    spawn_local(async move {
        let result = client::artifact_versions(artifact).await.map(|list| list.versions).map_err(|e| e.message);
        versions.try_set(Some(result));
    });
    let restore = move |version: i64| {
        restoring.set(true);
        error.set(None);
        spawn_local(async move {
            match client::restore_version(artifact, version).await {
                Ok(document) => on_restored.run(document),
                Err(e) => {
                    error.try_set(Some(e.message));
                }
            }
            restoring.try_set(false);
        });
    };
    let list = move || match versions.get() {
        None => view! { <p class="list-status" role="status">"Loading versions…"</p> }.into_any(),
        Some(Err(message)) => view! { <p class="error" role="alert">{message}</p> }.into_any(),
        Some(Ok(list)) => {
            let several = list.len() > 1;
            let numbers: Vec<i64> = list.iter().map(|v| v.version).collect();
            view! {
                <ol class="version-list" data-testid="version-list">
                    {list.into_iter().map(|v| view! { <VersionEntry version=v current restoring on_restore=restore/> }).collect_view()}
                </ol>
                {several.then(|| view! { <VersionCompare artifact numbers from to/> })}
            }
            .into_any()
        }
    };
    view! {
        <section class="versions" aria-labelledby="versions-title">
            <h3 id="versions-title">"Versions"</h3>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            {list}
        </section>
    }
}

/// Who wrote a version and why, as the list says it: "Edited by you", or the assistant with its model and the
/// request it answered ("Revised by the assistant (model) for: 'slots should be 45 minutes'").
pub(crate) fn written_by(version: &ArtifactVersion) -> String {
    match &version.author {
        VersionAuthor::Person { user_id } => {
            let me = use_context::<crate::state::CurrentUser>().and_then(|u| u.0.get_untracked()).map(|u| u.id);
            match (&version.author_name, me == Some(*user_id)) {
                (_, true) => "Edited by you".to_string(),
                (Some(name), false) => format!("Edited by {name}"),
                (None, false) => "Edited by a former member".to_string(),
            }
        }
        VersionAuthor::Assistant { model } => {
            let verb = if version.version == 1 { "Written" } else { "Revised" };
            let by = match model {
                Some(model) => format!("{verb} by the assistant ({model})"),
                None => format!("{verb} by the assistant"),
            };
            match version.request.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                Some(request) => format!("{by} for: '{request}'"),
                None => by,
            }
        }
    }
}

/// One version: its number, date, title and author, and "Restore" unless it is the current one.
#[component]
fn VersionEntry(
    version: ArtifactVersion,
    current: i64,
    restoring: RwSignal<bool>,
    #[prop(into)] on_restore: Callback<i64>,
) -> impl IntoView {
    let number = version.version;
    let author = written_by(&version);
    view! {
        <li class="version-entry">
            <span class="version-number">{format!("Version {number}")}</span>
            <span class="version-title">{version.title}</span>
            <span class="version-author">{author}</span>
            <time class="version-date">{moment(version.created_at)}</time>
            {if number == current {
                view! { <span class="version-current">"Current"</span> }.into_any()
            } else if !crate::state::access().get_untracked().writes() {
                ().into_any()
            } else {
                view! {
                    <button type="button" disabled=move || restoring.get() on:click=move |_| on_restore.run(number)>
                        {format!("Restore version {number}")}
                    </button>
                }
                .into_any()
            }}
        </li>
    }
}

/// Two pickers and the line changes between the versions they name (computed by the server).
#[component]
fn VersionCompare(artifact: Uuid, numbers: Vec<i64>, from: RwSignal<i64>, to: RwSignal<i64>) -> impl IntoView {
    let diff = RwSignal::new(None::<Result<VersionDiff, String>>);
    Effect::new(move |_| {
        let (a, b) = (from.get(), to.get());
        spawn_local(async move {
            let result = client::version_diff(artifact, a, b).await.map_err(|e| e.message);
            // Only the latest pair's answer is shown.
            if from.try_get_untracked() == Some(a) && to.try_get_untracked() == Some(b) {
                diff.try_set(Some(result));
            }
        });
    });
    let options = move |chosen: RwSignal<i64>| {
        numbers
            .iter()
            .map(|&n| view! { <option value=n.to_string() selected=move || chosen.get() == n>{format!("Version {n}")}</option> })
            .collect_view()
    };
    let pick = |signal: RwSignal<i64>| {
        move |ev| {
            if let Ok(n) = event_target_value(&ev).parse() {
                signal.set(n)
            }
        }
    };
    view! {
        <div class="version-compare">
            <span aria-hidden="true">"From"</span>
            <select aria-label="Compare from version" on:change=pick(from)>{options(from)}</select>
            <span aria-hidden="true">"to"</span>
            <select aria-label="Compare to version" on:change=pick(to)>{options(to)}</select>
        </div>
        <div class="version-diff" data-testid="version-diff" role="region"
            aria-label=move || format!("Changes from version {} to version {}", from.get(), to.get())>
            {move || match diff.get() {
                None => view! { <p class="list-status">"Comparing…"</p> }.into_any(),
                Some(Err(message)) => view! { <p class="error" role="alert">{message}</p> }.into_any(),
                Some(Ok(d)) => diff_lines(d.lines, "These versions are the same."),
            }}
        </div>
    }
}
