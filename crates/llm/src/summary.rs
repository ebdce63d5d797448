//! The request that asks a model for a running summary of a conversation: the summary so far and the messages
//! to add to it, written out as a tagged transcript. Every provider gets it as an ordinary request; the built-in
//! assistant recognises it ([`read`]) and writes its own.

use lazy_regex::{lazy_regex, Lazy};
use regex::Regex;

use super::types::{ChatRequest, Message, Role};

/// The instruction of a summary request.
pub const SUMMARY_PROMPT: &str = "You keep the running summary of a conversation between a person and an \
assistant that helps them capture requirements and write documents from them. You get the summary so far (if \
any) in <summary> tags and the messages to add to it in <person> and <assistant> tags. Write the new summary: \
at most 150 words of plain sentences covering the product, the requirements, the decisions, names and numbers \
that matter, and open questions. Documents that were asked for or written are not tasks: do not list them, and \
never write instructions. Answer with the summary only.";

/// One message to summarise: who wrote it and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummarySource {
    pub role: Role,
    pub text: String,
}

const TAGS: [&str; 3] = ["summary", "person", "assistant"];

fn tag(role: Role) -> &'static str {
    match role {
        Role::User => "person",
        Role::Assistant => "assistant",
    }
}

/// Text inside a tag, unable to close it early.
fn escape(text: &str) -> String {
    text.trim().replace("</", "< /")
}

/// The request for a summary of `messages` added to `earlier`, answered in at most `max_tokens`.
pub fn request(earlier: Option<&str>, messages: &[SummarySource], max_tokens: u32) -> ChatRequest {
    let mut transcript = String::new();
    if let Some(earlier) = earlier.map(str::trim).filter(|s| !s.is_empty()) {
        transcript.push_str(&format!("<summary>\n{}\n</summary>\n\n", escape(earlier)));
    }
    for message in messages {
        let name = tag(message.role);
        transcript.push_str(&format!("<{name}>\n{}\n</{name}>\n\n", escape(&message.text)));
    }
    ChatRequest {
        system: SUMMARY_PROMPT.to_string(),
        messages: vec![Message::user(transcript.trim_end())],
        tools: Vec::new(),
        max_tokens,
        tool_choice: None,
    }
}

static BLOCK: Lazy<Regex> = lazy_regex!(r"(?s)<(summary|person|assistant)>\n(.*?)\n</(summary|person|assistant)>");

/// The summary so far and the messages of a summary request; `None` for any other request.
pub fn read(request: &ChatRequest) -> Option<(Option<String>, Vec<SummarySource>)> {
    if request.system != SUMMARY_PROMPT || !request.tools.is_empty() {
        return None;
    }
    let text = request.messages.iter().map(Message::text).collect::<Vec<_>>().join("\n\n");
    let mut earlier = None;
    let mut messages = Vec::new();
    for block in BLOCK.captures_iter(&text) {
        let (open, body, close) = (&block[1], block[2].to_string(), &block[3]);
        if open != close || !TAGS.contains(&open) {
            continue;
        }
        match open {
            "summary" => earlier = Some(body),
            "person" => messages.push(SummarySource { role: Role::User, text: body }),
            _ => messages.push(SummarySource { role: Role::Assistant, text: body }),
        }
    }
    Some((earlier, messages))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_request_reads_back_as_it_was_written() {
        let messages = vec![
            SummarySource {
                role: Role::User,
                text: "Members must renew loans online.\nAnd </person> pay fines.".into(),
            },
            SummarySource { role: Role::Assistant, text: "Noted.".into() },
        ];
        let request = request(Some("A library app."), &messages, 300);
        assert_eq!(request.max_tokens, 300);
        assert!(request.tools.is_empty());
        let (earlier, read_back) = read(&request).expect("a summary request");
        assert_eq!(earlier.as_deref(), Some("A library app."));
        assert_eq!(read_back.len(), 2);
        assert_eq!(read_back[0].text, "Members must renew loans online.\nAnd < /person> pay fines.");
        assert_eq!(read_back[1], SummarySource { role: Role::Assistant, text: "Noted.".into() });
        assert!(read(&ChatRequest { system: "Something else".into(), ..request }).is_none());
    }
}
