//! The checker's keys of the `step` extension (a turn stepped by its host): the trace's
//! `actions` (what `next()` gave, in order), `replay_actions` (the same turn replayed from its
//! journal) and `step_errors` (feeds the binding refused). See tests/conformance/README.md.

use serde_json::{Map, Value};

use crate::scenario::Expect;

/// An action object of the trace as its pattern: `model_request:STEP`,
/// `summary_request:STEP`, `tool_call:NAME`, `ask:CALL_ID`, `done`.
fn pattern(action: &Value) -> String {
    let field = |k: &str| match action.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "?".into(),
    };
    match action.get("kind").and_then(Value::as_str) {
        Some("model_request") => format!("model_request:{}", field("step")),
        Some("summary_request") => format!("summary_request:{}", field("step")),
        Some("tool_call") => format!("tool_call:{}", field("name")),
        Some("ask") => format!("ask:{}", field("call_id")),
        Some("done") => "done".into(),
        _ => format!("unknown action {action}"),
    }
}

fn list<'a>(extra: &'a Map<String, Value>, key: &str) -> Option<&'a Vec<Value>> {
    extra.get(key).and_then(Value::as_array)
}

/// `turn_` + 32 lowercase hex digits.
fn is_turn_id(id: &str) -> bool {
    id.strip_prefix("turn_").is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Every tool_call action's idempotency key is `turn_id:call_id`.
fn check_keys(key: &str, actions: &[Value], turn_id: &str, fails: &mut Vec<String>) {
    for a in actions {
        if a.get("kind").and_then(Value::as_str) != Some("tool_call") {
            continue;
        }
        let call_id = a.get("call_id").and_then(Value::as_str).unwrap_or("?");
        let want = format!("{turn_id}:{call_id}");
        let got = a.get("idempotency_key").and_then(Value::as_str);
        if got != Some(want.as_str()) {
            fails.push(format!(
                "{key}: call {call_id}'s idempotency_key is {got:?}, not {want:?}"
            ));
        }
    }
}

/// The `step` keys of `e` against a trace (its `final_text` and its keys beyond the common
/// ones, `extra`), and the keys every stepped trace must satisfy.
pub(crate) fn check_step(
    e: &Expect,
    final_text: Option<&str>,
    extra: &Map<String, Value>,
    fails: &mut Vec<String>,
) {
    let actions = list(extra, "actions");
    if let Some(actions) = actions {
        let turn_id = extra.get("turn_id").and_then(Value::as_str).unwrap_or("");
        if !is_turn_id(turn_id) {
            fails.push(format!(
                "turn_id: {turn_id:?} is not turn_ and 32 lowercase hex digits"
            ));
        }
        check_keys("actions", actions, turn_id, fails);
        if let Some(replayed) = list(extra, "replay_actions") {
            check_keys("replay_actions", replayed, turn_id, fails);
        }
    }
    if let Some(want) = &e.actions {
        let got: Vec<String> = actions.into_iter().flatten().map(pattern).collect();
        if &got != want {
            fails.push(format!(
                "actions: expected {want:?}, got {got:?}{}",
                if actions.is_none() {
                    " (the trace has no actions: the runner did not step the turn)"
                } else {
                    ""
                }
            ));
        }
    }
    if e.replay_same == Some(true) {
        let replayed = list(extra, "replay_actions");
        if replayed.is_none() || replayed != actions {
            fails.push(format!(
                "replay_same: the replay's actions {replayed:?} are not the turn's {actions:?}"
            ));
        }
        let text = extra.get("replay_final_text").and_then(Value::as_str);
        if text != final_text {
            fails.push(format!(
                "replay_same: the replay's final text {text:?} is not the turn's {final_text:?}"
            ));
        }
    }
    if let Some(want) = &e.step_errors_contain {
        let got: Vec<&str> = list(extra, "step_errors")
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or(""))
            .collect();
        let fits = got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.contains(w));
        if !fits {
            fails.push(format!(
                "step_errors_contain: expected {} refused feeds holding {want:?} in order, got \
                 {got:?}",
                want.len()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fails(expect: Value, trace: Value) -> Vec<String> {
        let e: Expect = serde_json::from_value(expect).unwrap();
        let Value::Object(mut extra) = trace else {
            panic!("a trace is an object")
        };
        let text = extra.remove("final_text");
        let mut fails = Vec::new();
        check_step(
            &e,
            text.as_ref().and_then(Value::as_str),
            &extra,
            &mut fails,
        );
        fails
    }

    const TURN: &str = "turn_0123456789abcdef0123456789abcdef";

    fn stepped(key: &str, replay_text: &str) -> Value {
        let actions = json!([
            {"kind": "model_request", "step": 0},
            {"kind": "tool_call", "name": "bash", "call_id": "c1", "idempotency_key": key},
            {"kind": "done"}
        ]);
        json!({"final_text": "ok", "turn_id": TURN, "actions": actions,
               "replay_actions": actions, "replay_final_text": replay_text,
               "step_errors": ["the action waiting is a model_request; a tool_call result does \
                                not answer it"]})
    }

    #[test]
    fn a_stepped_trace_passes_and_each_defect_fails() {
        let expect = json!({"actions": ["model_request:0", "tool_call:bash", "done"],
                            "replay_same": true, "step_errors_contain": ["does not answer it"]});
        let good = format!("{TURN}:c1");
        assert!(fails(expect.clone(), stepped(&good, "ok")).is_empty());
        let f = fails(expect.clone(), stepped("turn_x:c1", "ok"));
        assert!(f.iter().any(|f| f.contains("idempotency_key")), "{f:?}");
        let f = fails(expect.clone(), stepped(&good, "other"));
        assert!(f.iter().any(|f| f.contains("replay's final text")), "{f:?}");
        let f = fails(
            json!({"actions": ["model_request:0", "done"]}),
            stepped(&good, "ok"),
        );
        assert!(f.iter().any(|f| f.starts_with("actions:")), "{f:?}");
        let f = fails(
            json!({"step_errors_contain": ["x", "y"]}),
            stepped(&good, "ok"),
        );
        assert!(
            f.iter().any(|f| f.starts_with("step_errors_contain")),
            "{f:?}"
        );
        let f = fails(json!({"actions": ["done"]}), json!({"final_text": "ok"}));
        assert!(f.iter().any(|f| f.contains("did not step")), "{f:?}");
    }
}
