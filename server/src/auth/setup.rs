//! The first administrator, made by someone who can read the server's log or run its binary: a one-time setup
//! link printed at start while there is no administrator and sign-up is by invitation or closed, and
//! `quire admin create` on the command line. In `open` mode the first account to sign up administers Quire.

use wire::validate;

use super::{one_time, password};
use store::{admin::SIGN_UP_MODE_SETTING, DynStore, NewUser, SignUpMode, SignUpPass, StoreError, User};

/// The log target of the line that prints the setup link: the one line the log's redaction leaves as it is
/// (`ops::logs`), since the link is meant for the operator who reads it.
pub const SETUP_LINK_TARGET: &str = "quire::setup_link";

/// The sign-up mode in force: the one an administrator set (shared by every instance), else `configured`.
pub async fn sign_up_mode(store: &DynStore, configured: SignUpMode) -> store::Result<SignUpMode> {
    let stored = store.setting(SIGN_UP_MODE_SETTING).await?;
    Ok(stored.as_deref().and_then(SignUpMode::parse).unwrap_or(configured))
}

/// A new setup link's token, stored as its hash, while Quire has no administrator; `None` once it has one.
/// Tokens issued before (by this instance or another on the same database) stay valid.
pub async fn issue(store: &DynStore) -> store::Result<Option<String>> {
    let (token, hash) = one_time::issue();
    Ok(store.create_setup_token(&hash).await?.then_some(token))
}

/// At start: when Quire has no administrator and sign-up is not `open`, logs a setup link under `base` (where
/// people reach this instance) that makes the first administrator. Whether it logged one.
pub async fn announce(store: &DynStore, configured: SignUpMode, base: &str) -> store::Result<bool> {
    if sign_up_mode(store, configured).await? == SignUpMode::Open {
        return Ok(false);
    }
    let Some(token) = issue(store).await? else { return Ok(false) };
    let link = format!("{}/signup?setup={token}", base.trim_end_matches('/'));
    tracing::warn!(
        target: SETUP_LINK_TARGET,
        %link,
        "Quire has no administrator yet: open this one-time setup link to create the first account (it works \
         until an administrator exists; `quire admin create` is the alternative)"
    );
    Ok(true)
}

/// Why `quire admin create` made no administrator.
#[derive(Debug, thiserror::Error)]
pub enum CreateAdminError {
    /// The e-mail address, display name or password is not acceptable.
    #[error("{0}")]
    Invalid(String),
    #[error("an account with this e-mail address exists already")]
    Taken,
    #[error(transparent)]
    Store(StoreError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// Creates an administrator, whatever the sign-up mode, with the checks sign-up makes of its fields; every
/// setup link then stops working.
pub async fn create_admin(
    store: &DynStore,
    email: &str,
    new_password: String,
    display_name: Option<&str>,
) -> Result<User, CreateAdminError> {
    let invalid = |e: validate::Invalid| CreateAdminError::Invalid(e.message);
    let email = validate::email(email).map_err(invalid)?;
    validate::password(&new_password).map_err(invalid)?;
    let display_name = validate::display_name(display_name.unwrap_or_default()).map_err(invalid)?;
    password::check_new(&new_password, &email, &display_name)
        .map_err(|weak| CreateAdminError::Invalid(weak.to_string()))?;
    let display_name =
        if display_name.is_empty() { email.split('@').next().unwrap_or_default().to_string() } else { display_name };
    let password_hash = password::hash(new_password).await?;
    let new = NewUser { email, password_hash, display_name };
    match store.sign_up(new, SignUpMode::Closed, Some(SignUpPass::Operator)).await {
        Ok(Ok(user)) => Ok(user),
        Ok(Err(refusal)) => Err(CreateAdminError::Internal(anyhow::anyhow!("refused: {refusal:?}"))),
        Err(StoreError::Conflict(_)) => Err(CreateAdminError::Taken),
        Err(e) => Err(CreateAdminError::Store(e)),
    }
}
