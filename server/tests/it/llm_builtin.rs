//! Behaviour of the built-in provider through the `Provider` trait.

use std::time::Duration;

use futures::StreamExt;
use llm::builtin::Builtin;
use llm::builtin::{delay_from, input_tokens, split_tokens, DEFAULT_DELAY_MS};
use llm::tokens::count_tokens;
use llm::{ChatRequest, Message, Part, Provider, Role, StopReason, StreamEvent, ToolCall, ToolSpec, Usage};
use serde_json::{json, Value};

const REQUIREMENTS: &str = "We're building a mobile app for booking yoga classes. \
Customers should be able to book a class in two taps. \
As a studio manager, I want to see weekly attendance reports so that I can plan staffing. \
The app must send a reminder 24 hours before each class. \
Pages must load in under 2 seconds.";

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: format!("The {name} tool"),
        input_schema: json!({"type": "object"}),
    }
}

fn all_tools() -> Vec<ToolSpec> {
    vec![tool("save_artifact"), tool("document_search")]
}

fn request(messages: Vec<Message>, tools: Vec<ToolSpec>) -> ChatRequest {
    ChatRequest {
        system: "You are Quire, a helpful workspace assistant.".to_string(),
        messages,
        tools,
        max_tokens: 0,
        tool_choice: None,
    }
}

fn users(texts: &[&str]) -> Vec<Message> {
    texts.iter().map(|t| Message::user(*t)).collect()
}

async fn run(req: ChatRequest) -> Vec<StreamEvent> {
    let stream = Builtin::new().stream(req).await.expect("stream starts");
    stream.map(|e| e.expect("no stream error")).collect().await
}

/// The pieces of text of `events`, as they came.
fn deltas(events: &[StreamEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn text_of(events: &[StreamEvent]) -> String {
    deltas(events).concat()
}

fn calls_of(events: &[StreamEvent]) -> Vec<ToolCall> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn usage_of(events: &[StreamEvent]) -> Usage {
    events
        .iter()
        .find_map(|e| match e {
            StreamEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .expect("usage event")
}

fn stop_of(events: &[StreamEvent]) -> StopReason {
    match events.last() {
        Some(StreamEvent::Stop(reason)) => *reason,
        other => panic!("last event is not Stop: {other:?}"),
    }
}

fn content(call: &ToolCall) -> &str {
    call.arguments["content"].as_str().expect("content is a string")
}

/// The only call of `calls`, which saves a document of type `kind`.
fn the_document<'a>(calls: &'a [ToolCall], kind: &str) -> &'a ToolCall {
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].arguments["artifact_type"], kind);
    &calls[0]
}

/// Fails unless `text` holds each of `parts`, naming the one it lacks.
fn assert_holds(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "missing {part:?} in:\n{text}");
    }
}

/// The document types `calls` save, in order.
fn kinds(calls: &[ToolCall]) -> Vec<&Value> {
    calls.iter().map(|c| &c.arguments["artifact_type"]).collect()
}

/// The text of an answer that ends the turn without calling a tool.
fn plain_answer(events: &[StreamEvent]) -> String {
    assert!(calls_of(events).is_empty());
    assert_eq!(stop_of(events), StopReason::EndTurn);
    text_of(events)
}

async fn generate(latest: &str) -> Vec<ToolCall> {
    let events = run(request(users(&[REQUIREMENTS, latest]), all_tools())).await;
    assert_eq!(stop_of(&events), StopReason::ToolUse);
    calls_of(&events)
}

