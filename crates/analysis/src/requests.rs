//! Request detection: what a message asks for, documents to generate or a question about attached documents.
//! Quire's, not any one model's: the chat layer uses it to take requests that already made their document out of
//! what every provider sees, and the built-in assistant to decide its answer.

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use wire::ArtifactType;

use crate::{distinct, is_requirement_sentence, keywords, split_sentences, words};

/// Phrases naming each kind. Alternatives are tried left to right at each position, and the
/// leftmost match wins, so "business requirements document" is always a BRD.
static ARTIFACT_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:(?P<brd>business[\s-]+requirements?(?:\s+(?:documents?|docs?|specifications?|specs?))?|brds?)|(?P<req>(?:(?:software|system|product|functional|technical)\s+)?requirements?\s+(?:documents?|docs?|specifications?|specs?)|srs|prd)|(?P<us>user[\s-]+stor(?:y|ies))|(?P<ac>acceptance[\s-]+criteri(?:a|on|as))|(?P<ms>meeting\s+(?:summary|summaries|notes|minutes|recap)|summary\s+of\s+(?:the\s+last|the|our|this|today's|that)\s+(?:meeting|call|discussion)|(?:call|discussion)\s+summary|minutes))\b"
);

/// One mention of a document kind in a sentence (byte offsets into the sentence).
#[derive(Debug, Clone, Copy)]
struct Mention {
    kind: ArtifactType,
    start: usize,
    end: usize,
}

const NUMBER_WORDS: &[&str] = &[
    "few",
    "several",
    "many",
    "couple",
    "of",
    "more",
    "less",
    "extra",
    "additional",
    "spare",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "fifteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "ninety",
    "hundred",
    "last",
    "next",
    "first",
    "final",
    "those",
    "these",
];

/// Words after a mention showing it names a product feature, not a document ("a meeting notes app").
const PRODUCT_NOUNS: &[&str] = &[
    "app",
    "apps",
    "tool",
    "tools",
    "feature",
    "features",
    "system",
    "module",
    "page",
    "pages",
    "template",
    "templates",
    "generator",
    "editor",
    "software",
    "platform",
    "service",
    "screen",
    "section",
    "field",
    "fields",
    "format",
    "workflow",
    "board",
    "view",
    "tab",
    "functionality",
];

/// Words before a mention (articles skipped) showing it names a source, not a target.
const SOURCE_PREPOSITIONS: &[&str] = &[
    "from", "for", "in", "on", "using", "with", "turn", "convert", "based", "per", "against", "about", "use", "read",
    "reading", "attached", "uploaded", "existing", "above", "previous", "current", "old",
];
const SKIPPABLE: &[&str] =
    &["the", "a", "an", "our", "my", "this", "these", "that", "those", "your", "its", "their", "same"];

fn mentions(sentence: &str) -> Vec<Mention> {
    ARTIFACT_RE
        .captures_iter(sentence)
        .filter_map(|c| {
            let m = c.get(0)?;
            let kind = if c.name("brd").is_some() {
                ArtifactType::BusinessRequirements
            } else if c.name("req").is_some() {
                ArtifactType::RequirementsDoc
            } else if c.name("us").is_some() {
                ArtifactType::UserStories
            } else if c.name("ac").is_some() {
                ArtifactType::AcceptanceCriteria
            } else {
                ArtifactType::MeetingSummary
            };
            let before = words(&sentence[..m.start()]);
            if m.as_str().eq_ignore_ascii_case("minutes") {
                let prev = before.last().map(String::as_str).unwrap_or("");
                if prev.chars().all(|ch| ch.is_ascii_digit()) && !prev.is_empty() || NUMBER_WORDS.contains(&prev) {
                    return None;
                }
            }
            let after = words(&sentence[m.end()..]);
            if after.first().is_some_and(|w| PRODUCT_NOUNS.contains(&w.as_str())) {
                return None;
            }
            Some(Mention { kind, start: m.start(), end: m.end() })
        })
        .collect()
}

/// Whether a mention is the source of the work ("from the BRD", "for the user stories").
fn is_source(sentence: &str, mention: &Mention) -> bool {
    words(&sentence[..mention.start])
        .iter()
        .rev()
        .take(4)
        .find(|w| !SKIPPABLE.contains(&w.as_str()))
        .is_some_and(|w| SOURCE_PREPOSITIONS.contains(&w.as_str()))
}

static VERB_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:generat(?:e|es|ing)|creat(?:e|es|ing)|writ(?:e|es|ing)|draft(?:s|ing)?|produc(?:e|es|ing)|mak(?:e|es|ing)|prepar(?:e|es|ing)|compos(?:e|ing)|put\s+together|give\s+me|give\s+us|send\s+me|show\s+me|provide|build|turn\b.{0,60}?\binto|convert\b.{0,60}?\binto|can\s+i\s+(?:get|have)|(?P<wish>(?:i|we)\s+(?:would\s+like|'d\s+like|want|need)))\b"
);

/// Words that may stand between "I need" / "I'd like" and the document.
const WISH_FILLERS: &[&str] = &[
    "a", "an", "the", "some", "me", "us", "both", "full", "complete", "first", "draft", "short", "brief", "detailed",
    "proper", "formal", "new", "set", "of", "list", "quick", "initial", "simple", "few", "clear", "good", "nice", "to",
    "see", "get", "have", "also",
];

/// Words that may not stand between a verb and the document it acts on.
const BLOCKERS: &[&str] = &[
    "to",
    "can",
    "could",
    "will",
    "would",
    "should",
    "must",
    "may",
    "that",
    "which",
    "where",
    "who",
    "so",
    "when",
    "if",
    "because",
    "while",
    "users",
    "customers",
    "people",
];

const MODALS: &[&str] = &["can", "could", "will", "would", "should", "must", "may", "might", "shall"];
const BEFORE_TO_OK: &[&str] =
    &["you", "u", "want", "need", "like", "love", "have", "going", "please", "me", "us", "help"];
const FOLLOWERS_AFTER_WISH: &[&str] =
    &["to", "that", "which", "should", "must", "can", "is", "are", "will", "feature", "be"];

static QUESTION_START_RE: Lazy<Regex> =
    lazy_regex!(r"(?i)^\s*(?:how|why|what\s+(?:is|are|does|do)|what's|whats|is\s+it|are\s+there|do\s+you\s+know)\b");

const SHORT_FORM_WORDS: &[&str] = &[
    "please", "pls", "now", "ok", "okay", "great", "thanks", "thank", "you", "the", "a", "an", "some", "and", "also",
    "then", "next", "too", "as", "well", "both", "me", "it", "them", "this", "finally", "lastly", "perfect", "cool",
    "nice",
];

/// Whether a sentence asks to generate documents; returns the kinds it asks for, in order.
fn generation_in_sentence(sentence: &str) -> Vec<ArtifactType> {
    let all = mentions(sentence);
    let targets: Vec<Mention> = all.iter().filter(|m| !is_source(sentence, m)).copied().collect();
    if targets.is_empty() || QUESTION_START_RE.is_match(sentence) {
        return Vec::new();
    }
    let kinds = || targets.iter().map(|m| m.kind).collect::<Vec<_>>();

    // "User stories, please." / "And the BRD too."
    let mut rest = String::new();
    let mut last = 0;
    for m in &all {
        rest.push_str(&sentence[last..m.start]);
        rest.push(' ');
        last = m.end;
    }
    rest.push_str(&sentence[last..]);
    let rest_words = words(&rest);
    if rest_words.iter().all(|w| SHORT_FORM_WORDS.contains(&w.as_str()))
        && rest_words.iter().any(|w| matches!(w.as_str(), "please" | "pls" | "now" | "next" | "too" | "also"))
    {
        return kinds();
    }

    for v in VERB_RE.captures_iter(sentence) {
        let verb = v.get(0).expect("match");
        let Some(target) = targets.iter().find(|m| m.start >= verb.end()) else {
            continue;
        };
        let between = words(&sentence[verb.end()..target.start]);
        let wish = v.name("wish").is_some();
        if wish {
            if !between.iter().all(|w| WISH_FILLERS.contains(&w.as_str())) || between.len() > 4 {
                continue;
            }
            let after = words(&sentence[target.end..]);
            if after.first().is_some_and(|w| FOLLOWERS_AFTER_WISH.contains(&w.as_str())) {
                continue;
            }
        } else if between.len() > 4 || between.iter().any(|w| BLOCKERS.contains(&w.as_str())) {
            continue;
        }
        let before = words(&sentence[..verb.start()]);
        let prev = before.last().map(String::as_str);
        let prev2 = before.len().checked_sub(2).map(|i| before[i].as_str());
        if let Some(p) = prev {
            if p == "to" && !prev2.is_some_and(|w| BEFORE_TO_OK.contains(&w)) {
                continue;
            }
            if MODALS.contains(&p) && !prev2.is_some_and(|w| matches!(w, "you" | "u")) {
                continue;
            }
        }
        let negated =
            before.iter().rev().take(3).any(|w| {
                w.ends_with("n't") || matches!(w.as_str(), "not" | "never" | "no" | "dont" | "without" | "stop")
            });
        if negated {
            continue;
        }
        return kinds();
    }
    Vec::new()
}

/// Whether this sentence is a request to generate documents.
pub fn is_generation_sentence(sentence: &str) -> bool {
    !generation_in_sentence(sentence).is_empty()
}

/// The document kinds a message asks to generate, in the order they are mentioned, each once.
pub fn requested_artifacts(text: &str) -> Vec<ArtifactType> {
    distinct(split_sentences(text).iter().flat_map(|sentence| generation_in_sentence(sentence)))
}

static DOC_REF_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)(?:\b(?:attached|attachments?|uploaded|according\s+to)\b|\b(?:the|my|our|this|that|these|those)\s+(?:documents?|docs?|files?|pdfs?|docx|spreadsheets?|reports?|slides?|decks?|transcripts?|attachments?|uploads?|notes)\b|\bwhat\s+does\b.{1,80}?\bsay\b|\b[\w\-]+\.(?:pdf|docx?|txt|md|csv|pptx?|xlsx?|rtf|html?)\b)"
);

