//! What the sandbox costs a bash call: one scripted turn whose single tool call is
//! `bash {"command": "true"}`, with the sandbox on (Landlock ruleset, seccomp filter, capability
//! cut, session, death signal, watchdog registration) and off (allowlisted environment, session,
//! death signal and watchdog only). Fork and exec of bash dominate both.
//!
//! `cargo bench -p contenox-conformance --bench bash`

use std::time::Duration;

use contenox::{Client, Config, ScriptEntry};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;

fn client(root: &std::path::Path, sandbox: bool) -> Client {
    let mut config: Config = serde_json::from_value(json!({
        "style": "scripted",
        "builtins": ["bash"],
        "sandbox": {"enabled": sandbox},
    }))
    .expect("config");
    config.root = Some(root.to_path_buf());
    // Enough entries for every iteration criterion runs; each turn takes two.
    let mut script = Vec::new();
    for _ in 0..20_000 {
        script.push(ScriptEntry::tool_call(
            "c1",
            "bash",
            json!({"command": "true"}),
        ));
        script.push(ScriptEntry::text("ok"));
    }
    config.script = Some(script);
    Client::from_config(config).expect("client")
}

fn bash_call(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let root = tempfile::tempdir().expect("root");
    println!("sandbox: {}", contenox::sandbox::status().summary());
    let mut group = c.benchmark_group("bash_true_turn");
    group.measurement_time(Duration::from_secs(8));
    for (name, on) in [("sandbox_on", true), ("sandbox_off", false)] {
        let client = client(root.path(), on);
        group.bench_function(name, |b| {
            b.iter(|| {
                let r = rt.block_on(client.run("go")).expect("turn");
                assert_eq!(r.outcome, contenox::Outcome::Done);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bash_call);
criterion_main!(benches);
