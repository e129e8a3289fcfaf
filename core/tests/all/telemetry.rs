//! Spans of a turn (see `contenox::telemetry`): the tree a turn with a subagent and a denied
//! call makes, contents only when opted in, the OTLP export (batched, flushed by `close`, a
//! collector that is down failing no turn).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use contenox::telemetry::{AttributeValue, SpanKind, SpanRecord, SpanSink, SpanStatus};
use contenox::{Client, Config, Outcome, ScriptEntry, SubagentOptions};
use serde_json::{json, Value};

#[derive(Default)]
struct Spans(Mutex<Vec<SpanRecord>>);

impl SpanSink for Spans {
    fn export(&self, turn: Vec<SpanRecord>) {
        let mut all = self.0.lock().unwrap();
        // Parents first: each span's parent came before it in this turn, or is outside it.
        for span in &turn {
            if let Some(parent) = &span.parent_span_id {
                let inside = turn.iter().position(|s| &s.span_id == parent);
                let me = turn.iter().position(|s| s.span_id == span.span_id);
                assert!(
                    inside.is_none() || inside < me,
                    "{} before its parent",
                    span.name
                );
            }
        }
        all.extend(turn);
    }
}

impl Spans {
    fn all(&self) -> Vec<SpanRecord> {
        self.0.lock().unwrap().clone()
    }
}

fn string(span: &SpanRecord, key: &str) -> Option<String> {
    match span.attribute(key)? {
        AttributeValue::String(s) => Some(s.clone()),
        other => Some(format!("{other:?}")),
    }
}

fn int(span: &SpanRecord, key: &str) -> Option<i64> {
    match span.attribute(key)? {
        AttributeValue::Int(i) => Some(*i),
        _ => None,
    }
}

fn named<'a>(spans: &'a [SpanRecord], name: &str) -> &'a SpanRecord {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span {name}: {:?}", names(spans)))
}

