//! Engine overhead per turn (one tool call per turn, zero-latency model):
//! - `scripted`: the in-process scripted model, no network;
//! - `http_openai` / `http_anthropic` / `http_ollama`: the same turn over loopback HTTP against
//!   the fake server;
//! - `raw_reqwest_floor`: a bare reqwest loop sending the same two request bodies and reading
//!   the same streamed answers without parsing them (the floor the HTTP turn is compared with).
//!
//! `cargo bench -p contenox-conformance --bench engine`

use std::sync::Arc;

use contenox::{tool_fn, Client, Config, Hints, ScriptEntry, ToolOutput, ToolSpec, Transcript};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::{json, Value};

fn echo() -> Arc<contenox::FnTool> {
    Arc::new(tool_fn(
        ToolSpec::new("echo", "Echo the arguments.", json!({"type": "object"}))
            .with_hints(Hints::read_only()),
        |args, _ctx| async move { Ok(ToolOutput::text(args.to_string())) },
    ))
}

fn script_json() -> Value {
    json!([
        {"tool_calls": [{"id": "call_1", "name": "echo", "arguments": {"text": "hi"}}]},
        {"text": "done"}
    ])
}

fn model_entries() -> Vec<ModelEntry> {
    serde_json::from_value(script_json()).expect("script entries")
}

fn scripted(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let script: Vec<ScriptEntry> = serde_json::from_value(script_json()).unwrap();
    c.bench_function("turn/scripted", |b| {
        b.iter_batched(
            || {
                Client::builder()
                    .script(script.clone())
                    .root(root.path())
                    .builtins(Vec::<String>::new())
                    .tool(echo())
                    .build()
                    .unwrap()
            },
            |client| rt.block_on(client.run("go")).unwrap(),
            BatchSize::SmallInput,
        )
    });
}

fn http(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    for style in [Style::Openai, Style::Anthropic, Style::Ollama] {
        let server = rt
            .block_on(fake::serve_repeating(model_entries(), style))
            .unwrap();
        let config: Config = serde_json::from_value(json!({
            "style": style.as_str(),
            "base_url": server.base_url(),
            "model": "fake",
            "api_key": "test",
            "builtins": [],
            "root": root.path(),
        }))
        .unwrap();
        let client = contenox::ClientBuilder::from_config(config)
            .tool(echo())
            .build()
            .unwrap();
        c.bench_function(&format!("turn/http_{}", style.as_str()), |b| {
            b.iter_batched(
                || client.set_transcript(Transcript::default()).unwrap(),
                |()| {
                    let r = rt.block_on(client.run("go")).unwrap();
                    assert_eq!(r.outcome, contenox::Outcome::Done);
                },
                BatchSize::SmallInput,
            )
        });
        rt.block_on(server.shutdown());
    }
}

/// The same two requests as one openai turn, sent by a bare reqwest client.
fn raw_floor(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    // Capture the exact bodies the engine sends, from one recorded turn.
    let bodies: Vec<Value> = rt.block_on(async {
        let server = fake::serve(model_entries(), Style::Openai).await.unwrap();
        let client = contenox::ClientBuilder::from_config(
            serde_json::from_value(json!({
                "style": "openai", "base_url": server.base_url(),
                "model": "fake", "api_key": "test", "builtins": [], "root": root.path(),
            }))
            .unwrap(),
        )
        .tool(echo())
        .build()
        .unwrap();
        client.run("go").await.unwrap();
        let bodies = server.requests.get();
        server.shutdown().await;
        bodies
    });
    let bodies: Vec<Vec<u8>> = bodies
        .iter()
        .map(|b| serde_json::to_vec(b).unwrap())
        .collect();
    let server = rt
        .block_on(fake::serve_repeating(model_entries(), Style::Openai))
        .unwrap();
    let url = format!("{}/chat/completions", server.base_url());
    let http = reqwest::Client::new();
    c.bench_function("turn/raw_reqwest_floor", |b| {
        b.iter(|| {
            rt.block_on(async {
                for body in &bodies {
                    let resp = http
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("authorization", "Bearer test")
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap();
                    let bytes = resp.bytes().await.unwrap();
                    assert!(!bytes.is_empty());
                }
            })
        })
    });
    rt.block_on(server.shutdown());
}

criterion_group!(benches, scripted, http, raw_floor);
criterion_main!(benches);
