//! Decides what the built-in assistant answers to a request: text, tool calls, or both.

use std::sync::LazyLock;

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;
use serde_json::{json, Value};

use analysis::requests::{
    asks_about_documents, is_generation_sentence, is_instruction, mentions_document, requested_artifacts, search_query,
    DOCUMENT_WORDS,
};
use analysis::{
    analyse_meeting, capitalize_first, collect_requirements, derive_subject, distinct, first_words, keywords, re,
    split_sentences, stem, strip_terminal, words, Requirement,
};
use wire::ArtifactType;

use super::artifacts::{noun, render, DocContext};
use super::edits::{documents, plan_edit, EditPlan};
use super::ledger::{self, RECORD_REQUIREMENTS};
use crate::types::{ChatRequest, Part, Role};
use analysis::changes::requested_change;
use analysis::quotes::split_quote;

/// Name of the tool that saves a generated document.
pub const SAVE_ARTIFACT: &str = "save_artifact";
/// Name of the tool that searches the conversation's attached documents.
pub const DOCUMENT_SEARCH: &str = "document_search";
/// Name of the tool that makes targeted edits of a document.
pub const EDIT_ARTIFACT: &str = "edit_artifact";

/// Subject used when the conversation names no product.
const DEFAULT_SUBJECT: &str = "Untitled Project";

/// What the assistant will produce for one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// Markdown text streamed first (may be empty).
    pub text: String,
    /// Tool calls (name, arguments) emitted after the text.
    pub tool_calls: Vec<(String, Value)>,
}

impl Plan {
    fn text(text: impl Into<String>) -> Self {
        Self { text: text.into(), tool_calls: Vec::new() }
    }
}

/// Plans the answer to a request. Deterministic: equal requests give equal plans.
pub(crate) fn plan(request: &ChatRequest) -> Plan {
    let latest = user_texts(request).pop().unwrap_or_default();
    if let Some(outcomes) = last_tool_results(request) {
        return second_round(request, &latest, &outcomes);
    }
    // "Update document": targeted edits of the parts the changed requirements affect.
    if has_tool(request, EDIT_ARTIFACT) {
        if let Some(update) = ledger::update_call(&latest, &documents(&request.system)) {
            return match update {
                Ok(arguments) => Plan { text: String::new(), tool_calls: vec![(EDIT_ARTIFACT.to_string(), arguments)] },
                Err(why) => Plan::text(why),
            };
        }
    }
    // What the latest message adds, changes or drops is recorded first, in the same round as the rest.
    let recording = recording(request, &latest);
    let mut plan = first_round(request, &latest, &recording);
    if let Some(call) = recording.call {
        plan.tool_calls.insert(0, (RECORD_REQUIREMENTS.to_string(), call));
    }
    plan
}

/// What the latest message does to the ledger, when the ledger tool is offered.
fn recording(request: &ChatRequest, latest: &str) -> ledger::Recording {
    if !has_tool(request, RECORD_REQUIREMENTS) {
        return ledger::Recording::default();
    }
    ledger::recording(&ledger::ledger(&request.system), latest)
}

/// The keys a new document covers: those the latest message names (a request to cover them), else the ledger's
/// requirements in force and those the latest message adds.
fn covered_keys(request: &ChatRequest, latest: &str) -> Vec<String> {
    let seen = ledger::ledger(&request.system);
    let named = ledger::named_keys(&seen, latest);
    if !named.is_empty() {
        return named;
    }
    let mut keys = seen.in_force();
    keys.extend(recording(request, latest).added);
    keys
}

