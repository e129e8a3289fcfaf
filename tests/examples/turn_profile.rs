//! A fixed number of the engine bench's openai turns, or of its raw reqwest floor, for
//! instruction counts (callgrind): the same script, client settings and bodies as
//! `benches/engine.rs` (`turn/http_openai`, `turn/raw_reqwest_floor`), so the two counts
//! compare like for like; the fake server runs in this process, so its instructions are in both.
//!
//! ```sh
//! cargo build --profile bench -p contenox-conformance --example turn_profile
//! valgrind --tool=callgrind target/release/examples/turn_profile openai 200
//! valgrind --tool=callgrind target/release/examples/turn_profile floor 200
//! ```
//!
//! Further arguments: `mt` runs on the bench's two-worker runtime instead of a single thread
//! (wall time there includes cross-thread wake-ups; instruction counts are steadier on one);
//! `history=M` restores an M-message conversation (M even; the shape of bench/scale's
//! `transcript()`) before every turn instead of starting each turn fresh, so the request bodies
//! carry a long history (the floor replays the bodies of one such turn).

use std::sync::Arc;

use contenox::{tool_fn, Config, Hints, Outcome, ToolOutput, ToolSpec, Transcript};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::{json, Value};

fn echo() -> Arc<contenox::FnTool> {
    Arc::new(tool_fn(
        ToolSpec::new("echo", "Echo the arguments.", json!({"type": "object"}))
            .with_hints(Hints::read_only()),
        |args, _ctx| async move { Ok(ToolOutput::text(args.to_string())) },
    ))
}

fn model_entries() -> Vec<ModelEntry> {
    serde_json::from_value(json!([
        {"tool_calls": [{"id": "call_1", "name": "echo", "arguments": {"text": "hi"}}]},
        {"text": "done"}
    ]))
    .expect("script entries")
}

/// A conversation of exactly `n` messages (`n` even), as bench/scale/scale.py builds it:
/// exchanges of question -> tool call -> tool result -> answer, then a plain question and answer
/// when `n` is not a multiple of 4.
fn history(n: usize) -> Transcript {
    assert!(n.is_multiple_of(2), "history=M needs an even M");
    let mut msgs = Vec::with_capacity(n);
    let mut i = 0;
    while msgs.len() + 4 <= n {
        i += 1;
        let path = format!("src/module_{i}/handler.rs");
        msgs.extend([
            json!({"role": "user", "content": format!(
                "Question {i}: what does {path} export, and do the integration tests still \
                 cover it after the refactor?")}),
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": format!("call_{i}"), "name": "echo", "arguments": {"text": path}}]}),
            json!({"role": "tool", "call_id": format!("call_{i}"), "name": "echo",
                   "is_error": false, "content": format!(
                "pub fn handle_{i}(req: Request) -> Result<Response>\n\
                 pub struct Handler{i}Config {{ retries: u32, timeout_ms: u64 }}\n\
                 tests/it_{i}.rs: 3 tests reference handle_{i}")}),
            json!({"role": "assistant", "content": format!(
                "{path} exports handle_{i} and Handler{i}Config; three integration tests in \
                 tests/it_{i}.rs still call handle_{i}, so the refactor is covered.")}),
        ]);
    }
    while msgs.len() < n {
        i += 1;
        msgs.extend([
            json!({"role": "user", "content": format!("Thanks. Anything else about module {i}?")}),
            json!({"role": "assistant", "content": "No, that is everything I found."}),
        ]);
    }
    Transcript::from_json(&json!({ "messages": msgs }).to_string()).expect("history")
}

fn client(base_url: &str, root: &std::path::Path) -> contenox::Client {
    let config: Config = serde_json::from_value(json!({
        "style": "openai", "base_url": base_url, "model": "fake", "api_key": "test",
        "builtins": [], "root": root,
    }))
    .expect("config");
    contenox::ClientBuilder::from_config(config)
        .tool(echo())
        .build()
        .expect("client")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "openai".into());
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let rest: Vec<String> = args.collect();
    let start_from = rest
        .iter()
        .find_map(|a| a.strip_prefix("history="))
        .map(|m| history(m.parse().expect("history=M takes a number")))
        .unwrap_or_default();
    let rt = if rest.iter().any(|a| a == "mt") {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    }
    .expect("runtime");
    let root = tempfile::tempdir().expect("tempdir");
    let start = std::time::Instant::now();
    match mode.as_str() {
        "openai" => rt.block_on(async {
            let server = fake::serve_repeating(model_entries(), Style::Openai)
                .await
                .expect("fake server");
            let client = client(&server.base_url(), root.path());
            for _ in 0..n {
                client.set_transcript(start_from.clone()).expect("reset");
                let r = client.run("go").await.expect("run");
                assert_eq!(r.outcome, Outcome::Done);
            }
            server.shutdown().await;
        }),
        "floor" => rt.block_on(async {
            // The exact bodies the engine sends, from one recorded turn.
            let server = fake::serve(model_entries(), Style::Openai)
                .await
                .expect("fake server");
            let recorder = client(&server.base_url(), root.path());
            recorder
                .set_transcript(start_from.clone())
                .expect("history");
            recorder.run("go").await.expect("run");
            let bodies: Vec<Vec<u8>> = server
                .requests
                .get()
                .iter()
                .map(|b: &Value| serde_json::to_vec(b).expect("body"))
                .collect();
            server.shutdown().await;
            let server = fake::serve_repeating(model_entries(), Style::Openai)
                .await
                .expect("fake server");
            let url = format!("{}/chat/completions", server.base_url());
            let http = reqwest::Client::new();
            for _ in 0..n {
                for body in &bodies {
                    let resp = http
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("authorization", "Bearer test")
                        .body(body.clone())
                        .send()
                        .await
                        .expect("send");
                    let bytes = resp.bytes().await.expect("body");
                    assert!(!bytes.is_empty());
                }
            }
            server.shutdown().await;
        }),
        other => panic!("mode is openai or floor, not {other}"),
    }
    let per_turn = start.elapsed() / n as u32;
    println!("{mode}: {n} turns, {per_turn:?} per turn");
}
