//! `elicitation/create`: a server asks the user for input during a call. It becomes a pending
//! request of kind `elicitation`, answered by the calling turn's `wait_for` like any ask.
//!
//! The request's `prompt` is the server's message; its `data` is
//! `{"server": name, "message": ..., "requestedSchema": {...}}`; `call_id` and `name` are those
//! of the tool call the server asks during. The answer maps to MCP's actions:
//! - `{"result": {...}}`: accept with that content, when it matches `requestedSchema`;
//!   content that does not match is declined (the server never sees unchecked input);
//! - `{"approve": true}`: accept with no fields, when the schema allows an empty object;
//! - `{"approve": false}`: decline;
//! - a `wait_for` that fails (the host dismissed the question): cancel;
//! - no `wait_for`, a timeout (the server's `timeout_ms`) or a cancelled turn: decline.

use serde_json::{json, Map, Value};

use crate::event::Event;
use crate::gate::{Answer, PendingRequest};
use crate::gate_chain::{ask_outcome, Asked};

use super::calls::ActiveCalls;

/// The pending request kind of an elicitation.
pub const ELICITATION_KIND: &str = "elicitation";

/// What an MCP server's `elicitation/create` asks, read back from the pending request the host
/// is given (what the bindings' typed accessors return).
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// The server's name in the config.
    pub server: String,
    /// What to show the person.
    pub message: String,
    /// The JSON Schema the answer's `result` must match (an object schema).
    pub requested_schema: Value,
}

impl Elicitation {
    /// The elicitation `request` carries, or `None` when it is another kind of ask.
    pub fn from_request(request: &PendingRequest) -> Option<Elicitation> {
        if request.kind != ELICITATION_KIND {
            return None;
        }
        let data = request.data.as_ref()?.as_object()?;
        let text = |key: &str| {
            data.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Some(Elicitation {
            server: text("server"),
            message: text("message"),
            requested_schema: data
                .get("requestedSchema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"})),
        })
    }

    /// Whether `content` (the answer's `result`) matches the requested schema, as the engine
    /// checks it before the server sees it; `Err` says why not (the first mismatch).
    pub fn check(&self, content: &Value) -> Result<(), String> {
        check_against(&self.requested_schema, content)
    }

    /// Whether `value` is a valid answer to the one field `field` of the requested schema
    /// (a form asks field by field); a field the schema does not name is an error.
    pub fn check_field(&self, field: &str, value: &Value) -> Result<(), String> {
        let schema = self
            .requested_schema
            .get("properties")
            .and_then(|p| p.get(field))
            .ok_or_else(|| format!("the form has no field {field:?}"))?;
        check_against(schema, value)
    }
}

/// `value` against the JSON Schema `schema`: the first error, or `Ok`.
fn check_against(schema: &Value, value: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the server's requested schema does not compile: {e}"))?;
    let first = validator.iter_errors(value).next().map(|e| e.to_string());
    match first {
        None => Ok(()),
        Some(why) => Err(why),
    }
}

/// MCP's answer to one elicitation: `accept` (with content), `decline` or `cancel`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Elicited {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Elicited {
    /// MCP's `ElicitResult` as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            Elicited::Accept(content) => json!({"action": "accept", "content": content}),
            Elicited::Decline => json!({"action": "decline"}),
            Elicited::Cancel => json!({"action": "cancel"}),
        }
    }
}

