//! Several pending asks in one suspension: after a call of a reply suspends, the reply's later
//! calls are still gated and asked in the model's order, but none runs before the resume (a
//! later call may depend on the suspended one). Every ask answered suspend is pending; a denial
//! is the call's recorded result; an approval given before the suspension is kept for its call
//! and request digest; a resume may answer some of the pending calls (the rest are asked again
//! and may suspend again).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use contenox::durable::{Answers, CHECKPOINT_VERSION};
use contenox::policy::Policy;
use contenox::step::{Action, ActionResult};
use contenox::{
    async_trait, tool_fn, Answer, CancellationToken, Client, ErrorKind, Event, Hints, HostError,
    Outcome, PendingRequest, RunOptions, ScriptEntry, ToolOutput, ToolSpec, TurnResult, WaitFor,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::durable::results;

/// The order the tools ran in (`name:n`), shared by every client of a test (its "processes").
type Log = Arc<Mutex<Vec<String>>>;

fn logged(name: &str, read_only: bool, log: Log) -> Arc<contenox::FnTool> {
    let spec = ToolSpec::new(name, "Does something once.", json!({"type": "object"}));
    let spec = if read_only {
        spec.with_hints(Hints::read_only())
    } else {
        spec
    };
    let tool = name.to_string();
    Arc::new(tool_fn(spec, move |args, _ctx| {
        let (log, tool) = (log.clone(), tool.clone());
        async move {
            log.lock().unwrap().push(format!("{tool}:{}", args["n"]));
            Ok(ToolOutput::text(format!("{tool} did {}", args["n"])))
        }
    }))
}

/// Gives its scripted answers in turn (then denies), and remembers which calls it was asked.
struct Scripted {
    answers: Mutex<VecDeque<Answer>>,
    asked: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Arc<Self> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.into_iter().collect()),
            asked: Mutex::default(),
        })
    }
    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

#[async_trait]
impl WaitFor for Scripted {
    async fn wait_for(
        &self,
        request: PendingRequest,
        _cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        self.asked.lock().unwrap().push(request.call_id);
        Ok(self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Answer::deny("the script of answers is over")))
    }
}

/// Asks before `write` and `send` (with a timeout), denies what `deny` names. Each tool's
/// ask is the same rule (`rules[1]` for `write`, `rules[3]` for `send`) whatever is denied: an
/// answer stands in only for the same request, and the request names its rule.
fn policy(deny: &[&str]) -> Policy {
    let mut rules = Vec::new();
    for t in ["write", "send"] {
        // Denies `t`, or a tool no test has.
        let tool = if deny.contains(&t) {
            t.to_string()
        } else {
            format!("no_{t}")
        };
        rules.push(json!({"tool": tool, "action": "deny", "name": format!("no {t} now")}));
        rules.push(json!({"tool": t, "action": "approve", "timeout_s": 600}));
    }
    Policy::from_value(&json!({"default_action": "allow", "rules": rules})).unwrap()
}

/// One model reply with these calls, `(id, tool, n)` each.
fn reply(calls: &[(&str, &str, u32)]) -> ScriptEntry {
    let mut e = ScriptEntry::tool_call(calls[0].0, calls[0].1, json!({"n": calls[0].2}));
    for (id, tool, n) in &calls[1..] {
        let more = ScriptEntry::tool_call(*id, *tool, json!({"n": n}));
        e.tool_calls
            .as_mut()
            .unwrap()
            .extend(more.tool_calls.unwrap());
    }
    e
}

/// The parts every "process" of a test builds its client from.
#[derive(Default)]
struct Parts {
    log: Log,
}

