//! A turn stepped by its host ([`contenox::step`]): driven by hand it ends as `run` does;
//! replaying the recorded results gives the same actions and does no I/O (no model request,
//! no tool run, no `wait_for`); results that do not fit are refused and change nothing.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use contenox::policy::Policy;
use contenox::step::{Action, ActionResult, StepOptions, Stepper};
use contenox::{
    async_trait, tool_fn, Answer, CancellationToken, Client, Event, Hints, HostError, Outcome,
    PendingRequest, RunOptions, ScriptEntry, ToolOutput, ToolSpec, WaitFor,
};
use serde_json::{json, Value};

/// A tool that counts its runs; its text names the call's idempotency key.
fn counted(name: &str, read_only: bool, runs: Arc<AtomicU32>) -> Arc<contenox::FnTool> {
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

/// Approves every ask, counting them.
#[derive(Default)]
struct Approver(Mutex<Vec<PendingRequest>>);

#[async_trait]
impl WaitFor for Approver {
    async fn wait_for(&self, r: PendingRequest, _: CancellationToken) -> Result<Answer, HostError> {
        self.0.lock().unwrap().push(r);
        Ok(Answer::Approve)
    }
}

/// Reply 1: `read` then `write` (asked by the policy); reply 2: `read` again; reply 3: text.
fn script() -> Vec<ScriptEntry> {
    let mut first = ScriptEntry::tool_call("c0", "read", json!({"n": 0}));
    let write = ScriptEntry::tool_call("c1", "write", json!({"n": 1}));
    first
        .tool_calls
        .as_mut()
        .unwrap()
        .extend(write.tool_calls.unwrap());
    vec![
        first,
        ScriptEntry::tool_call("c2", "read", json!({"n": 2})),
        ScriptEntry::text("all done"),
    ]
}

#[derive(Default)]
struct Parts {
    reads: Arc<AtomicU32>,
    writes: Arc<AtomicU32>,
    host: Arc<Approver>,
}

impl Parts {
    fn client(&self, script: Vec<ScriptEntry>) -> Client {
        let policy = Policy::from_value(&json!({"default_action": "allow",
            "rules": [{"tool": "write", "action": "approve", "timeout_s": 600}]}))
        .unwrap();
        Client::builder()
            .script(script)
            .tool(counted("read", true, self.reads.clone()))
            .tool(counted("write", false, self.writes.clone()))
            .policy(policy)
            .wait_for(self.host.clone())
            .build()
            .unwrap()
    }
    fn runs(&self) -> (u32, u32, usize) {
        (
            self.reads.load(Ordering::SeqCst),
            self.writes.load(Ordering::SeqCst),
            self.host.0.lock().unwrap().len(),
        )
    }
}

/// Drive `stepper` to its end: the host answers each ask itself (approve), the engine does
/// the rest. The actions as JSON, in order (the last is `done`).
async fn drive(stepper: &Stepper) -> Vec<Value> {
    let mut actions = Vec::new();
    for _ in 0..50 {
        let action = stepper.next().await.unwrap();
        actions.push(serde_json::to_value(&action).unwrap());
        match action {
            Action::Done { .. } => return actions,
            Action::Ask { request } => stepper
                .feed(ActionResult::Answer {
                    call_id: request.call_id,
                    answer: json!({"approve": true}),
                })
                .unwrap(),
            _ => {
                stepper.perform().await.unwrap();
            }
        }
    }
    panic!("the stepped turn did not end in 50 actions");
}

fn done(actions: &[Value]) -> Value {
    let last = actions.last().unwrap();
    assert_eq!(last["kind"], "done", "{last}");
    last["result"].clone()
}

#[tokio::test]
async fn a_turn_stepped_by_hand_ends_as_run_does() {
    let ran = Parts::default();
    let result = ran.client(script()).run("go").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(ran.runs(), (2, 1, 1));

    let stepped = Parts::default();
    let client = stepped.client(script());
    let stepper = client.step("go").unwrap();
    let actions = drive(&stepper).await;
    let kinds: Vec<&str> = actions
        .iter()
        .map(|a| a["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "model_request",
            "tool_call",
            "ask",
            "tool_call",
            "model_request",
            "tool_call",
            "model_request",
            "done"
        ]
    );
    // The ask was answered by the host's feed, not by its wait_for; each tool ran once.
    assert_eq!(stepped.runs(), (2, 1, 0));
    let end = done(&actions);
    assert_eq!(end["outcome"], "done");
    assert_eq!(end["final_text"], "all done");
    // The turn ids differ: compare the transcripts with each one's id put back as `TURN`.
    let mine = end["transcript"]
        .to_string()
        .replace(stepper.turn_id(), "TURN");
    let theirs = serde_json::to_value(&result.transcript)
        .unwrap()
        .to_string();
    let theirs = with_turn_ids_as_placeholder(&theirs);
    assert_eq!(mine, theirs);
    assert_eq!(client.transcript(), result.transcript_with_ids(&stepper));
    // Each tool call's idempotency key is `turn_id:call_id`, the one its tool got.
    for a in actions.iter().filter(|a| a["kind"] == "tool_call") {
        let key = format!(
            "{}:{}",
            stepper.turn_id(),
            a["call"]["id"].as_str().unwrap()
        );
        assert_eq!(a["idempotency_key"], key.as_str());
        assert!(mine.contains(&format!("as TURN:{}", a["call"]["id"].as_str().unwrap())));
    }
    // The turn's events came as they do from `stream`: the gate asked once, answered approve.
    let events = stepper.events();
    let answers: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Answer { .. }))
        .collect();
    assert_eq!(answers.len(), 1, "{events:?}");
    let kinds: Vec<&str> = events.iter().map(|e| e.kind()).collect();
    assert_eq!(kinds.first(), Some(&"turn_start"));
    assert_eq!(kinds.last(), Some(&"turn_end"));
    assert_eq!(kinds.iter().filter(|k| **k == "tool_result").count(), 3);
}

