//! `/admin`: operator control for administrators (accounts with their usage, API tokens and actions,
//! invitations, the sign-up mode), and `/reset-password`, where a reset link an administrator made sets a new password.

use std::future::Future;
use std::pin::Pin;

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_query_map;

use crate::api::admin::{
    AdminAccount, AdminProject, CreateInviteRequest, InviteInfo, ResetPasswordRequest, SignUpMode,
};
use crate::api::admin_calls as calls;
use crate::api::client::ApiError;
use crate::api::forms::{FormOutcome, RESET_PASSWORD_ACTION};
use crate::api::from_fragment;
use crate::api::ApiTokenInfo;
use crate::components::form_note::{form_note, submit_noted};
use crate::components::new_password::NewPassword;
use crate::format::moment;

/// A path of Quire made into an address to pass on.
fn full_link(path: &str) -> String {
    let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
    format!("{origin}{path}")
}

/// The page's note: done (a status) or refused (an alert).
type Note = RwSignal<Option<(bool, String)>>;

/// Makes a call in the background: its answer goes to `done`, a refusal's message to the note.
fn noted<T: 'static>(
    note: Note,
    call: impl Future<Output = Result<T, ApiError>> + 'static,
    done: impl FnOnce(T) + 'static,
) {
    spawn_local(async move {
        match call.await {
            Ok(answer) => done(answer),
            Err(e) => note.set(Some((false, e.message))),
        }
    });
}

/// The admin page. To someone who is not an administrator the server answers 404, and so does this page.
#[component]
pub fn AdminPage() -> impl IntoView {
    let note = RwSignal::new(None::<(bool, String)>);
    let reload = RwSignal::new(0u32);
    let forbidden = RwSignal::new(false);
    view! {
        <section class="page admin-page" aria-labelledby="admin-heading">
            <h1 id="admin-heading">"Administration"</h1>
            {form_note(note)}
            <Show when=move || !forbidden.get() fallback=|| view! { <p class="empty">"Page not found."</p> }>
                <SignUpModeSetting note forbidden/>
                <Invites note/>
                <Accounts note reload/>
                <ProjectUsage note/>
            </Show>
        </section>
    }
}

/// Who may sign up: a select that saves at once.
#[component]
fn SignUpModeSetting(note: Note, forbidden: RwSignal<bool>) -> impl IntoView {
    let mode = RwSignal::new(None::<SignUpMode>);
    Effect::new(move |_| {
        spawn_local(async move {
            match calls::sign_up_settings().await {
                Ok(settings) => mode.set(Some(settings.mode)),
                Err(e) if e.status == 404 => forbidden.set(true),
                Err(e) => note.set(Some((false, e.message))),
            }
        });
    });
    let name = |mode: SignUpMode| match mode {
        SignUpMode::Open => "open",
        SignUpMode::Invite => "invite",
        SignUpMode::Closed => "closed",
    };
    let on_change = move |ev: leptos::ev::Event| {
        let chosen = match event_target_value(&ev).as_str() {
            "open" => SignUpMode::Open,
            "closed" => SignUpMode::Closed,
            _ => SignUpMode::Invite,
        };
        noted(note, calls::set_sign_up_mode(chosen), move |()| {
            mode.set(Some(chosen));
            note.set(Some((true, "Sign-up mode saved.".into())));
        });
    };
    view! {
        <section aria-labelledby="signup-heading">
            <h2 id="signup-heading">"Sign-up"</h2>
            <label for="signup-mode">"Who may sign up"</label>
            <select id="signup-mode" data-testid="signup-mode" on:change=on_change
                prop:value=move || mode.get().map(name).unwrap_or_default()>
                <option value="open">"Anyone (open)"</option>
                <option value="invite">"With an invitation (invite)"</option>
                <option value="closed">"Nobody (closed)"</option>
            </select>
        </section>
    }
}

