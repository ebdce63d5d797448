//! The Word export: headings as Word's heading styles (so they appear in the navigation pane), real
//! numbered and bulleted lists, tables with a header row, and code in a monospaced font.

use std::io::Cursor;

use docx_rs::{
    AbstractNumbering, AlignmentType, BorderType, Docx, IndentLevel, Level, LevelJc, LevelText, NumberFormat,
    Numbering, NumberingId, Paragraph, Run, RunFonts, Shading, SpecialIndentType, Start, Style, StyleType, Table,
    TableBorder, TableBorderPosition, TableBorders, TableCell, TableRow,
};

use super::{titled_blocks, Block, Span};

/// Why a Word file could not be made.
#[derive(Debug, thiserror::Error)]
#[error("docx export failed: {0}")]
pub struct DocxError(String);

const BULLETS: usize = 1;
const NUMBERS_FIRST: usize = 2;
const MONO: &str = "Courier New";
const BODY_FONT: &str = "Calibri";

fn runs(spans: &[Span]) -> Vec<Run> {
    spans
        .iter()
        .flat_map(|span| {
            // Hard line breaks inside a span become Word line breaks.
            let parts: Vec<&str> = span.text.split('\n').collect();
            let count = parts.len();
            parts.into_iter().enumerate().map(move |(i, part)| {
                let mut run = Run::new().add_text(part);
                if span.bold {
                    run = run.bold();
                }
                if span.italic {
                    run = run.italic();
                }
                if span.code {
                    run = run.fonts(RunFonts::new().ascii(MONO).hi_ansi(MONO).cs(MONO));
                }
                if i + 1 < count {
                    run = run.add_break(docx_rs::BreakType::TextWrapping);
                }
                run
            })
        })
        .collect()
}

fn paragraph(spans: &[Span]) -> Paragraph {
    runs(spans).into_iter().fold(Paragraph::new(), Paragraph::add_run)
}

fn heading_styles(docx: Docx) -> Docx {
    let sizes = [36, 30, 26, 24, 22, 22];
    sizes.iter().enumerate().fold(docx, |docx, (i, size)| {
        let level = i + 1;
        docx.add_style(
            Style::new(format!("Heading{level}"), StyleType::Paragraph)
                .name(format!("heading {level}"))
                .based_on("Normal")
                .next("Normal")
                .q_format(true)
                .size(*size)
                .bold()
                .color("1F3864")
                .outline_lvl(i),
        )
    })
}

/// A numbering definition: bullets, or decimal numbers starting at 1, nine levels deep.
fn abstract_numbering(id: usize, ordered: bool) -> AbstractNumbering {
    (0..9).fold(AbstractNumbering::new(id), |numbering, level| {
        let (format, text) = if ordered {
            ("decimal", format!("%{}.", level + 1))
        } else {
            ("bullet", if level % 2 == 0 { "•" } else { "◦" }.to_string())
        };
        numbering.add_level(
            Level::new(level, Start::new(1), NumberFormat::new(format), LevelText::new(text), LevelJc::new("left"))
                .indent(Some(720 * (level as i32 + 1)), Some(SpecialIndentType::Hanging(360)), None, None),
        )
    })
}

/// A table with the rows' own cells: the parser fills short rows with empty cells, but only so many (past that,
/// filling each row to the widest would make the file grow with rows times columns).
fn table(header: bool, rows: &[Vec<Vec<Span>>]) -> Table {
    use TableBorderPosition::{Bottom, InsideH, InsideV, Left, Right, Top};
    let rows: Vec<TableRow> = rows
        .iter()
        .enumerate()
        .map(|(r, row)| {
            let head = header && r == 0;
            let mut cells: Vec<TableCell> = row
                .iter()
                .map(|spans| {
                    let spans: Vec<Span> = spans.iter().cloned().map(|s| Span { bold: s.bold || head, ..s }).collect();
                    let cell = TableCell::new().add_paragraph(paragraph(&spans));
                    if head {
                        cell.shading(Shading::new().fill("D9E2F3"))
                    } else {
                        cell
                    }
                })
                .collect();
            if cells.is_empty() {
                cells.push(TableCell::new().add_paragraph(Paragraph::new()));
            }
            TableRow::new(cells)
        })
        .collect();
    let borders = [Top, Bottom, Left, Right, InsideH, InsideV].into_iter().fold(TableBorders::new(), |borders, at| {
        borders.set(TableBorder::new(at).border_type(BorderType::Single).size(4).color("808080"))
    });
    Table::new(rows).set_borders(borders)
}

