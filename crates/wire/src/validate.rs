//! The rules fields follow wherever they come from, and their patterns in the OpenAPI document. Lengths count the
//! value as sent, before trimming, as the document says; no text may hold a NUL: PostgreSQL cannot store one.

use super::{
    MAX_DISPLAY_NAME_CHARS, MAX_EMAIL_CHARS, MAX_PASSWORD_CHARS, MAX_TAGS, MAX_TAG_CHARS, MAX_TITLE_CHARS,
    MIN_PASSWORD_CHARS,
};

/// A text with something other than whitespace in it and no NUL character (whitespace as Rust's
/// `char::is_whitespace` sees it).
pub const NOT_BLANK_PATTERN: &str =
    r"^[^\u0000]*[^\u0000\t-\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000]*$";
/// A text without NUL characters.
pub const NO_NUL_PATTERN: &str = r"^[^\u0000]*$";
/// An e-mail address as [`email`] takes it: `local@domain.tld`, no whitespace, no NUL.
pub const EMAIL_PATTERN: &str = r"^[^@\u0000\t-\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+@[^@.\u0000\t-\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+(\.[^@.\u0000\t-\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+)+$";

/// A value the API refuses: the field it came in, and why, in words for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub field: &'static str,
    pub message: String,
}

impl Invalid {
    /// A value of `field` that is not acceptable, and why.
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self { field, message: message.into() }
    }
}

/// Whether a text holds a NUL character.
pub fn has_nul(text: &str) -> bool {
    text.contains('\0')
}

/// A conversation's (or a document's) title, trimmed: 1 to [`MAX_TITLE_CHARS`] characters, not only
/// whitespace.
pub fn title(title: &str) -> Result<String, Invalid> {
    trimmed_text(title, MAX_TITLE_CHARS, "title", "title")
}

/// A project's name, trimmed: 1 to [`MAX_PROJECT_NAME_CHARS`](crate::MAX_PROJECT_NAME_CHARS) characters, not
/// only whitespace.
pub fn project_name(name: &str) -> Result<String, Invalid> {
    trimmed_text(name, crate::MAX_PROJECT_NAME_CHARS, "name", "name")
}

/// An API token's name, trimmed: 1 to [`MAX_TOKEN_NAME_CHARS`](crate::MAX_TOKEN_NAME_CHARS) characters, not
/// only whitespace.
pub fn token_name(name: &str) -> Result<String, Invalid> {
    trimmed_text(name, crate::MAX_TOKEN_NAME_CHARS, "name", "name")
}

/// A project's description, trimmed (it may be empty): at most
/// [`MAX_PROJECT_DESCRIPTION_CHARS`](crate::MAX_PROJECT_DESCRIPTION_CHARS) characters, no NUL.
pub fn project_description(text: &str) -> Result<String, Invalid> {
    let max = crate::MAX_PROJECT_DESCRIPTION_CHARS;
    if text.chars().count() > max {
        return Err(Invalid::new("description", format!("The description is longer than {max} characters.")));
    }
    if has_nul(text) {
        return Err(Invalid::new("description", "The description must not contain NUL characters."));
    }
    Ok(text.trim().to_string())
}

/// A project's instructions for the model, trimmed (they may be empty): at most
/// [`MAX_INSTRUCTIONS_CHARS`](crate::MAX_INSTRUCTIONS_CHARS) characters, no NUL.
pub fn project_instructions(text: &str) -> Result<String, Invalid> {
    let max = crate::MAX_INSTRUCTIONS_CHARS;
    if text.chars().count() > max {
        return Err(Invalid::new("instructions", format!("The instructions are longer than {max} characters.")));
    }
    if has_nul(text) {
        return Err(Invalid::new("instructions", "The instructions must not contain NUL characters."));
    }
    Ok(text.trim().to_string())
}

