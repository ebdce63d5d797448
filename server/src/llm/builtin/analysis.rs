//! Plain-text analysis of a conversation: sentences, requirement statements, roles, goals,
//! priorities, the product being discussed and meeting facts (attendees, decisions, actions).
//!
//! Everything here is rule based and deterministic: the same text always gives the same result.

use std::sync::LazyLock;

use regex::Regex;

/// Compiles a regex known to be valid at compile time.
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex is valid")
}

// ---------------------------------------------------------------------------------------------
// Small text helpers
// ---------------------------------------------------------------------------------------------

/// Replaces typographic quotes with ASCII ones so that patterns only deal with `'` and `"`.
pub(crate) fn normalize_quotes(text: &str) -> String {
    text.replace(['\u{2019}', '\u{2018}'], "'").replace(['\u{201C}', '\u{201D}'], "\"")
}

static WORD_RE: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9]+(?:['\-][A-Za-z0-9]+)*"));

/// The words of `text`, lowercased, in order.
pub(crate) fn words(text: &str) -> Vec<String> {
    WORD_RE.find_iter(text).map(|m| m.as_str().to_lowercase()).collect()
}

/// Number of whitespace-separated words.
pub(crate) fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Uppercases the first character.
pub(crate) fn capitalize_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Lowercases the first character unless the first word looks like an acronym or a name
/// written with inner capitals ("API", "iOS", "FitBook").
pub(crate) fn lower_first(text: &str) -> String {
    let first_word = text.split_whitespace().next().unwrap_or("");
    let inner_upper = first_word.chars().skip(1).any(|c| c.is_uppercase());
    if inner_upper || first_word == "I" || first_word.starts_with("I'") {
        return text.to_string();
    }
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The first `n` words of `text`, with an ellipsis when something was cut.
pub(crate) fn first_words(text: &str, n: usize) -> String {
    let all: Vec<&str> = text.split_whitespace().collect();
    if all.len() <= n {
        all.join(" ")
    } else {
        format!("{}…", all[..n].join(" "))
    }
}

/// Removes final sentence punctuation and surrounding whitespace.
pub(crate) fn strip_terminal(text: &str) -> &str {
    text.trim().trim_end_matches(['.', '!', '?', ';', ':', ',']).trim_end()
}

/// Trims `text` and makes sure it ends with sentence punctuation.
pub(crate) fn as_sentence(text: &str) -> String {
    let t = text.trim();
    if t.ends_with(['.', '!', '?']) {
        capitalize_first(t)
    } else {
        format!("{}.", capitalize_first(t))
    }
}

/// Escapes text for a Markdown table cell.
pub(crate) fn table_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

const SMALL_TITLE_WORDS: &[&str] =
    &["a", "an", "the", "and", "or", "for", "of", "to", "in", "on", "with", "that", "at", "by", "from", "which", "as"];

/// Title-cases a phrase, keeping small words lowercase and words with capitals as written.
pub(crate) fn title_case(text: &str) -> String {
    text.split_whitespace()
        .enumerate()
        .map(|(i, w)| {
            let keep = w.chars().any(|c| c.is_uppercase()) || (i > 0 && SMALL_TITLE_WORDS.contains(&w));
            if keep {
                w.to_string()
            } else {
                capitalize_first(w)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// "a" or "an" for the word that follows.
pub(crate) fn article(word: &str) -> &'static str {
    let w = word.to_lowercase();
    let vowel_sound = match w.chars().next() {
        Some('a' | 'e' | 'i' | 'o') => true,
        Some('u') => !(w.starts_with("us") || w.starts_with("uni") || w.starts_with("ut")),
        _ => w.starts_with("hour") || w.starts_with("honest"),
    };
    if vowel_sound {
        "an"
    } else {
        "a"
    }
}

// ---------------------------------------------------------------------------------------------
// Sentences
// ---------------------------------------------------------------------------------------------

static BULLET_RE: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(?:[-*+>•]|\d{1,3}[.)])\s+"));

const ABBREVIATIONS: &[&str] =
    &["e.g", "i.e", "eg", "ie", "etc", "vs", "mr", "mrs", "ms", "dr", "approx", "incl", "no", "st"];

/// Splits text into sentences: every line separately (list markers and heading marks removed),
/// then at `.`, `!` or `?` followed by whitespace, ignoring common abbreviations.
pub fn split_sentences(text: &str) -> Vec<String> {
    let text = normalize_quotes(text);
    let mut out = Vec::new();
    for line in text.lines() {
        let line = BULLET_RE.replace(line, "");
        let line = line.trim().trim_start_matches('#').trim();
        split_line(line, &mut out);
    }
    out
}

fn split_line(line: &str, out: &mut Vec<String>) {
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let (pos, c) = chars[i];
        if !matches!(c, '.' | '!' | '?') {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < chars.len() && matches!(chars[j].1, '.' | '!' | '?' | '"' | '\'' | ')') {
            j += 1;
        }
        let at_end = j == chars.len();
        if at_end || chars[j].1.is_whitespace() {
            let end = if at_end { line.len() } else { chars[j].0 };
            let before = &line[start..pos];
            let last = before.rsplit(|ch: char| ch.is_whitespace()).next().unwrap_or("").to_lowercase();
            let is_abbreviation = c == '.'
                && (ABBREVIATIONS.contains(&last.as_str())
                    || (last.len() == 1 && last.chars().all(|ch| ch.is_alphabetic())));
            if !is_abbreviation {
                push_sentence(&line[start..end], out);
                start = end;
            }
        }
        i = j;
    }
    push_sentence(&line[start..], out);
}

fn push_sentence(s: &str, out: &mut Vec<String>) {
    let s = s.trim();
    if s.chars().any(|c| c.is_alphanumeric()) {
        out.push(s.to_string());
    }
}

static LABEL_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?P<label>[A-Za-z][\w'\-]*(?:\s+[A-Za-z][\w'\-]*){0,2})\s*:\s+(?P<rest>.+)$"));

/// Splits a leading "Label: " (a speaker name or a heading word) from a sentence.
pub(crate) fn split_label(sentence: &str) -> (Option<&str>, &str) {
    match LABEL_RE.captures(sentence) {
        Some(c) => (Some(c.name("label").map_or("", |m| m.as_str())), c.name("rest").map_or(sentence, |m| m.as_str())),
        None => (None, sentence),
    }
}

const FILLER_STARTS: &[&str] = &[
    "and",
    "also",
    "plus",
    "but",
    "so",
    "then",
    "ok",
    "okay",
    "oh",
    "well",
    "finally",
    "additionally",
    "furthermore",
    "moreover",
    "basically",
    "anyway",
    "lastly",
    "first",
    "second",
    "third",
    "next",
];

/// Removes a leading speaker name or note label ("Alice: ...", "Note: ...") from a sentence.
pub(crate) fn strip_speaker(sentence: &str) -> &str {
    match split_label(sentence) {
        (Some(label), rest) if looks_like_person(label) || is_known_label(&label.to_lowercase()) => rest,
        _ => sentence,
    }
}

fn is_known_label(label: &str) -> bool {
    [ATTENDEE_LABELS, DECISION_LABELS, ACTION_LABELS, NOTE_LABELS].iter().any(|list| list.contains(&label))
}

/// Removes leading connective words ("Also,", "And then", "OK so") from a clause.
pub(crate) fn strip_fillers(text: &str) -> &str {
    let mut rest = text.trim_start();
    loop {
        let word_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '\'')).unwrap_or(rest.len());
        let word = rest[..word_end].to_lowercase();
        if word_end > 0 && word_end < rest.len() && FILLER_STARTS.contains(&word.as_str()) {
            rest = rest[word_end..].trim_start_matches([',', ' ', '-', ':']);
        } else {
            return rest;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Requirements
// ---------------------------------------------------------------------------------------------

/// MoSCoW priority of a requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Priority {
    Must,
    Should,
    Could,
    Wont,
}

impl Priority {
    /// Display label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Priority::Must => "Must",
            Priority::Should => "Should",
            Priority::Could => "Could",
            Priority::Wont => "Won't",
        }
    }
}

/// Category of a non-functional (quality) requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Quality {
    Performance,
    Security,
    Privacy,
    Availability,
    Reliability,
    Scalability,
    Accessibility,
    Usability,
    Compliance,
}

