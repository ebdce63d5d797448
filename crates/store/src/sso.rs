//! Single sign-on: the sign-ins under way through an OpenID Connect provider, shared by every instance (one may
//! start on one instance and come back to another), and the provider's accounts behind Quire's. Both backends
//! implement it (`sqlite/accounts.rs`, `postgres/accounts.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::accounts::{SessionRow, User, UserRow};
use super::columns::{shared_sql, Stored};
use super::{now, Result};

/// How long a sign-in may take at the provider, from leaving Quire to coming back.
pub const SSO_FLOW_MINUTES: i64 = 10;

/// A sign-in under way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoFlow {
    /// The `state` parameter sent to the provider, also kept in a cookie of the browser that left.
    pub state: String,
    /// The nonce the ID token must carry.
    pub nonce: String,
    /// The PKCE code verifier.
    pub verifier: String,
    /// The path of Quire's to go to once signed in.
    pub next: String,
    pub created_at: DateTime<Utc>,
}

impl SsoFlow {
    /// Whether it is too old to finish at `now`.
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        now - self.created_at > chrono::Duration::minutes(SSO_FLOW_MINUTES)
    }
}

/// Who the provider says signed in (its ID token, checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoIdentity {
    /// The provider's issuer URL.
    pub issuer: String,
    /// The provider's id of the person (`sub`), unique for the issuer.
    pub subject: String,
    /// The e-mail address it gives, lower case; `None` when it gives none.
    pub email: Option<String>,
    /// Whether the provider says the address is the person's (`email_verified`).
    pub email_verified: bool,
}

/// Why a sign-in through the provider finds no account to sign in to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SsoRefusal {
    /// The account behind the provider's is disabled.
    Disabled,
    /// No account is linked yet and the provider does not vouch for the e-mail address (or gives none): it can
    /// neither be linked to an account of that address nor make one.
    Unverified,
}

/// What the provider's account leads to.
#[derive(Debug, Clone, PartialEq)]
pub enum SsoAccount {
    /// The account linked to it before, or the account of its verified address, linked now.
    Found(User),
    /// No account yet: one of this verified address may be made.
    None,
}

shared_sql! {
    rows(SessionRow<D::Id, D::Time>, UserRow<D::Id, D::Time>);

    /// See [`SingleSignOn::begin_sso`]; the caller makes it one transaction.
    pub(crate) async fn begin_sso(conn: &mut D::Connection, flow: SsoFlow) -> Result<()> {
        let stale = now() - chrono::Duration::minutes(SSO_FLOW_MINUTES);
        sqlx::query("delete from sso_flows where created_at < $1").bind(D::time(stale)).execute(&mut *conn).await?;
        sqlx::query("insert into sso_flows (state, nonce, verifier, next, created_at) values ($1, $2, $3, $4, $5)")
            .bind(flow.state)
            .bind(flow.nonce)
            .bind(flow.verifier)
            .bind(flow.next)
            .bind(D::time(flow.created_at))
            .execute(conn)
            .await?;
        Ok(())
    }

    /// See [`SingleSignOn::take_sso`]: read and deleted in one statement, so two callbacks cannot both take it.
    pub(crate) async fn take_sso(conn: &mut D::Connection, state: String) -> Result<Option<SsoFlow>> {
        let row: Option<(String, String, String, String, D::Time)> = sqlx::query_as(
            "delete from sso_flows where state = $1 returning state, nonce, verifier, next, created_at",
        )
        .bind(state)
        .fetch_optional(conn)
        .await?;
        row.map(|(state, nonce, verifier, next, created)| {
            Ok(SsoFlow { state, nonce, verifier, next, created_at: created.read("created_at")? })
        })
        .transpose()
    }

    /// See [`SingleSignOn::sso_account`]; the caller makes it one transaction.
    pub(crate) async fn sso_account(
        conn: &mut D::Connection,
        identity: SsoIdentity,
    ) -> Result<std::result::Result<SsoAccount, SsoRefusal>> {
        let linked: Option<D::Id> = sqlx::query_scalar(
            "select user_id from sso_identities where issuer = $1 and subject = $2",
        )
        .bind(identity.issuer.clone())
        .bind(identity.subject.clone())
        .fetch_optional(&mut *conn)
        .await?;
        let user = match linked {
            Some(id) => Some(Self::user_by_id(&mut *conn, id.read("user_id")?).await?),
            None => {
                let Some(email) = identity.email.clone().filter(|_| identity.email_verified) else {
                    return Ok(Err(SsoRefusal::Unverified));
                };
                match Self::user_by_email(&mut *conn, email).await {
                    Ok(user) => Some(user),
                    Err(super::StoreError::NotFound) => None,
                    Err(e) => return Err(e),
                }
            }
        };
        let Some(user) = user else { return Ok(Ok(SsoAccount::None)) };
        if user.disabled {
            return Ok(Err(SsoRefusal::Disabled));
        }
        Self::link_sso(conn, user.id, identity).await?;
        Ok(Ok(SsoAccount::Found(user)))
    }

    /// See [`SingleSignOn::link_sso`].
    pub(crate) async fn link_sso(conn: &mut D::Connection, user: Uuid, identity: SsoIdentity) -> Result<()> {
        let at = now();
        sqlx::query(
            "insert into sso_identities (issuer, subject, user_id, email, created_at, last_signed_in)
             values ($1, $2, $3, $4, $5, $5)
             on conflict (issuer, subject) do update set email = excluded.email, last_signed_in = excluded.last_signed_in",
        )
        .bind(identity.issuer)
        .bind(identity.subject)
        .bind(D::id(user))
        .bind(identity.email.unwrap_or_default())
        .bind(D::time(at))
        .execute(conn)
        .await?;
        Ok(())
    }

    pub(crate) async fn record_sso_session(conn: &mut D::Connection, session: Uuid, id_token: String) -> Result<()> {
        sqlx::query("insert into sso_sessions (session_id, id_token) values ($1, $2)")
            .bind(D::id(session))
            .bind(id_token)
            .execute(conn)
            .await?;
        Ok(())
    }

    pub(crate) async fn sso_id_token(conn: &mut D::Connection, session: Uuid) -> Result<Option<String>> {
        Ok(sqlx::query_scalar("select id_token from sso_sessions where session_id = $1")
            .bind(D::id(session))
            .fetch_optional(conn)
            .await?)
    }
}

