//! MCP against real servers: @modelcontextprotocol/server-everything (stdio and streamable
//! HTTP) and tests/mcp/fast_server.py (the Python SDK's MCPServer, stdio and HTTP). Install them
//! with tests/mcp/install.sh. Every test checks that no process of its servers is left.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::mcp_util::*;
use contenox::mcp::{load_mcp, McpConfig, McpSource, ServerState};
use contenox::{Client, Event, Outcome, ScriptEntry, Source};
use serde_json::{json, Value};

const GONE: Duration = Duration::from_secs(5);

async fn load(servers: Value) -> (McpSource, Vec<(String, ServerState)>) {
    let config = McpConfig::from_value(json!({ "mcpServers": servers })).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let source = load_mcp(config, move |name, state| {
        sink.lock().unwrap().push((name.to_string(), state.clone()));
    })
    .await;
    let seen = seen.lock().unwrap().clone();
    (source, seen)
}

fn client(script: Vec<ScriptEntry>, hooks: Arc<Recorder>) -> Client {
    let dir = std::env::temp_dir();
    Client::builder()
        .script(script)
        .root(dir)
        .builtins(Vec::<String>::new())
        .hooks(hooks)
        .build()
        .unwrap()
}

fn call(id: &str, name: &str, args: Value) -> ScriptEntry {
    ScriptEntry::tool_call(id, name, args)
}

/// One model response with several tool calls.
fn calls(list: Vec<(&str, &str, Value)>) -> ScriptEntry {
    let list: Vec<Value> = list
        .into_iter()
        .map(|(id, name, arguments)| json!({"id": id, "name": name, "arguments": arguments}))
        .collect();
    serde_json::from_value(json!({ "tool_calls": list })).unwrap()
}

/// Close the source and check that every process of its stdio servers is gone.
async fn close_and_check(source: &McpSource) {
    let pids = source.pids().await;
    assert!(!pids.is_empty(), "no stdio server was running");
    source.close().await;
    for (_, pid) in pids {
        wait_group_gone(pid as i32, GONE);
    }
}

