//! `/settings` (also `/account`): the profile, custom instructions, theme, share links and the download of all
//! one's data; the password, signed-in devices, API tokens and deleting the account.
//!
//! The two forms that take a password (changing it, deleting the account) post to the server the plain way
//! until the page is alive, and through the API once it is. The others need the page alive: they appear only
//! once it has loaded the settings (the profile, the instructions) or act only through it (buttons, the theme).

use std::future::Future;

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::client::ApiError;
use crate::api::forms::{
    FormOutcome, CHANGE_PASSWORD_ACTION, CHANGE_PASSWORD_FORM, DELETE_ACCOUNT_ACTION, DELETE_ACCOUNT_FORM,
};
use crate::api::{
    client, ApiTokenInfo, ChangePasswordRequest, CreateTokenRequest, DeleteAccountRequest, SessionInfo, Settings,
    ShareLink, Theme, TokenScope, UpdateSettings, MAX_DISPLAY_NAME_CHARS, MAX_INSTRUCTIONS_CHARS, MAX_TOKEN_DAYS,
    MAX_TOKEN_NAME_CHARS, MIN_PASSWORD_CHARS, TOKEN_PREFIX,
};
use crate::components::form_note::{form_note, submit_noted};
use crate::components::model_picker::{ModelChoice, ModelSelect};
use crate::components::new_password::NewPassword;
use crate::components::theme_toggle::{choose_theme, ThemeChoice};
use crate::components::tools_menu::server_checkboxes;
use crate::format::moment;
use crate::CurrentUser;

/// How the last plain post of the settings form `form` went, from the page's query.
fn posted_outcome(form: &str) -> Option<FormOutcome> {
    leptos_router::hooks::use_query_map().with_untracked(|query| {
        (query.get_str("form") == Some(form))
            .then(|| FormOutcome::from_query(query.get_str("error"), query.get_str("done")))
            .flatten()
    })
}

/// Leaves for the sign-in page with a fresh load, so nothing of the account stays in this tab.
fn leave_for_sign_in() {
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_href("/signin");
    }
}

/// Makes a call in the background: its answer goes to `done`, a failure's message to `error`.
fn call<T: 'static>(
    request: impl Future<Output = Result<T, ApiError>> + 'static,
    error: RwSignal<Option<String>>,
    done: impl FnOnce(T) + 'static,
) {
    spawn_local(async move {
        match request.await {
            Ok(answer) => done(answer),
            Err(e) => error.set(Some(e.message)),
        }
    });
}

/// The settings page.
#[component]
pub fn SettingsPage() -> impl IntoView {
    let settings = RwSignal::new(None::<Settings>);
    let error = RwSignal::new(None::<String>);
    Effect::new(move |_| call(client::settings(), error, move |found| settings.set(Some(found))));
    let has_password = has_password();
    view! {
        <section class="auth account-page" aria-labelledby="settings-heading">
            <h1 id="settings-heading">"Settings"</h1>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            {move || settings.get().map(|loaded| view! {
                <Profile display_name=loaded.display_name.clone()/>
                <CustomInstructions text=loaded.custom_instructions.clone()/>
                <DefaultModel chosen=loaded.default_model.clone()/>
                <DefaultTools chosen=loaded.mcp_servers.clone()/>
            })}
            <Appearance/>
            <SharedLinks/>
            <YourData/>
            <Show when=has_password>
                <ChangePassword/>
            </Show>
            <Devices/>
            <ApiTokens/>
            <DeleteAccount/>
        </section>
    }
}

/// Saves `change`; the note says how it went, and `refused` undoes what the page showed ahead of a refusal.
fn save(
    user: CurrentUser,
    change: UpdateSettings,
    busy: RwSignal<bool>,
    note: RwSignal<Option<(bool, String)>>,
    done: &'static str,
    refused: impl FnOnce() + 'static,
) {
    let request = async move {
        let result = client::update_settings(&change).await;
        if result.is_err() {
            refused();
        }
        result
    };
    submit_noted(busy, note, request, move |saved| {
        user.0.update(|profile| {
            if let Some(profile) = profile {
                profile.display_name = saved.display_name;
            }
        });
        done.into()
    });
}

