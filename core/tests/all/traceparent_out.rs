//! `traceparent` on the engine's outgoing requests: with telemetry on, a model request carries
//! its `chat` span's context and an MCP tool call over HTTP its `execute_tool` span's (header and
//! `_meta`); the ids are the exported spans' own. Off by default: no header at all.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use contenox::telemetry::{SpanRecord, SpanSink};
use contenox::{ClientBuilder, Config, Outcome};
use serde_json::{json, Value};

use crate::mcp_net::{http_entry, json_answer, load, mcp_server};
use crate::net_util::{whole, RawServer};

const HANG: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Spans(Mutex<Vec<SpanRecord>>);

impl SpanSink for Spans {
    fn export(&self, turn: Vec<SpanRecord>) {
        self.0.lock().unwrap().extend(turn);
    }
}

fn sse(events: &[Value]) -> String {
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// An OpenAI-style model server: the first answer calls the MCP tool `h__probe`, the next
/// (once a tool result is in the conversation) says "done".
async fn model_server() -> RawServer {
    RawServer::start(|_, request| {
        let usage = json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
        let body = if request.contains("\"role\":\"tool\"") {
            sse(&[
                json!({"choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": null}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                usage,
            ])
        } else {
            sse(&[
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",
                    "type": "function", "function": {"name": "h__probe", "arguments": "{}"}}]},
                    "finish_reason": null}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                usage,
            ])
        };
        whole(200, "text/event-stream", &[], &body)
    })
    .await
}

fn config(model: &RawServer) -> Config {
    let cfg = json!({
        "style": "openai",
        "base_url": format!("{}/v1", model.url()),
        "model": "m",
        "api_key": "test-key",
        "builtins": [],
        "root": std::env::temp_dir(),
        "request_timeout_ms": 5_000,
        "retry": {"max_retries": 0}
    });
    serde_json::from_value(cfg).unwrap()
}

/// The `traceparent` header of a raw request, if any.
fn header(request: &str) -> Option<String> {
    let head = request.split("\r\n\r\n").next().unwrap_or("");
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("traceparent")
            .then(|| v.trim().to_string())
    })
}

fn body(request: &str) -> Value {
    let body = request.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

/// One turn calling the MCP tool; the model's and the MCP server's raw requests, and the spans
/// (when `sink` is given).
async fn turn(sink: Option<Arc<Spans>>) -> (Vec<String>, Vec<String>) {
    let model = model_server().await;
    let mcp = mcp_server(|msg: &Value| {
        json_answer(
            &msg["id"],
            json!({"content": [{"type": "text", "text": "probed"}], "isError": false}),
        )
    })
    .await;
    let (source, _) = load(json!({ "h": http_entry(&mcp, json!({})) })).await;
    let mut builder = ClientBuilder::from_config(config(&model));
    if let Some(sink) = sink {
        builder = builder.span_sink(sink);
    }
    let client = builder.build().unwrap();
    source.register_into(&client).unwrap();
    let result = tokio::time::timeout(HANG, client.run("go"))
        .await
        .expect("the turn hung")
        .unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{result:?}");
    assert_eq!(result.final_text, "done");
    source.close().await;
    let model_requests = model.requests.lock().unwrap().clone();
    let mcp_requests = mcp.requests.lock().unwrap().clone();
    (model_requests, mcp_requests)
}

fn split(traceparent: &str) -> (String, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!(parts[0], "00");
    assert_eq!(parts[3], "01");
    (parts[1].to_string(), parts[2].to_string())
}

#[tokio::test]
async fn model_and_mcp_requests_carry_their_spans_context() {
    let spans = Arc::new(Spans::default());
    let (model, mcp) = turn(Some(spans.clone())).await;
    let spans = spans.0.lock().unwrap().clone();
    let turn_span = spans.iter().find(|s| s.name == "invoke_agent").unwrap();
    let chats: Vec<&SpanRecord> = spans.iter().filter(|s| s.name == "chat m").collect();
    assert_eq!(chats.len(), 2, "{spans:#?}");
    assert_eq!(model.len(), 2);
    // Each model request names its own chat span, in order.
    for (request, chat) in model.iter().zip(&chats) {
        let (trace, span) = split(&header(request).expect("a traceparent on the model request"));
        assert_eq!(trace, turn_span.trace_id);
        assert_eq!(span, chat.span_id);
    }
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool h__probe")
        .unwrap();
    let call = mcp
        .iter()
        .find(|r| body(r)["method"] == "tools/call")
        .expect("the tools/call request");
    let (trace, span) = split(&header(call).expect("a traceparent on the MCP call"));
    assert_eq!(
        (trace.as_str(), span.as_str()),
        (tool.trace_id.as_str(), tool.span_id.as_str())
    );
    assert_eq!(
        body(call)["params"]["_meta"]["traceparent"].as_str(),
        header(call).as_deref(),
        "the call's _meta carries the same context"
    );
    // Connection-level requests belong to no turn's span.
    for request in mcp.iter().filter(|r| body(r)["method"] != "tools/call") {
        assert_eq!(header(request), None, "{request}");
    }
}

#[tokio::test]
async fn without_telemetry_no_request_carries_a_traceparent() {
    let (model, mcp) = turn(None).await;
    assert_eq!(model.len(), 2);
    assert!(mcp.iter().any(|r| body(r)["method"] == "tools/call"));
    for request in model.iter().chain(&mcp) {
        assert_eq!(header(request), None, "{request}");
        assert!(!request.contains("traceparent"), "{request}");
    }
}
