//! What subagents and compaction cost the engine (zero-latency models):
//! - `subagent/plain_tool_call`: a turn whose one tool call is a host echo tool;
//! - `subagent/subagent_call`: the same turn whose call is a subagent answering with text (one
//!   child turn: its scope, gates, tagged events, usage);
//! - `compaction/off`, `compaction/measured`, `compaction/compacts`: one turn on a restored
//!   40-message conversation (about 11,000 tokens) with no compaction, with compaction set but
//!   under the threshold (the measure before each request), and over it (the measure, the
//!   older part written out, the summary request to the scripted model, the replacement);
//! - `compaction/http_openai_compacts` / `http_openai_off`: the same two turns over loopback HTTP
//!   against the fake server, where the summary is a real request.
//!
//! `cargo bench -p contenox-conformance --bench agents`

use std::sync::Arc;

use contenox::{
    tool_fn, Client, ClientBuilder, CompactionConfig, Config, Hints, Message, Outcome, ScriptEntry,
    SubagentOptions, ToolOutput, ToolSpec, Transcript,
};
use contenox_conformance::fake;
use contenox_conformance::scenario::{ModelEntry, Style};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::json;

fn echo() -> Arc<contenox::FnTool> {
    Arc::new(tool_fn(
        ToolSpec::new("echo", "Echo the arguments.", json!({"type": "object"}))
            .with_hints(Hints::read_only()),
        |args, _ctx| async move { Ok(ToolOutput::text(args.to_string())) },
    ))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn subagent(c: &mut Criterion) {
    let rt = runtime();
    let root = tempfile::tempdir().unwrap();
    let parent = |call: &str, args: serde_json::Value| {
        Client::builder()
            .script(vec![
                ScriptEntry::tool_call("call_1", call, args),
                ScriptEntry::text("done"),
            ])
            .root(root.path())
            .builtins(Vec::<String>::new())
    };
    c.bench_function("subagent/plain_tool_call", |b| {
        b.iter_batched(
            || {
                parent("echo", json!({"text": "hi"}))
                    .tool(echo())
                    .build()
                    .unwrap()
            },
            |client| {
                let r = rt.block_on(client.run("go")).unwrap();
                assert_eq!(r.outcome, Outcome::Done);
            },
            BatchSize::SmallInput,
        )
    });
    c.bench_function("subagent/subagent_call", |b| {
        b.iter_batched(
            || {
                let child = Client::builder()
                    .script(vec![ScriptEntry::text("child answer")])
                    .root(root.path())
                    .builtins(Vec::<String>::new())
                    .build()
                    .unwrap();
                let tool = child
                    .as_tool_with("helper", "Helps.", SubagentOptions::default())
                    .unwrap();
                parent("helper", json!({"prompt": "hi"}))
                    .tool(tool)
                    .build()
                    .unwrap()
            },
            |client| {
                let r = rt.block_on(client.run("go")).unwrap();
                assert_eq!(r.outcome, Outcome::Done);
            },
            BatchSize::SmallInput,
        )
    });
}

/// 40 messages of about 1 KiB: 20 user prompts and 20 answers.
fn long_conversation() -> Transcript {
    let text = "The quick brown fox jumps over the lazy dog. ".repeat(24);
    let messages = (0..20)
        .flat_map(|i| {
            [
                Message::user(format!("question {i}: {text}")),
                Message::assistant(format!("answer {i}: {text}"), vec![]),
            ]
        })
        .collect();
    Transcript { messages }
}

fn compaction(c: &mut Criterion) {
    let rt = runtime();
    let root = tempfile::tempdir().unwrap();
    let conversation = long_conversation();
    let build = |threshold: Option<u64>, script: Vec<ScriptEntry>| {
        let mut b = Client::builder()
            .script(script)
            .root(root.path())
            .builtins(Vec::<String>::new());
        if let Some(t) = threshold {
            b = b.compaction(CompactionConfig {
                keep_recent: 4,
                ..CompactionConfig::new(t)
            });
        }
        let client = b.build().unwrap();
        client.set_transcript(conversation.clone()).unwrap();
        client
    };
    let cases: [(&str, Option<u64>, Vec<ScriptEntry>); 3] = [
        ("compaction/off", None, vec![ScriptEntry::text("done")]),
        (
            "compaction/measured",
            Some(1_000_000),
            vec![ScriptEntry::text("done")],
        ),
        (
            "compaction/compacts",
            Some(1_000),
            vec![
                ScriptEntry::text("The user asked twenty questions about a fox."),
                ScriptEntry::text("done"),
            ],
        ),
    ];
    for (name, threshold, script) in cases {
        c.bench_function(name, |b| {
            b.iter_batched(
                || build(threshold, script.clone()),
                |client| {
                    let r = rt.block_on(client.run("go on")).unwrap();
                    assert_eq!(r.outcome, Outcome::Done);
                    if threshold == Some(1_000) {
                        assert_eq!(r.transcript.messages.len(), 6);
                    }
                },
                BatchSize::SmallInput,
            )
        });
    }
}

fn compaction_http(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let conversation = long_conversation();
    let entries = |texts: &[&str]| -> Vec<ModelEntry> {
        texts
            .iter()
            .map(|t| serde_json::from_value(json!({"text": t})).unwrap())
            .collect()
    };
    let cases = [
        ("compaction/http_openai_off", None, entries(&["done"])),
        (
            "compaction/http_openai_compacts",
            Some(1_000u64),
            entries(&["The user asked twenty questions about a fox.", "done"]),
        ),
    ];
    for (name, threshold, script) in cases {
        let server = rt
            .block_on(fake::serve_repeating(script, Style::Openai))
            .unwrap();
        let mut config: Config = serde_json::from_value(json!({
            "style": "openai",
            "base_url": server.base_url(),
            "model": "fake",
            "api_key": "test",
            "builtins": [],
            "root": root.path(),
        }))
        .unwrap();
        config.compaction = threshold.map(|t| CompactionConfig {
            keep_recent: 4,
            ..CompactionConfig::new(t)
        });
        let client = ClientBuilder::from_config(config).build().unwrap();
        c.bench_function(name, |b| {
            b.iter_batched(
                || client.set_transcript(conversation.clone()).unwrap(),
                |()| {
                    let r = rt.block_on(client.run("go on")).unwrap();
                    assert_eq!(r.outcome, Outcome::Done);
                },
                BatchSize::SmallInput,
            )
        });
        rt.block_on(server.shutdown());
    }
}

criterion_group!(benches, subagent, compaction, compaction_http);
criterion_main!(benches);