/// `run`'s transcript with its drawn turn id put back as `TURN`.
fn with_turn_ids_as_placeholder(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("turn_") {
        out.push_str(&rest[..i]);
        let id = &rest[i..];
        let len = 5 + id[5..]
            .chars()
            .take_while(|c| c.is_ascii_hexdigit())
            .count();
        out.push_str(if len == 37 { "TURN" } else { &id[..len] });
        rest = &id[len..];
    }
    out.push_str(rest);
    out
}

trait WithIds {
    fn transcript_with_ids(&self, stepper: &Stepper) -> contenox::Transcript;
}

impl WithIds for contenox::TurnResult {
    fn transcript_with_ids(&self, stepper: &Stepper) -> contenox::Transcript {
        let text = serde_json::to_string(&self.transcript).unwrap();
        let text = with_turn_ids_as_placeholder(&text).replace("TURN", stepper.turn_id());
        serde_json::from_str(&text).unwrap()
    }
}

#[tokio::test]
async fn feeding_the_recorded_results_again_gives_the_same_actions_and_does_no_io() {
    let first = Parts::default();
    let client = first.client(script());
    let stepper = client.step("go").unwrap();
    let actions = drive(&stepper).await;
    let journal = stepper.journal();
    assert_eq!(journal.len(), actions.len() - 1);
    let options = stepper.options();

    // Another process: the same config, but a model that would fail if asked and tools and a
    // host that count.
    let again = Parts::default();
    let client2 = again.client(Vec::new());
    let replay = client2
        .step_with("go", RunOptions::default(), options.clone())
        .unwrap();
    let mut replayed = Vec::new();
    let mut fed = journal.into_iter();
    loop {
        let action = replay.next().await.unwrap();
        replayed.push(serde_json::to_value(&action).unwrap());
        if let Action::Done { .. } = action {
            break;
        }
        replay
            .feed(fed.next().expect("an action past the journal"))
            .unwrap();
    }
    assert!(fed.next().is_none());
    assert_eq!(replayed, actions);
    assert_eq!(again.runs(), (0, 0, 0), "the replay ran nothing");
    assert_eq!(client2.transcript(), client.transcript());

    // Different start state: another turn id, so other idempotency keys.
    let other = again.client(Vec::new());
    let fresh = other
        .step_with(
            "go",
            RunOptions::default(),
            StepOptions {
                turn_id: Some("turn_0123".into()),
                clock_ms: options.clock_ms,
            },
        )
        .unwrap();
    let Action::ModelRequest { turn_id, step, .. } = fresh.next().await.unwrap() else {
        panic!("a model request first");
    };
    assert_eq!((turn_id.as_str(), step), ("turn_0123", 0));
}