fn first_round(request: &ChatRequest, latest: &str, recording: &ledger::Recording) -> Plan {
    let latest = latest.to_string();
    // A change to a value a document of the conversation holds: edited in place (the requirements it changes
    // named, as they stand after this message).
    match change_plan(request) {
        Some(EditPlan::Edit { id, find, replace, .. }) => {
            let mut arguments = json!({ "artifact_id": id, "edits": [{ "find": find, "replace": replace }] });
            if !recording.revised.is_empty() {
                arguments["requirements"] = json!(recording.revised);
            }
            return Plan { text: String::new(), tool_calls: vec![(EDIT_ARTIFACT.to_string(), arguments)] };
        }
        Some(EditPlan::Unclear { from, titles, times }) => {
            // The requirement the change revises says where: the parts of each document that cite it.
            let calls = requested_change(&latest)
                .map(|change| ledger::revision_calls(&documents(&request.system), &recording.revised, &change))
                .unwrap_or_default();
            if calls.is_empty() {
                return Plan::text(unclear(&from, &titles, times));
            }
            let tool_calls = calls.into_iter().map(|c| (EDIT_ARTIFACT.to_string(), c)).collect();
            return Plan { text: String::new(), tool_calls };
        }
        None => {}
    }
    let kinds = requested_artifacts(&latest);
    if !kinds.is_empty() {
        let wants_sources = split_sentences(&latest).iter().any(|s| is_generation_sentence(s) && mentions_document(s));
        if wants_sources && has_tool(request, DOCUMENT_SEARCH) && has_tool(request, SAVE_ARTIFACT) {
            return search_call(&latest);
        }
        return generate(request, &kinds, &[], Vec::new(), String::new());
    }
    if asks_about_documents(&latest) {
        if has_tool(request, DOCUMENT_SEARCH) {
            return search_call(&latest);
        }
        return Plan::text(format!(
            "You asked: \"{}\". I can't search attached documents in this conversation, so I \
             can't see that file. Paste the relevant part here and I'll work with it.",
            key_phrase(&latest)
        ));
    }
    Plan::text(chat_answer(request, &latest))
}

fn has_tool(request: &ChatRequest, name: &str) -> bool {
    request.tools.iter().any(|t| t.name == name)
}

/// Texts of all user messages that have any, in order, without the passages they quote.
fn user_texts(request: &ChatRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| without_quotes(&m.text()))
        .filter(|t| !t.trim().is_empty())
        .collect()
}

/// A message's text without the quoted passages before it.
fn without_quotes(text: &str) -> String {
    let mut text = text.to_string();
    loop {
        match split_quote(&text) {
            (Some(_), rest) => text = rest,
            (None, _) => return text,
        }
    }
}

/// The edit the latest message asks for, when it asks to change a value one of the documents shown holds and
/// the edit tool is offered (the passage it quotes, if any, says where).
fn change_plan(request: &ChatRequest) -> Option<EditPlan> {
    if !has_tool(request, EDIT_ARTIFACT) {
        return None;
    }
    let raw = request.messages.iter().rev().find(|m| m.role == Role::User && !m.text().trim().is_empty())?.text();
    let (quote, _) = split_quote(&raw);
    let latest = without_quotes(&raw);
    let change = requested_change(&latest)?;
    plan_edit(&change, &documents(&request.system), quote.as_ref(), &latest)
}

/// Why a change was not made: where the old value is cannot be told.
fn unclear(from: &str, titles: &[String], times: usize) -> String {
    let how = "Select the passage in the document and choose *Ask about this*, or quote more of the line.";
    match (titles, times) {
        ([title], 2..) => {
            format!("'{from}' appears {times} times in {title}, so I can't tell which one to change. {how}")
        }
        ([title], _) => format!(
            "I found '{from}' in {title}, but the text around it repeats, so I can't tell which place to change. {how}"
        ),
        _ => format!(
            "'{from}' appears in {}, so I can't tell which document to change. Name the document, or select the \
             passage and choose *Ask about this*.",
            join_and(titles)
        ),
    }
}

fn search_call(latest: &str) -> Plan {
    Plan {
        text: "Let me search your documents for that.".to_string(),
        tool_calls: vec![(DOCUMENT_SEARCH.to_string(), json!({ "query": search_query(latest), "limit": 3 }))],
    }
}

