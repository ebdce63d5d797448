//! Tool calls written in an answer's text rather than in the API's tool-call fields: many local models behind
//! servers that do not parse their calls write `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, or a
//! fenced JSON block with `name` and `arguments`. A model that cannot take tools at all is asked to write its
//! documents in fenced `document` blocks instead. [`read`] turns such text into tool-call events and takes it out
//! of the shown answer, while the rest of the text streams as it came.
//!
//! Only a span that may be the start of a call is held back (a `<` that may open a tag, backticks at the start of a
//! line); everything else is released the moment it arrives. The work per delta is linear in its length: each byte
//! is looked at a bounded number of times, and a block is searched for its end only from where the last search
//! stopped.

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

use futures::StreamExt;

use crate::types::{BrokenCall, EventStream, Habits, StopReason, StreamEvent, ToolCall};

const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";
/// Longest block held back; a longer one is released as text (or, for a tag, given back to the model as broken).
const MAX_BLOCK_BYTES: usize = 1024 * 1024;

/// Longest line that may open a fenced block (backticks and info string).
const MAX_FENCE_LINE: usize = 256;

/// Makes a document tool's arguments from a fenced `document` block: its info string and its body.
pub type DocumentForm = fn(info: &str, body: &str) -> serde_json::Value;

/// Which forms of written calls a stream is read for.
#[derive(Clone)]
pub struct Forms {
    /// The tools offered: a written call naming another is left as text.
    pub tools: Vec<String>,
    /// Fenced JSON blocks (`json`, `tool_call` or no info string) are read as calls: the provider's
    /// `tool_calls_in_text` setting, or a model seen writing tagged calls.
    pub fenced_json: bool,
    /// Fenced `document` blocks are calls of this tool, with these arguments (a model asked without tools).
    pub documents: Option<(String, DocumentForm)>,
    /// Told when a tagged call is seen, so later answers of the model are read for fenced ones too.
    pub habits: Option<Arc<Habits>>,
}

impl std::fmt::Debug for Forms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forms")
            .field("tools", &self.tools)
            .field("fenced_json", &self.fenced_json)
            .field("documents", &self.documents.as_ref().map(|(tool, _)| tool))
            .finish_non_exhaustive()
    }
}

/// `stream` with the calls written in its text carried out as tool calls and taken out of its text.
pub fn read(stream: EventStream, forms: Forms) -> EventStream {
    let reader = Reader::new(forms);
    Box::pin(futures::stream::unfold(
        (stream, reader, Vec::<StreamEvent>::new().into_iter()),
        |(mut stream, mut reader, mut queued)| async move {
            loop {
                if let Some(event) = queued.next() {
                    return Some((Ok(event), (stream, reader, queued)));
                }
                let event = match stream.next().await? {
                    Ok(event) => event,
                    Err(e) => return Some((Err(e), (stream, reader, queued))),
                };
                let mut out = Vec::new();
                reader.on_event(event, &mut out);
                queued = out.into_iter();
            }
        },
    ))
}

/// Ids of calls read from text: unique in the process, so never the same twice in one conversation.
static WRITTEN_CALLS: AtomicU64 = AtomicU64::new(0);

fn call_id() -> String {
    format!("call_text_{}", WRITTEN_CALLS.fetch_add(1, Ordering::Relaxed))
}

#[derive(Debug)]
enum Block {
    /// After `<tool_call>`; `searched` bytes of the body are known not to hold the closing tag.
    Tag { body: String, searched: usize },
    /// After a fence line of `ticks` backticks; `searched` bytes are known to hold no closing fence line.
    Fence { ticks: usize, info: String, body: String, searched: usize },
}

/// The state of one answer's reading.
#[derive(Debug)]
pub struct Reader {
    forms: Forms,
    /// Text that may open a block, not yet released.
    held: String,
    /// Whether the text released so far ends a line (or none was released): backticks here may open a fence.
    line_start: bool,
    block: Option<Block>,
    /// Whether this answer held a call read from its text.
    read_any: bool,
}