static ASK_START_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)^\s*(?:(?:please|ok|okay|so|and|now|also|hey|hi)[,\s]+)*(?:what|how|why|when|where|who|which|does|do|did|is|are|was|were|can|could|would|will|summari[sz]e|explain|tell|find|list|show|describe|extract|look|check|search|read|quote|give|according|based|in|from)\b"
);

/// Whether a sentence mentions an attached or uploaded document.
pub fn mentions_document(sentence: &str) -> bool {
    DOC_REF_RE.is_match(sentence)
}

/// Whether a sentence asks about an attached or uploaded document.
pub fn is_document_question(sentence: &str) -> bool {
    let s = sentence.trim();
    if !mentions_document(s) {
        return false;
    }
    let question = s.ends_with('?') || ASK_START_RE.is_match(s);
    question && (s.ends_with('?') || !is_requirement_sentence(s))
}

/// Whether a sentence is an instruction to the assistant (documents to make, a question about files), not content.
pub fn is_instruction(sentence: &str) -> bool {
    is_generation_sentence(sentence) || is_document_question(sentence)
}

/// Whether a message asks about an attached document.
pub fn asks_about_documents(text: &str) -> bool {
    split_sentences(text).iter().any(|s| is_document_question(s))
}

/// Words that point at an attached document rather than into it ("what do the files say about ..."): not what a
/// question about documents is looking for.
pub const DOCUMENT_WORDS: &[&str] = &[
    "document",
    "documents",
    "doc",
    "docs",
    "file",
    "files",
    "pdf",
    "attached",
    "uploaded",
    "say",
    "says",
    "according",
];

