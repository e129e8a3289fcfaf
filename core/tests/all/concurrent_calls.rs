//! A reply's calls side by side (issue 27): read-only calls overlap, a panicking one touches no
//! other, results keep the model's order, and a call starts while the scripted reply still
//! "streams" (`pause_after_ms`). Overlap is proven with a barrier the calls must all reach
//! (bounded by a deadline), never by timing.

use std::sync::Arc;
use std::time::Duration;

use contenox::{
    tool_fn, Client, Event, Hints, Outcome, ScriptCall, ScriptEntry, ToolConcurrency, ToolOutput,
    ToolSpec,
};
use serde_json::json;
use tokio::sync::Barrier;

fn call(id: &str, name: &str) -> ScriptCall {
    ScriptCall {
        id: Some(id.into()),
        name: name.into(),
        arguments: json!({}),
        pause_after_ms: None,
    }
}

/// A read-only tool that waits at `barrier` (at most `deadline`): "met" when every party came.
fn meet(barrier: Arc<Barrier>, deadline: Duration) -> Arc<contenox::FnTool> {
    let spec =
        ToolSpec::new("meet", "Meet.", json!({"type": "object"})).with_hints(Hints::read_only());
    Arc::new(tool_fn(spec, move |_args, _ctx| {
        let barrier = barrier.clone();
        async move {
            let met = tokio::time::timeout(deadline, barrier.wait()).await;
            Ok(ToolOutput::text(if met.is_ok() { "met" } else { "alone" }))
        }
    }))
}

fn client(
    script: Vec<ScriptEntry>,
    mode: ToolConcurrency,
    barrier: Arc<Barrier>,
    deadline: Duration,
) -> Client {
    let boom =
        ToolSpec::new("boom", "Panics.", json!({"type": "object"})).with_hints(Hints::read_only());
    Client::builder()
        .script(script)
        .builtins(Vec::<String>::new())
        .tool_concurrency(mode)
        .tool(meet(barrier, deadline))
        .tool(Arc::new(tool_fn(boom, |_args, _ctx| async move {
            if true {
                panic!("boom");
            }
            Ok(ToolOutput::text("unreachable"))
        })))
        .build()
        .unwrap()
}

fn results(client: &Client) -> Vec<(String, String)> {
    client
        .transcript()
        .messages
        .iter()
        .filter_map(|m| match m {
            contenox::Message::Tool { call_id, .. } => {
                Some((call_id.clone(), m.text().into_owned()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn read_only_calls_overlap_and_a_panic_touches_no_other() {
    let script = vec![
        ScriptEntry {
            tool_calls: Some(vec![
                call("a", "meet"),
                call("b", "boom"),
                call("c", "meet"),
            ]),
            ..Default::default()
        },
        ScriptEntry::text("done"),
    ];
    let barrier = Arc::new(Barrier::new(2));
    let c = client(
        script,
        ToolConcurrency::ReadOnly,
        barrier,
        Duration::from_secs(5),
    );
    let r = c.run("go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    let got = results(&c);
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"], "results in the model's order");
    assert_eq!(got[0].1, "met");
    assert!(got[1].1.contains("panicked"), "{}", got[1].1);
    assert_eq!(got[2].1, "met");
}

#[tokio::test]
async fn none_runs_one_at_a_time() {
    let script = vec![
        ScriptEntry {
            tool_calls: Some(vec![call("a", "meet"), call("b", "meet")]),
            ..Default::default()
        },
        ScriptEntry::text("done"),
    ];
    // Barrier of 2 with calls one at a time: the first call waits for its deadline alone.
    let barrier = Arc::new(Barrier::new(2));
    let c = client(
        script,
        ToolConcurrency::Sequential,
        barrier,
        Duration::from_millis(200),
    );
    let r = c.run("go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    let got = results(&c);
    assert_eq!(got[0].1, "alone");
}

#[tokio::test]
async fn a_call_starts_while_the_reply_streams() {
    let mut first = call("a", "meet");
    first.pause_after_ms = Some(1000);
    let script = vec![
        ScriptEntry {
            tool_calls: Some(vec![first, call("b", "meet")]),
            ..Default::default()
        },
        ScriptEntry::text("done"),
    ];
    // A barrier of 1: the call ends at once. The reply pauses a second after the first call:
    // its tool_start comes before the reply's usage event.
    let barrier = Arc::new(Barrier::new(1));
    let c = client(
        script,
        ToolConcurrency::ReadOnly,
        barrier,
        Duration::from_secs(5),
    );
    let run = c.stream("go").unwrap();
    let mut order = Vec::new();
    loop {
        let batch = run.next_batch().await;
        if batch.is_empty() {
            break;
        }
        for e in batch {
            match &e {
                Event::ToolStart { call_id, .. } => order.push(format!("start {call_id}")),
                Event::Usage { .. } => order.push("usage".into()),
                _ => {}
            }
        }
    }
    let r = run.result().await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert_eq!(
        order.first().map(String::as_str),
        Some("start a"),
        "{order:?}"
    );
    let usage = order.iter().position(|o| o == "usage").unwrap();
    assert!(usage > 0, "{order:?}");
}
