//! The main clause of a requirement: who it names, what it asks for (a [`Goal`]) and the
//! benefit given after "so that" / "in order to".

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use super::roles::{first_person, role_of, DETERMINERS};
use super::text::{first_word, lower_first, squash_spaces, strip_prefix_ci};

/// What a requirement asks for, in a shape that can be rephrased as "I want ...".
#[derive(Debug, Clone, PartialEq)]
pub enum Goal {
    /// Something the role does: "track my orders" ("I want to track my orders").
    Action(String),
    /// Something the role gets: "a dashboard of sales" ("I want a dashboard of sales").
    Thing(String),
    /// Something another party or the product does.
    Behaviour {
        /// Who or what acts: "the system", "passwords".
        actor: String,
        /// Infinitive clause: "send reminders" ("I want the system to send reminders").
        infinitive: String,
        /// Finite clause: "must send reminders" ("Then the system must send reminders").
        finite: String,
    },
    /// Nothing could be parsed: the sentence is used as written.
    Statement,
}

static BENEFIT_RE: Lazy<Regex> =
    lazy_regex!(r"(?i)(?:,\s*|\s+)\b(?P<k>so\s+that|in\s+order\s+to|in\s+order\s+that|so)\s+(?P<b>\S.*)$");

/// Words after a bare "so" that make it mean "so that" rather than "very".
const SO_FOLLOWERS: &[&str] = &[
    "i",
    "we",
    "they",
    "he",
    "she",
    "it",
    "the",
    "users",
    "user",
    "customers",
    "people",
    "everyone",
    "managers",
    "admins",
    "our",
    "my",
    "their",
    "nobody",
    "no",
    "that",
    "you",
];

/// Splits "... so that X" / "... in order to X" off a clause; the benefit comes back in the form "X" / "I can X".
pub(super) fn split_benefit(clause: &str) -> (&str, Option<String>) {
    let Some(c) = BENEFIT_RE.captures(clause) else {
        return (clause, None);
    };
    let whole = c.get(0).expect("match");
    let kind = c["k"].to_lowercase();
    let body = c["b"].trim().to_string();
    let first = first_word(&body);
    let benefit = if kind.starts_with("in order to") {
        format!("I can {body}")
    } else if kind == "so" && !SO_FOLLOWERS.contains(&first.as_str()) {
        return (clause, None);
    } else {
        body
    };
    (clause[..whole.start()].trim_end(), Some(benefit))
}

static ENABLER_RE: Lazy<Regex> =
    lazy_regex!(r"(?i)\b(?:allows?|allowing|lets?|letting|enables?|enabling|helps?|permits?)\s+(?P<rest>.+)$");

static PASSIVE_NEED_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)^(?P<x>.+?)\s+(?:is|are)\s+(?:also\s+|really\s+|absolutely\s+)?(?:required|needed|necessary|mandatory|essential|a\s+must)\b[,\s]*(?P<y>.*)$"
);

static THERE_BE_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)^there\s+(?:must|should|shall|will|needs?\s+to|has\s+to|have\s+to|ought\s+to)\s+(?:also\s+)?be\s+(?P<x>.+)$"
);

static MAIN_CUE_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)^(?P<subj>.*?)\b(?P<cue>must|should|shall|will|can|could|may|might|has\s+to|have\s+to|needs?\s+to|wants?\s+to|would\s+like\s+to|'d\s+like\s+to|would\s+like|'d\s+like|wants?|needs?|requires?|expects?\s+to|(?:is|are)\s+able\s+to|ought\s+to)\b\s*(?P<pred>.*)$"
);

static ADVERBS_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)^(?:(?:also|always|really|definitely|ideally|probably|still|easily|absolutely|just|somehow|eventually|quickly|then|not\s+only)\s+)+"
);

static TRAILING_ADVERBS_RE: Lazy<Regex> =
    lazy_regex!(r"(?i)(?:\s+(?:also|really|definitely|ideally|probably|still|all|just|then))+$");