/// One tag, trimmed: 1 to [`MAX_TAG_CHARS`] characters, not only whitespace.
pub fn tag(tag: &str) -> Result<String, Invalid> {
    if tag.chars().count() > MAX_TAG_CHARS {
        return Err(Invalid::new("tags", format!("A tag is longer than {MAX_TAG_CHARS} characters.")));
    }
    if has_nul(tag) {
        return Err(Invalid::new("tags", "Tags must not contain NUL characters."));
    }
    let tag = tag.trim();
    if tag.is_empty() {
        return Err(Invalid::new("tags", "Tags must not be empty."));
    }
    Ok(tag.to_string())
}

/// A conversation's tags: at most [`MAX_TAGS`], each as [`tag`] says, trimmed, the repeated ones dropped.
pub fn tags(tags: &[String]) -> Result<Vec<String>, Invalid> {
    if tags.len() > MAX_TAGS {
        return Err(Invalid::new("tags", format!("A conversation has at most {MAX_TAGS} tags.")));
    }
    let mut clean: Vec<String> = Vec::with_capacity(tags.len());
    for raw in tags {
        let tag = tag(raw)?;
        if !clean.contains(&tag) {
            clean.push(tag);
        }
    }
    Ok(clean)
}

/// A message typed into a conversation, trimmed: at most `max_chars` characters, not only whitespace.
pub fn message(content: &str, max_chars: usize) -> Result<String, Invalid> {
    trimmed_text(content, max_chars, "content", "message")
}

/// A quoted passage ("Ask about this"), trimmed: at most [`MAX_QUOTE_CHARS`](crate::MAX_QUOTE_CHARS) characters,
/// no NUL, not only whitespace.
pub fn quote(text: &str) -> Result<String, Invalid> {
    trimmed_text(text, crate::MAX_QUOTE_CHARS, "quote", "quoted passage")
}

/// A requirement's text as a person writes it: trimmed, at most
/// [`MAX_REQUIREMENT_CHARS`](crate::MAX_REQUIREMENT_CHARS) characters, no NUL, not only whitespace.
pub fn requirement(text: &str) -> Result<String, Invalid> {
    trimmed_text(text, crate::MAX_REQUIREMENT_CHARS, "text", "requirement")
}

/// A document's text as a person saves it: at most [`MAX_ARTIFACT_CHARS`](crate::MAX_ARTIFACT_CHARS) characters,
/// no NUL, not only whitespace. Kept as written: leading spaces mean something in Markdown.
pub fn artifact_content(content: &str) -> Result<String, Invalid> {
    trimmed_text(content, crate::MAX_ARTIFACT_CHARS, "content", "document")?;
    Ok(content.to_string())
}

/// A text of `field`, trimmed: at most `max_chars` characters as sent, no NUL, not only whitespace. The errors
/// call it "the `noun`".
fn trimmed_text(text: &str, max_chars: usize, field: &'static str, noun: &str) -> Result<String, Invalid> {
    if text.chars().count() > max_chars {
        return Err(Invalid::new(field, format!("The {noun} is longer than {max_chars} characters.")));
    }
    if has_nul(text) {
        return Err(Invalid::new(field, format!("The {noun} must not contain NUL characters.")));
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(Invalid::new(field, format!("The {noun} must not be empty.")));
    }
    Ok(text.to_string())
}

/// An e-mail address to sign up with: `local@domain.tld` with at least one dot in the domain, no whitespace
/// or NUL, at most [`MAX_EMAIL_CHARS`] characters.
pub fn email(email: &str) -> Result<String, Invalid> {
    let valid = email.chars().count() <= MAX_EMAIL_CHARS
        && !email.chars().any(|c| c.is_whitespace() || c == '\0')
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && !domain.contains('@')
                && domain.split('.').count() >= 2
                && domain.split('.').all(|label| !label.is_empty())
        });
    if valid {
        Ok(email.to_string())
    } else {
        Err(Invalid::new("email", "Enter a valid e-mail address."))
    }
}

