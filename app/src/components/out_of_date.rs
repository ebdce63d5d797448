//! The notice on a document that no longer reflects the requirements: which ones changed or were dropped, and
//! "Update document".

use leptos::prelude::*;

use crate::api::{shortened, OutOfDate, RequirementStatus};

/// Most words a change may have on either side to be told by its changed words alone.
const CHANGED_WORDS: usize = 6;
/// Longest requirement text quoted in full, in characters.
const QUOTED_CHARS: usize = 90;

/// The words that differ between `was` and `now`, once the words both begin and end with are set aside.
fn changed_words(was: &str, now: &str) -> (String, String) {
    let was: Vec<&str> = was.split_whitespace().collect();
    let now: Vec<&str> = now.split_whitespace().collect();
    let start = was.iter().zip(&now).take_while(|(a, b)| a == b).count();
    let most = was.len().min(now.len()) - start;
    let end = was.iter().rev().zip(now.iter().rev()).take(most).take_while(|(a, b)| a == b).count();
    (was[start..was.len() - end].join(" "), now[start..now.len() - end].join(" "))
}

/// How a mark names its requirement: its key, or for another conversation's `R-2 of “Rota”`.
fn named(mark: &OutOfDate) -> String {
    match (&mark.conversation, mark.key.split_once('@')) {
        (Some(conversation), Some((key, _))) => format!("{key} of “{}”", shortened(conversation.title.trim(), 60)),
        _ => mark.key.clone(),
    }
}

/// How one requirement left the document behind: "R-1 changed (30-minute → 45-minute)", "R-2 dropped", "R-2 of
/// “Rota” changed (8 → 12)".
pub fn describe(mark: &OutOfDate) -> String {
    let key = named(mark);
    if mark.status == RequirementStatus::Dropped {
        return format!("{key} dropped");
    }
    let (before, after) = changed_words(&mark.was, &mark.now);
    let short = |words: &str| !words.is_empty() && words.split_whitespace().count() <= CHANGED_WORDS;
    if short(&before) && short(&after) {
        format!("{key} changed ({before} → {after})")
    } else {
        let quote = |text: &str| format!("“{}”", shortened(text.trim(), QUOTED_CHARS));
        format!("{key} changed ({} → {})", quote(&mark.was), quote(&mark.now))
    }
}

/// The notice's sentence: "Out of date: R-1 changed (30-minute → 45-minute); R-2 dropped."
pub fn summary(marks: &[OutOfDate]) -> String {
    let parts: Vec<String> = marks.iter().map(describe).collect();
    format!("Out of date: {}.", parts.join("; "))
}

/// Says plainly which requirements the document no longer reflects; with `on_update`, offers "Update document"
/// (not while `busy`).
#[component]
pub fn OutOfDateNotice(
    marks: Vec<OutOfDate>,
    #[prop(into)] busy: Signal<bool>,
    #[prop(optional_no_strip)] on_update: Option<Callback<()>>,
) -> impl IntoView {
    let text = summary(&marks);
    view! {
        <div class="out-of-date" data-testid="out-of-date">
            <p>{text}</p>
            {on_update.map(|update| view! {
                <button type="button" disabled=move || busy.get() on:click=move |_| update.run(())>
                    "Update document"
                </button>
            })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(key: &str, was: &str, now: &str, status: RequirementStatus) -> OutOfDate {
        OutOfDate {
            key: key.into(),
            was: was.into(),
            now: now.into(),
            status,
            changed_by: Vec::new(),
            conversation: None,
        }
    }

    #[test]
    fn a_change_is_told_by_its_changed_words() {
        let changed = mark(
            "R-1",
            "Customers must be able to book 30-minute slots.",
            "Customers must be able to book 45-minute slots.",
            RequirementStatus::Changed,
        );
        assert_eq!(describe(&changed), "R-1 changed (30-minute → 45-minute)");
        let dropped = mark("R-2", "Staff see bookings.", "Staff see bookings.", RequirementStatus::Dropped);
        assert_eq!(summary(&[changed, dropped]), "Out of date: R-1 changed (30-minute → 45-minute); R-2 dropped.");
    }

    #[test]
    fn a_change_without_words_to_point_at_quotes_both_texts() {
        let added = mark("R-3", "Staff see bookings.", "Staff see all bookings.", RequirementStatus::Changed);
        assert_eq!(describe(&added), "R-3 changed (“Staff see bookings.” → “Staff see all bookings.”)");
        let rewritten = mark(
            "R-4",
            "Pages load fast.",
            "Every page must load within two seconds on a slow phone connection.",
            RequirementStatus::Changed,
        );
        assert!(
            describe(&rewritten).starts_with("R-4 changed (“Pages load fast.” → “Every page"),
            "{}",
            describe(&rewritten)
        );
        let long = "word ".repeat(60);
        assert!(describe(&mark("R-5", "x", &long, RequirementStatus::Changed)).contains('…'));
    }

    #[test]
    fn another_conversations_requirement_is_named_with_its_conversation() {
        let mut elsewhere =
            mark("R-2@0a1b2c3d4e5f", "Shifts are 8 hours.", "Shifts are 12 hours.", RequirementStatus::Changed);
        elsewhere.conversation = Some(crate::api::CitedConversation {
            thread_id: uuid::Uuid::nil(),
            title: "Rota".into(),
            reference: "0a1b2c3d4e5f".into(),
        });
        assert_eq!(describe(&elsewhere), "R-2 of “Rota” changed (8 → 12)");
    }
}
