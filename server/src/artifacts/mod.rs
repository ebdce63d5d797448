//! Documents the assistant writes: the Markdown they are stored as, read into a small block model that the
//! PDF and Word exports render, and the file names of downloads.

pub mod diff;
pub mod docx;
pub mod md;
pub mod pdf;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// A run of text with one style.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Span {
    pub text: String,
    pub bold: bool,
    pub italic: bool,
    pub code: bool,
}

impl Span {
    /// Text without a style.
    pub fn plain(text: &str) -> Self {
        Span { text: text.to_string(), ..Default::default() }
    }
}

/// One block of a document, in reading order.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Level 1 to 6.
    Heading(u8, Vec<Span>),
    Paragraph(Vec<Span>),
    Quote(Vec<Span>),
    /// One list item; nested lists give deeper items. `marker` is `•` or the item's number (`3.`).
    ListItem {
        depth: usize,
        ordered: bool,
        marker: String,
        spans: Vec<Span>,
    },
    /// Rows of cells; the first row is the header when `header` is set.
    Table {
        header: bool,
        rows: Vec<Vec<Vec<Span>>>,
    },
    Code(String),
    Rule,
}

struct ListState {
    ordered: bool,
    next: u64,
}

#[derive(Default)]
struct Builder {
    blocks: Vec<Block>,
    spans: Vec<Span>,
    bold: u32,
    italic: u32,
    heading: Option<u8>,
    quote: u32,
    lists: Vec<ListState>,
    /// The marker of the open list item, until the item's first text is emitted.
    item: Option<(bool, String)>,
    code: Option<String>,
    table: Option<(bool, Vec<Vec<Vec<Span>>>)>,
    cell: Option<Vec<Span>>,
}

impl Builder {
    fn push_text(&mut self, text: &str, code: bool) {
        if let Some(buffer) = self.code.as_mut() {
            buffer.push_str(text);
            return;
        }
        let span = Span { text: text.to_string(), bold: self.bold > 0, italic: self.italic > 0, code };
        let target = match self.cell.as_mut() {
            Some(cell) => cell,
            None => &mut self.spans,
        };
        match target.last_mut() {
            Some(last) if last.bold == span.bold && last.italic == span.italic && last.code == span.code => {
                last.text.push_str(&span.text)
            }
            _ => target.push(span),
        }
    }

