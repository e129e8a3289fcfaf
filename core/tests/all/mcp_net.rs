//! Hostile MCP servers: a streamable HTTP server (played by the raw server of `net_util`) that
//! answers a call with an event or a body beyond rmcp's limits, stalls, redirects, or echoes its
//! secrets; and a stdio server that floods the client with `list_changed`. Every server is
//! started by its test and gone when it ends; every wait is bounded.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::net_util::{chunked_head, whole, RawServer, Step};
use contenox::mcp::{load_mcp, McpConfig, McpSource, ServerState};
use contenox::{Client, Message, Outcome, ScriptEntry};
use serde_json::{json, Value};

const HANG: Duration = Duration::from_secs(60);

pub(crate) async fn load(servers: Value) -> (McpSource, Vec<(String, ServerState)>) {
    let config = McpConfig::from_value(json!({ "mcpServers": servers })).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let source = tokio::time::timeout(
        HANG,
        load_mcp(config, move |name, state| {
            sink.lock().unwrap().push((name.to_string(), state.clone()));
        }),
    )
    .await
    .expect("load_mcp hung");
    let seen = seen.lock().unwrap().clone();
    (source, seen)
}

/// Call `tool` once through a scripted client; the tool result the model would see.
async fn call_once(source: &McpSource, tool: &str, args: Value) -> (String, bool) {
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", tool, args),
            ScriptEntry::text("done"),
        ])
        .root(std::env::temp_dir())
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    source.register_into(&client).unwrap();
    let result = tokio::time::timeout(HANG, client.run("go"))
        .await
        .expect("the turn hung")
        .unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{result:?}");
    result
        .transcript
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool { is_error, .. } => Some((m.text().into_owned(), *is_error)),
            _ => None,
        })
        .expect("a tool result")
}

/// The JSON-RPC body of a raw request.
pub(crate) fn rpc(request: &str) -> Value {
    let body = request.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

pub(crate) fn json_answer(id: &Value, result: Value) -> Vec<Step> {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    whole(200, "application/json", &[("mcp-session-id", "s1")], &body)
}

/// A streamable HTTP MCP server with one tool, `probe`, whose calls `on_call` answers.
pub(crate) async fn mcp_server(
    on_call: impl Fn(&Value) -> Vec<Step> + Send + Sync + 'static,
) -> RawServer {
    RawServer::start(move |_, request| {
        if request.starts_with("GET") {
            return whole(405, "text/plain", &[], "no");
        }
        if request.starts_with("DELETE") {
            return whole(200, "text/plain", &[], "");
        }
        let msg = rpc(request);
        let id = msg["id"].clone();
        match msg["method"].as_str().unwrap_or("") {
            "initialize" => json_answer(
                &id,
                json!({
                    "protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1"}
                }),
            ),
            "tools/list" => json_answer(
                &id,
                json!({"tools": [{"name": "probe", "description": "Probe.",
                                  "inputSchema": {"type": "object",
                                                  "properties": {"tenant": {"type": "string"}}}}]}),
            ),
            "tools/call" => on_call(&msg),
            _ => whole(202, "text/plain", &[], ""),
        }
    })
    .await
}

pub(crate) fn http_entry(server: &RawServer, extra: Value) -> Value {
    let mut entry =
        json!({"type": "http", "url": format!("{}/mcp", server.url()), "timeout_ms": 5000});
    for (k, v) in extra.as_object().unwrap() {
        entry[k] = v.clone();
    }
    entry
}

async fn ready(server: &RawServer, extra: Value) -> McpSource {
    let (source, seen) = load(json!({ "h": http_entry(server, extra) })).await;
    assert!(
        matches!(seen[0].1, ServerState::Ready { .. }),
        "{:?}",
        seen[0].1
    );
    source
}