/// The e-mail address (which cannot change) and the display name.
#[component]
fn Profile(display_name: String) -> impl IntoView {
    let user = expect_context::<CurrentUser>();
    let name = RwSignal::new(display_name);
    let note = RwSignal::new(None::<(bool, String)>);
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let change = UpdateSettings { display_name: Some(name.get_untracked()), ..Default::default() };
        save(user, change, busy, note, "Name saved.", || ());
    };
    view! {
        <form class="auth-form" aria-labelledby="profile-heading" on:submit=submit>
            <h2 id="profile-heading">"Profile"</h2>
            <p class="hint">"E-mail: "<span data-testid="settings-email">{move || user.0.get().map(|u| u.email)}</span></p>
            <label for="display-name">"Display name"</label>
            <input id="display-name" type="text" autocomplete="name" required
                maxlength=MAX_DISPLAY_NAME_CHARS.to_string()
                prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
            {form_note(note)}
            <button type="submit" class="primary" disabled=move || busy.get()>"Save name"</button>
        </form>
    }
}

/// Standing instructions for the assistant, sent with every answer below Quire's own rules.
#[component]
fn CustomInstructions(text: String) -> impl IntoView {
    let user = expect_context::<CurrentUser>();
    let text = RwSignal::new(text);
    let note = RwSignal::new(None::<(bool, String)>);
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let change = UpdateSettings { custom_instructions: Some(text.get_untracked()), ..Default::default() };
        save(user, change, busy, note, "Instructions saved.", || ());
    };
    let count = move || format!("{} / {MAX_INSTRUCTIONS_CHARS}", text.with(|t| t.chars().count()));
    view! {
        <form class="auth-form" aria-labelledby="instructions-heading" on:submit=submit>
            <h2 id="instructions-heading">"Custom instructions"</h2>
            <p class="hint">"What the assistant should always keep in mind: your role, your team's terms, the tone you like. Quire's own rules come first."</p>
            <label for="custom-instructions">"Instructions"</label>
            <textarea id="custom-instructions" rows="5" maxlength=MAX_INSTRUCTIONS_CHARS.to_string()
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            <p class="hint" aria-live="polite">{count}</p>
            {form_note(note)}
            <button type="submit" class="primary" disabled=move || busy.get()>"Save instructions"</button>
        </form>
    }
}

/// The model new conversations start with (each conversation can choose another on the chat page). Shown when
/// more than one model is on offer.
#[component]
fn DefaultModel(chosen: Option<String>) -> impl IntoView {
    let user = expect_context::<CurrentUser>();
    let chosen = RwSignal::new(chosen);
    let note = RwSignal::new(None::<(bool, String)>);
    let busy = RwSignal::new(false);
    let choose = Callback::new(move |choice: ModelChoice| {
        let change = UpdateSettings { default_model: Some(choice.id), ..Default::default() };
        save(user, change, busy, note, "Default model saved.", move || chosen.set(choice.before));
    });
    view! {
        <div class="default-model">
            <ModelSelect label="Default model" default_label="Server default" server=true shown_label=true chosen on_choose=choose/>
            {form_note(note)}
        </div>
    }
}

/// The MCP servers whose tools the person's conversations may use (each conversation can choose others in its
/// Tools menu). Shown when Quire has any: the list is read as the page shows.
#[component]
fn DefaultTools(chosen: Option<Vec<String>>) -> impl IntoView {
    let user = expect_context::<CurrentUser>();
    let servers = RwSignal::new(None::<Vec<crate::api::McpServer>>);
    let error = RwSignal::new(None::<String>);
    Effect::new(move |_| call(client::mcp_servers(), error, move |list| servers.set(Some(list.servers))));
    let chosen = RwSignal::new(chosen);
    let note = RwSignal::new(None::<(bool, String)>);
    let busy = RwSignal::new(false);
    let save_choice = move |choice: Option<Vec<String>>| {
        let before = chosen.get_untracked();
        chosen.set(choice.clone());
        let change = UpdateSettings { mcp_servers: Some(choice), ..Default::default() };
        save(user, change, busy, note, "Tools saved.", move || chosen.set(before));
    };
    move || {
        let list = servers.get().filter(|list| !list.is_empty())?;
        let default: Vec<String> = list.iter().filter(|s| s.on_by_default).map(|s| s.name.clone()).collect();
        let names = Signal::derive(move || chosen.get().unwrap_or_else(|| default.clone()));
        let on_change = Callback::new(move |names| save_choice(Some(names)));
        Some(view! {
            <fieldset class="auth-form tools-choice" aria-labelledby="tools-heading">
                <h2 id="tools-heading">"Tools"</h2>
                <p class="hint">"The tool servers your conversations' answers may use. Each conversation can choose others in its Tools menu."</p>
                {server_checkboxes(list, names, busy.into(), on_change)}
                {move || chosen.with(Option::is_some).then(|| view! {
                    <button type="button" disabled=move || busy.get() on:click=move |_| save_choice(None)>
                        "Use the server's defaults"
                    </button>
                })}
                {form_note(note)}
            </fieldset>
        })
    }
}

