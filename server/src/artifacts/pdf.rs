//! The PDF export: the document's blocks laid out on A4 pages (pure, into text runs and rectangles), then drawn
//! with embedded fonts (DejaVu, Droid Sans Fallback for CJK) subset by krilla with a text map, so text can be found.

use std::sync::LazyLock;

use krilla::color::luma;
use krilla::geom::{PathBuilder, Point, Rect};
use krilla::metadata::Metadata;
use krilla::page::PageSettings;
use krilla::paint::Fill;
use krilla::text::{Font, TextDirection};
use krilla::{Data, Document};

use super::{titled_blocks, Block, Span};

// Kept compressed with brotli (`server/assets/fonts/README.md`): 2.4 MB in the binary rather than 5.9 MB.
static SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf.br");
static SANS_BOLD: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-Bold.ttf.br");
static SANS_OBLIQUE: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans-Oblique.ttf.br");
static MONO: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf.br");
/// Chinese, Japanese and Korean, which DejaVu lacks.
static FALLBACK: &[u8] = include_bytes!("../../assets/fonts/DroidSansFallback.ttf.br");

const PAGE_W: f32 = 595.28;
const PAGE_H: f32 = 841.89;
const MARGIN: f32 = 56.0;
const CONTENT_W: f32 = PAGE_W - 2.0 * MARGIN;
const BODY: f32 = 10.5;
const LEADING: f32 = 1.4;

/// Why a PDF could not be made.
#[derive(Debug, thiserror::Error)]
#[error("pdf export failed: {0}")]
pub struct PdfError(String);

/// The face a run is drawn with, in the order of [`Fonts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Face {
    Regular,
    Bold,
    Italic,
    Mono,
    /// Characters the other faces lack (CJK).
    Fallback,
}

impl Face {
    fn of(span: &Span) -> Face {
        match span {
            Span { code: true, .. } => Face::Mono,
            Span { bold: true, .. } => Face::Bold,
            Span { italic: true, .. } => Face::Italic,
            _ => Face::Regular,
        }
    }
}

struct LoadedFont {
    font: Font,
    metrics: ttf_parser::Face<'static>,
    /// [`glyph`] of the first 256 code points, which most text is made of: looked up once, not once a character.
    latin1: [(bool, u16); 256],
}

impl LoadedFont {
    fn glyph(&self, c: char) -> (bool, u16) {
        match u8::try_from(c) {
            Ok(byte) => self.latin1[usize::from(byte)],
            Err(_) => glyph(&self.metrics, c),
        }
    }
}

/// Whether a font has a glyph for a character, and the advance it is drawn with (the missing glyph's if not).
fn glyph(metrics: &ttf_parser::Face<'_>, c: char) -> (bool, u16) {
    let id = metrics.glyph_index(c);
    (id.is_some(), metrics.glyph_hor_advance(id.unwrap_or(ttf_parser::GlyphId(0))).unwrap_or(0))
}

/// The font of each [`Face`], in its order; unpacked when the first PDF is made.
struct Fonts(Vec<LoadedFont>);

/// A font file as it was before compression. Unpacked once for the life of the process (as the embedded bytes
/// live), so the parsed faces may borrow it.
fn unpack(compressed: &[u8]) -> Option<&'static [u8]> {
    let mut bytes = Vec::new();
    brotli::BrotliDecompress(&mut &compressed[..], &mut bytes).ok()?;
    Some(Box::leak(bytes.into_boxed_slice()))
}

fn load(compressed: &[u8]) -> Option<LoadedFont> {
    let bytes = unpack(compressed)?;
    let metrics = ttf_parser::Face::parse(bytes, 0).ok()?;
    let latin1 = std::array::from_fn(|i| glyph(&metrics, char::from(i as u8)));
    Some(LoadedFont { font: Font::new(Data::from(bytes), 0)?, metrics, latin1 })
}

static FONTS: LazyLock<Option<Fonts>> = LazyLock::new(|| {
    let fonts = [SANS, SANS_BOLD, SANS_OBLIQUE, MONO, FALLBACK].into_iter().map(load).collect::<Option<_>>();
    fonts.map(Fonts)
});

impl Fonts {
    fn get(&self, face: Face) -> &LoadedFont {
        &self.0[face as usize]
    }

    /// The face that draws a piece of text: the wanted one, or the fallback when only it has the glyphs.
    fn face_for(&self, wanted: Face, text: &str) -> Face {
        let has = |face: Face| text.chars().all(|c| self.get(face).glyph(c).0);
        if has(wanted) || !has(Face::Fallback) {
            wanted
        } else {
            Face::Fallback
        }
    }