/// Answer the elicitation `params` (MCP's `ElicitRequestParams` as JSON) of server `server`,
/// asking in the turn of the newest call running on it.
pub(crate) async fn elicit(
    server: &str,
    timeout_ms: u64,
    calls: &ActiveCalls,
    params: &Value,
) -> Elicited {
    // URL mode (a link to open) is not offered in the capabilities; a server that sends it
    // anyway is declined.
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return Elicited::Decline;
    }
    let Some(ctx) = calls.current() else {
        tracing::warn!(server, "elicitation outside of a tool call declined");
        return Elicited::Decline;
    };
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let schema = params
        .get("requestedSchema")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    let request = PendingRequest {
        kind: ELICITATION_KIND.into(),
        prompt: Some(message.clone()),
        timeout_ms: Some(timeout_ms),
        data: Some(json!({
            "server": server,
            "message": message,
            "requestedSchema": schema,
        })),
        call_id: ctx.call_id.clone(),
        name: ctx.name.clone(),
        arguments: Value::Null,
        deadline_ms: None,
    };
    let asked = ask_outcome(&ctx.scope, request, 0, &ctx.cancel, &ctx.events).await;
    let answer = match asked {
        Asked::Answered(answer) => answer,
        Asked::Failed(_) => return Elicited::Cancel,
        Asked::NoWaitFor | Asked::TimedOut | Asked::Cancelled => return Elicited::Decline,
    };
    ctx.events.emit(Event::Answer {
        call_id: ctx.call_id.clone(),
        name: ctx.name.clone(),
        answer: answer.clone(),
        agent: Vec::new(),
    });
    map_answer(answer, &schema, server)
}

/// The host's answer as an MCP action, the content checked against `schema`.
fn map_answer(answer: Answer, schema: &Value, server: &str) -> Elicited {
    let content = match answer {
        // A turn suspends only at its own calls' asks; a server's question mid-call cannot wait
        // across processes, so suspend declines it.
        Answer::Deny(_) | Answer::Suspend => return Elicited::Decline,
        Answer::Approve => Value::Object(Map::new()),
        Answer::Result(v) => v,
    };
    let Value::Object(fields) = content else {
        tracing::warn!(server, "elicitation answer is not an object; declined");
        return Elicited::Decline;
    };
    let value = Value::Object(fields);
    // The reason may quote the answer: only the fact is logged.
    if check_against(schema, &value).is_err() {
        tracing::warn!(
            server,
            "elicitation answer does not match the requested schema (or the schema does not compile); declined"
        );
        return Elicited::Decline;
    }
    match value {
        Value::Object(fields) => Elicited::Accept(fields),
        _ => Elicited::Decline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"name": {"type": "string"},
               "age": {"type": "integer", "minimum": 0}}, "required": ["name"]})
    }

    #[test]
    fn answers_map_to_actions_and_content_is_checked() {
        let ok = map_answer(
            Answer::result(json!({"name": "Ada", "age": 36})),
            &schema(),
            "s",
        );
        assert_eq!(
            ok.to_value(),
            json!({"action": "accept", "content": {"name": "Ada", "age": 36}})
        );
        let wrong = map_answer(Answer::result(json!({"age": -1})), &schema(), "s");
        assert_eq!(wrong, Elicited::Decline);
        let not_object = map_answer(Answer::result(json!("Ada")), &schema(), "s");
        assert_eq!(not_object, Elicited::Decline);
        assert_eq!(
            map_answer(Answer::deny("no"), &schema(), "s"),
            Elicited::Decline
        );
        // `approve: true` is an empty form: accepted only where nothing is required.
        assert_eq!(
            map_answer(Answer::approve(), &schema(), "s"),
            Elicited::Decline
        );
        assert_eq!(
            map_answer(Answer::approve(), &json!({"type": "object"}), "s"),
            Elicited::Accept(Map::new())
        );
        assert_eq!(Elicited::Cancel.to_value(), json!({"action": "cancel"}));
    }

    #[test]
    fn a_form_checks_its_fields_and_the_whole() {
        let asked = Elicitation {
            server: "s".into(),
            message: "m".into(),
            requested_schema: schema(),
        };
        assert_eq!(asked.check_field("age", &json!(3)), Ok(()));
        let low = asked.check_field("age", &json!(-1)).unwrap_err();
        assert!(low.contains("minimum"), "{low}");
        assert!(asked.check_field("other", &json!(1)).is_err());
        assert_eq!(asked.check(&json!({"name": "Ada"})), Ok(()));
        let missing = asked.check(&json!({"age": 3})).unwrap_err();
        assert!(missing.contains("name"), "{missing}");
    }
}
