//! The person's projects in the sidebar, each a link to its page, and "New project".

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_location, use_navigate};

use crate::api::{project_calls, Project};
use crate::state::ProjectsChanged;

/// The projects section: the list (again whenever something changed) and a form that makes one.
#[component]
pub(super) fn ProjectList() -> impl IntoView {
    let changed = expect_context::<ProjectsChanged>();
    let location = use_location();
    let navigate = use_navigate();
    let projects = RwSignal::new(Vec::<Project>::new());
    let creating = RwSignal::new(false);
    let name = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);

    Effect::new(move |_| {
        changed.0.track();
        spawn_local(async move {
            match project_calls::projects().await {
                Ok(list) => projects.set(list.projects),
                Err(e) if e.status == 401 => projects.set(Vec::new()),
                Err(e) => error.set(Some(e.message)),
            }
        });
    });
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let navigate = navigate.clone();
        busy.set(true);
        spawn_local(async move {
            let result = project_calls::create(name.get_untracked(), String::new()).await;
            busy.set(false);
            match result {
                Ok(project) => {
                    name.set(String::new());
                    creating.set(false);
                    error.set(None);
                    changed.notify();
                    navigate(&format!("/projects/{}", project.id), Default::default());
                }
                Err(e) => error.set(Some(e.message)),
            }
        });
    };

    view! {
        <section class="project-section" aria-labelledby="project-list-title">
            <div class="list-head">
                <h2 class="list-title" id="project-list-title">"Projects"</h2>
                <button type="button" class="toggle" aria-expanded=move || creating.get().to_string()
                    on:click=move |_| creating.update(|c| *c = !*c)>
                    "New project"
                </button>
            </div>
            <Show when=move || creating.get()>
                <form class="new-project" aria-label="New project" on:submit=create.clone()>
                    <label class="visually-hidden" for="new-project-name">"Project name"</label>
                    <input id="new-project-name" type="text" required maxlength="200" placeholder="Project name"
                        autocomplete="off" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
                    <button type="submit" class="primary" disabled=move || busy.get()>"Create"</button>
                </form>
            </Show>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <ul class="project-list" aria-labelledby="project-list-title">
                <For each=move || projects.get() key=|p| (p.id, p.name.clone(), p.role, p.archived) let:project>
                    {
                        let href = format!("/projects/{}", project.id);
                        let here = href.clone();
                        let current = move || (location.pathname.get() == here).then_some("page");
                        view! {
                            <li class="project-item" class:archived=project.archived data-testid="project-item">
                                <a href=href class="project-link" aria-current=current>{project.name.clone()}</a>
                                <span class="role-badge">{project.role.as_str()}</span>
                            </li>
                        }
                    }
                </For>
            </ul>
        </section>
    }
}
