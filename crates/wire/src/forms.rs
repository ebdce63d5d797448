//! The plain HTML form posts that work before (or without) the page's WebAssembly: where each form posts, and the
//! outcomes the server sends the browser back with (`?error=<code>` or `?done=<code>` on the form's page). An
//! outcome is a code with a fixed text, so a crafted link can only show one of these texts, and the address never
//! holds what was typed.

/// `POST /signin`: e-mail and password (as [`LoginRequest`](super::LoginRequest)).
pub const SIGN_IN_ACTION: &str = "/signin";
/// `POST /signup`: e-mail, password and an invitation's token (as [`RegisterRequest`](super::RegisterRequest)).
pub const SIGN_UP_ACTION: &str = "/signup";
/// `POST /reset-password`: a reset link's token and the new password.
pub const RESET_PASSWORD_ACTION: &str = "/reset-password";
/// `POST /settings/password`: the current password and a new one (the session cookie names the account).
pub const CHANGE_PASSWORD_ACTION: &str = "/settings/password";
/// `POST /settings/delete-account`: the password (the session cookie names the account).
pub const DELETE_ACCOUNT_ACTION: &str = "/settings/delete-account";

/// Which form of the settings page an outcome belongs to (`?form=`).
pub const CHANGE_PASSWORD_FORM: &str = "change-password";
/// See [`CHANGE_PASSWORD_FORM`].
pub const DELETE_ACCOUNT_FORM: &str = "delete-account";

/// How a plain form post went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormOutcome {
    InvalidCredentials,
    AccountDisabled,
    RateLimited,
    InvalidEmail,
    WeakPassword,
    EmailTaken,
    SignUpClosed,
    InviteRequired,
    InviteInvalid,
    InviteExpired,
    InviteUsedUp,
    ResetInvalid,
    ResetExpired,
    ResetUsed,
    ResetEnded,
    SetupRequired,
    SetupInvalid,
    CurrentPasswordWrong,
    PasswordWrong,
    LastAdministrator,
    SignedOut,
    Incomplete,
    Failed,
    PasswordChanged,
    PasswordSet,
    AccountDeleted,
    SsoExpired,
    SsoCancelled,
    SsoUnavailable,
    SsoRefused,
    SsoInvalid,
    SsoUnverified,
    SsoNoAccount,
}

/// Every outcome with its code.
const CODES: &[(FormOutcome, &str)] = &[
    (FormOutcome::InvalidCredentials, "invalid_credentials"),
    (FormOutcome::AccountDisabled, "account_disabled"),
    (FormOutcome::RateLimited, "rate_limited"),
    (FormOutcome::InvalidEmail, "invalid_email"),
    (FormOutcome::WeakPassword, "weak_password"),
    (FormOutcome::EmailTaken, "email_taken"),
    (FormOutcome::SignUpClosed, "signup_closed"),
    (FormOutcome::InviteRequired, "invite_required"),
    (FormOutcome::InviteInvalid, "invite_invalid"),
    (FormOutcome::InviteExpired, "invite_expired"),
    (FormOutcome::InviteUsedUp, "invite_used_up"),
    (FormOutcome::ResetInvalid, "reset_invalid"),
    (FormOutcome::ResetExpired, "reset_expired"),
    (FormOutcome::ResetUsed, "reset_used"),
    (FormOutcome::ResetEnded, "reset_ended"),
    (FormOutcome::SetupRequired, "setup_required"),
    (FormOutcome::SetupInvalid, "setup_invalid"),
    (FormOutcome::CurrentPasswordWrong, "current_password_wrong"),
    (FormOutcome::PasswordWrong, "password_wrong"),
    (FormOutcome::LastAdministrator, "last_administrator"),
    (FormOutcome::SignedOut, "signed_out"),
    (FormOutcome::Incomplete, "incomplete"),
    (FormOutcome::Failed, "failed"),
    (FormOutcome::PasswordChanged, "password_changed"),
    (FormOutcome::PasswordSet, "password_set"),
    (FormOutcome::AccountDeleted, "account_deleted"),
    (FormOutcome::SsoExpired, "sso_expired"),
    (FormOutcome::SsoCancelled, "sso_cancelled"),
    (FormOutcome::SsoUnavailable, "sso_unavailable"),
    (FormOutcome::SsoRefused, "sso_refused"),
    (FormOutcome::SsoInvalid, "sso_invalid"),
    (FormOutcome::SsoUnverified, "sso_unverified"),
    (FormOutcome::SsoNoAccount, "sso_no_account"),
];