/// A new password: [`MIN_PASSWORD_CHARS`] to [`MAX_PASSWORD_CHARS`] characters.
pub fn password(password: &str) -> Result<(), Invalid> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_CHARS {
        return Err(Invalid::new("password", format!("The password needs at least {MIN_PASSWORD_CHARS} characters.")));
    }
    if n > MAX_PASSWORD_CHARS {
        return Err(Invalid::new("password", format!("The password is longer than {MAX_PASSWORD_CHARS} characters.")));
    }
    Ok(())
}

/// A display name, trimmed (empty when it was only whitespace): at most [`MAX_DISPLAY_NAME_CHARS`] characters,
/// no NUL.
pub fn display_name(name: &str) -> Result<String, Invalid> {
    if name.chars().count() > MAX_DISPLAY_NAME_CHARS {
        return Err(Invalid::new(
            "display_name",
            format!("The display name is longer than {MAX_DISPLAY_NAME_CHARS} characters."),
        ));
    }
    if has_nul(name) {
        return Err(Invalid::new("display_name", "The display name must not contain NUL characters."));
    }
    Ok(name.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_trimmed_and_bounded_as_sent() {
        assert_eq!(title("  Plan  ").unwrap(), "Plan");
        assert_eq!(title(&"x".repeat(MAX_TITLE_CHARS)).unwrap().len(), MAX_TITLE_CHARS);
        assert!(title(&format!(" {}", "x".repeat(MAX_TITLE_CHARS))).is_err(), "counted before trimming");
        assert!(title(" \t\u{3000}").is_err());
        assert!(title("a\0b").is_err());
        // Not whitespace to Rust, so a title.
        assert_eq!(title("\u{1c}").unwrap(), "\u{1c}");
    }

    #[test]
    fn tags_are_counted_as_sent_and_deduplicated() {
        let owned = |tags: &[&str]| tags.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        assert_eq!(tags(&owned(&[" a", "a", "b "])).unwrap(), ["a", "b"]);
        assert!(tags(&owned(&["a"; MAX_TAGS + 1])).is_err(), "eleven are too many, even all alike");
        assert!(tags(&owned(&[""])).is_err());
        assert!(tags(&owned(&[&"t".repeat(MAX_TAG_CHARS + 1)])).is_err());
    }

    #[test]
    fn e_mail_addresses_look_like_one() {
        assert!(email("ada@example.org").is_ok());
        for bad in ["", "ada", "@example.org", "ada@", "ada@org", "ada@example..org", "a b@example.org", " ada@x.org"] {
            assert!(email(bad).is_err(), "{bad:?}");
        }
        assert!(email("a\0@example.org").is_err());
    }

    #[test]
    fn the_patterns_say_what_the_rules_do() {
        // The patterns are written for ECMA-262 and Python; here their character classes are checked against
        // Rust's own idea of whitespace, character by character.
        let listed = |c: char| {
            matches!(c, '\t'..='\r' | ' ' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}'
                | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
        };
        for c in (0..=char::MAX as u32).filter_map(char::from_u32) {
            assert_eq!(c.is_whitespace(), listed(c), "{:?}", c);
        }
        for code in ["\\t-\\r", " ", "\\u0085", "\\u00a0", "\\u1680", "\\u2000-\\u200a", "\\u2028", "\\u2029"] {
            assert!(NOT_BLANK_PATTERN.contains(code), "{code}");
        }
        for code in ["\\u202f", "\\u205f", "\\u3000", "\\u0000"] {
            assert!(NOT_BLANK_PATTERN.contains(code), "{code}");
        }
        // The e-mail pattern's classes hold the same whitespace, three times.
        let start = "^[^\\u0000]*[^\\u0000".len();
        let whitespace = &NOT_BLANK_PATTERN[start..start + NOT_BLANK_PATTERN[start..].find(']').unwrap()];
        assert!(whitespace.starts_with("\\t-\\r") && whitespace.ends_with("\\u3000"), "{whitespace}");
        assert_eq!(EMAIL_PATTERN.matches(whitespace).count(), 3);
    }
}