/// "a", "a and b", "a, b and c".
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The requirements `texts` (the person's messages, the last one latest) state; when the latest names keys of the
/// ledger (a request to cover them), those requirements alone, as the ledger holds them.
fn stated_requirements(request: &ChatRequest, texts: &[String]) -> Vec<Requirement> {
    let seen = ledger::ledger(&request.system);
    let named = ledger::named_keys(&seen, texts.last().map_or("", String::as_str));
    if named.is_empty() {
        return collect_requirements(texts.iter().map(String::as_str), is_instruction);
    }
    seen.entries.iter().filter(|e| named.contains(&e.key)).map(|e| analysis::parse_requirement(&e.text)).collect()
}

fn doc_context(request: &ChatRequest, extra: &[String], sources: Vec<String>) -> DocContext {
    let mut texts = user_texts(request);
    texts.extend(extra.iter().cloned());
    let requirements = stated_requirements(request, &texts);
    let subject = derive_subject(texts.iter().map(String::as_str)).unwrap_or_else(|| DEFAULT_SUBJECT.to_string());
    let sentences: Vec<String> = texts.iter().flat_map(|t| split_sentences(t)).filter(|s| !is_instruction(s)).collect();
    DocContext { subject, requirements, meeting: analyse_meeting(&sentences), sources, keys: keys_by_words(request) }
}

/// The ledger's keys by the words of their requirements: those in force, and those the latest message adds with
/// the keys they will take.
fn keys_by_words(request: &ChatRequest) -> Vec<(String, String)> {
    let seen = ledger::ledger(&request.system);
    let mut keys: Vec<(String, String)> =
        seen.entries.iter().filter(|e| e.in_force).map(|e| (words(&e.text).join(" "), e.key.clone())).collect();
    let latest = user_texts(request).pop().unwrap_or_default();
    let recording = recording(request, &latest);
    keys.extend(recording.added_texts.iter().zip(&recording.added).map(|(t, k)| (words(t).join(" "), k.clone())));
    keys
}

/// Builds the requested documents: `save_artifact` calls when the tool is offered, else inline.
fn generate(
    request: &ChatRequest,
    kinds: &[ArtifactType],
    extra: &[String],
    sources: Vec<String>,
    preface: String,
) -> Plan {
    let ctx = doc_context(request, extra, sources);
    let docs: Vec<_> = kinds.iter().map(|k| (*k, render(*k, &ctx))).collect();
    let nouns: Vec<String> = kinds.iter().map(|k| noun(*k).to_string()).collect();
    let lead = if preface.is_empty() { String::new() } else { format!("{preface} ") };
    if has_tool(request, SAVE_ARTIFACT) {
        let latest = user_texts(request).pop().unwrap_or_default();
        let keys = covered_keys(request, &latest);
        let tool_calls = docs
            .into_iter()
            .map(|(kind, doc)| {
                let mut arguments = json!({
                    "artifact_type": kind.as_str(),
                    "title": doc.title,
                    "content": doc.markdown,
                });
                if !keys.is_empty() {
                    arguments["requirements"] = json!(keys);
                }
                (SAVE_ARTIFACT.to_string(), arguments)
            })
            .collect();
        return Plan { text: format!("{lead}I'll draft {} now.", join_and(&nouns)), tool_calls };
    }
    let body: Vec<String> = docs.into_iter().map(|(_, d)| d.markdown).collect();
    Plan::text(format!(
        "{lead}Here is {} (saving documents isn't available here, so it's inline):\n\n{}",
        join_and(&nouns),
        body.join("\n---\n\n")
    ))
}

// ---------------------------------------------------------------------------------------------
// Chat answers

const GREETINGS: &[&str] =
    &["hi", "hello", "hey", "hiya", "howdy", "greetings", "yo", "morning", "evening", "afternoon"];
const THANKS: &[&str] =
    &["thanks", "thank", "thx", "great", "perfect", "cool", "awesome", "nice", "ok", "okay", "excellent", "brilliant"];

static ASK_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)^\s*(?:(?:please|so|and|now|hey|hi)[,\s]+)*(?:what|how|why|when|where|who|which|whose|tell\s+me|explain|describe|show\s+me|help\s+me|can\s+you|could\s+you|would\s+you|do\s+you|is\s+there|are\s+there)\b"
);

/// The gist of a message to quote back: its first substantial sentence, shortened.
fn key_phrase(text: &str) -> String {
    let sentences = split_sentences(text);
    let chosen = sentences.iter().find(|s| words(s).len() >= 3).or(sentences.first()).map_or("", String::as_str);
    first_words(strip_terminal(chosen), 15)
}

