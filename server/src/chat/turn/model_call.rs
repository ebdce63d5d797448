//! A turn's calls to the model: each opened within what the turn may still spend, asked again without tools when
//! the provider refuses them, metered, and kept in the trace however it ends.

use super::*;

impl Turn<'_> {
    /// Opens one model call, metered. Within a budget, the call may write what the turn's allowance leaves once
    /// its request is paid for; after the turn's first call, one that would have too few tokens left
    /// is not made and the answer ends with [`OVER_BUDGET`] (see [`allowance::call_cap`]).
    ///
    /// `force` names the tool the model must call, where the provider can be told. A model the provider refused
    /// tools for is asked without them (once found out, at once): it is told to write documents as blocks of its
    /// text, which are read as `save_artifact` calls.
    pub(super) async fn call(
        &mut self,
        system: &str,
        messages: &[llm::Message],
        tools: &tools::Offered,
        force: Option<&str>,
    ) -> Result<Call, Ending> {
        let refused = |provider: &dyn llm::Provider| provider.habits().is_some_and(llm::Habits::tools_refused);
        let mut without_tools = refused(self.provider.as_ref());
        loop {
            match self.call_once(system, messages, tools, force, without_tools).await {
                Err(Ending::Failed(LlmError::ToolsUnsupported))
                    if !without_tools && refused(self.provider.as_ref()) =>
                {
                    without_tools = true;
                }
                other => return other,
            }
        }
    }

    pub(super) async fn call_once(
        &mut self,
        system: &str,
        messages: &[llm::Message],
        tools: &tools::Offered,
        force: Option<&str>,
        without_tools: bool,
    ) -> Result<Call, Ending> {
        let mut request = if without_tools {
            llm::ChatRequest {
                system: prompt::without_tools(system.to_string()),
                messages: messages.to_vec(),
                tools: Vec::new(),
                max_tokens: ANSWER_MAX_TOKENS,
                tool_choice: None,
            }
        } else {
            let mut specs = tools.specs();
            specs.extend(self.mcp_tools.iter().map(|tool| tool.spec.clone()));
            llm::ChatRequest {
                system: system.to_string(),
                messages: messages.to_vec(),
                tools: specs,
                max_tokens: ANSWER_MAX_TOKENS,
                tool_choice: force.filter(|_| self.provider.can_force_tool()).map(str::to_string),
            }
        };
        let (meter, capped) = match self.allowance {
            None => (Meter::new(&request), false),
            Some(allowance) => {
                let prompt = request.prompt_tokens();
                let (spent, _) = self.metered();
                let spent = spent.input_tokens.saturating_add(spent.output_tokens);
                let Some(cap) = allowance::call_cap(allowance, spent, prompt, self.meters.is_empty()) else {
                    return Err(self.noted(OVER_BUDGET));
                };
                request.max_tokens = cap;
                (Meter::counted(prompt), cap < ANSWER_MAX_TOKENS)
            }
        };
        self.meters.push(meter.clone());
        let timing = CallTiming::start(CallPurpose::Answer);
        let (live, provider) = (self.live.clone(), self.provider.clone());
        let started = tokio::select! {
            biased;
            () = live.cancelled() => return Err(self.end_call(timing, &meter, Ending::Stopped)),
            r = provider.stream(request) => r,
        };
        match started {
            Ok(stream) => {
                let stream = if without_tools {
                    let forms = llm::text_calls::Forms {
                        tools: vec![tools::SAVE_ARTIFACT.to_string()],
                        fenced_json: false,
                        documents: Some((tools::SAVE_ARTIFACT.to_string(), tools::document_block)),
                        habits: None,
                    };
                    llm::text_calls::read(stream, forms)
                } else {
                    stream
                };
                Ok(Call { stream: meter.watch(stream), timing, meter, capped, without_tools })
            }
            Err(e) => {
                if e.billed_nothing() {
                    meter.refused();
                }
                Err(self.end_call(timing, &meter, Ending::Failed(e)))
            }
        }
    }

    /// Whether the call opened before the start committed may write all it asked for within the allowance the
    /// start reserved (always without a budget: an early call is made only when no configured budget applies, but
    /// a person may have one of their own).
    pub(super) fn early_call_fits(&self) -> bool {
        let Some(allowance) = self.allowance else { return true };
        let request = self.meters.last().map_or(0, |meter| meter.reading().usage.input_tokens);
        allowance >= request.saturating_add(ANSWER_MAX_TOKENS.into())
    }

    /// What the turn's calls cost so far, however each ended, and how much of it Quire counted.
    pub(super) fn metered(&self) -> (Usage, u64) {
        let (mut usage, mut counted) = (Usage::default(), 0u64);
        for reading in self.meters.iter().map(Meter::reading) {
            usage.input_tokens = usage.input_tokens.saturating_add(reading.usage.input_tokens);
            usage.output_tokens = usage.output_tokens.saturating_add(reading.usage.output_tokens);
            counted = counted.saturating_add(reading.counted_tokens());
        }
        (usage, counted)
    }

    /// A call is over: its tokens go into its step of the trace and the answer's usage.
    pub(super) fn settle(&mut self, timing: &mut CallTiming, meter: &Meter) {
        timing.metered(meter.reading());
        self.usage = self.metered().0;
    }

    /// Keeps a model call that ended the model conversation (stopped or failed) in the trace, with what it cost.
    pub(super) fn end_call(&mut self, mut timing: CallTiming, meter: &Meter, ending: Ending) -> Ending {
        self.settle(&mut timing, meter);
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
}
