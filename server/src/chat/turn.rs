//! One chat turn. The person's message is saved before the model is called; the turn then runs detached from
//! the HTTP connection, so closing the tab never loses the answer. Progress (text so far and events) is handed
//! to the store every [`FLUSH_EVERY`] (`Store::submit_progress`), which commits it with other turns' progress,
//! so a crash keeps the partial answer (as `interrupted`) and, on a store shared by several instances, any of
//! them can replay the events to a client that re-attaches, while the relay itself never waits for the store.

use std::{collections::HashSet, sync::Arc, time::Duration};

use app::api::{
    Artifact, CallPurpose, ChatEvent, ChatRequest, Message, MessageStatus, Role as ApiRole, TraceStep, Usage,
    MAX_MESSAGE_CHARS,
};
use futures::StreamExt;
use tokio::sync::oneshot;
use tokio::time::Instant;
use uuid::Uuid;

use app::api::validate::Invalid;

use super::context::{self, ContextRecord, OpenRequest};
use super::engine::Engine;
use super::error::{busy_or, ChatError};
use super::hub::{LiveTurn, TurnHub};
use super::prompt;
use super::summary;
use super::title::{Naming, DEFAULT_TITLE};
use super::tools::{self, ToolContext};
use super::trace::{self, CallTiming};
use crate::llm::{self, LlmError, Part, StreamEvent};
use crate::store::{
    self, AnswerDraft, FinalAnswer, MessageUpdate, NewMessage, SpentTokens, Store, StoreError, StoredEvent, TurnEnd,
    TurnProgress, TurnStart, TurnTrace,
};

/// How often a running turn hands its progress over to be written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(250);
/// How often a running turn proves it is alive (and learns about stop requests from other instances).
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(2);
/// A turn whose heartbeat is older than this is taken to be dead (its instance crashed).
pub const STALE_AFTER_MS: i64 = 30_000;
/// Most provider -> tools rounds in one turn.
pub const MAX_ROUNDS: usize = 5;

impl Engine {
    /// The text of a person's message as it is stored: checked (not empty, not too long) and, when so
    /// configured, with personal data replaced.
    pub fn person_message(&self, content: &str) -> Result<String, ChatError> {
        let content = app::api::validate::message(content, MAX_MESSAGE_CHARS)?;
        // Personal data is replaced before the message is stored or reaches a model.
        Ok(if self.limits.redact_pii { crate::privacy::redact(&content) } else { content })
    }

    /// Checks the request, takes the thread, saves the person's message and starts the turn in the background.
    pub async fn start(&self, user: Uuid, thread: Uuid, request: ChatRequest) -> Result<Arc<LiveTurn>, ChatError> {
        let content = self.person_message(&request.content)?;
        let message = NewMessage {
            thread_id: thread,
            role: ApiRole::User,
            content,
            status: MessageStatus::Complete,
            usage: Usage::default(),
            model: None,
        };
        let opening = match (request.edit_of, request.artifact_generation.unwrap_or(false)) {
            (Some(_), true) => {
                return Err(Invalid::new("edit_of", "A silent generation edits no message.").into());
            }
            (Some(edited), false) => {
                // Checked before the thread is taken; the message stays, and the new version goes beside it.
                let parent = edited_message(self.store.as_ref(), user, thread, edited).await?;
                Opening::Edit { parent, message }
            }
            (None, true) => Opening::Silent(message.content),
            (None, false) => Opening::Message(message),
        };
        launch(self, user, thread, opening).await
    }

    /// Another answer to the question `answer` answered: an ordinary turn whose answer is a sibling of it, the
    /// old branch kept.
    pub async fn regenerate(&self, user: Uuid, thread: Uuid, answer: Uuid) -> Result<Arc<LiveTurn>, ChatError> {
        let question = answered_question(self.store.as_ref(), user, thread, answer).await?;
        launch(self, user, thread, Opening::Again(question)).await
    }

