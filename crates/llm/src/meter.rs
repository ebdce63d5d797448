//! Metering one model call however it ends. A provider reports a call's tokens at the end of its stream; a call
//! stopped, failed, timed out or dropped before that report is counted by Quire instead: the request as it was
//! sent and the text and tool calls received so far, with the o200k tokenizer. Either way the call is never
//! spent unseen.

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;

use super::types::{ChatRequest, EventStream, StreamEvent, Usage};
use crate::tokens::count_tokens;

/// A call's tokens, and whether Quire counted them because the provider reported none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metered {
    pub usage: Usage,
    pub counted: bool,
}

impl Metered {
    /// Input and output together.
    pub fn total(&self) -> u64 {
        self.usage.input_tokens.saturating_add(self.usage.output_tokens)
    }

    /// The tokens of it Quire counted (all or none).
    pub fn counted_tokens(&self) -> u64 {
        if self.counted {
            self.total()
        } else {
            0
        }
    }
}

/// What one call sent and received so far.
#[derive(Debug, Default)]
struct Tally {
    /// The request as sent, until its tokens are counted (only when the provider reports none).
    request: Option<ChatRequest>,
    prompt_tokens: Option<u64>,
    /// The provider's reports, added up (`None` until one arrives).
    reported: Option<Usage>,
    /// The text received, counted only when no report comes.
    text: String,
    /// Tokens of the tool calls' arguments received.
    tool_tokens: u64,
    /// The provider refused the call before it began (an error status, no connection): nothing was spent.
    refused: bool,
}

/// One model call's meter, shared by the stream it watches and whoever reads it (cheap to clone). The stream
/// only appends what passes; counting happens when it is read, and only for a call the provider did not report.
#[derive(Debug, Clone, Default)]
pub struct Meter(Arc<Mutex<Tally>>);

impl Meter {
    /// Meters a call of `request`, whose tokens are counted only if the provider reports none.
    pub fn new(request: &ChatRequest) -> Self {
        Self(Arc::new(Mutex::new(Tally { request: Some(request.clone()), ..Tally::default() })))
    }

    /// Meters a call whose request was counted already: `prompt_tokens`.
    pub fn counted(prompt_tokens: u64) -> Self {
        Self(Arc::new(Mutex::new(Tally { prompt_tokens: Some(prompt_tokens), ..Tally::default() })))
    }

    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `stream`, with every event it yields taken into account.
    pub fn watch(&self, stream: EventStream) -> EventStream {
        let meter = self.clone();
        stream
            .inspect(move |event| {
                if let Ok(event) = event {
                    meter.observe(event);
                }
            })
            .boxed()
    }

    /// The provider refused the call before it began: unless it reported tokens after all, the call cost nothing.
    pub fn refused(&self) {
        self.tally().refused = true;
    }

    /// Takes one event of the call into account.
    pub fn observe(&self, event: &StreamEvent) {
        let mut tally = self.tally();
        match event {
            StreamEvent::TextDelta(text) | StreamEvent::ReasoningDelta(text) => {
                if tally.reported.is_none() {
                    tally.text.push_str(text);
                }
            }
            StreamEvent::ToolCall(call) => {
                let arguments = count_tokens(&call.arguments.to_string()) as u64;
                tally.tool_tokens = tally.tool_tokens.saturating_add(arguments);
            }
            StreamEvent::Usage(usage) => {
                let sum = tally.reported.get_or_insert_with(Usage::default);
                sum.input_tokens = sum.input_tokens.saturating_add(usage.input_tokens);
                sum.output_tokens = sum.output_tokens.saturating_add(usage.output_tokens);
                // Reported: the text need not be counted.
                tally.text = String::new();
            }
            // What a broken call's arguments held is not kept; the provider's report counts it, if it sends one.
            StreamEvent::Stop(_) | StreamEvent::BrokenCall(_) => {}
        }
    }

    /// The call's tokens so far: as reported, else as counted.
    pub fn reading(&self) -> Metered {
        let mut tally = self.tally();
        if let Some(usage) = tally.reported {
            return Metered { usage, counted: false };
        }
        if tally.refused {
            return Metered::default();
        }
        let prompt = match tally.prompt_tokens {
            Some(tokens) => tokens,
            None => {
                let tokens = tally.request.take().map_or(0, |request| request.prompt_tokens());
                tally.prompt_tokens = Some(tokens);
                tokens
            }
        };
        let output = (count_tokens(&tally.text) as u64).saturating_add(tally.tool_tokens);
        Metered { usage: Usage { input_tokens: prompt, output_tokens: output }, counted: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, ToolCall};

    fn request() -> ChatRequest {
        ChatRequest {
            system: "Answer briefly.".into(),
            messages: vec![Message::user("What do wombats eat?")],
            tools: Vec::new(),
            max_tokens: 100,
            tool_choice: None,
        }
    }

    #[test]
    fn a_call_cut_off_before_its_report_is_counted() {
        let meter = Meter::new(&request());
        meter.observe(&StreamEvent::TextDelta("Grasses, ".into()));
        meter.observe(&StreamEvent::TextDelta("roots and moss.".into()));
        let call = ToolCall { id: "1".into(), name: "note".into(), arguments: serde_json::json!({"text": "moss"}) };
        meter.observe(&StreamEvent::ToolCall(call.clone()));
        let reading = meter.reading();
        assert!(reading.counted);
        assert_eq!(reading.usage.input_tokens, request().prompt_tokens());
        assert!(reading.usage.input_tokens > 0);
        let output = count_tokens("Grasses, roots and moss.") + count_tokens(&call.arguments.to_string());
        assert_eq!(reading.usage.output_tokens, output as u64);
        // Read again (the prompt is counted once): the same.
        assert_eq!(meter.reading(), reading);
        assert_eq!(reading.counted_tokens(), reading.total());
    }

    #[test]
    fn the_providers_report_wins() {
        let meter = Meter::counted(999);
        meter.observe(&StreamEvent::TextDelta("Grasses.".into()));
        meter.observe(&StreamEvent::Usage(Usage { input_tokens: 12, output_tokens: 3 }));
        meter.observe(&StreamEvent::Usage(Usage { input_tokens: 1, output_tokens: 1 }));
        let reading = meter.reading();
        assert_eq!(reading, Metered { usage: Usage { input_tokens: 13, output_tokens: 4 }, counted: false });
        assert_eq!(reading.counted_tokens(), 0);
    }

    #[test]
    fn a_call_that_sent_its_request_and_got_nothing_costs_its_prompt() {
        let meter = Meter::counted(40);
        assert_eq!(meter.reading(), Metered { usage: Usage { input_tokens: 40, output_tokens: 0 }, counted: true });
        // Refused by the provider before it began: nothing spent.
        meter.refused();
        assert_eq!(meter.reading(), Metered::default());
    }
}