impl Reader {
    pub fn new(forms: Forms) -> Self {
        Self { forms, held: String::new(), line_start: true, block: None, read_any: false }
    }

    fn fences(&self) -> bool {
        self.forms.fenced_json || self.forms.documents.is_some()
    }

    /// Reads one event of the stream; what it gives goes to `out`.
    pub fn on_event(&mut self, event: StreamEvent, out: &mut Vec<StreamEvent>) {
        match event {
            StreamEvent::TextDelta(text) => self.on_text(text, out),
            StreamEvent::Stop(reason) => {
                self.finish(reason == StopReason::MaxTokens, out);
                let reason = if self.read_any && reason == StopReason::EndTurn { StopReason::ToolUse } else { reason };
                out.push(StreamEvent::Stop(reason));
            }
            other => {
                // Usage and the API's own calls come at the end: what is held is released (or read) first.
                if matches!(other, StreamEvent::Usage(_)) {
                    self.finish(false, out);
                }
                out.push(other);
            }
        }
    }

    fn on_text(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        // The common case: nothing held, and nothing in the delta that could open a block.
        let may_open = text.contains('<') || (self.fences() && text.contains('`'));
        if self.block.is_none() && self.held.is_empty() && !may_open {
            self.release(text, out);
            return;
        }
        let pending = std::mem::take(&mut self.held) + &text;
        let mut rest = pending.as_str();
        while !rest.is_empty() {
            if self.block.is_some() {
                match self.advance_block(rest, out) {
                    Some(used) => rest = &rest[used..],
                    None => break,
                }
                continue;
            }
            match self.find_opening(rest) {
                Opening::None => {
                    self.release(rest.to_string(), out);
                    break;
                }
                Opening::Partial(at) => {
                    self.release(rest[..at].to_string(), out);
                    self.held = rest[at..].to_string();
                    break;
                }
                Opening::Text(end) => {
                    // A fence line that opens no call: text like any other.
                    self.release(rest[..end].to_string(), out);
                    rest = &rest[end..];
                }
                Opening::Block(at, end, block) => {
                    // The text before the block goes out before whatever the block turns out to be.
                    self.release(rest[..at].to_string(), out);
                    self.block = Some(block);
                    rest = &rest[end..];
                }
            }
        }
    }

    fn release(&mut self, shown: String, out: &mut Vec<StreamEvent>) {
        if shown.is_empty() {
            return;
        }
        self.line_start = shown.ends_with('\n');
        out.push(StreamEvent::TextDelta(shown));
    }

    /// Where in `text` (which follows the released text) a block may open.
    fn find_opening(&self, text: &str) -> Opening {
        let mut from = 0;
        while from < text.len() {
            let Some(offset) = text[from..].find(['<', '`']) else { return Opening::None };
            let at = from + offset;
            let tail = &text[at..];
            if tail.starts_with('<') {
                if tail.starts_with(OPEN_TAG) {
                    let body = Block::Tag { body: String::new(), searched: 0 };
                    return Opening::Block(at, at + OPEN_TAG.len(), body);
                }
                if OPEN_TAG.starts_with(tail) {
                    return Opening::Partial(at);
                }
                from = at + 1;
                continue;
            }
            let starts_line = if at == 0 { self.line_start } else { text.as_bytes()[at - 1] == b'\n' };
            if !self.fences() || !starts_line {
                from = at + 1;
                continue;
            }
            let ticks = tail.bytes().take_while(|&b| b == b'`').count();
            let Some(line_end) = tail.find('\n') else {
                // The fence line is not whole yet (or only backticks so far); one longer than any fence line is
                // text, so what is held back (and looked at again with each delta) stays small.
                if tail.len() > MAX_FENCE_LINE {
                    from = at + ticks.max(1);
                    continue;
                }
                return Opening::Partial(at);
            };
            if line_end > MAX_FENCE_LINE {
                from = at + ticks.max(1);
                continue;
            }
            if ticks < 3 {
                from = at + ticks;
                continue;
            }
            let info = tail[ticks..line_end].trim();
            if self.opens_call(info) {
                let block = Block::Fence { ticks, info: info.to_string(), body: String::new(), searched: 0 };
                return Opening::Block(at, at + line_end + 1, block);
            }
            return Opening::Text(at + line_end + 1);
        }
        Opening::None
    }