impl Quality {
    /// Display label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Quality::Performance => "Performance",
            Quality::Security => "Security",
            Quality::Privacy => "Privacy",
            Quality::Availability => "Availability",
            Quality::Reliability => "Reliability",
            Quality::Scalability => "Scalability",
            Quality::Accessibility => "Accessibility",
            Quality::Usability => "Usability",
            Quality::Compliance => "Compliance",
        }
    }
}

/// What a requirement asks for, in a shape that can be rephrased as "I want ...".
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Goal {
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

/// One requirement sentence and what could be understood of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Requirement {
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

static CUE_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:wants?|wanted|needs?|needed|must|should|shall|requires?|required|requirement|would\s+like|\w+'d\s+like|has\s+to|have\s+to|allows?|allowing|able\s+to|lets|let\s+(?:me|us|them|users|customers|people|admins|managers|staff|everyone|anyone)|enables?|expects?\s+to|expected\s+to|ought\s+to|nice\s+to\s+have|it\s+(?:would|'d)\s+be\s+(?:nice|great|good|helpful|useful)|could)\b",
    )
});

static ASKS_ASSISTANT_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:\b(?:want|need|would\s+like|'d\s+like|ask)\s+you\b|\bneed\s+(?:some\s+|your\s+)?help\b|^\s*(?:can|could|would|will)\s+you\b|^\s*(?:how|why|what|who|which)\b|^\s*(?:thanks|thank\s+you)\b)",
    )
});