/// The other words of a request about documents that are not what to search for: other names for them, and what
/// to do with them.
const REQUEST_WORDS: &[&str] = &[
    "pdfs",
    "attachment",
    "attachments",
    "upload",
    "uploads",
    "said",
    "generate",
    "create",
    "write",
    "draft",
    "produce",
    "make",
    "prepare",
    "based",
    "using",
    "read",
    "look",
    "search",
    "check",
    "quote",
    "tell",
    "summarize",
    "summarise",
];

/// Reduces a question about documents to its keywords, for `document_search`.
pub fn search_query(text: &str) -> String {
    let relevant: Vec<String> = split_sentences(text)
        .into_iter()
        .filter(|s| is_document_question(s) || is_generation_sentence(s) || mentions_document(s))
        .collect();
    let source = if relevant.is_empty() { text.to_string() } else { relevant.join(" ") };
    // Drop the names of the documents being asked for; keep the words of sources.
    let mut cleaned = String::new();
    for sentence in split_sentences(&source) {
        let mut last = 0;
        for m in mentions(&sentence) {
            if !is_source(&sentence, &m) {
                cleaned.push_str(&sentence[last..m.start]);
                cleaned.push(' ');
                last = m.end;
            }
        }
        cleaned.push_str(&sentence[last..]);
        cleaned.push(' ');
    }
    let kw = keywords(&cleaned, &[DOCUMENT_WORDS, REQUEST_WORDS].concat());
    if kw.is_empty() {
        let fallback = keywords(text, &[]);
        if fallback.is_empty() {
            "requirements".to_string()
        } else {
            fallback.join(" ")
        }
    } else {
        kw.into_iter().take(12).collect::<Vec<_>>().join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ArtifactType::*;

    #[test]
    fn detects_requested_kinds_in_order() {
        assert_eq!(requested_artifacts("Please generate user stories."), vec![UserStories]);
        assert_eq!(
            requested_artifacts("Can you create a BRD and the user stories?"),
            vec![BusinessRequirements, UserStories]
        );
        assert_eq!(requested_artifacts("Write the business requirements document"), vec![BusinessRequirements]);
        assert_eq!(requested_artifacts("Draft a requirements specification"), vec![RequirementsDoc]);
        assert_eq!(requested_artifacts("Give me the SRS"), vec![RequirementsDoc]);
        assert_eq!(
            requested_artifacts("Prepare the minutes, then the acceptance criteria."),
            vec![MeetingSummary, AcceptanceCriteria]
        );
        assert_eq!(requested_artifacts("Make a summary of the meeting"), vec![MeetingSummary]);
        assert_eq!(requested_artifacts("I need a BRD"), vec![BusinessRequirements]);
        assert_eq!(requested_artifacts("User stories please"), vec![UserStories]);
        assert_eq!(requested_artifacts("Generate user stories and user stories again"), vec![UserStories]);
    }

    #[test]
    fn ignores_non_requests() {
        assert!(requested_artifacts("What are user stories?").is_empty());
        assert!(requested_artifacts("How do I write good user stories?").is_empty());
        assert!(requested_artifacts("Don't generate the BRD yet.").is_empty());
        assert!(requested_artifacts("I want to build a tool where product managers can write user stories.").is_empty());
        assert!(requested_artifacts("Users should be able to create meeting notes.").is_empty());
        assert!(requested_artifacts("Generate user stories in 5 minutes").len() == 1);
        assert!(requested_artifacts("We need a meeting notes app").is_empty());
    }

    #[test]
    fn sources_are_not_targets() {
        assert_eq!(requested_artifacts("Write acceptance criteria for the user stories"), vec![AcceptanceCriteria]);
        assert_eq!(
            requested_artifacts("Generate user stories from the attached requirements document"),
            vec![UserStories]
        );
        assert_eq!(requested_artifacts("Turn the meeting notes into user stories"), vec![UserStories]);
    }

    #[test]
    fn detects_document_questions() {
        assert!(asks_about_documents("What does the attached file say about pricing?"));
        assert!(asks_about_documents("According to the PDF, when is the launch"));
        assert!(asks_about_documents("Summarize the document"));
        assert!(!asks_about_documents("Users must be able to upload the file."));
        assert!(!asks_about_documents("What is a user story?"));
    }

    #[test]
    fn builds_search_queries() {
        assert_eq!(search_query("What does the attached document say about the refund policy?"), "refund policy");
        assert_eq!(search_query("Generate user stories from the attached requirements document"), "requirements");
    }
}