#[tokio::test]
async fn results_that_do_not_fit_are_refused_and_change_nothing() {
    let parts = Parts::default();
    let client = parts.client(script());
    let stepper = client.step("go").unwrap();
    // Nothing waits yet.
    let e = stepper
        .feed(ActionResult::ToolResult {
            call_id: "c0".into(),
            output: ToolOutput::text("x"),
        })
        .unwrap_err();
    assert!(e.to_string().contains("call next() first"), "{e}");
    assert!(stepper.perform().await.is_err());

    let first = stepper.next().await.unwrap();
    assert_eq!(first.kind(), "model_request");
    // Asking again gives the same action.
    assert_eq!(
        serde_json::to_value(stepper.next().await.unwrap()).unwrap(),
        serde_json::to_value(&first).unwrap()
    );
    // Another kind, another step, neither or both of reply and error: refused.
    let wrong_kind = stepper.feed(ActionResult::Answer {
        call_id: "c0".into(),
        answer: json!({"approve": true}),
    });
    assert!(wrong_kind
        .unwrap_err()
        .to_string()
        .contains("the action waiting is a model_request; a ask result"));
    let wrong_step = stepper.feed(ActionResult::ModelResponse {
        summary: false,
        step: 7,
        reply: Some(Default::default()),
        error: None,
    });
    assert!(wrong_step.unwrap_err().to_string().contains("step 0"));
    let empty = stepper.feed(ActionResult::ModelResponse {
        summary: false,
        step: 0,
        reply: None,
        error: None,
    });
    assert!(empty.is_err());
    // Nothing changed: the right result goes on.
    let ActionResult::ModelResponse {
        reply: Some(reply), ..
    } = stepper.perform().await.unwrap()
    else {
        panic!("the scripted reply");
    };
    assert_eq!(reply.calls.len(), 2);
    // The same result twice: the second is for an action no longer waiting.
    let Action::ToolCall { call, .. } = stepper.next().await.unwrap() else {
        panic!("the read call");
    };
    let out = ActionResult::ToolResult {
        call_id: call.id.clone(),
        output: ToolOutput::text("fed"),
    };
    stepper.feed(out.clone()).unwrap();
    let Action::Ask { request } = stepper.next().await.unwrap() else {
        panic!("the write's ask");
    };
    assert!(stepper.feed(out).is_err(), "a tool result for an ask");
    // An answer that is not one, or for another call.
    let bad = stepper.feed(ActionResult::Answer {
        call_id: request.call_id.clone(),
        answer: json!("yes"),
    });
    assert!(bad.unwrap_err().to_string().contains("not one"));
    let other = stepper.feed(ActionResult::Answer {
        call_id: "c0".into(),
        answer: json!({"approve": true}),
    });
    assert!(other.unwrap_err().to_string().contains("call c1"));
    // Deny: the write never runs.
    stepper
        .feed(ActionResult::Answer {
            call_id: request.call_id,
            answer: json!({"approve": false, "message": "no writes today"}),
        })
        .unwrap();
    let mut last = None;
    for _ in 0..20 {
        match stepper.next().await.unwrap() {
            Action::Done { result } => {
                last = Some(result);
                break;
            }
            _ => {
                stepper.perform().await.unwrap();
            }
        }
    }
    let result = last.expect("the turn ended");
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(
        parts.runs(),
        (1, 0, 0),
        "read c0 was fed, c2 ran; write denied"
    );
    let text = serde_json::to_string(&result.transcript).unwrap();
    assert!(
        text.contains("no writes today") && text.contains("fed"),
        "{text}"
    );
    // After done: nothing to feed or perform; next() gives done again.
    let e = stepper
        .feed(ActionResult::ToolResult {
            call_id: "c2".into(),
            output: ToolOutput::text("late"),
        })
        .unwrap_err();
    assert!(e.to_string().contains("the turn is done"), "{e}");
    assert!(stepper.perform().await.is_err());
    assert_eq!(stepper.next().await.unwrap().kind(), "done");
}

#[tokio::test]
async fn a_stepped_turn_refuses_to_suspend_and_a_failed_request_can_be_fed() {
    let parts = Parts::default();
    let client = parts.client(script());
    let stepper = client.step("go").unwrap();
    assert_eq!(stepper.next().await.unwrap().kind(), "model_request");
    stepper
        .feed(ActionResult::ModelResponse {
            step: 0,
            summary: false,
            reply: None,
            error: Some(contenox::step::ModelFailure {
                message: "model server answered HTTP 503".into(),
                context_overflow: false,
                malformed_call: None,
                status: Some(503),
            }),
        })
        .unwrap();
    let Action::Done { result } = stepper.next().await.unwrap() else {
        panic!("a failed request ends the turn");
    };
    assert_eq!(result.outcome, Outcome::Error);
    assert_eq!(
        result.error.as_deref(),
        Some("model server answered HTTP 503")
    );

    // An answer of suspend is denied: the host holds a stepped turn's state.
    let stepper = client.step("go").unwrap();
    let mut denied = false;
    for _ in 0..20 {
        match stepper.next().await.unwrap() {
            Action::Done { result } => {
                assert_eq!(result.outcome, Outcome::Done);
                assert!(result.checkpoint.is_none());
                break;
            }
            Action::Ask { request } => {
                denied = true;
                stepper
                    .feed(ActionResult::Answer {
                        call_id: request.call_id,
                        answer: json!({"suspend": true}),
                    })
                    .unwrap();
            }
            _ => {
                stepper.perform().await.unwrap();
            }
        }
    }
    assert!(denied);
    assert_eq!(parts.writes.load(Ordering::SeqCst), 0);
}