/// Whether a sentence states a requirement: it contains a cue such as want / need / must /
/// should / require / would like / has to / allow / able to, says something after it, and is
/// neither a question nor a request addressed to the assistant.
pub(crate) fn is_requirement_sentence(sentence: &str) -> bool {
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

const DETERMINERS: &[&str] = &[
    "the", "a", "an", "our", "all", "every", "each", "any", "some", "my", "their", "its", "your", "his", "her",
    "other", "only",
];

/// Singular form of a (role) noun.
pub(crate) fn singular(word: &str) -> String {
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
pub(crate) fn role_of(phrase: &str) -> Option<String> {
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
pub(crate) fn first_person(text: &str) -> String {
    PRONOUN_RE
        .replace_all(text, |c: &regex::Captures| {
            let found = c[0].to_lowercase();
            let found = found.split_whitespace().collect::<Vec<_>>().join(" ");
            PRONOUNS
                .iter()
                .find(|(from, _)| *from == found)
                .map_or_else(|| c[0].to_string(), |(_, to)| (*to).to_string())
        })
        .into_owned()
}

static BENEFIT_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)(?:,\s*|\s+)\b(?P<k>so\s+that|in\s+order\s+to|in\s+order\s+that|so)\s+(?P<b>\S.*)$"));

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

/// Splits "... so that X" / "... in order to X" off a clause; the benefit comes back in the
/// form "X" / "I can X".
fn split_benefit(clause: &str) -> (&str, Option<String>) {
    let Some(c) = BENEFIT_RE.captures(clause) else {
        return (clause, None);
    };
    let whole = c.get(0).expect("match");
    let kind = c["k"].to_lowercase();
    let body = c["b"].trim().to_string();
    let first = words(&body).into_iter().next().unwrap_or_default();
    let benefit = if kind.starts_with("in order to") {
        format!("I can {body}")
    } else if kind == "so" && !SO_FOLLOWERS.contains(&first.as_str()) {
        return (clause, None);
    } else {
        body
    };
    (clause[..whole.start()].trim_end(), Some(benefit))
}

static AS_ROLE_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^\s*as\s+(?:an?|the)\s+(?P<role>[\w\- ]{1,40}?)\s*(?:,\s*|\s+(?P<subj>i|we)\b)"));

static ENABLER_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:allows?|allowing|lets?|letting|enables?|enabling|helps?|permits?)\s+(?P<rest>.+)$"));

static PASSIVE_NEED_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?P<x>.+?)\s+(?:is|are)\s+(?:also\s+|really\s+|absolutely\s+)?(?:required|needed|necessary|mandatory|essential|a\s+must)\b[,\s]*(?P<y>.*)$",
    )
});