    fn opens_call(&self, info: &str) -> bool {
        let word = info.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
        (self.forms.fenced_json && matches!(word.as_str(), "" | "json" | "tool_call" | "tool_code"))
            || (self.forms.documents.is_some() && word.starts_with("document"))
    }

    /// Adds `text` to the open block; `Some(n)` once the block ended within the first `n` bytes of `text` (the rest
    /// is read as usual), `None` while it goes on.
    fn advance_block(&mut self, text: &str, out: &mut Vec<StreamEvent>) -> Option<usize> {
        let block = self.block.as_mut().expect("an open block");
        match block {
            Block::Tag { body, searched } => {
                let before = body.len();
                body.push_str(text);
                // The closing tag may straddle the deltas: search from just before where the last search ended.
                let start = searched.saturating_sub(CLOSE_TAG.len());
                let start = (0..=start).rev().find(|&i| body.is_char_boundary(i)).unwrap_or(0);
                if let Some(found) = body[start..].find(CLOSE_TAG) {
                    let end = start + found;
                    let used = end + CLOSE_TAG.len() - before;
                    let inner = body[..end].to_string();
                    self.block = None;
                    self.line_start = false;
                    self.tagged(&inner, out);
                    return Some(used);
                }
                *searched = body.len();
                if body.len() > MAX_BLOCK_BYTES {
                    self.block = None;
                    self.broken(String::new(), "the call written in the text was longer than Quire reads", out);
                    return Some(text.len());
                }
                None
            }
            Block::Fence { ticks, body, searched, .. } => {
                let before = body.len();
                body.push_str(text);
                let ticks = *ticks;
                // Whole lines only: a closing fence line needs its line end (or the end of the answer).
                let mut line_from = *searched;
                while let Some(newline) = body[line_from..].find('\n') {
                    let line = &body[line_from..line_from + newline];
                    if closes_fence(line, ticks) {
                        let inner = body[..line_from].to_string();
                        let used = line_from + newline + 1 - before;
                        let Some(Block::Fence { info, .. }) = self.block.take() else { unreachable!() };
                        self.fenced(&info, ticks, &inner, out);
                        self.line_start = true;
                        return Some(used);
                    }
                    line_from += newline + 1;
                }
                *searched = line_from;
                if body.len() > MAX_BLOCK_BYTES {
                    let Some(Block::Fence { info, body, .. }) = self.block.take() else { unreachable!() };
                    self.release(format!("{}{info}\n{body}", "`".repeat(ticks)), out);
                    return Some(text.len());
                }
                None
            }
        }
    }

    /// The answer ended (`cut_off`: by its length limit): what is held is read or released.
    fn finish(&mut self, cut_off: bool, out: &mut Vec<StreamEvent>) {
        let held = std::mem::take(&mut self.held);
        match self.block.take() {
            None => self.release(held, out),
            Some(Block::Tag { mut body, .. }) => {
                body.push_str(&held);
                if cut_off {
                    self.broken(String::new(), "the answer was cut off by its length limit inside the call", out);
                } else {
                    // A model may leave the tag unclosed at the end of its answer.
                    self.tagged(&body, out);
                }
            }
            Some(Block::Fence { ticks, info, mut body, .. }) => {
                body.push_str(&held);
                // The last line may be the closing fence without its line end.
                let inner = match body.trim_end().rsplit_once('\n') {
                    Some((inner, last)) if closes_fence(last, ticks) => inner.to_string(),
                    None if closes_fence(body.trim_end(), ticks) => String::new(),
                    _ => body.clone(),
                };
                if cut_off && self.forms.documents.is_some() && info.to_ascii_lowercase().starts_with("document") {
                    self.broken(
                        self.forms.documents.as_ref().map(|(tool, _)| tool.clone()).unwrap_or_default(),
                        "the answer was cut off by its length limit inside the document",
                        out,
                    );
                } else {
                    self.fenced(&info, ticks, &inner, out);
                }
            }
        }
    }