fn names(spans: &[SpanRecord]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

const SECRET_PROMPT: &str = "PROMPT-CONTENT-7731";
const SECRET_ARG: &str = "ARGUMENT-CONTENT-7732";

/// A lead whose model calls the researcher subagent, then bash (denied by the policy), then
/// answers; both clients' configs as the bindings give them.
fn lead_and_researcher(telemetry: Value, sink: Option<Arc<Spans>>) -> (Client, Client) {
    let researcher = Client::from_config(
        serde_json::from_value::<Config>(json!({
            "style": "scripted",
            "model": "small-model",
            "builtins": [],
            "script": [{"text": "The answer is 42."}],
        }))
        .unwrap(),
    )
    .unwrap();
    let lead: Config = serde_json::from_value(json!({
        "style": "scripted",
        "model": "big-model",
        "builtins": ["bash"],
        "temperature": 0.25,
        "policy": {"rules": [{"tool": "bash", "action": "deny", "name": "no shell"}], "default_action": "allow"},
        "script": [
            {"tool_calls": [{"id": "c1", "name": "researcher", "arguments": {"prompt": "Find it."}}]},
            {"tool_calls": [{"id": "c2", "name": "bash", "arguments": {"command": format!("echo {SECRET_ARG}")}}]},
            {"text": "Researcher says 42."}
        ],
        "telemetry": telemetry,
    }))
    .unwrap();
    let mut builder = contenox::ClientBuilder::from_config(lead);
    if let Some(sink) = sink {
        builder = builder.span_sink(sink);
    }
    let lead = builder.build().unwrap();
    lead.register(
        researcher
            .as_tool_with("researcher", "Looks things up.", SubagentOptions::default())
            .unwrap(),
    )
    .unwrap();
    (lead, researcher)
}

#[tokio::test]
async fn a_turn_with_a_subagent_and_a_denied_call_makes_one_tree() {
    let spans = Arc::new(Spans::default());
    let (lead, _researcher) = lead_and_researcher(json!(true), Some(spans.clone()));
    let result = lead
        .run(format!("Ask the researcher. {SECRET_PROMPT}"))
        .await
        .unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    let spans = spans.all();
    assert_eq!(spans.len(), 8, "{:?}", names(&spans));

    let turn = named(&spans, "invoke_agent");
    assert_eq!(turn.parent_span_id, None);
    assert_eq!(
        string(turn, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(
        string(turn, "contenox.turn.outcome").as_deref(),
        Some("done")
    );
    assert!(spans.iter().all(|s| s.trace_id == turn.trace_id));

    let chats: Vec<&SpanRecord> = spans
        .iter()
        .filter(|s| s.name == "chat big-model")
        .collect();
    assert_eq!(chats.len(), 3);
    let reasons: Vec<String> = chats
        .iter()
        .map(|c| string(c, "gen_ai.response.finish_reasons").unwrap())
        .collect();
    assert_eq!(
        reasons,
        [
            r#"StringArray(["tool_calls"])"#,
            r#"StringArray(["tool_calls"])"#,
            r#"StringArray(["stop"])"#
        ]
    );
    for chat in &chats {
        assert_eq!(chat.kind, SpanKind::Client);
        assert_eq!(chat.parent_span_id.as_ref(), Some(&turn.span_id));
        assert_eq!(
            string(chat, "gen_ai.operation.name").as_deref(),
            Some("chat")
        );
        assert_eq!(
            string(chat, "gen_ai.request.model").as_deref(),
            Some("big-model")
        );
        assert_eq!(
            string(chat, "gen_ai.provider.name").as_deref(),
            Some("contenox.scripted")
        );
        assert_eq!(
            chat.attribute("gen_ai.request.temperature"),
            Some(&AttributeValue::Double(0.25))
        );
        assert!(int(chat, "gen_ai.usage.input_tokens").is_some());
        assert!(chat.start_time_unix_nano <= chat.end_time_unix_nano);
    }

    let call = named(&spans, "execute_tool researcher");
    assert_eq!(call.parent_span_id.as_ref(), Some(&turn.span_id));
    assert_eq!(string(call, "gen_ai.tool.call.id").as_deref(), Some("c1"));
    assert_eq!(
        string(call, "gen_ai.tool.name").as_deref(),
        Some("researcher")
    );
    assert_eq!(
        string(call, "contenox.tool.source").as_deref(),
        Some("subagent")
    );
    assert_eq!(
        string(call, "contenox.gate.decision").as_deref(),
        Some("allow")
    );
    assert_eq!(call.status, SpanStatus::Unset);

    let child = named(&spans, "invoke_agent researcher");
    assert_eq!(child.parent_span_id.as_ref(), Some(&call.span_id));
    assert_eq!(
        string(child, "gen_ai.agent.name").as_deref(),
        Some("researcher")
    );
    let child_chat = named(&spans, "chat small-model");
    assert_eq!(child_chat.parent_span_id.as_ref(), Some(&child.span_id));
    assert!(call.start_time_unix_nano <= child.start_time_unix_nano);
    assert!(child.end_time_unix_nano <= call.end_time_unix_nano);

    let denied = named(&spans, "execute_tool bash");
    assert_eq!(
        string(denied, "contenox.gate.decision").as_deref(),
        Some("deny")
    );
    assert_eq!(
        string(denied, "contenox.policy.rule").as_deref(),
        Some("rules[0] (\"no shell\")")
    );
    assert_eq!(denied.status, SpanStatus::Error);
    assert_eq!(string(denied, "error.type").as_deref(), Some("denied"));

    // Contents were not asked for: no prompt, argument or answer on any span.
    let printed = format!("{spans:?}");
    for content in [
        SECRET_PROMPT,
        SECRET_ARG,
        "The answer is 42",
        "Researcher says",
    ] {
        assert!(!printed.contains(content), "{content} in {printed}");
    }
    assert!(spans
        .iter()
        .all(|s| s.attribute("gen_ai.input.messages").is_none()));
}

#[tokio::test]
async fn contents_are_on_the_spans_only_when_asked_for() {
    let spans = Arc::new(Spans::default());
    let (lead, _researcher) =
        lead_and_researcher(json!({"include_contents": true}), Some(spans.clone()));
    lead.run(format!("Ask. {SECRET_PROMPT}")).await.unwrap();
    let spans = spans.all();
    let turn = named(&spans, "invoke_agent");
    assert!(string(turn, "gen_ai.input.messages")
        .unwrap()
        .contains(SECRET_PROMPT));
    assert!(string(turn, "gen_ai.output.messages")
        .unwrap()
        .contains("Researcher says 42."));
    let bash = named(&spans, "execute_tool bash");
    assert!(string(bash, "gen_ai.tool.call.arguments")
        .unwrap()
        .contains(SECRET_ARG));
    assert!(string(bash, "gen_ai.tool.call.result").is_some());
    let call = named(&spans, "execute_tool researcher");
    assert_eq!(
        string(call, "gen_ai.tool.call.result").as_deref(),
        Some("The answer is 42.")
    );
}

/// A one-connection-at-a-time OTLP/HTTP receiver: each request's path and JSON body.
/// Each request a receiver took: its path and its JSON body.
type Received = Arc<Mutex<Vec<(String, Value)>>>;

fn receiver() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split(' ').nth(1).unwrap_or("").to_string();
            let mut length = 0;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            seen.lock()
                .unwrap()
                .push((path, serde_json::from_slice(&body).unwrap()));
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
            );
        }
    });
    (url, got)
}

