//! The plain HTML form posts of the sign-in, sign-up, password reset and settings pages, for a browser whose page
//! is not alive yet (its WebAssembly still loading) or runs no scripts. Each does what its JSON route does (the
//! same functions, rate limits and throttling; the cross-site check covers them like every route), then answers
//! `303 See Other`: to the next page on success (with the session cookie when signing in), or back to the form's
//! page with `?error=<code>` (never what was typed). A token the page needs again (an invitation, a reset link's)
//! comes back in the fragment, which browsers never send.

use axum::{
    extract::{rejection::FormRejection, Form, State},
    http::{header, HeaderValue},
    response::{IntoResponse, Redirect, Response},
    routing::post,
    Router,
};
use wire::admin::ResetPasswordRequest;
use wire::forms::{
    FormOutcome, CHANGE_PASSWORD_ACTION, CHANGE_PASSWORD_FORM, DELETE_ACCOUNT_ACTION, DELETE_ACCOUNT_FORM,
    RESET_PASSWORD_ACTION, SIGN_IN_ACTION, SIGN_UP_ACTION,
};
use wire::{ChangePasswordRequest, DeleteAccountRequest, LoginRequest, RegisterRequest};

use super::auth::{self, SignInFrom};
use super::error::ApiError;
use super::extract::AuthUser;
use super::rate_limit::{Quota, SignIn};
use crate::auth::one_time;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(SIGN_IN_ACTION, post(sign_in))
        .route(SIGN_UP_ACTION, post(sign_up))
        .route(RESET_PASSWORD_ACTION, post(reset_password))
        .route(CHANGE_PASSWORD_ACTION, post(change_password))
        .route(DELETE_ACCOUNT_ACTION, post(delete_account))
}

/// Where the browser goes after a signed-in change of the settings page, and back to on a refusal.
const SETTINGS: &str = "/settings";

/// The form's page with `outcome` in its query (`extra` first, for the settings page's `form=`) and `fragment`.
fn back_to(page: &str, extra: Option<(&str, &str)>, outcome: FormOutcome, fragment: Option<(&str, &str)>) -> Response {
    let mut location = format!("{page}?");
    if let Some((name, value)) = extra {
        location.push_str(&format!("{name}={value}&"));
    }
    location.push_str(&format!("{}={}", outcome.parameter(), outcome.code()));
    if let Some((name, token)) = fragment.filter(|(_, token)| is_plain_token(token)) {
        location.push_str(&format!("#{name}={token}"));
    }
    Redirect::to(&location).into_response()
}