const MAX_LISTED: usize = 8;

fn chat_answer(request: &ChatRequest, latest: &str) -> String {
    let texts = user_texts(request);
    let requirements = stated_requirements(request, &texts);
    let new_here = collect_requirements([latest], is_instruction).len();
    let latest_words = words(latest);
    let mut out = String::new();

    if latest_words.is_empty() {
        out.push_str("I didn't find any text in your message.");
    } else if latest_words.len() <= 4 && GREETINGS.contains(&latest_words[0].as_str()) && requirements.is_empty() {
        return format!(
            "{}! I'm Quire's built-in assistant. I work offline, so I can't browse or look \
             things up, but I can help you capture requirements and turn them into documents \
             such as user stories or a business requirements document.\n\nTell me about the \
             product you're working on, for example *\"Customers need to track their orders\"*.",
            capitalize_first(&latest_words[0])
        );
    } else if latest_words.len() <= 5 && THANKS.contains(&latest_words[0].as_str()) {
        let n = requirements.len();
        return if n == 0 {
            "You're welcome! Whenever you're ready, describe what the product should do and I'll \
             capture the requirements."
                .to_string()
        } else {
            format!(
                "You're welcome! I have {n} requirement{} captured so far. I can draft user \
                 stories, a BRD, a requirements document, acceptance criteria or a meeting \
                 summary from {}, or you can keep adding details.",
                if n == 1 { "" } else { "s" },
                if n == 1 { "it" } else { "them" }
            )
        };
    } else if new_here > 0 {
        out.push_str(&format!(
            "Got it. I noted {new_here} requirement{} from your message.",
            if new_here == 1 { "" } else { "s" }
        ));
    } else if latest.trim_end().ends_with('?') || ASK_RE.is_match(latest) {
        out.push_str(&format!(
            "You asked: \"{}\". I'm Quire's built-in offline assistant, so I can only work with \
             what's in this conversation and can't look things up.",
            key_phrase(latest)
        ));
    } else {
        out.push_str(&format!("Noted: \"{}\".", key_phrase(latest)));
    }

    if requirements.is_empty() {
        let topics = keywords(latest, &[]);
        if !topics.is_empty() {
            let shown: Vec<String> = topics.iter().take(4).map(|t| format!("**{t}**")).collect();
            out.push_str(&format!(" Topics I picked up: {}.", join_and(&shown)));
        }
        out.push_str(
            "\n\nI haven't captured any requirements yet. Describe what you need in sentences \
             like *\"Users must be able to …\"* and I'll keep track of them. I can then draft \
             user stories, a BRD, a requirements document, acceptance criteria or a meeting \
             summary.",
        );
        return out;
    }

    out.push_str("\n\n**Requirements so far:**\n\n");
    for req in requirements.iter().take(MAX_LISTED) {
        out.push_str(&format!("- {}\n", req.text));
    }
    if requirements.len() > MAX_LISTED {
        out.push_str(&format!("- _…and {} more_\n", requirements.len() - MAX_LISTED));
    }
    out.push_str(
        "\nI can turn these into **user stories**, a **business requirements document (BRD)**, \
         a **requirements document**, **acceptance criteria** or a **meeting summary**. Just \
         ask, e.g. *\"Generate user stories\"*.",
    );
    out
}

// ---------------------------------------------------------------------------------------------
// Second round: answering tool results

/// One tool result of the last message, with the call it answers.
#[derive(Debug, Clone)]
struct Outcome {
    name: String,
    arguments: Value,
    content: String,
    is_error: bool,
}

/// The tool results of the last message, if it has any.
fn last_tool_results(request: &ChatRequest) -> Option<Vec<Outcome>> {
    let last = request.messages.last()?;
    let outcomes: Vec<Outcome> = last
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult { call_id, content, is_error } => {
                let call = request.messages.iter().rev().find_map(|m| {
                    m.parts.iter().find_map(|p| match p {
                        Part::ToolCall(c) if &c.id == call_id => Some(c),
                        _ => None,
                    })
                });
                let name = call.map_or_else(|| infer_tool(content), |c| c.name.clone());
                Some(Outcome {
                    name,
                    arguments: call.map_or(Value::Null, |c| c.arguments.clone()),
                    content: content.clone(),
                    is_error: *is_error,
                })
            }
            _ => None,
        })
        .collect();
    (!outcomes.is_empty()).then_some(outcomes)
}

