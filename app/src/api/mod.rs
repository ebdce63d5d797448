//! The browser's side of the API: the wire types (the `wire` crate, re-exported here so views say `api::Thread`)
//! and the calls that send and receive them.

pub use wire::*;

pub mod admin_calls;
pub mod client;
pub mod project_calls;
pub mod upload;

/// The value of `name` in the fragment of the page the browser shows; `None` on the server, which never sees one.
pub fn from_fragment(name: &str) -> Option<String> {
    #[cfg(feature = "hydrate")]
    {
        let hash = web_sys::window().and_then(|window| window.location().hash().ok())?;
        forms::fragment_value(&hash, name)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = name;
        None
    }
}
