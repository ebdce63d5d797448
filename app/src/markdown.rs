//! Markdown to safe HTML, the same on server and browser. Safe by construction, not by cleaning afterwards: raw
//! HTML shows as text, images become plain links (nothing remote loads), links keep only safe schemes.

use leptos::prelude::*;
use pulldown_cmark::{html, CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Our own markup around code blocks: a copy button. Added after the source's HTML was turned into text.
const CODE_BLOCK_START: &str =
    "<div class=\"code-block\"><button type=\"button\" class=\"copy-code\" aria-label=\"Copy code\">Copy</button>";
const CODE_BLOCK_END: &str = "</div>";

/// A task-list item's checkbox, done or not, with a name for screen readers.
const TASK_DONE: &str = "<input type=\"checkbox\" disabled=\"\" checked=\"\" aria-label=\"Done\"/>";
const TASK_OPEN: &str = "<input type=\"checkbox\" disabled=\"\" aria-label=\"Not done\"/>";

/// Renders Markdown (CommonMark + tables, strikethrough, task lists) to HTML that executes nothing.
pub fn to_safe_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // The fenced code block being read, when its language is one the highlighter knows: the language and the
    // code so far.
    let mut code: Option<(String, String)> = None;
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
            // pulldown-cmark's task-list checkbox has no label; ours says what it shows.
            Event::TaskListMarker(done) => Event::Html(CowStr::Borrowed(if done { TASK_DONE } else { TASK_OPEN })),
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
                Event::Start(Tag::Link { link_type, dest_url: safe_url(dest_url), title, id })
            }
            other => other,
        })
        .flat_map(move |event| match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                code = match &kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .map(str::to_ascii_lowercase)
                        .filter(|language| oxidoc_highlight::is_supported(language))
                        .map(|language| (language, String::new())),
                    CodeBlockKind::Indented => None,
                };
                vec![Event::Html(CowStr::Borrowed(CODE_BLOCK_START)), Event::Start(Tag::CodeBlock(kind))]
            }
            // The code of a block in a known language is gathered (the parser may hand it over in pieces) and
            // highlighted as a whole at its end, so that a comment or string over several lines stays one token.
            Event::Text(text) if code.is_some() => {
                if let Some((_, gathered)) = code.as_mut() {
                    gathered.push_str(&text);
                }
                vec![]
            }
            Event::End(TagEnd::CodeBlock) => {
                let mut events = Vec::with_capacity(3);
                if let Some((language, gathered)) = code.take() {
                    events.push(Event::Html(highlighted(&gathered, &language).into()));
                }
                events.extend([Event::End(TagEnd::CodeBlock), Event::Html(CowStr::Borrowed(CODE_BLOCK_END))]);
                events
            }
            other => vec![other],
        });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// Where text cites requirements, as `[R-1]` or `[R-1, R-3]`, in rendered HTML: each cited key that is one of
/// `keys` becomes a button that names the requirement (the brackets and any other text stay as they were). Text
/// inside code, links and buttons is left alone. The markup added is ours alone: a key is written from its number.
pub fn link_citations(html: &str, keys: &[String]) -> String {
    if keys.is_empty() || !html.contains('[') {
        return html.to_string();
    }
    let mut out = String::with_capacity(html.len() + 64);
    // How many code, link or button elements the text is inside.
    let mut inside = 0usize;
    let mut rest = html;
    while !rest.is_empty() {
        let text_end = rest.find('<').unwrap_or(rest.len());
        let (text, after) = rest.split_at(text_end);
        if inside == 0 {
            cite_in_text(text, keys, &mut out);
        } else {
            out.push_str(text);
        }
        rest = after;
        if rest.is_empty() {
            break;
        }
        let tag_end = rest.find('>').map_or(rest.len(), |i| i + 1);
        let tag = &rest[..tag_end];
        let closing = tag.starts_with("</");
        let name: String = tag
            .trim_start_matches(['<', '/'])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if matches!(name.as_str(), "code" | "pre" | "a" | "button") && !tag.ends_with("/>") {
            inside = if closing { inside.saturating_sub(1) } else { inside + 1 };
        }
        out.push_str(tag);
        rest = &rest[tag_end..];
    }
    out
}

/// A cited key as Quire writes it (`R-3`, or `R-3@0a1b2c3d4e5f` for another conversation's), made from what it
/// parses to: never the written text itself.
fn written_key(written: &str) -> Option<String> {
    let (number, elsewhere) = crate::api::cited_key(written)?;
    let key = crate::api::requirement_key(number);
    Some(match elsewhere {
        Some(reference) => format!("{key}@{reference}"),
        None => key,
    })
}

