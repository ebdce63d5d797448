//! The breached passwords new ones are checked against, shipped in the binary: the 43,940 of at least 12
//! characters among the million most frequent of Mark Burnett's "10 million passwords" (OWASP SecLists, CC BY-SA
//! 3.0), lower-cased; `scripts/breached-passwords` rebuilds the file. Unpacked on first use (about 2 MB).

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