    /// A `<tool_call>` block: a call (or several), else given back to the model as broken.
    fn tagged(&mut self, inner: &str, out: &mut Vec<StreamEvent>) {
        match serde_json::from_str::<serde_json::Value>(inner.trim()) {
            Ok(value) => {
                let calls = match value {
                    serde_json::Value::Array(items) => items,
                    one => vec![one],
                };
                let mut any = false;
                for value in calls {
                    match self.call_of(value) {
                        Ok(call) => {
                            any = true;
                            out.push(StreamEvent::ToolCall(call));
                        }
                        Err((name, problem)) => self.broken(name, &problem, out),
                    }
                }
                if any {
                    self.read_any = true;
                    if let Some(habits) = &self.forms.habits {
                        habits.saw_calls_in_text();
                    }
                    self.forms.fenced_json = true;
                }
            }
            Err(e) => self.broken(String::new(), &format!("the arguments are not valid JSON ({e})"), out),
        }
    }

    /// A fenced block opened as a call: a document, or a JSON call; anything else is given back as text.
    fn fenced(&mut self, info: &str, ticks: usize, inner: &str, out: &mut Vec<StreamEvent>) {
        if let Some((tool, form)) = &self.forms.documents {
            if info.to_ascii_lowercase().starts_with("document") {
                let call = ToolCall { id: call_id(), name: tool.clone(), arguments: form(info, inner) };
                self.read_any = true;
                out.push(StreamEvent::ToolCall(call));
                return;
            }
        }
        let call = serde_json::from_str::<serde_json::Value>(inner.trim()).ok().and_then(|v| self.call_of(v).ok());
        match call {
            Some(call) => {
                self.read_any = true;
                out.push(StreamEvent::ToolCall(call));
            }
            None => {
                let fence = "`".repeat(ticks);
                let line = if info.is_empty() { fence.clone() } else { format!("{fence}{info}") };
                let newline = if inner.is_empty() || inner.ends_with('\n') { "" } else { "\n" };
                self.release(format!("{line}\n{inner}{newline}{fence}\n"), out);
            }
        }
    }

    /// A call from its JSON: `name` naming an offered tool, `arguments` (or `parameters`, `input`) an object or a
    /// string holding one. `Err` names the tool and what is wrong.
    fn call_of(&self, value: serde_json::Value) -> Result<ToolCall, (String, String)> {
        let serde_json::Value::Object(mut fields) = value else {
            return Err((String::new(), "a call is an object with \"name\" and \"arguments\"".into()));
        };
        let name = match fields.remove("name") {
            Some(serde_json::Value::String(name)) => name,
            _ => return Err((String::new(), "the call has no \"name\"".into())),
        };
        if !self.forms.tools.contains(&name) {
            return Err((name.clone(), format!("there is no tool named \"{name}\"")));
        }
        let arguments = ["arguments", "parameters", "input"].iter().find_map(|key| fields.remove(*key));
        let arguments = match arguments {
            None => serde_json::Value::Object(Default::default()),
            Some(serde_json::Value::String(raw)) => match serde_json::from_str(&raw) {
                Ok(value @ serde_json::Value::Object(_)) => value,
                _ => return Err((name, "the arguments are not a JSON object".into())),
            },
            Some(value @ serde_json::Value::Object(_)) => value,
            Some(_) => return Err((name, "the arguments are not a JSON object".into())),
        };
        Ok(ToolCall { id: call_id(), name, arguments })
    }

    fn broken(&mut self, name: String, problem: &str, out: &mut Vec<StreamEvent>) {
        self.read_any = true;
        out.push(StreamEvent::BrokenCall(BrokenCall { id: call_id(), name, problem: problem.to_string() }));
    }
}

