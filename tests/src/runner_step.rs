//! The Rust runner's `step` extension: the scenario's prompt as a turn stepped by its host
//! (`Client::step`), every action performed (an ask's perform calls the scripted `wait_for`),
//! then, with `replay`, the same turn in a second client fed from the first one's journal.
//! What each runner does is written in tests/conformance/README.md ("The `step` extension").

use contenox::step::{Action, ActionResult, Stepper};
use contenox::{Client, RunOptions, TurnResult};
use serde_json::{json, Map, Value};

/// The stepped turn's share of the trace.
pub struct Stepped {
    pub events: Vec<Value>,
    pub result: TurnResult,
    pub extra: Map<String, Value>,
}

/// An action as the trace records it.
fn action_value(action: &Action) -> Value {
    match action {
        Action::ModelRequest { step, .. } => json!({"kind": "model_request", "step": step}),
        Action::SummaryRequest { step, .. } => json!({"kind": "summary_request", "step": step}),
        Action::ToolCall {
            call,
            idempotency_key,
        } => json!({
            "kind": "tool_call",
            "name": call.name,
            "call_id": call.id,
            "idempotency_key": idempotency_key,
        }),
        Action::Ask { request } => json!({"kind": "ask", "call_id": request.call_id}),
        Action::Done { .. } => json!({"kind": "done"}),
    }
}

fn take_events(stepper: &Stepper, events: &mut Vec<Value>) -> Result<(), String> {
    for e in stepper.events() {
        events.push(serde_json::to_value(&e).map_err(|e| e.to_string())?);
    }
    Ok(())
}

/// A feed that must be refused: its message, or none when the binding took it.
fn refused_feed(stepper: &Stepper, result: Value, errors: &mut Vec<Value>) -> Result<(), String> {
    let result: ActionResult = serde_json::from_value(result).map_err(|e| e.to_string())?;
    if let Err(e) = stepper.feed(result) {
        errors.push(json!(e.to_string()));
    }
    Ok(())
}

/// Step `prompt` on `client` as the `step` spec says; `replay_client` builds the second client.
pub async fn run_stepped(
    spec: &Value,
    prompt: &str,
    client: &Client,
    replay_client: impl FnOnce() -> Result<Client, String>,
) -> Result<Stepped, String> {
    let flag = |k: &str| spec.get(k).and_then(Value::as_bool).unwrap_or(false);
    let stepper = client.step(prompt).map_err(|e| e.to_string())?;
    let mut events = Vec::new();
    let mut actions = Vec::new();
    let mut step_errors = Vec::new();
    if flag("wrong_feed") {
        stepper.next().await.map_err(|e| e.to_string())?;
        let wrong = json!({"kind": "tool_result", "call_id": "nope",
                           "output": {"content": "x", "is_error": false}});
        refused_feed(&stepper, wrong, &mut step_errors)?;
    }
    let result = loop {
        let action = stepper.next().await.map_err(|e| e.to_string())?;
        actions.push(action_value(&action));
        if let Action::Done { result } = action {
            break *result;
        }
        stepper.perform().await.map_err(|e| e.to_string())?;
        take_events(&stepper, &mut events)?;
    };
    take_events(&stepper, &mut events)?;
    if flag("wrong_feed") {
        let late = json!({"kind": "answer", "call_id": "nope", "answer": {"approve": true}});
        refused_feed(&stepper, late, &mut step_errors)?;
    }
    let mut extra = Map::new();
    extra.insert("turn_id".into(), json!(stepper.turn_id()));
    if flag("replay") {
        let journal = stepper.journal();
        let client2 = replay_client()?;
        let replay = client2
            .step_with(prompt, RunOptions::default(), stepper.options())
            .map_err(|e| e.to_string())?;
        let mut fed = journal.into_iter();
        let mut replayed = Vec::new();
        let text = loop {
            let action = replay.next().await.map_err(|e| e.to_string())?;
            replayed.push(action_value(&action));
            if let Action::Done { result } = action {
                break result.final_text;
            }
            let next = fed
                .next()
                .ok_or("replay: the journal ended before the turn did")?;
            replay
                .feed(next)
                .map_err(|e| format!("replay: a journal entry was refused: {e}"))?;
        };
        client2.close();
        extra.insert("replay_actions".into(), Value::Array(replayed));
        extra.insert("replay_final_text".into(), json!(text));
    }
    extra.insert("actions".into(), Value::Array(actions));
    if flag("wrong_feed") {
        extra.insert("step_errors".into(), Value::Array(step_errors));
    }
    Ok(Stepped {
        events,
        result,
        extra,
    })
}