/// Invitations: make one (the link is shown once), list them, revoke one.
#[component]
fn Invites(note: Note) -> impl IntoView {
    let hours = RwSignal::new("168".to_string());
    let uses = RwSignal::new("1".to_string());
    let link = RwSignal::new(None::<String>);
    let invites = RwSignal::new(Vec::<InviteInfo>::new());
    let load = move || {
        spawn_local(async move {
            if let Ok(list) = calls::invites().await {
                invites.set(list.invites);
            }
        })
    };
    Effect::new(move |_| load());
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = CreateInviteRequest {
            expires_in_hours: hours.get_untracked().trim().parse().unwrap_or(0),
            max_uses: uses.get_untracked().trim().parse().unwrap_or(0),
        };
        noted(note, async move { calls::create_invite(&body).await }, move |created| {
            link.set(Some(full_link(&created.link)));
            note.set(None);
            load();
        });
    };
    let revoke = move |id| noted(note, calls::revoke_invite(id), move |()| load());
    view! {
        <section aria-labelledby="invites-heading">
            <h2 id="invites-heading">"Invitations"</h2>
            <form class="inline-form" on:submit=create>
                <label for="invite-hours">"Valid for (hours)"</label>
                <input id="invite-hours" type="number" min="1" max="720" required
                    prop:value=move || hours.get() on:input=move |ev| hours.set(event_target_value(&ev))/>
                <label for="invite-uses">"Uses"</label>
                <input id="invite-uses" type="number" min="1" max="1000" required
                    prop:value=move || uses.get() on:input=move |ev| uses.set(event_target_value(&ev))/>
                <button type="submit" class="primary">"Create invitation"</button>
            </form>
            {move || link.get().map(|link| view! {
                <p class="notice" role="status">"Pass this link on; it is shown only now."</p>
                <input type="text" readonly class="invite-link" aria-label="Invitation link" data-testid="invite-link"
                    prop:value=link/>
            })}
            <div class="table-scroll">
            <table class="admin-table" data-testid="invites">
                <thead><tr><th>"Made"</th><th>"Expires"</th><th>"Used"</th><th>"State"</th><th>""</th></tr></thead>
                <tbody>
                    <For each=move || invites.get() key=|i| (i.id, i.uses, i.revoked) let:invite>
                        <tr>
                            <td>{moment(invite.created_at)}</td>
                            <td>{moment(invite.expires_at)}</td>
                            <td>{format!("{} of {}", invite.uses, invite.max_uses)}</td>
                            <td>{if invite.revoked { "revoked" } else { "open" }}</td>
                            <td>
                                <Show when=move || !invite.revoked>
                                    <button type="button" on:click=move |_| revoke(invite.id)>"Revoke"</button>
                                </Show>
                            </td>
                        </tr>
                    </For>
                </tbody>
            </table>
            </div>
        </section>
    }
}

/// Every account with its usage and what an administrator may do to it, a page at a time (as the server cuts
/// them), with Previous and Next.
#[component]
fn Accounts(note: Note, reload: RwSignal<u32>) -> impl IntoView {
    let accounts = RwSignal::new(Vec::<AdminAccount>::new());
    let offset = RwSignal::new(0u32);
    // Where the pages before this one began, nearest last: Previous goes back exactly as Next came.
    let earlier = RwSignal::new(Vec::<u32>::new());
    let next = RwSignal::new(None::<u32>);
    Effect::new(move |_| {
        reload.track();
        let from = offset.get();
        spawn_local(async move {
            match calls::accounts(from).await {
                // The page emptied (its last accounts were deleted): the one before it.
                Ok(list) if list.accounts.is_empty() && from > 0 => {
                    let before = earlier.try_update(|pages| pages.pop()).flatten();
                    offset.set(before.unwrap_or(0));
                }
                Ok(list) => {
                    accounts.set(list.accounts);
                    next.set(list.next_offset);
                }
                Err(e) if e.status == 404 => {}
                Err(e) => note.set(Some((false, e.message))),
            }
        });
    });
    let go_next = move |_| {
        if let Some(to) = next.get_untracked() {
            earlier.update(|pages| pages.push(offset.get_untracked()));
            offset.set(to);
        }
    };
    let go_back = move |_| {
        let before = earlier.try_update(|pages| pages.pop()).flatten();
        offset.set(before.unwrap_or(0));
    };
    let shown = move || {
        let count = accounts.with(Vec::len) as u32;
        let first = offset.get() + 1;
        if count == 0 {
            "No accounts".to_string()
        } else {
            format!("Accounts {first} to {}", offset.get() + count)
        }
    };
    view! {
        <section aria-labelledby="accounts-heading">
            <h2 id="accounts-heading">"Accounts"</h2>
            <div class="table-scroll">
            <table class="admin-table" data-testid="accounts">
                <thead>
                    <tr>
                        <th>"Account"</th><th>"Role"</th><th>"State"</th><th>"Tokens today"</th><th>"Daily budget"</th>
                        <th>"Messages"</th><th>"Last seen"</th><th>"Actions"</th>
                    </tr>
                </thead>
                <tbody>
                    <For each=move || accounts.get() key=|a| format!("{a:?}") let:account>
                        <AccountRow account note reload/>
                    </For>
                </tbody>
            </table>
            </div>
            <nav class="pager" aria-label="Pages of accounts">
                <button type="button" on:click=go_back disabled=move || offset.get() == 0>"Previous"</button>
                <span data-testid="accounts-shown">{shown}</span>
                <button type="button" on:click=go_next disabled=move || next.get().is_none()>"Next"</button>
            </nav>
        </section>
    }
}

