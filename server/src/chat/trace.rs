//! The steps of a turn as its trace keeps them: each model call timed from its request to its end, each tool
//! call with its arguments and the start of its result. Errors are kept as people are told them (a code and a
//! plain sentence), never with the provider's addresses.

use chrono::{DateTime, Utc};
use tokio::time::Instant;
use wire::{
    shortened, shortened_strings, CallPurpose, ModelCall, StepError, StopReason, ToolCallStep, TraceStep,
    TRACE_ARGUMENT_CHARS, TRACE_RESULT_CHARS,
};

use llm::{LlmError, Provider};

/// A model call being timed.
pub struct CallTiming {
    purpose: CallPurpose,
    started_at: DateTime<Utc>,
    clock: Instant,
    first_token_ms: Option<u64>,
    usage: llm::Usage,
    /// Whether Quire counted the usage (no report from the provider).
    counted: bool,
    stop: Option<StopReason>,
}

impl CallTiming {
    /// Starts timing a call as its request goes out.
    pub fn start(purpose: CallPurpose) -> Self {
        Self {
            purpose,
            started_at: store::now(),
            clock: Instant::now(),
            first_token_ms: None,
            usage: llm::Usage::default(),
            counted: false,
            stop: None,
        }
    }

    /// Text or a tool call arrived: the first one sets the time to the first token.
    pub fn output(&mut self) {
        if self.first_token_ms.is_none() {
            self.first_token_ms = Some(millis(self.clock));
        }
    }

    pub fn add_usage(&mut self, usage: llm::Usage) {
        self.usage.input_tokens += usage.input_tokens;
        self.usage.output_tokens += usage.output_tokens;
    }

    /// The tokens the call was metered so far.
    pub fn usage(&self) -> llm::Usage {
        self.usage
    }

    /// The call's tokens as its meter read them once it was over (reported, or counted by Quire).
    pub fn metered(&mut self, reading: llm::Metered) {
        self.usage = reading.usage;
        self.counted = reading.counted;
    }

    /// Whether the model stopped at the answer's length limit (`max_tokens`).
    pub fn cut_off(&self) -> bool {
        self.stop == Some(StopReason::MaxTokens)
    }

    /// The provider said why the model stopped.
    pub fn stopped_by_model(&mut self, reason: llm::StopReason) {
        self.stop = Some(match reason {
            llm::StopReason::EndTurn => StopReason::EndTurn,
            llm::StopReason::ToolUse => StopReason::ToolUse,
            llm::StopReason::MaxTokens => StopReason::MaxTokens,
            llm::StopReason::Other => StopReason::Other,
        });
    }

    /// The person stopped the answer during this call.
    pub fn stopped_by_person(&mut self) {
        self.stop = Some(StopReason::Stopped);
    }

    /// The finished call as a step; `error` when it failed.
    pub fn step(self, provider: &dyn Provider, error: Option<&LlmError>) -> TraceStep {
        TraceStep::ModelCall(ModelCall {
            purpose: self.purpose,
            provider: provider.name().to_string(),
            model: provider.model().to_string(),
            input_tokens: self.usage.input_tokens,
            output_tokens: self.usage.output_tokens,
            counted: self.counted,
            first_token_ms: self.first_token_ms,
            duration_ms: millis(self.clock),
            stop_reason: if error.is_some() { None } else { self.stop },
            error: error.map(plain_error),
            started_at: self.started_at,
        })
    }
}

/// A model failure as the trace keeps it: what the person was told, and the kind for programs.
pub fn plain_error(error: &LlmError) -> StepError {
    StepError { code: error.code().to_string(), message: error.public_message().to_string() }
}

/// A tool call as the trace keeps it: its arguments with long texts shortened, the start of its result (or the
/// result as its error when it failed).
pub fn tool_step(
    name: &str,
    arguments: &serde_json::Value,
    result: &str,
    is_error: bool,
    started_at: DateTime<Utc>,
    clock: Instant,
) -> TraceStep {
    TraceStep::ToolCall(ToolCallStep {
        name: name.to_string(),
        arguments: shortened_strings(arguments, TRACE_ARGUMENT_CHARS),
        result: (!is_error).then(|| shortened(result, TRACE_RESULT_CHARS)),
        error: is_error.then(|| shortened(result, TRACE_RESULT_CHARS)),
        duration_ms: millis(clock),
        started_at,
    })
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm::builtin::Builtin;

    #[test]
    fn a_failed_call_keeps_the_plain_sentence_only() {
        let mut timing = CallTiming::start(CallPurpose::Answer);
        timing.stopped_by_model(llm::StopReason::EndTurn);
        let error = LlmError::Network("error sending request for url (http://10.0.0.7:8080/v1/chat)".into());
        let TraceStep::ModelCall(call) = timing.step(&Builtin::new(), Some(&error)) else { panic!("a model call") };
        let kept = serde_json::to_string(&call).unwrap();
        assert!(!kept.contains("10.0.0.7"), "{kept}");
        assert_eq!(call.error.unwrap().code, "upstream_unreachable");
        assert_eq!(call.stop_reason, None);
        assert_eq!(call.provider, "builtin");
    }

    #[test]
    fn the_first_output_sets_the_time_to_first_token_once() {
        let mut timing = CallTiming::start(CallPurpose::Title);
        assert_eq!(timing.first_token_ms, None);
        timing.output();
        let first = timing.first_token_ms;
        timing.output();
        assert_eq!(timing.first_token_ms, first);
        timing.add_usage(llm::Usage { input_tokens: 3, output_tokens: 2 });
        timing.add_usage(llm::Usage { input_tokens: 1, output_tokens: 1 });
        assert_eq!((timing.usage.input_tokens, timing.usage.output_tokens), (4, 3));
    }
}