#[tokio::test]
async fn generates_user_stories() {
    let calls = generate("Great, please generate the user stories.").await;
    let call = the_document(&calls, "user_stories");
    assert_eq!(call.name, "save_artifact");
    assert_eq!(call.arguments["title"], "User Stories: Mobile App for Booking Yoga Classes");
    let doc = content(call);
    assert!(doc.starts_with("# User Stories: Mobile App for Booking Yoga Classes"));
    assert_holds(
        doc,
        &[
            "As a customer, I want to book a class in two taps",
            "As a studio manager, I want to see weekly attendance reports, so that I can plan staffing.",
            "I want the app to send a reminder 24 hours before each class",
            "Customers should be able to book a class in two taps.",
            "**Given**",
            "**When**",
            "**Then**",
        ],
    );
    // The request sentence itself is not a requirement.
    assert!(!doc.contains("generate the user stories"));
}

#[tokio::test]
async fn generates_business_requirements_document() {
    let calls = generate("Now write a BRD.").await;
    let doc = content(the_document(&calls, "business_requirements"));
    let sections = [
        "## 1. Purpose",
        "## 2. Scope",
        "### In scope",
        "### Out of scope",
        "## 3. Stakeholders",
        "## 4. Functional Requirements",
        "## 5. Non-Functional Requirements",
        "## 6. Assumptions",
        "## 7. Constraints and Risks",
    ];
    assert_holds(doc, &sections);
    assert_holds(
        doc,
        &[
            "**FR-1** (Should): Customers should be able to book a class in two taps.",
            "**FR-2**",
            "**FR-3** (Must): The app must send a reminder 24 hours before each class.",
            "**NFR-1** (Performance, Must): Pages must load in under 2 seconds.",
            "| Studio manager |",
        ],
    );
}

#[tokio::test]
async fn generates_requirements_document_with_priorities() {
    let calls = generate("Draft the requirements document").await;
    let call = the_document(&calls, "requirements_doc");
    assert_eq!(call.arguments["title"], "Requirements Document: Mobile App for Booking Yoga Classes");
    let doc = content(call);
    assert_holds(
        doc,
        &[
            "## 1. Introduction",
            "## 2. Overall Description",
            "| ID | Requirement | Priority |",
            "| REQ-1 | Customers should be able to book a class in two taps. | Should |",
            "| REQ-3 | The app must send a reminder 24 hours before each class. | Must |",
        ],
    );
}

#[tokio::test]
async fn generates_acceptance_criteria() {
    let calls = generate("Can you produce acceptance criteria?").await;
    let doc = content(the_document(&calls, "acceptance_criteria"));
    assert_holds(
        doc,
        &[
            "## AC-1: Book class in two taps",
            "- **When** I book a class in two taps",
            "- **Then** the app must send a reminder 24 hours before each class",
        ],
    );
    assert!(doc.matches("**Given**").count() >= 4);
}

#[tokio::test]
async fn generates_meeting_summary() {
    let transcript = "Attendees: Priya, Tom and Lena.\n\
        Priya: customers keep asking for a waitlist.\n\
        Tom said the payment provider contract ends in June.\n\
        We agreed to launch the waitlist before the summer.\n\
        Lena will draft the waitlist designs by Friday.";
    let events = run(request(users(&[transcript, "Give me a summary of the meeting"]), all_tools())).await;
    let calls = calls_of(&events);
    let doc = content(the_document(&calls, "meeting_summary"));
    assert_holds(
        doc,
        &[
            "**Attendees:** Priya, Tom, Lena",
            "**Priya:** Customers keep asking for a waitlist.",
            "- We agreed to launch the waitlist before the summer.",
            "- [ ] **Lena**: Draft the waitlist designs by Friday",
        ],
    );
}

#[tokio::test]
async fn two_types_in_one_message_make_two_calls() {
    let calls = generate("Please create user stories and a business requirements document.").await;
    assert_eq!(kinds(&calls), vec!["user_stories", "business_requirements"]);
    assert_ne!(calls[0].id, calls[1].id);

    let calls = generate("Generate the acceptance criteria, the user stories and again the user stories").await;
    assert_eq!(kinds(&calls), vec!["acceptance_criteria", "user_stories"]);
}

