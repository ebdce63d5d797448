//! The list of breached passwords that new passwords are checked against, shipped inside the binary.
//!
//! `breached_passwords.txt.gz` holds the 43,940 passwords of at least 12 characters among the million most
//! frequent of Mark Burnett's "10 million passwords" (compiled from public breaches, published in OWASP
//! SecLists), lower-cased, one a line. `scripts/breached-passwords` rebuilds it and says where it comes from;
//! the list is under Creative Commons Attribution-ShareAlike 3.0. About 320 KB compressed; unpacked on first
//! use into a set of about 2 MB.

use std::io::Read;
use std::sync::LazyLock;

use rustc_hash::FxHashSet;

const COMPRESSED: &[u8] = include_bytes!("breached_passwords.txt.gz");

static BREACHED: LazyLock<FxHashSet<Box<str>>> = LazyLock::new(|| {
    let mut text = String::new();
    if let Err(e) = flate2::read::GzDecoder::new(COMPRESSED).read_to_string(&mut text) {
        // Only a corrupt build could get here; the rest of the password checks still apply.
        tracing::error!(error = %e, "the list of breached passwords could not be read");
    }
    text.lines().filter(|line| !line.is_empty()).map(Box::from).collect()
});

/// Whether `password` is in the list, whatever its letter case.
pub fn contains(password: &str) -> bool {
    BREACHED.contains(password.to_lowercase().as_str())
}

/// How many passwords the list holds.
pub fn len() -> usize {
    BREACHED.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_shipped_whole_and_matches_any_letter_case() {
        assert_eq!(len(), 43_940);
        for breached in ["password1234", "qwertyuiop123", "iloveyou1234", "Password1234", "QWERTYUIOP123"] {
            assert!(contains(breached), "{breached}");
        }
        for unlisted in ["lantern orchard velvet", "walrus-paperclip-nebula", "password123"] {
            assert!(!contains(unlisted), "{unlisted}");
        }
    }
}