#[tokio::test]
async fn an_sse_event_beyond_the_limit_is_an_error_result() {
    let server = mcp_server(|_| {
        vec![
            chunked_head(200, "text/event-stream", &[("mcp-session-id", "s1")]),
            Step::Chunk(b"data: {\"jsonrpc\": \"2.0\", \"id\": 2, \"result\": {\"content\": [{\"type\": \"text\", \"text\": \"".to_vec()),
            // 64 MiB of one event (rmcp's limit is 16 MiB), and the event never ends.
            Step::Repeat {
                chunk: vec![b'x'; 64 * 1024],
                count: 64 * 16,
            },
            Step::Hold,
        ]
    })
    .await;
    let source = ready(&server, json!({})).await;
    let (text, is_error) = call_once(&source, "h__probe", json!({})).await;
    assert!(is_error, "{text:.300}");
    assert!(
        text.contains("16 MiB") && text.contains("cap"),
        "{text:.300}"
    );
    assert!(text.len() < 10_000, "{}", text.len());
    assert!(
        server.written() < 40 << 20,
        "the client read {} bytes of one event",
        server.written()
    );
    source.close().await;
}

#[tokio::test]
async fn a_json_body_beyond_the_limit_is_an_error_result() {
    let server = mcp_server(|_| {
        vec![
            chunked_head(200, "application/json", &[("mcp-session-id", "s1")]),
            Step::Chunk(b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"result\": {\"content\": [{\"type\": \"text\", \"text\": \"".to_vec()),
            Step::Repeat {
                chunk: vec![b'x'; 64 * 1024],
                count: 100 * 16,
            },
            Step::End,
        ]
    })
    .await;
    let source = ready(&server, json!({})).await;
    let (text, is_error) = call_once(&source, "h__probe", json!({})).await;
    assert!(is_error, "{text:.300}");
    assert!(text.contains("maximum size"), "{text:.300}");
    assert!(server.written() < 60 << 20, "{}", server.written());
    source.close().await;
}

/// Wait (bounded) until the server has no open connection left.
async fn until_closed(server: &RawServer) {
    let closed = tokio::time::timeout(Duration::from_secs(15), async {
        while server.open() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "{} connections are still held open",
        server.open()
    );
}

#[tokio::test]
async fn a_stalled_answer_is_an_error_result_and_its_connection_closed() {
    // Never a response head.
    let server = mcp_server(|_| vec![Step::Hold]).await;
    let source = ready(&server, json!({"timeout_ms": 400})).await;
    let (text, is_error) = call_once(&source, "h__probe", json!({})).await;
    assert!(is_error, "{text}");
    assert!(text.contains("timed out"), "{text}");
    // The HTTP request itself is bounded too: it does not stay open after the call gave up.
    until_closed(&server).await;
    source.close().await;

    // An SSE answer that sends only keep-alive comments.
    let server = mcp_server(|_| {
        vec![
            chunked_head(200, "text/event-stream", &[("mcp-session-id", "s1")]),
            Step::Every {
                chunk: b": ping\n\n".to_vec(),
                every: Duration::from_millis(20),
            },
        ]
    })
    .await;
    let source = ready(&server, json!({"timeout_ms": 400})).await;
    let (text, is_error) = call_once(&source, "h__probe", json!({})).await;
    assert!(is_error, "{text}");
    until_closed(&server).await;
    source.close().await;
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_the_headers_stay_home() {
    let other = RawServer::start(|_, _| whole(200, "application/json", &[], "{}")).await;
    let target = format!("{}/mcp?sig=REDIRECT-SIG-9", other.url());
    let server =
        RawServer::start(move |_, _| whole(307, "text/plain", &[("location", &target)], "moved"))
            .await;
    let (source, seen) = load(json!({
        "h": http_entry(&server, json!({"headers": {"X-Api-Key": "MCP-HEADER-SECRET-1"}}))
    }))
    .await;
    let ServerState::Failed { error } = &seen[0].1 else {
        panic!("{:?}", seen[0].1)
    };
    assert!(error.contains("307"), "{error}");
    assert!(error.contains(&other.url()), "{error}");
    assert!(!error.contains("REDIRECT-SIG-9"), "{error}");
    assert_eq!(other.hits(), 0, "the redirect was followed");
    source.close().await;
}

#[tokio::test]
async fn url_secrets_headers_and_injected_values_stay_out_of_errors() {
    // Unreachable, with a token in the URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (source, seen) = load(json!({
        "gone": {"type": "http", "url": format!("http://u-SECRET-A:p-SECRET-B@127.0.0.1:{port}/mcp?token=URL-SECRET-C"),
                 "timeout_ms": 3000}
    }))
    .await;
    let ServerState::Failed { error } = &seen[0].1 else {
        panic!("{:?}", seen[0].1)
    };
    for s in ["SECRET-A", "SECRET-B", "URL-SECRET-C"] {
        assert!(!error.contains(s), "{s} leaked: {error}");
    }
    assert!(error.contains(&format!("127.0.0.1:{port}/mcp")), "{error}");
    source.close().await;

    // A server that echoes its header and the injected value in a JSON-RPC error.
    let server = mcp_server(|msg| {
        let tenant = msg["params"]["arguments"]["tenant"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let body = json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32000,
            "message": format!("tenant {tenant} with key MCP-HEADER-SECRET-2 is unknown")}});
        whole(200, "application/json", &[], &body.to_string())
    })
    .await;
    let source = ready(
        &server,
        json!({"headers": {"X-Api-Key": "MCP-HEADER-SECRET-2"},
               "inject": {"tenant": "INJECTED-SECRET-3"}}),
    )
    .await;
    // `tenant` is injected (the model never sees it); the server echoes it back in its error.
    let (text, is_error) = call_once(&source, "h__probe", json!({})).await;
    assert!(is_error, "{text}");
    assert!(text.contains("unknown"), "{text}");
    for s in ["MCP-HEADER-SECRET-2", "INJECTED-SECRET-3"] {
        assert!(!text.contains(s), "{s} leaked to the model: {text}");
    }
    source.close().await;
}

