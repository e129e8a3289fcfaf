//! Durable turns on the scripted style: a turn suspended at an ask, its checkpoint, and its
//! resume in a client built again from the same parts (as another process would): the gate
//! runs again, recorded results replay, a deadline is absolute, bad checkpoints and answers are
//! refused before anything runs.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use contenox::durable::{Answers, CHECKPOINT_VERSION};
use contenox::policy::Policy;
use contenox::{
    async_trait, tool_fn, Answer, CancellationToken, Client, Decision, ErrorKind, Event, Hints,
    Hooks, HostError, Message, Outcome, PendingRequest, ScriptEntry, ToolCallEvent, ToolOutput,
    ToolSpec, Transcript, TurnResult, WaitFor, ASK_TIMEOUT_DENIAL,
};
use serde_json::{json, Value};

/// A tool with a side effect: counts its runs (its text names the call's idempotency key).
pub(crate) fn counted(name: &str, read_only: bool, runs: Arc<AtomicU32>) -> Arc<contenox::FnTool> {
    let spec = ToolSpec::new(name, "Does something once.", json!({"type": "object"}));
    let spec = if read_only {
        spec.with_hints(Hints::read_only())
    } else {
        spec
    };
    Arc::new(tool_fn(spec, move |args, ctx| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::text(format!(
                "did {args} as {}",
                ctx.idempotency_key()
            )))
        }
    }))
}

/// Answers every ask with one answer, and remembers the requests.
pub(crate) struct Host {
    answer: Answer,
    seen: Mutex<Vec<PendingRequest>>,
}

impl Host {
    pub(crate) fn new(answer: Answer) -> Arc<Self> {
        Arc::new(Host {
            answer,
            seen: Mutex::new(Vec::new()),
        })
    }
    pub(crate) fn asked(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

#[async_trait]
impl WaitFor for Host {
    async fn wait_for(
        &self,
        request: PendingRequest,
        _cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        self.seen.lock().unwrap().push(request);
        Ok(self.answer.clone())
    }
}

/// Asks before `write`, with a timeout.
struct AskBeforeWrite(u64);
#[async_trait]
impl Hooks for AskBeforeWrite {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        Ok(if call.name == "write" {
            Decision::Ask(PendingRequest::new("approval", "write?").with_timeout_ms(self.0))
        } else {
            Decision::Allow
        })
    }
}

fn policy(action: &str) -> Policy {
    Policy::from_value(&json!({"default_action": "allow", "rules": [{"tool": "write", "action": action, "timeout_s": 600}]}))
        .unwrap()
}

/// The model's first reply: `read` (read-only, allowed) then `write` (asked).
fn read_then_write() -> ScriptEntry {
    let mut e = ScriptEntry::tool_call("c0", "read", json!({"n": 0}));
    let write = ScriptEntry::tool_call("c1", "write", json!({"n": 1}));
    e.tool_calls
        .as_mut()
        .unwrap()
        .extend(write.tool_calls.unwrap());
    e
}

struct Parts {
    reads: Arc<AtomicU32>,
    writes: Arc<AtomicU32>,
}

impl Parts {
    fn new() -> Self {
        Parts {
            reads: Arc::default(),
            writes: Arc::default(),
        }
    }
    /// A client as the host builds it in each process: its script, gate and host.
    fn client(&self, script: Vec<ScriptEntry>, policy: Policy, host: Arc<Host>) -> Client {
        Client::builder()
            .script(script)
            .tool(counted("read", true, self.reads.clone()))
            .tool(counted("write", false, self.writes.clone()))
            .policy(policy)
            .wait_for(host)
            .build()
            .unwrap()
    }
}

pub(crate) fn results(t: &Transcript) -> Vec<(String, String, bool)> {
    t.messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id, is_error, ..
            } => Some((call_id.clone(), m.text().into_owned(), *is_error)),
            _ => None,
        })
        .collect()
}

async fn suspended(parts: &Parts) -> TurnResult {
    let a = parts.client(
        vec![read_then_write(), ScriptEntry::text("never asked")],
        policy("approve"),
        Host::new(Answer::Suspend),
    );
    let r = a.run("read then write").await.unwrap();
    assert_eq!(r.outcome, Outcome::Suspended, "{:?}", r.error);
    r
}

