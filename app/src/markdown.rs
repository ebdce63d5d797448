//! Markdown to safe HTML, the same on the server and in the browser.
//!
//! Safety comes from construction rather than from cleaning afterwards: raw HTML in the source is shown as
//! text, images become plain links (nothing remote is loaded), and links keep only safe schemes.

use pulldown_cmark::{html, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Our own markup around code blocks: a copy button. Added after the source's HTML was turned into text.
const CODE_BLOCK_START: &str =
    "<div class=\"code-block\"><button type=\"button\" class=\"copy-code\" aria-label=\"Copy code\">Copy</button>";
const CODE_BLOCK_END: &str = "</div>";

/// Renders Markdown (CommonMark + tables, strikethrough, task lists) to HTML that executes nothing.
pub fn to_safe_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(markdown, options)
        .map(|event| match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::Image { dest_url, title, .. }) => Event::Start(Tag::Link {
                link_type: LinkType::Inline,
                dest_url: safe_url(dest_url),
                title,
                id: CowStr::Borrowed(""),
            }),
            Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
                Event::Start(Tag::Link { link_type, dest_url: safe_url(dest_url), title, id })
            }
            other => other,
        })
        .flat_map(|event| match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                vec![Event::Html(CowStr::Borrowed(CODE_BLOCK_START)), Event::Start(Tag::CodeBlock(kind))]
            }
            Event::End(TagEnd::CodeBlock) => {
                vec![Event::End(TagEnd::CodeBlock), Event::Html(CowStr::Borrowed(CODE_BLOCK_END))]
            }
            other => vec![other],
        });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// Keeps http(s), mailto and relative links; anything else (javascript:, data:, vbscript: ...) becomes `#`.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let trimmed: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    let lower = trimmed.to_ascii_lowercase();
    let scheme_end = lower.find(':');
    let path_start = lower.find(['/', '?', '#']);
    let has_scheme = matches!((scheme_end, path_start), (Some(c), Some(p)) if c < p)
        || (scheme_end.is_some() && path_start.is_none());
    if !has_scheme || lower.starts_with("http:") || lower.starts_with("https:") || lower.starts_with("mailto:") {
        url
    } else {
        CowStr::Borrowed("#")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_shown_as_text() {
        let html = to_safe_html("hi <script>alert(1)</script> <img src=x onerror=alert(1)>");
        assert!(!html.contains("<script"));
        assert!(!html.contains("<img"));
        assert!(html.contains("&lt;script&gt;"));
    }

    #[test]
    fn images_become_links() {
        let html = to_safe_html("![cat](https://example.com/cat.png)");
        assert!(!html.contains("<img"));
        assert!(html.contains(r#"<a href="https://example.com/cat.png">cat</a>"#));
    }

    #[test]
    fn dangerous_schemes_are_dropped() {
        for src in
            ["[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))", "[x](data:text/html,hi)", "<javascript:alert(1)>"]
        {
            let html = to_safe_html(src);
            assert!(html.contains(r##"href="#""##), "{src} -> {html}");
        }
        // Not a link at all, so nothing to follow.
        let html = to_safe_html("[x](java\tscript:alert(1))").to_lowercase();
        assert!(!html.contains("href="), "{html}");
        assert!(to_safe_html("[x](/threads/1)").contains(r#"href="/threads/1""#));
        assert!(to_safe_html("[x](mailto:a@b.c)").contains("mailto:a@b.c"));
    }

    #[test]
    fn tables_and_code_render() {
        let html = to_safe_html("| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn main() {}\n```");
        assert!(html.contains("<table>"));
        assert!(html.contains("<code class=\"language-rust\">"));
        assert!(html.contains("class=\"copy-code\""), "code blocks carry a copy button");
    }
}
