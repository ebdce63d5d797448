//! Accounts and sessions: password hashing, signed session tokens and the key that signs them, and personal API
//! tokens.

pub mod api_token;
pub mod breached;
pub mod device;
pub mod jwt;
pub mod oidc;
pub mod one_time;
pub mod password;
pub mod reach;
pub mod secret;
pub mod sessions;
pub mod setup;
pub mod throttle;

pub use jwt::{Claims, JwtKeys, HOST_SESSION_COOKIE, SESSION_COOKIE};
pub use secret::JwtSecret;