fn answer(id: &str, a: Answer) -> Answers {
    Answers::from([(id.to_string(), a)])
}

#[tokio::test]
async fn suspend_then_resume_runs_each_tool_once_and_goes_on_to_the_model() {
    let parts = Parts::new();
    let first = suspended(&parts).await;
    assert_eq!(parts.reads.load(Ordering::SeqCst), 1, "the read ran before");
    assert_eq!(parts.writes.load(Ordering::SeqCst), 0);
    assert_eq!(first.pending.len(), 1);
    let p = &first.pending[0];
    assert_eq!((p.call_id.as_str(), p.name.as_str()), ("c1", "write"));
    assert_eq!(p.arguments, json!({"n": 1}));
    let deadline = p.deadline_ms.expect("an absolute deadline");
    assert!(p.timeout_ms.unwrap() <= 600_000);
    let cp: Value = serde_json::from_str(first.checkpoint.as_deref().unwrap()).unwrap();
    assert_eq!(cp["version"], CHECKPOINT_VERSION);
    assert!(cp["digest"].as_str().unwrap().len() == 64);
    assert_eq!(cp["calls"][0]["state"], "done");
    assert_eq!(cp["calls"][1]["state"], "asked");
    assert_eq!(cp["calls"][1]["deadline_ms"], deadline);
    assert_eq!(cp["calls"][1]["rule"], "rules[0]");

    // "Another process": a client built again, whose model goes on from the next reply.
    let host = Host::new(Answer::deny("the host must not be asked"));
    let b = parts.client(
        vec![ScriptEntry::text("all done")],
        policy("approve"),
        host.clone(),
    );
    let mut run = b
        .resume_stream(
            first.checkpoint.as_deref().unwrap(),
            answer("c1", Answer::Approve),
        )
        .unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(e);
    }
    let done = run.result().await.unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(done.final_text, "all done");
    assert_eq!(
        parts.reads.load(Ordering::SeqCst),
        1,
        "a recorded result is not re-run"
    );
    assert_eq!(parts.writes.load(Ordering::SeqCst), 1);
    assert_eq!(host.asked(), 0, "the answer stood in for the ask");
    let r = results(&done.transcript);
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].0.as_str(), r[0].2), ("c0", false));
    assert_eq!((r[1].0.as_str(), r[1].2), ("c1", false));
    // Both calls' keys name the one turn that began in the first client.
    let turn_id = cp["turn_id"].as_str().unwrap();
    assert!(r[0].1.ends_with(&format!("as {turn_id}:c0")), "{r:?}");
    assert!(r[1].1.ends_with(&format!("as {turn_id}:c1")), "{r:?}");
    done.transcript.validate().unwrap();
    // The gate ran again (its events are there), and the pending ask was answered.
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Gate { call_id, .. } if call_id == "c1")));
    assert!(events.iter().any(
        |e| matches!(e, Event::Answer { call_id, answer: Answer::Approve, .. } if call_id == "c1")
    ));
    assert!(matches!(
        events.last(),
        Some(Event::TurnEnd {
            outcome: Outcome::Done,
            ..
        })
    ));
}

#[tokio::test]
async fn a_policy_now_denying_wins_over_the_answer() {
    let parts = Parts::new();
    let first = suspended(&parts).await;
    let host = Host::new(Answer::Approve);
    let b = parts.client(vec![ScriptEntry::text("ok")], policy("deny"), host.clone());
    let done = b
        .resume(
            first.checkpoint.as_deref().unwrap(),
            answer("c1", Answer::Approve),
        )
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done);
    assert_eq!(parts.writes.load(Ordering::SeqCst), 0, "denied: never ran");
    let r = results(&done.transcript);
    assert!(r[1].2, "{r:?}");
    assert!(r[1].1.contains("rules[0]"), "{r:?}");
    assert_eq!(host.asked(), 0);
}

