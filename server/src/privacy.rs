//! Personal data redaction (`QUIRE_REDACT_PII`): e-mail addresses, phone numbers, IBANs and card numbers become
//! typed placeholders before they are stored or sent to a model: in a person's messages and titles, in attached
//! files' text (before it is split and indexed), in imported conversations and documents, and in what a model
//! writes that is kept as a name or summary (conversation titles, document titles, conversation summaries).

use lazy_regex::{lazy_regex, Lazy};
use regex::{Captures, Regex};

static EMAIL: Lazy<Regex> = lazy_regex!(r"(?i)\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b");
static IBAN: Lazy<Regex> = lazy_regex!(r"\b[A-Z]{2}[0-9]{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?\b");
static CARD: Lazy<Regex> = lazy_regex!(r"\b[0-9](?:[ -]?[0-9]){12,18}\b");
static PHONE: Lazy<Regex> =
    lazy_regex!(r"(?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{2,4}(?:[ .-]?[0-9]{2,4}){1,5}");

/// Replaces personal data in `text` with `[EMAIL]`, `[IBAN]`, `[CARD]` and `[PHONE]`.
pub fn redact(text: &str) -> String {
    let text = EMAIL.replace_all(text, "[EMAIL]");
    let text = IBAN.replace_all(&text, |c: &Captures| keep_unless(&c[0], iban_valid(&c[0]), "[IBAN]"));
    let text = CARD.replace_all(&text, |c: &Captures| keep_unless(&c[0], luhn_valid(&c[0]), "[CARD]"));
    let text = PHONE.replace_all(&text, |c: &Captures| keep_unless(&c[0], looks_like_phone(&c[0]), "[PHONE]"));
    text.into_owned()
}

/// `text` with personal data replaced when `enabled` (`QUIRE_REDACT_PII`), at most `max_chars` characters long
/// (a placeholder can be longer than what it replaces, and the result must still fit where `text` did).
pub fn redact_if(enabled: bool, text: String, max_chars: usize) -> String {
    if !enabled {
        return text;
    }
    let redacted = redact(&text);
    if redacted.chars().count() <= max_chars {
        redacted
    } else {
        redacted.chars().take(max_chars).collect()
    }
}

fn keep_unless(original: &str, replace: bool, placeholder: &str) -> String {
    if replace {
        placeholder.to_string()
    } else {
        original.to_string()
    }
}

/// An international (`+`) or area-code (`(`) number has 7 to 15 digits; without those it needs 9 to 15 digits
/// and a leading 0 or grouping, so counts, years and order numbers are left alone.
fn looks_like_phone(text: &str) -> bool {
    let digits = text.chars().filter(char::is_ascii_digit).count();
    if text.starts_with('+') || text.starts_with('(') {
        (7..=15).contains(&digits)
    } else {
        (9..=15).contains(&digits) && (text.starts_with('0') || text.contains([' ', '-', '.']))
    }
}

/// The Luhn checksum of the digits in `text` (13 to 19 of them), as card numbers carry.
pub fn luhn_valid(text: &str) -> bool {
    let digits: Vec<u32> = text.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 1 {
                if d * 2 > 9 {
                    d * 2 - 9
                } else {
                    d * 2
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// The ISO 13616 check (mod 97) of an IBAN, spaces ignored.
pub fn iban_valid(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_uppercase();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut remainder: u32 = 0;
    for c in tail.chars().chain(head.chars()) {
        let value = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        remainder = if value < 10 { (remainder * 10 + value) % 97 } else { (remainder * 100 + value) % 97 };
    }
    remainder == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_becomes_its_placeholder() {
        let text = "Mail jane.doe@example.co.uk or call +44 20 7946 0958, IBAN DE89 3704 0044 0532 0130 00, \
                    card 4111 1111 1111 1111.";
        assert_eq!(redact(text), "Mail [EMAIL] or call [PHONE], IBAN [IBAN], card [CARD].");
    }

    #[test]
    fn ordinary_numbers_stay() {
        let text = "We expect 1200 users in 2026, order 12345, version 1.2.3, on 2026-11-25, card 4111 1111 1111 1112.";
        assert_eq!(redact(text), text);
        assert!(redact(text).contains("4111 1111 1111 1112"), "a number failing Luhn is not a card");
        assert!(redact(text).contains("1200 users in 2026"));
    }

    #[test]
    fn redaction_can_be_off_and_keeps_within_its_length() {
        let text = "Ask a@b.io".to_string();
        assert_eq!(redact_if(false, text.clone(), 10), text);
        assert_eq!(redact_if(true, text.clone(), 100), "Ask [EMAIL]");
        assert_eq!(redact_if(true, text, 10), "Ask [EMAIL");
    }

    #[test]
    fn checksums() {
        assert!(luhn_valid("4111-1111-1111-1111"));
        assert!(!luhn_valid("4111-1111-1111-1112"));
        assert!(iban_valid("GB82 WEST 1234 5698 7654 32"));
        assert!(!iban_valid("GB82 WEST 1234 5698 7654 33"));
    }
}
