//! A fixed amount of streaming work for instruction counts (callgrind): `N` turns per wire style
//! over loopback HTTP against the in-process fake server, each turn one tool call and a
//! 300-word answer (300 text deltas), on a single-threaded runtime.
//!
//! ```sh
//! cargo build --release -p contenox-conformance --example stream_turns
//! valgrind --tool=callgrind target/release/examples/stream_turns 50
//! ```

use std::sync::Arc;

use contenox::{tool_fn, Client, Config, Hints, ToolOutput, ToolSpec, Transcript};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use serde_json::json;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50);
    let words: Vec<String> = (0..300).map(|i| format!("word{i}")).collect();
    let script: Vec<ModelEntry> = serde_json::from_value(json!([
        {"tool_calls": [{"id": "call_1", "name": "echo", "arguments": {"text": "hi"}}]},
        {"text": words.join(" ")}
    ]))
    .expect("script");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let root = tempfile::tempdir().expect("tempdir");
    rt.block_on(async {
        for style in [Style::Openai, Style::Anthropic, Style::Ollama] {
            let server = fake::serve_repeating(script.clone(), style)
                .await
                .expect("fake server");
            let config: Config = serde_json::from_value(json!({
                "style": style.as_str(),
                "base_url": server.base_url(),
                "model": "fake",
                "api_key": "test",
                "builtins": [],
                "root": root.path(),
            }))
            .expect("config");
            let client = Client::from_config(config).expect("client");
            client
                .register(Arc::new(tool_fn(
                    ToolSpec::new("echo", "Echo.", json!({"type": "object"}))
                        .with_hints(Hints::read_only()),
                    |args, _ctx| async move { Ok(ToolOutput::text(args.to_string())) },
                )))
                .expect("register");
            let mut deltas = 0usize;
            for _ in 0..n {
                client.set_transcript(Transcript::default()).expect("reset");
                let mut run = client.stream("go").expect("stream");
                while let Some(e) = run.next_event().await {
                    deltas += usize::from(e.kind() == "text_delta");
                }
                let result = run.result().await.expect("result");
                assert_eq!(result.outcome.as_str(), "done", "{:?}", result.error);
            }
            println!("{}: {n} turns, {deltas} deltas", style.as_str());
            server.shutdown().await;
        }
    });
}
