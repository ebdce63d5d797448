//! `/projects/:id`: a team project. Its members read its conversations; owners rename, describe, archive and
//! delete it and manage who is in it with which role; anyone may leave. The activity log says who did what.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_params_map};
use uuid::Uuid;

use crate::api::{
    project_calls as calls, ActivityKind, ConversationLedger, MemberList, Project, ProjectActivity, ProjectInvitation,
    ProjectMember, ProjectRole, TagCount, Thread, UpdateProject,
};
use crate::components::form_note::{form_note, submit_noted};
use crate::components::modal::ModalDialog;
use crate::format::moment;
use crate::state::{CurrentUser, ProjectsChanged};

/// The page's note: done (a status) or refused (an alert).
type Note = RwSignal<Option<(bool, String)>>;

/// Everything the page shows, loaded together.
#[derive(Clone, Debug, PartialEq)]
struct Loaded {
    project: Project,
    members: MemberList,
    threads: Vec<Thread>,
    activity: Vec<ProjectActivity>,
    requirements: Vec<ConversationLedger>,
    tags: Vec<TagCount>,
}

async fn load(id: Uuid) -> Result<Loaded, crate::api::client::ApiError> {
    Ok(Loaded {
        project: calls::project(id).await?,
        members: calls::members(id).await?,
        threads: calls::threads(id).await?.threads,
        activity: calls::activity(id).await?.entries,
        requirements: calls::requirements(id).await?.conversations,
        tags: calls::tags(id).await?.tags,
    })
}

/// A role as people read it.
fn role_name(role: ProjectRole) -> &'static str {
    match role {
        ProjectRole::Owner => "Owner",
        ProjectRole::Editor => "Editor",
        ProjectRole::Viewer => "Viewer",
    }
}

/// An entry of the activity log as a sentence.
fn sentence(entry: &ProjectActivity) -> String {
    let who = entry.actor.clone().unwrap_or_else(|| "A deleted account".to_string());
    let what = entry.subject.clone().unwrap_or_default();
    let role = entry.role.map(|r| role_name(r).to_lowercase()).unwrap_or_default();
    match entry.kind {
        ActivityKind::ProjectCreated => format!("{who} created the project “{what}”"),
        ActivityKind::ProjectChanged => format!("{who} changed the project (now “{what}”)"),
        ActivityKind::MemberAdded => format!("{who} added {what} as {role}"),
        ActivityKind::MemberRemoved => format!("{who} removed {what}"),
        ActivityKind::MemberLeft => format!("{who} left the project"),
        ActivityKind::RoleChanged => format!("{who} made {what} {role}"),
        ActivityKind::ConversationMovedIn => format!("{who} moved “{what}” into the project"),
        ActivityKind::ConversationMovedOut => format!("{who} took “{what}” out of the project"),
        ActivityKind::DocumentEdited => format!("{who} edited {what}"),
        ActivityKind::RequirementsChanged => format!("{who} changed requirements in {what}"),
        ActivityKind::MemberInvited => format!("{who} invited {what} as {role}"),
        ActivityKind::InvitationCancelled => format!("{who} took back the invitation of {what}"),
        ActivityKind::MemberJoined => format!("{what} joined as {role}, invited by {who}"),
    }
}

/// The project page.
#[component]
pub fn ProjectPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.with(|p| p.get("id").and_then(|id| id.parse::<Uuid>().ok()));
    let loaded = RwSignal::new(None::<Loaded>);
    let missing = RwSignal::new(false);
    let note: Note = RwSignal::new(None);
    let reload = RwSignal::new(0u32);
    let changed = expect_context::<ProjectsChanged>();
    Effect::new(move |_| {
        reload.track();
        let Some(id) = id() else { return missing.set(true) };
        spawn_local(async move {
            match load(id).await {
                Ok(page) => {
                    missing.set(false);
                    loaded.set(Some(page));
                }
                Err(e) if e.status == 404 => missing.set(true),
                Err(e) => note.set(Some((false, e.message))),
            }
        });
    });
    // After a change: the page again, and the sidebar's lists.
    let refresh = Callback::new(move |()| {
        reload.update(|n| *n += 1);
        changed.notify();
    });

    view! {
        <section class="page project-page" aria-labelledby="project-heading">
            <Show when=move || !missing.get() fallback=|| view! {
                <h1 id="project-heading">"Project"</h1>
                <p class="empty">"Project not found. It may have been deleted, or you are no longer a member."</p>
            }>
                {move || loaded.get().map(|page| view! { <ProjectView page note refresh/> })}
            </Show>
        </section>
    }
}