/// Sign-ins through an OpenID Connect provider, beside the rest of [`Store`](super::Store).
#[async_trait]
pub trait SingleSignOn: Send + Sync {
    /// Keeps a sign-in under way; those older than [`SSO_FLOW_MINUTES`] are purged on the way.
    async fn begin_sso(&self, flow: SsoFlow) -> Result<()>;
    /// Takes the sign-in under way with this `state`: it is gone afterwards, whoever asks again (a replayed
    /// callback finds nothing). Expired ones are returned, for the caller to refuse.
    async fn take_sso(&self, state: &str) -> Result<Option<SsoFlow>>;
    /// The account the provider's account leads to, in one transaction: the one linked to its issuer and subject;
    /// else, when the provider vouches for the address, the account of that address, which is linked to it now.
    /// A disabled account is refused.
    async fn sso_account(&self, identity: &SsoIdentity) -> Result<std::result::Result<SsoAccount, SsoRefusal>>;
    /// Links the provider's account to `user` (made for it just now), or records a sign-in of a linked one.
    async fn link_sso(&self, user: Uuid, identity: &SsoIdentity) -> Result<()>;
    /// Keeps the ID token a session was signed in with, to end it at the provider too.
    async fn record_sso_session(&self, session: Uuid, id_token: &str) -> Result<()>;
    /// The ID token the session was signed in with; `None` for a session signed in otherwise.
    async fn sso_id_token(&self, session: Uuid) -> Result<Option<String>>;
}

/// Implements [`SingleSignOn`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does.
macro_rules! single_sign_on_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use $crate::sso::{SingleSignOn, SsoAccount, SsoFlow, SsoIdentity, SsoRefusal};
            use $crate::Result;

            #[async_trait::async_trait]
            impl SingleSignOn for $backend {
                #[instrument(skip_all)]
                async fn begin_sso(&self, flow: SsoFlow) -> Result<()> {
                    self.write_together(move |conn| Box::pin(Shared::begin_sso(conn, flow))).await
                }

                #[instrument(skip_all)]
                async fn take_sso(&self, state: &str) -> Result<Option<SsoFlow>> {
                    let state = state.to_owned();
                    self.write(move |conn| Box::pin(Shared::take_sso(conn, state))).await
                }

                #[instrument(skip_all)]
                async fn sso_account(
                    &self,
                    identity: &SsoIdentity,
                ) -> Result<std::result::Result<SsoAccount, SsoRefusal>> {
                    let identity = identity.clone();
                    self.write_together(move |conn| Box::pin(Shared::sso_account(conn, identity))).await
                }

                #[instrument(skip_all)]
                async fn link_sso(&self, user: Uuid, identity: &SsoIdentity) -> Result<()> {
                    let identity = identity.clone();
                    self.write(move |conn| Box::pin(Shared::link_sso(conn, user, identity))).await
                }

                #[instrument(skip_all)]
                async fn record_sso_session(&self, session: Uuid, id_token: &str) -> Result<()> {
                    let id_token = id_token.to_owned();
                    self.write(move |conn| Box::pin(Shared::record_sso_session(conn, session, id_token))).await
                }

                #[instrument(skip_all)]
                async fn sso_id_token(&self, session: Uuid) -> Result<Option<String>> {
                    Shared::sso_id_token(&mut *self.read().await?, session).await
                }
            }
        };
    };
}
pub(crate) use single_sign_on_for;
