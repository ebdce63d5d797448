//! Rate limits (GCRA via `governor`): per user over the whole API, tighter per user for costly routes, and per
//! client IP address for sign-in and sign-up. Over a limit the answer is `429` with `Retry-After`.
//!
//! The general limit is checked by [`AuthUser`](super::extract::AuthUser) for every signed-in request. A route
//! opts into a tighter one by taking a [`Quota`] argument, e.g. a search handler adds `_: Quota<Search>` and an
//! export handler `_: Quota<Export>`; sign-in and sign-up take `_: Quota<SignIn>`.

use std::{hash::Hash, marker::PhantomData, net::IpAddr, num::NonZeroU32, sync::Arc};

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

/// A per-minute limit on one kind of key; `None` when that limit is off.
struct Limit<K: Hash + Eq + Clone>(Option<DefaultKeyedRateLimiter<K>>);

impl<K: Hash + Eq + Clone> Limit<K> {
    fn per_minute(enabled: bool, per_minute: u32) -> Self {
        Self(NonZeroU32::new(per_minute).filter(|_| enabled).map(|n| RateLimiter::keyed(GovernorQuota::per_minute(n))))
    }

    fn check(&self, key: &K) -> Result<(), ApiError> {
        let Some(limiter) = &self.0 else { return Ok(()) };
        limiter.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            // Round up: waiting the announced time must be enough.
            ApiError::TooManyRequests { retry_after_secs: wait.as_secs() + u64::from(wait.subsec_nanos() > 0) }
        })?;
        // Forget keys that are back to a full allowance, so memory stays bounded by recent callers.
        if limiter.len() > 10_000 {
            limiter.retain_recent();
        }
        Ok(())
    }
}

/// Every limiter of one server instance.
pub struct RateLimits {
    general: Limit<Uuid>,
    search: Limit<Uuid>,
    export: Limit<Uuid>,
    chat: Limit<Uuid>,
    upload: Limit<Uuid>,
    sign_in: Limit<IpAddr>,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits").finish_non_exhaustive()
    }
}

impl RateLimits {
    /// Limiters as configured.
    pub fn new(config: &RateLimitConfig) -> Arc<Self> {
        let on = config.enabled != "off";
        Arc::new(Self {
            general: Limit::per_minute(on, config.general),
            search: Limit::per_minute(on, config.search),
            export: Limit::per_minute(on, config.export),
            chat: Limit::per_minute(on, config.chat),
            upload: Limit::per_minute(on, config.upload),
            sign_in: Limit::per_minute(on, config.auth),
        })
    }

    /// Counts one request of `user` against the general limit.
    pub fn check_general(&self, user: Uuid) -> Result<(), ApiError> {
        self.general.check(&user)
    }
}

/// A kind of tighter limit a route can take as an extractor.
pub trait LimitKind: Send + Sync + 'static {
    /// Checks one request against this limit.
    fn check(limits: &RateLimits, parts: &Parts, user: Option<Uuid>) -> Result<(), ApiError>;
    /// Whether the limit is per user (the request must be signed in) rather than per IP address.
    const PER_USER: bool = true;
}

/// Chat turns per user.
pub struct ChatTurns;
/// Searches per user.
pub struct Search;
/// Exports and imports per user.
pub struct Export;
/// File uploads per user.
pub struct Upload;
/// Sign-in and sign-up attempts per client IP address.
pub struct SignIn;

impl LimitKind for ChatTurns {
    fn check(limits: &RateLimits, _: &Parts, user: Option<Uuid>) -> Result<(), ApiError> {
        limits.chat.check(&user.ok_or(ApiError::Unauthorized)?)
    }
}

impl LimitKind for Search {
    fn check(limits: &RateLimits, _: &Parts, user: Option<Uuid>) -> Result<(), ApiError> {
        limits.search.check(&user.ok_or(ApiError::Unauthorized)?)
    }
}

impl LimitKind for Export {
    fn check(limits: &RateLimits, _: &Parts, user: Option<Uuid>) -> Result<(), ApiError> {
        limits.export.check(&user.ok_or(ApiError::Unauthorized)?)
    }
}

impl LimitKind for Upload {
    fn check(limits: &RateLimits, _: &Parts, user: Option<Uuid>) -> Result<(), ApiError> {
        limits.upload.check(&user.ok_or(ApiError::Unauthorized)?)
    }
}

impl LimitKind for SignIn {
    const PER_USER: bool = false;

    fn check(limits: &RateLimits, parts: &Parts, _: Option<Uuid>) -> Result<(), ApiError> {
        limits.sign_in.check(&client_ip(parts))
    }
}

/// The peer address of the connection. Headers such as `X-Forwarded-For` are not trusted: anyone can send
/// them. Without connection info (requests made in-process) every caller shares one key.
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
        let user = if K::PER_USER { Some(AuthUser::from_request_parts(parts, state).await?.id) } else { None };
        K::check(&state.limits, parts, user)?;
        Ok(Self(PhantomData))
    }
}
