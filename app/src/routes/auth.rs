//! Sign-in and sign-up pages. The session lives in an HttpOnly cookie the server sets; the browser code never
//! sees the token. The form posts to the server the plain way until the page is alive (and without scripts), and
//! through the API once it is; either way nothing typed goes into an address.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::{
    components::A,
    hooks::{use_navigate, use_query_map},
};

use crate::api::forms::{FormOutcome, SIGN_IN_ACTION, SIGN_UP_ACTION};
use crate::api::from_fragment;
use crate::api::{client, LoginRequest, RegisterRequest, UserProfile, MIN_PASSWORD_CHARS};
use crate::{CurrentUser, ThreadsChanged};

/// Whether the form signs in to an account or creates one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    SignIn,
    SignUp,
}

/// `/signin`.
#[component]
pub fn SignInPage() -> impl IntoView {
    view! { <AuthForm mode=Mode::SignIn/> }
}

/// `/signup`.
#[component]
pub fn SignUpPage() -> impl IntoView {
    view! { <AuthForm mode=Mode::SignUp/> }
}

#[component]
fn AuthForm(mode: Mode) -> impl IntoView {
    let email = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let user = expect_context::<CurrentUser>();
    let changed = expect_context::<ThreadsChanged>();
    let navigate = use_navigate();
    // How a plain post of this form went (the server sends the browser back with its code).
    let outcome =
        use_query_map().with_untracked(|query| FormOutcome::from_query(query.get_str("error"), query.get_str("done")));
    let error = RwSignal::new(outcome.filter(|o| !o.is_done()).map(|o| o.message().to_string()));
    let notice = outcome.filter(|o| o.is_done()).map(FormOutcome::message);
    let busy = RwSignal::new(false);
    // A sign-up link from an invitation carries its token, and so does the setup link the server logs while it has
    // no administrator; a refused plain post brings the token back in the fragment (seen only here, in the browser).
    let posted = |name: &str| use_query_map().with_untracked(|query| query.get(name)).filter(|_| mode == Mode::SignUp);
    let (posted_invite, posted_setup) = (posted("invite"), posted("setup"));
    let invite = posted_invite.clone().or_else(|| from_fragment("invite"));
    let setup = posted_setup.clone().or_else(|| from_fragment("setup"));

    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        error.set(None);
        let (e, p) = (email.get_untracked(), password.get_untracked());
        let navigate = navigate.clone();
        let (invite, setup) = (invite.clone(), setup.clone());
        spawn_local(async move {
            let result: Result<UserProfile, _> = match mode {
                Mode::SignIn => client::login(&LoginRequest { email: e, password: p }).await,
                Mode::SignUp => {
                    let body = RegisterRequest { email: e, password: p, display_name: None, invite, setup };
                    client::register(&body).await
                }
            };
            busy.set(false);
            match result {
                Ok(profile) => {
                    user.0.set(Some(profile));
                    changed.notify();
                    navigate("/", Default::default());
                }
                Err(e) => error.set(Some(e.message)),
            }
        });
    };

    let (heading, button, other_text, other_href, other_label) = match mode {
        Mode::SignIn => ("Sign in to Quire", "Sign in", "No account yet?", "/signup", "Create one"),
        Mode::SignUp => {
            ("Create your Quire account", "Create account", "Already have an account?", "/signin", "Sign in instead")
        }
    };
    let password_hint = (mode == Mode::SignUp).then(|| format!("At least {MIN_PASSWORD_CHARS} characters."));
    let action = if mode == Mode::SignUp { SIGN_UP_ACTION } else { SIGN_IN_ACTION };
    let methods = crate::sign_in_methods();
    // The organisation's provider: a plain link, which works before the page is alive. An account it makes
    // follows the sign-up mode, so sign-up offers it too.
    let sso = methods.sso.map(|sso| {
        let (href, label) = (format!("{}?next=/", sso.start), format!("Sign in with {}", sso.label));
        view! {
            <a class="button primary sso-button" href=href rel="external" data-testid="sso-sign-in">{label}</a>
        }
    });
    let or = (sso.is_some() && methods.password).then(|| view! { <p class="auth-or">"or with your e-mail"</p> });
    // A refusal of the provider's way in shows above both ways (the plain form shows its own below).
    let sso_error = move || {
        (!methods.password).then(|| error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })).flatten()
    };
    let password_form = methods.password.then(|| {
        view! {
            <form class="auth-form" method="post" action=action on:submit=submit>
                {posted_invite.map(|token| view! { <input type="hidden" name="invite" value=token/> })}
                {posted_setup.map(|token| view! { <input type="hidden" name="setup" value=token/> })}
                <label for="auth-email">"Email"</label>
                <input
                    id="auth-email"
                    type="email"
                    name="email"
                    autocomplete="email"
                    required
                    prop:value=move || email.get()
                    on:input=move |ev| email.set(event_target_value(&ev))
                />
                <label for="auth-password">"Password"</label>
                <input
                    id="auth-password"
                    type="password"
                    name="password"
                    autocomplete={if mode == Mode::SignUp { "new-password" } else { "current-password" }}
                    required
                    minlength={if mode == Mode::SignUp { MIN_PASSWORD_CHARS } else { 1 }.to_string()}
                    prop:value=move || password.get()
                    on:input=move |ev| password.set(event_target_value(&ev))
                />
                {password_hint.map(|hint| view! { <p class="hint">{hint}</p> })}
                {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                <button type="submit" class="primary" disabled=move || busy.get()>{button}</button>
            </form>
        }
    });
    let switch = methods.password.then(|| {
        view! { <p class="auth-switch">{other_text} " " <A href=other_href>{other_label}</A></p> }
    });

    view! {
        <section class="auth" aria-labelledby="auth-heading">
            <h1 id="auth-heading">{heading}</h1>
            {notice.map(|text| view! { <p class="notice" role="status">{text}</p> })}
            {sso_error}
            {sso}
            {or}
            {password_form}
            {switch}
        </section>
    }
}