    /// Runs the turn of a stored message again, after its answer failed, without storing the message again. The
    /// failed attempt's partial answer, if one was kept, makes way for the new one.
    pub async fn retry(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<Arc<LiveTurn>, ChatError> {
        // Checked before the thread is taken, so a refused retry leaves the last turn as it is; and again once it is
        // taken, against a retry that ran meanwhile.
        failed_attempt(self.store.as_ref(), user, thread, message).await?;
        launch(self, user, thread, Opening::Retry(message)).await
    }
}

/// The message to run again and the failed answers that followed it. Only the person's latest message can be,
/// when every answer after it failed and it made no document; another thread's message is missing.
async fn failed_attempt(
    store: &dyn Store,
    user: Uuid,
    thread: Uuid,
    message: Uuid,
) -> Result<(Message, Vec<Uuid>), ChatError> {
    let request = store.get_message(user, message).await?;
    if request.thread_id != thread || request.role != ApiRole::User {
        return Err(ChatError::NotFound);
    }
    let (tree, fulfilled) = tokio::try_join!(store.message_tree(user, thread), store.fulfilled_requests(user, thread))?;
    // The messages after it on the shown path.
    let path = tree.path();
    let Some(at) = path.iter().position(|h| h.id == message) else {
        return Err(ChatError::NotRetryable("Only a message of the branch shown can be sent again."));
    };
    let on_path = path.iter().map(|h| h.id).collect();
    let fulfilled = context::fulfilled_on(&fulfilled, &on_path);
    let later: Vec<Uuid> = path[at + 1..].iter().map(|h| h.id).collect();
    let answers = store.messages_by_id(user, thread, &later).await?;
    let first = &request;
    let failed = |m: &Message| {
        m.role == ApiRole::Assistant && matches!(m.status, MessageStatus::Interrupted | MessageStatus::Error)
    };
    if !answers.iter().all(failed) {
        return Err(ChatError::NotRetryable(
            "Only the latest message can be sent again, and only when its answer failed.",
        ));
    }
    if fulfilled.contains(&message) {
        return Err(ChatError::NotRetryable("This request already made its document."));
    }
    Ok((first.clone(), later))
}

/// The parent of the person's message `edited`, which an edit goes beside; another thread's message, or an
/// answer, is missing.
async fn edited_message(store: &dyn Store, user: Uuid, thread: Uuid, edited: Uuid) -> Result<Option<Uuid>, ChatError> {
    let message = store.get_message(user, edited).await?;
    if message.thread_id != thread || message.role != ApiRole::User {
        return Err(ChatError::NotFound);
    }
    Ok(message.parent_id)
}

/// The person's message `answer` answers, which a new answer follows; another thread's message, a person's
/// message, or an answer that follows none, is missing.
async fn answered_question(store: &dyn Store, user: Uuid, thread: Uuid, answer: Uuid) -> Result<Uuid, ChatError> {
    let message = store.get_message(user, answer).await?;
    if message.thread_id != thread || message.role != ApiRole::Assistant {
        return Err(ChatError::NotFound);
    }
    let question = store.get_message(user, message.parent_id.ok_or(ChatError::NotFound)?).await?;
    if question.role != ApiRole::User {
        return Err(ChatError::NotFound);
    }
    Ok(question.id)
}

/// What a turn starts from.
enum Opening {
    /// A message the person sends now, saved in the commit that takes the thread.
    Message(NewMessage),
    /// Silent generation: the request is never stored.
    Silent(String),
    /// A stored message whose turn failed.
    Retry(Uuid),
    /// Edit and resend: a new version of a person's message, saved after `parent` (beside the old version).
    Edit { parent: Option<Uuid>, message: NewMessage },
    /// Regenerate: another answer to a stored message of the person's.
    Again(Uuid),
}

/// Takes the thread and starts the turn in the background.
///
/// A new message or a silent generation knows what the model is asked before the thread is taken: its model
/// call opens while the start commits (the conversation read as it was before the message, which is added in
/// memory), so the first words do not wait for the database. The call's answer is held, not relayed, until the
/// commit answers; a refused or failed start drops it (closing the provider's connection) and answers with the
/// start's error, nothing saved. The other openings change the conversation once it is taken, so they open their
/// call after the commit.
async fn launch(engine: &Engine, user: Uuid, thread: Uuid, opening: Opening) -> Result<Arc<LiveTurn>, ChatError> {
    let turn_id = Uuid::now_v7();
    // The start and the turn run in a task of their own, which the request going away (a client disconnecting
    // while it waits) never cuts short: a conversation taken for a turn always gets the turn, which frees it when
    // it ends.
    let (started, on_start) = oneshot::channel();
    let engine = engine.clone();
    tokio::spawn(async move {
        let live = LiveTurn::new(turn_id, thread, user);
        let message_id = Uuid::now_v7();
        // The turn row and the person's message are one transaction: one commit before anything is relayed.
        let start = TurnStart {
            user,
            thread,
            turn: turn_id,
            stale_after_ms: STALE_AFTER_MS,
            request: match &opening {
                Opening::Message(message) => Some(message.clone()),
                Opening::Silent(_) | Opening::Retry(_) | Opening::Edit { .. } | Opening::Again(_) => None,
            },
            message_id,
        };
        let early = match &opening {
            Opening::Message(message) => Some((message.content.clone(), false)),
            Opening::Silent(content) => Some((content.clone(), true)),
            Opening::Retry(_) | Opening::Edit { .. } | Opening::Again(_) => None,
        };
        let early = early.filter(|_| engine.opens_early(user, thread)).map(|(content, silent)| {
            let pending = (!silent).then(|| context::pending_message(message_id, thread, &content));
            let request_message = pending.as_ref().map(|m| m.id);
            let plan = Plan { user, thread, silent, content, request_message, name_thread: None };
            (Turn::new(&engine, live.clone(), plan), pending)
        });
        let mut started = Some(started);
        // Told as soon as the start has committed, so the person can stop the turn while its model call opens.
        let held = |begun: &store::Result<Option<Message>>| {
            begun.is_ok().then(|| hold(&engine, &live, started.take().expect("the start is told once")))
        };
        let (begun, holding, early) = match early {
            Some((mut turn, pending)) => {
                let begin = engine.store.start_turn(start, &engine.limits.turns);
                let (begun, holding, opened) = turn.open_beside(begin, pending.as_ref(), held).await;
                (begun, holding, opened.map(|opened| (turn, opened)))
            }
            None => (engine.store.start_turn(start, &engine.limits.turns).await, None, None),
        };
        let saved = match begun {
            Ok(message) => message,
            Err(e) => {
                engine.refused(user);
                if let Some(started) = started.take() {
                    let _ = started.send(Err(busy_or(e)));
                }
                return;
            }
        };
        let first = saved.as_ref().is_some_and(|m| m.seq == 1);
        let (_held, mut turn, opened) = match early {
            Some((turn, opened)) => (holding.expect("held when it began"), turn, Some(opened)),
            None => {
                // However the task ends (a panic too), the store lets go of what the turn handed over and did not
                // take into its end.
                let handed_over = HandedOver { store: engine.store.clone(), turn: turn_id };
                let started = started.take().expect("the start is told once");
                match plan_taken(&engine, user, thread, opening, saved).await {
                    Ok(plan) => {
                        let holding =
                            Held { _handed_over: handed_over, _registered: register(&engine, &live, started) };
                        (holding, Turn::new(&engine, live.clone(), plan), None)
                    }
                    Err(e) => {
                        if let Err(e) = engine.store.finish_turn(turn_id, TurnEnd::default()).await {
                            tracing::error!(error = %e, "closing a refused turn failed");
                        }
                        let _ = started.send(Err(e));
                        return;
                    }
                }
            }
        };
        // A conversation is named at its first message, unless it already has a title of its own. (Read only
        // then: the start above already refused a conversation that is missing or another person's.)
        if first {
            match engine.store.get_thread(user, thread).await {
                Ok(row) => turn.plan.name_thread = Some(row.title),
                Err(e) => tracing::warn!(error = %e, "reading the conversation's title failed; it is not named"),
            }
        }
        let opened = match opened {
            Some(opened) => opened,
            None => Box::pin(turn.open(None)).await,
        };
        turn.run(opened).await;
    });
    on_start.await.map_err(|_| ChatError::Internal(anyhow::anyhow!("the turn ended before it started")))?
}

/// What a started turn holds until its task ends, however it ends (a panic too).
struct Held {
    /// The store lets go of what the turn handed over and did not take into its end.
    _handed_over: HandedOver,
    /// The turn's place in the hub.
    _registered: Registered,
}

/// A committed start's turn, held and told to the person.
fn hold(engine: &Engine, live: &Arc<LiveTurn>, started: oneshot::Sender<Result<Arc<LiveTurn>, ChatError>>) -> Held {
    let handed_over = HandedOver { store: engine.store.clone(), turn: live.id };
    Held { _handed_over: handed_over, _registered: register(engine, live, started) }
}

/// Puts the turn into the hub and tells the person it started. Kept alive by the hub's heartbeat
/// (`hub::keep_alive`) while it is in the hub, and taken out of it when the returned place is dropped, so a dead
/// turn never holds its conversation for longer than the stale limit.
fn register(
    engine: &Engine,
    live: &Arc<LiveTurn>,
    started: oneshot::Sender<Result<Arc<LiveTurn>, ChatError>>,
) -> Registered {
    engine.hub.insert(live.clone());
    let registered = Registered { hub: engine.hub.clone(), live: live.clone() };
    let _ = started.send(Ok(live.clone()));
    registered
}

/// With the thread taken: what the turn answers, once the opening's changes to the conversation are made.
async fn plan_taken(
    engine: &Engine,
    user: Uuid,
    thread: Uuid,
    opening: Opening,
    saved: Option<Message>,
) -> Result<Plan, ChatError> {
    // A stored message to answer: the turn's answer goes after it.
    let stored = |request: Message| (request.content, false, Some(request.id));
    let store = engine.store.as_ref();
    let (content, silent, request_message) = match opening {
        Opening::Message(message) => (message.content, false, saved.map(|m| m.id)),
        Opening::Silent(content) => (content, true, None),
        Opening::Retry(message) => Box::pin(take_over_failed(store, user, thread, message)).await.map(stored)?,
        Opening::Edit { parent, message } => {
            Box::pin(branch_off(store, user, thread, parent, message)).await.map(stored)?
        }
        Opening::Again(question) => Box::pin(answer_again(store, user, thread, question)).await.map(stored)?,
    };
    Ok(Plan { user, thread, silent, content, request_message, name_thread: None })
}

/// With the thread taken for a retry: checks the message can still be run again and removes what the failed
/// attempt left; the message to answer.
async fn take_over_failed(store: &dyn Store, user: Uuid, thread: Uuid, message: Uuid) -> Result<Message, ChatError> {
    let (request, failed) = failed_attempt(store, user, thread, message).await?;
    // The first failed answer's subtree holds the others.
    if let Some(answer) = failed.first() {
        store.delete_message(user, thread, *answer, None).await?;
    }
    // The new answer follows the message, whatever other answers it has.
    store.set_active(user, thread, Some(request.id), None).await?;
    Ok(request)
}

/// With the thread taken for an edit: saves the new version of the person's message after `parent` (beside the
/// version it replaces); the message to answer.
async fn branch_off(
    store: &dyn Store,
    user: Uuid,
    thread: Uuid,
    parent: Option<Uuid>,
    message: NewMessage,
) -> Result<Message, ChatError> {
    store.set_active(user, thread, parent, None).await?;
    Ok(store.append_message(user, message).await?)
}

/// With the thread taken for another answer: the question, which the new answer follows.
async fn answer_again(store: &dyn Store, user: Uuid, thread: Uuid, question: Uuid) -> Result<Message, ChatError> {
    store.set_active(user, thread, Some(question), None).await?;
    Ok(store.get_message(user, question).await?)
}

/// A turn's place in the hub, given up when dropped.
struct Registered {
    hub: Arc<TurnHub>,
    live: Arc<LiveTurn>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.hub.remove(&self.live);
    }
}