impl Parts {
    fn client(&self, script: Vec<ScriptEntry>, policy: Policy, host: Arc<Scripted>) -> Client {
        Client::builder()
            .script(script)
            .tool(logged("write", false, self.log.clone()))
            .tool(logged("send", false, self.log.clone()))
            .tool(logged("read", true, self.log.clone()))
            .policy(policy)
            .wait_for(host)
            .build()
            .unwrap()
    }
    fn ran(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

fn checkpoint(r: &TurnResult) -> (&str, Value) {
    let text = r
        .checkpoint
        .as_deref()
        .expect("a suspended turn's checkpoint");
    (text, serde_json::from_str(text).unwrap())
}

fn states(cp: &Value) -> Vec<String> {
    cp["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["state"].as_str().unwrap().to_string())
        .collect()
}

fn pending_ids(r: &TurnResult) -> Vec<&str> {
    r.pending.iter().map(|p| p.call_id.as_str()).collect()
}

fn answers(pairs: &[(&str, Answer)]) -> Answers {
    pairs
        .iter()
        .map(|(id, a)| (id.to_string(), a.clone()))
        .collect()
}

/// A host that must not be asked (the resume's answers stand in).
fn not_asked() -> Arc<Scripted> {
    Scripted::new([])
}

/// The first process: `write` (c1) then `send` (c2) in one reply, both asks answered suspend.
async fn two_pending(parts: &Parts) -> TurnResult {
    let host = Scripted::new([Answer::Suspend, Answer::Suspend]);
    let a = parts.client(
        vec![
            reply(&[("c1", "write", 1), ("c2", "send", 2)]),
            ScriptEntry::text("never asked"),
        ],
        policy(&[]),
        host.clone(),
    );
    let r = a.run("write then send").await.unwrap();
    assert_eq!(r.outcome, Outcome::Suspended, "{:?}", r.error);
    assert_eq!(
        host.asked(),
        ["c1", "c2"],
        "both asked, in the model's order"
    );
    r
}

#[tokio::test]
async fn two_asked_calls_both_suspend_and_both_are_pending_in_model_order() {
    let parts = Parts::default();
    let first = two_pending(&parts).await;
    assert!(parts.ran().is_empty(), "nothing ran: {:?}", parts.ran());
    assert_eq!(pending_ids(&first), ["c1", "c2"]);
    assert_eq!(first.pending[1].name, "send");
    assert_eq!(first.pending[1].arguments, json!({"n": 2}));
    assert!(first.pending.iter().all(|p| p.deadline_ms.is_some()));
    let (_, cp) = checkpoint(&first);
    assert_eq!(cp["version"], CHECKPOINT_VERSION);
    assert_eq!(CHECKPOINT_VERSION, 2);
    assert_eq!(states(&cp), ["asked", "asked"]);
    // Neither has a result in the conversation yet.
    assert!(results(&first.transcript).is_empty());

    // Another process answers both: both run, in the model's order, then the model once more.
    let host = not_asked();
    let b = parts.client(
        vec![ScriptEntry::text("both done")],
        policy(&[]),
        host.clone(),
    );
    let done = b
        .resume(
            checkpoint(&first).0,
            answers(&[("c1", Answer::Approve), ("c2", Answer::Approve)]),
        )
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(done.final_text, "both done");
    assert_eq!(parts.ran(), ["write:1", "send:2"]);
    assert!(
        host.asked().is_empty(),
        "the answers stood in: {:?}",
        host.asked()
    );
    let r = results(&done.transcript);
    let ids: Vec<(&str, bool)> = r.iter().map(|(id, _, e)| (id.as_str(), *e)).collect();
    assert_eq!(ids, [("c1", false), ("c2", false)]);
    done.transcript.validate().unwrap();
}

#[tokio::test]
async fn resume_one_then_the_other() {
    let parts = Parts::default();
    let first = two_pending(&parts).await;
    // B answers c1 only: c1 runs, c2 is asked again, and its host suspends it again.
    let host = Scripted::new([Answer::Suspend]);
    let b = parts.client(
        vec![ScriptEntry::text("never asked")],
        policy(&[]),
        host.clone(),
    );
    let second = b
        .resume(checkpoint(&first).0, answers(&[("c1", Answer::Approve)]))
        .await
        .unwrap();
    assert_eq!(second.outcome, Outcome::Suspended, "{:?}", second.error);
    assert_eq!(host.asked(), ["c2"]);
    assert_eq!(parts.ran(), ["write:1"]);
    assert_eq!(pending_ids(&second), ["c2"]);
    // c2 keeps its first deadline: a resumed ask does not restart its clock.
    assert_eq!(second.pending[0].deadline_ms, first.pending[1].deadline_ms);
    let (_, cp) = checkpoint(&second);
    assert_eq!(states(&cp), ["done", "asked"]);
    assert_eq!(cp["seq"], 1);
    // The first checkpoint's answer for c1 was applied: c1 cannot be answered again.
    let c = parts.client(vec![ScriptEntry::text("done")], policy(&[]), not_asked());
    let e = c
        .resume(checkpoint(&second).0, answers(&[("c1", Answer::Approve)]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checkpoint);
    assert!(e.to_string().contains("already answered"), "{e}");
    // C answers c2: it runs; c1's recorded result replays (not run again).
    let done = c
        .resume(checkpoint(&second).0, answers(&[("c2", Answer::Approve)]))
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(parts.ran(), ["write:1", "send:2"]);
    let r = results(&done.transcript);
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].0.as_str(), r[0].1.as_str()), ("c1", "write did 1"));
    assert_eq!((r[1].0.as_str(), r[1].1.as_str()), ("c2", "send did 2"));
    done.transcript.validate().unwrap();
}

#[tokio::test]
async fn an_answer_for_the_later_call_only_waits_for_the_earlier_one() {
    let parts = Parts::default();
    let first = two_pending(&parts).await;
    // B answers c2 only: c1 is asked again and suspends again; c2 must not run before c1 (it
    // may depend on it): its approval is kept in the new checkpoint.
    let host = Scripted::new([Answer::Suspend]);
    let b = parts.client(
        vec![ScriptEntry::text("never asked")],
        policy(&[]),
        host.clone(),
    );
    let second = b
        .resume(checkpoint(&first).0, answers(&[("c2", Answer::Approve)]))
        .await
        .unwrap();
    assert_eq!(second.outcome, Outcome::Suspended, "{:?}", second.error);
    assert_eq!(host.asked(), ["c1"], "c2's answer stood in for its ask");
    assert!(parts.ran().is_empty(), "{:?}", parts.ran());
    assert_eq!(pending_ids(&second), ["c1"]);
    let (text, cp) = checkpoint(&second);
    assert_eq!(states(&cp), ["asked", "approved"]);
    // The kept approval is not pending: answering it is refused, before anything runs.
    let c = parts.client(
        vec![ScriptEntry::text("both done")],
        policy(&[]),
        not_asked(),
    );
    let e = c
        .resume(
            text,
            answers(&[("c1", Answer::Approve), ("c2", Answer::Approve)]),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checkpoint);
    assert!(e.to_string().contains("c2 was already approved"), "{e}");
    // C answers c1: c1 runs, then c2 on its kept approval (the gate asked again; the host is
    // not asked).
    let mut run = c
        .resume_stream(text, answers(&[("c1", Answer::Approve)]))
        .unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(e);
    }
    let done = run.result().await.unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(parts.ran(), ["write:1", "send:2"]);
    let gated: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Gate { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(gated, ["c1", "c2"], "the gate ran again for both");
}

#[tokio::test]
async fn a_kept_approval_stands_only_for_its_own_request() {
    // c1 suspends, c2 is approved before the turn suspends (kept), c3 (another send) too.
    let parts = Parts::default();
    let host = Scripted::new([Answer::Suspend, Answer::Approve, Answer::Approve]);
    let a = parts.client(
        vec![reply(&[
            ("c1", "write", 1),
            ("c2", "send", 2),
            ("c3", "send", 3),
        ])],
        policy(&[]),
        host.clone(),
    );
    let first = a.run("go").await.unwrap();
    assert_eq!(first.outcome, Outcome::Suspended);
    assert_eq!(host.asked(), ["c1", "c2", "c3"]);
    assert!(parts.ran().is_empty());
    let (text, cp) = checkpoint(&first);
    assert_eq!(states(&cp), ["asked", "approved", "approved"]);
    // Edited so that c3's kept approval is c2's (resealed, as an attacker could): the digest
    // of c3's request differs from the one kept, so the gate's ask of c3 goes to the host.
    let mut v = cp.clone();
    v["calls"][2]["approvals"] = v["calls"][1]["approvals"].clone();
    let host = Scripted::new([Answer::deny("not c3")]);
    let b = parts.client(vec![ScriptEntry::text("done")], policy(&[]), host.clone());
    let done = b
        .resume(&reseal(v), answers(&[("c1", Answer::Approve)]))
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(host.asked(), ["c3"], "only c3's ask reached the host");
    assert_eq!(parts.ran(), ["write:1", "send:2"]);
    let r = results(&done.transcript);
    assert!(r[2].2 && r[2].1.contains("not c3"), "{r:?}");
    // The unedited checkpoint, in yet another process: both kept approvals stand.
    let c = parts.client(vec![ScriptEntry::text("done")], policy(&[]), not_asked());
    let done = c
        .resume(text, answers(&[("c1", Answer::Approve)]))
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(
        parts.ran(),
        ["write:1", "send:2", "write:1", "send:2", "send:3"]
    );
}

#[tokio::test]
async fn a_policy_changed_to_deny_one_wins_over_answers_and_kept_approvals() {
    let parts = Parts::default();
    let first = two_pending(&parts).await;
    // `send` is denied now: c2's answer does not stand; c1 runs.
    let b = parts.client(
        vec![ScriptEntry::text("done")],
        policy(&["send"]),
        not_asked(),
    );
    let done = b
        .resume(
            checkpoint(&first).0,
            answers(&[("c1", Answer::Approve), ("c2", Answer::Approve)]),
        )
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    let r = results(&done.transcript);
    assert_eq!(parts.ran(), ["write:1"], "{r:?}");
    assert!(!r[0].2, "{r:?}");
    assert!(r[1].2 && r[1].1.contains("no send now"), "{r:?}");

    // The same with an approval kept before the suspension.
    let parts = Parts::default();
    let host = Scripted::new([Answer::Suspend, Answer::Approve]);
    let a = parts.client(
        vec![reply(&[("c1", "write", 1), ("c2", "send", 2)])],
        policy(&[]),
        host,
    );
    let first = a.run("go").await.unwrap();
    assert_eq!(states(&checkpoint(&first).1), ["asked", "approved"]);
    let b = parts.client(
        vec![ScriptEntry::text("done")],
        policy(&["send"]),
        not_asked(),
    );
    let done = b
        .resume(checkpoint(&first).0, answers(&[("c1", Answer::Approve)]))
        .await
        .unwrap();
    assert_eq!(parts.ran(), ["write:1"]);
    let r = results(&done.transcript);
    assert!(r[1].2 && r[1].1.contains("no send now"), "{r:?}");
}

#[tokio::test]
async fn a_call_denied_after_the_suspension_is_recorded_as_its_result() {
    let parts = Parts::default();
    let host = Scripted::new([Answer::Suspend, Answer::deny("not that send")]);
    let a = parts.client(
        vec![reply(&[("c1", "write", 1), ("c2", "send", 2)])],
        policy(&[]),
        host,
    );
    let first = a.run("go").await.unwrap();
    assert_eq!(first.outcome, Outcome::Suspended);
    assert_eq!(pending_ids(&first), ["c1"]);
    let (text, cp) = checkpoint(&first);
    assert_eq!(states(&cp), ["asked", "done"]);
    let e = parts
        .client(vec![], policy(&[]), not_asked())
        .resume(text, answers(&[("c2", Answer::Approve)]))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("c2 was already answered"), "{e}");
    // Its recorded denial replays: the host is not asked, the send never runs.
    let b = parts.client(vec![ScriptEntry::text("done")], policy(&[]), not_asked());
    let done = b
        .resume(text, answers(&[("c1", Answer::Approve)]))
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(parts.ran(), ["write:1"]);
    let r = results(&done.transcript);
    assert!(r[1].2 && r[1].1.contains("not that send"), "{r:?}");
}