fn infer_tool(content: &str) -> String {
    let lower = content.to_lowercase();
    if lower.contains("artifact") && lower.contains("saved") {
        SAVE_ARTIFACT.to_string()
    } else if lower.contains("source") || lower.contains("no results") || lower.contains("found") {
        DOCUMENT_SEARCH.to_string()
    } else {
        "tool".to_string()
    }
}

fn second_round(request: &ChatRequest, latest: &str, outcomes: &[Outcome]) -> Plan {
    let searches: Vec<&Outcome> = outcomes.iter().filter(|o| o.name == DOCUMENT_SEARCH && !o.is_error).collect();
    let saved_now = outcomes.iter().any(|o| o.name == SAVE_ARTIFACT);
    let kinds = requested_artifacts(latest);

    // "Generate user stories from the attached document": the search came back, now generate.
    if !searches.is_empty() && !kinds.is_empty() && !saved_now {
        let chunks: Vec<Chunk> = searches.iter().flat_map(|o| parse_chunks(&o.content)).collect();
        let sources = distinct(chunks.iter().map(|c| c.source.clone()));
        let preface = if chunks.is_empty() {
            "I found nothing relevant in your documents, so I'm working from our conversation.".to_string()
        } else {
            let files: Vec<String> = sources.iter().map(|s| format!("**{s}**")).collect();
            format!(
                "I found {} relevant passage{} in {}.",
                chunks.len(),
                if chunks.len() == 1 { "" } else { "s" },
                join_and(&files)
            )
        };
        let extra: Vec<String> = chunks.into_iter().map(|c| c.text).collect();
        return generate(request, &kinds, &extra, sources, preface);
    }

    let mut paragraphs: Vec<String> = Vec::new();
    let titles: Vec<String> = outcomes
        .iter()
        .filter(|o| o.name == SAVE_ARTIFACT && !o.is_error)
        .map(|o| saved_title(&o.content, &o.arguments))
        .collect();
    if !titles.is_empty() {
        let named: Vec<String> = titles.iter().map(|t| format!("**{t}**")).collect();
        let (it, cards) = if titles.len() == 1 { ("it", "card") } else { ("them", "cards") };
        paragraphs.push(format!(
            "I've saved {}. You can open {it} from the {cards} below. Let me know if you'd like any changes.",
            join_and(&named)
        ));
    }
    for o in outcomes {
        if o.is_error {
            paragraphs.push(failure(o));
        } else if o.name == EDIT_ARTIFACT {
            paragraphs.push(match change_plan(request) {
                Some(EditPlan::Edit { title, from, to, .. }) => format!("Changed '{from}' to '{to}' in {title}."),
                _ => format!("The document is updated: {}", excerpt(&o.content, 300)),
            });
        } else if o.name == DOCUMENT_SEARCH {
            paragraphs.push(answer_from_search(latest, o));
        } else if o.name == RECORD_REQUIREMENTS {
            let done = o.content.trim().trim_start_matches("Recorded in the ledger:").trim().trim_end_matches('.');
            paragraphs.push(format!("I've noted this in the requirements ledger ({done})."));
        } else if o.name != SAVE_ARTIFACT {
            paragraphs.push(format!("The `{}` tool returned: {}", o.name, excerpt(&o.content, 300)));
        }
    }
    Plan::text(paragraphs.join("\n\n"))
}

fn excerpt(text: &str, max_chars: usize) -> String {
    let t = text.trim();
    if t.chars().count() <= max_chars {
        t.to_string()
    } else {
        format!("{}…", t.chars().take(max_chars).collect::<String>())
    }
}