/// Team projects with their members, conversations and the tokens those spent, a page more at a time.
#[component]
fn ProjectUsage(note: Note) -> impl IntoView {
    let projects = RwSignal::new(Vec::<AdminProject>::new());
    let next = RwSignal::new(Some(0u32));
    let load = move || {
        let Some(from) = next.get_untracked() else { return };
        spawn_local(async move {
            match calls::projects(from).await {
                Ok(page) => {
                    projects.update(|shown| shown.extend(page.projects));
                    next.set(page.next_offset);
                }
                Err(e) if e.status == 404 => next.set(None),
                Err(e) => note.set(Some((false, e.message))),
            }
        });
    };
    // In the browser only: the first page once the page is alive.
    Effect::new(move |_| load());
    view! {
        <section aria-labelledby="projects-usage-heading">
            <h2 id="projects-usage-heading">"Projects"</h2>
            {move || projects.with(Vec::is_empty).then(|| view! { <p class="empty">"No projects yet."</p> })}
            <div class="table-scroll">
            <table class="admin-table" data-testid="project-usage">
                <thead>
                    <tr><th>"Project"</th><th>"Members"</th><th>"Conversations"</th><th>"Tokens"</th><th>"Made"</th></tr>
                </thead>
                <tbody>
                    <For each=move || projects.get() key=|p| p.id let:project>
                        <tr>
                            <td>{project.name.clone()}{project.archived.then_some(" (archived)")}</td>
                            <td>{project.members}</td>
                            <td>{project.conversations}</td>
                            <td>{project.input_tokens + project.output_tokens}</td>
                            <td>{moment(project.created_at)}</td>
                        </tr>
                    </For>
                </tbody>
            </table>
            </div>
            {move || next.get().is_some().then(|| view! {
                <button type="button" on:click=move |_| load()>"More projects"</button>
            })}
        </section>
    }
}