impl FormOutcome {
    /// The code in the address.
    pub fn code(self) -> &'static str {
        CODES.iter().find(|(outcome, _)| *outcome == self).map_or("failed", |(_, code)| code)
    }

    /// The outcome a code names; `None` for any other text.
    pub fn from_code(code: &str) -> Option<Self> {
        CODES.iter().find(|(_, known)| *known == code).map(|(outcome, _)| *outcome)
    }

    /// Whether the form's work was done (a notice) rather than refused (an error).
    pub fn is_done(self) -> bool {
        matches!(self, Self::PasswordChanged | Self::PasswordSet | Self::AccountDeleted)
    }

    /// The query parameter that carries it: `done` or `error`.
    pub fn parameter(self) -> &'static str {
        if self.is_done() {
            "done"
        } else {
            "error"
        }
    }

    /// What the page says.
    pub fn message(self) -> &'static str {
        match self {
            Self::InvalidCredentials => "Wrong e-mail or password.",
            Self::AccountDisabled => "This account is disabled. Ask the administrator.",
            Self::RateLimited => "Too many attempts. Wait a minute and try again.",
            Self::InvalidEmail => "Enter a valid e-mail address.",
            Self::WeakPassword => {
                "Choose another password: at least 12 characters, and not a common, easily guessed or breached one."
            }
            Self::EmailTaken => "An account with this e-mail address already exists.",
            Self::SignUpClosed => "Sign-up is closed. Ask the administrator for an account.",
            Self::InviteRequired => "Sign-up needs an invitation. Ask the administrator for an invitation link.",
            Self::InviteInvalid => "This invitation is not valid (or was revoked).",
            Self::InviteExpired => "This invitation has expired.",
            Self::InviteUsedUp => "This invitation has been used up.",
            Self::ResetInvalid => "This password reset link is not valid.",
            Self::ResetExpired => "This password reset link has expired. Ask for a new one.",
            Self::ResetUsed => "This password reset link was used already. Ask for a new one.",
            Self::ResetEnded => {
                "This password reset link has ended: a newer one was made, or the password was changed. Ask for a new one."
            }
            Self::SetupRequired => {
                "Quire has no administrator yet: the first account signs up with the setup link from the server's log."
            }
            Self::SetupInvalid => "This setup link is not valid, or an administrator has signed up already.",
            Self::CurrentPasswordWrong => "The current password is wrong.",
            Self::PasswordWrong => "The password is wrong.",
            Self::LastAdministrator => "You are the last administrator: make another account administrator first.",
            Self::SignedOut => "Sign in to continue.",
            Self::Incomplete => "Fill in every field and send the form again.",
            Self::Failed => "Something went wrong on our side. Try again.",
            Self::PasswordChanged => "Password changed. Other devices are signed out.",
            Self::PasswordSet => "Password set. Sign in with it now.",
            Self::AccountDeleted => "Your account and everything in it are deleted.",
            Self::SsoExpired => {
                "That sign-in expired, was used already or did not start in this browser. Sign in again."
            }
            Self::SsoCancelled => "The sign-in was cancelled at your organisation's sign-in page.",
            Self::SsoUnavailable => "Your organisation's sign-in service cannot be reached. Try again in a moment.",
            Self::SsoRefused => "Your organisation's sign-in service refused the sign-in. Sign in again.",
            Self::SsoInvalid => {
                "Your organisation's sign-in service sent an answer that did not pass Quire's checks. Ask the administrator."
            }
            Self::SsoUnverified => {
                "Your organisation's sign-in service does not confirm your e-mail address, so no account can be matched \
                 to it. Ask the administrator."
            }
            Self::SsoNoAccount => "There is no Quire account for you yet. Ask the administrator for one.",
        }
    }

    /// The outcome a page's query names (`error` or `done`, each only with its own kind), if any.
    pub fn from_query(error: Option<&str>, done: Option<&str>) -> Option<Self> {
        let error = error.and_then(Self::from_code).filter(|outcome| !outcome.is_done());
        error.or_else(|| done.and_then(Self::from_code).filter(|outcome| outcome.is_done()))
    }
}

/// The value of `name` in a URL fragment such as `#invite=...` (where a form's token comes back after a refusal:
/// a fragment is never sent to the server).
pub fn fragment_value(fragment: &str, name: &str) -> Option<String> {
    fragment
        .trim_start_matches('#')
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
        .filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_its_own_code_and_the_right_kind() {
        let mut codes: Vec<&str> = CODES.iter().map(|(_, code)| *code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), CODES.len());
        for (outcome, code) in CODES {
            assert_eq!(FormOutcome::from_code(code), Some(*outcome));
            assert_eq!(outcome.code(), *code);
        }
        assert_eq!(FormOutcome::from_code("<script>"), None);
        // An error code given as a notice (or the other way round) shows nothing.
        assert_eq!(FormOutcome::from_query(None, Some("invalid_credentials")), None);
        assert_eq!(FormOutcome::from_query(Some("password_set"), None), None);
        assert_eq!(FormOutcome::from_query(None, Some("password_set")), Some(FormOutcome::PasswordSet));
        let minimum = format!("at least {} characters", crate::MIN_PASSWORD_CHARS);
        assert!(FormOutcome::WeakPassword.message().contains(&minimum));
    }

    #[test]
    fn fragments_give_back_their_token() {
        assert_eq!(fragment_value("#invite=abc-123", "invite").as_deref(), Some("abc-123"));
        assert_eq!(fragment_value("invite=", "invite"), None);
        assert_eq!(fragment_value("#token=x&invite=y", "invite").as_deref(), Some("y"));
        assert_eq!(fragment_value("", "invite"), None);
    }
}