/// Whether a token typed or posted back may go into an address as it is: our tokens are URL-safe and short; any
/// other is refused anyway, so it is not worth keeping.
fn is_plain_token(token: &str) -> bool {
    !token.is_empty()
        && token.chars().count() <= one_time::MAX_TOKEN_CHARS
        && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The outcome a refusal shows on the page. Internal errors are logged here, as [`ApiError`]'s answer would.
fn outcome_of(error: ApiError) -> FormOutcome {
    match error {
        ApiError::InvalidCredentials => FormOutcome::InvalidCredentials,
        ApiError::TooManyRequests { .. } => FormOutcome::RateLimited,
        ApiError::Unauthorized => FormOutcome::SignedOut,
        ApiError::Conflict(_) => FormOutcome::EmailTaken,
        ApiError::Forbidden { code, .. } => match code {
            "account_disabled" => FormOutcome::AccountDisabled,
            "signup_closed" => FormOutcome::SignUpClosed,
            "invite_required" => FormOutcome::InviteRequired,
            "setup_required" => FormOutcome::SetupRequired,
            _ => FormOutcome::Failed,
        },
        ApiError::Unprocessable { code, field, .. } => match (code, field.as_deref()) {
            ("invite_invalid", _) => FormOutcome::InviteInvalid,
            ("invite_expired", _) => FormOutcome::InviteExpired,
            ("invite_used_up", _) => FormOutcome::InviteUsedUp,
            ("reset_invalid", _) => FormOutcome::ResetInvalid,
            ("reset_expired", _) => FormOutcome::ResetExpired,
            ("reset_used", _) => FormOutcome::ResetUsed,
            ("reset_ended", _) => FormOutcome::ResetEnded,
            ("setup_invalid", _) => FormOutcome::SetupInvalid,
            (_, Some("email")) => FormOutcome::InvalidEmail,
            (_, Some("current_password")) => FormOutcome::CurrentPasswordWrong,
            (_, Some("password" | "new_password")) => FormOutcome::WeakPassword,
            _ => FormOutcome::Incomplete,
        },
        ApiError::BadRequest { .. } | ApiError::PayloadTooLarge | ApiError::UnsupportedMediaType(_) => {
            FormOutcome::Incomplete
        }
        ApiError::Internal(error) => {
            let reference = super::error::request_id().unwrap_or_default();
            tracing::error!(error = ?error, reference, "internal error answering a form");
            FormOutcome::Failed
        }
        _ => FormOutcome::Failed,
    }
}

/// A body that did not parse as the form (a field missing, another content type, too large).
fn incomplete(rejection: &FormRejection) -> FormOutcome {
    tracing::debug!(rejection = %rejection.body_text(), "form refused");
    FormOutcome::Incomplete
}

/// Signed in: the session cookie, and the way to the chat page.
fn signed_in(cookie: HeaderValue) -> Response {
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

/// `POST /signin`: as `POST /api/auth/login`.
async fn sign_in(
    State(state): State<AppState>,
    quota: Result<Quota<SignIn>, ApiError>,
    from: SignInFrom,
    form: Result<Form<LoginRequest>, FormRejection>,
) -> Response {
    let back = |outcome| back_to(SIGN_IN_ACTION, None, outcome, None);
    if let Err(refused) = quota {
        return back(outcome_of(refused));
    }
    let Form(body) = match form {
        Ok(form) => form,
        Err(rejection) => return back(incomplete(&rejection)),
    };
    let user = match auth::authenticate(&state, body).await {
        Ok(user) => user,
        Err(refused) => return back(outcome_of(refused)),
    };
    match auth::new_session(&state, &user, from).await {
        Ok((_, cookie)) => signed_in(cookie),
        Err(failed) => back(outcome_of(failed)),
    }
}

/// `POST /signup`: as `POST /api/auth/register`. A refusal keeps the setup link's token, else the invitation, in the
/// fragment.
async fn sign_up(
    State(state): State<AppState>,
    quota: Result<Quota<SignIn>, ApiError>,
    from: SignInFrom,
    form: Result<Form<RegisterRequest>, FormRejection>,
) -> Response {
    let back = |outcome, pass: Option<(&str, &str)>| {
        back_to(SIGN_UP_ACTION, None, outcome, pass.map(|(name, token)| (name, token.trim())))
    };
    let Form(body) = match form {
        Ok(form) => form,
        Err(rejection) => return back(incomplete(&rejection), None),
    };
    // The token the sign-up rests on: a setup link's wins, as in `create_account`.
    let pass = match (&body.setup, &body.invite) {
        (Some(setup), _) if !setup.trim().is_empty() => Some(("setup", setup.clone())),
        (_, Some(invite)) => Some(("invite", invite.clone())),
        _ => None,
    };
    let pass = pass.as_ref().map(|(name, token)| (*name, token.as_str()));
    if let Err(refused) = quota {
        return back(outcome_of(refused), pass);
    }
    let user = match auth::create_account(&state, body).await {
        Ok(user) => user,
        Err(refused) => return back(outcome_of(refused), pass),
    };
    match auth::new_session(&state, &user, from).await {
        Ok((_, cookie)) => signed_in(cookie),
        // The account exists: signing in is what is left to do.
        Err(failed) => back_to(SIGN_IN_ACTION, None, outcome_of(failed), None),
    }
}

/// `POST /reset-password`: as `POST /api/auth/reset-password`, then on to sign in. A refusal keeps the link's
/// token in the fragment.
async fn reset_password(
    State(state): State<AppState>,
    quota: Result<Quota<SignIn>, ApiError>,
    form: Result<Form<ResetPasswordRequest>, FormRejection>,
) -> Response {
    let back = |outcome, token: &str| back_to(RESET_PASSWORD_ACTION, None, outcome, Some(("token", token.trim())));
    let Form(body) = match form {
        Ok(form) => form,
        Err(rejection) => return back(incomplete(&rejection), ""),
    };
    let token = body.token.clone();
    if let Err(refused) = quota {
        return back(outcome_of(refused), &token);
    }
    match super::admin::reset_with_link(&state, body).await {
        Ok(()) => back_to(SIGN_IN_ACTION, None, FormOutcome::PasswordSet, None),
        Err(refused) => back(outcome_of(refused), &token),
    }
}

/// The settings page with the outcome of its form `form`.
fn back_to_settings(form: &str, outcome: FormOutcome) -> Response {
    back_to(SETTINGS, Some(("form", form)), outcome, None)
}

/// Without a live session, the way to sign in.
fn to_sign_in(refused: ApiError) -> Response {
    back_to(SIGN_IN_ACTION, None, outcome_of(refused), None)
}

/// `POST /settings/password`: as `POST /api/auth/password`.
async fn change_password(
    State(state): State<AppState>,
    user: Result<AuthUser, ApiError>,
    form: Result<Form<ChangePasswordRequest>, FormRejection>,
) -> Response {
    let user = match user {
        Ok(user) => user,
        Err(ApiError::TooManyRequests { .. }) => {
            return back_to_settings(CHANGE_PASSWORD_FORM, FormOutcome::RateLimited)
        }
        Err(refused) => return to_sign_in(refused),
    };
    let Form(body) = match form {
        Ok(form) => form,
        Err(rejection) => return back_to_settings(CHANGE_PASSWORD_FORM, incomplete(&rejection)),
    };
    let outcome = match auth::set_new_password(&state, &user, body).await {
        Ok(()) => FormOutcome::PasswordChanged,
        Err(refused) => outcome_of(refused),
    };
    back_to_settings(CHANGE_PASSWORD_FORM, outcome)
}

/// `POST /settings/delete-account`: as `DELETE /api/auth/me`; then signed out, on the sign-in page.
async fn delete_account(
    State(state): State<AppState>,
    user: Result<AuthUser, ApiError>,
    form: Result<Form<DeleteAccountRequest>, FormRejection>,
) -> Response {
    let user = match user {
        Ok(user) => user,
        Err(ApiError::TooManyRequests { .. }) => {
            return back_to_settings(DELETE_ACCOUNT_FORM, FormOutcome::RateLimited)
        }
        Err(refused) => return to_sign_in(refused),
    };
    let Form(body) = match form {
        Ok(form) => form,
        Err(rejection) => return back_to_settings(DELETE_ACCOUNT_FORM, incomplete(&rejection)),
    };
    let refused = match auth::remove_account(&state, &user, body).await {
        Ok(()) => None,
        Err(ApiError::Unprocessable { .. }) => Some(FormOutcome::PasswordWrong),
        Err(ApiError::Conflict(_)) => Some(FormOutcome::LastAdministrator),
        Err(other) => Some(outcome_of(other)),
    };
    if let Some(outcome) = refused {
        return back_to_settings(DELETE_ACCOUNT_FORM, outcome);
    }
    let done = back_to(SIGN_IN_ACTION, None, FormOutcome::AccountDeleted, None);
    match auth::expired_cookie(&state) {
        Ok(cookie) => ([(header::SET_COOKIE, cookie)], done).into_response(),
        Err(failed) => back_to(SIGN_IN_ACTION, None, outcome_of(failed), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn location(response: &Response) -> &str {
        assert_eq!(response.status(), axum::http::StatusCode::SEE_OTHER);
        response.headers()[header::LOCATION].to_str().unwrap()
    }

    #[test]
    fn refusals_go_back_with_a_code_and_plain_tokens_in_the_fragment_only() {
        let back = back_to("/signup", None, FormOutcome::WeakPassword, Some(("invite", "Ab_9-x")));
        assert_eq!(location(&back), "/signup?error=weak_password#invite=Ab_9-x");
        // A token that could break out of the address is left behind.
        let odd = back_to("/signup", None, FormOutcome::InviteInvalid, Some(("invite", "a\"b&c=d")));
        assert_eq!(location(&odd), "/signup?error=invite_invalid");
        let done = back_to(SETTINGS, Some(("form", CHANGE_PASSWORD_FORM)), FormOutcome::PasswordChanged, None);
        assert_eq!(location(&done), "/settings?form=change-password&done=password_changed");
    }

    #[test]
    fn refusals_name_what_went_wrong_and_nothing_internal() {
        assert_eq!(outcome_of(ApiError::InvalidCredentials), FormOutcome::InvalidCredentials);
        assert_eq!(outcome_of(ApiError::TooManyRequests { retry_after_secs: 3 }), FormOutcome::RateLimited);
        assert_eq!(outcome_of(ApiError::invalid("new_password", "too short")), FormOutcome::WeakPassword);
        assert_eq!(outcome_of(ApiError::invalid("current_password", "wrong")), FormOutcome::CurrentPasswordWrong);
        assert_eq!(outcome_of(ApiError::Internal(anyhow::anyhow!("db at 10.0.0.3 down"))), FormOutcome::Failed);
    }
}