enum Opening {
    None,
    /// From here on the text may open a block once more of it arrives.
    Partial(usize),
    /// The text up to here ends with a fence line that opens no call.
    Text(usize),
    /// A block opens here; its body starts at the second offset.
    Block(usize, usize, Block),
}

/// Whether `line` closes a fence of `ticks` backticks: at least as many, then only spaces.
fn closes_fence(line: &str, ticks: usize) -> bool {
    let line = line.trim_end();
    line.len() >= ticks && line.bytes().all(|b| b == b'`')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn forms(fenced_json: bool) -> Forms {
        Forms { tools: vec!["save_artifact".into()], fenced_json, documents: None, habits: None }
    }

    fn document_form(info: &str, body: &str) -> serde_json::Value {
        json!({"info": info, "content": body})
    }

    /// Feeds `pieces` as text deltas, then the end; text deltas joined, calls by name and arguments.
    fn run(forms: Forms, pieces: &[&str], stop: StopReason) -> (String, Vec<StreamEvent>) {
        let mut reader = Reader::new(forms);
        let mut out = Vec::new();
        for piece in pieces {
            reader.on_event(StreamEvent::TextDelta(piece.to_string()), &mut out);
        }
        reader.on_event(StreamEvent::Stop(stop), &mut out);
        let text = out
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let rest = out.into_iter().filter(|e| !matches!(e, StreamEvent::TextDelta(_))).collect();
        (text, rest)
    }

    fn arguments(events: &[StreamEvent]) -> Vec<serde_json::Value> {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCall(call) => Some(call.arguments.clone()),
                _ => None,
            })
            .collect()
    }

    /// Every way of cutting `text` in two, and one character at a time, reads the same.
    fn same_however_split(forms: &Forms, text: &str) -> (String, Vec<StreamEvent>) {
        let whole = run(forms.clone(), &[text], StopReason::EndTurn);
        let bounds: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
        for &at in &bounds {
            let split = run(forms.clone(), &[&text[..at], &text[at..]], StopReason::EndTurn);
            assert_eq!(split.0, whole.0, "split at {at}");
            assert_eq!(arguments(&split.1), arguments(&whole.1), "split at {at}");
        }
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
        let one_by_one = run(forms.clone(), &pieces, StopReason::EndTurn);
        assert_eq!(one_by_one.0, whole.0);
        assert_eq!(arguments(&one_by_one.1), arguments(&whole.1));
        whole
    }

    #[test]
    fn a_tagged_call_is_carried_out_and_taken_out_of_the_text() {
        let habits = Arc::new(Habits::default());
        let forms = Forms { habits: Some(habits.clone()), ..forms(false) };
        let text = "Here it is.\n<tool_call>\n{\"name\": \"save_artifact\", \"arguments\": {\"title\": \"T\"}}\n</tool_call>\nDone <b>now</b>.";
        let (shown, events) = same_however_split(&forms, text);
        assert_eq!(shown, "Here it is.\n\nDone <b>now</b>.");
        assert_eq!(arguments(&events), vec![json!({"title": "T"})]);
        assert_eq!(events.last(), Some(&StreamEvent::Stop(StopReason::ToolUse)));
        assert!(habits.calls_in_text(), "the model is remembered as writing its calls");
    }

    #[test]
    fn arguments_given_as_a_string_and_calls_in_a_list_are_read() {
        let text = r#"<tool_call>[{"name":"save_artifact","arguments":"{\"a\":1}"},{"name":"save_artifact","parameters":{"b":2}}]</tool_call>"#;
        let (shown, events) = same_however_split(&forms(false), text);
        assert_eq!(shown, "");
        assert_eq!(arguments(&events), vec![json!({"a": 1}), json!({"b": 2})]);
    }

    #[test]
    fn a_broken_tagged_call_goes_back_as_broken() {
        let (shown, events) = run(forms(false), &["<tool_call>{\"name\": \"save_art"], StopReason::MaxTokens);
        assert_eq!(shown, "");
        assert!(matches!(&events[0], StreamEvent::BrokenCall(b) if b.problem.contains("cut off")));
        let (_, events) =
            run(forms(false), &["<tool_call>{\"name\": \"delete_all\"}</tool_call>"], StopReason::EndTurn);
        assert!(matches!(&events[0], StreamEvent::BrokenCall(b) if b.name == "delete_all"));
        let (_, events) = run(forms(false), &["<tool_call>not json</tool_call>"], StopReason::EndTurn);
        assert!(matches!(&events[0], StreamEvent::BrokenCall(b) if b.problem.contains("not valid JSON")));
        // Unclosed at the very end (not cut off): still read.
        let (_, events) =
            run(forms(false), &["<tool_call>{\"name\": \"save_artifact\", \"arguments\": {}}"], StopReason::EndTurn);
        assert_eq!(arguments(&events), vec![json!({})]);
    }

    #[test]
    fn fenced_json_is_a_call_only_when_the_model_writes_calls_as_text() {
        let text = "Saving:\n```json\n{\"name\": \"save_artifact\", \"arguments\": {\"x\": 1}}\n```\nok";
        let (shown, events) = same_however_split(&forms(true), text);
        assert_eq!(shown, "Saving:\nok");
        assert_eq!(arguments(&events), vec![json!({"x": 1})]);
        let (shown, events) = same_however_split(&forms(false), text);
        assert_eq!(shown, text);
        assert!(arguments(&events).is_empty());
    }

    #[test]
    fn other_fences_and_json_that_is_no_call_stay_text() {
        let text = "Code:\n```rust\nfn main() {}\n```\nData:\n```json\n{\"a\": [1, 2]}\n```\nInline `x` and a <tag>.\n";
        let (shown, events) = same_however_split(&forms(true), text);
        assert_eq!(shown, text);
        assert_eq!(events, vec![StreamEvent::Stop(StopReason::EndTurn)]);
    }

    #[test]
    fn document_blocks_become_calls_of_the_document_tool() {
        let forms = Forms { documents: Some(("save_artifact".into(), document_form)), ..forms(false) };
        let text = "Here:\n````document user_stories: Library\n# Stories\n```\ncode\n```\nMore.\n````\nThat is all.";
        let (shown, events) = same_however_split(&forms, text);
        assert_eq!(shown, "Here:\nThat is all.");
        assert_eq!(
            arguments(&events),
            vec![json!({"info": "document user_stories: Library", "content": "# Stories\n```\ncode\n```\nMore.\n"})]
        );
        // Left open at the end of the answer: the rest is the document.
        let (_, events) = run(forms.clone(), &["```document\nbody"], StopReason::EndTurn);
        assert_eq!(arguments(&events), vec![json!({"info": "document", "content": "body"})]);
        // Cut off inside: broken, nothing saved.
        let (_, events) = run(forms, &["```document\nbody"], StopReason::MaxTokens);
        assert!(matches!(&events[0], StreamEvent::BrokenCall(_)));
    }

    #[test]
    fn a_line_too_long_to_open_a_fence_is_released_without_waiting_for_its_end() {
        let mut reader = Reader::new(forms(true));
        let mut out = Vec::new();
        let long = format!("```{}", "x".repeat(MAX_FENCE_LINE));
        reader.on_event(StreamEvent::TextDelta(long.clone()), &mut out);
        assert_eq!(out, vec![StreamEvent::TextDelta(long.clone())], "nothing held back");
        let text = format!("{long}\nmore\n");
        let (shown, events) = same_however_split(&forms(true), &text);
        assert_eq!((shown.as_str(), events.len()), (text.as_str(), 1));
    }

    #[test]
    fn plain_text_passes_through_in_the_pieces_it_came_in() {
        let (_, _) = run(forms(true), &["a"], StopReason::EndTurn);
        let mut reader = Reader::new(forms(true));
        let mut out = Vec::new();
        reader.on_event(StreamEvent::TextDelta("no markup here".into()), &mut out);
        assert_eq!(out, vec![StreamEvent::TextDelta("no markup here".into())]);
    }
}
