//! `sampling/createMessage`: a server asks the client's model to generate. Off by default (it
//! spends the user's tokens); a server's `"sampling": true` offers it.
//!
//! Each request passes the calling turn's gate first, as a call of its own: the name
//! [`SAMPLING_CALL`], source `mcp`, the server's name, the request's parameters (`messages`,
//! `systemPrompt`, `maxTokens`, ...) as its arguments and the hints of a call that reaches
//! outside (`openWorld`), so a policy or `before_tool` can allow, ask or deny it like any call
//! (a policy rule `{"tools": "mcp", "tool": "sampling", "action": "deny"}`). Allowed, it is
//! one request to the calling client's own model, with no tools and outside the conversation;
//! what it spent counts in the calling turn's usage and budgets (the tool call's
//! `tool_result` reports it). The server's `temperature` and `stopSequences` replace the
//! client's settings; `maxTokens`, `modelPreferences` and `includeContext` are not applied
//! (the client's model and its `max_tokens` answer; no context is shared).

use serde_json::{json, Value};

use crate::event::{Event, GateVerdict};
use crate::gate::{Answer, ToolCallEvent, DEFAULT_DENIAL, SUSPEND_UNAVAILABLE};
use crate::gate_chain;
use crate::scope::SampleRequest;
use crate::tool::{Hints, Source, ToolContext};
use crate::transcript::Message;

use super::calls::ActiveCalls;

/// The name a sampling request has at the gate (no MCP tool can have it: theirs are all
/// `<server>__<tool>`).
pub const SAMPLING_CALL: &str = "sampling";

/// Answer the sampling request `params` (MCP's `CreateMessageRequestParams` as JSON) of server
/// `server` in the turn of the newest call running on it: MCP's `CreateMessageResult` as JSON,
/// or the error message the server is sent.
pub(crate) async fn sample(
    server: &str,
    calls: &ActiveCalls,
    params: Value,
) -> Result<Value, String> {
    let Some(ctx) = calls.current() else {
        return Err("sampling is answered only during a call of one of this server's tools".into());
    };
    let request = read_request(&params)?;
    if let Some(refused) = pass_gate(server, &ctx, params).await? {
        return Err(refused);
    }
    let Some(own) = ctx.scope.own() else {
        return Err("sampling needs a client's turn; this call runs outside of one".into());
    };
    let sampled = own.sample(&request, &ctx.cancel).await;
    let sampled = sampled.map_err(|e| format!("the client's model failed: {e}"))?;
    ctx.report_usage(sampled.usage);
    Ok(json!({
        "role": "assistant",
        "content": {"type": "text", "text": sampled.text},
        "model": sampled.model,
        "stopReason": if sampled.cut { "maxTokens" } else { "endTurn" },
    }))
}

/// `Ok(Some(message))` when a gate refused the request, `Ok(None)` when it may run.
async fn pass_gate(
    server: &str,
    ctx: &ToolContext,
    params: Value,
) -> Result<Option<String>, String> {
    let event = ToolCallEvent {
        name: SAMPLING_CALL.into(),
        arguments: params,
        call_id: format!("{}.sampling", ctx.call_id),
        hints: Hints {
            read_only: None,
            destructive: Some(false),
            open_world: Some(true),
        },
        source: Source::Mcp,
        server: Some(server.to_string()),
        agent: ctx.scope.agent(),
    };
    let Some(gated) = gate_chain::gate(&ctx.scope, &event, &ctx.root, &ctx.cancel).await else {
        return Err("the turn was cancelled".into());
    };
    let emit = |decision: GateVerdict, message: Option<String>| {
        ctx.events.emit(gated.event(&event, decision, message))
    };
    if let Some(message) = gated.denied.clone() {
        emit(GateVerdict::Deny, Some(message.clone()));
        return Ok(Some(message));
    }
    if gated.asks.is_empty() {
        emit(GateVerdict::Allow, None);
        return Ok(None);
    }
    emit(GateVerdict::Ask, None);
    for (level, mut request) in gated.asks {
        request.call_id = event.call_id.clone();
        request.name = event.name.clone();
        request.arguments = event.arguments.clone();
        let Some(answer) =
            gate_chain::ask(&ctx.scope, request, level, &ctx.cancel, &ctx.events).await
        else {
            return Err("the turn was cancelled".into());
        };
        ctx.events.emit(Event::Answer {
            call_id: event.call_id.clone(),
            name: event.name.clone(),
            answer: answer.clone(),
            agent: Vec::new(),
        });
        match answer {
            Answer::Approve => {}
            Answer::Deny(message) => {
                return Ok(Some(message.unwrap_or_else(|| DEFAULT_DENIAL.to_string())))
            }
            Answer::Result(_) => {
                return Ok(Some(
                    "sampling can be approved or denied, not answered with a result".into(),
                ))
            }
            Answer::Suspend => return Ok(Some(SUSPEND_UNAVAILABLE.to_string())),
        }
    }
    Ok(None)
}

/// The parts of MCP's request the client's model is given: text messages (an image or audio
/// message is refused: the request is answered whole or not at all), the system prompt, the
/// temperature and stop sequences.
fn read_request(params: &Value) -> Result<SampleRequest, String> {
    let Some(list) = params.get("messages").and_then(Value::as_array) else {
        return Err("sampling/createMessage needs \"messages\"".into());
    };
    let mut messages = Vec::with_capacity(list.len());
    for m in list {
        let text = message_text(m.get("content"))?;
        match m.get("role").and_then(Value::as_str) {
            Some("user") => messages.push(Message::user(text)),
            Some("assistant") => messages.push(Message::assistant(text, Vec::new())),
            other => {
                return Err(format!(
                    "sampling message role {other:?} is not user or assistant"
                ))
            }
        }
    }
    if messages.is_empty() {
        return Err("sampling/createMessage has no messages".into());
    }
    let stop = params
        .get("stopSequences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect::<Vec<_>>()
        });
    Ok(SampleRequest {
        system: params
            .get("systemPrompt")
            .and_then(Value::as_str)
            .map(str::to_string),
        messages,
        temperature: params.get("temperature").and_then(Value::as_f64),
        stop: stop.filter(|s| !s.is_empty()),
    })
}

/// The text of one message's content (one block or a list of blocks, all text).
fn message_text(content: Option<&Value>) -> Result<String, String> {
    let blocks: Vec<&Value> = match content {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(block @ Value::Object(_)) => vec![block],
        _ => return Err("a sampling message has no content".into()),
    };
    let mut text = String::new();
    for block in blocks {
        match (block.get("type").and_then(Value::as_str), block.get("text")) {
            (Some("text"), Some(Value::String(t))) => text.push_str(t),
            (kind, _) => {
                return Err(format!(
                    "sampling content of type {} is not supported (text only)",
                    kind.unwrap_or("?")
                ))
            }
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_text_and_refuse_the_rest() {
        let r = read_request(&json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}},
                         {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}],
            "systemPrompt": "be brief", "maxTokens": 10, "temperature": 0.5,
            "stopSequences": ["END"]
        }))
        .unwrap();
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.system.as_deref(), Some("be brief"));
        assert_eq!(r.temperature, Some(0.5));
        assert_eq!(r.stop, Some(vec!["END".to_string()]));
        let image = read_request(&json!({"messages": [{"role": "user",
            "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}]}));
        assert!(image.unwrap_err().contains("image"));
        assert!(read_request(&json!({"messages": []})).is_err());
        assert!(read_request(&json!({})).is_err());
    }
}
