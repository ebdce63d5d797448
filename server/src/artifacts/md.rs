//! The Markdown export: the stored text itself, ending with one newline.

/// The Markdown file of a document.
pub fn render(content: &str) -> Vec<u8> {
    let mut text = content.trim_end().to_string();
    text.push('\n');
    text.into_bytes()
}