static THERE_BE_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^there\s+(?:must|should|shall|will|needs?\s+to|has\s+to|have\s+to|ought\s+to)\s+(?:also\s+)?be\s+(?P<x>.+)$",
    )
});

static MAIN_CUE_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?P<subj>.*?)\b(?P<cue>must|should|shall|will|can|could|may|might|has\s+to|have\s+to|needs?\s+to|wants?\s+to|would\s+like\s+to|'d\s+like\s+to|would\s+like|'d\s+like|wants?|needs?|requires?|expects?\s+to|(?:is|are)\s+able\s+to|ought\s+to)\b\s*(?P<pred>.*)$",
    )
});

static WISH_PREFIX_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:it\s+(?:would|'d|will)\s+be\s+(?:nice|great|good|helpful|useful|cool|ideal)\s+(?:if|to\s+have|that)|ideally|optionally|if\s+possible|preferably|maybe|perhaps)[,\s]+",
    )
});

static ADVERBS_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:(?:also|always|really|definitely|ideally|probably|still|easily|absolutely|just|somehow|eventually|quickly|then|not\s+only)\s+)+",
    )
});

static TRAILING_ADVERBS_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)(?:\s+(?:also|really|definitely|ideally|probably|still|all|just|then))+$"));

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
fn parse_goal(clause: &str) -> (Option<String>, Goal) {
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
    let cue = c["cue"].split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let mut predicate = ADVERBS_RE.replace(c["pred"].trim(), "").into_owned();
    if let Some(rest) = strip_prefix_ci(&predicate, "be able to ") {
        predicate = rest.to_string();
    }
    // "When an order ships, customers ..." -> the lead clause is kept at the end of the goal.
    let mut lead = String::new();
    if let Some(pos) = subject.rfind(',') {
        let head = subject[..pos].trim().to_string();
        let first = words(&head).into_iter().next().unwrap_or_default();
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

fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

static WONT_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:(?:we|i)\s+(?:won't|will\s+not|don't\s+need|do\s+not\s+need|don't\s+want|do\s+not\s+want)|out\s+of\s+scope|not\s+in\s+scope|no\s+need\s+(?:for|to)|not\s+needed|not\s+required|later\s+phase|phase\s+2|future\s+release|not\s+(?:for|in)\s+(?:now|v1|the\s+first))\b",
    )
});
static MUST_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:must|shall|has\s+to|have\s+to|required|requires?|mandatory|essential|critical|needs?\s+to|needs?|cannot|can't)\b",
    )
});
static COULD_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:could|would\s+like|'d\s+like|nice\s+to\s+have|ideally|optional(?:ly)?|if\s+possible|maybe|perhaps|it\s+(?:would|'d)\s+be\s+(?:nice|great|good|helpful|useful))\b",
    )
});

/// MoSCoW priority from the wording of a sentence.
pub(crate) fn priority_of(sentence: &str) -> Priority {
    if WONT_RE.is_match(sentence) {
        Priority::Wont
    } else if MUST_RE.is_match(sentence) {
        Priority::Must
    } else if COULD_RE.is_match(sentence) {
        Priority::Could
    } else {
        Priority::Should
    }
}