#[test]
fn everything_over_stdio() {
    crate::alone::run("mcp_servers::everything_over_stdio_alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by everything_over_stdio, alone in a process of its own (it sets environment variables)"]
async fn everything_over_stdio_alone() {
    if !crate::alone::here("mcp_servers::everything_over_stdio_alone") {
        return;
    }
    std::env::set_var("CONTENOX_MCP_HOST_SECRET", "host-secret-value");
    let mut entry = everything_stdio();
    entry["env"] = json!({"CONTENOX_MCP_GIVEN": "given-value"});
    let (source, seen) = load(json!({ "everything": entry })).await;
    assert_eq!(seen.len(), 1);
    let ServerState::Ready { tools } = &seen[0].1 else {
        panic!("{seen:?}")
    };
    assert!(*tools >= 5, "{tools}");
    let specs: Vec<_> = source.tools().iter().map(|t| t.spec()).collect();
    let env_tool = specs
        .iter()
        .find(|s| s.name == "everything__get-env")
        .unwrap();
    assert_eq!(env_tool.hints.read_only, Some(true));
    assert_eq!(env_tool.hints.destructive, Some(false));
    assert_eq!(env_tool.hints.open_world, Some(false));

    let gate = Recorder::new(false);
    let client = client(
        vec![
            calls(vec![
                ("c1", "everything__echo", json!({"message": "hi"})),
                ("c2", "everything__get-tiny-image", json!({})),
                ("c3", "everything__get-env", json!({})),
                (
                    "c4",
                    "everything__get-structured-content",
                    json!({"location": "New York"}),
                ),
            ]),
            ScriptEntry::text("done"),
        ],
        gate.clone(),
    );
    source.register_into(&client).unwrap();
    let events = events(client.stream("go").unwrap()).await;
    let results = results(&events);
    assert_eq!(results.len(), 4, "{results:?}");
    assert_eq!(results[0].1, "Echo: hi");
    assert!(!results[0].2);
    assert!(
        results[1].1.contains("[image: image/png, "),
        "{}",
        results[1].1
    );
    assert!(
        !results[1].1.contains("iVBOR"),
        "base64 leaked into the context"
    );
    assert!(results[2].1.contains("given-value"));
    assert!(
        !results[2].1.contains("host-secret-value"),
        "host env leaked"
    );
    assert!(results[3].1.contains("temperature"), "{}", results[3].1);

    let e = gate.event("everything__echo");
    assert_eq!(e.source, Source::Mcp);
    assert_eq!(e.server.as_deref(), Some("everything"));
    close_and_check(&source).await;
    crate::alone::done();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http_with_headers() {
    let http = tokio::task::spawn_blocking(HttpServer::everything)
        .await
        .unwrap();
    let (source, seen) = load(json!({
        "remote": {"type": "http", "url": http.url(), "headers": {"X-Contenox-Test": "header-value"}}
    }))
    .await;
    assert!(
        matches!(seen[0].1, ServerState::Ready { tools } if tools >= 5),
        "{seen:?}"
    );
    let gate = Recorder::new(false);
    let client = client(
        vec![
            call("c1", "remote__get-sum", json!({"a": 2, "b": 40})),
            ScriptEntry::text("done"),
        ],
        gate.clone(),
    );
    source.register_into(&client).unwrap();
    let events = events(client.stream("add").unwrap()).await;
    let results = results(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].1.contains("42"), "{results:?}");
    assert_eq!(
        gate.event("remote__get-sum").server.as_deref(),
        Some("remote")
    );
    // No header value anywhere the model or the gate could see.
    let transcript = client.transcript().to_json();
    assert!(!transcript.contains("header-value"));
    assert!(!format!("{:?}", client.tools()).contains("header-value"));
    source.close().await;
    assert!(source.is_closed());
    drop(http);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_hints_injection_and_gate() {
    let mut entry = fast_stdio(json!({}));
    entry["inject"] = json!({"tenant": "tenant-secret", "api_key": "key-secret"});
    let (source, seen) = load(json!({ "fast": entry })).await;
    assert!(matches!(seen[0].1, ServerState::Ready { .. }), "{seen:?}");
    let specs: Vec<_> = source.tools().iter().map(|t| t.spec()).collect();
    let find = |n: &str| specs.iter().find(|s| s.name == n).unwrap().clone();

    // Hints from annotations; absent stays absent.
    let lookup = find("fast__lookup").hints;
    assert_eq!(
        (lookup.read_only, lookup.destructive, lookup.open_world),
        (Some(true), Some(false), Some(false))
    );
    let delete = find("fast__delete_item").hints;
    assert_eq!(
        (delete.read_only, delete.destructive),
        (Some(false), Some(true))
    );
    assert_eq!(delete.open_world, None);
    let remote = find("fast__fetch_remote").hints;
    assert_eq!(
        (remote.read_only, remote.destructive, remote.open_world),
        (None, None, Some(true))
    );
    assert!(find("fast__plain").hints.is_empty());

    // Injected names are gone from the schema the model sees.
    let whoami = find("fast__whoami");
    let schema = whoami.input_schema.to_string();
    assert!(
        !schema.contains("tenant") && !schema.contains("api_key"),
        "{schema}"
    );
    assert_eq!(whoami.input_schema["required"], json!(["user"]));
    let all_specs = serde_json::to_string(&specs).unwrap();
    assert!(!all_specs.contains("tenant-secret") && !all_specs.contains("key-secret"));

    let gate = Recorder::new(true);
    let client = client(
        vec![
            calls(vec![
                (
                    "c1",
                    "fast__whoami",
                    json!({"user": "ann", "tenant": "model-tenant"}),
                ),
                ("c2", "fast__delete_item", json!({"item": "x"})),
                ("c3", "fast__lookup", json!({"key": "k"})),
            ]),
            ScriptEntry::text("done"),
        ],
        gate.clone(),
    );
    source.register_into(&client).unwrap();
    let events = events(client.stream("go").unwrap()).await;
    let results = results(&events);
    // The injected value wins over the model's.
    assert_eq!(results[0].1, "user=ann tenant=tenant-secret key=key-secret");
    // The destructive tool was denied through its hint, not run.
    assert!(results[1].2);
    assert!(results[1].1.contains("destructive tools are not allowed"));
    assert_eq!(results[2].1, "value of k");

    let e = gate.event("fast__delete_item");
    assert_eq!(e.hints.destructive, Some(true));
    assert_eq!(e.source, Source::Mcp);
    assert_eq!(e.server.as_deref(), Some("fast"));
    // The gate sees what the model sent, not the injected secrets.
    let seen_by_gate = format!("{:?}", gate.events.lock().unwrap());
    assert!(!seen_by_gate.contains("tenant-secret"));
    // And the model never got them back in a request: only the tool's own answer has them.
    let transcript = client.transcript().to_json();
    assert_eq!(transcript.matches("tenant-secret").count(), 1);
    close_and_check(&source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_results_text_blobs_structured_errors() {
    let (source, _) = load(json!({ "fast": fast_stdio(json!({})) })).await;
    let client = client(
        vec![
            calls(vec![
                ("c1", "fast__picture", json!({})),
                ("c2", "fast__weather", json!({"city": "Oslo"})),
                ("c3", "fast__refuse", json!({"reason": "no"})),
                ("c4", "fast__no_such_tool_here", json!({})),
            ]),
            ScriptEntry::text("done"),
        ],
        Recorder::new(false),
    );
    source.register_into(&client).unwrap();
    let events = events(client.stream("go").unwrap()).await;
    let results = results(&events);
    assert_eq!(results[0].1, "[image: image/png, 67 bytes]");
    assert!(!results[0].2);
    let weather: Value = serde_json::from_str(&results[1].1).unwrap();
    assert_eq!(weather, json!({"city": "Oslo", "celsius": 21}));
    assert!(results[2].2);
    assert!(results[2].1.contains("refuse"), "{}", results[2].1);
    assert!(results[3].2, "unknown tool must be an error");
    close_and_check(&source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_sends_mcp_cancellation_and_returns_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled.txt");
    let (source, _) = load(json!({
        "fast": fast_stdio(json!({"CANCEL_MARKER": marker.to_string_lossy()}))
    }))
    .await;
    let client = client(
        vec![
            call("c1", "fast__sleep", json!({"seconds": 30})),
            ScriptEntry::text("unreached"),
        ],
        Recorder::new(false),
    );
    source.register_into(&client).unwrap();
    let mut run = client.stream("sleep").unwrap();
    loop {
        match run.next_event().await {
            Some(Event::ToolStart { .. }) => break,
            Some(_) => {}
            None => panic!("the turn ended before the tool started"),
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    run.cancel();
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The server learned of the cancel (notifications/cancelled) and stopped the tool.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the server never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    close_and_check(&source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_is_an_error_result_and_cancels_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled.txt");
    let mut entry = fast_stdio(json!({"CANCEL_MARKER": marker.to_string_lossy()}));
    entry["timeout_ms"] = json!(3000);
    let (source, _) = load(json!({ "fast": entry })).await;
    let client = client(
        vec![
            call("c1", "fast__sleep", json!({"seconds": 30})),
            ScriptEntry::text("done"),
        ],
        Recorder::new(false),
    );
    source.register_into(&client).unwrap();
    let started = Instant::now();
    let events = events(client.stream("sleep").unwrap()).await;
    let results = results(&events);
    assert!(results[0].2);
    assert!(
        results[0].1.contains("timed out after 3000 ms"),
        "{}",
        results[0].1
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() {
        assert!(
            Instant::now() < deadline,
            "the server never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    close_and_check(&source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_is_restarted_on_the_next_call() {
    let (source, _) = load(json!({ "fast": fast_stdio(json!({})) })).await;
    let first_pid = source.pids().await[0].1;
    let client = client(
        vec![
            call("c1", "fast__crash", json!({})),
            call("c2", "fast__pid", json!({})),
            ScriptEntry::text("done"),
        ],
        Recorder::new(false),
    );
    source.register_into(&client).unwrap();
    let events = events(client.stream("crash").unwrap()).await;
    let results = results(&events);
    assert!(results[0].2, "{results:?}");
    assert!(results[0].1.contains("went away"), "{}", results[0].1);
    assert!(
        results[0].1.contains("crashing on purpose"),
        "stderr tail: {}",
        results[0].1
    );
    assert!(!results[1].2, "{results:?}");
    let second_pid: u32 = results[1].1.trim().parse().unwrap();
    assert_ne!(first_pid, second_pid);
    assert_eq!(source.pids().await[0].1, second_pid);
    wait_group_gone(first_pid as i32, GONE);
    close_and_check(&source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_offers_new_tools_from_the_next_request() {
    let (source, _) = load(json!({ "fast": fast_stdio(json!({})) })).await;
    let client = client(
        vec![
            call("c1", "fast__add_tool", json!({"name": "late"})),
            call("c2", "fast__late", json!({})),
            ScriptEntry::text("done"),
        ],
        Recorder::new(false),
    );
    source.register_into(&client).unwrap();
    assert!(!client.tools().iter().any(|t| t.name == "fast__late"));
    let events = events(client.stream("add").unwrap()).await;
    let results = results(&events);
    assert_eq!(results[0].1, "added");
    assert_eq!(results[1].1, "late here", "{results:?}");
    assert!(client.tools().iter().any(|t| t.name == "fast__late"));
    close_and_check(&source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_tools_list_and_read() {
    let (source, _) = load(json!({
        "fast": fast_stdio(json!({})),
        "everything": everything_stdio()
    }))
    .await;
    let tools = source.resource_tools();
    let specs: Vec<_> = tools.iter().map(|t| t.spec()).collect();
    assert_eq!(specs[0].name, "list_mcp_resources");
    assert_eq!(specs[1].name, "read_mcp_resource");
    for s in &specs {
        assert_eq!(s.hints.read_only, Some(true));
        assert_eq!(s.hints.destructive, Some(false));
    }
    let gate = Recorder::new(false);
    let client = client(
        vec![
            calls(vec![
                ("c1", "list_mcp_resources", json!({})),
                ("c2", "list_mcp_resources", json!({"server": "fast"})),
                (
                    "c3",
                    "read_mcp_resource",
                    json!({"server": "fast", "uri": "note://hello"}),
                ),
                (
                    "c4",
                    "read_mcp_resource",
                    json!({"server": "fast", "uri": "data://bytes"}),
                ),
                (
                    "c5",
                    "read_mcp_resource",
                    json!({"server": "nope", "uri": "x://y"}),
                ),
            ]),
            ScriptEntry::text("done"),
        ],
        gate.clone(),
    );
    for t in tools {
        client.register(t).unwrap();
    }
    let events = events(client.stream("resources").unwrap()).await;
    let results = results(&events);
    let all: Value = serde_json::from_str(&results[0].1).unwrap();
    let all = all.as_array().unwrap();
    assert!(all
        .iter()
        .any(|r| r["server"] == "fast" && r["uri"] == "note://hello"));
    assert!(all.iter().any(|r| r["server"] == "everything"));
    let fast_only: Value = serde_json::from_str(&results[1].1).unwrap();
    assert!(fast_only
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["server"] == "fast"));
    assert_eq!(results[2].1, "hello from a resource");
    assert_eq!(
        results[3].1,
        "[blob data://bytes: application/octet-stream, 1024 bytes]"
    );
    assert!(results[4].2, "an invalid server is an error");
    assert_eq!(gate.event("read_mcp_resource").source, Source::Mcp);
    close_and_check(&source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_servers_do_not_stop_the_others() {
    let (source, seen) = load(json!({
        "broken": fast_stdio(json!({"FAIL_AT_START": "boom at start"})),
        "fast": fast_stdio(json!({})),
        "missing": {"command": "/nonexistent/mcp-server"},
        "unreachable": {"type": "http", "url": format!("http://127.0.0.1:{}/mcp", free_port()), "timeout_ms": 3000}
    }))
    .await;
    assert_eq!(seen.len(), 4, "on_server once per server: {seen:?}");
    let state = |n: &str| seen.iter().find(|(s, _)| s == n).unwrap().1.clone();
    match state("broken") {
        // The server printed its `env` value to stderr: the tail shows, the value does not
        // (env values of a server are treated as secrets, like its tokens).
        ServerState::Failed { error } => {
            assert!(error.contains("server stderr"), "{error}");
            assert!(!error.contains("boom at start"), "{error}");
            assert!(error.contains("[redacted]"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    match state("missing") {
        ServerState::Failed { error } => assert!(error.contains("cannot start"), "{error}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(state("unreachable"), ServerState::Failed { .. }));
    assert!(matches!(state("fast"), ServerState::Ready { .. }));
    assert_eq!(source.servers().len(), 4);
    assert!(source
        .tools()
        .iter()
        .all(|t| t.spec().name.starts_with("fast__")));
    close_and_check(&source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_client_stops_the_servers() {
    let (source, _) = load(json!({ "fast": fast_stdio(json!({})) })).await;
    let pid = source.pids().await[0].1;
    let client = client(vec![ScriptEntry::text("x")], Recorder::new(false));
    source.register_into(&client).unwrap();
    client.close();
    let deadline = Instant::now() + GONE;
    while !source.is_closed() {
        assert!(
            Instant::now() < deadline,
            "closing the client did not close the source"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::task::spawn_blocking(move || wait_group_gone(pid as i32, GONE))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_source_kills_the_servers() {
    let (source, _) = load(json!({
        "a": fast_stdio(json!({})),
        "b": everything_stdio()
    }))
    .await;
    let pids = source.pids().await;
    assert_eq!(pids.len(), 2);
    let tools = source.tools();
    drop(source);
    for (_, pid) in pids {
        tokio::task::spawn_blocking(move || wait_group_gone(pid as i32, GONE))
            .await
            .unwrap();
    }
    // A tool of a dropped source answers with an error instead of starting a server again.
    let ctx = contenox::ToolContext::detached(std::env::temp_dir(), "a__pid");
    let tool = tools.iter().find(|t| t.spec().name == "a__pid").unwrap();
    let out = tool.call(json!({}), ctx).await.unwrap();
    assert!(out.is_error);
    assert!(out.content_text().contains("closed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_over_streamable_http() {
    let http = tokio::task::spawn_blocking(HttpServer::fast).await.unwrap();
    let mut source_cfg =
        json!({"type": "http", "url": http.url(), "headers": {"Authorization": "Bearer tok-123"}});
    source_cfg["inject"] = json!({"tenant": "t-9"});
    let (source, seen) = load(json!({ "fast": source_cfg })).await;
    assert!(matches!(seen[0].1, ServerState::Ready { .. }), "{seen:?}");
    let client = client(
        vec![
            call("c1", "fast__whoami", json!({"user": "bo"})),
            ScriptEntry::text("done"),
        ],
        Recorder::new(false),
    );
    source.register_into(&client).unwrap();
    let events = events(client.stream("who").unwrap()).await;
    assert_eq!(results(&events)[0].1, "user=bo tenant=t-9 key=");
    source.close().await;
    drop(http);
}