fn failure(o: &Outcome) -> String {
    let what = match o.name.as_str() {
        SAVE_ARTIFACT => {
            let title = o.arguments.get("title").and_then(Value::as_str);
            match title {
                Some(t) => format!("Saving **{t}** failed"),
                None => "Saving the document failed".to_string(),
            }
        }
        DOCUMENT_SEARCH => "Searching your documents failed".to_string(),
        other => format!("The `{other}` tool failed"),
    };
    let reason = excerpt(&o.content, 300);
    if reason.is_empty() {
        format!("{what}. You can ask me to try again.")
    } else {
        format!("{what}: {}. You can ask me to try again.", strip_terminal(&reason))
    }
}

static SAVED_TITLE_RES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    vec![
        re(r"'(?P<t>.+)'\s*\(\s*ID"),
        re(r#""(?P<t>.+)"\s*\(\s*ID"#),
        re(r"\u{201C}(?P<t>.+)\u{201D}"),
        re(r"'(?P<t>.+)'"),
        re(r#""(?P<t>[^"]+)""#),
        re(r"(?i)saved(?:\s+successfully)?\s*:\s*(?P<t>.+?)\s*(?:\(\s*ID.*)?$"),
    ]
});

/// Title of a saved artifact from the tool result, else from the call's arguments.
fn saved_title(content: &str, arguments: &Value) -> String {
    let first_line = content.lines().next().unwrap_or("");
    SAVED_TITLE_RES
        .iter()
        .find_map(|r| r.captures(first_line).map(|c| c["t"].trim().to_string()))
        .filter(|t| !t.is_empty())
        .or_else(|| arguments.get("title").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "the document".to_string())
}

/// One passage returned by `document_search`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chunk {
    pub source: String,
    pub text: String,
}

static SOURCE_HEADER_RE: Lazy<Regex> = lazy_regex!(
    r"(?im)\[\s*(?:source|file|document|doc|from)\s*[:=]\s*(?P<a>[^\]\n]+?)\s*\]|^[ \t]*(?:[-*#>]+[ \t]*)?\**(?:source|file|filename|document)\**[ \t]*[:=][ \t]*\**(?P<b>[^\n]+?)\**[ \t]*$"
);

static NOTHING_FOUND_RE: Lazy<Regex> = lazy_regex!(
    r"(?i)\b(?:no\s+(?:results?|matches|matching|relevant|documents?|chunks?|passages?|attachments?)|nothing\s+(?:was\s+)?found|not\s+find|0\s+results|found\s+nothing|no\s+documents?\s+(?:are\s+|were\s+)?(?:attached|uploaded))\b"
);

fn clean_source(name: &str) -> String {
    let mut n = name.trim();
    for sep in [",", ";", "|", " (", " #", " - ", " — ", " – "] {
        if let Some(pos) = n.find(sep) {
            n = &n[..pos];
        }
    }
    n.trim().trim_matches(['"', '\'', '`', '*']).trim().to_string()
}

fn json_str<'a>(obj: &'a serde_json::Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| obj.get(*k).and_then(Value::as_str))
}

/// The chunks of a `document_search` result: JSON (an array of objects, or an object holding one) or text blocks after
/// `[source: name]` / `Source: name` lines; text without any header is one chunk from "the document".
pub(crate) fn parse_chunks(content: &str) -> Vec<Chunk> {
    if let Ok(value) = serde_json::from_str::<Value>(content) {
        let items = match &value {
            Value::Array(items) => Some(items.clone()),
            Value::Object(obj) => ["results", "chunks", "matches", "documents", "passages"]
                .iter()
                .find_map(|k| obj.get(*k).and_then(Value::as_array).cloned()),
            _ => None,
        };
        if let Some(items) = items {
            return items
                .iter()
                .filter_map(|item| {
                    let obj = item.as_object()?;
                    let text = json_str(obj, &["text", "content", "chunk", "snippet", "excerpt"])?;
                    let source =
                        json_str(obj, &["source", "file", "filename", "file_name", "document", "name", "title"])
                            .map_or_else(|| "the document".to_string(), clean_source);
                    (!text.trim().is_empty()).then(|| Chunk { source, text: text.trim().to_string() })
                })
                .collect();
        }
    }
    let headers: Vec<(usize, usize, String)> = SOURCE_HEADER_RE
        .captures_iter(content)
        .filter_map(|c| {
            let m = c.get(0)?;
            let name = c.name("a").or(c.name("b"))?.as_str();
            Some((m.start(), m.end(), clean_source(name)))
        })
        .collect();
    let trim_block = |s: &str| -> String {
        s.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.chars().all(|c| matches!(c, '-' | '=' | '*' | '_')))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if headers.is_empty() {
        let text = trim_block(content);
        if text.is_empty() || (NOTHING_FOUND_RE.is_match(&text) && text.len() < 300) {
            return Vec::new();
        }
        return vec![Chunk { source: "the document".to_string(), text }];
    }
    headers
        .iter()
        .enumerate()
        .filter_map(|(i, (_, end, source))| {
            let stop = headers.get(i + 1).map_or(content.len(), |h| h.0);
            let text = trim_block(&content[*end..stop]);
            (!text.is_empty()).then(|| Chunk { source: source.clone(), text })
        })
        .collect()
}