static QUALITY_RES: LazyLock<Vec<(Quality, Regex)>> = LazyLock::new(|| {
    vec![
        (
            Quality::Performance,
            re(
                r"(?i)\b(?:fast|faster|quick(?:ly)?|speed|performance|performant|latency|slow|response\s+times?|loads?\s+(?:in|within|under)|(?:under|within|less\s+than)\s+\d+(?:\.\d+)?\s*(?:ms|milliseconds?|seconds?|s)\b)",
            ),
        ),
        (
            Quality::Security,
            re(
                r"(?i)\b(?:secure|securely|security|encrypt\w*|hash(?:ed|ing)?|two-factor|2fa|mfa|vulnerab\w*|penetration|owasp|audit\s+log|access\s+control|brute[\s-]force)\b",
            ),
        ),
        (
            Quality::Privacy,
            re(r"(?i)\b(?:privacy|private|gdpr|ccpa|personal\s+data|pii|anonymi[sz]\w*|consent|data\s+protection)\b"),
        ),
        (
            Quality::Compliance,
            re(r"(?i)\b(?:complian\w*|regulat\w*|hipaa|sox|pci(?:-dss)?|iso\s*27001|legal(?:ly)?)\b"),
        ),
        (
            Quality::Availability,
            re(
                r"(?i)(?:\buptime\b|24/7|\b99(?:\.\d+)?%|\bdowntime\b|\bavailab(?:le|ility)\s+(?:at\s+all\s+times|around\s+the\s+clock|24)|\balways\s+(?:available|online|up)\b|\bhigh(?:ly)?\s+availab)",
            ),
        ),
        (
            Quality::Reliability,
            re(
                r"(?i)\b(?:reliab\w*|backups?|back\s+up|disaster\s+recovery|fault[\s-]toleran\w*|no\s+data\s+loss|lose\s+data|crash\w*)\b",
            ),
        ),
        (
            Quality::Scalability,
            re(
                r"(?i)(?:\bscal(?:e|able|ability|ing)\b|\bconcurrent\b|\bsimultaneous\b|\b(?:thousands|millions|hundreds)\s+of\s+(?:users|requests|customers|orders)|\b\d[\d,]*\s+(?:concurrent\s+|simultaneous\s+|active\s+)?users\b)",
            ),
        ),
        (
            Quality::Accessibility,
            re(r"(?i)\b(?:accessib\w*|wcag|screen\s+readers?|keyboard\s+navigation|colou?r[\s-]?blind\w*|a11y)\b"),
        ),
        (
            Quality::Usability,
            re(
                r"(?i)\b(?:easy\s+to\s+use|intuitive|user-friendly|usability|simple\s+to\s+use|minimal\s+training|mobile-friendly|responsive\s+design|works\s+on\s+mobile)\b",
            ),
        ),
    ]
});

/// The non-functional category of a sentence, if it is about a quality rather than a feature.
pub(crate) fn quality_of(sentence: &str) -> Option<Quality> {
    QUALITY_RES.iter().find(|(_, r)| r.is_match(sentence)).map(|(q, _)| *q)
}

/// Parses one requirement sentence.
pub(crate) fn parse_requirement(sentence: &str) -> Requirement {
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
pub(crate) fn collect_requirements<'a>(
    texts: impl IntoIterator<Item = &'a str>,
    skip: impl Fn(&str) -> bool,
) -> Vec<Requirement> {
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
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
pub(crate) fn benefit_of(req: &Requirement) -> String {
    if let Some(b) = &req.benefit {
        return b.clone();
    }
    BENEFIT_HINTS.iter().find(|(r, _)| r.is_match(&req.text)).map_or("I can get my work done", |(_, b)| b).to_string()
}

// ---------------------------------------------------------------------------------------------
// Subject (product name)
// ---------------------------------------------------------------------------------------------

static CALLED_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"\b(?:[Cc]alled|[Nn]amed|[Cc]ode-?named)\s+(?:"(?P<q>[^"]{2,40})"|'(?P<s>[^']{2,40})'|(?P<n>[A-Z0-9][\w\-]*(?:\s+[A-Z0-9][\w\-]*){0,3}))"#,
    )
});

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
pub(crate) fn derive_subject<'a>(texts: impl IntoIterator<Item = &'a str> + Clone) -> Option<String> {
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

// ---------------------------------------------------------------------------------------------
// Meetings
// ---------------------------------------------------------------------------------------------

/// An action item: who (if known) and what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ActionItem {
    pub owner: Option<String>,
    pub task: String,
}

