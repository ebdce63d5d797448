//! One chat turn. The person's message is saved before the model is called; the turn then runs detached from
//! the HTTP connection, so closing the tab never loses the answer. Progress (text so far and events) is handed
//! to the store every [`FLUSH_EVERY`] (`Store::submit_progress`), which commits it with other turns' progress,
//! so a crash keeps the partial answer (as `interrupted`) and, on a store shared by several instances, any of
//! them can replay the events to a client that re-attaches, while the relay itself never waits for the store.

use std::{collections::HashSet, sync::Arc, time::Duration};

use futures::StreamExt;
use tokio::sync::oneshot;
use tokio::time::Instant;
use uuid::Uuid;
use wire::{Artifact, CallPurpose, ChatEvent, Message, MessageStatus, TraceStep, Usage};

pub use super::allowance::ANSWER_MAX_TOKENS;
use super::allowance::{self, CUT_OFF, OVER_BUDGET};
use super::approval;
use super::context::{self, ContextRecord, OpenRequest};
use super::engine::Engine;
use super::error::ChatError;
use super::hub::{LiveTurn, TurnHub};
pub use super::hub::{HEARTBEAT_EVERY, STALE_AFTER_MS};
use super::ledger;
use super::memory::{Basis, Source};
use super::prompt;
use super::summary;
use super::taken::{plan_taken, Opening, Plan, Writer};
use super::title::{Naming, DEFAULT_TITLE};
use super::tools::{self, ToolContext};
use super::trace::{self, CallTiming};
use llm::{LlmError, Meter, Part, StreamEvent};
use store::{
    self, AnswerDraft, EventRun, FinalAnswer, MessageUpdate, Place, SpentTokens, Started, StoreError, ThreadStamp,
    TurnEnd, TurnProgress, TurnStart, TurnTrace,
};

mod model_call;
mod tool_calls;