#[tokio::test]
async fn business_requirements_document_is_not_a_requirements_doc() {
    for (ask, kind) in [
        ("Generate the business requirements document", "business_requirements"),
        ("Generate the business requirements", "business_requirements"),
        ("Generate the requirements document", "requirements_doc"),
        ("Write an SRS", "requirements_doc"),
        ("Prepare the software requirements specification", "requirements_doc"),
    ] {
        let calls = generate(ask).await;
        assert_eq!(kinds(&calls), vec![kind], "for {ask:?}");
    }
}

#[tokio::test]
async fn only_the_latest_message_triggers_generation() {
    let messages = vec![
        Message::user(REQUIREMENTS),
        Message::user("Generate user stories"),
        Message::assistant("I've saved **User Stories: Mobile App for Booking Yoga Classes**."),
        Message::user("How long does a sprint usually take?"),
    ];
    let text = plain_answer(&run(request(messages, all_tools())).await);
    assert!(text.contains("How long does a sprint usually take"));
}

#[tokio::test]
async fn same_request_gives_same_output() {
    let req = request(users(&[REQUIREMENTS, "Generate user stories and a BRD"]), all_tools());
    let first = run(req.clone()).await;
    let second = run(req).await;
    assert_eq!(first, second);

    let chat = request(users(&[REQUIREMENTS]), all_tools());
    assert_eq!(run(chat.clone()).await, run(chat).await);
}

/// The conversation after the assistant called `name` with `arguments`, answered by `result`.
fn after_tool(earlier: &[&str], name: &str, arguments: Value, result: &str, is_error: bool) -> ChatRequest {
    let mut messages = users(earlier);
    messages.push(Message {
        role: Role::Assistant,
        parts: vec![
            Part::Text { text: "Working on it.".into() },
            Part::ToolCall(ToolCall { id: "call_1".into(), name: name.into(), arguments }),
        ],
    });
    messages.push(Message {
        role: Role::User,
        parts: vec![Part::ToolResult { call_id: "call_1".into(), content: result.into(), is_error }],
    });
    request(messages, all_tools())
}

/// The request after user stories for [`REQUIREMENTS`] were given to `save_artifact`, which answered `result`.
fn after_saving_stories(result: &str, is_error: bool) -> ChatRequest {
    let arguments = json!({"artifact_type": "user_stories", "title": "User Stories: X", "content": "# X"});
    after_tool(&[REQUIREMENTS, "Generate user stories"], "save_artifact", arguments, result, is_error)
}

#[tokio::test]
async fn confirms_saved_artifacts() {
    let req = after_saving_stories(
        "Artifact saved successfully: 'User Stories: Mobile App for Booking Yoga Classes' (ID: 7f3a)",
        false,
    );
    let text = plain_answer(&run(req).await);
    assert!(text.starts_with(
        "I've saved **User Stories: Mobile App for Booking Yoga Classes**. You can open it from the card below."
    ));
}

#[tokio::test]
async fn reports_failed_tool_calls() {
    let events = run(after_saving_stories("database is locked", true)).await;
    assert_eq!(stop_of(&events), StopReason::EndTurn);
    let text = text_of(&events);
    assert!(text.contains("Saving **User Stories: X** failed: database is locked."));
}

#[tokio::test]
async fn asks_document_search_for_questions_about_attachments() {
    let events = run(request(
        users(&[REQUIREMENTS, "What does the attached contract say about the refund policy?"]),
        all_tools(),
    ))
    .await;
    assert_eq!(stop_of(&events), StopReason::ToolUse);
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "document_search");
    assert_eq!(calls[0].arguments, json!({"query": "contract refund policy", "limit": 3}));

    // Without the tool there is nothing to call.
    let events =
        run(request(users(&["What does the attached contract say about refunds?"]), vec![tool("save_artifact")])).await;
    assert!(calls_of(&events).is_empty());
    assert!(text_of(&events).contains("can't search attached documents"));
}

