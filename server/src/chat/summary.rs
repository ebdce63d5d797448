//! The summary that stands in for the turns of a long conversation left out of the model's context.
//!
//! When turns first drop out to fit the token budget, the model (or, with no model configured, the built-in
//! assistant) writes a short summary of them, stored with the conversation together with the number of the
//! newest message it covers. When more turns drop out later, only those are summarised, together with the
//! summary before them. The summary travels in the note that takes the dropped turns' place (see
//! [`BuiltContext::carry_summary`]); what each one cost is counted like any other use of the model.
//!
//! The first summary of a conversation is written before the turn's own model call (without it the model would
//! see the plain note only). Later refreshes never delay an answer: the turn carries the summary it has, and the
//! refresh runs beside it, for the turns after. Either is bounded in what it reads, in what it writes and in time,
//! and a summary that cannot be written leaves the earlier summary (or the plain note) in its place.

use std::{collections::HashSet, sync::Arc, time::Duration};

use futures::StreamExt;
use uuid::Uuid;
use wire::{Role, Usage};

use super::context::BuiltContext;
use super::spend::Spend;
use llm::tokens::count_tokens;
use llm::{
    self,
    summary::{request, SummarySource},
    Meter, Provider, StreamEvent,
};
use store::{DynStore, MessageHead, NewSummary, SpentTokens};

/// How long writing a summary may take (the first one delays its turn's answer by at most this much).
pub const SUMMARY_TIMEOUT: Duration = Duration::from_secs(8);
/// Most tokens a summary is written in.
pub const SUMMARY_MAX_TOKENS: u32 = 400;
/// Most tokens of dropped messages read for one summary: the newest of them, when more dropped at once (an
/// imported conversation, a smaller budget); the older ones count as covered.
const SOURCE_TOKENS: usize = 6_000;
/// Most dropped messages read for one summary.
const SOURCE_MESSAGES: usize = 100;
/// Most characters of one message read for a summary.
const SOURCE_MESSAGE_CHARS: usize = 4_000;
/// Most characters of a stored summary.
const SUMMARY_CHARS: usize = 3_000;

/// Writes and keeps conversation summaries.
#[derive(Clone)]
pub struct Summariser {
    pub store: DynStore,
    pub provider: Arc<dyn Provider>,
    /// Whether personal data is redacted (`QUIRE_REDACT_PII`): a summary is the model's writing.
    pub redact: bool,
}

/// What a summary is written from: the messages dropped since the earlier summary, and what it will cover.
struct Refresh {
    user: Uuid,
    /// Who sent the turn that needs it: the call's tokens are theirs.
    payer: Uuid,
    thread: Uuid,
    earlier: Option<String>,
    /// The dropped messages it does not cover yet, in order.
    fresh: Vec<MessageHead>,
    /// The newest message number it will cover, and how many messages are numbered up to it.
    newest: i64,
    covered_count: i64,
}

impl Summariser {
    /// Puts the conversation's summary into the note of `built`. With no summary yet, the first is written
    /// now; a summary that does not cover every dropped turn is carried as it is and written anew in the
    /// background (`Some` of that task, for whoever wants to wait for it). Nothing happens when no turn was
    /// dropped.
    pub async fn carry(
        &self,
        (user, payer): (Uuid, Uuid),
        thread: Uuid,
        built: &mut BuiltContext,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let newest = built.dropped.last().map(|m| m.seq)?;
        let stored = match self.store.thread_summary(user, thread).await {
            Ok(stored) => stored,
            Err(e) => {
                tracing::warn!(error = %e, "reading the conversation's summary failed");
                None
            }
        };
        // A summary one of whose messages was deleted since may still tell of it, and one written on another
        // branch tells of messages this path does not have: either is written anew. (The newest message it
        // covers on this path means it covers this path's beginning, whatever the counts.)
        let stored = stored.filter(|s| {
            built.has_message_numbered(s.covers_through)
                && i64::try_from(built.messages_through(s.covers_through)) == Ok(s.covered_count)
        });
        if let Some(summary) = stored.as_ref().filter(|s| s.covers_through >= newest) {
            built.carry_summary(&summary.content);
            return None;
        }
        let since = stored.as_ref().map_or(i64::MIN, |s| s.covers_through);
        let refresh = Refresh {
            user,
            payer,
            thread,
            earlier: stored.map(|s| s.content),
            fresh: built.dropped.iter().filter(|m| m.seq > since).cloned().collect(),
            newest,
            covered_count: i64::try_from(built.messages_through(newest)).unwrap_or(i64::MAX),
        };
        if let Some(earlier) = refresh.earlier.as_deref() {
            built.carry_summary(earlier);
            let this = self.clone();
            return Some(tokio::spawn(async move {
                this.refresh(refresh).await;
            }));
        }
        if let Some(summary) = self.refresh(refresh).await {
            built.carry_summary(&summary);
        }
        None
    }