/// How often a running turn hands its progress over to be written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(250);
/// Most provider -> tools rounds in one turn.
pub const MAX_ROUNDS: usize = 5;
/// Takes the thread and starts the turn in the background.
///
/// A new message or a silent generation knows what the model is asked before the thread is taken: its model
/// call opens while the start commits (the conversation read as it was before the message, which is added in
/// memory), so the first words do not wait for the database. The call's answer is held, not relayed, until the
/// commit answers; a refused or failed start drops it (closing the provider's connection) and answers with the
/// start's error, nothing saved. The other openings change the conversation once it is taken, so they open their
/// call after the commit.
///
/// A new message in a conversation whose last turn ran here builds the context from what that turn kept
/// ([`super::memory`]), reading nothing; the start reports the conversation's stamp, and a context built from a
/// conversation that changed since is dropped with the call opened with it, and read again.
pub(super) async fn launch(
    engine: &Engine,
    who: Writer,
    thread: Uuid,
    opening: Opening,
) -> Result<Arc<LiveTurn>, ChatError> {
    let Writer { author: user, sender } = who;
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
            sender,
            thread,
            turn: turn_id,
            stale_after_ms: STALE_AFTER_MS,
            request: match &opening {
                Opening::Message(message) => Some(message.clone()),
                Opening::Silent(_)
                | Opening::Update(_)
                | Opening::Retry(_)
                | Opening::Edit { .. }
                | Opening::Again(_) => None,
            },
            message_id,
        };
        let update = matches!(opening, Opening::Update(_));
        let early = match &opening {
            Opening::Message(message) => Some((message.content.clone(), message.quote.clone(), false)),
            Opening::Silent(content) | Opening::Update(content) => Some((content.clone(), None, true)),
            Opening::Retry(_) | Opening::Edit { .. } | Opening::Again(_) => None,
        };
        // What is kept of the conversation from its last turn serves a new message only: the other openings
        // change the conversation before they are answered.
        let mut kept = match &opening {
            Opening::Message(_) => engine.memory.take(user, thread),
            Opening::Silent(_) | Opening::Update(_) | Opening::Retry(_) | Opening::Edit { .. } | Opening::Again(_) => {
                engine.memory.forget(thread);
                None
            }
        };
        let early = early.filter(|_| engine.opens_early(sender, thread)).map(|(content, quote, silent)| {
            let pending =
                (!silent).then(|| Message { quote, ..context::pending_message(message_id, thread, &content) });
            let request_message = pending.as_ref().map(|m| m.id);
            let plan = Plan { user, sender, thread, silent, update, content, request_message, name_thread: None };
            let mut turn = Turn::new(&engine, live.clone(), plan);
            turn.kept = kept.take();
            (turn, pending)
        });
        let mut started = Some(started);
        // Told as soon as the start has committed, so the person can stop the turn while its model call opens.
        let held = |begun: &store::Result<Started>| {
            begun.is_ok().then(|| hold(&engine, &live, started.take().expect("the start is told once")))
        };
        let (begun, holding, early) = match early {
            Some((mut turn, pending)) => {
                let begin = engine.store.start_turn_stamped(start, &engine.limits.turns);
                let (begun, holding, opened) = turn.open_beside(begin, pending.as_ref(), held).await;
                (begun, holding, opened.map(|opened| (turn, opened, pending)))
            }
            None => (engine.store.start_turn_stamped(start, &engine.limits.turns).await, None, None),
        };
        let (saved, before, allowance) = match begun {
            Ok(Started { message, before, allowance }) => (message, before, allowance),
            Err(e) => {
                engine.refused(sender);
                if let Some(started) = started.take() {
                    let _ = started.send(Err(engine.busy_or(sender, thread, e).await));
                }
                return;
            }
        };
        let first = saved.as_ref().is_some_and(|m| m.seq == 1);
        let (_held, mut turn, opened) = match early {
            Some((mut turn, opened, pending)) => {
                turn.question = saved.clone();
                turn.before = before;
                turn.allowance = allowance;
                // A context built from what was kept, for a conversation changed since, is built again; so is a
                // call that may write more than the start reserved for a person with a budget of their own (its
                // request is paid for all the same: the meter keeps it).
                let (fits, within) = (turn.basis_fits(), turn.early_call_fits());
                if !within {
                    // The person's next starts wait for their commit, so their calls are fitted from the first.
                    engine.refused(sender);
                }
                let opened = match fits && within {
                    true => opened,
                    false => {
                        drop(opened);
                        if !fits && turn.basis.as_ref().is_some_and(|b| b.from_memory) {
                            engine.memory.count(Source::Stale);
                        }
                        // A summary refresh started for the dropped context starts again with the new one.
                        if let Some(refresh) = turn.summary_refresh.take() {
                            refresh.abort();
                        }
                        Box::pin(turn.open(pending.as_ref())).await
                    }
                };
                (holding.expect("held when it began"), turn, Some(opened))
            }
            None => {
                // However the task ends (a panic too), the store lets go of what the turn handed over and did not
                // take into its end.
                let handed_over = HandedOver { store: engine.store.clone(), turn: turn_id };
                let started = started.take().expect("the start is told once");
                let question = saved.clone().filter(|_| matches!(opening, Opening::Message(_)));
                match plan_taken(engine.store.as_ref(), who, thread, opening, saved).await {
                    Ok(plan) => {
                        let holding =
                            Held { _handed_over: handed_over, _registered: register(&engine, &live, started) };
                        let mut turn = Turn::new(&engine, live.clone(), plan);
                        turn.kept = match kept {
                            Some((_, stamp)) if Some(stamp) != before => {
                                engine.memory.count(Source::Stale);
                                None
                            }
                            kept => kept,
                        };
                        turn.question = question;
                        turn.before = before;
                        turn.allowance = allowance;
                        (holding, turn, None)
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
        let opened = match opened {
            Some(opened) => opened,
            None => {
                let question = turn.question.clone();
                Box::pin(turn.open(question.as_ref())).await
            }
        };
        // A conversation is named at its first message, unless it already has a title of its own: the opening
        // read the title with the settings (read again only when it failed to). The start above already refused
        // a conversation that is missing or another person's.
        if first {
            match turn.title.take() {
                Some(title) => turn.plan.name_thread = Some(title),
                None => match engine.store.get_thread(user, thread).await {
                    Ok(row) => turn.plan.name_thread = Some(row.title),
                    Err(e) => tracing::warn!(error = %e, "reading the conversation's title failed; it is not named"),
                },
            }
        }
        turn.count_basis();
        #[cfg(debug_assertions)]
        let opened = match Box::pin(turn.check_memory()).await {
            Ok(()) => opened,
            Err(failed) => Err(failed),
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
    // Others watching the conversation follow the answer too.
    engine.changes.turn_started(live.thread_id, live.id);
    registered
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

/// What a turn asks the model, and its first call, open.
struct Opened {
    system: String,
    messages: Vec<llm::Message>,
    tools: tools::Offered,
    call: Call,
}

/// One open model call of a turn.
struct Call {
    /// Its events, each taken into account by `meter` as it passes.
    stream: llm::EventStream,
    timing: CallTiming,
    meter: Meter,
    /// Whether its `max_tokens` was lowered to fit the budget.
    capped: bool,
    /// Whether it went without tools (the model takes none): documents come as blocks of its text, and the model
    /// cannot be given a tool's result.
    without_tools: bool,
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
    /// The tokens of the calls over so far (see `meters`).
    usage: Usage,
    /// One meter for each model call the turn made: what they cost, however they ended.
    meters: Vec<Meter>,
    /// What the turn may spend, reserved when it started; `None` when no budget applies.
    allowance: Option<u64>,
    artifacts: Vec<Artifact>,
    /// Rounds whose tool calls were broken (arguments that are not JSON, cut off, or not what the tool takes): the
    /// first goes back to the model as tool errors, the second ends the turn.
    broken_rounds: u8,
    /// Whether the model, having answered a request for a document without saving one, was asked once more.
    insisted: bool,
    /// The tools of MCP servers offered in this turn (those connected when it opened).
    mcp_tools: Arc<Vec<crate::mcp_tools::Offered>>,
    /// The requests for documents the model sees (what a document made in this turn may answer).
    open_requests: Vec<OpenRequest>,
    /// The messages of the shown path the turn answers on (which documents are this branch's).
    path: HashSet<Uuid>,
    trace: Vec<TraceStep>,
    /// Set once a draft of the answer was handed over: the id it is saved under.
    assistant_id: Option<Uuid>,
    context: Option<ContextRecord>,
    /// What is kept of the conversation from its last turn, for this turn's context (taken by `open`).
    kept: Option<(context::Materials, ThreadStamp)>,
    /// The conversation's title as the opening read it (for naming it at its first message).
    title: Option<String>,
    /// What the context was built from.
    basis: Option<Basis>,
    /// The context built from what was kept, and the pending message it was built with, checked against the
    /// store in debug builds once the start has committed.
    #[cfg(debug_assertions)]
    built_from_memory: Option<(context::BuiltContext, Option<Message>)>,
    /// The person's message the turn answers, as its start saved it (a new message only).
    question: Option<Message>,
    /// The thread's stamp right before the start wrote (see [`Started`]).
    before: Option<ThreadStamp>,
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
    /// On the heap: a turn's futures hold it by pointer, so its size (a kilobyte) is paid once per turn, not in
    /// every state of the task that carries it (inline, it made a waiting turn's task 8.0 KiB instead of 3.1).
    fn new(engine: &'a Engine, live: Arc<LiveTurn>, plan: Plan) -> Box<Self> {
        Box::new(Self {
            engine,
            provider: engine.models.default_provider(),
            title_by_model: false,
            live,
            plan,
            text: String::new(),
            usage: Usage::default(),
            meters: Vec::new(),
            allowance: None,
            artifacts: Vec::new(),
            broken_rounds: 0,
            insisted: false,
            mcp_tools: Arc::default(),
            open_requests: Vec::new(),
            path: HashSet::new(),
            trace: Vec::new(),
            assistant_id: None,
            context: None,
            kept: None,
            title: None,
            basis: None,
            #[cfg(debug_assertions)]
            built_from_memory: None,
            question: None,
            before: None,
            summary_refresh: None,
            context_sent: false,
            flushed_events: 0,
            last_flush: Instant::now(),
            flushed_text_len: 0,
        })
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
            payer: self.plan.sender,
            thread: self.plan.thread,
            content: self.plan.content.clone(),
        }
    }

    /// The steps a turn takes once (naming, loading the conversation, running a tool, saving the end) are boxed
    /// where they are awaited: a future is as large as its largest step, and a turn spends nearly all its life
    /// waiting for the model's next words, thousands of turns at once (this halves a waiting turn's task).
    async fn run(mut self: Box<Self>, opened: Result<Opened, Ending>) {
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
        begun: impl FnOnce(&store::Result<Started>) -> G,
    ) -> (store::Result<Started>, G, Option<Result<Opened, Ending>>)
    where
        B: std::future::Future<Output = store::Result<Started>>,
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
            // The call may have gone out: what it cost goes on the ledger all the same.
            drop(open);
            drop(opened);
            self.record_unkept();
            return (answer, made, None);
        }
        let opened = match opened {
            Some(opened) => opened,
            None => open.await,
        };
        (answer, made, Some(opened))
    }

    /// Reads what the model is asked (the conversation, and the person's settings with the tools on offer,
    /// neither waiting for the other), chooses the model and opens the first call.
    async fn open(&mut self, pending: Option<&Message>) -> Result<Opened, Ending> {
        let store = self.engine.store.clone();
        let (user, thread) = (self.plan.user, self.plan.thread);
        let kept = self.kept.take();
        let from_memory = kept.is_some();
        // What the model is told besides the conversation, on one connection: the settings (which also say
        // whether files are attached, deciding the tools), the documents at their current versions (bounded: the
        // newest, the text of the short ones only), the ledger without the tree (the path is the turn's) and, in a
        // project, its other conversations' requirements for documents here to cite. A conversation with none of
        // these costs one statement.
        let limits = store::TurnReadLimits {
            documents: prompt::MOST_DOCUMENTS,
            document_text_chars: prompt::DOCUMENT_TEXT_CHARS,
            project_ledgers: ledger::PROJECT_LEDGERS,
        };
        let (loaded, reads) = tokio::join!(
            Box::pin(self.load_context(pending, kept)),
            store.turn_reads(user, thread, self.plan.sender, limits)
        );
        let loaded =
            loaded.map_err(|e| Ending::Failed(LlmError::Protocol(format!("could not load the conversation: {e}"))))?;
        #[cfg(debug_assertions)]
        {
            self.built_from_memory = from_memory.then(|| (loaded.built.clone(), pending.cloned()));
        }
        let built = loaded.built;
        self.basis = Some(Basis { materials: loaded.materials, stamp: loaded.stamp, from_memory });
        let store::TurnReads { settings, documents, ledger: ledger_rows, foreign } =
            reads.map_err(|e| Ending::Failed(LlmError::Protocol(format!("could not load the settings: {e}"))))?;
        self.title = settings.thread_title.clone();
        let tools = tools::Offered::for_thread(&settings).with_ledger(!self.plan.silent);
        // Silent generation makes one document and nothing else: no other tools.
        if !self.plan.silent && !self.engine.mcp.is_empty() {
            self.mcp_tools = Arc::new(self.engine.mcp.offered(settings.mcp_servers.as_deref()));
        }
        // A choice no longer on offer (the providers changed since) gives way to the next.
        let choices = [settings.thread_model.as_deref(), settings.settings.default_model.as_deref()];
        self.provider = self.engine.models.choose(&choices).await;
        let messages = Box::pin(self.model_messages(built)).await;
        // Documents of the path the turn answers on; another branch's are that branch's.
        let documents: Vec<_> =
            documents.into_iter().filter(|a| a.assistant_message_id.is_none_or(|m| self.path.contains(&m))).collect();
        // The project's instructions and then the person's own go below Quire's rules, which keep their priority;
        // the documents, which are data, below them.
        let system = prompt::with_documents(
            prompt::system_prompt_for(&settings.project_instructions, &settings.settings.custom_instructions),
            &documents,
            &self.plan.content,
        );
        // The ledger of the same path, below the documents; what the model was given of it is kept with the answer.
        let view = ledger_rows.on_path(&self.path);
        if let Some(record) = self.context.as_mut() {
            record.ledger = ledger::seen(&view);
        }
        // The messages' numbers from the context's tree, just read.
        let no_tree = store::Tree::default();
        let tree = self.basis.as_ref().map_or(&no_tree, |b| b.materials.tree());
        let system = ledger::with_ledger(system, tree, &ledger_rows, &view, !self.plan.silent);
        let system = ledger::with_project_ledgers(system, &foreign);
        // Silent generation makes its document at once: the call names the tool where the provider can.
        let force = self.plan.silent.then_some(tools::SAVE_ARTIFACT);
        let call = self.call(&system, &messages, &tools, force).await?;
        Ok(Opened { system, messages, tools, call })
    }

    /// Whether the context opened with while the start committed is of the conversation as the start found it
    /// (or right after it): not when it was kept from a conversation changed since, nor when it was read before
    /// another write (another instance's turn ending, say) landed ahead of the start.
    fn basis_fits(&self) -> bool {
        self.basis.as_ref().is_none_or(|basis| basis.current(self.before, self.question.as_ref()))
    }

    /// Counts where the context came from.
    fn count_basis(&self) {
        if let Some(basis) = &self.basis {
            self.engine.memory.count(if basis.from_memory { Source::Memory } else { Source::Store });
        }
    }

    /// In debug builds (the tests), a context built from what was kept must be the one the store gives, unless
    /// the conversation changed since the start; the turn fails at once if not.
    #[cfg(debug_assertions)]
    async fn check_memory(&mut self) -> Result<(), Ending> {
        let Some((built, pending)) = self.built_from_memory.take() else { return Ok(()) };
        let Ok(fresh) = self.load_context(pending.as_ref(), None).await else { return Ok(()) };
        let since = self.engine.store.thread_stamp(self.plan.user, self.plan.thread).await.ok();
        let started = self.before.zip(self.question.as_ref()).map(|(b, q)| super::memory::after_saving(b, q));
        if since.is_none() || since != started || fresh.built == built {
            return Ok(());
        }
        tracing::error!(kept = ?built, stored = ?fresh.built, "a context kept in memory differs from the store's");
        Err(Ending::Failed(LlmError::Protocol("a context kept in memory differs from the store's".into())))
    }

    /// What to keep of the conversation for its next turn, once this one saved `answer` and the end left the
    /// thread at `ended` (see [`Basis::after_turn`]). A turn that made documents keeps nothing: they change
    /// which requests are answered.
    fn keep_for_next(&mut self, answer: Option<&AnswerDraft>, ended: Option<ThreadStamp>) {
        let (Some(answer), Some(ended), Some(question)) = (answer, ended, self.question.as_ref()) else { return };
        let Some(basis) = self.basis.take().filter(|_| self.artifacts.is_empty()) else { return };
        let place = Place { seq: question.seq + 1, parent: Some(question.id) };
        let stored = answer.first_save().saved(answer.id, place, chrono::Utc::now());
        if let Some((materials, stamp)) = basis.after_turn(self.before, question, &stored, ended) {
            self.engine.memory.keep(self.plan.user, self.plan.thread, stamp, materials);
        }
    }

    /// Ends the answer with `note`, as its own paragraph; the model conversation is over.
    fn noted(&mut self, note: &str) -> Ending {
        let text = format!("{}{note}", paragraph_break(&self.text));
        self.text.push_str(&text);
        if !self.plan.silent {
            self.live.push(ChatEvent::TextDelta { text });
        }
        Ending::Done
    }

    /// Puts on the ledger what the calls of a turn that will not end cost (its start was refused after its first
    /// call had gone out), without waiting.
    fn record_unkept(&self) {
        let (usage, counted_tokens) = self.metered();
        if usage == Usage::default() {
            return;
        }
        let spent = SpentTokens {
            user: self.plan.user,
            payer: self.plan.sender,
            thread: self.plan.thread,
            model: self.model(),
            usage,
            counted_tokens,
        };
        let store = self.engine.store.clone();
        tokio::spawn(async move {
            if let Err(e) = store.record_spent(&spent).await {
                tracing::warn!(error = %e, "recording the tokens of a refused turn's call failed");
            }
        });
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
        let mut force = None;
        for _round in 0..MAX_ROUNDS {
            // The call asking once more for a document the model did not save is a second chance: if it fails,
            // the answer stands as it was written.
            let second_chance = force.is_some() && self.insisted;
            let Call { mut stream, mut timing, meter, capped, without_tools } = match next.take() {
                Some(call) => call,
                None => match self.call(&system, &messages, &tools, force.take()).await {
                    Ok(call) => call,
                    Err(Ending::Failed(e)) if second_chance => {
                        tracing::warn!(error = %e, "asking the model again for the document failed");
                        return Ending::Done;
                    }
                    Err(ending) => return ending,
                },
            };
            let mut calls = Vec::new();
            let mut broken = Vec::new();
            let mut round_text = String::new();
            loop {
                let next = tokio::select! {
                    biased;
                    () = cancelled.as_mut() => return self.end_call(timing, &meter, Ending::Stopped),
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
                    // Shown beside the answer while it streams; never part of its text.
                    Some(Ok(StreamEvent::ReasoningDelta(text))) => {
                        timing.output();
                        if !self.plan.silent && !text.is_empty() {
                            self.live.push(ChatEvent::ReasoningDelta { text });
                        }
                    }
                    Some(Ok(StreamEvent::ToolCall(call))) => {
                        timing.output();
                        calls.push(call);
                    }
                    Some(Ok(StreamEvent::BrokenCall(call))) => {
                        timing.output();
                        broken.push(call);
                    }
                    // The meter took it.
                    Some(Ok(StreamEvent::Usage(_))) => {}
                    Some(Ok(StreamEvent::Stop(reason))) => timing.stopped_by_model(reason),
                    Some(Err(e)) if second_chance && calls.is_empty() && round_text.is_empty() => {
                        tracing::warn!(error = %e, "asking the model again for the document failed");
                        // In the trace as the failure it was; the answer stands.
                        let _ = self.end_call(timing, &meter, Ending::Failed(e));
                        return Ending::Done;
                    }
                    Some(Err(e)) => return self.end_call(timing, &meter, Ending::Failed(e)),
                }
            }
            drop(stream);
            self.settle(&mut timing, &meter);
            let cut_off = timing.cut_off();
            self.trace.push(timing.step(self.provider.as_ref(), None));
            // A call cut off by its length limit may have been writing a tool call's arguments: none of its tool
            // calls is run (no half-written document is saved). Cut off by the budget, the answer says so.
            if cut_off && capped {
                return self.noted(OVER_BUDGET);
            }
            if cut_off {
                const CUT: &str = "the answer reached its length limit before the call was complete";
                broken.extend(calls.drain(..).map(|call| llm::BrokenCall {
                    id: call.id,
                    name: call.name,
                    problem: String::new(),
                }));
                broken.iter_mut().for_each(|call| call.problem = CUT.into());
            }
            if calls.is_empty() && broken.is_empty() {
                // Asked for a document, the model answered without saving one: once more, naming the tool.
                if self.may_insist(without_tools) {
                    self.insisted = true;
                    if !round_text.is_empty() {
                        messages.push(llm::Message::assistant(round_text));
                    }
                    messages.push(llm::Message::user(prompt::insist_on_document(without_tools)));
                    force = Some(tools::SAVE_ARTIFACT);
                    continue;
                }
                return Ending::Done;
            }
            if !broken.is_empty() && self.broken_rounds > 0 {
                return self.noted(if cut_off { CUT_OFF } else { BROKEN_CALLS });
            }
            let mut assistant_parts = Vec::new();
            if !round_text.is_empty() {
                assistant_parts.push(Part::Text { text: round_text });
            }
            let mut results = Vec::new();
            let mut malformed = false;
            for call in calls {
                assistant_parts.push(Part::ToolCall(call.clone()));
                let (result, is_error, unfit) = Box::pin(self.run_tool(&call.name, &call.arguments)).await;
                malformed |= unfit;
                results.push(Part::ToolResult { call_id: call.id.clone(), content: result, is_error });
            }
            for call in &broken {
                let result = broken_call_result(call);
                let name = if call.name.is_empty() { "(no name)" } else { call.name.as_str() };
                self.trace.push(trace::tool_step(
                    name,
                    &serde_json::Value::Null,
                    &result,
                    true,
                    store::now(),
                    Instant::now(),
                ));
                // The call as far as it can be given back: its arguments are not JSON, so none.
                let call_part =
                    llm::ToolCall { id: call.id.clone(), name: name.to_string(), arguments: serde_json::json!({}) };
                assistant_parts.push(Part::ToolCall(call_part));
                results.push(Part::ToolResult { call_id: call.id.clone(), content: result, is_error: true });
            }
            if !broken.is_empty() || malformed {
                if self.broken_rounds > 0 {
                    return self.noted(BROKEN_CALLS);
                }
                self.broken_rounds += 1;
            }
            // A model without tools cannot be given what its documents' saving answered: the turn is over.
            if without_tools {
                return Ending::Done;
            }
            messages.push(llm::Message { role: llm::Role::Assistant, parts: assistant_parts });
            messages.push(llm::Message { role: llm::Role::User, parts: results });
            self.checkpoint(true);
        }
        Ending::Done
    }

    /// Whether to ask the model once more, naming `save_artifact`: the person's latest message asks for a document
    /// (Quire's own reading of it, see [`context::BuiltContext::open_requests`]) or this is silent generation, the
    /// turn saved none, it was not asked again already, and the provider can be told which tool to call (a model
    /// without tools is asked in words).
    fn may_insist(&self, without_tools: bool) -> bool {
        let asked = self.plan.silent
            || self.plan.request_message.is_some_and(|m| self.open_requests.iter().any(|r| r.message == m));
        asked && !self.insisted && self.artifacts.is_empty() && (without_tools || self.provider.can_force_tool())
    }

    /// The conversation as the model sees it (see [`context::build`]): fulfilled requests are left out, the
    /// rest fits the token budget; a silent request adds its instruction without storing it.
    async fn load_context(
        &self,
        pending: Option<&Message>,
        kept: Option<(context::Materials, ThreadStamp)>,
    ) -> Result<context::Loaded, StoreError> {
        let ephemeral = self.plan.silent.then(|| match self.plan.update {
            true => self.plan.content.clone(),
            false => format!("{}\n\n{}", self.plan.content, prompt::silent_generation_instruction("requested")),
        });
        context::load(
            self.engine.store.as_ref(),
            self.plan.user,
            self.plan.thread,
            self.engine.limits.context_tokens,
            ephemeral.as_deref(),
            pending,
            kept,
        )
        .await
    }

    /// The loaded conversation with its summary, as the chosen model sees it; the record of what it saw kept.
    async fn model_messages(&mut self, mut built: context::BuiltContext) -> Vec<llm::Message> {
        let summariser = summary::Summariser {
            store: self.engine.store.clone(),
            provider: self.provider.clone(),
            redact: self.engine.limits.redact_pii,
        };
        self.summary_refresh = summariser.carry((self.plan.user, self.plan.sender), self.plan.thread, &mut built).await;
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
    fn fresh_events(&mut self) -> Vec<EventRun> {
        let (fresh, last) = self.live.runs_after(self.flushed_events);
        self.flushed_events = last;
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
            question: self.plan.request_message,
        }
    }

    async fn finish(mut self: Box<Self>, ending: Ending) {
        let user = self.plan.user;
        // Every call the turn made, one dropped unread included.
        let (usage, counted_tokens) = self.metered();
        self.usage = usage;
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
        let stored = |event: &ChatEvent| EventRun::single(seq, event.name(), event.data_json());
        events.push(stored(&last_event));
        // The answer, its documents and trace, the tokens spent, the last events and the turn's closing are one
        // commit, stored before anyone is told: a client that sends its next message right after
        // `message_complete` finds the thread free, and a listener elsewhere finds all of it.
        let kept_answer = answer.clone().filter(|_| self.question.is_some() && self.artifacts.is_empty());
        let end = TurnEnd {
            events: events.clone(),
            answer: answer.map(|draft| FinalAnswer {
                user,
                draft,
                artifacts: self.artifacts.iter().map(|a| a.id).collect(),
            }),
            usage: (self.usage != Usage::default()).then(|| SpentTokens {
                user,
                payer: self.plan.sender,
                thread: self.plan.thread,
                model: self.model(),
                usage: self.usage,
                counted_tokens,
            }),
            trace: (!self.trace.is_empty()).then(|| TurnTrace {
                user,
                thread: self.plan.thread,
                steps: std::mem::take(&mut self.trace),
            }),
        };
        // Kept apart in case the end cannot be saved: the tokens go on the ledger all the same.
        let spent = end.usage.clone();
        match self.engine.store.finish_turn_stamped(self.live.id, end).await {
            // Kept before anyone is told the turn ended, so the next message finds it.
            Ok(ended) => self.keep_for_next(kept_answer.as_ref(), ended),
            Err(e) => {
                // The turn is closed all the same, so its conversation is free: the answer keeps its last saved
                // draft (`interrupted`), which closing lets into the search index.
                tracing::error!(error = %e, "saving the end of a turn failed");
                last_event = self.ending_event(&ending, None);
                events.pop();
                events.push(stored(&last_event));
                let closing = TurnEnd { events, ..TurnEnd::default() };
                if let Err(e) = self.engine.store.finish_turn(self.live.id, closing).await {
                    tracing::error!(error = %e, "closing the turn failed");
                }
                if let Some(spent) = spent {
                    if let Err(e) = self.engine.store.record_spent(&spent).await {
                        tracing::error!(error = %e, "recording the tokens of a turn whose end was not saved failed");
                    }
                }
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
/// What ends an answer whose model wrote broken tool calls twice (after being told what was wrong the first time).
const BROKEN_CALLS: &str = "*The answer stops here: the model twice asked for something it could not be given (a call \
     to save or change a document that was incomplete or not in the form Quire takes), so nothing of it was saved. \
     Try again, or choose another model.*";

/// What the model is told of a call of its own that could not be carried out.
fn broken_call_result(call: &llm::BrokenCall) -> String {
    format!(
        "This call was not carried out and nothing was saved: {}. Call {} again with complete JSON arguments as \
         its schema describes (a shorter document, or fewer at once, if it was cut off).",
        call.problem,
        if call.name.is_empty() { "the tool" } else { call.name.as_str() }
    )
}

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
