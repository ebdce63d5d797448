//! The lines of a diff as people read them: removed lines struck through, added ones underlined, the words that
//! changed inside a changed line marked, and a sign on each line for those who cannot see the colours.

use leptos::prelude::*;

use crate::api::{DiffLine, DiffOp, DiffPart};

/// Every line of a diff, or `same` when nothing changed.
pub fn diff_lines(lines: Vec<DiffLine>, same: &'static str) -> AnyView {
    if lines.iter().all(|l| l.op == DiffOp::Equal) {
        return view! { <p class="list-status">{same}</p> }.into_any();
    }
    lines.into_iter().map(diff_line).collect_view().into_any()
}

/// One line: a kept line as it is; a changed one inside `<del>` or `<ins>`, with its changed words in `<mark>`.
fn diff_line(line: DiffLine) -> impl IntoView {
    let DiffLine { op, text, parts } = line;
    let body = move || -> AnyView {
        if parts.is_empty() {
            text.into_any()
        } else {
            parts.into_iter().map(part).collect_view().into_any()
        }
    };
    let (class, sign, text) = match op {
        DiffOp::Equal => ("diff-line", " ", body()),
        DiffOp::Insert => ("diff-line diff-insert", "+", view! { <ins>{body()}</ins> }.into_any()),
        DiffOp::Delete => ("diff-line diff-delete", "−", view! { <del>{body()}</del> }.into_any()),
    };
    view! { <div class=class><span class="diff-sign" aria-hidden="true">{sign}</span>{text}</div> }
}

fn part(part: DiffPart) -> AnyView {
    if part.changed {
        view! { <mark class="diff-word">{part.text}</mark> }.into_any()
    } else {
        part.text.into_any()
    }
}