    /// Emits the open list item's text, if it has any or was never emitted.
    fn flush_item(&mut self) {
        let spans = std::mem::take(&mut self.spans);
        if let Some((ordered, marker)) = self.item.take() {
            let depth = self.lists.len().saturating_sub(1);
            self.blocks.push(Block::ListItem { depth, ordered, marker, spans });
        } else if !spans.iter().all(|s| s.text.trim().is_empty()) {
            // A later paragraph of the same item: a continuation without a marker.
            let depth = self.lists.len().saturating_sub(1);
            self.blocks.push(Block::ListItem { depth, ordered: false, marker: String::new(), spans });
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => self.heading = Some(level as u8),
            Tag::BlockQuote(_) => self.quote += 1,
            Tag::CodeBlock(_) => self.code = Some(String::new()),
            Tag::List(first) => {
                if !self.lists.is_empty() {
                    self.flush_item();
                }
                self.lists.push(ListState { ordered: first.is_some(), next: first.unwrap_or(1) });
            }
            Tag::Item => {
                if let Some(list) = self.lists.last_mut() {
                    let marker = if list.ordered { format!("{}.", list.next) } else { "•".to_string() };
                    list.next += 1;
                    self.item = Some((list.ordered, marker));
                }
            }
            Tag::Table(_) => self.table = Some((false, Vec::new())),
            Tag::TableHead => {
                if let Some((header, rows)) = self.table.as_mut() {
                    *header = true;
                    rows.push(Vec::new());
                }
            }
            Tag::TableRow => {
                if let Some((_, rows)) = self.table.as_mut() {
                    rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.cell = Some(Vec::new()),
            Tag::Emphasis => self.italic += 1,
            Tag::Strong => self.bold += 1,
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                let level = self.heading.take().unwrap_or(1);
                self.blocks.push(Block::Heading(level, std::mem::take(&mut self.spans)));
            }
            TagEnd::Paragraph => {
                if !self.lists.is_empty() {
                    self.flush_item();
                } else if self.quote > 0 {
                    self.blocks.push(Block::Quote(std::mem::take(&mut self.spans)));
                } else {
                    self.blocks.push(Block::Paragraph(std::mem::take(&mut self.spans)));
                }
            }
            TagEnd::BlockQuote(_) => self.quote = self.quote.saturating_sub(1),
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                self.blocks.push(Block::Code(code.trim_end_matches('\n').to_string()));
            }
            TagEnd::Item => self.flush_item(),
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::TableCell => {
                let cell = self.cell.take().unwrap_or_default();
                if let Some(row) = self.table.as_mut().and_then(|(_, rows)| rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::Table => {
                if let Some((header, rows)) = self.table.take() {
                    self.blocks.push(Block::Table { header, rows });
                }
            }
            TagEnd::Emphasis => self.italic = self.italic.saturating_sub(1),
            TagEnd::Strong => self.bold = self.bold.saturating_sub(1),
            _ => {}
        }
    }
}

/// Reads Markdown (CommonMark with tables, strikethrough and task lists) into blocks.
pub fn parse_markdown(markdown: &str) -> Vec<Block> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut builder = Builder::default();
    for event in Parser::new_ext(markdown, options) {
        match event {
            Event::Start(tag) => builder.start(tag),
            Event::End(tag) => builder.end(tag),
            Event::Text(text) => builder.push_text(&text, false),
            Event::Code(text) => builder.push_text(&text, true),
            Event::InlineMath(text) | Event::DisplayMath(text) => builder.push_text(&text, true),
            Event::Html(text) | Event::InlineHtml(text) => builder.push_text(&text, false),
            Event::SoftBreak => builder.push_text(" ", false),
            Event::HardBreak => builder.push_text("\n", false),
            Event::Rule => builder.blocks.push(Block::Rule),
            Event::TaskListMarker(done) => builder.push_text(if done { "[x] " } else { "[ ] " }, false),
            Event::FootnoteReference(name) => builder.push_text(&format!("[{name}]"), false),
        }
    }
    // Text left outside any block (never from CommonMark, but harmless).
    if !builder.spans.is_empty() {
        let spans = std::mem::take(&mut builder.spans);
        builder.blocks.push(Block::Paragraph(spans));
    }
    builder.blocks
}

/// The blocks of a document that opens with a heading, given `title` as one if it does not.
pub fn titled_blocks(title: &str, markdown: &str) -> Vec<Block> {
    let mut blocks = parse_markdown(markdown);
    if !matches!(blocks.first(), Some(Block::Heading(..))) {
        blocks.insert(0, Block::Heading(1, vec![Span::plain(title)]));
    }
    blocks
}

/// The plain text of spans.
pub fn plain(spans: &[Span]) -> String {
    spans.iter().map(|s| s.text.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_headings_lists_tables_and_code() {
        let blocks = parse_markdown(
            "# Title\n\nSome **bold** and *it*.\n\n- one\n- two\n  1. deep\n\n| A | B |\n|---|---|\n| x | y |\n\n```\nfn main() {}\n```\n",
        );
        assert_eq!(blocks[0], Block::Heading(1, vec![Span::plain("Title")]));
        let Block::Paragraph(spans) = &blocks[1] else { panic!("{blocks:?}") };
        assert!(spans.iter().any(|s| s.bold && s.text == "bold"));
        assert!(spans.iter().any(|s| s.italic && s.text == "it"));
        let items: Vec<(usize, String, String)> = blocks
            .iter()
            .filter_map(|b| match b {
                Block::ListItem { depth, marker, spans, .. } => Some((*depth, marker.clone(), plain(spans))),
                _ => None,
            })
            .collect();
        assert_eq!(
            items,
            vec![(0, "•".into(), "one".into()), (0, "•".into(), "two".into()), (1, "1.".into(), "deep".into())]
        );
        let Some(Block::Table { header: true, rows }) = blocks.iter().find(|b| matches!(b, Block::Table { .. })) else {
            panic!("{blocks:?}")
        };
        assert_eq!(plain(&rows[1][1]), "y");
        assert!(blocks.contains(&Block::Code("fn main() {}".into())));
    }
}