    /// Width of text in points, from the font's advances (missing glyphs count as the fallback glyph).
    fn width(&self, face: Face, size: f32, text: &str) -> f32 {
        let units: f32 = text.chars().map(|c| self.advance(face, c)).sum();
        self.points(face, size, units)
    }

    /// The advance of one character, in font units.
    fn advance(&self, face: Face, c: char) -> f32 {
        f32::from(self.get(face).glyph(c).1)
    }

    /// Font units in points at a size.
    fn points(&self, face: Face, size: f32, units: f32) -> f32 {
        units * size / f32::from(self.get(face).metrics.units_per_em())
    }
}

/// Something to draw on a page; `y` is the baseline (text) or the top (rectangles), from the page's top.
#[derive(Debug, Clone, PartialEq)]
enum Op {
    Text { x: f32, y: f32, face: Face, size: f32, text: String },
    Rect { x: f32, y: f32, w: f32, h: f32, gray: u8 },
}

/// A laid-out line: runs of one face each, with their x offsets from the line's start.
type Line = Vec<(f32, Face, String)>;

/// Scripts written without spaces, where a line may break between any two characters.
fn breaks_anywhere(c: char) -> bool {
    matches!(c as u32, 0x2E80..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x2FA1F)
}

/// Breaks spans into lines no wider than `width`.
fn wrap(fonts: &Fonts, spans: &[Span], size: f32, width: f32, force_face: Option<Face>) -> Vec<Line> {
    // Pieces: (face, text, is_space); a `\n` piece forces a break.
    let mut pieces: Vec<(Face, String, bool)> = Vec::new();
    for span in spans {
        let face = force_face.unwrap_or_else(|| Face::of(span));
        let mut word = String::new();
        for c in span.text.chars() {
            if c == '\n' || c.is_whitespace() || breaks_anywhere(c) {
                if !word.is_empty() {
                    pieces.push((face, std::mem::take(&mut word), false));
                }
                match c {
                    '\n' => pieces.push((face, "\n".into(), true)),
                    c if c.is_whitespace() => pieces.push((face, " ".into(), true)),
                    c => pieces.push((face, c.to_string(), false)),
                }
            } else {
                word.push(c);
            }
        }
        if !word.is_empty() {
            pieces.push((face, word, false));
        }
    }
    let mut lines: Vec<Line> = Vec::new();
    let mut line: Line = Vec::new();
    let mut x = 0.0_f32;
    let mut pending_space: Option<(Face, f32)> = None;
    let push = |line: &mut Line, x: f32, face: Face, text: &str| match line.last_mut() {
        Some((_, f, t)) if *f == face => t.push_str(text),
        _ => line.push((x, face, text.to_string())),
    };
    for (face, text, is_space) in pieces {
        let face = if is_space { face } else { fonts.face_for(face, &text) };
        if is_space {
            if text == "\n" {
                lines.push(std::mem::take(&mut line));
                x = 0.0;
                pending_space = None;
            } else if !line.is_empty() {
                pending_space = Some((face, fonts.width(face, size, " ")));
            }
            continue;
        }
        let mut w = fonts.width(face, size, &text);
        let space = pending_space.map_or(0.0, |(_, w)| w);
        if !line.is_empty() && x + space + w > width {
            lines.push(std::mem::take(&mut line));
            x = 0.0;
            pending_space = None;
        }
        if let Some((space_face, space_w)) = pending_space.take() {
            push(&mut line, x, space_face, " ");
            x += space_w;
        }
        // A word wider than the whole line is cut where it must be: each piece ends before the character
        // that would overflow the line, read once from start to end.
        let mut rest = text.as_str();
        if w > width {
            let mut start = 0;
            let mut units = 0.0_f32;
            for (i, c) in text.char_indices() {
                let next = units + fonts.advance(face, c);
                if i > start && x + fonts.points(face, size, next) > width {
                    push(&mut line, x, face, &text[start..i]);
                    lines.push(std::mem::take(&mut line));
                    x = 0.0;
                    start = i;
                    units = fonts.advance(face, c);
                } else {
                    units = next;
                }
            }
            rest = &text[start..];
            w = fonts.points(face, size, units);
        }
        push(&mut line, x, face, rest);
        x += w;
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

struct Layout<'f> {
    fonts: &'f Fonts,
    pages: Vec<Vec<Op>>,
    /// Distance of the next line's top from the page's top.
    y: f32,
}

impl<'f> Layout<'f> {
    fn new(fonts: &'f Fonts) -> Self {
        Self { fonts, pages: vec![Vec::new()], y: MARGIN }
    }

    fn ops(&mut self) -> &mut Vec<Op> {
        self.pages.last_mut().expect("a page")
    }

    /// Starts a new page unless `height` still fits on this one.
    fn room(&mut self, height: f32) {
        if self.y + height > PAGE_H - MARGIN && self.y > MARGIN {
            self.pages.push(Vec::new());
            self.y = MARGIN;
        }
    }

    /// Lines at `x` from the current height down, each on a new page when it does not fit.
    fn lines(&mut self, lines: &[Line], x: f32, size: f32) {
        for line in lines {
            self.room(size * LEADING);
            self.line(line, x, size);
        }
    }

    /// One line's text at `x`, on the current page, and the height moved below it.
    fn line(&mut self, line: &Line, x: f32, size: f32) {
        let baseline = self.y + size;
        for (dx, face, text) in line {
            if !text.trim().is_empty() {
                self.ops().push(Op::Text { x: x + dx, y: baseline, face: *face, size, text: text.clone() });
            }
        }
        self.y += size * LEADING;
    }

    fn block(&mut self, block: &Block) {
        let fonts = self.fonts;
        match block {
            Block::Heading(level, spans) => {
                let size = match level {
                    1 => 20.0,
                    2 => 16.0,
                    3 => 13.5,
                    _ => 12.0,
                };
                self.y += if *level == 1 { 4.0 } else { 10.0 };
                let lines = wrap(fonts, spans, size, CONTENT_W, Some(Face::Bold));
                // Keep a heading with the first line after it.
                self.room(size * LEADING * lines.len() as f32 + BODY * LEADING);
                self.lines(&lines, MARGIN, size);
                self.y += 4.0;
            }
            Block::Paragraph(spans) => {
                let lines = wrap(fonts, spans, BODY, CONTENT_W, None);
                self.lines(&lines, MARGIN, BODY);
                self.y += 6.0;
            }
            Block::Quote(spans) => {
                let lines = wrap(fonts, spans, BODY, CONTENT_W - 16.0, Some(Face::Italic));
                let top = self.y;
                self.lines(&lines, MARGIN + 16.0, BODY);
                if self.y > top {
                    let (y, h) = (top, self.y - top);
                    self.ops().push(Op::Rect { x: MARGIN + 4.0, y, w: 2.0, h, gray: 170 });
                }
                self.y += 6.0;
            }
            Block::ListItem { depth, marker, spans, .. } => {
                let indent = 18.0 * (*depth as f32 + 1.0);
                let lines = wrap(fonts, spans, BODY, CONTENT_W - indent, None);
                self.room(BODY * LEADING);
                if !marker.is_empty() {
                    let x = MARGIN + indent - 5.0 - fonts.width(Face::Regular, BODY, marker);
                    let (y, text) = (self.y + BODY, marker.clone());
                    self.ops().push(Op::Text { x, y, face: Face::Regular, size: BODY, text });
                }
                self.lines(&lines, MARGIN + indent, BODY);
                self.y += 2.0;
            }
            Block::Table { header, rows } => self.table(*header, rows),
            Block::Code(code) => {
                let size = 9.0;
                // Keep the code's own line breaks and indentation.
                for source_line in code.split('\n') {
                    let indent: String = source_line.chars().take_while(|c| *c == ' ').collect();
                    let rest = &source_line[indent.len()..];
                    let dx = fonts.width(Face::Mono, size, &indent);
                    let piece = Span { code: true, ..Span::plain(rest) };
                    let lines = wrap(fonts, &[piece], size, CONTENT_W - 12.0 - dx, None);
                    for line in lines {
                        let h = size * LEADING;
                        self.room(h);
                        let y = self.y;
                        self.ops().push(Op::Rect { x: MARGIN, y, w: CONTENT_W, h, gray: 240 });
                        self.line(&line, MARGIN + 6.0 + dx, size);
                    }
                }
                self.y += 8.0;
            }
            Block::Rule => {
                self.room(12.0);
                let y = self.y + 5.0;
                self.ops().push(Op::Rect { x: MARGIN, y, w: CONTENT_W, h: 0.8, gray: 160 });
                self.y += 12.0;
            }
        }
    }

    fn table(&mut self, header: bool, rows: &[Vec<Vec<Span>>]) {
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let col_w = CONTENT_W / columns as f32;
        let pad = 4.0;
        for (r, row) in rows.iter().enumerate() {
            let face = (header && r == 0).then_some(Face::Bold);
            let cells: Vec<Vec<Line>> =
                row.iter().map(|cell| wrap(self.fonts, cell, BODY, col_w - 2.0 * pad, face)).collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1).max(1) as f32 * BODY * LEADING + 2.0 * pad;
            self.room(height);
            let top = self.y;
            if face.is_some() {
                self.ops().push(Op::Rect { x: MARGIN, y: top, w: CONTENT_W, h: height, gray: 230 });
            }
            for (c, lines) in cells.iter().enumerate() {
                self.y = top + pad;
                let x = MARGIN + c as f32 * col_w + pad;
                for line in lines {
                    self.line(line, x, BODY);
                }
            }
            // Cell borders: the top of the row, the edges of its cells and the table's right edge. The parser
            // fills short rows with empty cells, but only so many: past that a row is drawn as long as it is.
            self.ops().push(Op::Rect { x: MARGIN, y: top, w: CONTENT_W, h: 0.6, gray: 150 });
            for c in (0..=row.len()).chain((row.len() < columns).then_some(columns)) {
                let x = MARGIN + c as f32 * col_w;
                self.ops().push(Op::Rect { x: x - 0.3, y: top, w: 0.6, h: height, gray: 150 });
            }
            self.y = top + height;
        }
        let y = self.y;
        self.ops().push(Op::Rect { x: MARGIN, y, w: CONTENT_W, h: 0.6, gray: 150 });
        self.y += 8.0;
    }
}