/// Appends `text` (HTML text, no tags) to `out` with its cited keys of `keys` as buttons.
fn cite_in_text(text: &str, keys: &[String], out: &mut String) {
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..=open]);
        rest = &rest[open + 1..];
        let Some(close) = rest.find(']') else { break };
        let inside = &rest[..close];
        let cited: Vec<Option<String>> = inside.split(',').map(written_key).collect();
        if inside.len() > 200 || inside.contains('[') || !cited.iter().all(Option::is_some) {
            continue;
        }
        for (i, (part, key)) in inside.split(',').zip(cited.into_iter().flatten()).enumerate() {
            if i > 0 {
                out.push(',');
            }
            let written = part.trim();
            let lead = &part[..part.len() - part.trim_start().len()];
            let trail = &part[lead.len() + written.len()..];
            out.push_str(lead);
            if keys.contains(&key) {
                let label = match key.split_once('@') {
                    Some((own, _)) => format!("Requirement {own} of another conversation"),
                    None => format!("Requirement {key}"),
                };
                out.push_str(&format!(
                    "<button type=\"button\" class=\"requirement-link\" data-testid=\"requirement-link\" \
                     data-key=\"{key}\" aria-label=\"{label}\">{written}</button>"
                ));
            } else {
                out.push_str(written);
            }
            out.push_str(trail);
        }
        out.push(']');
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
}

/// Whether the browser has the renderer's code, split out of the main wasm bundle in release builds and fetched
/// the first time something is rendered ([`Renderer::html`]): a page that shows no Markdown, such as the sign-in
/// page or a conversation of questions alone, never downloads it; the server has it.
#[derive(Clone, Copy)]
pub struct Renderer {
    ready: Signal<bool>,
    /// Whether the fetch of the code has begun (set once).
    #[cfg(feature = "hydrate")]
    asked: StoredValue<bool>,
    #[cfg(feature = "hydrate")]
    loaded: RwSignal<bool>,
}

/// Provides the [`Renderer`] to the app; in the browser its code is fetched at the first rendering.
pub fn provide_renderer() {
    #[cfg(feature = "hydrate")]
    let renderer = {
        let loaded = RwSignal::new(false);
        Renderer { ready: loaded.into(), asked: StoredValue::new(false), loaded }
    };
    #[cfg(not(feature = "hydrate"))]
    let renderer = Renderer { ready: Signal::stored(true) };
    provide_context(renderer);
}

/// Fetches the renderer's module; a failed fetch is tried again after 1, 2, 4, 8 and 16 s (until then answers
/// show as plain text). Declared `fallible`: a failed load must not abort the whole wasm module.
#[cfg(feature = "hydrate")]
fn fetch_renderer(ready: RwSignal<bool>, attempt: u32) {
    leptos::task::spawn_local(async move {
        if renderer_module().await.is_ok() {
            ready.set(true);
        } else if attempt < 5 {
            set_timeout(move || fetch_renderer(ready, attempt + 1), std::time::Duration::from_secs(1 << attempt));
        }
    });
}

/// The renderer behind the split point, called once its module is there.
#[cfg(feature = "hydrate")]
#[leptos::wasm_split::wasm_split(
    quire_markdown_renderer,
    wasm_split_path = ::leptos::wasm_split,
    preload(renderer_module),
    fallible
)]
fn render_split(markdown: String) -> Result<String, leptos::wasm_split::SplitLoaderError> {
    Ok(to_safe_html(&markdown))
}

impl Renderer {
    /// `markdown` as safe HTML, or as escaped `pre-wrap` text until the renderer's code arrives (reactive: it then
    /// renders again). A page rendered on the server keeps the server's HTML while it hydrates.
    pub fn html(&self, markdown: &str) -> String {
        if !self.ready.get() {
            #[cfg(feature = "hydrate")]
            if !self.asked.get_value() {
                self.asked.set_value(true);
                fetch_renderer(self.loaded, 0);
            }
            return plain_html(markdown);
        }
        #[cfg(feature = "hydrate")]
        {
            use std::future::Future;
            use std::task::{Context, Poll, Waker};
            // The module is loaded, so the split function answers on its first poll.
            let mut render = std::pin::pin!(render_split(markdown.to_string()));
            match render.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(Ok(html)) => html,
                Poll::Ready(Err(_)) | Poll::Pending => plain_html(markdown),
            }
        }
        #[cfg(not(feature = "hydrate"))]
        to_safe_html(markdown)
    }
}