#[tokio::test]
async fn wrong_call_answer_twice_newer_and_tampered_are_refused() {
    let parts = Parts::new();
    let first = suspended(&parts).await;
    let text = first.checkpoint.clone().unwrap();
    let b = parts.client(
        vec![ScriptEntry::text("ok"), ScriptEntry::text("ok")],
        policy("approve"),
        Host::new(Answer::Approve),
    );
    let refused = |e: contenox::Error, has: &str| {
        assert_eq!(e.kind(), ErrorKind::Checkpoint, "{e}");
        assert!(e.to_string().contains(has), "{e}");
    };
    // An answer for a call that is not waiting: unknown, or already answered (its result in).
    refused(
        b.resume(&text, answer("nope", Answer::Approve))
            .await
            .unwrap_err(),
        "no call nope is waiting",
    );
    refused(
        b.resume(&text, answer("c0", Answer::Approve))
            .await
            .unwrap_err(),
        "already answered",
    );
    // Newer version.
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["version"] = json!(CHECKPOINT_VERSION + 1);
    refused(
        b.resume(&v.to_string(), Answers::new()).await.unwrap_err(),
        "newer than this engine's",
    );
    // Tampered: the write's arguments edited.
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["reply"]["calls"][1]["arguments"] = json!({"n": 666});
    refused(
        b.resume(&v.to_string(), answer("c1", Answer::Approve))
            .await
            .unwrap_err(),
        "does not match its digest",
    );
    refused(b.resume("{", Answers::new()).await.unwrap_err(), "not JSON");
    assert_eq!(parts.writes.load(Ordering::SeqCst), 0, "nothing ran");
    assert!(b.transcript().messages.is_empty(), "nothing changed");
    // Once, then refused.
    let done = b
        .resume(&text, answer("c1", Answer::Approve))
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done);
    refused(
        b.resume(&text, answer("c1", Answer::Approve))
            .await
            .unwrap_err(),
        "already resumed",
    );
    assert_eq!(parts.writes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_deadline_passed_at_resume_denies_with_the_timeout_sentence() {
    let writes = Arc::new(AtomicU32::new(0));
    let build = |script: Vec<ScriptEntry>, host: Arc<Host>| {
        Client::builder()
            .script(script)
            .tool(counted("write", false, writes.clone()))
            .hooks(Arc::new(AskBeforeWrite(40)))
            .wait_for(host)
            .build()
            .unwrap()
    };
    let a = build(
        vec![ScriptEntry::tool_call("c1", "write", json!({}))],
        Host::new(Answer::Suspend),
    );
    let first = a.run("write").await.unwrap();
    assert_eq!(first.outcome, Outcome::Suspended);
    assert!(first.pending[0].timeout_ms.unwrap() <= 40);
    tokio::time::sleep(Duration::from_millis(80)).await;
    let host = Host::new(Answer::Approve);
    let b = build(vec![ScriptEntry::text("ok")], host.clone());
    let done = b
        .resume(
            first.checkpoint.as_deref().unwrap(),
            answer("c1", Answer::Approve),
        )
        .await
        .unwrap();
    assert_eq!(writes.load(Ordering::SeqCst), 0);
    let r = results(&done.transcript);
    assert_eq!((r[0].1.as_str(), r[0].2), (ASK_TIMEOUT_DENIAL, true));
    assert_eq!(host.asked(), 0);
}

#[tokio::test]
async fn an_unanswered_ask_is_asked_again_with_what_is_left_of_its_time() {
    let writes = Arc::new(AtomicU32::new(0));
    let build = |script: Vec<ScriptEntry>, host: Arc<Host>| {
        Client::builder()
            .script(script)
            .tool(counted("write", false, writes.clone()))
            .hooks(Arc::new(AskBeforeWrite(60_000)))
            .wait_for(host)
            .build()
            .unwrap()
    };
    let a = build(
        vec![ScriptEntry::tool_call("c1", "write", json!({}))],
        Host::new(Answer::Suspend),
    );
    let first = a.run("write").await.unwrap();
    let deadline = first.pending[0].deadline_ms.unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    // Asked again, and suspended again: a second checkpoint of the same turn, same deadline.
    let again = Host::new(Answer::Suspend);
    let b = build(vec![], again.clone());
    let second = b
        .resume(first.checkpoint.as_deref().unwrap(), Answers::new())
        .await
        .unwrap();
    assert_eq!(second.outcome, Outcome::Suspended);
    let asked = again.seen.lock().unwrap()[0].clone();
    assert!(asked.timeout_ms.unwrap() < 60_000 - 20, "{asked:?}");
    assert_eq!(second.pending[0].deadline_ms, Some(deadline));
    let c = build(vec![ScriptEntry::text("ok")], Host::new(Answer::Approve));
    let done = c
        .resume(second.checkpoint.as_deref().unwrap(), Answers::new())
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done);
    assert_eq!(writes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_tool_changed_since_the_checkpoint_fails_closed() {
    let parts = Parts::new();
    let first = suspended(&parts).await;
    let writes = Arc::new(AtomicU32::new(0));
    let changed = Arc::new(tool_fn(
        ToolSpec::new("write", "Another write.", json!({"type": "object"})),
        {
            let writes = writes.clone();
            move |_args, _ctx| {
                let writes = writes.clone();
                async move {
                    writes.fetch_add(1, Ordering::SeqCst);
                    Ok(ToolOutput::text("wrote"))
                }
            }
        },
    ));
    let b = Client::builder()
        .script(vec![ScriptEntry::text("ok")])
        .tool(counted("read", true, parts.reads.clone()))
        .tool(changed)
        .policy(policy("approve"))
        .wait_for(Host::new(Answer::Approve))
        .build()
        .unwrap();
    let done = b
        .resume(
            first.checkpoint.as_deref().unwrap(),
            answer("c1", Answer::Approve),
        )
        .await
        .unwrap();
    assert_eq!(writes.load(Ordering::SeqCst), 0);
    let r = results(&done.transcript);
    assert!(r[1].2 && r[1].1.contains("the tool changed"), "{r:?}");
}

#[tokio::test]
async fn an_answer_result_stands_in_and_suspend_where_it_cannot_denies() {
    // {"result": ...} as the resume's answer: the call's result, the tool not run.
    let parts = Parts::new();
    let first = suspended(&parts).await;
    let b = parts.client(
        vec![ScriptEntry::text("ok")],
        policy("approve"),
        Host::new(Answer::Approve),
    );
    let done = b
        .resume(
            first.checkpoint.as_deref().unwrap(),
            answer("c1", Answer::result(json!({"stood": "in"}))),
        )
        .await
        .unwrap();
    assert_eq!(parts.writes.load(Ordering::SeqCst), 0);
    assert!(results(&done.transcript)[1].1.contains("stood"));
    // A resume's answer may not be suspend.
    let e = parts
        .client(vec![], policy("approve"), Host::new(Answer::Approve))
        .resume(
            first.checkpoint.as_deref().unwrap(),
            answer("c1", Answer::Suspend),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checkpoint);
}

/// The checkpoint of a turn suspended after `n` model requests (each but the last a read-only
/// call with a result), in bytes.
async fn checkpoint_size_after(n: usize) -> usize {
    let parts = Parts::new();
    let mut script: Vec<ScriptEntry> = (0..n - 1)
        .map(|i| ScriptEntry::tool_call(format!("r{i}"), "read", json!({"n": i})))
        .collect();
    script.push(ScriptEntry::tool_call("w", "write", json!({"n": n})));
    let client = Client::builder()
        .script(script)
        .tool(counted("read", true, parts.reads.clone()))
        .tool(counted("write", false, parts.writes.clone()))
        .policy(policy("approve"))
        .wait_for(Host::new(Answer::Suspend))
        .max_turns(n as u32 + 1)
        .build()
        .unwrap();
    let r = client.run("read many, then write").await.unwrap();
    assert_eq!(r.outcome, Outcome::Suspended);
    assert_eq!(parts.reads.load(Ordering::SeqCst) as usize, n - 1);
    r.checkpoint.unwrap().len()
}

/// docs/benchmarks.md records what this prints:
/// `cargo test -p contenox --test all durable::checkpoint_size -- --nocapture`.
#[tokio::test]
async fn checkpoint_size_grows_linearly_with_the_model_requests() {
    let mut sizes = Vec::new();
    for n in [10, 100, 1000] {
        let size = checkpoint_size_after(n).await;
        println!(
            "checkpoint after {n} model requests: {size} bytes ({} per request)",
            size / n
        );
        sizes.push(size);
    }
    // Linear: ten times the requests, about ten times the bytes (never a hundred).
    assert!(sizes[2] < sizes[1] * 12, "{sizes:?}");
    assert!(sizes[1] < sizes[0] * 12, "{sizes:?}");
}