/// A client whose restored conversation is over its compaction threshold.
fn compacting(script: Vec<ScriptEntry>) -> Client {
    let client = Client::builder()
        .script(script)
        .builtins(Vec::<String>::new())
        .compaction(contenox::CompactionConfig {
            threshold_tokens: 1_000,
            keep_recent: 1,
            instructions: None,
        })
        .build()
        .unwrap();
    client
        .set_transcript(contenox::Transcript {
            messages: vec![
                contenox::Message::user(format!("remember {}", "y".repeat(8_000))),
                contenox::Message::assistant("remembered", vec![]),
            ],
        })
        .unwrap();
    client
}

#[tokio::test]
async fn a_compaction_summary_request_is_an_action_and_replays_without_io() {
    let client = compacting(vec![
        ScriptEntry::text("The user asked to remember a long text."),
        ScriptEntry::text("it was y"),
    ]);
    let stepper = client.step("what was it?").unwrap();
    let mut kinds = Vec::new();
    let result = loop {
        let action = stepper.next().await.unwrap();
        kinds.push(action.kind());
        match action {
            Action::Done { result } => break result,
            Action::SummaryRequest { step, .. } => {
                // Before model request 0 (its body: the conformance scenario on a wire style).
                assert_eq!(step, 0);
                // A plain model response does not answer it, and changes nothing.
                let wrong = stepper.feed(ActionResult::ModelResponse {
                    step: 0,
                    summary: false,
                    reply: Some(Default::default()),
                    error: None,
                });
                assert!(wrong.unwrap_err().to_string().contains("summary_request"));
                stepper.perform().await.unwrap();
            }
            _ => {
                stepper.perform().await.unwrap();
            }
        }
    };
    assert_eq!(kinds, ["summary_request", "model_request", "done"]);
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(result.final_text, "it was y");
    let events = stepper.events();
    assert_eq!(events.iter().filter(|e| e.kind() == "compact").count(), 1);
    let journal = stepper.journal();
    assert!(matches!(
        journal[0],
        ActionResult::ModelResponse { summary: true, .. }
    ));

    // The same turn replayed from its journal on a client whose model has nothing to say.
    let again = compacting(Vec::new());
    let replay = again
        .step_with("what was it?", RunOptions::default(), stepper.options())
        .unwrap();
    let mut fed = journal.into_iter();
    let mut replayed = Vec::new();
    let text = loop {
        let action = replay.next().await.unwrap();
        replayed.push(action.kind());
        if let Action::Done { result } = action {
            break result.final_text;
        }
        replay.feed(fed.next().unwrap()).unwrap();
    };
    assert_eq!(replayed, kinds);
    assert_eq!(text, "it was y");
    // The conversation was compacted the same way: a summary, the kept message, the turn's.
    let t = again.transcript();
    assert!(t.messages[0].text().starts_with(contenox::SUMMARY_HEADER));
}

#[tokio::test]
async fn a_perform_the_host_stopped_waiting_for_is_still_journaled() {
    let spec = ToolSpec::new("slow", "Takes a while.", json!({"type": "object"}))
        .with_hints(Hints::read_only());
    let slow = Arc::new(tool_fn(spec, |_args, _ctx| async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        Ok(ToolOutput::text("slow done"))
    }));
    let client = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "slow", json!({})),
            ScriptEntry::text("finished"),
        ])
        .builtins(Vec::<String>::new())
        .tool(slow)
        .build()
        .unwrap();
    let stepper = client.step("go").unwrap();
    assert_eq!(stepper.next().await.unwrap().kind(), "model_request");
    stepper.perform().await.unwrap();
    assert_eq!(stepper.next().await.unwrap().kind(), "tool_call");
    // The host stops waiting (its perform future dropped) while the tool runs on.
    let waited = tokio::time::timeout(std::time::Duration::from_millis(20), stepper.perform());
    assert!(waited.await.is_err(), "the tool answered within 20 ms");
    // The turn went on with the tool's result, and the journal has it: a replay can feed it.
    assert_eq!(stepper.next().await.unwrap().kind(), "model_request");
    let journal = stepper.journal();
    assert_eq!(journal.len(), 2, "{journal:?}");
    let ActionResult::ToolResult { call_id, output } = &journal[1] else {
        panic!("the tool's result, got {:?}", journal[1]);
    };
    assert_eq!(call_id, "c1");
    assert!(!output.is_error);
}