/// What a conversation says about a meeting.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Meeting {
    pub attendees: Vec<String>,
    pub points: Vec<String>,
    pub decisions: Vec<String>,
    pub actions: Vec<ActionItem>,
}

const NOT_NAMES: &[&str] = &[
    "i",
    "we",
    "the",
    "they",
    "it",
    "this",
    "that",
    "these",
    "those",
    "there",
    "he",
    "she",
    "you",
    "our",
    "my",
    "and",
    "but",
    "so",
    "also",
    "then",
    "everyone",
    "someone",
    "nobody",
    "management",
    "maybe",
    "please",
    "what",
    "when",
    "where",
    "why",
    "how",
    "who",
    "if",
    "finally",
    "next",
    "now",
    "today",
    "yesterday",
    "tomorrow",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "a",
    "an",
    "all",
    "each",
    "some",
    "any",
    "no",
    "yes",
    "ok",
    "okay",
    "system",
    "app",
    "it's",
    "let's",
    "one",
    "both",
    "in",
    "on",
    "for",
    "with",
    "after",
    "before",
];

const ATTENDEE_LABELS: &[&str] = &[
    "attendees",
    "attendee",
    "participants",
    "participant",
    "present",
    "in attendance",
    "attending",
    "people",
    "invitees",
];
const DECISION_LABELS: &[&str] = &["decision", "decisions", "agreed", "resolution", "resolved", "outcome"];
const ACTION_LABELS: &[&str] = &[
    "action",
    "actions",
    "action item",
    "action items",
    "todo",
    "to do",
    "to-do",
    "next step",
    "next steps",
    "follow up",
    "follow-up",
    "task",
    "tasks",
];
const NOTE_LABELS: &[&str] = &[
    "note",
    "notes",
    "agenda",
    "topic",
    "summary",
    "context",
    "goal",
    "goals",
    "background",
    "update",
    "question",
    "fyi",
    "ps",
    "requirement",
    "requirements",
    "idea",
    "problem",
    "issue",
    "risk",
    "important",
    "feedback",
    "date",
    "time",
    "location",
    "subject",
    "re",
];

fn looks_like_name(word: &str) -> bool {
    let lower = word.to_lowercase();
    word.chars().next().is_some_and(char::is_uppercase)
        && word.chars().skip(1).all(|c| c.is_lowercase() || c == '-' || c == '\'')
        && word.len() > 1
        && !NOT_NAMES.contains(&lower.as_str())
        && role_of(&lower).is_none()
}

fn looks_like_person(label: &str) -> bool {
    let parts: Vec<&str> = label.split_whitespace().collect();
    !parts.is_empty() && parts.len() <= 2 && parts.iter().all(|w| looks_like_name(w))
}

static DECISION_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:decided|decision|agreed|agree\s+on|(?:we|we'll|we\s+will)\s+go\s+with|going\s+with|chose|chosen|settled\s+on|approved|signed\s+off)\b",
    )
});
static NAMED_ACTION_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?P<who>[A-Z][a-z'\-]+(?:\s+[A-Z][a-z'\-]+)?)\s+(?P<verb>will|'ll|is\s+going\s+to|is\s+to|to|should|needs\s+to|has\s+to|must|agreed\s+to|volunteered\s+to|offered\s+to)\s+(?P<task>.+)$",
    )
});
static SELF_ACTION_RE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^(?:i\s+will|i'll|i\s+am\s+going\s+to|i'm\s+going\s+to)\s+(?P<task>.+)$"));
static ACTION_HINT_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:action\s+items?|todo|to-do|follow\s+up|follow-up|by\s+(?:monday|tuesday|wednesday|thursday|friday|tomorrow|next\s+week|end\s+of\s+(?:day|week|month)|eod|eow))\b",
    )
});
static NAME_VERB_RE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(?P<n>[A-Z][a-z'\-]+)\s+(?:said|says|mentioned|suggested|asked|agreed|proposed|noted|raised|explained|presented|reported|confirmed|decided|thinks|pointed\s+out|joined|attended|shared|promised|volunteered|offered)\b",
    )
});
static LIST_SPLIT_RE: LazyLock<Regex> = LazyLock::new(|| re(r"\s*(?:,|;|&|\band\b)\s*"));

