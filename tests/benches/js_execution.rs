//! What `js_execution` costs, and what it saves.
//!
//! - `js_execution/trivial`: one call of the builtin by hand (a new thread, a fresh QuickJS
//!   runtime and context, `1 + 1`, teardown): the floor of every call.
//! - `js_execution/console_and_json`: a program that logs and returns an object.
//! - Printed once, not timed: a scripted task done both ways against the fake openai server with
//!   `usage: "counted"` (one token per four bytes of each prompt block): read 50 small files and
//!   total a number from each, as 50 direct `read` calls (one reply asking for all 50, the
//!   usual parallel-calls shape) and as 50 replies of one call each, against one
//!   `js_execution` that calls `tools.read` 50 times. Model requests and the input tokens the
//!   server reports.
//!
//! `cargo bench -p contenox-conformance --bench js_execution`

use contenox::{code, CodeExecutionConfig, Config, ToolContext};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};

fn calls(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let js = code::js_execution(CodeExecutionConfig::default());
    let mut group = c.benchmark_group("js_execution");
    for (name, program) in [
        ("trivial", "1 + 1"),
        (
            "console_and_json",
            "const xs = Array.from({length: 100}, (_, i) => i); console.log('n', xs.length); \
             ({sum: xs.reduce((a, b) => a + b, 0), max: Math.max(...xs)})",
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let out = rt
                    .block_on(js.call(
                        json!({ "code": program }),
                        ToolContext::detached(root.path(), "js_execution"),
                    ))
                    .unwrap();
                assert!(!out.is_error, "{}", out.content_text());
            })
        });
    }
    group.finish();
    rt.block_on(both_ways());
}

const FILES: usize = 50;

/// The model's replies for each way; each counts its own tokens.
fn script(way: &str) -> Vec<Value> {
    let read = |i: usize| json!({"id": format!("call_{i}"), "name": "read", "arguments": {"path": format!("f{i}.txt")}});
    let total: usize = (0..FILES).map(|i| i * 3).sum();
    let answer = json!({"text": format!("The total is {total}."), "usage": "counted"});
    match way {
        "parallel_reads" => vec![
            json!({"tool_calls": (0..FILES).map(read).collect::<Vec<_>>(), "usage": "counted"}),
            answer,
        ],
        "one_read_per_reply" => (0..FILES)
            .map(|i| json!({"tool_calls": [read(i)], "usage": "counted"}))
            .chain([answer])
            .collect(),
        _ => {
            let code = format!(
                "let total = 0;\nfor (let i = 0; i < {FILES}; i++) {{\n  \
                 const text = await tools.read({{path: `f${{i}}.txt`}});\n  \
                 total += Number(/value=(\\d+)/.exec(text)[1]);\n}}\ntotal"
            );
            vec![
                json!({"tool_calls": [{"id": "call_js", "name": "js_execution", "arguments": {"code": code}}], "usage": "counted"}),
                answer,
            ]
        }
    }
}

async fn both_ways() {
    println!("\nscripted task: read {FILES} files, total a number from each (fake openai, usage counted)");
    println!("{:<22} {:>9} {:>13}", "way", "requests", "input tokens");
    for way in ["one_read_per_reply", "parallel_reads", "js_execution"] {
        let root = tempfile::tempdir().unwrap();
        for i in 0..FILES {
            std::fs::write(
                root.path().join(format!("f{i}.txt")),
                format!("file {i}\nvalue={}\n", i * 3),
            )
            .unwrap();
        }
        let entries: Vec<ModelEntry> = serde_json::from_value(Value::Array(script(way))).unwrap();
        let server = fake::serve(entries, Style::Openai).await.unwrap();
        let config = Config::from_json(
            &json!({
                "style": "openai",
                "base_url": server.base_url(),
                "model": "fake",
                "api_key": "test",
                "root": root.path(),
                "builtins": ["read"],
                "code_execution": {},
                "max_turns": FILES + 5,
            })
            .to_string(),
        )
        .unwrap();
        let client = contenox::Client::from_config(config).unwrap();
        let result = client.run("Total the value of every file.").await.unwrap();
        assert_eq!(result.outcome, contenox::Outcome::Done, "{way}");
        let requests = server.requests.get().len();
        println!("{way:<22} {requests:>9} {:>13}", result.usage.input_tokens);
        server.shutdown().await;
    }
}

criterion_group!(benches, calls);
criterion_main!(benches);