/// The Word file of a document.
pub fn render(title: &str, markdown: &str) -> Result<Vec<u8>, DocxError> {
    let blocks = titled_blocks(title, markdown);
    let mut docx = heading_styles(Docx::new().default_fonts(RunFonts::new().ascii(BODY_FONT).hi_ansi(BODY_FONT)))
        .add_abstract_numbering(abstract_numbering(BULLETS, false))
        .add_numbering(Numbering::new(BULLETS, BULLETS));
    // Each ordered list gets its own numbering instance, so every list starts at its own first number.
    let mut next_numbering = NUMBERS_FIRST;
    let mut current_ordered: Option<usize> = None;
    for block in &blocks {
        if !matches!(block, Block::ListItem { .. }) {
            current_ordered = None;
        }
        docx = match block {
            Block::Heading(level, spans) => {
                docx.add_paragraph(paragraph(spans).style(&format!("Heading{}", (*level).clamp(1, 6))))
            }
            Block::Paragraph(spans) => docx.add_paragraph(paragraph(spans)),
            Block::Quote(spans) => {
                let spans: Vec<Span> = spans.iter().cloned().map(|s| Span { italic: true, ..s }).collect();
                docx.add_paragraph(paragraph(&spans).indent(Some(567), None, None, None))
            }
            Block::ListItem { depth, ordered, marker, spans } => {
                let level = IndentLevel::new((*depth).min(8));
                if marker.is_empty() {
                    // A continuation paragraph of the item above.
                    let left = 720 * (*depth as i32 + 1);
                    docx.add_paragraph(paragraph(spans).indent(Some(left), None, None, None))
                } else if *ordered {
                    let id = match current_ordered {
                        Some(id) if *depth > 0 || marker != "1." => id,
                        _ => {
                            let id = next_numbering;
                            next_numbering += 1;
                            let start = marker.trim_end_matches('.').parse::<usize>().unwrap_or(1);
                            docx = docx.add_abstract_numbering(abstract_numbering(id, true)).add_numbering(
                                Numbering::new(id, id).add_override(docx_rs::LevelOverride::new(0).start(start)),
                            );
                            current_ordered = Some(id);
                            id
                        }
                    };
                    docx.add_paragraph(paragraph(spans).numbering(NumberingId::new(id), level))
                } else {
                    docx.add_paragraph(paragraph(spans).numbering(NumberingId::new(BULLETS), level))
                }
            }
            Block::Table { header, rows } => docx.add_table(table(*header, rows)).add_paragraph(Paragraph::new()),
            Block::Code(code) => {
                let span = Span { code: true, ..Span::plain(code) };
                docx.add_paragraph(paragraph(&[span]).align(AlignmentType::Left).indent(Some(284), None, None, None))
            }
            Block::Rule => docx.add_paragraph(Paragraph::new().add_run(Run::new().add_text("———"))),
        };
    }
    let mut out = Cursor::new(Vec::new());
    docx.pack(&mut out).map_err(|e| DocxError(e.to_string()))?;
    Ok(out.into_inner())
}

#[cfg(test)]
mod tests {
    use docx_rs::BuildXML;

    use super::*;

    fn cell(text: &str) -> Vec<Span> {
        vec![Span::plain(text)]
    }

    /// The cells of a table as written in the file.
    fn cells(header: bool, rows: &[Vec<Vec<Span>>]) -> usize {
        String::from_utf8(table(header, rows).build()).expect("utf-8").matches("<w:tc>").count()
    }

    #[test]
    fn table_rows_keep_their_own_cells() {
        assert_eq!(cells(true, &[vec![cell("a"), cell("b")], vec![cell("x"), cell("y")]]), 4);
        assert_eq!(cells(true, &[vec![cell("a"), cell("b"), cell("c")], vec![cell("x")], vec![]]), 5);
        // A header of thousands of columns over thousands of short rows: no row is filled to the header's width.
        let header: Vec<Vec<Span>> = (0..5_000).map(|i| cell(&i.to_string())).collect();
        let rows: Vec<Vec<Vec<Span>>> = std::iter::once(header).chain((0..5_000).map(|_| vec![cell("x")])).collect();
        assert_eq!(cells(true, &rows), 10_000);
    }

    #[test]
    fn renders_a_document_with_a_word_longer_than_a_page() {
        let markdown = format!("# Notes\n\n{}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "x".repeat(200_000));
        let bytes = render("Notes", &markdown).unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut xml = String::new();
        std::io::Read::read_to_string(&mut archive.by_name("word/document.xml").unwrap(), &mut xml).unwrap();
        assert!(xml.contains(&"x".repeat(200_000)));
        assert_eq!(xml.matches("<w:tc>").count(), 4);
    }
}