fn push_unique(list: &mut Vec<String>, item: &str) {
    let item = item.trim();
    if !item.is_empty() && !list.iter().any(|x| x.eq_ignore_ascii_case(item)) {
        list.push(item.to_string());
    }
}

/// Names known to be people: attendee lists, speaker labels, "<Name> said ...".
fn known_names(sentences: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    for sentence in sentences {
        let (label, rest) = split_label(sentence);
        match label.map(str::to_lowercase) {
            Some(l) if ATTENDEE_LABELS.contains(&l.as_str()) => {
                for name in LIST_SPLIT_RE.split(strip_terminal(rest)) {
                    push_unique(&mut names, name);
                }
            }
            Some(_) if label.is_some_and(looks_like_person) => {
                push_unique(&mut names, label.unwrap_or_default());
            }
            _ => {}
        }
        for c in NAME_VERB_RE.captures_iter(sentence) {
            if looks_like_name(&c["n"]) {
                push_unique(&mut names, &c["n"]);
            }
        }
    }
    names
}

/// Whether "<who> <verb> ..." assigns a task to a person.
fn is_owner(who: &str, verb: &str, known: &[String]) -> bool {
    if known.iter().any(|k| k.eq_ignore_ascii_case(who)) {
        return true;
    }
    let verb = verb.split_whitespace().collect::<Vec<_>>().join(" ");
    let firm = matches!(
        verb.as_str(),
        "will" | "'ll" | "is going to" | "is to" | "to" | "agreed to" | "volunteered to" | "offered to"
    );
    firm && looks_like_person(who) && !who.ends_with('s')
}

/// Extracts attendees, discussion points, decisions and action items from sentences.
pub(crate) fn analyse_meeting(sentences: &[String]) -> Meeting {
    let known = known_names(sentences);
    let mut m = Meeting::default();
    for sentence in sentences {
        let (label, rest) = split_label(sentence);
        let label_lower = label.map(str::to_lowercase);
        let mut speaker = None;
        match label_lower.as_deref() {
            Some(l) if ATTENDEE_LABELS.contains(&l) => {
                for name in LIST_SPLIT_RE.split(strip_terminal(rest)) {
                    push_unique(&mut m.attendees, name);
                }
                continue;
            }
            Some(l) if DECISION_LABELS.contains(&l) => {
                push_unique(&mut m.decisions, &as_sentence(rest));
                continue;
            }
            Some(l) if ACTION_LABELS.contains(&l) => {
                m.actions.push(action_from(rest, None, &known));
                continue;
            }
            Some(l) if NOTE_LABELS.contains(&l) => {}
            Some(_) if label.is_some_and(looks_like_person) => {
                let name = label.unwrap_or_default();
                push_unique(&mut m.attendees, name);
                speaker = Some(name.to_string());
            }
            _ => {}
        }
        let labelled_note = label_lower.is_some_and(|l| NOTE_LABELS.contains(&l.as_str()));
        let text = if speaker.is_some() || labelled_note { rest } else { sentence.as_str() };
        for c in NAME_VERB_RE.captures_iter(text) {
            if looks_like_name(&c["n"]) {
                push_unique(&mut m.attendees, &c["n"]);
            }
        }
        let body = strip_fillers(text);
        if let Some(c) = NAMED_ACTION_RE.captures(body) {
            if is_owner(&c["who"], &c["verb"], &known) {
                push_unique(&mut m.attendees, &c["who"]);
                m.actions.push(ActionItem {
                    owner: Some(c["who"].to_string()),
                    task: strip_terminal(&c["task"]).to_string(),
                });
                continue;
            }
        }
        if let Some(c) = SELF_ACTION_RE.captures(body) {
            m.actions.push(ActionItem { owner: speaker.clone(), task: strip_terminal(&c["task"]).to_string() });
            continue;
        }
        if DECISION_RE.is_match(body) {
            push_unique(&mut m.decisions, &attributed(body, speaker.as_deref()));
            continue;
        }
        if ACTION_HINT_RE.is_match(body) {
            m.actions.push(action_from(body, speaker.as_deref(), &known));
            continue;
        }
        if word_count(body) >= 3 {
            push_unique(&mut m.points, &attributed(body, speaker.as_deref()));
        }
    }
    m
}

