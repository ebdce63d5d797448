//! The built-in assistant's running summary of a conversation (see [`crate::summary`]): the product it is
//! about, the requirements stated so far and the topics touched, carried over from the summary before it. It is
//! written so that reading it back (as the next summary does, and as the assistant does when the summary stands
//! in for dropped turns) gives the same product and requirements again.

use crate::summary::SummarySource;
use crate::tokens::count_tokens;
use crate::types::Role;
use analysis::requests::is_instruction;
use analysis::{collect_requirements, derive_subject, first_words, keywords, split_sentences};

/// Most requirements a summary lists.
const MAX_REQUIREMENTS: usize = 20;
/// Most words of one listed requirement.
const REQUIREMENT_WORDS: usize = 40;
/// Most topics a summary names.
const MAX_TOPICS: usize = 8;
/// Most tokens of a summary.
pub(crate) const MAX_TOKENS: usize = 350;

const TOPICS_LABEL: &str = "Topics discussed earlier:";
const REQUIREMENTS_LABEL: &str = "Requirements noted so far:";

/// Words that say nothing about a conversation's subject.
const DULL: &[&str] = &["summary", "conversation", "requirements", "noted", "topics", "discussed", "earlier"];

/// The summary of `messages` added to `earlier`.
pub(crate) fn write(earlier: Option<&str>, messages: &[SummarySource]) -> String {
    let person: Vec<&str> = messages.iter().filter(|m| m.role == Role::User).map(|m| m.text.as_str()).collect();
    let earlier = earlier.unwrap_or("");
    let texts: Vec<&str> = std::iter::once(earlier).chain(person.iter().copied()).collect();

    let requirements: Vec<String> = collect_requirements(texts.iter().copied(), is_instruction)
        .into_iter()
        .take(MAX_REQUIREMENTS)
        .map(|r| first_words(&r.text, REQUIREMENT_WORDS))
        .collect();

    let mut topics: Vec<String> = earlier
        .lines()
        .filter_map(|line| line.trim().strip_prefix(TOPICS_LABEL))
        .flat_map(|list| list.trim().trim_end_matches('.').split(", ").map(str::trim).map(str::to_string))
        .filter(|t| !t.is_empty())
        .collect();
    for text in &person {
        let plain: Vec<String> = split_sentences(text).into_iter().filter(|s| !is_instruction(s)).collect::<Vec<_>>();
        for word in keywords(&plain.join(" "), DULL) {
            if topics.len() < MAX_TOPICS && !topics.iter().any(|t| t.eq_ignore_ascii_case(&word)) {
                topics.push(word);
            }
        }
    }
    topics.truncate(MAX_TOPICS);

    let mut lines = Vec::new();
    if let Some(subject) = derive_subject(texts.iter().copied()) {
        lines.push(format!("The conversation is about a product called \"{subject}\"."));
    }
    if !topics.is_empty() {
        lines.push(format!("{TOPICS_LABEL} {}.", topics.join(", ")));
    }
    if !requirements.is_empty() {
        lines.push(REQUIREMENTS_LABEL.to_string());
        lines.extend(requirements.iter().map(|r| format!("- {r}")));
    }
    if lines.is_empty() {
        lines.push("The earlier messages stated no requirements.".to_string());
    }
    // Within its token allowance: the last requirements go first.
    while lines.len() > 1 && count_tokens(&lines.join("\n")) > MAX_TOKENS {
        lines.pop();
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(text: &str) -> SummarySource {
        SummarySource { role: Role::User, text: text.into() }
    }

    #[test]
    fn keeps_the_product_and_requirements_and_adds_new_ones() {
        let first = write(
            None,
            &[
                person("We are building a library app called ShelfMate. Members must renew loans online."),
                SummarySource { role: Role::Assistant, text: "Assistants must not be quoted as requirements.".into() },
                person("Generate user stories"),
            ],
        );
        assert!(first.contains("\"ShelfMate\""), "{first}");
        assert!(first.contains("- Members must renew loans online."), "{first}");
        assert!(!first.contains("Assistants must"), "only the person's words: {first}");
        assert!(!first.to_lowercase().contains("user stories"), "a request is not carried: {first}");

        let second = write(Some(&first), &[person("Librarians must see overdue reports every morning.")]);
        assert!(second.contains("\"ShelfMate\""), "{second}");
        assert!(second.contains("- Members must renew loans online."), "{second}");
        assert!(second.contains("- Librarians must see overdue reports every morning."), "{second}");
        assert!(second.contains(TOPICS_LABEL), "{second}");
    }

    #[test]
    fn stays_within_its_allowance() {
        let many: Vec<SummarySource> = (0..60)
            .map(|i| {
                person(&format!("Users must be able to manage the {i}th kind of warehouse record in bulk quickly."))
            })
            .collect();
        let summary = write(None, &many);
        assert!(count_tokens(&summary) <= MAX_TOKENS, "{}", count_tokens(&summary));
        assert!(summary.lines().filter(|l| l.starts_with("- ")).count() <= MAX_REQUIREMENTS);
        assert_eq!(write(None, &[]), "The earlier messages stated no requirements.");
    }
}
