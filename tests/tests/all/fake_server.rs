//! The fake model server's mechanics over real HTTP (the official SDKs' parsing is tested in
//! `official_clients/test_official_clients.py`).

use std::time::{Duration, Instant};

use contenox_conformance::fake::{self, FakeServer};
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};

fn script(v: Value) -> Vec<ModelEntry> {
    serde_json::from_value(v).unwrap()
}

async fn post(server: &FakeServer, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}{}", server.root_url(), server.style.chat_path()))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// The `data:` payloads of an SSE body.
fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|ev| ev.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn openai_stream_carries_text_and_calls_in_pieces() {
    let server = fake::serve(
        script(json!([{
            "text": "one two three",
            "tool_calls": [
                {"id": "call_a", "name": "echo", "arguments": {"text": "hi"}},
                {"id": "call_b", "name": "raw", "arguments": "{not json"}
            ],
            "usage": {"input_tokens": 5, "output_tokens": 2}
        }])),
        Style::Openai,
    )
    .await
    .unwrap();
    let resp = post(
        &server,
        json!({"model": "fake", "stream": true, "stream_options": {"include_usage": true}, "messages": []}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let data = sse_data(&resp.text().await.unwrap());
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let mut text = String::new();
    let mut text_deltas = 0;
    let mut args = [String::new(), String::new()];
    let mut arg_deltas = [0, 0];
    let mut ids = Vec::new();
    let mut finish = None;
    let mut usage = None;
    for c in &chunks {
        if let Some(u) = c.get("usage").filter(|u| !u.is_null()) {
            assert_eq!(c["choices"], json!([]));
            usage = Some(u.clone());
        }
        for choice in c["choices"].as_array().unwrap() {
            if let Some(t) = choice["delta"]["content"].as_str() {
                if !t.is_empty() {
                    text_deltas += 1;
                }
                text.push_str(t);
            }
            for tc in choice["delta"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let i = tc["index"].as_u64().unwrap() as usize;
                if let Some(id) = tc["id"].as_str() {
                    ids.push(id.to_string());
                }
                let frag = tc["function"]["arguments"].as_str().unwrap();
                if !frag.is_empty() {
                    arg_deltas[i] += 1;
                }
                args[i].push_str(frag);
            }
            if let Some(f) = choice["finish_reason"].as_str() {
                finish = Some(f.to_string());
            }
        }
    }
    assert_eq!(text, "one two three");
    assert_eq!(text_deltas, 3);
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(args[0], r#"{"text":"hi"}"#);
    assert_eq!(args[1], "{not json");
    assert!(arg_deltas[0] > 1 && arg_deltas[1] > 1, "{arg_deltas:?}");
    assert_eq!(finish.as_deref(), Some("tool_calls"));
    assert_eq!(
        usage,
        Some(json!({"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn requests_are_recorded_in_order_and_script_runs_out() {
    let server = fake::serve(script(json!([{"text": "a"}])), Style::Openai)
        .await
        .unwrap();
    let r1 = post(
        &server,
        json!({"messages": [{"role": "user", "content": "1"}]}),
    )
    .await;
    assert_eq!(r1.status(), 200);
    let body: Value = r1.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "a");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    let r2 = post(
        &server,
        json!({"messages": [{"role": "user", "content": "2"}]}),
    )
    .await;
    assert_eq!(r2.status(), 500);
    assert_eq!(r2.text().await.unwrap(), "script exhausted");
    // A body that is not JSON: 400, recorded as a string.
    let r3 = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.root_url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r3.status(), 400);
    let recorded: Value = reqwest::get(format!("{}/_fake/requests", server.root_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        recorded,
        json!([
            {"messages": [{"role": "user", "content": "1"}]},
            {"messages": [{"role": "user", "content": "2"}]},
            "not json"
        ])
    );
    assert_eq!(server.requests().len(), 3);
    server.shutdown().await;
}

#[tokio::test]
async fn error_entries_have_status_body_and_retry_after() {
    let server = fake::serve(
        script(json!([
            {"error": {"status": 429, "retry_after_s": 3}},
            {"error": {"status": 503, "body": "try later"}},
            {"error": {"status": 400, "body": {"type": "error", "error": {"type": "x", "message": "m"}}}},
            {"text": "after"}
        ])),
        Style::Anthropic,
    )
    .await
    .unwrap();
    let req = json!({"model": "fake", "max_tokens": 5, "messages": []});
    let r = post(&server, req.clone()).await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "3");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");
    let r = post(&server, req.clone()).await;
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("retry-after").is_none());
    assert_eq!(r.text().await.unwrap(), "try later");
    let r = post(&server, req.clone()).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.headers()["content-type"], "application/json");
    let r = post(&server, req).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["content"], json!([{"type": "text", "text": "after"}]));
    assert_eq!(body["stop_reason"], "end_turn");
    server.shutdown().await;
}

/// Reads a body chunk by chunk; returns the bytes read and whether it ended in an error.
async fn read_all(mut resp: reqwest::Response) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) => got.extend_from_slice(&c),
            Ok(None) => return (got, false),
            Err(_) => return (got, true),
        }
    }
}

