//! Rate limits (GCRA): per user over the whole API (checked by [`AuthUser`](super::extract::AuthUser)), tighter
//! per user for costly routes and per client IP address for sign-in, which a route opts into with a [`Quota`]
//! argument (`_: Quota<Search>`). Over a limit the answer is `429` with `Retry-After`.
//!
//! On PostgreSQL each check is one statement on a row per key, so instances sharing a database share every
//! limit; on SQLite one process owns the database and counts in memory (`governor`).

use std::{fmt, marker::PhantomData, net::IpAddr, num::NonZeroU32, sync::Arc, time::Duration};

use axum::{
    extract::{ConnectInfo, FromRequestParts},
    http::request::Parts,
};
use governor::{
    clock::{Clock, DefaultClock},
    DefaultKeyedRateLimiter, Quota as GovernorQuota, RateLimiter,
};
use uuid::Uuid;

use super::error::ApiError;
use super::extract::AuthUser;
use crate::config::RateLimitConfig;
use crate::AppState;
use store::{Admission, Rate, SharedLimits};

/// How often an instance deletes the shared limits' rows that have run out (they are as good as missing).
const FORGET_IDLE_EVERY: Duration = Duration::from_secs(60);

/// Who a limit counts: a signed-in user or a client address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// A signed-in user.
    User(Uuid),
    /// The peer address of a connection.
    Address(IpAddr),
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::User(id) => write!(f, "user:{id}"),
            Key::Address(ip) => write!(f, "ip:{ip}"),
        }
    }
}

/// One per-minute limit; `rate` is `None` when it is off.
pub struct Limit {
    name: &'static str,
    rate: Option<Rate>,
    /// The in-memory count, where the store keeps none.
    local: Option<DefaultKeyedRateLimiter<Key>>,
}

impl Limit {
    fn per_minute(name: &'static str, enabled: bool, per_minute: u32, shared: bool) -> Self {
        let n = NonZeroU32::new(per_minute).filter(|_| enabled);
        let local = n.filter(|_| !shared).map(|n| RateLimiter::keyed(GovernorQuota::per_minute(n)));
        Self { name, rate: n.map(Rate::per_minute), local }
    }

    async fn check(&self, shared: Option<&dyn SharedLimits>, key: Key) -> Result<(), ApiError> {
        let Some(rate) = self.rate else { return Ok(()) };
        let wait = match (shared, &self.local) {
            (Some(shared), _) => match shared.admit(&format!("{}:{key}", self.name), rate, store::now()).await? {
                Admission::Admitted => return Ok(()),
                Admission::Refused { retry_after } => retry_after,
            },
            (None, Some(local)) => {
                let Err(not_until) = local.check_key(&key) else {
                    // Forget keys that are back to a full allowance, so memory stays bounded by recent callers.
                    if local.len() > 10_000 {
                        local.retain_recent();
                    }
                    return Ok(());
                };
                not_until.wait_time_from(DefaultClock::default().now())
            }
            (None, None) => return Ok(()),
        };
        // Round up: waiting the announced time must be enough.
        Err(ApiError::TooManyRequests { retry_after_secs: wait.as_secs() + u64::from(wait.subsec_nanos() > 0) })
    }
}

/// Every limit, counted in the database when the store shares them between instances, else in this process.
pub struct RateLimits {
    shared: Option<Arc<dyn SharedLimits>>,
    general: Limit,
    search: Limit,
    export: Limit,
    chat: Limit,
    upload: Limit,
    sign_in: Limit,
}

impl fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimits").field("shared", &self.shared.is_some()).finish_non_exhaustive()
    }
}

impl RateLimits {
    /// Limits as configured, counted in `shared` when there is one (which this instance then keeps tidy).
    pub fn new(config: &RateLimitConfig, shared: Option<Arc<dyn SharedLimits>>) -> Arc<Self> {
        let on = config.enabled != "off";
        let db = shared.is_some();
        if let Some(shared) = shared.clone().filter(|_| on) {
            tokio::spawn(forget_idle(shared));
        }
        Arc::new(Self {
            shared,
            general: Limit::per_minute("general", on, config.general, db),
            search: Limit::per_minute("search", on, config.search, db),
            export: Limit::per_minute("export", on, config.export, db),
            chat: Limit::per_minute("chat", on, config.chat, db),
            upload: Limit::per_minute("upload", on, config.upload, db),
            sign_in: Limit::per_minute("sign_in", on, config.auth, db),
        })
    }

    /// Counts one request of `user` against the general limit.
    pub async fn check_general(&self, user: Uuid) -> Result<(), ApiError> {
        self.general.check(self.shared.as_deref(), Key::User(user)).await
    }

    /// Counts one search of `user` against the search limit (for a search made other than through a route,
    /// which takes `Quota<Search>`).
    pub async fn check_search(&self, user: Uuid) -> Result<(), ApiError> {
        self.search.check(self.shared.as_deref(), Key::User(user)).await
    }
}

/// Deletes the shared rows that ran out, now and then, so the table holds only recent callers.
async fn forget_idle(shared: Arc<dyn SharedLimits>) {
    let mut every = tokio::time::interval(FORGET_IDLE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if let Err(e) = shared.forget_idle_limits(store::now()).await {
            tracing::warn!(error = %e, "deleting spent rate-limit rows failed");
        }
    }
}

/// A kind of tighter limit a route can take as an extractor.
pub trait LimitKind: Send + Sync + 'static {
    /// The limit among all of them.
    fn limit(limits: &RateLimits) -> &Limit;
    /// Whether the limit is per user (the request must be signed in) rather than per IP address.
    const PER_USER: bool = true;
}

/// Declares each per-user kind of limit: a marker type whose limit is the named field of [`RateLimits`].
macro_rules! per_user_limits {
    ($($(#[$doc:meta])* $kind:ident => $field:ident,)*) => {
        $(
            $(#[$doc])*
            pub struct $kind;

            impl LimitKind for $kind {
                fn limit(limits: &RateLimits) -> &Limit {
                    &limits.$field
                }
            }
        )*
    };
}

per_user_limits! {
    /// Chat turns per user.
    ChatTurns => chat,
    /// Searches per user.
    Search => search,
    /// Exports and imports per user.
    Export => export,
    /// File uploads per user.
    Upload => upload,
}

/// Sign-in and sign-up attempts per client IP address.
pub struct SignIn;

impl LimitKind for SignIn {
    const PER_USER: bool = false;

    fn limit(limits: &RateLimits) -> &Limit {
        &limits.sign_in
    }
}

/// The peer address of the connection (`X-Forwarded-For` is not trusted: anyone can send it). Without connection
/// info (requests made in-process) every caller shares one key.
fn client_ip(parts: &Parts) -> IpAddr {
    parts
        .extensions
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

/// Extractor that admits the request under the limit `K`, or rejects it with `429` and `Retry-After`.
pub struct Quota<K: LimitKind>(PhantomData<K>);

impl<K: LimitKind> FromRequestParts<AppState> for Quota<K> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let key = if K::PER_USER {
            Key::User(AuthUser::from_request_parts(parts, state).await?.id)
        } else {
            Key::Address(client_ip(parts))
        };
        K::limit(&state.limits).check(state.limits.shared.as_deref(), key).await?;
        Ok(Self(PhantomData))
    }
}