#[tokio::test]
async fn spans_are_posted_as_otlp_json_and_close_flushes_them() {
    let (url, got) = receiver();
    let (lead, _researcher) = lead_and_researcher(
        json!({
            "endpoint": url,
            "service_name": "telemetry-test",
            "headers": {"x-collector-key": "k"},
        }),
        None,
    );
    let result = lead.run("Ask the researcher.").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    // The batch waits up to a second; close sends it now.
    let close = tokio::task::spawn_blocking(move || {
        lead.close();
        lead
    });
    let lead = close.await.unwrap();
    let got = got.lock().unwrap().clone();
    assert!(!got.is_empty(), "nothing exported");
    let mut spans = Vec::new();
    for (path, body) in &got {
        assert_eq!(path, "/v1/traces");
        let rs = &body["resourceSpans"][0];
        assert_eq!(rs["resource"]["attributes"][0]["key"], "service.name");
        assert_eq!(
            rs["resource"]["attributes"][0]["value"]["stringValue"],
            "telemetry-test"
        );
        assert_eq!(rs["scopeSpans"][0]["scope"]["name"], "contenox");
        spans.extend(
            rs["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap()
                .iter()
                .cloned(),
        );
    }
    assert_eq!(spans.len(), 8);
    let root = spans.iter().find(|s| s["name"] == "invoke_agent").unwrap();
    assert!(root.get("parentSpanId").is_none());
    assert_eq!(root["traceId"].as_str().unwrap().len(), 32);
    let stats = lead.telemetry_stats().unwrap();
    assert_eq!(stats.exported, 8);
    assert_eq!((stats.dropped, stats.failed), (0, 0));
}

#[tokio::test]
async fn a_collector_that_is_down_fails_no_turn() {
    // A port nothing listens on (bound, then released).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (lead, _researcher) = lead_and_researcher(
        json!({"endpoint": format!("http://127.0.0.1:{port}")}),
        None,
    );
    let result = lead.run("Ask the researcher.").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(result.final_text, "Researcher says 42.");
    let lead = tokio::task::spawn_blocking(move || {
        lead.close();
        lead
    })
    .await
    .unwrap();
    let stats = lead.telemetry_stats().unwrap();
    assert_eq!(stats.exported, 0);
    assert_eq!(stats.failed, 8);
}

#[test]
fn a_bad_telemetry_option_is_a_configuration_error() {
    for (telemetry, says) in [
        (
            json!({"endpoint": "ftp://127.0.0.1"}),
            "http:// or https://",
        ),
        (json!({"endpoint": "not a url"}), "not a URL"),
        (
            json!({"headers": {"bad header": "v"}}),
            "not a valid HTTP header name",
        ),
    ] {
        let config: Config = serde_json::from_value(json!({
            "style": "scripted", "script": [], "telemetry": telemetry,
        }))
        .unwrap();
        let err = Client::from_config(config)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("telemetry") && err.contains(says), "{err}");
    }
}

#[test]
fn telemetry_is_off_by_default() {
    let client = Client::builder()
        .script(vec![ScriptEntry::text("hi")])
        .build()
        .unwrap();
    assert!(client.telemetry_stats().is_none());
}

#[tokio::test]
async fn the_turn_is_a_child_of_the_host_span_a_traceparent_names() {
    let spans = Arc::new(Spans::default());
    let (lead, _researcher) = lead_and_researcher(json!(true), Some(spans.clone()));
    let host = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let options = contenox::RunOptions {
        traceparent: Some(host.into()),
        ..Default::default()
    };
    lead.run_with("Ask.", options).await.unwrap();
    let spans = spans.all();
    assert_eq!(spans.len(), 8);
    assert!(spans
        .iter()
        .all(|s| s.trace_id == "0af7651916cd43dd8448eb211c80319c"));
    let turn = named(&spans, "invoke_agent");
    assert_eq!(turn.parent_span_id.as_deref(), Some("b7ad6b7169203331"));
}

/// A lead whose host has its own tracer provider (`ClientBuilder::host_tracer`), telemetry as
/// given, exporting (were it to) to a collector that is down.
fn with_host_tracer(telemetry: Value, tracer: Arc<Spans>) -> Client {
    let config: Config = serde_json::from_value(json!({
        "style": "scripted",
        "builtins": [],
        "script": [{"text": "hi"}],
        "telemetry": telemetry,
    }))
    .unwrap();
    contenox::ClientBuilder::from_config(config)
        .host_tracer(tracer)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_host_tracer_takes_the_spans_only_while_telemetry_is_on() {
    let (url, got) = receiver();
    let tracer = Arc::new(Spans::default());
    let on = with_host_tracer(json!({ "endpoint": url }), tracer.clone());
    on.run("hello").await.unwrap();
    assert_eq!(names(&tracer.all()), ["invoke_agent", "chat scripted"]);
    // No second exporter: `close` (which flushes an exporter's queue) posts nothing.
    let on = tokio::task::spawn_blocking(move || {
        on.close();
        on
    })
    .await
    .unwrap();
    assert!(got.lock().unwrap().is_empty());
    assert!(on.telemetry_stats().is_some());

    let tracer = Arc::new(Spans::default());
    for off in [json!(false), Value::Null] {
        let client = with_host_tracer(off, tracer.clone());
        client.run("hello").await.unwrap();
        assert!(client.telemetry_stats().is_none());
    }
    assert!(tracer.all().is_empty());
}

#[test]
fn a_bad_option_is_refused_with_a_host_tracer_too() {
    let config: Config = serde_json::from_value(json!({
        "style": "scripted",
        "script": [],
        "telemetry": {"endpoint": "ftp://127.0.0.1"},
    }))
    .unwrap();
    let err = contenox::ClientBuilder::from_config(config)
        .host_tracer(Arc::new(Spans::default()))
        .build()
        .err()
        .expect("a configuration error");
    assert!(err.to_string().contains("telemetry"), "{err}");
}
