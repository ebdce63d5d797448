//! Requirement statements: recognising them among other sentences and parsing each into a
//! [`Requirement`] (role, goal, benefit, priority, quality).

use std::collections::HashSet;
use std::sync::LazyLock;

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use super::classify::{priority_of, quality_of, Priority, Quality};
use super::goals::{parse_goal, split_benefit, Goal};
use super::labels::strip_speaker;
use super::re;
use super::roles::first_person;
use super::sentences::{split_sentences, strip_fillers};
use super::text::{as_sentence, strip_terminal, word_count, words};

/// One requirement sentence and what could be understood of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The sentence as written (capitalised, with final punctuation).
    pub text: String,
    /// Who benefits: "user", "customer", "store manager".
    pub role: String,
    /// What is wanted.
    pub goal: Goal,
    /// Why, when the sentence says so ("so that ..."), in the role's first person.
    pub benefit: Option<String>,
    /// MoSCoW priority.
    pub priority: Priority,
    /// Set for non-functional requirements.
    pub quality: Option<Quality>,
}

static CUE_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:wants?|wanted|needs?|needed|must|should|shall|requires?|required|requirement|would\s+like|\w+'d\s+like|has\s+to|have\s+to|allows?|allowing|able\s+to|lets|let\s+(?:me|us|them|users|customers|people|admins|managers|staff|everyone|anyone)|enables?|expects?\s+to|expected\s+to|ought\s+to|nice\s+to\s+have|it\s+(?:would|'d)\s+be\s+(?:nice|great|good|helpful|useful)|could)\b"
);

static ASKS_ASSISTANT_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)(?:\b(?:want|need|would\s+like|'d\s+like|ask)\s+you\b|\bneed\s+(?:some\s+|your\s+)?help\b|^\s*(?:can|could|would|will)\s+you\b|^\s*(?:how|why|what|who|which)\b|^\s*(?:thanks|thank\s+you)\b)"
);

/// Whether a sentence states a requirement: a cue such as want / need / must / should / would like / able to with
/// something after it, and neither a question nor a request addressed to the assistant.
pub fn is_requirement_sentence(sentence: &str) -> bool {
    let s = sentence.trim();
    if s.ends_with('?') || word_count(s) < 3 || ASKS_ASSISTANT_RE.is_match(s) {
        return false;
    }
    CUE_RE.find_iter(s).any(|m| {
        let after = words(&s[m.end()..]);
        let cue = m.as_str().to_lowercase();
        if cue == "could" && matches!(after.first().map(String::as_str), Some("you" | "we" | "i")) {
            return false;
        }
        !after.is_empty()
    })
}

static AS_ROLE_RE: Lazy<Regex> =
    lazy_regex!(r"(?i)^\s*as\s+(?:an?|the)\s+(?P<role>[\w\- ]{1,40}?)\s*(?:,\s*|\s+(?P<subj>i|we)\b)");

static WISH_PREFIX_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)^(?:it\s+(?:would|'d|will)\s+be\s+(?:nice|great|good|helpful|useful|cool|ideal)\s+(?:if|to\s+have|that)|ideally|optionally|if\s+possible|preferably|maybe|perhaps)[,\s]+"
);

/// Parses one requirement sentence.
pub fn parse_requirement(sentence: &str) -> Requirement {
    let sentence = strip_speaker(sentence);
    let text = as_sentence(sentence);
    let body = strip_fillers(strip_terminal(sentence));
    let (body, nice_to_have) = match WISH_PREFIX_RE.find(body) {
        Some(m) => (&body[m.end()..], m.as_str().trim_end().to_lowercase().ends_with("to have")),
        None => (body, false),
    };
    let (main, benefit) = split_benefit(body);
    let (explicit_role, main) = match AS_ROLE_RE.captures(main) {
        Some(c) => {
            let role = c["role"].trim().to_lowercase();
            // "As a manager I want ..." keeps "I" as the subject of the rest.
            let rest_start = c.name("subj").map_or_else(|| c.get(0).expect("match").end(), |m| m.start());
            (Some(role), main[rest_start..].trim_start())
        }
        None => (None, main),
    };
    let (named_role, goal) = if nice_to_have { (None, Goal::Thing(main.to_string())) } else { parse_goal(main) };
    let third_person = named_role.is_some();
    let role = explicit_role.or(named_role).unwrap_or_else(|| "user".to_string());
    let benefit = benefit.map(|b| {
        let b = strip_terminal(&b).to_string();
        if third_person {
            first_person(&b)
        } else {
            b
        }
    });
    Requirement { priority: priority_of(&text), quality: quality_of(&text), text, role, goal, benefit }
}

/// Requirement sentences of several texts, in order, without duplicates, skipping sentences for
/// which `skip` answers true (for example the request to generate a document).
pub fn collect_requirements<'a>(
    texts: impl IntoIterator<Item = &'a str>,
    skip: impl Fn(&str) -> bool,
) -> Vec<Requirement> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for text in texts {
        for sentence in split_sentences(text) {
            if skip(&sentence) || !is_requirement_sentence(&sentence) {
                continue;
            }
            if !seen.insert(words(&sentence).join(" ")) {
                continue;
            }
            out.push(parse_requirement(&sentence));
        }
    }
    out
}

