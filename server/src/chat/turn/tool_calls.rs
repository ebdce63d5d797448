//! Carrying out the tool calls a model makes: Quire's own tools, and MCP servers' (asking the person first where
//! a server says so), each a step of the trace.

use super::*;

impl Turn<'_> {
    /// Runs one tool call: its text for the model, whether it failed, and whether its input was not what the tool
    /// takes (a broken call).
    pub(super) async fn run_tool(&mut self, name: &str, input: &serde_json::Value) -> (String, bool, bool) {
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
            model: self.provider.model(),
        };
        let (result, is_error, artifact, malformed) = match name {
            tools::SAVE_ARTIFACT => {
                let outcome = tools::save_artifact(&mut ctx, input).await;
                let created = outcome.created.then_some(outcome.artifact).flatten();
                (outcome.result, outcome.is_error, created, outcome.malformed)
            }
            tools::EDIT_ARTIFACT => {
                let outcome = tools::edit_artifact(&mut ctx, input).await;
                let created = outcome.created.then_some(outcome.artifact).flatten();
                (outcome.result, outcome.is_error, created, outcome.malformed)
            }
            ledger::RECORD_REQUIREMENTS => {
                let recorded =
                    ledger::record(ctx.store, ctx.user, ctx.thread, ctx.path, ctx.request_message, ctx.model, input)
                        .await;
                (recorded.result, recorded.is_error, None, recorded.malformed)
            }
            tools::READ_ARTIFACT => {
                let outcome = tools::read_artifact(&ctx, input).await;
                (outcome.result, outcome.is_error, None, outcome.malformed)
            }
            tools::DOCUMENT_SEARCH => {
                let (outcome, passages) = tools::document_search(&ctx, input).await;
                if let Some(record) = self.context.as_mut() {
                    record.passages.extend(passages);
                }
                (outcome.result, outcome.is_error, None, outcome.malformed)
            }
            other => match self.engine.mcp.find(&self.mcp_tools, other) {
                Some((server, tool)) => {
                    let (asks, label, tool) =
                        (server.approval.asks_for(&tool.tool), server.label.clone(), tool.clone());
                    let outcome = match asks {
                        true => Box::pin(self.call_when_approved(&label, &tool, input)).await,
                        false => self.engine.mcp.call(&tool, input).await,
                    };
                    (outcome.text, outcome.is_error, None, false)
                }
                // A tool that is not on offer is a broken call too.
                None => (format!("Unknown tool '{other}'."), true, None, true),
            },
        };
        if let Some(artifact) = artifact {
            self.engine.changes.saved(&artifact).await;
            // Marked by the tool, with what it cites and whether that changed since, as every route shows a
            // document.
            self.live.push(ChatEvent::ArtifactCreated { artifact });
        }
        self.trace.push(trace::tool_step(name, input, &result, is_error, started_at, clock));
        (result, is_error, malformed)
    }

    /// An MCP call that asks the person first (see [`approval`]): it runs once approved; otherwise the model is
    /// told it did not.
    pub(super) async fn call_when_approved(
        &mut self,
        label: &str,
        tool: &crate::mcp_tools::Offered,
        input: &serde_json::Value,
    ) -> crate::mcp_tools::CallOutcome {
        let asked = Instant::now();
        let question = approval::Question {
            store: self.engine.store.clone(),
            live: self.live.clone(),
            thread: self.plan.thread,
            user: self.plan.user,
            sender: self.plan.sender,
        };
        let state = match question.ask(label, tool, input).await {
            Some(pending) => {
                // Handed over before the wait, so a listener elsewhere (another instance, a reload) sees it.
                self.checkpoint(true);
                question.wait(pending.id, self.engine.limits.approval_wait).await
            }
            None => wire::ApprovalState::Expired,
        };
        match state {
            wire::ApprovalState::Approved => self.engine.mcp.call(tool, input).await,
            other => self.engine.mcp.denied(tool, approval::refusal(other, label, &tool.tool), asked.elapsed()),
        }
    }
}
