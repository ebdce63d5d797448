//! A conversation's requirements as files a team can hand on: the ledger (every requirement with its kind, status,
//! source and coverage) and the traceability matrix (every requirement as each document version reflects it, with
//! its source message and dates), each as CSV or Markdown.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::{requirement_key, Message, RequirementStatus};

use store::{requirements::CitedVersion, LedgerRows, LedgerView};

/// Which table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// One row per requirement of the path shown.
    Requirements,
    /// One row per requirement cited by a document version.
    Traceability,
}

impl Table {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "requirements" => Some(Self::Requirements),
            "traceability" => Some(Self::Traceability),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Requirements => "requirements",
            Self::Traceability => "traceability",
        }
    }
}

/// Which file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Markdown,
}

impl Format {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "csv" => Some(Self::Csv),
            "md" | "markdown" => Some(Self::Markdown),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8",
            Self::Markdown => "text/markdown; charset=utf-8",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Markdown => "md",
        }
    }
}

/// What a table is made of: the ledger's rows and its view of the path shown, the person's messages its
/// requirements came from, and the document versions that cite them (for the traceability matrix).
pub struct Sources<'a> {
    pub title: &'a str,
    pub rows: &'a LedgerRows,
    pub view: &'a LedgerView,
    pub messages: &'a [Message],
    pub versions: &'a [CitedVersion],
}

/// Longest excerpt of a source message in a cell, in characters.
const SOURCE_CHARS: usize = 200;

/// The file name of a table of the conversation titled `title`.
pub fn file_name(title: &str, table: Table, format: Format) -> String {
    let stem: String =
        title.chars().map(|c| if c.is_alphanumeric() || c == '-' { c } else { '-' }).take(60).collect::<String>();
    let stem = stem.trim_matches('-');
    let stem = if stem.is_empty() { "conversation" } else { stem };
    format!("{stem}-{}.{}", table.name(), format.extension())
}

/// The table as `format`: a header row and the rows, linear in the ledger and the versions.
pub fn render(sources: &Sources<'_>, table: Table, format: Format) -> String {
    let (header, rows) = match table {
        Table::Requirements => requirements(sources),
        Table::Traceability => traceability(sources),
    };
    match format {
        Format::Csv => csv(&header, &rows),
        Format::Markdown => markdown(sources.title, table, &header, &rows),
    }
}

fn date(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

fn excerpt(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    wire::shortened(&text, SOURCE_CHARS)
}

fn requirements(s: &Sources<'_>) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let messages: HashMap<Uuid, &Message> = s.messages.iter().map(|m| (m.id, m)).collect();
    let header = vec!["Key", "Requirement", "Kind", "Status", "Source", "Recorded", "Last changed", "Covered by"];
    let rows = s
        .view
        .standing
        .iter()
        .map(|st| {
            let r = &st.requirement;
            let source = r.sources.first().and_then(|m| messages.get(m)).map_or_else(
                || "Added by hand".to_string(),
                |m| format!("\"{}\" ({})", excerpt(&m.content), date(m.created_at)),
            );
            let covered: Vec<String> = r
                .covered_by
                .iter()
                .map(|c| format!("{} v{}{}", c.title, c.version, if c.current { "" } else { " (out of date)" }))
                .collect();
            vec![
                r.key.clone(),
                r.text.clone(),
                r.kind.label().to_string(),
                status_label(r.status).to_string(),
                source,
                r.history.first().map(|h| date(h.at)).unwrap_or_default(),
                r.history.last().map(|h| date(h.at)).unwrap_or_default(),
                if covered.is_empty() { "Not covered".to_string() } else { covered.join("; ") },
            ]
        })
        .collect();
    (header, rows)
}

fn status_label(status: RequirementStatus) -> &'static str {
    match status {
        RequirementStatus::Active => "Active",
        RequirementStatus::Changed => "Changed",
        RequirementStatus::Dropped => "Dropped",
    }
}