const SUBJECT_STARTERS: &[&str] =
    &["when", "if", "after", "before", "once", "whenever", "during", "while", "for", "on", "in", "at", "until"];

fn goal_from_enabler(clause: &str) -> Option<(String, Goal)> {
    let c = ENABLER_RE.captures(clause)?;
    let rest = c.name("rest")?.as_str();
    let ws: Vec<&str> = rest.split_whitespace().collect();
    let mut i = 0;
    while i < ws.len() && DETERMINERS.contains(&ws[i].to_lowercase().as_str()) {
        i += 1;
    }
    for len in [1usize, 2] {
        if i + len > ws.len() {
            break;
        }
        let phrase = ws[i..i + len].join(" ");
        let Some(role) = role_of(&phrase) else {
            continue;
        };
        let mut j = i + len;
        if ws.get(j).is_some_and(|w| w.eq_ignore_ascii_case("to")) {
            j += 1;
        }
        let action = ws[j..].join(" ");
        if action.is_empty() {
            return None;
        }
        return Some((role, Goal::Action(first_person(&action))));
    }
    None
}

/// Understands the main clause of a requirement: (role named in it, goal).
pub(super) fn parse_goal(clause: &str) -> (Option<String>, Goal) {
    if let Some((role, goal)) = goal_from_enabler(clause) {
        return (Some(role), goal);
    }
    if let Some(c) = THERE_BE_RE.captures(clause) {
        return (None, Goal::Thing(c["x"].trim().to_string()));
    }
    if let Some(c) = PASSIVE_NEED_RE.captures(clause) {
        let thing = format!("{} {}", lower_first(c["x"].trim()), c["y"].trim());
        return (None, Goal::Thing(thing.trim().to_string()));
    }
    let Some(c) = MAIN_CUE_RE.captures(clause) else {
        return (None, Goal::Statement);
    };
    let mut subject = c["subj"].trim().trim_end_matches(',').trim().to_string();
    let cue = squash_spaces(&c["cue"]).to_lowercase();
    let mut predicate = ADVERBS_RE.replace(c["pred"].trim(), "").into_owned();
    if let Some(rest) = strip_prefix_ci(&predicate, "be able to ") {
        predicate = rest.to_string();
    }
    // "When an order ships, customers ..." -> the lead clause is kept at the end of the goal.
    let mut lead = String::new();
    if let Some(pos) = subject.rfind(',') {
        let head = subject[..pos].trim().to_string();
        let first = first_word(&head);
        if SUBJECT_STARTERS.contains(&first.as_str()) {
            lead = lower_first(&head);
        }
        subject = subject[pos + 1..].trim().to_string();
    }
    subject = TRAILING_ADVERBS_RE.replace(&subject, "").trim().to_string();
    if predicate.is_empty() {
        return (None, Goal::Statement);
    }
    let with_lead = |text: String| -> String {
        if lead.is_empty() {
            text
        } else {
            format!("{text} {lead}")
        }
    };
    let object_cue =
        matches!(cue.as_str(), "want" | "wants" | "need" | "needs" | "would like" | "'d like" | "require" | "requires");
    let lowered = subject.to_lowercase();
    let person = matches!(lowered.as_str(), "" | "i" | "we" | "you" | "i really" | "we really");
    let role = if person { None } else { role_of(&subject) };

    if person || role.is_some() {
        let text = with_lead(first_person(&predicate));
        let goal = if object_cue { Goal::Thing(text) } else { Goal::Action(text) };
        return (role, goal);
    }
    if subject.split_whitespace().count() > 6 {
        return (None, Goal::Statement);
    }
    let actor = lower_first(&subject);
    let (infinitive, finite) = if object_cue {
        let base = cue.trim_end_matches('s').to_string();
        (format!("{base} {predicate}"), format!("{cue} {predicate}"))
    } else {
        (predicate.clone(), format!("{cue} {predicate}"))
    };
    (None, Goal::Behaviour { actor, infinitive: with_lead(infinitive), finite: with_lead(finite) })
}