static BENEFIT_HINTS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    vec![
        (re(r"(?i)\b(?:export|download|csv|excel|pdf)"), "I can use the data in other tools"),
        (re(r"(?i)\b(?:notif|remind|alert|email|sms|push)"), "I stay informed without checking manually"),
        (re(r"(?i)\b(?:search|filter|find|sort|look\s+up)"), "I can quickly find what I need"),
        (
            re(
                r"(?i)\b(?:log\s*in|sign\s*in|sign\s*up|register|password|account|profile|permission|secur|encrypt|hash|privacy|private)",
            ),
            "my account and data stay safe",
        ),
        (
            re(r"(?i)\b(?:track|monitor|status|progress|dashboard|report|analytics|chart|history)"),
            "I always know where things stand",
        ),
        (re(r"(?i)\b(?:pay|checkout|purchase|order|book|reserv|subscribe)"), "I can complete it without friction"),
        (re(r"(?i)\b(?:share|collaborat|comment|invite|team|assign|chat|message)"), "I can work together with others"),
        (re(r"(?i)\b(?:approve|review|sign\s+off|audit)"), "decisions are made and recorded consistently"),
        (re(r"(?i)\b(?:schedul|calendar|appointment|slot|availability)"), "I can plan my time"),
        (re(r"(?i)\b(?:fast|quick|speed|performance|load|slow)"), "I don't waste time waiting"),
        (re(r"(?i)\b(?:mobile|offline|phone|tablet|anywhere)"), "I can use it wherever I am"),
        (re(r"(?i)\b(?:dark\s+mode|theme|colou?r|font|layout|accessib)"), "the product is comfortable for me to use"),
        (
            re(r"(?i)\b(?:edit|update|delete|remove|manage|create|add|upload|import)"),
            "my information stays accurate and up to date",
        ),
    ]
});

/// The benefit to show in a user story: the one stated, or one derived from the wording.
pub fn benefit_of(req: &Requirement) -> String {
    if let Some(b) = &req.benefit {
        return b.clone();
    }
    BENEFIT_HINTS.iter().find(|(r, _)| r.is_match(&req.text)).map_or("I can get my work done", |(_, b)| b).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_requirement_sentences() {
        assert!(is_requirement_sentence("Customers should be able to track their orders."));
        assert!(is_requirement_sentence("We need a dashboard for sales"));
        assert!(!is_requirement_sentence("Should we use Postgres?"));
        assert!(!is_requirement_sentence("I want you to write this"));
        assert!(!is_requirement_sentence("That's what I need."));
        assert!(!is_requirement_sentence("The weather is nice today."));
    }

    #[test]
    fn parses_roles_goals_and_benefits() {
        let r =
            parse_requirement("Customers should be able to track their orders so that they know when to expect them.");
        assert_eq!(r.role, "customer");
        assert_eq!(r.goal, Goal::Action("track my orders".into()));
        assert_eq!(r.benefit.as_deref(), Some("I know when to expect them"));
        assert_eq!(r.priority, Priority::Should);

        let r = parse_requirement("As a manager, I want to approve expenses.");
        assert_eq!(r.role, "manager");
        assert_eq!(r.goal, Goal::Action("approve expenses".into()));

        let r = parse_requirement("The app must allow store managers to export reports.");
        assert_eq!(r.role, "store manager");
        assert_eq!(r.goal, Goal::Action("export reports".into()));
        assert_eq!(r.priority, Priority::Must);

        let r = parse_requirement("The system must send email reminders.");
        assert_eq!(r.role, "user");
        assert!(matches!(r.goal, Goal::Behaviour { ref actor, .. } if actor == "the system"));

        let r = parse_requirement("We would like a dark mode.");
        assert_eq!(r.goal, Goal::Thing("a dark mode".into()));
        assert_eq!(r.priority, Priority::Could);

        let r = parse_requirement("It would be nice if employees could see the status of their claims.");
        assert_eq!(r.role, "employee");
        assert_eq!(r.goal, Goal::Action("see the status of my claims".into()));
        assert_eq!(r.priority, Priority::Could);

        let r = parse_requirement("It would be nice to have a weekly digest.");
        assert_eq!(r.goal, Goal::Thing("a weekly digest".into()));

        let r = parse_requirement("Pages must load in under 2 seconds.");
        assert_eq!(r.quality, Some(Quality::Performance));
    }
}