#[tokio::test]
async fn an_allowed_call_after_the_asked_ones_runs_only_after_them() {
    // c2 is a read the policy allows without asking: it must not run before c1 (its write),
    // nor before c3 (asked after it), though it could run beside other reads.
    let parts = Parts::default();
    let host = Scripted::new([Answer::Suspend, Answer::Suspend]);
    let a = parts.client(
        vec![reply(&[
            ("c1", "write", 1),
            ("c2", "read", 2),
            ("c3", "send", 3),
        ])],
        policy(&[]),
        host.clone(),
    );
    let first = a.run("go").await.unwrap();
    assert_eq!(first.outcome, Outcome::Suspended);
    assert_eq!(host.asked(), ["c1", "c3"]);
    assert!(parts.ran().is_empty(), "the read waits: {:?}", parts.ran());
    assert_eq!(pending_ids(&first), ["c1", "c3"]);
    let (text, cp) = checkpoint(&first);
    assert_eq!(states(&cp), ["asked", "untaken", "asked"]);
    let b = parts.client(vec![ScriptEntry::text("done")], policy(&[]), not_asked());
    let done = b
        .resume(
            text,
            answers(&[("c1", Answer::Approve), ("c3", Answer::Approve)]),
        )
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(parts.ran(), ["write:1", "read:2", "send:3"]);
}

