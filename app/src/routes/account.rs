//! `/account`: change the password, see and end signed-in sessions, delete the account.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::{client, ChangePasswordRequest, DeleteAccountRequest, SessionInfo, MIN_PASSWORD_CHARS};
use crate::format::moment;

/// Leaves for the sign-in page with a fresh load, so nothing of the account stays in this tab.
fn leave_for_sign_in() {
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_href("/signin");
    }
}

/// The account page.
#[component]
pub fn AccountPage() -> impl IntoView {
    view! {
        <section class="auth account-page" aria-labelledby="account-heading">
            <h1 id="account-heading">"Account"</h1>
            <ChangePassword/>
            <Devices/>
            <DeleteAccount/>
        </section>
    }
}

/// The current password and a new one; other devices are signed out.
#[component]
fn ChangePassword() -> impl IntoView {
    let current = RwSignal::new(String::new());
    let new = RwSignal::new(String::new());
    let note = RwSignal::new(None::<(bool, String)>);
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        busy.set(true);
        note.set(None);
        let body =
            ChangePasswordRequest { current_password: current.get_untracked(), new_password: new.get_untracked() };
        spawn_local(async move {
            let result = client::change_password(&body).await;
            busy.set(false);
            match result {
                Ok(()) => {
                    current.set(String::new());
                    new.set(String::new());
                    note.set(Some((true, "Password changed. Other devices are signed out.".into())));
                }
                Err(e) => note.set(Some((false, e.message))),
            }
        });
    };
    view! {
        <form class="auth-form" aria-labelledby="change-password-heading" on:submit=submit>
            <h2 id="change-password-heading">"Change password"</h2>
            <label for="current-password">"Current password"</label>
            <input id="current-password" type="password" autocomplete="current-password" required
                prop:value=move || current.get() on:input=move |ev| current.set(event_target_value(&ev))/>
            <label for="new-password">"New password"</label>
            <input id="new-password" type="password" autocomplete="new-password" required
                minlength=MIN_PASSWORD_CHARS.to_string()
                prop:value=move || new.get() on:input=move |ev| new.set(event_target_value(&ev))/>
            <p class="hint">{format!("At least {MIN_PASSWORD_CHARS} characters, and not a common or breached password.")}</p>
            {move || note.get().map(|(done, text)| if done {
                view! { <p class="notice" role="status">{text}</p> }.into_any()
            } else {
                view! { <p class="error" role="alert">{text}</p> }.into_any()
            })}
            <button type="submit" class="primary" disabled=move || busy.get()>"Change password"</button>
        </form>
    }
}

/// The devices signed in to the account, each with its own "Sign out", and "Sign out everywhere".
#[component]
fn Devices() -> impl IntoView {
    let sessions = RwSignal::new(None::<Vec<SessionInfo>>);
    let error = RwSignal::new(None::<String>);
    let load = move || {
        spawn_local(async move {
            match client::sessions().await {
                Ok(list) => sessions.set(Some(list.sessions)),
                Err(e) => error.set(Some(e.message)),
            }
        })
    };
    Effect::new(move |_| load());
    let end = move |session: SessionInfo| {
        error.set(None);
        spawn_local(async move {
            match client::end_session(&session.id).await {
                Ok(()) if session.current => leave_for_sign_in(),
                Ok(()) => load(),
                Err(e) => error.set(Some(e.message)),
            }
        });
    };
    let everywhere = move |_| {
        spawn_local(async move {
            match client::logout_all().await {
                Ok(()) => leave_for_sign_in(),
                Err(e) => error.set(Some(e.message)),
            }
        });
    };
    view! {
        <div class="auth-form" role="region" aria-labelledby="devices-heading">
            <h2 id="devices-heading">"Devices"</h2>
            <p class="hint">"Where this account is signed in. Sign out a device you no longer use or do not recognise."</p>
            {move || match sessions.get() {
                None => view! { <p class="hint" role="status">"Loading…"</p> }.into_any(),
                Some(list) => view! {
                    <ul class="sessions" aria-label="Signed-in devices">
                        {list.into_iter().map(|session| view! { <SessionRow session=session.clone() on_end=move || end(session.clone())/> }).collect_view()}
                    </ul>
                }.into_any(),
            }}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <p class="hint">"Sign out everywhere signs out this browser and every other device signed in to this account."</p>
            <button type="button" on:click=everywhere>"Sign out everywhere"</button>
        </div>
    }
}

/// One signed-in device: what it is, where and when it signed in, when it was last used.
#[component]
fn SessionRow(session: SessionInfo, on_end: impl Fn() + Send + Sync + 'static) -> impl IntoView {
    let device = session.device.clone().unwrap_or_else(|| "Unknown device".into());
    let network = session.ip_prefix.clone().map(|prefix| format!(" · network {prefix}"));
    view! {
        <li class="session">
            <div class="session-about">
                <span class="session-device">{device}</span>
                {session.current.then(|| view! { <span class="session-current">"This device"</span> })}
                <span class="hint">
                    {format!("Signed in {} · last used {}", moment(session.created_at), moment(session.last_seen_at))}
                    {network}
                </span>
            </div>
            <button type="button" on:click=move |_| on_end()>"Sign out"</button>
        </li>
    }
}

/// Deletes the account and everything in it, given its password.
#[component]
fn DeleteAccount() -> impl IntoView {
    let password = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        busy.set(true);
        error.set(None);
        let body = DeleteAccountRequest { password: password.get_untracked() };
        spawn_local(async move {
            let result = client::delete_account(&body).await;
            busy.set(false);
            match result {
                Ok(()) => leave_for_sign_in(),
                Err(e) => error.set(Some(e.message)),
            }
        });
    };
    view! {
        <form class="auth-form" aria-labelledby="delete-account-heading" on:submit=submit>
            <h2 id="delete-account-heading">"Delete account"</h2>
            <p class="hint">"Deletes the account with all its conversations, documents and files. This cannot be undone."</p>
            <label for="delete-password">"Password"</label>
            <input id="delete-password" type="password" autocomplete="current-password" required
                prop:value=move || password.get() on:input=move |ev| password.set(event_target_value(&ev))/>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <button type="submit" class="danger" disabled=move || busy.get()>"Delete account"</button>
        </form>
    }
}