/// What a turn handed over to the store, let go of when dropped (see [`Store::abandon_progress`]); nothing is
/// left of a turn that ended.
struct HandedOver {
    store: store::DynStore,
    turn: Uuid,
}

impl Drop for HandedOver {
    fn drop(&mut self) {
        self.store.abandon_progress(self.turn);
    }
}

struct Plan {
    user: Uuid,
    thread: Uuid,
    silent: bool,
    content: String,
    request_message: Option<Uuid>,
    /// Set on a thread's first message: its current title.
    name_thread: Option<String>,
}

/// What a turn asks the model, and its first call, open.
struct Opened {
    system: String,
    messages: Vec<llm::Message>,
    tools: tools::Offered,
    call: (llm::EventStream, CallTiming),
}

/// How the model part of a turn ended.
enum Ending {
    Done,
    Stopped,
    Failed(LlmError),
}

struct Turn<'a> {
    engine: &'a Engine,
    /// The model answering: the conversation's, else the person's default, else the server's.
    provider: Arc<dyn llm::Provider>,
    /// Whether the model names the conversation once it has answered.
    title_by_model: bool,
    live: Arc<LiveTurn>,
    plan: Plan,
    text: String,
    usage: Usage,
    artifacts: Vec<Artifact>,
    /// The requests for documents the model sees (what a document made in this turn may answer).
    open_requests: Vec<OpenRequest>,
    /// The messages of the shown path the turn answers on (which documents are this branch's).
    path: HashSet<Uuid>,
    trace: Vec<TraceStep>,
    /// Set once a draft of the answer was handed over: the id it is saved under.
    assistant_id: Option<Uuid>,
    context: Option<ContextRecord>,
    /// The conversation's summary being written anew beside the answer (see [`summary::Summariser::carry`]):
    /// the turn ends after it, so the next turn finds it.
    summary_refresh: Option<tokio::task::JoinHandle<()>>,
    /// Whether the context record went out with a draft (it is sent once, and again with the final answer).
    context_sent: bool,
    /// The last event handed over to be written.
    flushed_events: i64,
    last_flush: Instant,
    flushed_text_len: usize,
}