#[tokio::test]
async fn a_version_1_checkpoint_with_an_approved_call_is_refused() {
    let parts = Parts::default();
    let host = Scripted::new([Answer::Suspend, Answer::Approve]);
    let a = parts.client(
        vec![reply(&[("c1", "write", 1), ("c2", "send", 2)])],
        policy(&[]),
        host,
    );
    let first = a.run("go").await.unwrap();
    let (_, mut v) = checkpoint(&first);
    v["version"] = json!(1);
    let e = parts
        .client(vec![ScriptEntry::text("done")], policy(&[]), not_asked())
        .resume(&reseal(v), answers(&[("c1", Answer::Approve)]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checkpoint);
    assert!(e.to_string().contains("no approved calls"), "{e}");
    assert!(parts.ran().is_empty());
}

/// Suspends the first ask; at the second, cancels the turn and waits until the wait is over.
struct CancelAtSecond {
    turn: CancellationToken,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl WaitFor for CancelAtSecond {
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        let first = {
            let mut asked = self.asked.lock().unwrap();
            asked.push(request.call_id);
            asked.len() == 1
        };
        if first {
            return Ok(Answer::Suspend);
        }
        self.turn.cancel();
        cancel.cancelled().await;
        Ok(Answer::Approve)
    }
}

#[tokio::test]
async fn a_held_ask_cut_by_cancel_waits_for_the_resume_not_cancelled_for_good() {
    let parts = Parts::default();
    let turn = CancellationToken::new();
    let host = Arc::new(CancelAtSecond {
        turn: turn.clone(),
        asked: Mutex::default(),
    });
    let a = Client::builder()
        .script(vec![reply(&[("c1", "write", 1), ("c2", "send", 2)])])
        .tool(logged("write", false, parts.log.clone()))
        .tool(logged("send", false, parts.log.clone()))
        .policy(policy(&[]))
        .wait_for(host.clone())
        .build()
        .unwrap();
    let options = RunOptions {
        cancel: Some(turn),
        ..RunOptions::default()
    };
    let first = a.run_with("go", options).await.unwrap();
    assert_eq!(*host.asked.lock().unwrap(), ["c1", "c2"]);
    // The suspension stands; the cut ask is no answer: c2 is gated and asked again at resume.
    assert_eq!(first.outcome, Outcome::Suspended, "{:?}", first.error);
    assert_eq!(pending_ids(&first), ["c1"]);
    let (text, cp) = checkpoint(&first);
    assert_eq!(states(&cp), ["asked", "untaken"]);
    let host = Scripted::new([Answer::Approve]);
    let b = parts.client(vec![ScriptEntry::text("done")], policy(&[]), host.clone());
    let done = b
        .resume(text, answers(&[("c1", Answer::Approve)]))
        .await
        .unwrap();
    assert_eq!(done.outcome, Outcome::Done, "{:?}", done.error);
    assert_eq!(host.asked(), ["c2"]);
    assert_eq!(parts.ran(), ["write:1", "send:2"]);
}

#[tokio::test]
async fn a_stepped_turn_holds_nothing_its_suspend_is_a_denial() {
    // A stepped turn's host answers every ask: suspend there denies that call only, and the
    // later call is asked and runs as in any turn (nothing held, no checkpoint).
    let parts = Parts::default();
    let client = parts.client(
        vec![
            reply(&[("c1", "write", 1), ("c2", "send", 2)]),
            ScriptEntry::text("done"),
        ],
        policy(&[]),
        not_asked(),
    );
    let stepper = client.step("go").unwrap();
    let mut asked = Vec::new();
    let mut result = None;
    for _ in 0..30 {
        match stepper.next().await.unwrap() {
            Action::Done { result: r } => {
                result = Some(r);
                break;
            }
            Action::Ask { request } => {
                let answer = match asked.is_empty() {
                    true => json!({"suspend": true}),
                    false => json!({"approve": true}),
                };
                asked.push(request.call_id.clone());
                let call_id = request.call_id;
                stepper
                    .feed(ActionResult::Answer { call_id, answer })
                    .unwrap();
            }
            _ => {
                stepper.perform().await.unwrap();
            }
        }
    }
    let result = result.expect("the stepped turn ended");
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    assert!(result.checkpoint.is_none() && result.pending.is_empty());
    assert_eq!(asked, ["c1", "c2"]);
    assert_eq!(parts.ran(), ["send:2"]);
    let r = results(&result.transcript);
    assert!(r[0].2 && r[0].1.contains("cannot suspend"), "{r:?}");
}

/// The checkpoint `v` sealed again (its digest is a plain SHA-256: anyone can reseal).
fn reseal(mut v: Value) -> String {
    if let Value::Object(m) = &mut v {
        m.remove("digest");
    }
    let hex: String = Sha256::digest(v.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if let Value::Object(m) = &mut v {
        m.insert("digest".into(), Value::String(hex));
    }
    v.to_string()
}