/// A stdio MCP server in plain Python (no SDK): its tool `burst` sends 2,000
/// `notifications/tools/list_changed` at once. Every `tools/list` after the first writes the
/// file `$MARKER` and then takes 1.5 s to answer, so refreshes pile up meanwhile if each
/// notification gets its own task; `count` says how often the list was asked for.
const FLOOD_SERVER: &str = r#"
import json, os, sys, time
lists = 0
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "flood", "version": "1"}}})
    elif method == "tools/list":
        lists += 1
        if lists > 1:
            open(os.environ["MARKER"], "w").write(str(lists))
            time.sleep(1.5)
        tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("burst", "count")]
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
    elif method == "tools/call":
        name = msg["params"]["name"]
        if name == "burst":
            for _ in range(2000):
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            text = "sent"
        else:
            text = str(lists)
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_list_changed_costs_one_refresh_task() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("flood.py");
    let marker = dir.path().join("listing");
    std::fs::write(&script, FLOOD_SERVER).unwrap();
    let (source, seen) = load(json!({
        "f": {"command": "python3", "args": [script], "env": {"MARKER": marker},
              "timeout_ms": 20000}
    }))
    .await;
    assert!(
        matches!(seen[0].1, ServerState::Ready { .. }),
        "{:?}",
        seen[0].1
    );
    let before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let burst = {
        let source = source.clone();
        tokio::spawn(async move { call_once(&source, "f__burst", json!({})).await })
    };
    // A refresh is under way (the server answers it 1.5 s after writing the marker).
    tokio::time::timeout(HANG, async {
        while !marker.exists() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("no refresh came");
    // The burst's call returns once that refresh is done (a call waits for the refresh its
    // notifications started): count the live tasks all along until then, and keep the most.
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let mut during = tasks();
    tokio::time::timeout(HANG, async {
        while !burst.is_finished() {
            during = during.max(tasks());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the burst's call never returned");
    // One task per notification would be some 2,000 tasks waiting on the refresh lock.
    assert!(
        during < before + 500,
        "{during} tasks alive during the refresh ({before} before the burst)"
    );
    let (sent, _) = burst.await.unwrap();
    assert_eq!(sent, "sent");
    let (count, _) = call_once(&source, "f__count", json!({})).await;
    // The start's listing plus at most two refreshes for the whole burst.
    let lists: usize = count
        .parse()
        .unwrap_or_else(|_| panic!("f__count answered {count:?}, not a number"));
    assert!(
        (2..=3).contains(&lists),
        "tools/list was asked {lists} times"
    );
    source.close().await;
}