/// Lays the document out into pages of drawing operations.
fn layout(fonts: &Fonts, title: &str, markdown: &str) -> Vec<Vec<Op>> {
    let mut layout = Layout::new(fonts);
    for block in &titled_blocks(title, markdown) {
        layout.block(block);
    }
    layout.pages
}

/// The PDF file of a document.
pub fn render(title: &str, markdown: &str) -> Result<Vec<u8>, PdfError> {
    let fonts = FONTS.as_ref().ok_or_else(|| PdfError("the embedded fonts could not be read".into()))?;
    let pages = layout(fonts, title, markdown);
    let mut document = Document::new();
    document.set_metadata(Metadata::new().title(title.to_string()));
    let settings = PageSettings::from_wh(PAGE_W, PAGE_H).ok_or_else(|| PdfError("page size".into()))?;
    for ops in pages {
        let mut page = document.start_page_with(settings.clone());
        let mut surface = page.surface();
        for op in ops {
            match op {
                Op::Text { x, y, face, size, text } => {
                    surface.set_fill(Some(Fill::default()));
                    let font = fonts.get(face).font.clone();
                    surface.draw_text(Point::from_xy(x, y), font, size, &text, false, TextDirection::Auto);
                }
                Op::Rect { x, y, w, h, gray } => {
                    let Some(rect) = Rect::from_xywh(x, y, w.max(0.1), h.max(0.1)) else { continue };
                    let mut path = PathBuilder::new();
                    path.push_rect(rect);
                    if let Some(path) = path.finish() {
                        surface.set_fill(Some(Fill { paint: luma::Color::new(gray).into(), ..Fill::default() }));
                        surface.draw_path(&path);
                    }
                }
            }
        }
        surface.finish();
        page.finish();
    }
    document.finish().map_err(|e| PdfError(format!("{e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fonts() -> &'static Fonts {
        FONTS.as_ref().expect("fonts")
    }

    #[test]
    fn lines_never_exceed_the_width() {
        let text = "Ünïcödé words wrap across lines when the paragraph is longer than the column is wide, \
                    and a verylongwordwithoutanyspacesthatcannotfitonasinglelineatallinthiscolumn is cut.";
        let lines = wrap(fonts(), &[Span::plain(text)], BODY, 200.0, None);
        assert!(lines.len() > 3, "{lines:?}");
        for line in &lines {
            let (x, face, text) = line.last().unwrap();
            assert!(x + fonts().width(*face, BODY, text.trim_end()) <= 200.5, "{line:?}");
        }
        let joined: String =
            lines.iter().flat_map(|l| l.iter().map(|(_, _, t)| t.clone())).collect::<Vec<_>>().join(" ");
        assert!(joined.contains("Ünïcödé"));
    }

    #[test]
    fn long_documents_get_more_pages() {
        let markdown: String = (0..200).map(|i| format!("Paragraph number {i} of a long document.\n\n")).collect();
        let pages = layout(fonts(), "Long", &markdown);
        assert!(pages.len() > 3);
        for page in &pages {
            for op in page {
                if let Op::Text { y, .. } = op {
                    assert!(*y <= PAGE_H - MARGIN + BODY, "{y}");
                }
            }
        }
    }

    #[test]
    fn characters_dejavu_lacks_use_the_fallback_face() {
        let lines = wrap(fonts(), &[Span::plain("Zoë 日本チーム")], BODY, 400.0, None);
        let faces: Vec<(Face, String)> = lines[0].iter().map(|(_, f, t)| (*f, t.clone())).collect();
        assert_eq!(faces, vec![(Face::Regular, "Zoë ".into()), (Face::Fallback, "日本チーム".into())]);
    }

    /// A cell holding one word.
    fn cell(text: &str) -> Vec<Span> {
        vec![Span::plain(text)]
    }

    /// The vertical edges a table's rows are drawn with.
    fn edges(ops: &[Op]) -> usize {
        ops.iter().filter(|op| matches!(op, Op::Rect { w, h, .. } if *w == 0.6 && *h > 1.0)).count()
    }

    #[test]
    fn table_rows_draw_the_edges_of_their_own_cells_and_the_tables_right_edge() {
        let mut layout = Layout::new(fonts());
        layout.table(true, &[vec![cell("a"), cell("b"), cell("c")], vec![cell("x"), cell("y"), cell("z")]]);
        assert_eq!(edges(&layout.pages.concat()), 8);
        let mut layout = Layout::new(fonts());
        layout.table(true, &[vec![cell("a"), cell("b"), cell("c")], vec![cell("x")]]);
        assert_eq!(edges(&layout.pages.concat()), 4 + 3);
        // A header of thousands of columns over thousands of short rows: edges for the cells there are.
        let header: Vec<Vec<Span>> = (0..5_000).map(|i| cell(&i.to_string())).collect();
        let rows: Vec<Vec<Vec<Span>>> = std::iter::once(header).chain((0..5_000).map(|_| vec![cell("x")])).collect();
        let mut layout = Layout::new(fonts());
        layout.table(true, &rows);
        assert_eq!(edges(&layout.pages.concat()), 5_001 + 5_000 * 3);
    }

    #[test]
    fn a_word_longer_than_many_lines_is_cut_into_full_lines_in_order() {
        let word: String = "abcdefghij".repeat(5_000);
        let lines = wrap(fonts(), &cell(&word), BODY, 200.0, None);
        assert!(lines.len() > 100, "{}", lines.len());
        let texts: Vec<&str> = lines.iter().map(|line| line[0].2.as_str()).collect();
        assert_eq!(texts.concat(), word);
        for (i, text) in texts.iter().enumerate() {
            let w = fonts().width(Face::Regular, BODY, text);
            assert!(w <= 200.0, "line {i} is {w} wide");
            // Every line but the last is full: its next character would not have fit.
            if let Some(next) = texts.get(i + 1).and_then(|t| t.chars().next()) {
                assert!(fonts().width(Face::Regular, BODY, &format!("{text}{next}")) > 200.0, "line {i}");
            }
        }
    }

    #[test]
    fn the_embedded_fonts_unpack_to_the_debian_files() {
        use sha2::{Digest, Sha256};
        let expected = [
            (SANS, "abdc775b21b1bc470d50c97e790d276f2054b7504e56e5bd3e64f48d68582322"),
            (SANS_BOLD, "0d977336a6d5fba34eab8e3199eb218327161b5143749f802982c2bc34df0c96"),
            (SANS_OBLIQUE, "eef1a593cc0a4654f147fd1aa9a11e7d327eb8be6f3a35099182db6aeb5d28fe"),
            (MONO, "0f5db4f1749979d961019838b160bec74abdf7f9eca69553fe1aa856bbff49a4"),
            (FALLBACK, "56d3edfb377a8bc3c4b77f4476405c770173c0e31221ad7c77d0a8e1f3039a3e"),
        ];
        for (compressed, sha256) in expected {
            let bytes = unpack(compressed).expect("brotli");
            let digest: String = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(digest, sha256);
        }
        assert!(unpack(b"not brotli at all").is_none());
    }

    #[test]
    fn the_faces_cover_latin_greek_cyrillic_and_the_fallback_cjk() {
        let fonts = fonts();
        for face in [Face::Regular, Face::Bold, Face::Italic, Face::Mono] {
            assert!("Zoë Ωμέγα Привет".chars().all(|c| fonts.get(face).glyph(c).0), "{face:?}");
        }
        // Chinese, Japanese kana and Korean Hangul.
        assert!("漢字かなカナ한국어".chars().all(|c| fonts.get(Face::Fallback).glyph(c).0));
        assert!(!fonts.get(Face::Regular).glyph('漢').0);
    }

    #[test]
    fn renders_a_pdf() {
        let bytes = render("T", "# Hello\n\nWorld").unwrap();
        assert!(bytes.starts_with(b"%PDF-"));
    }
}