#[component]
fn ProjectView(page: Loaded, note: Note, refresh: Callback<()>) -> impl IntoView {
    let Loaded { project, members, threads, activity, requirements, tags } = page;
    let owner = project.role == ProjectRole::Owner;
    let description = (!project.description.is_empty()).then(|| project.description.clone());
    view! {
        <h1 id="project-heading">{project.name.clone()}
            {project.archived.then(|| view! { <span class="role-badge">"archived"</span> })}
        </h1>
        {description.map(|d| view! { <p class="project-description">{d}</p> })}
        {(!owner && !project.instructions.is_empty()).then(|| view! {
            <details class="project-instructions">
                <summary>"Instructions for the assistant"</summary>
                <p class="project-description">{project.instructions.clone()}</p>
            </details>
        })}
        <p class="hint">{format!("You are {} here.", match project.role {
            ProjectRole::Owner => "an owner: you manage its members",
            ProjectRole::Editor => "an editor",
            ProjectRole::Viewer => "a viewer: you read its conversations",
        })}</p>
        <p class="project-links">
            <a class="button" href=format!("/stats?project={}", project.id)>"Project stats"</a>
            <a class="button" href=format!("/api/projects/{}/export", project.id) download>"Export project (JSON)"</a>
        </p>
        // A plain form: it searches before the page is alive too.
        <form class="project-search" role="search" aria-label="Search the project" method="get" action="/search">
            <input type="hidden" name="project" value=project.id.to_string()/>
            <input type="search" name="q" aria-label="Search the project's conversations" required
                placeholder="Search the project's conversations"/>
            <button type="submit">"Search"</button>
        </form>
        {form_note(note)}
        <section aria-labelledby="project-threads-heading">
            <h2 id="project-threads-heading">"Conversations"</h2>
            {threads.is_empty().then(|| view! {
                <p class="empty">"No conversations yet. Move one here with “Move to project…” in its menu."</p>
            })}
            <ul class="project-threads" data-testid="project-threads">
                {threads.into_iter().map(|t| {
                    let (id, title) = (t.id, t.title.clone());
                    // An owner takes any conversation out of the project: it stays its author's.
                    let take_out = move |_| {
                        let title = title.clone();
                        spawn_local(async move {
                            match calls::move_thread(id, None).await {
                                Ok(_) => {
                                    note.set(Some((true, format!("“{title}” was taken out of the project."))));
                                    refresh.run(());
                                }
                                Err(e) => note.set(Some((false, e.message))),
                            }
                        });
                    };
                    let label = format!("Take “{}” out of the project", t.title);
                    view! {
                        <li><a href=format!("/c/{}", t.id)>{t.title}</a>
                            <span class="hint">{format!(" · {}", moment(t.updated_at))}</span>
                            {owner.then(|| view! {
                                <button type="button" class="link-button" aria-label=label on:click=take_out>
                                    "Take out"
                                </button>
                            })}
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
        <ProjectTags tags/>
        <ProjectRequirements conversations=requirements/>
        <Members project=project.id members=members.members invitations=members.invitations owner note refresh/>
        {owner.then(|| view! { <Settings project=project.clone() note refresh/> })}
        <section aria-labelledby="project-activity-heading">
            <h2 id="project-activity-heading">"Activity"</h2>
            <ol class="activity-log" data-testid="activity-log">
                {activity.into_iter().map(|entry| view! {
                    <li>{sentence(&entry)}<span class="hint">{format!(" · {}", moment(entry.at))}</span></li>
                }).collect_view()}
            </ol>
        </section>
    }
}

/// The members: each with their role (a choice for owners) and Remove; Leave for oneself; Add for owners.
#[component]
fn Members(
    project: Uuid,
    members: Vec<ProjectMember>,
    invitations: Vec<ProjectInvitation>,
    owner: bool,
    note: Note,
    refresh: Callback<()>,
) -> impl IntoView {
    let me = expect_context::<CurrentUser>().0.get_untracked().map(|u| u.id);
    let navigate = use_navigate();
    let rows = members
        .into_iter()
        .map(|m| {
            let (user_id, email) = (m.user_id, m.email.clone());
            let myself = Some(user_id) == me;
            let change = move |ev: leptos::ev::Event| {
                let Some(role) = ProjectRole::parse(&event_target_value(&ev)) else { return };
                spawn_local(async move {
                    match calls::change_role(project, user_id, role).await {
                        Ok(m) => {
                            note.set(Some((true, format!("{} is now {}.", m.email, role_name(role).to_lowercase()))));
                            refresh.run(());
                        }
                        Err(e) => {
                            note.set(Some((false, e.message)));
                            refresh.run(());
                        }
                    }
                });
            };
            let navigate = navigate.clone();
            let remove = move |_| {
                let navigate = navigate.clone();
                let email = email.clone();
                spawn_local(async move {
                    match calls::remove_member(project, user_id).await {
                        Ok(()) if myself => {
                            refresh.run(());
                            navigate("/", Default::default());
                        }
                        Ok(()) => {
                            note.set(Some((true, format!("{email} was removed."))));
                            refresh.run(());
                        }
                        Err(e) => note.set(Some((false, e.message))),
                    }
                });
            };
            let name =
                if m.display_name.is_empty() { m.email.clone() } else { format!("{} ({})", m.display_name, m.email) };
            let role_label = format!("Role of {}", m.email);
            let remove_label = if myself { "Leave project".to_string() } else { format!("Remove {}", m.email) };
            view! {
                <li class="member" data-testid="project-member">
                    <span class="member-name">{name}</span>
                    {if owner {
                        view! {
                            <select aria-label=role_label prop:value=m.role.as_str() on:change=change>
                                {ProjectRole::ALL.into_iter().map(|r| view! {
                                    <option value=r.as_str() selected=r == m.role>{role_name(r)}</option>
                                }).collect_view()}
                            </select>
                        }.into_any()
                    } else {
                        view! { <span class="role-badge">{role_name(m.role)}</span> }.into_any()
                    }}
                    {(owner || myself).then(|| view! {
                        <button type="button" class="danger" on:click=remove>{remove_label}</button>
                    })}
                </li>
            }
        })
        .collect_view();
    let invited = invitations
        .into_iter()
        .map(|i| {
            let (id, email) = (i.id, i.email.clone());
            let cancel = move |_| {
                let email = email.clone();
                spawn_local(async move {
                    match calls::cancel_invitation(project, id).await {
                        Ok(()) => note.set(Some((true, format!("The invitation of {email} was taken back.")))),
                        Err(e) => note.set(Some((false, e.message))),
                    }
                    refresh.run(());
                });
            };
            view! {
                <li class="member invited" data-testid="project-invitation">
                    <span class="member-name">{i.email.clone()}</span>
                    <span class="role-badge">{format!("invited as {}", role_name(i.role).to_lowercase())}</span>
                    {owner.then(|| view! {
                        <button type="button" on:click=cancel>{format!("Take back the invitation of {}", i.email)}</button>
                    })}
                </li>
            }
        })
        .collect_view();
    view! {
        <section aria-labelledby="project-members-heading">
            <h2 id="project-members-heading">"Members"</h2>
            <ul class="member-list">{rows}{invited}</ul>
            {owner.then(|| view! { <AddMember project note refresh/> })}
        </section>
    }
}

/// Adds an account by its e-mail address, with a role.
#[component]
fn AddMember(project: Uuid, note: Note, refresh: Callback<()>) -> impl IntoView {
    let email = RwSignal::new(String::new());
    let role = RwSignal::new(ProjectRole::Editor);
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let request = calls::add_member(project, email.get_untracked().trim().to_string(), role.get_untracked());
        submit_noted(busy, note, request, move |added| {
            email.set(String::new());
            refresh.run(());
            match added {
                calls::Added::Member(m) => format!("{} was added as {}.", m.email, role_name(m.role).to_lowercase()),
                calls::Added::Invited(i) => format!(
                    "No account has {} yet: they are invited as {} and join when they sign up with this address.",
                    i.email,
                    role_name(i.role).to_lowercase()
                ),
            }
        });
    };
    view! {
        <form class="add-member" aria-label="Add member" on:submit=submit>
            <label for="member-email">"E-mail"</label>
            <input id="member-email" type="email" required autocomplete="off" prop:value=move || email.get()
                on:input=move |ev| email.set(event_target_value(&ev))/>
            <label for="member-role">"Role"</label>
            <select id="member-role" prop:value=move || role.get().as_str()
                on:change=move |ev| role.set(ProjectRole::parse(&event_target_value(&ev)).unwrap_or(ProjectRole::Viewer))>
                {ProjectRole::ALL.into_iter().map(|r| view! { <option value=r.as_str()>{role_name(r)}</option> }).collect_view()}
            </select>
            <button type="submit" class="primary" disabled=move || busy.get()>"Add member"</button>
        </form>
    }
}

/// Owners: rename and describe, archive or bring back, delete.
#[component]
fn Settings(project: Project, note: Note, refresh: Callback<()>) -> impl IntoView {
    let id = project.id;
    let name = RwSignal::new(project.name.clone());
    let description = RwSignal::new(project.description.clone());
    let instructions = RwSignal::new(project.instructions.clone());
    let busy = RwSignal::new(false);
    let deleting = RwSignal::new(false);
    let navigate = use_navigate();
    let changed = expect_context::<ProjectsChanged>();
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = UpdateProject {
            name: Some(name.get_untracked()),
            description: Some(description.get_untracked()),
            instructions: Some(instructions.get_untracked()),
            archived: None,
        };
        submit_noted(busy, note, calls::update(id, body), move |_| {
            refresh.run(());
            "Project saved.".to_string()
        });
    };
    let archived = project.archived;
    let archive = move |_| {
        let body = UpdateProject { archived: Some(!archived), ..Default::default() };
        submit_noted(busy, note, calls::update(id, body), move |_| {
            refresh.run(());
            if archived { "Project brought back." } else { "Project archived." }.to_string()
        });
    };
    let delete = Callback::new(move |()| {
        let navigate = navigate.clone();
        spawn_local(async move {
            match calls::delete(id).await {
                Ok(()) => {
                    changed.notify();
                    navigate("/", Default::default());
                }
                Err(e) => {
                    deleting.set(false);
                    note.set(Some((false, e.message)));
                }
            }
        });
    });
    let cancel = Callback::new(move |()| deleting.set(false));
    view! {
        <section aria-labelledby="project-settings-heading">
            <h2 id="project-settings-heading">"Settings"</h2>
            <form class="project-settings" aria-label="Project settings" on:submit=save>
                <label for="project-name">"Name"</label>
                <input id="project-name" type="text" required maxlength="200" prop:value=move || name.get()
                    on:input=move |ev| name.set(event_target_value(&ev))/>
                <label for="project-description">"Description"</label>
                <textarea id="project-description" rows="3" maxlength="2000" prop:value=move || description.get()
                    on:input=move |ev| description.set(event_target_value(&ev))></textarea>
                <label for="project-instructions">"Instructions for the assistant"</label>
                <textarea id="project-instructions" rows="4" maxlength="4000" aria-describedby="project-instructions-hint"
                    prop:value=move || instructions.get() on:input=move |ev| instructions.set(event_target_value(&ev))></textarea>
                <p class="hint" id="project-instructions-hint">
                    "Given to the assistant in every conversation of the project, after Quire's own rules and before each person's instructions."
                </p>
                <button type="submit" class="primary" disabled=move || busy.get()>"Save"</button>
            </form>
            <div class="project-actions">
                <button type="button" on:click=archive disabled=move || busy.get()>
                    {if archived { "Bring back" } else { "Archive project" }}
                </button>
                <button type="button" class="danger" on:click=move |_| deleting.set(true)>"Delete project"</button>
            </div>
            <Show when=move || deleting.get()>
                <ModalDialog title="Delete project?" on_close=cancel>
                    <p>"The project, its members and its activity log go. Its conversations stay with the people who wrote them."</p>
                    <div class="modal-actions">
                        <button type="button" autofocus on:click=move |_| deleting.set(false)>"Cancel"</button>
                        <button type="button" class="danger" on:click=move |_| delete.run(())>"Delete"</button>
                    </div>
                </ModalDialog>
            </Show>
        </section>
    }
}

/// The tags of the project's conversations, whoever tagged them, most used first.
#[component]
fn ProjectTags(tags: Vec<TagCount>) -> impl IntoView {
    view! {
        <section aria-labelledby="project-tags-heading">
            <h2 id="project-tags-heading">"Tags"</h2>
            {if tags.is_empty() {
                view! { <p class="empty">"No tags yet: they are the tags of the project's conversations."</p> }.into_any()
            } else {
                view! {
                    <ul class="project-tags" data-testid="project-tags">
                        {tags.into_iter().map(|t| view! {
                            <li><span class="stat-tag">{t.tag}</span>" "<span class="count">{t.count}</span></li>
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
        </section>
    }
}

/// Every conversation's requirements together, each under the conversation it came from.
#[component]
fn ProjectRequirements(conversations: Vec<ConversationLedger>) -> impl IntoView {
    let in_force: usize =
        conversations.iter().map(|c| c.ledger.requirements.iter().filter(|r| r.status.in_force()).count()).sum();
    view! {
        <section aria-labelledby="project-requirements-heading" data-testid="project-requirements">
            <h2 id="project-requirements-heading">{format!("Requirements ({in_force} in force)")}</h2>
            {conversations.is_empty().then(|| view! {
                <p class="empty">"No requirements yet: they are kept as the project's conversations state them."</p>
            })}
            {conversations.into_iter().map(|c| {
                let uncovered = c.ledger.uncovered.clone();
                view! {
                    <h3><a href=format!("/c/{}", c.thread_id)>{c.title}</a></h3>
                    <ul class="project-ledger">
                        {c.ledger.requirements.into_iter().map(|r| {
                            let note = if !r.status.in_force() {
                                "dropped"
                            } else if uncovered.contains(&r.key) {
                                "not covered"
                            } else {
                                r.status.as_str()
                            };
                            view! {
                                <li class:dropped=!r.status.in_force()>
                                    <span class="requirement-key">{r.key}</span>" "
                                    <span class="requirement-text">{r.text}</span>" "
                                    <span class="role-badge">{note}</span>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }
            }).collect_view()}
        </section>
    }
}
