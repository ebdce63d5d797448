//! The product or project a conversation is about: its name when one is given, otherwise a
//! title made from how it is described.

use std::sync::LazyLock;

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use super::re;
use super::text::{normalize_quotes, title_case};

static CALLED_RE: Lazy<Regex> = lazy_regex!(
    r#"\b(?:[Cc]alled|[Nn]amed|[Cc]ode-?named)\s+(?:"(?P<q>[^"]{2,40})"|'(?P<s>[^']{2,40})'|(?P<n>[A-Z0-9][\w\-]*(?:\s+[A-Z0-9][\w\-]*){0,3}))"#
);

const PRODUCT_HEADS: &str = "app|apps|application|system|platform|tool|website|site|portal|dashboard|service|bot|chatbot|marketplace|crm|api|product|software|solution|extension|plugin|game|program|workspace|tracker|planner|manager|assistant|store|shop";

static PRODUCT_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:an?|the|our|my|this|their|new)\s+(?P<np>(?:[\w\-]+\s+){{0,3}}?(?:{PRODUCT_HEADS}))\b(?:\s+(?P<rel>for|that|which|to|where|with)\s+(?P<rest>[^.,;!?\n]+))?"
    ))
});

const WEAK_MODIFIERS: &[&str] = &[
    "new", "simple", "basic", "small", "whole", "entire", "same", "existing", "current", "good", "great", "nice",
    "better", "first", "web", "online", "internal", "custom", "little", "big", "full", "complete", "proper", "this",
    "that", "the", "a", "an", "our", "my",
];

const CLAUSE_STOPS: &[&str] = &[
    "and", "so", "where", "that", "which", "with", "because", "but", "while", "who", "when", "using", "in", "if", "by",
    "via", "must", "should", "will", "can", "could", "to", "as",
];

/// Derives the name of the product or project the conversation is about, if it names one
/// ("an app called FitBook", "a mobile app for booking yoga classes", "our expense tracker").
pub fn derive_subject<'a>(texts: impl IntoIterator<Item = &'a str> + Clone) -> Option<String> {
    for text in texts.clone() {
        let text = normalize_quotes(text);
        if let Some(c) = CALLED_RE.captures(&text) {
            let name = c.name("q").or(c.name("s")).or(c.name("n")).map_or("", |m| m.as_str()).trim();
            if !name.is_empty() {
                return Some(name.to_string());
            }
        }
    }
    // (rank, name): lower rank is better; the first best one wins.
    let mut best: Option<(u8, String)> = None;
    for text in texts {
        let text = normalize_quotes(text);
        for c in PRODUCT_RE.captures_iter(&text) {
            let np_words: Vec<String> = c["np"].split_whitespace().map(str::to_lowercase).collect();
            let head = np_words.last().cloned().unwrap_or_default();
            let modifiers: Vec<&String> =
                np_words[..np_words.len() - 1].iter().skip_while(|w| WEAK_MODIFIERS.contains(&w.as_str())).collect();
            let rel = c.name("rel").map(|m| m.as_str().to_lowercase());
            let rest: Vec<String> = c
                .name("rest")
                .map(|m| {
                    m.as_str()
                        .split_whitespace()
                        .take_while(|w| !CLAUSE_STOPS.contains(&w.to_lowercase().as_str()))
                        .take(6)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let mut np: Vec<String> = modifiers.iter().map(|s| s.to_string()).collect();
            np.push(head);
            let np = np.join(" ");
            let candidate = match rel.as_deref() {
                Some("for") if !rest.is_empty() => Some((0, format!("{np} for {}", rest.join(" ")))),
                _ if !modifiers.is_empty() => Some((1, np)),
                Some("that" | "which" | "to") if !rest.is_empty() => Some((2, format!("{np} that {}", rest.join(" ")))),
                _ => None,
            };
            if let Some((rank, name)) = candidate {
                if best.as_ref().is_none_or(|(r, _)| rank < *r) {
                    best = Some((rank, name));
                }
            }
        }
    }
    best.map(|(_, name)| title_case(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_subjects() {
        assert_eq!(derive_subject(["We are building an app called FitBook."]).as_deref(), Some("FitBook"));
        assert_eq!(
            derive_subject(["I want a mobile app for booking yoga classes and paying online."]).as_deref(),
            Some("Mobile App for Booking Yoga Classes")
        );
        assert_eq!(derive_subject(["The system must be fast."]), None);
        assert_eq!(
            derive_subject(["Our expense tracking tool needs approvals."]).as_deref(),
            Some("Expense Tracking Tool")
        );
    }
}