    /// Summarises the freshly dropped messages with the earlier summary and stores the result; `None` when no
    /// summary could be written.
    async fn refresh(&self, refresh: Refresh) -> Option<String> {
        let Refresh { user, payer, thread, earlier, fresh, newest, covered_count } = refresh;
        let earlier = earlier.as_deref();
        let fresh = &fresh[fresh.len().saturating_sub(SOURCE_MESSAGES)..];
        let first = fresh.first()?.seq;
        let wanted: HashSet<Uuid> = fresh.iter().map(|m| m.id).collect();
        let read = match self.store.list_messages_from(user, thread, first).await {
            Ok(messages) => messages,
            Err(e) => {
                tracing::warn!(error = %e, "reading the messages to summarise failed");
                return None;
            }
        };
        let sources = newest_within(
            read.into_iter()
                .filter(|m| wanted.contains(&m.id) && !m.content.trim().is_empty())
                .map(|m| SummarySource {
                    role: match m.role {
                        Role::User => llm::Role::User,
                        Role::Assistant => llm::Role::Assistant,
                    },
                    text: m.content.chars().take(SOURCE_MESSAGE_CHARS).collect(),
                })
                .collect(),
            SOURCE_TOKENS,
        );
        let (content, usage) = if sources.is_empty() {
            // Only blank answers dropped: the summary stays as it is, and now covers them too.
            (earlier?.to_string(), Usage::default())
        } else {
            let (text, spend) = self.ask((user, payer), thread, request(earlier, &sources, SUMMARY_MAX_TOKENS)).await?;
            let Some(content) = self.clean(&text) else {
                spend.record().await;
                return None;
            };
            // Tokens the provider reported go on the ledger with the summary; counted ones on their own, marked so.
            match spend.settle_reported() {
                Ok(usage) => (content, usage),
                Err(spend) => {
                    spend.record().await;
                    (content, Usage::default())
                }
            }
        };
        let summary = NewSummary {
            content,
            covers_through: newest,
            covered_count,
            model: self.provider.model().to_string(),
            usage,
            payer,
        };
        // On a task of its own, so that a refresh aborted while it saves (its turn stopped) loses neither the summary
        // nor its tokens; a summary that cannot be saved still puts its tokens on the ledger.
        let (store, model) = (self.store.clone(), summary.model.clone());
        let saving = summary.clone();
        let saved = tokio::spawn(async move {
            let Err(e) = store.save_thread_summary(user, thread, &saving).await else { return };
            tracing::warn!(error = %e, "saving the conversation's summary failed");
            if saving.usage != Usage::default() {
                let spent = SpentTokens { user, payer, thread, model, usage: saving.usage, counted_tokens: 0 };
                if let Err(e) = store.record_spent(&spent).await {
                    tracing::warn!(error = %e, "recording the tokens of a summary not saved failed");
                }
            }
        });
        let _ = saved.await;
        Some(summary.content)
    }

    /// The model's answer to a summary request, with its tokens still to be put on the ledger; `None` when it
    /// fails or takes too long, its tokens recorded. A call aborted with its task records them when dropped.
    async fn ask(
        &self,
        (user, payer): (Uuid, Uuid),
        thread: Uuid,
        request: llm::ChatRequest,
    ) -> Option<(String, Spend)> {
        let meter = Meter::new(&request);
        let spend = Spend::new(self.store.clone(), (user, payer), thread, self.provider.model(), meter.clone());
        let answer = async {
            let stream = self.provider.stream(request).await.map_err(|e| {
                if e.billed_nothing() {
                    meter.refused();
                }
                e.code()
            })?;
            let mut stream = meter.watch(stream);
            let mut text = String::new();
            while let Some(event) = stream.next().await {
                match event.map_err(|e| e.code())? {
                    StreamEvent::TextDelta(delta) => text.push_str(&delta),
                    StreamEvent::Usage(_)
                    | StreamEvent::ToolCall(_)
                    | StreamEvent::BrokenCall(_)
                    | StreamEvent::ReasoningDelta(_)
                    | StreamEvent::Stop(_) => {}
                }
            }
            Ok::<_, &'static str>(text)
        };
        let outcome = tokio::time::timeout(SUMMARY_TIMEOUT, answer).await;
        match outcome {
            Ok(Ok(text)) => Some((text, spend)),
            Ok(Err(code)) => {
                tracing::warn!(code, "writing the conversation's summary failed");
                spend.record().await;
                None
            }
            Err(_) => {
                tracing::warn!("writing the conversation's summary took too long");
                spend.record().await;
                None
            }
        }
    }

    /// The summary as stored: trimmed, bounded, redacted when so configured; `None` when nothing is left.
    fn clean(&self, text: &str) -> Option<String> {
        let text: String = text.trim().chars().take(SUMMARY_CHARS).collect();
        let text = if self.redact { crate::privacy::redact(&text) } else { text };
        (!text.trim().is_empty()).then_some(text)
    }
}

/// The newest of `sources` whose tokens add up to at most `budget` (the newest always).
fn newest_within(mut sources: Vec<SummarySource>, budget: usize) -> Vec<SummarySource> {
    let mut used = 0;
    let mut keep_from = sources.len();
    for (i, source) in sources.iter().enumerate().rev() {
        let tokens = count_tokens(&source.text);
        if keep_from < sources.len() && used + tokens > budget {
            break;
        }
        used += tokens;
        keep_from = i;
    }
    sources.split_off(keep_from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_sources_are_read_within_the_budget() {
        let source = |text: &str| SummarySource { role: llm::Role::User, text: text.into() };
        let sources = vec![source("one two three"), source("four five six"), source("seven eight nine")];
        let per = count_tokens("four five six");
        let kept = newest_within(sources.clone(), per * 2);
        assert_eq!(kept, sources[1..].to_vec());
        assert_eq!(newest_within(sources.clone(), 0), sources[2..].to_vec(), "the newest always");
        assert!(newest_within(Vec::new(), 10).is_empty());
    }
}