/// Light, dark or as the system prefers; kept with the account, so every device shows it.
#[component]
fn Appearance() -> impl IntoView {
    let choice = expect_context::<ThemeChoice>();
    let option = move |theme: Theme, label: &'static str| {
        view! {
            <label class="choice">
                <input type="radio" name="theme" value=theme.as_str()
                    prop:checked=move || choice.theme.get() == theme
                    on:change=move |_| choose_theme(choice, theme)/>
                {label}
            </label>
        }
    };
    view! {
        <fieldset class="auth-form" role="radiogroup" aria-labelledby="theme-heading">
            <h2 id="theme-heading">"Theme"</h2>
            {option(Theme::System, "As the system")}
            {option(Theme::Light, "Light")}
            {option(Theme::Dark, "Dark")}
        </fieldset>
    }
}

/// The account's share links, each with "Revoke".
#[component]
fn SharedLinks() -> impl IntoView {
    let links = RwSignal::new(None::<Vec<ShareLink>>);
    let error = RwSignal::new(None::<String>);
    let load = move || call(client::list_shares(), error, move |list| links.set(Some(list.shares)));
    Effect::new(move |_| load());
    let revoke = move |id| {
        error.set(None);
        call(client::revoke_share(id), error, move |()| load());
    };
    view! {
        <div class="auth-form" role="region" aria-labelledby="shares-heading">
            <h2 id="shares-heading">"Shared links"</h2>
            <p class="hint">"Anyone with one of these links can read a copy of the conversation as it was when you shared it. Revoke a link to end it."</p>
            {move || match links.get() {
                None => view! { <p class="hint" role="status">"Loading…"</p> }.into_any(),
                Some(list) if list.is_empty() => view! { <p class="hint">"No shared links."</p> }.into_any(),
                Some(list) => view! {
                    <ul class="sessions" aria-label="Shared links">
                        {list.into_iter().map(|link| {
                            let id = link.id;
                            view! {
                                <li class="session">
                                    <div class="session-about">
                                        <a class="session-device" href=link.path.clone() target="_blank" rel="noopener">{link.title}</a>
                                        <span class="hint">{format!("Shared {}", moment(link.created_at))}</span>
                                    </div>
                                    <button type="button" on:click=move |_| revoke(id)>"Revoke"</button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any(),
            }}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}

/// Everything the account holds, as one JSON file (which imports back).
#[component]
fn YourData() -> impl IntoView {
    view! {
        <div class="auth-form" role="region" aria-labelledby="data-heading">
            <h2 id="data-heading">"Your data"</h2>
            <p class="hint">"Every conversation with its messages and documents, and your files' details, as one JSON file."</p>
            <a class="button" href="/api/export" download="">"Download all my data"</a>
        </div>
    }
}

/// The current password and a new one; other devices are signed out.
#[component]
fn ChangePassword() -> impl IntoView {
    let current = RwSignal::new(String::new());
    let new = RwSignal::new(String::new());
    let posted = posted_outcome(CHANGE_PASSWORD_FORM);
    let note = RwSignal::new(posted.map(|outcome| (outcome.is_done(), outcome.message().to_string())));
    let busy = RwSignal::new(false);
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body =
            ChangePasswordRequest { current_password: current.get_untracked(), new_password: new.get_untracked() };
        submit_noted(busy, note, async move { client::change_password(&body).await }, move |()| {
            current.set(String::new());
            new.set(String::new());
            "Password changed. Other devices are signed out.".into()
        });
    };
    view! {
        <form class="auth-form" aria-labelledby="change-password-heading" method="post"
            action=CHANGE_PASSWORD_ACTION on:submit=submit>
            <h2 id="change-password-heading">"Change password"</h2>
            <label for="current-password">"Current password"</label>
            <input id="current-password" name="current_password" type="password" autocomplete="current-password"
                required prop:value=move || current.get() on:input=move |ev| current.set(event_target_value(&ev))/>
            <NewPassword id="new-password" name="new_password" value=new/>
            <p class="hint">{format!("At least {MIN_PASSWORD_CHARS} characters, and not a common or breached password.")}</p>
            {form_note(note)}
            <button type="submit" class="primary" disabled=move || busy.get()>"Change password"</button>
        </form>
    }
}

/// The devices signed in to the account, each with its own "Sign out", and "Sign out everywhere".
#[component]
fn Devices() -> impl IntoView {
    let sessions = RwSignal::new(None::<Vec<SessionInfo>>);
    let error = RwSignal::new(None::<String>);
    let load = move || call(client::sessions(), error, move |list| sessions.set(Some(list.sessions)));
    Effect::new(move |_| load());
    let end = move |session: SessionInfo| {
        error.set(None);
        let current = session.current;
        let ended = async move { client::end_session(&session.id).await };
        call(ended, error, move |()| if current { leave_for_sign_in() } else { load() });
    };
    let everywhere = move |_| call(client::logout_all(), error, |()| leave_for_sign_in());
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

/// Puts `text` on the clipboard; whether the browser took it.
fn copy_to_clipboard(text: &str) -> bool {
    use wasm_bindgen::JsCast;
    let Some(window) = web_sys::window() else { return false };
    // navigator.clipboard.writeText(text), looked up dynamically (the Clipboard API is not in web-sys's stable set).
    let clipboard = js_sys::Reflect::get(&window.navigator(), &"clipboard".into()).ok();
    let write = clipboard
        .as_ref()
        .and_then(|c| js_sys::Reflect::get(c, &"writeText".into()).ok())
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
    match (clipboard, write) {
        (Some(clipboard), Some(write)) => write.call1(&clipboard, &text.into()).is_ok(),
        _ => false,
    }
}

/// What a token's scope lets it do, in words.
fn scope_words(scope: TokenScope) -> &'static str {
    match scope {
        TokenScope::Read => "Read",
        TokenScope::Chat => "Read and chat",
    }
}

/// Personal API tokens for scripts and other programs: make one (its secret is shown once), list them, revoke one.
#[component]
fn ApiTokens() -> impl IntoView {
    let tokens = RwSignal::new(None::<Vec<ApiTokenInfo>>);
    let error = RwSignal::new(None::<String>);
    let name = RwSignal::new(String::new());
    let scope = RwSignal::new(TokenScope::Read);
    let days = RwSignal::new("30".to_string());
    let secret = RwSignal::new(None::<String>);
    let copied = RwSignal::new(false);
    let busy = RwSignal::new(false);
    let load = move || call(client::api_tokens(), error, move |list| tokens.set(Some(list.tokens)));
    Effect::new(move |_| load());
    let create = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        error.set(None);
        busy.set(true);
        let body = CreateTokenRequest {
            name: name.get_untracked(),
            scope: scope.get_untracked(),
            expires_in_days: days.get_untracked().trim().parse().unwrap_or(0),
        };
        let request = async move {
            let result = client::create_api_token(&body).await;
            busy.set(false);
            result
        };
        call(request, error, move |created| {
            secret.set(Some(created.token));
            copied.set(false);
            name.set(String::new());
            load();
        });
    };
    let copy = move |_| copied.set(secret.with_untracked(|s| s.as_deref().is_some_and(copy_to_clipboard)));
    let revoke = move |id| {
        error.set(None);
        call(client::revoke_api_token(id), error, move |()| load());
    };
    let on_scope = move |ev: leptos::ev::Event| {
        scope.set(if event_target_value(&ev) == "chat" { TokenScope::Chat } else { TokenScope::Read });
    };
    view! {
        <div class="auth-form" role="region" aria-labelledby="tokens-heading">
            <h2 id="tokens-heading">"API tokens"</h2>
            <p class="hint">"A token lets a script or another program use Quire as you, sent as "<code>"Authorization: Bearer"</code>". “Read” tokens only read; “Read and chat” tokens also write in your conversations. No token can change your account, its tokens or sharing."</p>
            <form class="token-form" aria-label="Make an API token" on:submit=create>
                <label for="token-name">"Name"</label>
                <input id="token-name" type="text" required maxlength=MAX_TOKEN_NAME_CHARS.to_string()
                    placeholder="What it is for"
                    prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
                <label for="token-scope">"Scope"</label>
                <select id="token-scope" on:change=on_scope prop:value=move || scope.get().as_str()>
                    <option value="read">{scope_words(TokenScope::Read)}</option>
                    <option value="chat">{scope_words(TokenScope::Chat)}</option>
                </select>
                <label for="token-days">"Expires in (days)"</label>
                <input id="token-days" type="number" min="1" max=MAX_TOKEN_DAYS.to_string() required
                    prop:value=move || days.get() on:input=move |ev| days.set(event_target_value(&ev))/>
                <button type="submit" class="primary" disabled=move || busy.get()>"Create token"</button>
            </form>
            {move || secret.get().map(|token| view! {
                <div class="token-secret">
                    <p class="notice" role="status">"Copy this token now: it will not be shown again."</p>
                    <input type="text" readonly aria-label="New API token" data-testid="api-token-secret" prop:value=token/>
                    <button type="button" on:click=copy>{move || if copied.get() { "Copied" } else { "Copy" }}</button>
                </div>
            })}
            {move || match tokens.get() {
                None => view! { <p class="hint" role="status">"Loading…"</p> }.into_any(),
                Some(list) if list.is_empty() => view! { <p class="hint">"No API tokens."</p> }.into_any(),
                Some(list) => view! {
                    <ul class="sessions" aria-label="API tokens" data-testid="api-tokens">
                        {list.into_iter().map(|token| {
                            let id = token.id;
                            let label = format!("Revoke token “{}”", token.name);
                            let used = token.last_used_at.map_or_else(|| "never used".into(), |at| format!("last used {}", moment(at)));
                            view! {
                                <li class="session">
                                    <div class="session-about">
                                        <span class="session-device">{token.name.clone()}</span>
                                        <code>{format!("{TOKEN_PREFIX}{}…", token.prefix)}</code>
                                        <span class="session-current">{scope_words(token.scope)}</span>
                                        <span class="hint">
                                            {format!("Created {} · expires {} · {used}", moment(token.created_at), moment(token.expires_at))}
                                        </span>
                                    </div>
                                    <button type="button" aria-label=label on:click=move |_| revoke(id)>"Revoke"</button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }.into_any(),
            }}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </div>
    }
}

/// Whether the signed-in account has a password (until it is known and the calling component hydrated, as most
/// have one and the server renders so). An account made through the organisation's identity provider has none:
/// no password to change, and its address confirms a deletion.
fn has_password() -> impl Fn() -> bool + Copy + Send + Sync + 'static {
    let user = expect_context::<crate::CurrentUser>();
    let hydrated = crate::state::hydrated();
    move || !hydrated.get() || user.0.with(|u| u.as_ref().is_none_or(|u| u.has_password))
}

/// Deletes the account and everything in it, given its password (its e-mail address, for one without).
#[component]
fn DeleteAccount() -> impl IntoView {
    let has_password = has_password();
    let password = RwSignal::new(String::new());
    let posted = posted_outcome(DELETE_ACCOUNT_FORM).filter(|outcome| !outcome.is_done());
    let error = RwSignal::new(posted.map(|outcome| outcome.message().to_string()));
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
        <form class="auth-form" aria-labelledby="delete-account-heading" method="post"
            action=DELETE_ACCOUNT_ACTION on:submit=submit>
            <h2 id="delete-account-heading">"Delete account"</h2>
            <p class="hint">"Deletes the account with all its conversations, documents and files. This cannot be undone."</p>
            <label for="delete-password">
                {move || if has_password() { "Password" } else { "Your e-mail address, to confirm" }}
            </label>
            <input id="delete-password" name="password" required
                type=move || if has_password() { "password" } else { "email" }
                autocomplete=move || if has_password() { "current-password" } else { "off" }
                prop:value=move || password.get() on:input=move |ev| password.set(event_target_value(&ev))/>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <button type="submit" class="danger" disabled=move || busy.get()>"Delete account"</button>
        </form>
    }
}