fn traceability(s: &Sources<'_>) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let header = vec![
        "Key",
        "Requirement (as reflected)",
        "Status now",
        "Source message",
        "Source date",
        "Document",
        "Version",
        "Version date",
        "Reflects the requirement as it stands",
    ];
    let messages: HashMap<Uuid, &Message> = s.messages.iter().map(|m| (m.id, m)).collect();
    let revisions: HashMap<i64, &store::requirements::Revision> = s.rows.revisions.iter().map(|r| (r.id, r)).collect();
    let numbers: HashMap<Uuid, i64> = s.rows.requirements.iter().map(|r| (r.id, r.number)).collect();
    let standing: HashMap<Uuid, &store::Standing> = s.view.standing.iter().map(|st| (st.id, st)).collect();
    let versions: HashMap<(Uuid, i64), &CitedVersion> =
        s.versions.iter().map(|v| ((v.artifact_id, v.version), v)).collect();
    let mut rows: Vec<(i64, Uuid, i64, Vec<String>)> = Vec::new();
    for c in &s.rows.citations {
        let (Some(version), Some(revision), Some(number)) =
            (versions.get(&(c.artifact_id, c.version)), revisions.get(&c.revision_id), numbers.get(&c.requirement_id))
        else {
            continue;
        };
        let now = standing.get(&c.requirement_id);
        // The message the reflected text came from: the revision's, else the requirement's first source.
        let source = revision
            .message_id
            .or_else(|| now.and_then(|st| st.requirement.sources.first().copied()))
            .and_then(|m| messages.get(&m));
        rows.push((
            *number,
            c.artifact_id,
            c.version,
            vec![
                requirement_key(*number),
                revision.text.clone(),
                now.map_or("Not on this branch", |st| status_label(st.requirement.status)).to_string(),
                source.map_or_else(|| "Changed by hand".to_string(), |m| excerpt(&m.content)),
                source.map_or_else(|| date(revision.created_at), |m| date(m.created_at)),
                version.title.clone(),
                version.version.to_string(),
                date(version.created_at),
                match now {
                    Some(st) if st.revision <= revision.id => "Yes".to_string(),
                    Some(_) => "No: changed since".to_string(),
                    None => "No".to_string(),
                },
            ],
        ));
    }
    rows.sort_by_key(|(number, _, version, _)| (*number, *version));
    (header, rows.into_iter().map(|(_, _, _, row)| row).collect())
}

/// A cell as CSV carries it to a spreadsheet: one that would start a formula is prefixed with `'`.
fn defused(cell: &str) -> String {
    match cell.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{cell}"),
        _ => cell.to_string(),
    }
}

fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let _ = writer.write_record(header);
    for row in rows {
        let _ = writer.write_record(row.iter().map(|c| defused(c)));
    }
    let bytes = writer.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

fn markdown(title: &str, table: Table, header: &[&str], rows: &[Vec<String>]) -> String {
    let heading = match table {
        Table::Requirements => "Requirements",
        Table::Traceability => "Traceability matrix",
    };
    let mut out = format!("# {heading}: {}\n\n", analysis::table_cell(title));
    if rows.is_empty() {
        out.push_str("_None recorded._\n");
        return out;
    }
    out.push_str(&format!("| {} |\n", header.join(" | ")));
    out.push_str(&format!("|{}\n", " --- |".repeat(header.len())));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| analysis::table_cell(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_that_would_start_a_formula_are_defused_and_quoted() {
        let text = csv(&["A", "B"], &[vec!["=HYPERLINK(\"x\")".into(), "plain, with \"quotes\"".into()]]);
        assert_eq!(text, "A,B\n\"'=HYPERLINK(\"\"x\"\")\",\"plain, with \"\"quotes\"\"\"\n");
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(file_name("Salon / booking", Table::Traceability, Format::Csv), "Salon---booking-traceability.csv");
        assert_eq!(file_name("///", Table::Requirements, Format::Markdown), "conversation-requirements.md");
    }
}