impl<'a> Turn<'a> {
    fn new(engine: &'a Engine, live: Arc<LiveTurn>, plan: Plan) -> Self {
        Self {
            engine,
            provider: engine.models.default_provider(),
            title_by_model: false,
            live,
            plan,
            text: String::new(),
            usage: Usage::default(),
            artifacts: Vec::new(),
            open_requests: Vec::new(),
            path: HashSet::new(),
            trace: Vec::new(),
            assistant_id: None,
            context: None,
            summary_refresh: None,
            context_sent: false,
            flushed_events: 0,
            last_flush: Instant::now(),
            flushed_text_len: 0,
        }
    }

    fn model(&self) -> String {
        self.provider.model().to_string()
    }

    /// Names the conversation at its first message.
    fn naming(&self) -> Naming<'a> {
        Naming {
            engine: self.engine,
            provider: self.provider.clone(),
            live: self.live.clone(),
            user: self.plan.user,
            thread: self.plan.thread,
            content: self.plan.content.clone(),
        }
    }

    /// The steps a turn takes once (naming, loading the conversation, running a tool, saving the end) are boxed
    /// where they are awaited: a future is as large as its largest step, and a turn spends nearly all its life
    /// waiting for the model's next words, thousands of turns at once (this halves a waiting turn's task).
    async fn run(mut self, opened: Result<Opened, Ending>) {
        let ending = self.converse(opened).await;
        if self.title_by_model {
            let call = Box::pin(self.naming().by_model()).await;
            self.trace.push(call);
        }
        Box::pin(self.finish(ending)).await;
    }

    /// [`open`](Self::open) while `begin` (the start's commit) runs: what `begin` answered, what `begun` made of
    /// it the moment it answered and, unless it failed, what the opening did (a failed start drops the call,
    /// wherever it was).
    async fn open_beside<B, G>(
        &mut self,
        begin: B,
        pending: Option<&Message>,
        begun: impl FnOnce(&store::Result<Option<Message>>) -> G,
    ) -> (store::Result<Option<Message>>, G, Option<Result<Opened, Ending>>)
    where
        B: std::future::Future<Output = store::Result<Option<Message>>>,
    {
        let mut begin = std::pin::pin!(begin);
        let mut open = Box::pin(self.open(pending));
        let mut opened = None;
        let answer = loop {
            tokio::select! {
                answer = begin.as_mut() => break answer,
                done = open.as_mut(), if opened.is_none() => opened = Some(done),
            }
        };
        let made = begun(&answer);
        if answer.is_err() {
            return (answer, made, None);
        }
        let opened = match opened {
            Some(opened) => opened,
            None => open.await,
        };
        (answer, made, Some(opened))
    }

    /// Reads what the model is asked (the conversation, the person's settings and the tools on offer, none
    /// waiting for another), chooses the model and opens the first call.
    async fn open(&mut self, pending: Option<&Message>) -> Result<Opened, Ending> {
        let store = self.engine.store.clone();
        let (user, thread) = (self.plan.user, self.plan.thread);
        let (built, settings, tools) = tokio::join!(
            Box::pin(self.load_context(pending)),
            store.turn_settings(user, thread),
            Box::pin(tools::Offered::for_thread(&store, user, thread))
        );
        let built =
            built.map_err(|e| Ending::Failed(LlmError::Protocol(format!("could not load the conversation: {e}"))))?;
        let settings =
            settings.map_err(|e| Ending::Failed(LlmError::Protocol(format!("could not load the settings: {e}"))))?;
        // A choice no longer on offer (the providers changed since) gives way to the next.
        let choices = [settings.thread_model.as_deref(), settings.settings.default_model.as_deref()];
        self.provider = self.engine.models.choose(&choices).await;
        let messages = Box::pin(self.history(built)).await;
        // The person's custom instructions go below Quire's rules, which keep their priority.
        let system = prompt::system_prompt_with(&settings.settings.custom_instructions);
        let call = self.call(&system, &messages, &tools).await?;
        Ok(Opened { system, messages, tools, call })
    }

    /// Opens one model call: its stream of events and its timing.
    async fn call(
        &mut self,
        system: &str,
        messages: &[llm::Message],
        tools: &tools::Offered,
    ) -> Result<(llm::EventStream, CallTiming), Ending> {
        let request = llm::ChatRequest {
            system: system.to_string(),
            messages: messages.to_vec(),
            tools: tools.specs(),
            max_tokens: 4096,
        };
        let timing = CallTiming::start(CallPurpose::Answer);
        let (live, provider) = (self.live.clone(), self.provider.clone());
        let started = tokio::select! {
            biased;
            () = live.cancelled() => return Err(self.end_call(timing, Ending::Stopped)),
            r = provider.stream(request) => r,
        };
        match started {
            Ok(stream) => Ok((stream, timing)),
            Err(e) => Err(self.end_call(timing, Ending::Failed(e))),
        }
    }

    /// The model conversation: provider -> tools -> provider, at most [`MAX_ROUNDS`] rounds, the first call
    /// already open.
    async fn converse(&mut self, opened: Result<Opened, Ending>) -> Ending {
        // A title the model has to write is asked for after the answer, so it never delays the answer's first
        // words; any other is known at once.
        if let Some(current) = self.plan.name_thread.take() {
            if current == DEFAULT_TITLE && self.provider.names_threads() {
                self.title_by_model = true;
            } else {
                Box::pin(self.naming().known(current)).await;
            }
        }
        let Opened { system, mut messages, tools, call } = match opened {
            Ok(opened) => opened,
            Err(ending) => return ending,
        };
        // One wait for a stop serves the whole conversation rather than one per delta (each subscribes to the
        // stop signal).
        let live = self.live.clone();
        let mut cancelled = std::pin::pin!(async move { live.cancelled().await });
        let mut next = Some(call);
        for _round in 0..MAX_ROUNDS {
            let (mut stream, mut timing) = match next.take() {
                Some(call) => call,
                None => match self.call(&system, &messages, &tools).await {
                    Ok(call) => call,
                    Err(ending) => return ending,
                },
            };
            let mut calls = Vec::new();
            let mut round_text = String::new();
            loop {
                let next = tokio::select! {
                    biased;
                    () = cancelled.as_mut() => return self.end_call(timing, Ending::Stopped),
                    n = stream.next() => n.map(|event| event.map(StreamEvent::without_nul)),
                };
                match next {
                    None => break,
                    Some(Ok(StreamEvent::TextDelta(delta))) => {
                        if delta.is_empty() {
                            continue;
                        }
                        timing.output();
                        // The text of a round after another's starts a paragraph of its own.
                        let gap = if round_text.is_empty() { paragraph_break(&self.text) } else { "" };
                        round_text.push_str(&delta);
                        let delta = if gap.is_empty() { delta } else { format!("{gap}{delta}") };
                        self.text.push_str(&delta);
                        if !self.plan.silent {
                            self.live.push(ChatEvent::TextDelta { text: delta });
                        }
                        self.checkpoint(false);
                    }
                    Some(Ok(StreamEvent::ToolCall(call))) => {
                        timing.output();
                        calls.push(call);
                    }
                    Some(Ok(StreamEvent::Usage(u))) => {
                        timing.add_usage(u);
                        self.usage.input_tokens += u.input_tokens;
                        self.usage.output_tokens += u.output_tokens;
                    }
                    Some(Ok(StreamEvent::Stop(reason))) => timing.stopped_by_model(reason),
                    Some(Err(e)) => return self.end_call(timing, Ending::Failed(e)),
                }
            }
            self.trace.push(timing.step(self.provider.as_ref(), None));
            if calls.is_empty() {
                return Ending::Done;
            }
            let mut assistant_parts = Vec::new();
            if !round_text.is_empty() {
                assistant_parts.push(Part::Text { text: round_text });
            }
            let mut results = Vec::new();
            for call in calls {
                assistant_parts.push(Part::ToolCall(call.clone()));
                let (result, is_error) = Box::pin(self.run_tool(&call.name, &call.arguments)).await;
                results.push(Part::ToolResult { call_id: call.id.clone(), content: result, is_error });
            }
            messages.push(llm::Message { role: llm::Role::Assistant, parts: assistant_parts });
            messages.push(llm::Message { role: llm::Role::User, parts: results });
            self.checkpoint(true);
        }
        Ending::Done
    }

    /// Keeps a model call that ended the model conversation (stopped or failed) in the trace.
    fn end_call(&mut self, mut timing: CallTiming, ending: Ending) -> Ending {
        let error = match &ending {
            Ending::Failed(e) => Some(e),
            Ending::Stopped => {
                timing.stopped_by_person();
                None
            }
            Ending::Done => None,
        };
        self.trace.push(timing.step(self.provider.as_ref(), error));
        ending
    }

    async fn run_tool(&mut self, name: &str, input: &serde_json::Value) -> (String, bool) {
        self.live.push(ChatEvent::ToolExecuting { tool: name.to_string(), input: input.clone() });
        let started_at = store::now();
        let clock = Instant::now();
        let mut ctx = ToolContext {
            store: &self.engine.store,
            user: self.plan.user,
            thread: self.plan.thread,
            request_message: self.plan.request_message,
            open_requests: &self.open_requests,
            one_document: self.plan.silent,
            saved: &mut self.artifacts,
            redact_pii: self.engine.limits.redact_pii,
            path: &self.path,
        };
        let (result, is_error, artifact) = match name {
            tools::SAVE_ARTIFACT => {
                let outcome = tools::save_artifact(&mut ctx, input).await;
                let created = outcome.created.then_some(outcome.artifact).flatten();
                (outcome.result, outcome.is_error, created)
            }
            tools::DOCUMENT_SEARCH => {
                let (outcome, passages) = tools::document_search(&ctx, input).await;
                if let Some(record) = self.context.as_mut() {
                    record.passages.extend(passages);
                }
                (outcome.result, outcome.is_error, None)
            }
            other => (format!("Unknown tool '{other}'."), true, None),
        };
        if let Some(artifact) = artifact {
            self.live.push(ChatEvent::ArtifactCreated { artifact });
        }
        self.trace.push(trace::tool_step(name, input, &result, is_error, started_at, clock));
        (result, is_error)
    }

    /// The conversation as the model sees it (see [`context::build`]): fulfilled requests are left out, the
    /// rest fits the token budget; a silent request adds its instruction without storing it.
    async fn load_context(&self, pending: Option<&Message>) -> Result<context::BuiltContext, StoreError> {
        let ephemeral = self
            .plan
            .silent
            .then(|| format!("{}\n\n{}", self.plan.content, prompt::silent_generation_instruction("requested")));
        context::load(
            self.engine.store.as_ref(),
            self.plan.user,
            self.plan.thread,
            self.engine.limits.context_tokens,
            ephemeral.as_deref(),
            pending,
        )
        .await
    }

    /// The loaded conversation with its summary, as the chosen model sees it; the record of what it saw kept.
    async fn history(&mut self, mut built: context::BuiltContext) -> Vec<llm::Message> {
        let summariser = summary::Summariser {
            store: self.engine.store.clone(),
            provider: self.provider.clone(),
            redact: self.engine.limits.redact_pii,
        };
        self.summary_refresh = summariser.carry(self.plan.user, self.plan.thread, &mut built).await;
        self.open_requests = built.open_requests;
        self.path = built.path;
        let mut record = built.record;
        record.provider = self.provider.name().to_string();
        record.model = self.model();
        self.context = Some(record);
        built.messages
    }

    /// Hands progress over to be written: the events so far and, for a typed turn, the answer so far (as
    /// `interrupted`, which is what it stays if this process dies now; kept out of the search index until
    /// [`finish`](Self::finish) saves it whole). Never waits for the store.
    fn checkpoint(&mut self, force: bool) {
        if !force && self.last_flush.elapsed() < FLUSH_EVERY {
            return;
        }
        self.last_flush = Instant::now();
        let events = self.fresh_events();
        let answer = (!self.plan.silent && self.text.len() != self.flushed_text_len).then(|| {
            self.flushed_text_len = self.text.len();
            let with_context = !std::mem::replace(&mut self.context_sent, true);
            self.draft(MessageStatus::Interrupted, with_context, true)
        });
        if events.is_empty() && answer.is_none() {
            return;
        }
        self.engine.store.submit_progress(TurnProgress { turn: self.live.id, user: self.plan.user, events, answer });
    }

    /// The events not handed over yet, as stored.
    fn fresh_events(&mut self) -> Vec<StoredEvent> {
        let fresh: Vec<StoredEvent> = self
            .live
            .events_after(self.flushed_events)
            .into_iter()
            .map(|(seq, e)| StoredEvent { seq, name: e.name().to_string(), data: e.data_json() })
            .collect();
        if let Some(last) = fresh.last() {
            self.flushed_events = last.seq;
        }
        fresh
    }

    /// The answer as it stands, under the id it is (or will be) saved with; `writing` while more is to come.
    fn draft(&mut self, status: MessageStatus, with_context: bool, writing: bool) -> AnswerDraft {
        let id = *self.assistant_id.get_or_insert_with(Uuid::now_v7);
        AnswerDraft {
            id,
            thread_id: self.plan.thread,
            update: MessageUpdate {
                content: self.text.clone(),
                status,
                usage: self.usage,
                model: Some(self.model()),
                context: if with_context {
                    self.context.as_ref().and_then(|c| serde_json::to_value(c).ok())
                } else {
                    None
                },
            },
            writing,
        }
    }

    async fn finish(mut self, ending: Ending) {
        let user = self.plan.user;
        let status = match &ending {
            Ending::Done => MessageStatus::Complete,
            Ending::Stopped => MessageStatus::Stopped,
            Ending::Failed(_) => MessageStatus::Interrupted,
        };
        // A silent turn saves no message; a failed turn that produced nothing saves none either.
        let keep_answer = !self.plan.silent
            && (matches!(ending, Ending::Done) || !self.text.is_empty() || self.assistant_id.is_some());
        // A refresh of the summary started beside the answer, bounded in time, is usually done by now; a turn
        // that was stopped or failed does not wait for it.
        if let Some(refresh) = self.summary_refresh.take() {
            if matches!(ending, Ending::Done) {
                let _ = refresh.await;
            } else {
                refresh.abort();
            }
        }
        // The final save: the answer enters the search index here.
        let answer = keep_answer.then(|| self.draft(status, true, false));
        let message_id = answer.as_ref().map(|a| a.id);
        if let Ending::Failed(e) = &ending {
            tracing::warn!(code = e.code(), error = %e, reference = %self.live.id, "model failed during a turn");
        }
        let mut last_event = self.ending_event(&ending, message_id);
        // Whatever was handed over and not written yet goes with them (see `Store::finish_turn`).
        let mut events = self.fresh_events();
        let seq = self.live.next_seq();
        let stored = |event: &ChatEvent| StoredEvent { seq, name: event.name().to_string(), data: event.data_json() };
        events.push(stored(&last_event));
        // The answer, its documents and trace, the tokens spent, the last events and the turn's closing are one
        // commit, stored before anyone is told: a client that sends its next message right after
        // `message_complete` finds the thread free, and a listener elsewhere finds all of it.
        let end = TurnEnd {
            events: events.clone(),
            answer: answer.map(|draft| FinalAnswer {
                user,
                draft,
                artifacts: self.artifacts.iter().map(|a| a.id).collect(),
            }),
            usage: (self.usage != Usage::default()).then(|| SpentTokens {
                user,
                thread: self.plan.thread,
                model: self.model(),
                usage: self.usage,
            }),
            trace: (!self.trace.is_empty()).then(|| TurnTrace {
                user,
                thread: self.plan.thread,
                steps: std::mem::take(&mut self.trace),
            }),
        };
        if let Err(e) = self.engine.store.finish_turn(self.live.id, end).await {
            // The turn is closed all the same, so its conversation is free: the answer keeps its last saved draft
            // (`interrupted`), which closing lets into the search index.
            tracing::error!(error = %e, "saving the end of a turn failed");
            last_event = self.ending_event(&ending, None);
            events.pop();
            events.push(stored(&last_event));
            if let Err(e) = self.engine.store.finish_turn(self.live.id, TurnEnd { events, ..TurnEnd::default() }).await
            {
                tracing::error!(error = %e, "closing the turn failed");
            }
        }
        self.live.push(last_event);
    }

    /// The event that tells how the turn ended; `message_id` is the answer's, when it was saved.
    fn ending_event(&self, ending: &Ending, message_id: Option<Uuid>) -> ChatEvent {
        match ending {
            // The details are in the log under the turn's id, which the message gives as its reference.
            Ending::Failed(e) => ChatEvent::Error {
                code: e.code().to_string(),
                message: format!("{} (Reference: {}.)", e.public_message(), self.live.id),
            },
            Ending::Done if self.plan.silent && self.artifacts.is_empty() => ChatEvent::Error {
                code: "no_artifact".into(),
                message: "The assistant did not produce a document. Try again, or ask for it in the chat.".into(),
            },
            Ending::Done | Ending::Stopped => ChatEvent::MessageComplete {
                message_id,
                usage: self.usage,
                stopped: matches!(ending, Ending::Stopped),
                model: message_id.map(|_| self.model()),
            },
        }
    }
}

/// What goes between the text so far and the text of the next round of the answer, so the two are separate
/// paragraphs: nothing when there is no text yet or it already ends in a blank line.
fn paragraph_break(text: &str) -> &'static str {
    if text.is_empty() || text.ends_with("\n\n") {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    }
}

#[cfg(test)]
mod tests {
    use super::paragraph_break;

    #[test]
    fn a_later_round_starts_a_paragraph_of_its_own() {
        assert_eq!(paragraph_break(""), "", "nothing to separate from");
        assert_eq!(
            format!("I'll draft it now.{}I've saved it.", paragraph_break("I'll draft it now.")),
            "I'll draft it now.\n\nI've saved it."
        );
        assert_eq!(paragraph_break("A list:\n"), "\n");
        assert_eq!(paragraph_break("Done.\n\n"), "");
    }
}
