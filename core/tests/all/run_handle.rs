//! The `Run` handle as bindings use it: events in batches, a result several parties await.

use std::sync::Arc;

use contenox::{Client, Event, Outcome, Run, ScriptEntry};
use serde_json::json;

fn client(dir: &std::path::Path, script: Vec<ScriptEntry>) -> Client {
    Client::builder()
        .script(script)
        .root(dir)
        .builtins(["read"])
        .build()
        .unwrap()
}

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(Event::kind).collect()
}

#[test]
fn run_is_send_and_sync() {
    fn shared<T: Send + Sync + 'static>() {}
    shared::<Run>();
}

#[tokio::test]
async fn one_batch_holds_every_ready_event_and_the_stream_ends_after_turn_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    let client = client(
        dir.path(),
        vec![
            ScriptEntry::tool_call("c1", "read", json!({"path": "a.txt"})),
            ScriptEntry::text("all done"),
        ],
    );
    let run = client.stream("go").unwrap();
    // Once the turn is over every event is ready: one call hands out all of them.
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    let batch = run.next_batch().await;
    let k = kinds(&batch);
    assert_eq!(k.first(), Some(&"turn_start"));
    assert_eq!(k.last(), Some(&"turn_end"));
    for kind in ["tool_call", "gate", "tool_start", "tool_result", "text"] {
        assert!(k.contains(&kind), "{kind} missing from {k:?}");
    }
    assert!(run.next_batch().await.is_empty(), "ended after turn_end");
    assert_eq!(
        run.try_batch(),
        Some(Vec::new()),
        "try_batch says ended too"
    );
}

#[tokio::test]
async fn batches_and_shared_results_see_the_same_turn() {
    let dir = tempfile::tempdir().unwrap();
    let client = client(
        dir.path(),
        vec![ScriptEntry::text("one two three four five")],
    );
    let run = Arc::new(client.stream("hello").unwrap());
    // Two other parties wait for the result while this one reads the events.
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let run = run.clone();
            tokio::spawn(async move { run.result().await.unwrap() })
        })
        .collect();
    let mut events = Vec::new();
    loop {
        let batch = match run.try_batch() {
            Some(batch) => batch,
            None => run.next_batch().await,
        };
        if batch.is_empty() {
            break;
        }
        events.extend(batch);
    }
    assert_eq!(kinds(&events).first(), Some(&"turn_start"));
    assert_eq!(
        kinds(&events).iter().filter(|k| **k == "turn_end").count(),
        1,
        "exactly one turn_end: {:?}",
        kinds(&events)
    );
    let Some(Event::TurnEnd { final_text, .. }) = events.last() else {
        panic!("the last event is turn_end: {:?}", kinds(&events));
    };
    assert_eq!(final_text, "one two three four five");
    for waiter in waiters {
        let r = waiter.await.unwrap();
        assert_eq!(r.final_text, "one two three four five");
    }
    // And once more, after everybody else: the handle is not consumed.
    assert_eq!(run.result().await.unwrap().outcome, Outcome::Done);
    assert!(run.is_finished());
}

#[test]
fn a_turn_whose_runtime_went_away_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let client = client(
        dir.path(),
        vec![ScriptEntry {
            stall: true,
            ..Default::default()
        }],
    );
    let first = tokio::runtime::Runtime::new().unwrap();
    let run = first.block_on(async { client.stream("stall").unwrap() });
    // Shutting the runtime down drops the turn's task mid-turn.
    drop(first);
    let second = tokio::runtime::Runtime::new().unwrap();
    let err = second.block_on(run.result()).unwrap_err();
    assert!(err.to_string().contains("without a result"), "{err}");
}

/// A caller's cancel token that is never cancelled (an app-wide one) must not keep one task per
/// finished turn: the link from it to a turn ends with the turn.
#[tokio::test]
async fn an_outside_token_keeps_no_task_alive_after_its_turns() {
    let dir = tempfile::tempdir().unwrap();
    let script: Vec<ScriptEntry> = (0..41)
        .map(|i| ScriptEntry::text(format!("t{i}")))
        .collect();
    let client = client(dir.path(), script);
    let outer = contenox::CancellationToken::new();
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    for _ in 0..20 {
        let options = contenox::RunOptions::default().cancel(outer.clone());
        let r = client.run_with("go", options).await.unwrap();
        assert_eq!(r.outcome, Outcome::Done);
        let run = client
            .stream_with("go", contenox::RunOptions::default().cancel(outer.clone()))
            .unwrap();
        assert_eq!(run.result().await.unwrap().outcome, Outcome::Done);
    }
    // Aborted link tasks are reaped by the scheduler: give it a few bounded chances.
    let mut alive = metrics.num_alive_tasks();
    for _ in 0..100 {
        if alive <= before {
            break;
        }
        tokio::task::yield_now().await;
        alive = metrics.num_alive_tasks();
    }
    assert!(
        alive <= before,
        "{alive} tasks alive after 40 turns, {before} before"
    );
    // The link still works while a turn runs: cancelling the outside token cancels it.
    outer.cancel();
    let r = client
        .run_with("go", contenox::RunOptions::default().cancel(outer.clone()))
        .await
        .unwrap();
    assert_eq!(r.outcome, Outcome::Cancelled);
}