/// `code` as escaped HTML with a `<span class="tok-...">` around each token `oxidoc_highlight` finds (in one
/// forward pass); the markup is ours, and a token out of order or off a character boundary stays plain text.
fn highlighted(code: &str, language: &str) -> String {
    let mut out = String::with_capacity(code.len() * 2);
    let mut shown = 0;
    for token in oxidoc_highlight::scan(code, language) {
        let Some(class) = token.kind.class() else { continue };
        if token.start < shown || !code.is_char_boundary(token.start) || code.get(token.start..token.end).is_none() {
            continue;
        }
        escape_into(&code[shown..token.start], &mut out);
        out.push_str("<span class=\"");
        out.push_str(class);
        out.push_str("\">");
        escape_into(&code[token.start..token.end], &mut out);
        out.push_str("</span>");
        shown = token.end;
    }
    escape_into(&code[shown..], &mut out);
    out
}

/// Appends `text` to `out` with the characters HTML gives a meaning escaped.
fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// Text shown as it is, escaped, until the renderer arrives.
fn plain_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    out.push_str("<p class=\"md-pending\">");
    escape_into(text, &mut out);
    out.push_str("</p>");
    out
}

/// Keeps http(s), mailto and relative links; anything else (javascript:, data:, vbscript: ...) becomes `#`.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let trimmed: String = url.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
    if has_safe_scheme(&trimmed.to_ascii_lowercase()) {
        url
    } else {
        CowStr::Borrowed("#")
    }
}

/// Whether a lower-case URL is relative or goes to an http(s) or mailto address.
fn has_safe_scheme(url: &str) -> bool {
    let has_scheme = url.find(':').is_some_and(|colon| url.find(['/', '?', '#']).is_none_or(|path| colon < path));
    !has_scheme || ["http:", "https:", "mailto:"].iter().any(|s| url.starts_with(s))
}

/// Tags the renderer may produce (pulldown-cmark's own, the task-list checkbox, our code-block frame and the
/// highlighter's token spans), separated by spaces.
const ALLOWED_TAGS: &str =
    "p h1 h2 h3 h4 h5 h6 blockquote pre code ul ol li em strong del a hr br table thead tbody tr \
    th td input div button span";
/// Attributes the renderer may produce; `href`, `style`, `data-key` and `data-testid` are checked further.
const ALLOWED_ATTRIBUTES: &[&str] =
    &["href", "title", "class", "type", "disabled", "checked", "start", "style", "aria-label"];

/// The first piece of `html` that [`to_safe_html`] and [`link_citations`] must never produce (a tag or attribute
/// outside their vocabulary, a link with a scheme other than http, https or mailto), or `None`. For property tests
/// and fuzzing.
pub fn markup_problem(html: &str) -> Option<String> {
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else { return Some(format!("unclosed tag: {}", &rest[open..])) };
        let tag = &rest[open + 1..open + close];
        rest = &rest[open + close + 1..];
        let inner = tag.strip_prefix('/').unwrap_or(tag);
        let inner = inner.strip_suffix('/').unwrap_or(inner);
        let (name, mut attributes) = inner.split_once(' ').unwrap_or((inner, ""));
        if !ALLOWED_TAGS.split(' ').any(|allowed| allowed == name) {
            return Some(format!("tag <{tag}>"));
        }
        loop {
            attributes = attributes.trim_start();
            if attributes.is_empty() {
                break;
            }
            let Some((attribute, after)) = attributes.split_once("=\"") else {
                return Some(format!("attribute in <{tag}>"));
            };
            let Some((value, after)) = after.split_once('"') else { return Some(format!("unquoted value in <{tag}>")) };
            attributes = after;
            let problem = match attribute {
                "href" => !is_safe_link(value),
                "style" => !value.starts_with("text-align:"),
                "data-key" => written_key(value).as_deref() != Some(value),
                "data-testid" => value != "requirement-link",
                other => !ALLOWED_ATTRIBUTES.contains(&other),
            };
            if problem {
                return Some(format!("{attribute}=\"{value}\" in <{tag}>"));
            }
        }
    }
    None
}

