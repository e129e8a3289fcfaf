//! A server's own requests during a call, against the real server-everything (stdio):
//! `elicitation/create` answered through `wait_for`, `sampling/createMessage` through the gate
//! and the client's model, `roots/list` with the client's root and writable directories.

use std::sync::{Arc, Mutex};

use crate::mcp_util::*;
use contenox::mcp::{load_mcp, McpConfig, McpSource};
use contenox::{
    async_trait, Answer, Client, Event, HostError, PendingRequest, Policy, ScriptEntry, WaitFor,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// A `wait_for` that never answers.
struct Silent;

#[async_trait]
impl WaitFor for Silent {
    async fn wait_for(
        &self,
        _request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        cancel.cancelled().await;
        Err("stopped".into())
    }
}

/// A `wait_for` that records every request and answers each with `answer` (`None`: fails).
struct Answering {
    seen: Mutex<Vec<PendingRequest>>,
    answer: Option<Answer>,
}

#[async_trait]
impl WaitFor for Answering {
    async fn wait_for(
        &self,
        request: PendingRequest,
        _cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        self.seen.lock().unwrap().push(request);
        self.answer
            .clone()
            .ok_or_else(|| "the person closed the dialog".into())
    }
}

fn answering(answer: Option<Answer>) -> Arc<Answering> {
    Arc::new(Answering {
        seen: Mutex::new(Vec::new()),
        answer,
    })
}

async fn everything(extra: Value) -> McpSource {
    let mut entry = everything_stdio();
    if let (Value::Object(e), Value::Object(x)) = (&mut entry, extra) {
        e.extend(x);
    }
    let config = McpConfig::from_value(json!({"mcpServers": {"everything": entry}})).unwrap();
    load_mcp(config, |_, _| {}).await
}

fn script_calling(tool: &str, args: Value) -> Vec<ScriptEntry> {
    vec![
        ScriptEntry::tool_call("c1", tool, args),
        ScriptEntry::text("done"),
    ]
}

/// The one tool result of a run.
async fn run_one(client: &Client) -> (String, bool, Vec<Event>) {
    let events = events(client.stream("go").unwrap()).await;
    let results = results(&events);
    assert_eq!(results.len(), 1, "{events:?}");
    (results[0].1.clone(), results[0].2, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_reaches_wait_for_with_its_schema_and_the_answer_reaches_the_server() {
    let source = everything(json!({})).await;
    let host = answering(Some(Answer::result(
        json!({"name": "Ada Lovelace", "check": true}),
    )));
    let client = Client::builder()
        .script(script_calling(
            "everything__trigger-elicitation-request",
            json!({}),
        ))
        .builtins(Vec::<String>::new())
        .wait_for(host.clone())
        .build()
        .unwrap();
    source.register_into(&client).unwrap();
    let (content, is_error, events) = run_one(&client).await;
    assert!(!is_error, "{content}");
    assert!(
        content.contains("User provided the requested information"),
        "{content}"
    );
    assert!(content.contains("Name: Ada Lovelace"), "{content}");
    let seen = host.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let request = &seen[0];
    assert_eq!(request.kind, contenox::mcp::ELICITATION_KIND);
    assert_eq!(request.call_id, "c1");
    assert_eq!(request.name, "everything__trigger-elicitation-request");
    let data = request.data.as_ref().unwrap();
    assert_eq!(data["server"], "everything");
    assert_eq!(data["requestedSchema"]["required"], json!(["name"]));
    assert_eq!(
        data["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Pending { request, .. } if request.kind == "elicitation")));
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_declined_invalid_cancelled_and_unanswerable() {
    for (answer, want) in [
        (Some(Answer::deny("no")), "declined"),
        // Content against the schema (name must be a string) never reaches the server.
        (Some(Answer::result(json!({"name": 42}))), "declined"),
        (None, "cancelled"),
    ] {
        // Closing a client closes the sources added to it: one source per client.
        let source = everything(json!({})).await;
        let host = answering(answer.clone());
        let client = Client::builder()
            .script(script_calling(
                "everything__trigger-elicitation-request",
                json!({}),
            ))
            .builtins(Vec::<String>::new())
            .wait_for(host.clone())
            .build()
            .unwrap();
        source.register_into(&client).unwrap();
        let (content, _, _) = run_one(&client).await;
        assert!(content.contains(want), "{answer:?}: {content}");
        assert!(!content.contains("42"), "{content}");
        source.close().await;
    }
    // No wait_for at all: declined.
    let source = everything(json!({})).await;
    let client = Client::builder()
        .script(script_calling(
            "everything__trigger-elicitation-request",
            json!({}),
        ))
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    source.register_into(&client).unwrap();
    let (content, _, _) = run_one(&client).await;
    assert!(content.contains("declined"), "{content}");
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_elicitation_declines_before_the_call_times_out() {
    let source = everything(json!({"timeout_ms": 4000})).await;
    let client = Client::builder()
        .script(script_calling(
            "everything__trigger-elicitation-request",
            json!({}),
        ))
        .builtins(Vec::<String>::new())
        .wait_for(Arc::new(Silent))
        .build()
        .unwrap();
    source.register_into(&client).unwrap();
    let started = std::time::Instant::now();
    let (content, _, _) = run_one(&client).await;
    assert!(content.contains("declined"), "{content}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_turned_off_is_not_offered() {
    let source = everything(json!({"elicitation": false, "roots": false})).await;
    let names: Vec<String> = source.tools().iter().map(|t| t.spec().name).collect();
    assert!(names.iter().any(|n| n == "everything__echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("elicitation-request")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("roots")), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("sampling")),
        "sampling is off by default: {names:?}"
    );
    source.close().await;
}

fn sampling_client(policy: Option<Value>, script: Vec<ScriptEntry>) -> Client {
    let mut b = Client::builder()
        .script(script)
        .builtins(Vec::<String>::new());
    if let Some(p) = policy {
        b = b.policy(Policy::from_value(&p).unwrap());
    }
    b.build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_denied_by_policy_then_allowed_with_its_usage_counted() {
    let source = everything(json!({"sampling": true})).await;
    let call = ScriptEntry::tool_call(
        "c1",
        "everything__trigger-sampling-request",
        json!({"prompt": "a haiku", "maxTokens": 50}),
    );
    // Denied: the policy's rule for the `sampling` call of MCP servers.
    let deny = json!({"default_action": "allow", "rules": [
        {"tools": "mcp", "tool": "sampling", "action": "deny"}]});
    let client = sampling_client(Some(deny), vec![call.clone(), ScriptEntry::text("done")]);
    source.register_into(&client).unwrap();
    let (content, _, seen) = run_one(&client).await;
    assert!(content.contains("policy denied sampling"), "{content}");
    let gate = seen
        .iter()
        .find_map(|e| match e {
            Event::Gate { name, decision, .. } if name == "sampling" => {
                Some(format!("{decision:?}"))
            }
            _ => None,
        })
        .expect("a gate event for the sampling request");
    assert!(gate.contains("Deny"), "{gate}");
    source.close().await;
    // Allowed: the client's model answers, its usage counts in the turn's.
    let source = everything(json!({"sampling": true})).await;
    let mut answer = ScriptEntry::text("Leaves fall on the disk");
    answer.usage = Some(contenox::Usage {
        input_tokens: 1000,
        output_tokens: 7,
        ..Default::default()
    });
    let client = sampling_client(None, vec![call, answer, ScriptEntry::text("done")]);
    source.register_into(&client).unwrap();
    let seen = events(client.stream("go").unwrap()).await;
    let results = results(&seen);
    assert_eq!(results.len(), 1, "{seen:?}");
    assert!(
        results[0].1.contains("Leaves fall on the disk"),
        "{results:?}"
    );
    let usage = seen
        .iter()
        .find_map(|e| match e {
            Event::TurnEnd { usage, .. } => Some(*usage),
            _ => None,
        })
        .unwrap();
    assert!(usage.input_tokens >= 1000, "{usage:?}");
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_off_is_refused_cleanly() {
    // Off (the default): server-everything does not even offer its sampling tool; a server
    // that asks anyway gets an error answer, never a model request (see the unit tests).
    let source = everything(json!({})).await;
    assert!(!source
        .tools()
        .iter()
        .any(|t| t.spec().name.contains("sampling")));
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_are_the_clients_root_and_writable_dirs() {
    let root = tempfile::tempdir().unwrap();
    let writable = tempfile::tempdir().unwrap();
    let source = everything(json!({})).await;
    let config: contenox::Config = serde_json::from_value(json!({
        "style": "scripted", "builtins": [],
        "sandbox": {"writable": [writable.path()]},
        "script": [
            {"tool_calls": [{"id": "c1", "name": "everything__get-roots-list", "arguments": {}}]},
            {"text": "done"}
        ]
    }))
    .unwrap();
    let client = contenox::ClientBuilder::from_config(config)
        .root(root.path())
        .build()
        .unwrap();
    source.register_into(&client).unwrap();
    let (content, is_error, _) = run_one(&client).await;
    assert!(!is_error, "{content}");
    let root_uri = url_of(&root.path().canonicalize().unwrap());
    let writable_uri = url_of(writable.path());
    assert!(content.contains(&root_uri), "{root_uri} in {content}");
    assert!(
        content.contains(&writable_uri),
        "{writable_uri} in {content}"
    );
    source.close().await;
}

fn url_of(p: &std::path::Path) -> String {
    format!("file://{}", p.display())
}
