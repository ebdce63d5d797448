//! Text out of uploaded files: plain text and Markdown as they are, PDF through `pdf-extract`.

/// The kinds of file Quire reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Text,
    Markdown,
    Pdf,
}

impl FileKind {
    /// The kind from the declared content type and the file name; `None` for anything else.
    pub fn detect(content_type: Option<&str>, filename: &str, bytes: &[u8]) -> Option<FileKind> {
        let lower = filename.to_lowercase();
        let extension = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let mime = content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_lowercase();
        if bytes.starts_with(b"%PDF-") && (mime == "application/pdf" || extension == "pdf") {
            return Some(FileKind::Pdf);
        }
        if mime == "application/pdf" || extension == "pdf" {
            // Says PDF, is not one: refused rather than indexed as garbage.
            return None;
        }
        let texty = std::str::from_utf8(bytes).is_ok();
        match (mime.as_str(), extension) {
            (_, "md" | "markdown") | ("text/markdown" | "text/x-markdown", _) if texty => Some(FileKind::Markdown),
            (_, "txt" | "text") | ("text/plain", _) if texty => Some(FileKind::Text),
            // Browsers send unknown files as application/octet-stream; accept them by extension only.
            _ => None,
        }
    }

    /// The content type stored and shown for the file.
    pub fn content_type(self) -> &'static str {
        match self {
            FileKind::Text => "text/plain",
            FileKind::Markdown => "text/markdown",
            FileKind::Pdf => "application/pdf",
        }
    }
}

/// Why a file's text could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("the file is not valid UTF-8 text")]
    NotUtf8,
    #[error("the PDF could not be read")]
    Pdf,
}

/// The text of a file. PDF parsing runs on a blocking thread and a panic inside the parser (malformed
/// files) is turned into an error.
pub async fn extract_text(kind: FileKind, bytes: Vec<u8>) -> Result<String, ExtractError> {
    match kind {
        FileKind::Text | FileKind::Markdown => {
            let text = String::from_utf8(bytes).map_err(|_| ExtractError::NotUtf8)?;
            Ok(text.trim_start_matches('\u{feff}').to_string())
        }
        FileKind::Pdf => tokio::task::spawn_blocking(move || pdf_extract::extract_text_from_mem(&bytes))
            .await
            .map_err(|_| ExtractError::Pdf)?
            .map_err(|e| {
                tracing::info!(error = %e, "pdf text extraction failed");
                ExtractError::Pdf
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_kinds_by_type_name_and_content() {
        assert_eq!(FileKind::detect(Some("text/plain"), "a.txt", b"hi"), Some(FileKind::Text));
        assert_eq!(FileKind::detect(Some("application/octet-stream"), "a.md", b"# hi"), Some(FileKind::Markdown));
        assert_eq!(FileKind::detect(Some("application/pdf"), "x.pdf", b"%PDF-1.7"), Some(FileKind::Pdf));
        assert_eq!(FileKind::detect(Some("application/pdf"), "x.pdf", b"not a pdf"), None);
        assert_eq!(FileKind::detect(Some("image/png"), "x.png", b"\x89PNG"), None);
        assert_eq!(FileKind::detect(Some("text/plain"), "bad.txt", &[0xff, 0xfe, 0x00]), None);
    }
}