/// Whether a browser would follow `href` (as written in HTML) to an http(s) or mailto address or a relative one.
fn is_safe_link(href: &str) -> bool {
    // Browsers drop tabs and newlines anywhere in a URL, and leading spaces and control characters.
    let url: String = unescape(href).chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    has_safe_scheme(&url.trim_start_matches(|c: char| c <= ' ').to_ascii_lowercase())
}

/// Undoes HTML escaping (`&amp;`, `&lt;`, `&gt;`, `&quot;`, `&#39;`); anything else stays as it is.
pub(crate) fn unescape(text: &str) -> String {
    const ENTITIES: [(&str, char); 5] =
        [("&lt;", '<'), ("&gt;", '>'), ("&quot;", '"'), ("&#39;", '\''), ("&amp;", '&')];
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match ENTITIES.iter().find(|(entity, _)| rest.starts_with(entity)) {
            Some((entity, c)) => {
                out.push(*c);
                rest = &rest[entity.len()..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
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

    #[test]
    fn fenced_code_is_highlighted_and_stays_escaped() {
        let html = to_safe_html("```rust\nfn main() { let s = \"<b>&\"; } // done\n```");
        assert!(html.contains("<span class=\"tok-keyword\">fn</span>"), "{html}");
        assert!(html.contains("<span class=\"tok-comment\">// done</span>"), "{html}");
        assert!(html.contains("&lt;b&gt;&amp;"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert_eq!(markup_problem(&html), None);
        // Unknown languages and indented blocks stay plain; the text is the same either way.
        let plain = to_safe_html("```klingon\nfn main() {}\n```");
        assert!(!plain.contains("tok-"), "{plain}");
        assert!(plain.contains("fn main() {}"), "{plain}");
        assert!(!to_safe_html("    fn main() {}\n").contains("tok-"));
        // What the browser test looks for.
        let shell = to_safe_html("```sh\n# build, then copy\nscp app \"host:/srv/app\"\n```");
        assert!(shell.contains("<span class=\"tok-comment\"># build, then copy</span>"), "{shell}");
        assert!(shell.contains("<span class=\"tok-string\">&quot;host:/srv/app&quot;</span>"), "{shell}");
    }

    #[test]
    fn highlighting_keeps_every_character_of_hostile_code() {
        let strip = |html: &str| {
            let mut text = String::new();
            let mut in_tag = false;
            for c in html.chars() {
                match c {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    c if !in_tag => text.push(c),
                    _ => {}
                }
            }
            text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&")
        };
        let pieces =
            ["\"", "'", "`", "/*", "*/", "<!--", "r#\"", "${", "\\", "é", "🦀", "0x", "<<EOF\n", "--", "#", "\n"];
        for language in "rust python javascript typescript bash sql c go java json yaml html php".split(' ') {
            for (i, piece) in pieces.iter().enumerate() {
                let code = format!("{}{}", piece.repeat(50), pieces[(i + 1) % pieces.len()].repeat(7));
                let html = highlighted(&code, language);
                assert_eq!(strip(&html), code, "{language}: {piece:?}");
                assert_eq!(markup_problem(&html), None, "{language}: {piece:?}");
            }
        }
    }

    #[test]
    fn task_list_checkboxes_are_named() {
        let html = to_safe_html("- [x] shipped\n- [ ] tested\n");
        assert!(html.contains(r#"<input type="checkbox" disabled="" checked="" aria-label="Done"/>"#), "{html}");
        assert!(html.contains(r#"<input type="checkbox" disabled="" aria-label="Not done"/>"#), "{html}");
        assert_eq!(markup_problem(&html), None);
    }

    #[test]
    fn the_checker_spots_unsafe_markup() {
        assert_eq!(markup_problem("<p>a &lt;script&gt;</p><a href=\"https://x\">x</a>"), None);
        assert!(markup_problem("<script>alert(1)</script>").is_some());
        assert!(markup_problem("<a href=\"java&#9;script:alert(1)\">x</a>").is_none(), "an entity is not a tab");
        assert!(markup_problem("<a href=\"java\tscript:alert(1)\">x</a>").is_some());
        assert!(markup_problem("<a href=\" JAVASCRIPT:alert(1)\">x</a>").is_some());
        assert!(markup_problem("<a onclick=\"x\">x</a>").is_some());
        assert!(markup_problem("<img src=\"x\"/>").is_some());
    }

    #[test]
    fn cited_keys_of_the_ledger_become_buttons() {
        let keys = vec!["R-1".to_string(), "R-3".to_string()];
        let html = to_safe_html(
            "## Booking [R-1]\n\n- Staff see bookings [r-3, R-2]\n- `[R-1]` and [R-1](https://x.example) [note]",
        );
        let linked = link_citations(&html, &keys);
        assert!(
            linked.contains(
                "Booking [<button type=\"button\" class=\"requirement-link\" data-testid=\"requirement-link\" \
                 data-key=\"R-1\" aria-label=\"Requirement R-1\">R-1</button>]"
            ),
            "{linked}"
        );
        assert!(linked.contains("data-key=\"R-3\" aria-label=\"Requirement R-3\">r-3</button>, R-2]"), "{linked}");
        assert_eq!(linked.matches("data-testid=\"requirement-link\"").count(), 2, "not in code or a link: {linked}");
        assert!(linked.contains("<code>[R-1]</code>") && linked.contains("[note]"), "{linked}");
        assert_eq!(markup_problem(&linked), None);
        assert_eq!(link_citations(&html, &[]), html);
        // The checker still refuses what a person could write.
        assert!(markup_problem("<button data-key=\"R-1&quot; onclick\">x</button>").is_some());
        assert!(markup_problem("<button data-testid=\"other\">x</button>").is_some());
    }

    #[test]
    fn keys_of_other_conversations_link_when_the_document_cites_them() {
        let keys = vec!["R-2@0a1b2c3d4e5f".to_string()];
        let html = to_safe_html("- Pay by card [R-2@0A1B2C3D4E5F] [R-2@ffffffffffff]");
        let linked = link_citations(&html, &keys);
        assert!(
            linked.contains(
                "data-key=\"R-2@0a1b2c3d4e5f\" aria-label=\"Requirement R-2 of another conversation\">\
                 R-2@0A1B2C3D4E5F</button>"
            ),
            "{linked}"
        );
        assert_eq!(linked.matches("data-testid=\"requirement-link\"").count(), 1, "{linked}");
        assert_eq!(markup_problem(&linked), None);
        assert!(
            markup_problem("<button data-key=\"R-2@0A1B2C3D4E5F\">x</button>").is_some(),
            "only as Quire writes it"
        );
    }

    proptest::proptest! {
        #[test]
        fn rendered_markdown_never_carries_unsafe_markup(
            parts in proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Just("[a](javascript:alert(1))".to_string()),
                proptest::strategy::Just("![i](data:image/png;base64,AAAA)".to_string()),
                proptest::strategy::Just("<script>alert(1)</script>".to_string()),
                proptest::strategy::Just("<img src=x onerror=alert(1)>".to_string()),
                proptest::strategy::Just("<a href=\"javascript:x\">".to_string()),
                proptest::strategy::Just("[r]: vbscript:msgbox\n\n[r]".to_string()),
                proptest::strategy::Just("&#106;avascript:".to_string()),
                proptest::strategy::Just("\n```js\n<b>\n```\n".to_string()),
                proptest::strategy::Just("\n| a | b |\n|:-|-:|\n| <i> | x |\n".to_string()),
                proptest::strategy::Just("- [x] done\n".to_string()),
                proptest::strategy::Just("[R-1, r2] [R-3]".to_string()),
                proptest::strategy::Just("`[R-1]` [R-1](/x)".to_string()),
                "[\\[\\]()<>!:\"'&#;a-z \t\n`*_|-]{0,12}",
                "\\PC{0,8}",
            ], 0..12),
        ) {
            let markdown = parts.concat();
            let html = to_safe_html(&markdown);
            proptest::prop_assert_eq!(markup_problem(&html), None, "{:?} -> {}", markdown, html);
            let linked = link_citations(&html, &["R-1".to_string(), "R-2".to_string()]);
            proptest::prop_assert_eq!(markup_problem(&linked), None, "{:?} -> {}", markdown, linked);
        }

        #[test]
        fn text_waiting_for_the_renderer_is_inert_and_kept_whole(text in "[<>&\"'a-z /=\n]{0,40}|\\PC{0,12}") {
            let html = plain_html(&text);
            proptest::prop_assert_eq!(markup_problem(&html), None, "{:?} -> {}", text, html);
            let inner = html.strip_prefix("<p class=\"md-pending\">").and_then(|h| h.strip_suffix("</p>")).unwrap();
            let back = inner.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
            proptest::prop_assert_eq!(back, text);
        }
    }
}
