//! `/mcp`, the Model Context Protocol endpoint, spoken as a client would (JSON-RPC over streamable HTTP): only a
//! live personal API token signs in (no token, a session's token or cookie, a revoked token: 401); its tools read
//! the token owner's conversations, documents (at a chosen version) and requirements ledger with coverage and
//! out-of-date marks; bad arguments are tool errors; another person's conversation or document is "not found"
//! exactly like a missing one, until it is in a project they are a member of; each request counts against the owner's rate limit, a search also against the
//! search limit. On SQLite and, with `scripts/with-postgres`, on PostgreSQL.

use reqwest::{header, StatusCode};
use serde_json::{json, Value};
use uuid::Uuid;
use wire::{CreatedToken, TokenScope};

use crate::common::{bearer_client, created, every_store, ScriptedModel, TestServer};

/// A client of `/mcp` with a bearer value (or none).
struct Mcp {
    client: reqwest::Client,
    url: String,
}

impl Mcp {
    fn new(server: &TestServer, client: reqwest::Client) -> Self {
        Self { client, url: server.url("/mcp") }
    }

    /// Posts one JSON-RPC message as the transport does: the HTTP answer, whatever its status.
    async fn post(&self, message: &Value) -> reqwest::Response {
        self.client
            .post(&self.url)
            .header(header::ACCEPT, "application/json, text/event-stream")
            .json(message)
            .send()
            .await
            .unwrap()
    }

    /// The JSON-RPC answer to `method` with `params` (its `result` or `error` object).
    async fn call(&self, method: &str, params: Value) -> Value {
        let response = self.post(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).await;
        assert_eq!(response.status(), StatusCode::OK, "{method}");
        let kind = response.headers().get(header::CONTENT_TYPE).cloned();
        let text = response.text().await.unwrap();
        // A server may answer with JSON or an event stream whose data is the JSON-RPC message.
        let body = if kind.is_some_and(|k| k.to_str().unwrap_or_default().starts_with("text/event-stream")) {
            text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|d| !d.is_empty()).unwrap()
        } else {
            &text
        };
        let message: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(message["id"], 1, "{message}");
        message
    }

    /// A tool's answer: its text, and whether it is a tool error.
    async fn tool(&self, name: &str, arguments: Value) -> (String, bool) {
        let message = self.call("tools/call", json!({"name": name, "arguments": arguments})).await;
        let result = &message["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{message}")).to_string();
        (text, result["isError"] == true)
    }

    /// A tool's answer parsed as JSON; panics on a tool error.
    async fn tool_json(&self, name: &str, arguments: Value) -> Value {
        let (text, is_error) = self.tool(name, arguments).await;
        assert!(!is_error, "{name}: {text}");
        serde_json::from_str(&text).unwrap()
    }
}

/// A new token of `client`'s person.
async fn token(server: &TestServer, client: &reqwest::Client, scope: TokenScope) -> CreatedToken {
    let body = json!({"name": "Assistant", "scope": scope, "expires_in_days": 30});
    let response = client.post(server.url("/api/tokens")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.unwrap()
}

fn initialize() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}})
}

#[tokio::test]
async fn only_a_live_api_token_signs_in_at_mcp() {
    for (store, _guard) in every_store("mcp_sign_in").await {
        let server = TestServer::builtin(store).await;
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize()});

        let unauthorized = |response: reqwest::Response| async move {
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
            let body: wire::ErrorBody = response.json().await.unwrap();
            assert_eq!(body.error.code, "unauthorized");
        };
        unauthorized(Mcp::new(&server, reqwest::Client::new()).post(&ping).await).await;
        // A session signs in everywhere else, by bearer or by cookie (from Quire's own page); not here.
        unauthorized(Mcp::new(&server, server.client.clone()).post(&ping).await).await;
        let cookie = format!("{}={}", server.state.config.session_cookie_name(), server.token);
        let by_cookie = reqwest::Client::new()
            .post(server.url("/mcp"))
            .header(header::COOKIE, cookie)
            .header(header::ORIGIN, &server.base)
            .header(header::ACCEPT, "application/json, text/event-stream")
            .json(&ping);
        unauthorized(by_cookie.send().await.unwrap()).await;
        unauthorized(Mcp::new(&server, bearer_client("quire_pat_notatoken")).post(&ping).await).await;

        // Both scopes may use it: its tools only read.
        for scope in [TokenScope::Read, TokenScope::Chat] {
            let created = token(&server, &server.client, scope).await;
            let mcp = Mcp::new(&server, bearer_client(&created.token));
            let answer = mcp.call("initialize", initialize()).await;
            assert_eq!(answer["result"]["serverInfo"]["name"], "quire", "{answer}");
            assert!(answer["result"]["capabilities"]["tools"].is_object(), "{answer}");
            // Stateless: no event stream to open, no session to end.
            for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
                let response = mcp.client.request(method.clone(), &mcp.url).send().await.unwrap();
                assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
            }

            let revoke = server.client.delete(server.url(&format!("/api/tokens/{}", created.info.id)));
            assert_eq!(revoke.send().await.unwrap().status(), StatusCode::NO_CONTENT);
            unauthorized(mcp.post(&ping).await).await;
        }
    }
}