#[tokio::test]
async fn answers_from_search_results_with_citations() {
    let question = "What does the attached contract say about the refund policy?";
    let result = "[source: contract.pdf]\nThe term is 12 months. Refunds are issued within 14 days \
                  of a written request. Late payments incur a 2% fee.\n\n[source: faq.md]\n\
                  Our support team answers within one business day.";
    let after_search = |result| {
        after_tool(
            &[question],
            "document_search",
            json!({"query": "contract refund policy", "limit": 3}),
            result,
            false,
        )
    };
    let events = run(after_search(result)).await;
    assert!(calls_of(&events).is_empty());
    let text = text_of(&events);
    assert!(text.starts_with("According to **contract.pdf**:"), "{text}");
    assert!(text.contains("> Refunds are issued within 14 days of a written request."));
    assert!(text.contains("Sources: contract.pdf, faq.md"));
    assert!(!text.contains("Late payments"));

    let text = text_of(&run(after_search("No results found.")).await);
    assert!(text.contains("found nothing relevant"), "{text}");
}

#[tokio::test]
async fn generates_from_attached_documents_after_searching() {
    let ask = "Generate user stories from the attached requirements document";
    let events = run(request(users(&[ask]), all_tools())).await;
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "document_search");

    let req = after_tool(
        &[ask],
        "document_search",
        calls[0].arguments.clone(),
        "[source: spec.docx]\nDrivers must be able to accept a delivery from the map. \
         Dispatchers need a live view of all vehicles.",
        false,
    );
    let events = run(req).await;
    let calls = calls_of(&events);
    let doc = content(the_document(&calls, "user_stories"));
    assert_holds(
        doc,
        &[
            "As a driver, I want to accept a delivery from the map",
            "As a dispatcher, I want a live view of all vehicles",
        ],
    );
    assert!(text_of(&events).contains("**spec.docx**"));
}

#[tokio::test]
async fn chat_answer_restates_requirements() {
    let text = plain_answer(&run(request(users(&[REQUIREMENTS]), all_tools())).await);
    assert!(text.starts_with("Got it. I noted 4 requirements from your message."));
    assert_holds(
        &text,
        &[
            "- Customers should be able to book a class in two taps.",
            "- Pages must load in under 2 seconds.",
            "user stories",
        ],
    );
    assert!(text.split_whitespace().count() < 200);

    let other = text_of(&run(request(users(&["Admins need to approve every expense over $500."]), all_tools())).await);
    assert_ne!(text, other);
    assert!(other.contains("- Admins need to approve every expense over $500."));
}

#[tokio::test]
async fn chat_answer_without_requirements_refers_to_the_message() {
    let a = text_of(&run(request(users(&["What is the capital of France?"]), all_tools())).await);
    let b = text_of(&run(request(users(&["Tell me about sprint planning."]), all_tools())).await);
    assert!(a.contains("\"What is the capital of France\""), "{a}");
    assert!(b.contains("You asked: \"Tell me about sprint planning\""), "{b}");
    assert!(b.contains("**sprint**"));
    assert_ne!(a, b);
    let hi = text_of(&run(request(users(&["hello"]), all_tools())).await);
    assert!(hi.starts_with("Hello!"));
}

#[tokio::test]
async fn without_save_artifact_the_document_is_inline() {
    let text = plain_answer(
        &run(request(users(&[REQUIREMENTS, "Generate user stories"]), vec![tool("document_search")])).await,
    );
    assert_holds(
        &text,
        &["# User Stories: Mobile App for Booking Yoga Classes", "As a customer, I want to book a class in two taps"],
    );
}

#[tokio::test]
async fn documents_without_requirements_are_still_valid() {
    let events = run(request(users(&["Generate a BRD and user stories"]), all_tools())).await;
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 2);
    for call in &calls {
        let doc = content(call);
        assert!(doc.contains("No explicit requirements were captured"), "{doc}");
        assert!(call.arguments["title"].as_str().unwrap().ends_with(": Untitled Project"));
    }
    assert!(content(&calls[0]).contains("**FR-1**: _To be defined._"));
}

