//! How a download is named, for documents and conversations alike: the title with letters and digits of any
//! script kept, and a `Content-Disposition` that carries the exact name (RFC 6266) beside an ASCII one for old
//! clients.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

/// A file name from a title: letters and digits of any script, dashes and underscores kept, everything else a
/// space, spaces collapsed, at most 100 characters before the extension; `fallback` when nothing is left.
pub fn file_name(title: &str, extension: &str, fallback: &str) -> String {
    let cleaned: String =
        title.chars().map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { c } else { ' ' }).collect();
    let stem: String = cleaned.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(100).collect();
    let stem = stem.trim_end();
    format!("{}.{extension}", if stem.is_empty() { fallback } else { stem })
}

/// `attachment` with an ASCII `filename` for old clients and the exact UTF-8 name in `filename*` (RFC 6266).
pub fn content_disposition(file_name: &str) -> String {
    let ascii: String = file_name
        .chars()
        .map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '_' })
        .filter(|c| *c != '"' && *c != '\\')
        .collect();
    let mut encoded = String::new();
    for byte in file_name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

/// A download: the body with its type and `Content-Disposition: attachment` naming the file.
pub fn attachment(body: impl IntoResponse, content_type: &'static str, file_name: &str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&content_disposition(file_name)) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_letters_of_any_script_and_are_never_empty() {
        assert_eq!(file_name("User Stories: Café / Ünïcode", "md", "document"), "User Stories Café Ünïcode.md");
        assert_eq!(file_name("Login flow: SSO & \"e-mail\"", "md", "conversation"), "Login flow SSO e-mail.md");
        assert_eq!(file_name("Привет", "json", "conversation"), "Привет.json");
        assert_eq!(file_name("../../etc/passwd", "json", "conversation"), "etc passwd.json");
        assert_eq!(file_name("  ?!  ", "pdf", "document"), "document.pdf");
        assert_eq!(file_name(&"a".repeat(300), "md", "x").len(), 103);
    }

    #[test]
    fn the_disposition_carries_both_names() {
        assert_eq!(
            content_disposition("Café plan.pdf"),
            "attachment; filename=\"Caf_ plan.pdf\"; filename*=UTF-8''Caf%C3%A9%20plan.pdf"
        );
        assert_eq!(content_disposition("a\"b\\c.md"), "attachment; filename=\"abc.md\"; filename*=UTF-8''a%22b%5Cc.md");
    }
}