#[tokio::test]
async fn tools_read_conversations_documents_and_the_ledger_of_the_token_s_owner_only() {
    for (store, _guard) in every_store("mcp_tools").await {
        let server = TestServer::builtin(store).await;
        let thread = server.create_thread().await;
        let frames = server
            .chat(
                thread,
                "We are building a salon booking app. Customers must be able to book 30-minute slots. Staff \
                 should see the day's bookings. Write user stories.",
            )
            .await;
        let doc = created(&frames).first().cloned().expect("a document");
        server.chat(thread, "Slots should be 45 minutes, not 30.").await;
        let patch = server.client.patch(server.url(&format!("/api/threads/{thread}/requirements/R-1")));
        let patched = patch.json(&json!({"text": "Customers must be able to book 60-minute slots."})).send();
        assert_eq!(patched.await.unwrap().status(), StatusCode::OK);

        let mcp = Mcp::new(&server, bearer_client(&token(&server, &server.client, TokenScope::Read).await.token));
        mcp.call("initialize", initialize()).await;
        let listed = mcp.call("tools/list", json!({})).await;
        let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["search_conversations", "list_conversations", "list_documents", "read_document", "list_requirements"]
        );
        for tool in tools {
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
            assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
        }

        let hits = mcp.tool_json("search_conversations", json!({"query": "bookings", "limit": 5})).await;
        let results = hits["results"].as_array().unwrap();
        assert!(!results.is_empty(), "{hits}");
        assert!(results.iter().all(|r| r["thread_id"] == thread.to_string()), "{hits}");

        let conversations = mcp.tool_json("list_conversations", json!({})).await;
        assert_eq!(conversations[0]["id"], thread.to_string(), "{conversations}");

        let documents = mcp.tool_json("list_documents", json!({"conversation_id": thread})).await;
        assert_eq!(documents.as_array().unwrap().len(), 1, "{documents}");
        assert_eq!(documents[0]["id"], doc.id.to_string());
        assert_eq!(documents[0]["version"], 2);
        assert_eq!(documents[0]["requirements"], json!(["R-1", "R-2"]));
        assert_eq!(documents[0]["out_of_date"][0]["key"], "R-1", "{documents}");
        assert!(documents[0].get("content").is_none(), "a list carries no text");

        let current = mcp.tool_json("read_document", json!({"document_id": doc.id})).await;
        assert_eq!((current["version"].as_i64(), current["current_version"].as_i64()), (Some(2), Some(2)));
        assert!(current["content"].as_str().unwrap().contains("45-minute"), "{current}");
        assert_eq!(current["truncated"], false);
        assert_eq!(current["out_of_date"][0]["key"], "R-1", "{current}");
        let first = mcp.tool_json("read_document", json!({"document_id": doc.id, "version": 1})).await;
        assert_eq!((first["version"].as_i64(), first["current_version"].as_i64()), (Some(1), Some(2)));
        assert!(first["content"].as_str().unwrap().contains("30-minute"), "{first}");
        assert_eq!(first["content"], doc.content);

        let ledger = mcp.tool_json("list_requirements", json!({"conversation_id": thread})).await;
        let texts: Vec<&str> =
            ledger["requirements"].as_array().unwrap().iter().map(|r| r["text"].as_str().unwrap()).collect();
        assert_eq!(texts, ["Customers must be able to book 60-minute slots.", "Staff should see the day's bookings."]);
        assert_eq!(ledger["requirements"][0]["status"], "changed");

        // Bad arguments are the tool's errors, saying what is wrong; an unknown tool is the protocol's.
        for (name, arguments) in [
            ("read_document", json!({"document_id": "not-a-uuid"})),
            ("read_document", json!({})),
            ("list_documents", json!({"conversation_id": thread, "extra": 1})),
            ("search_conversations", json!({"query": "x", "limit": 0})),
            ("search_conversations", json!({"query": "x".repeat(1001)})),
        ] {
            let (text, is_error) = mcp.tool(name, arguments.clone()).await;
            assert!(is_error, "{name} {arguments}: {text}");
            assert!(text.starts_with("invalid_arguments: ") || text.starts_with("validation_failed: "), "{text}");
        }
        let (text, is_error) = mcp.tool("read_document", json!({"document_id": doc.id, "version": 9})).await;
        assert!(is_error && text == "not_found: Not found.", "{text}");
        let unknown = mcp.call("tools/call", json!({"name": "delete_everything", "arguments": {}})).await;
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

        // Another person's conversation and document are as missing as ones that never were.
        let (bob, _) = server.second_user("bob@example.com").await;
        let theirs = Mcp::new(&server, bearer_client(&token(&server, &bob, TokenScope::Chat).await.token));
        let missing = Uuid::now_v7();
        for (name, arguments) in [
            ("list_documents", json!({"conversation_id": thread})),
            ("list_documents", json!({"conversation_id": missing})),
            ("list_requirements", json!({"conversation_id": thread})),
            ("list_requirements", json!({"conversation_id": missing})),
            ("read_document", json!({"document_id": doc.id})),
            ("read_document", json!({"document_id": doc.id, "version": 1})),
            ("read_document", json!({"document_id": missing})),
        ] {
            assert_eq!(
                theirs.tool(name, arguments.clone()).await,
                ("not_found: Not found.".to_string(), true),
                "{name} {arguments}"
            );
        }
        let hits = theirs.tool_json("search_conversations", json!({"query": "bookings"})).await;
        assert_eq!(hits["results"], json!([]), "{hits}");
        assert_eq!(theirs.tool_json("list_conversations", json!({})).await, json!([]));

        // Once the conversation is in a project they are a member of, they read it, as through the API.
        let made = server.client.post(server.url("/api/projects")).json(&json!({"name": "Salon"})).send().await;
        let project: wire::Project = made.unwrap().json().await.unwrap();
        let members = server.url(&format!("/api/projects/{}/members", project.id));
        let added = server.client.post(members).json(&json!({"email": "bob@example.com", "role": "viewer"})).send();
        assert_eq!(added.await.unwrap().status(), StatusCode::CREATED);
        let moved = server.patch_thread(thread, &json!({"project_id": project.id})).await;
        assert_eq!(moved.status(), StatusCode::OK);
        let documents = theirs.tool_json("list_documents", json!({"conversation_id": thread})).await;
        assert_eq!(documents[0]["id"], doc.id.to_string(), "{documents}");
        let first = theirs.tool_json("read_document", json!({"document_id": doc.id, "version": 1})).await;
        assert_eq!(first["content"], doc.content);
        let ledger = theirs.tool_json("list_requirements", json!({"conversation_id": thread})).await;
        assert_eq!(ledger["requirements"].as_array().map(Vec::len), Some(2), "{ledger}");
        let hits =
            theirs.tool_json("search_conversations", json!({"query": "bookings", "project_id": project.id})).await;
        assert!(hits["results"].as_array().is_some_and(|r| !r.is_empty()), "{hits}");
        let elsewhere = json!({"query": "bookings", "project_id": Uuid::now_v7()});
        assert_eq!(theirs.tool("search_conversations", elsewhere).await, ("not_found: Not found.".to_string(), true));
    }
}

#[tokio::test]
async fn mcp_requests_count_against_the_owner_s_rate_limits() {
    for (store, _guard) in every_store("mcp_limits").await {
        let server = TestServer::with_configured(store, ScriptedModel::new(Vec::new()), |config| {
            config.limits.general = 6;
            config.limits.search = 2;
        })
        .await;
        // One request of the session's (making the token), then the token's.
        let mcp = Mcp::new(&server, bearer_client(&token(&server, &server.client, TokenScope::Read).await.token));
        for _ in 0..2 {
            assert!(!mcp.tool("search_conversations", json!({"query": "slots"})).await.1);
        }
        let (text, is_error) = mcp.tool("search_conversations", json!({"query": "slots"})).await;
        assert!(is_error && text.starts_with("rate_limited: "), "{text}");
        // The same person's searches, whichever way they sign in.
        let searched = server.client.get(server.url("/api/search?q=slots")).send().await.unwrap();
        assert_eq!(searched.status(), StatusCode::TOO_MANY_REQUESTS);

        mcp.call("tools/list", json!({})).await;
        let over = mcp.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
        assert_eq!(over.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(over.headers().get(header::RETRY_AFTER).is_some());
    }
}
