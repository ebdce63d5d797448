//! "Steps" in the "What the model saw" panel: each model call and tool call the turn made to write an answer,
//! from its trace.

use leptos::prelude::*;
use send_wrapper::SendWrapper;
use uuid::Uuid;

use crate::api::{client, shortened, CallPurpose, ModelCall, StopReason, ToolCallStep, TraceStep};
use crate::components::counted_list::CountedList;
use crate::format::grouped;

/// Longest arguments or result shown for a tool call, in characters.
const SHOWN_CHARS: usize = 200;

/// One step as people read it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepView {
    /// What happened: "Model call", "Tool call: save_artifact".
    pub title: String,
    /// Numbers and details, each a short phrase.
    pub details: Vec<String>,
    /// What the tool was given, or what it answered.
    pub lines: Vec<(&'static str, String)>,
    pub error: Option<String>,
}

/// A duration in milliseconds as people read it: "850 ms", "2.4 s".
pub fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
    }
}

fn stop_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::EndTurn => "finished",
        StopReason::ToolUse => "asked for tools",
        StopReason::MaxTokens => "reached its length limit",
        StopReason::Other => "stopped",
        StopReason::Stopped => "stopped by you",
    }
}

fn model_call(call: &ModelCall) -> StepView {
    let title = match call.purpose {
        CallPurpose::Answer => "Model call".to_string(),
        CallPurpose::Title => "Model call: naming the conversation".to_string(),
    };
    let mut details = vec![
        format!("{} ({})", call.model, call.provider),
        format!(
            "{} tokens in, {} out{}",
            grouped(call.input_tokens),
            grouped(call.output_tokens),
            if call.counted { " (counted by Quire: the provider did not report them)" } else { "" }
        ),
    ];
    if let Some(first) = call.first_token_ms {
        details.push(format!("first token after {}", duration(first)));
    }
    details.push(format!("took {}", duration(call.duration_ms)));
    if let Some(reason) = call.stop_reason {
        details.push(stop_reason(reason).to_string());
    }
    StepView {
        title,
        details,
        lines: Vec::new(),
        error: call.error.as_ref().map(|e| format!("{} ({})", e.message, e.code)),
    }
}

fn tool_call(call: &ToolCallStep) -> StepView {
    let mut lines = vec![("Arguments", shortened(&call.arguments.to_string(), SHOWN_CHARS))];
    if let Some(result) = &call.result {
        lines.push(("Result", shortened(result, SHOWN_CHARS)));
    }
    StepView {
        title: format!("Tool call: {}", call.name),
        details: vec![format!("took {}", duration(call.duration_ms))],
        lines,
        error: call.error.clone(),
    }
}

/// A step of a trace as people read it.
pub fn describe(step: &TraceStep) -> StepView {
    match step {
        TraceStep::ModelCall(call) => model_call(call),
        TraceStep::ToolCall(call) => tool_call(call),
    }
}

async fn load(answer: Uuid) -> Result<Vec<StepView>, String> {
    match client::message_trace(answer).await {
        Ok(trace) => Ok(trace.steps.iter().map(describe).collect()),
        // Answers written before steps were kept, and imported ones, have none.
        Err(e) if e.status == 404 => Ok(Vec::new()),
        Err(e) => Err(e.message),
    }
}

/// The steps of an answer, fetched when the panel is first opened (their code is loaded then too).
#[lazy]
async fn steps_panel(answer: Uuid) -> AnyView {
    match load(answer).await {
        Ok(steps) => view! { <StepList steps/> }.into_any(),
        Err(message) => view! { <p class="error" role="alert">{message}</p> }.into_any(),
    }
}

/// "Steps": the model calls and tool calls behind an answer.
#[component]
pub fn TraceSteps(message_id: Uuid) -> impl IntoView {
    view! {
        <Suspense fallback=|| view! { <p class="muted" role="status">"Loading steps…"</p> }>
            // Shown inside a panel opened by a click, so only ever awaited in the browser, on its one thread.
            {Suspend::new(SendWrapper::new(steps_panel(message_id)))}
        </Suspense>
    }
}

#[component]
fn StepList(steps: Vec<StepView>) -> impl IntoView {
    let row = |step: StepView| {
        view! {
            <li class="trace-step">
                <span class="trace-title">{step.title}</span>
                <span class="trace-details">{step.details.join(" · ")}</span>
                {step.lines.into_iter().map(|(label, text)| view! {
                    <span class="trace-line"><span class="trace-label">{label}": "</span><code>{text}</code></span>
                }).collect_view()}
                {step.error.map(|e| view! { <span class="trace-error">"Failed: "{e}</span> })}
            </li>
        }
    };
    view! {
        <CountedList
            heading="Steps"
            items=steps
            row
            empty="No steps were kept for this answer."
            ordered=true
            class="context-list trace-steps"
            testid="trace-steps"
        />
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::StepError;
    use serde_json::json;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(0), "0 ms");
        assert_eq!(duration(999), "999 ms");
        assert_eq!(duration(2_450), "2.4 s");
    }

    #[test]
    fn each_step_says_what_happened() {
        let call = TraceStep::ModelCall(ModelCall {
            purpose: CallPurpose::Answer,
            provider: "builtin".into(),
            model: "quire-builtin-1".into(),
            input_tokens: 1200,
            output_tokens: 40,
            counted: false,
            first_token_ms: Some(80),
            duration_ms: 1500,
            stop_reason: Some(StopReason::ToolUse),
            error: None,
            started_at: Default::default(),
        });
        let view = describe(&call);
        assert_eq!(view.title, "Model call");
        assert_eq!(
            view.details,
            [
                "quire-builtin-1 (builtin)",
                "1,200 tokens in, 40 out",
                "first token after 80 ms",
                "took 1.5 s",
                "asked for tools"
            ]
        );
        assert_eq!(view.error, None);

        let failed = TraceStep::ModelCall(ModelCall {
            first_token_ms: None,
            stop_reason: None,
            error: Some(StepError { code: "overloaded".into(), message: "The provider is overloaded.".into() }),
            ..match call {
                TraceStep::ModelCall(c) => c,
                TraceStep::ToolCall(_) => unreachable!(),
            }
        });
        let view = describe(&failed);
        assert_eq!(view.error.as_deref(), Some("The provider is overloaded. (overloaded)"));
        assert!(!view.details.iter().any(|d| d.starts_with("first token")));

        let tool = TraceStep::ToolCall(ToolCallStep {
            name: "save_artifact".into(),
            arguments: json!({"title": "User Stories", "content": "x".repeat(500)}),
            result: Some("Saved \"User Stories\".".into()),
            error: None,
            duration_ms: 12,
            started_at: Default::default(),
        });
        let view = describe(&tool);
        assert_eq!(view.title, "Tool call: save_artifact");
        assert_eq!(view.details, ["took 12 ms"]);
        assert_eq!(view.lines[0].1.chars().count(), SHOWN_CHARS + 1, "long arguments are shortened");
        assert_eq!(view.lines[1], ("Result", "Saved \"User Stories\".".to_string()));
    }
}