#[tokio::test]
async fn break_after_bytes_sends_exactly_n_bytes_then_breaks() {
    for (style, stream) in [
        (Style::Openai, true),
        (Style::Openai, false),
        (Style::Anthropic, true),
        (Style::Ollama, true),
        (Style::Ollama, false),
    ] {
        let server = fake::serve(
            script(json!([
                {"text": "a fairly long answer that will be cut", "break_after_bytes": 50},
                {"text": "a fairly long answer that will be cut"}
            ])),
            style,
        )
        .await
        .unwrap();
        let req = json!({"model": "fake", "max_tokens": 5, "stream": stream, "messages": []});
        let (got, broken) = read_all(post(&server, req.clone()).await).await;
        assert!(broken, "{style} stream={stream}: the body ended cleanly");
        assert_eq!(got.len(), 50, "{style} stream={stream}");
        let (full, broken) = read_all(post(&server, req).await).await;
        assert!(!broken);
        assert!(full.len() > 50);
        assert_eq!(&full[..50], &got[..], "{style} stream={stream}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn stall_holds_until_the_client_goes_and_shutdown_releases_it() {
    let server = fake::serve(
        script(json!([{"stall": true}, {"text": "x"}])),
        Style::Openai,
    )
    .await
    .unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let url = format!("{}/v1/chat/completions", server.root_url());
    let err = client
        .post(&url)
        .json(&json!({"messages": []}))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    // The stalled request consumed its entry; the next one is answered.
    let r = client
        .post(&url)
        .json(&json!({"messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(server.requests().len(), 2);
    // A stall still pending at shutdown does not hold the server.
    let server2 = fake::serve(script(json!([{"stall": true}])), Style::Ollama)
        .await
        .unwrap();
    let url2 = format!("{}/api/chat", server2.root_url());
    let pending = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url2)
            .json(&json!({"messages": []}))
            .send()
            .await
    });
    while server2.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let start = Instant::now();
    server2.shutdown().await;
    assert!(start.elapsed() < Duration::from_secs(3));
    let answered = tokio::time::timeout(Duration::from_secs(3), pending)
        .await
        .expect("the stalled client was not released")
        .unwrap();
    if let Ok(r) = answered {
        assert_eq!(r.status(), 503);
    }
    server.shutdown().await;
}

#[tokio::test]
async fn chunk_delay_paces_the_stream() {
    let server = fake::serve(
        script(json!([{"text": "a b c d", "chunk_delay_ms": 40}])),
        Style::Ollama,
    )
    .await
    .unwrap();
    let start = Instant::now();
    let resp = post(&server, json!({"messages": []})).await;
    let (body, broken) = read_all(resp).await;
    assert!(!broken);
    // 4 text lines + the final line, 40 ms before each.
    assert!(
        start.elapsed() >= Duration::from_millis(200),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(String::from_utf8(body).unwrap().lines().count(), 5);
    server.shutdown().await;
}

#[tokio::test]
async fn ollama_ndjson_has_no_call_ids() {
    let server = fake::serve(
        script(json!([{
            "text": "calling",
            "tool_calls": [{"id": "ignored", "name": "echo", "arguments": {"text": "hi"}}],
            "usage": {"input_tokens": 4, "output_tokens": 6}
        }])),
        Style::Ollama,
    )
    .await
    .unwrap();
    let resp = post(&server, json!({"model": "fake", "messages": []})).await;
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    let text = resp.text().await.unwrap();
    assert!(!text.contains("ignored"));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let content: String = lines
        .iter()
        .filter_map(|l| l["message"]["content"].as_str())
        .collect();
    assert_eq!(content, "calling");
    let calls: Vec<&Value> = lines
        .iter()
        .filter_map(|l| l["message"].get("tool_calls"))
        .collect();
    assert_eq!(
        calls,
        [&json!([{"function": {"name": "echo", "arguments": {"text": "hi"}}}])]
    );
    let last = lines.last().unwrap();
    assert_eq!(last["done"], true);
    assert_eq!(last["done_reason"], "stop");
    assert_eq!(last["prompt_eval_count"], 4);
    assert_eq!(last["eval_count"], 6);
    assert!(lines[..lines.len() - 1].iter().all(|l| l["done"] == false));
    server.shutdown().await;
}

#[tokio::test]
async fn model_lists() {
    for (style, path, key) in [
        (Style::Openai, "/v1/models", "/data/0/id"),
        (Style::Anthropic, "/v1/models", "/data/0/id"),
        (Style::Ollama, "/api/tags", "/models/0/name"),
    ] {
        let server = fake::serve(Vec::new(), style).await.unwrap();
        let v: Value = reqwest::get(format!("{}{path}", server.root_url()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(v.pointer(key), Some(&json!("fake")), "{style}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn cache_tokens_in_each_styles_own_usage_fields() {
    let entry = json!([{"text": "x", "usage": {"input_tokens": 30, "output_tokens": 2,
                                              "cache_read_input_tokens": 24}}]);
    // openai: prompt_tokens is the whole prompt, cached_tokens the part from the cache.
    let server = fake::serve(script(entry.clone()), Style::Openai)
        .await
        .unwrap();
    let body: Value = post(&server, json!({"model": "fake", "messages": []}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["usage"]["prompt_tokens"], 30);
    assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 24);
    server.shutdown().await;
    // anthropic: input_tokens leaves out what the cache served or stored.
    let server = fake::serve(script(entry), Style::Anthropic).await.unwrap();
    let text = post(
        &server,
        json!({"model": "fake", "stream": true, "messages": []}),
    )
    .await
    .text()
    .await
    .unwrap();
    let start: Value = serde_json::from_str(&sse_data(&text)[0]).unwrap();
    let usage = &start["message"]["usage"];
    assert_eq!(
        (
            &usage["input_tokens"],
            &usage["cache_read_input_tokens"],
            &usage["cache_creation_input_tokens"]
        ),
        (&json!(6), &json!(24), &json!(0))
    );
    server.shutdown().await;
}

/// Does the (non-streaming) answer carry a tool call, or only text?
async fn answers_with_tool_call(server: &FakeServer, messages: Value) -> bool {
    let resp = post(server, json!({"model": "fake", "messages": messages})).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    body["choices"][0]["message"]["tool_calls"].is_array()
}

#[tokio::test]
async fn by_turn_step_answers_interleaved_clients_in_turn_order() {
    let entries = || {
        script(json!([
            {"tool_calls": [{"id": "call_1", "name": "echo", "arguments": {"text": "x"}}]},
            {"text": "done"}
        ]))
    };
    let prompt = |n: u32| json!([{"role": "user", "content": format!("turn {n}")}]);
    let after_tool = |n: u32| {
        json!([
            {"role": "user", "content": format!("turn {n}")},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "x"}
        ])
    };
    // Two clients' turns interleaved: A prompt, B prompt, A after its tool, B after its tool.
    let order = [prompt(1), prompt(2), after_tool(1), after_tool(2)];
    let by_step = fake::serve_repeating_by(entries(), Style::Openai, fake::Repeat::ByTurnStep)
        .await
        .unwrap();
    let mut got = Vec::new();
    for messages in &order {
        got.push(answers_with_tool_call(&by_step, messages.clone()).await);
    }
    assert_eq!(got, [true, true, false, false]);
    // The cycling server answers by arrival order, so B's prompt gets A's final text: the
    // reason `ByTurnStep` exists.
    let cycling = fake::serve_repeating(entries(), Style::Openai)
        .await
        .unwrap();
    let mut got = Vec::new();
    for messages in &order {
        got.push(answers_with_tool_call(&cycling, messages.clone()).await);
    }
    assert_eq!(got, [true, false, true, false]);
    // Nothing is recorded in either mode (memory stays bounded).
    assert!(by_step.requests().is_empty() && cycling.requests().is_empty());
}