fn answer_from_search(question: &str, outcome: &Outcome) -> String {
    let chunks = parse_chunks(&outcome.content);
    let query = outcome
        .arguments
        .get("query")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| search_query(question));
    if chunks.is_empty() {
        return format!(
            "I searched your documents for \"{query}\" but found nothing relevant. The \
             information may not be in the attached files; try rephrasing, or paste the \
             relevant part here."
        );
    }
    let wanted: Vec<String> =
        keywords(&format!("{question} {query}"), DOCUMENT_WORDS).iter().map(|w| stem(w)).collect();
    // (score, chunk index, sentence index, sentence)
    let mut scored: Vec<(usize, usize, usize, String)> = Vec::new();
    for (ci, chunk) in chunks.iter().enumerate() {
        for (si, sentence) in split_sentences(&chunk.text).into_iter().enumerate() {
            let mut have: Vec<String> = words(&sentence).iter().map(|w| stem(w)).collect();
            have.dedup();
            let score = wanted.iter().filter(|w| have.contains(w)).count();
            scored.push((score, ci, si, sentence));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let relevant: Vec<&(usize, usize, usize, String)> = scored.iter().filter(|s| s.0 > 0).take(3).collect();
    let mut out = String::new();
    let picked: Vec<&(usize, usize, usize, String)> = if relevant.is_empty() {
        out.push_str(&format!(
            "I couldn't find a passage that answers \"{}\" directly. The closest match in your \
             documents is:\n\n",
            first_words(strip_terminal(question), 15)
        ));
        scored.iter().filter(|s| s.2 == 0).take(1).collect()
    } else {
        let files = distinct(relevant.iter().map(|s| format!("**{}**", chunks[s.1].source)));
        out.push_str(&format!("According to {}:\n\n", join_and(&files)));
        relevant
    };
    for (_, ci, _, sentence) in &picked {
        out.push_str(&format!("> {}\n>\n> — *{}*\n\n", first_words(sentence, 60), chunks[*ci].source));
    }
    let sources = distinct(chunks.iter().map(|c| c.source.as_str()));
    out.push_str(&format!("Sources: {}", sources.join(", ")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_chunks_tolerantly() {
        let chunks = parse_chunks(
            "[source: notes.pdf]\nRefunds take 14 days.\n\n[Source: policy.docx, chunk 2]\nCall support first.",
        );
        assert_eq!(
            chunks,
            vec![
                Chunk { source: "notes.pdf".into(), text: "Refunds take 14 days.".into() },
                Chunk { source: "policy.docx".into(), text: "Call support first.".into() },
            ]
        );
        let chunks = parse_chunks("Source: a.txt\nHello world.\n---\nSource: b.txt\nBye.");
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[1].source, "b.txt");
        let chunks = parse_chunks(r#"[{"file_name": "x.pdf", "text": "Alpha."}]"#);
        assert_eq!(chunks, vec![Chunk { source: "x.pdf".into(), text: "Alpha.".into() }]);
        assert!(parse_chunks("No results found.").is_empty());
        assert!(parse_chunks("").is_empty());
        assert_eq!(parse_chunks("Just some text.")[0].source, "the document");
    }

    /// A request with the document of the prompt's format and the edit tool offered, the person saying `said`.
    fn editing(said: &str) -> ChatRequest {
        let system = "Rules.\n\nDOCUMENTS OF THIS CONVERSATION (current versions):\n- \"Booking Plan\" (Requirements \
                      Document, ID: doc-1, version 2)\n\n<document id=\"doc-1\" version=\"2\">\n# Booking Plan\n\nSlots \
                      are 30 minutes.\n\nBreaks are 30 minutes.\n\nReminders go out two days before.\n</document>\n";
        let tool = |name: &str| crate::types::ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: Value::Null,
        };
        ChatRequest {
            system: system.into(),
            messages: vec![crate::types::Message::user(said)],
            tools: vec![tool(SAVE_ARTIFACT), tool(EDIT_ARTIFACT)],
            max_tokens: 1000,
            tool_choice: None,
        }
    }

    #[test]
    fn a_change_to_a_value_a_document_holds_is_a_targeted_edit_then_said() {
        // Once in the plan: the value itself is the smallest passage to find.
        let plan = super::plan(&editing("Reminders should be 3 days before, not two days"));
        let (name, arguments) = &plan.tool_calls[0];
        assert_eq!(name, EDIT_ARTIFACT);
        assert_eq!(
            arguments,
            &json!({"artifact_id": "doc-1", "edits": [{"find": "two days before", "replace": "3 days before"}]}),
            "the old value widened by the words the new one has beyond it"
        );
        // Twice, and nothing says which: reported, nothing edited.
        let plan = super::plan(&editing("Slots should be 45 minutes, not 30"));
        assert!(plan.tool_calls.is_empty());
        assert!(plan.text.contains("'30 minutes' appears 2 times in Booking Plan"), "{}", plan.text);
        // A quoted passage says which.
        let quoted = analysis::quotes::with_quote(
            "Make it 45 minutes instead of 30",
            Some("Booking Plan"),
            "doc-1",
            "Breaks are 30 minutes.",
        );
        let mut request = editing(&quoted);
        let plan = super::plan(&request);
        assert_eq!(
            plan.tool_calls[0].1,
            json!({"artifact_id": "doc-1", "edits": [{"find": "Breaks are 30 minutes.", "replace": "Breaks are 45 minutes."}]})
        );
        // Once the edit is saved, the answer says what changed.
        let call = crate::types::ToolCall {
            id: "c1".into(),
            name: EDIT_ARTIFACT.into(),
            arguments: plan.tool_calls[0].1.clone(),
        };
        request.messages.push(crate::types::Message { role: Role::Assistant, parts: vec![Part::ToolCall(call)] });
        let result =
            Part::ToolResult { call_id: "c1".into(), content: "Edited, now version 3.".into(), is_error: false };
        request.messages.push(crate::types::Message { role: Role::User, parts: vec![result] });
        assert_eq!(super::plan(&request).text, "Changed '30 minutes' to '45 minutes' in Booking Plan.");
    }

    #[test]
    fn a_change_no_document_holds_is_answered_as_before() {
        let asked = "Slots should be 45 minutes, not 20.";
        let plan = super::plan(&editing(asked));
        assert!(plan.tool_calls.is_empty());
        let mut without_documents = editing(asked);
        without_documents.system = "Rules.".into();
        assert_eq!(plan, super::plan(&without_documents), "as if there were no documents");
        // Without the edit tool, no edit either.
        let mut no_tool = editing("Slots should be 45 minutes, not 30");
        no_tool.tools.retain(|t| t.name != EDIT_ARTIFACT);
        assert!(super::plan(&no_tool).tool_calls.is_empty());
    }

    #[test]
    fn reads_saved_titles() {
        assert_eq!(
            saved_title("Artifact saved successfully: 'User Stories: Bob's App' (ID: 42)", &Value::Null),
            "User Stories: Bob's App"
        );
        assert_eq!(saved_title("Artifact saved successfully: BRD (ID: 1)", &Value::Null), "BRD");
        assert_eq!(saved_title("ok", &json!({"title": "T"})), "T");
    }
}