fn attributed(text: &str, speaker: Option<&str>) -> String {
    match speaker {
        Some(name) => format!("**{name}:** {}", as_sentence(text)),
        None => as_sentence(text),
    }
}

fn action_from(text: &str, speaker: Option<&str>, known: &[String]) -> ActionItem {
    let text = strip_terminal(strip_fillers(text));
    if let Some(c) = NAMED_ACTION_RE.captures(text) {
        if is_owner(&c["who"], &c["verb"], known) || looks_like_person(&c["who"]) {
            return ActionItem { owner: Some(c["who"].to_string()), task: strip_terminal(&c["task"]).to_string() };
        }
    }
    ActionItem { owner: speaker.map(str::to_string), task: text.to_string() }
}

// ---------------------------------------------------------------------------------------------
// Keywords
// ---------------------------------------------------------------------------------------------

const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "don't",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "i",
    "i'd",
    "i'm",
    "if",
    "in",
    "into",
    "is",
    "it",
    "it's",
    "its",
    "just",
    "me",
    "more",
    "most",
    "my",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "please",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "what's",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "tell",
    "say",
    "says",
    "said",
    "know",
    "let",
    "us",
    "thanks",
    "thank",
    "hi",
    "hello",
    "hey",
    "there's",
    "that's",
    "any",
    "anything",
    "something",
    "give",
    "show",
    "find",
    "explain",
    "summarize",
    "summarise",
    "describe",
    "according",
    "mention",
    "mentioned",
    "mentions",
    "want",
    "need",
    "like",
    "get",
    "got",
    "really",
    "ok",
    "okay",
    "can't",
    "much",
    "many",
];

/// Content words of `text` in order of first appearance, as written (stopwords and
/// `extra_stop` removed, duplicates compared case-insensitively).
pub(crate) fn keywords(text: &str, extra_stop: &[&str]) -> Vec<String> {
    let text = normalize_quotes(text);
    let mut out: Vec<String> = Vec::new();
    for m in WORD_RE.find_iter(&text) {
        let word = m.as_str();
        let lower = word.to_lowercase();
        if lower.len() < 2 && !lower.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if STOPWORDS.contains(&lower.as_str()) || extra_stop.contains(&lower.as_str()) {
            continue;
        }
        if !out.iter().any(|w| w.eq_ignore_ascii_case(word)) {
            out.push(word.to_string());
        }
    }
    out
}

/// Lightweight stem used to compare words ("orders" ~ "order", "shipping" ~ "ship").
pub(crate) fn stem(word: &str) -> String {
    let w = word.to_lowercase();
    for suffix in ["ingly", "ing", "edly", "ed", "ies", "es", "s", "ly"] {
        if w.len() > suffix.len() + 3 && w.ends_with(suffix) {
            return w[..w.len() - suffix.len()].to_string();
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_sentences_lines_and_bullets() {
        let s = split_sentences("Hello there. Users must log in!\n- Admins need reports, e.g. sales.\n2) Done?");
        assert_eq!(s, vec!["Hello there.", "Users must log in!", "Admins need reports, e.g. sales.", "Done?"]);
    }

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

    #[test]
    fn extracts_meeting_facts() {
        let sentences: Vec<String> = split_sentences(
            "Attendees: Alice, Bob and Carol\nAlice: we need to ship the beta in May.\nWe decided to use Stripe for payments.\nBob will prepare the mockups by Friday.",
        );
        let m = analyse_meeting(&sentences);
        assert_eq!(m.attendees, vec!["Alice", "Bob", "Carol"]);
        assert_eq!(m.decisions, vec!["We decided to use Stripe for payments."]);
        assert_eq!(m.actions[0].owner.as_deref(), Some("Bob"));
        assert_eq!(m.points[0], "**Alice:** We need to ship the beta in May.");
    }
}
