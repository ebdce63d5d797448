//! How a requirement is classified from its wording: its MoSCoW priority and, for a
//! non-functional requirement, its quality category.

use std::sync::LazyLock;

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use super::re;

/// MoSCoW priority of a requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    Must,
    Should,
    Could,
    Wont,
}

impl Priority {
    /// Display label.
    pub fn label(self) -> &'static str {
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
pub enum Quality {
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
    pub fn label(self) -> &'static str {
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

static WONT_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:(?:we|i)\s+(?:won't|will\s+not|don't\s+need|do\s+not\s+need|don't\s+want|do\s+not\s+want)|out\s+of\s+scope|not\s+in\s+scope|no\s+need\s+(?:for|to)|not\s+needed|not\s+required|later\s+phase|phase\s+2|future\s+release|not\s+(?:for|in)\s+(?:now|v1|the\s+first))\b"
);
static MUST_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:must|shall|has\s+to|have\s+to|required|requires?|mandatory|essential|critical|needs?\s+to|needs?|cannot|can't)\b"
);
static COULD_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:could|would\s+like|'d\s+like|nice\s+to\s+have|ideally|optional(?:ly)?|if\s+possible|maybe|perhaps|it\s+(?:would|'d)\s+be\s+(?:nice|great|good|helpful|useful))\b"
);

/// MoSCoW priority from the wording of a sentence.
pub fn priority_of(sentence: &str) -> Priority {
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
pub fn quality_of(sentence: &str) -> Option<Quality> {
    QUALITY_RES.iter().find(|(_, r)| r.is_match(sentence)).map(|(q, _)| *q)
}