/// One account's row: usage, and buttons to disable, promote, set a budget, make a reset link, delete, and list
/// its API tokens (each with its own "Revoke").
#[component]
fn AccountRow(account: AdminAccount, note: Note, reload: RwSignal<u32>) -> impl IntoView {
    let id = account.id;
    let email = account.email.clone();
    let budget = RwSignal::new(account.own_daily_tokens.map(|b| b.to_string()).unwrap_or_default());
    // Once an action is done, the note says so and the accounts are listed again.
    let act = move |done: &'static str, call: Pin<Box<dyn Future<Output = Result<(), ApiError>>>>| {
        noted(note, call, move |()| {
            note.set(Some((true, done.to_string())));
            reload.update(|n| *n += 1);
        })
    };
    let (admin, disabled) = (account.admin, account.disabled);
    let toggle_disabled = move |_| {
        let done = if disabled { "Account enabled." } else { "Account disabled; its sessions ended." };
        act(done, Box::pin(calls::set_disabled(id, !disabled)))
    };
    let toggle_admin = move |_| act("Role changed.", Box::pin(calls::set_admin(id, !admin)));
    let save_budget = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = budget.get_untracked();
        let tokens = if text.trim().is_empty() { None } else { text.trim().parse::<u64>().ok() };
        act("Budget saved.", Box::pin(calls::set_budget(id, tokens)))
    };
    let reset = move |_| {
        noted(note, calls::reset_link(id), move |link| {
            note.set(Some((true, format!("Password reset link (one use, 24 hours): {}", full_link(&link.link)))))
        })
    };
    let confirm_email = email.clone();
    let remove = move |_| {
        let asked = web_sys::window()
            .and_then(|w| w.confirm_with_message(&format!("Delete {confirm_email} and everything it owns?")).ok())
            .unwrap_or(false);
        if asked {
            act("Account deleted.", Box::pin(calls::delete_account(id)))
        }
    };
    let api_tokens = RwSignal::new(None::<Vec<ApiTokenInfo>>);
    let show_tokens = move || noted(note, calls::api_tokens(id), move |list| api_tokens.set(Some(list.tokens)));
    let revoke_token = move |token| {
        noted(note, calls::revoke_api_token(token), move |()| {
            note.set(Some((true, "API token revoked.".into())));
            show_tokens();
        })
    };
    let tokens_of = format!("API tokens of {email}");
    let in_force = account.daily_tokens.map(|t| t.to_string()).unwrap_or_else(|| "none".into());
    view! {
        <tr data-testid="account-row" data-email=email.clone()>
            <td>{email.clone()}<br/><span class="hint">{account.display_name.clone()}</span></td>
            <td>{if admin { "admin" } else { "member" }}</td>
            <td data-testid="account-state">{if disabled { "disabled" } else { "active" }}</td>
            <td>{account.tokens_today}</td>
            <td>
                <form class="inline-form" on:submit=save_budget>
                    <input type="number" min="0" placeholder=in_force aria-label=format!("Daily budget of {email}")
                        prop:value=move || budget.get() on:input=move |ev| budget.set(event_target_value(&ev))/>
                    <button type="submit">"Save"</button>
                </form>
            </td>
            <td>{account.messages}</td>
            <td>{account.last_seen_at.map(moment).unwrap_or_else(|| "never".into())}</td>
            <td class="row-actions">
                <button type="button" on:click=toggle_disabled>{if disabled { "Enable" } else { "Disable" }}</button>
                <button type="button" on:click=toggle_admin>{if admin { "Remove admin" } else { "Make admin" }}</button>
                <button type="button" on:click=reset>"Reset link"</button>
                <button type="button" class="danger" on:click=remove>"Delete"</button>
                <button type="button" on:click=move |_| show_tokens()>"API tokens"</button>
                {move || api_tokens.get().map(|list| match list.is_empty() {
                    true => view! { <p class="hint">"No API tokens."</p> }.into_any(),
                    false => view! {
                        <ul class="admin-tokens" aria-label=tokens_of.clone()>
                            {list.into_iter().map(|token| {
                                let label = format!("Revoke token “{}”", token.name);
                                let used = token
                                    .last_used_at
                                    .map_or_else(|| "never used".into(), |at| format!("last used {}", moment(at)));
                                let about = format!("{} ({}, {used})", token.name, token.scope.as_str());
                                view! {
                                    <li>
                                        {about}
                                        <button type="button" aria-label=label on:click=move |_| revoke_token(token.id)>"Revoke"</button>
                                    </li>
                                }
                            }).collect_view()}
                        </ul>
                    }.into_any(),
                })}
            </td>
        </tr>
    }
}

/// `/reset-password?token=...`: a new password with a reset link's token; then sign in. The form posts to the
/// server the plain way until the page is alive; a refusal brings the token back in the fragment.
#[component]
pub fn ResetPasswordPage() -> impl IntoView {
    let query = use_query_map();
    let posted_token = query.with_untracked(|query| query.get("token")).unwrap_or_default();
    let token = Some(posted_token.clone())
        .filter(|token| !token.is_empty())
        .or_else(|| from_fragment("token"))
        .unwrap_or_default();
    let password = RwSignal::new(String::new());
    let refused = query.with_untracked(|query| FormOutcome::from_query(query.get_str("error"), None));
    let note = RwSignal::new(refused.map(|outcome| (false, outcome.message().to_string())));
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = ResetPasswordRequest { token: token.clone(), new_password: password.get_untracked() };
        submit_noted(busy, note, async move { calls::reset_password(&body).await }, |()| {
            "Password set. Sign in with it now.".into()
        });
    };
    view! {
        <section class="auth" aria-labelledby="reset-heading">
            <h1 id="reset-heading">"Set a new password"</h1>
            <form class="auth-form" method="post" action=RESET_PASSWORD_ACTION on:submit=submit>
                <input type="hidden" name="token" value=posted_token/>
                <NewPassword id="reset-password" name="new_password" value=password/>
                {form_note(note)}
                <button type="submit" class="primary" disabled=move || busy.get()>"Set password"</button>
            </form>
            <p class="auth-switch"><a href="/signin">"Sign in"</a></p>
        </section>
    }
}
