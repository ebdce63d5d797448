//! Who a requirement is for: role nouns ("store managers" -> "store manager") and rewriting a
//! role's pronouns in its own first person.

use std::sync::LazyLock;

use regex::Regex;

use super::re;
use super::text::{squash_spaces, words};

/// Nouns that name who uses a product.
const ROLES: &[&str] = &[
    "user",
    "customer",
    "client",
    "admin",
    "administrator",
    "manager",
    "employee",
    "staff member",
    "member",
    "visitor",
    "guest",
    "buyer",
    "seller",
    "vendor",
    "owner",
    "agent",
    "student",
    "teacher",
    "patient",
    "doctor",
    "nurse",
    "driver",
    "rider",
    "developer",
    "tester",
    "analyst",
    "reviewer",
    "approver",
    "editor",
    "author",
    "reader",
    "subscriber",
    "player",
    "parent",
    "volunteer",
    "organizer",
    "organiser",
    "host",
    "attendee",
    "participant",
    "operator",
    "technician",
    "supervisor",
    "moderator",
    "shopper",
    "traveler",
    "traveller",
    "tenant",
    "landlord",
    "applicant",
    "recruiter",
    "candidate",
    "partner",
    "supplier",
    "accountant",
    "auditor",
    "stakeholder",
    "team member",
    "person",
    "colleague",
    "coworker",
    "clinician",
    "physician",
    "instructor",
    "learner",
    "coach",
    "trainer",
    "consumer",
    "merchant",
    "courier",
    "dispatcher",
    "librarian",
    "citizen",
    "resident",
    "investor",
    "designer",
    "engineer",
    "marketer",
    "salesperson",
    "lead",
    "executive",
    "director",
    "finance",
    "hr",
    "support",
    "caregiver",
    "pharmacist",
    "homeowner",
    "contractor",
    "freelancer",
    "athlete",
    "fan",
];

/// Words that may precede a role ("our", "all", "the").
pub(super) const DETERMINERS: &[&str] = &[
    "the", "a", "an", "our", "all", "every", "each", "any", "some", "my", "their", "its", "your", "his", "her",
    "other", "only",
];

/// Singular form of a (role) noun.
pub fn singular(word: &str) -> String {
    let w = word.to_lowercase();
    match w.as_str() {
        "people" => "person".into(),
        "staff" => "staff member".into(),
        "team" => "team member".into(),
        "children" => "child".into(),
        "men" => "man".into(),
        "women" => "woman".into(),
        "everyone" | "anyone" | "everybody" | "anybody" | "someone" | "somebody" => "user".into(),
        _ if w.ends_with("ies") && w.len() > 4 => format!("{}y", &w[..w.len() - 3]),
        _ if w.ends_with("ss") || w.ends_with("us") || w.ends_with("is") => w,
        _ if w.ends_with('s') && w.len() > 3 => w[..w.len() - 1].to_string(),
        _ => w,
    }
}

/// The role named by a noun phrase ("our store managers" -> "store manager"), if it names one.
pub fn role_of(phrase: &str) -> Option<String> {
    let ws: Vec<String> = words(phrase).into_iter().skip_while(|w| DETERMINERS.contains(&w.as_str())).collect();
    if ws.is_empty() || ws.len() > 3 {
        return None;
    }
    if ws.len() == 1 && matches!(ws[0].as_str(), "me" | "us" | "i" | "we" | "you") {
        return Some("user".into());
    }
    let last = singular(ws.last()?);
    let head_is_role = ROLES.contains(&last.as_str()) || ROLES.iter().any(|r| r.ends_with(&format!(" {last}")));
    if !head_is_role {
        return None;
    }
    let mut parts: Vec<String> = ws[..ws.len() - 1].to_vec();
    parts.push(last);
    Some(parts.join(" "))
}

static PRONOUNS: &[(&str, &str)] = &[
    ("they are", "I am"),
    ("they're", "I'm"),
    ("they were", "I was"),
    ("they have", "I have"),
    ("they've", "I've"),
    ("they", "I"),
    ("their", "my"),
    ("theirs", "mine"),
    ("themselves", "myself"),
    ("your", "my"),
    ("yours", "mine"),
    ("yourself", "myself"),
];

static PRONOUN_RE: LazyLock<Regex> = LazyLock::new(|| {
    let alternatives: Vec<String> = PRONOUNS.iter().map(|(from, _)| from.replace(' ', r"\s+")).collect();
    re(&format!(r"(?i)\b(?:{})\b", alternatives.join("|")))
});

/// Rewrites third-person (and "your") pronouns in the first person of the role
/// ("track their orders" -> "track my orders").
pub fn first_person(text: &str) -> String {
    PRONOUN_RE
        .replace_all(text, |c: &regex::Captures| {
            let found = squash_spaces(&c[0].to_lowercase());
            PRONOUNS
                .iter()
                .find(|(from, _)| *from == found)
                .map_or_else(|| c[0].to_string(), |(_, to)| (*to).to_string())
        })
        .into_owned()
}
