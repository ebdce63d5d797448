//! Naming a conversation at its first message: the model is asked for a short title, or the first words of the
//! message are used.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use uuid::Uuid;
use wire::{CallPurpose, ChatEvent, TraceStep};

use super::engine::Engine;
use super::hub::LiveTurn;
use super::spend::Spend;
use super::trace::CallTiming;
use llm::{LlmError, Meter, StreamEvent};
use store::ThreadPatch;

/// How long naming a conversation may take before the first words of the message are used instead.
const TITLE_TIMEOUT: Duration = Duration::from_secs(10);
/// The instruction for naming a conversation.
const TITLE_PROMPT: &str =
    "Write a title of at most five words for a conversation that starts with the user's message. \
                            Answer with the title only: no quotes, no punctuation at the end.";

/// A model's title answer reduced to at most five words (and 80 characters); `None` if nothing is left.
pub fn clean_title(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.trim_start_matches(|c: char| c == '#' || c.is_whitespace());
    let line = line.strip_prefix("Title:").unwrap_or(line);
    let words: Vec<&str> = line
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '"' | '\'' | '*' | '`' | '“' | '”')))
        .filter(|w| !w.is_empty())
        .take(5)
        .collect();
    let title: String = words.join(" ").chars().take(80).collect();
    let title = title.trim_end_matches(['.', ',', ';', ':', '!', '-']).trim().to_string();
    (!title.is_empty()).then_some(title)
}

/// Default title of a thread that has not been named yet.
pub const DEFAULT_TITLE: &str = "New conversation";

/// Names a conversation at its first message.
pub(super) struct Naming<'a> {
    pub(super) engine: &'a Engine,
    pub(super) provider: Arc<dyn llm::Provider>,
    pub(super) live: Arc<LiveTurn>,
    pub(super) user: Uuid,
    /// Who sent the message it is named from: the call's tokens are theirs.
    pub(super) payer: Uuid,
    pub(super) thread: Uuid,
    pub(super) content: String,
}

impl Naming<'_> {
    /// The thread keeps a title the person gave it; a new one is named after the first words of the message.
    pub(super) async fn known(&self, current: String) {
        if current != DEFAULT_TITLE {
            self.live.push(ChatEvent::ThreadName { thread_id: self.thread, title: current });
            return;
        }
        self.save(store::title_from_message(&self.content)).await;
    }

    /// Asks the model for a title; the first words of the message when that fails. The model call, for the trace.
    pub(super) async fn by_model(&self) -> TraceStep {
        let (title, call) = self.model_title().await;
        self.save(title.unwrap_or_else(|| store::title_from_message(&self.content))).await;
        call
    }

    async fn save(&self, title: String) {
        let patch = ThreadPatch { title: Some(title.clone()), ..Default::default() };
        if let Err(e) = self.engine.store.update_thread(self.user, self.thread, &patch).await {
            tracing::warn!(error = %e, "naming the thread failed");
        }
        self.live.push(ChatEvent::ThreadName { thread_id: self.thread, title });
    }

    /// Asks the model for a title of at most five words; `None` when it fails or says nothing usable. The model
    /// call, for the trace.
    async fn model_title(&self) -> (Option<String>, TraceStep) {
        let request = llm::ChatRequest {
            system: TITLE_PROMPT.to_string(),
            messages: vec![llm::Message::user(self.content.clone())],
            tools: Vec::new(),
            max_tokens: 24,
            tool_choice: None,
        };
        let mut timing = CallTiming::start(CallPurpose::Title);
        // However the call ends (a timeout included), its tokens go on the ledger.
        let meter = Meter::new(&request);
        let spend = Spend::new(
            self.engine.store.clone(),
            (self.user, self.payer),
            self.thread,
            self.provider.model(),
            meter.clone(),
        );
        let mut text = String::new();
        let collect = async {
            let stream = self.provider.stream(request).await.inspect_err(|e| {
                if e.billed_nothing() {
                    meter.refused();
                }
            })?;
            let mut stream = meter.watch(stream);
            while let Some(event) = stream.next().await {
                match event?.without_nul() {
                    StreamEvent::TextDelta(t) => {
                        timing.output();
                        text.push_str(&t);
                    }
                    StreamEvent::Stop(reason) => timing.stopped_by_model(reason),
                    StreamEvent::Usage(_)
                    | StreamEvent::ToolCall(_)
                    | StreamEvent::BrokenCall(_)
                    | StreamEvent::ReasoningDelta(_) => {}
                }
            }
            Ok(())
        };
        let answered = tokio::time::timeout(TITLE_TIMEOUT, collect).await.unwrap_or(Err(LlmError::Timeout));
        timing.metered(spend.record().await);
        let call = timing.step(self.provider.as_ref(), answered.as_ref().err());
        let text = answered.map(|()| text);
        // A title is kept and shown: personal data in it is replaced as in a person's own words.
        let title = text.ok().as_deref().and_then(clean_title);
        (title.map(|title| crate::privacy::redact_if(self.engine.limits.redact_pii, title, 80)), call)
    }
}

#[cfg(test)]
mod tests {
    use super::clean_title;

    #[test]
    fn model_titles_are_cleaned_to_five_words() {
        assert_eq!(
            clean_title("\"Quarterly Warehouse Audit Plan.\"").as_deref(),
            Some("Quarterly Warehouse Audit Plan")
        );
        assert_eq!(clean_title("Title: One two three four five six seven").as_deref(), Some("One two three four five"));
        assert_eq!(clean_title("\n\n## Booking app\nmore").as_deref(), Some("Booking app"));
        assert_eq!(clean_title("  \"\"  "), None);
    }
}