#[tokio::test]
async fn token_counts_are_honest() {
    let req = request(users(&[REQUIREMENTS, "Generate user stories"]), all_tools());
    let expected_input = count_tokens(&req.system) + count_tokens(REQUIREMENTS) + count_tokens("Generate user stories");
    assert_eq!(input_tokens(&req), expected_input as u64);
    let events = run(req).await;
    let usage = usage_of(&events);
    assert_eq!(usage.input_tokens, expected_input as u64);
    let expected_output = count_tokens(&text_of(&events))
        + calls_of(&events).iter().map(|c| count_tokens(&c.arguments.to_string())).sum::<usize>();
    assert!(usage.output_tokens > 0);
    assert_eq!(usage.output_tokens, expected_output as u64);

    let events = run(request(users(&["Users must log in."]), vec![])).await;
    let usage = usage_of(&events);
    assert!(usage.input_tokens > 0);
    assert_eq!(usage.output_tokens, count_tokens(&text_of(&events)) as u64);
}

#[tokio::test]
async fn text_streams_token_by_token() {
    let events = run(request(users(&[REQUIREMENTS]), all_tools())).await;
    let deltas = deltas(&events);
    assert!(deltas.len() > 10, "only {} deltas", deltas.len());
    assert!(deltas.iter().all(|d| d.split_whitespace().count() == 1));
    // Text first, then usage, then stop.
    let n = events.len();
    assert!(matches!(events[n - 2], StreamEvent::Usage(_)));
    assert!(matches!(events[n - 1], StreamEvent::Stop(StopReason::EndTurn)));
    assert_eq!(split_tokens("  Hello  big\nworld "), vec!["  Hello  ", "big\n", "world "]);
}

#[tokio::test(start_paused = true)]
async fn sleeps_between_tokens() {
    let provider = Builtin::new().with_delay(Duration::from_millis(50));
    let req = request(users(&["Users must log in with email."]), vec![]);
    let n = provider.events(&req).iter().filter(|e| matches!(e, StreamEvent::TextDelta(_))).count();
    let start = tokio::time::Instant::now();
    let events: Vec<_> = provider.stream(req).await.unwrap().collect().await;
    assert_eq!(events.len(), n + 2);
    assert_eq!(start.elapsed(), Duration::from_millis(50) * (n as u32 - 1));
}

#[tokio::test]
async fn respects_max_tokens_for_text() {
    let mut req = request(users(&[REQUIREMENTS]), vec![]);
    req.max_tokens = 10;
    let events = run(req).await;
    assert_eq!(stop_of(&events), StopReason::MaxTokens);
    let usage = usage_of(&events);
    assert!(usage.output_tokens <= 10 && usage.output_tokens > 0);
    assert_eq!(usage.output_tokens, count_tokens(&text_of(&events)) as u64);
}

#[test]
fn names_and_configuration() {
    let p = Builtin::new();
    assert_eq!(p.name(), "builtin");
    assert_eq!(p.model(), "quire-builtin-1");
    assert_eq!(Builtin::new().with_model("other").model(), "other");
    assert_eq!(p.delay(), Duration::ZERO);
    assert_eq!(delay_from(Some("35")), Duration::from_millis(35));
    assert_eq!(delay_from(Some(" 0 ")), Duration::ZERO);
    assert_eq!(delay_from(Some("fast")), Duration::from_millis(DEFAULT_DELAY_MS));
    assert_eq!(delay_from(None), Duration::from_millis(DEFAULT_DELAY_MS));
}

#[test]
fn counts_a_long_run_of_one_character() {
    let text = "x".repeat(100 * 1024);
    let n = count_tokens(&text);
    assert!(n > 0 && n < text.len());
}
