//! Anthropic Messages: `POST /v1/messages` (SSE with named events when `stream` is true) and
//! `GET /v1/models`.

use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::wire::{split_fragments, split_words, sse_event};
use super::{Ctx, Reply};
use crate::scenario::{ReasoningSpec, ToolCall, Usage};

/// `partial_json` is streamed in this many fragments (fewer when shorter).
const ARG_FRAGMENTS: usize = 3;

pub async fn models() -> Json<Value> {
    Json(json!({
        "data": [{"type": "model", "id": "fake", "display_name": "Fake",
                  "created_at": "2025-01-01T00:00:00Z"}],
        "has_more": false,
        "first_id": "fake",
        "last_id": "fake",
    }))
}

/// What the real Messages API refuses with HTTP 400 `invalid_request_error` before answering:
/// a message without content blocks, a text block without non-whitespace text, more than four
/// `cache_control` breakpoints, and extended thinking beside what it does not go with. Returns
/// the API's message.
pub fn refusal(request: &Value) -> Option<String> {
    let breakpoints = super::prompt_cache::breakpoints(request);
    if breakpoints > 4 {
        return Some(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    if let Some(why) = thinking_refusal(request) {
        return Some(why);
    }
    if let Some(why) = thinking_blocks_refusal(request) {
        return Some(why);
    }
    let messages = request.get("messages")?.as_array()?;
    for (i, m) in messages.iter().enumerate() {
        match &m["content"] {
            Value::String(s) if s.trim().is_empty() => {
                return Some(format!(
                    "messages.{i}: all messages must have non-empty content except for the \
                     optional final assistant message"
                ))
            }
            Value::Array(blocks) if blocks.is_empty() => {
                return Some(format!(
                    "messages.{i}: all messages must have non-empty content except for the \
                     optional final assistant message"
                ))
            }
            Value::Array(blocks) => {
                for (j, b) in blocks.iter().enumerate() {
                    let empty = b["type"] == "text"
                        && b["text"].as_str().is_none_or(|t| t.trim().is_empty());
                    if empty {
                        return Some(format!(
                            "messages.{i}.content.{j}.text: text content blocks must contain \
                             non-whitespace text"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// Extended thinking's rules: a budget of at least 1024 tokens below `max_tokens`, temperature
/// only 1, no `top_k`, `top_p` from 0.95, no forced tool use.
fn thinking_refusal(request: &Value) -> Option<String> {
    let thinking = request.get("thinking")?;
    if thinking.get("type").and_then(Value::as_str) != Some("enabled") {
        return None;
    }
    let budget = thinking.get("budget_tokens").and_then(Value::as_u64)?;
    let max_tokens = request
        .get("max_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if budget < 1024 {
        return Some(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024".into(),
        );
    }
    if max_tokens <= budget {
        return Some("`max_tokens` must be greater than `thinking.budget_tokens`".into());
    }
    if request
        .get("temperature")
        .and_then(Value::as_f64)
        .is_some_and(|t| t != 1.0)
    {
        return Some(
            "`temperature` may only be set to 1 when thinking is enabled or in a thinking \
             block"
                .into(),
        );
    }
    if request.get("top_k").is_some() {
        return Some("`top_k` may not be set when thinking is enabled".into());
    }
    if request
        .get("top_p")
        .and_then(Value::as_f64)
        .is_some_and(|p| p < 0.95)
    {
        return Some("`top_p` must be at least 0.95 when thinking is enabled".into());
    }
    let forced = request
        .pointer("/tool_choice/type")
        .and_then(Value::as_str)
        .is_some_and(|t| t == "any" || t == "tool");
    forced.then(|| "Thinking may not be enabled when tool_choice forces tool use.".into())
}

/// The API's 400 body for a refused request.
pub fn refusal_reply(message: &str) -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
    )
}

fn call_id(ctx: &Ctx, i: usize, call: &ToolCall) -> String {
    call.id
        .clone()
        .unwrap_or_else(|| format!("toolu_fake_{}_{i}", ctx.n))
}

/// Anthropic's usage object: `input_tokens` counts only the prompt tokens neither read from
/// nor written to the cache; the real API always sends both cache fields.
fn usage_json(u: Usage, output_tokens: u64) -> Value {
    json!({
        "input_tokens": u.uncached_input(),
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": output_tokens,
    })
}

/// A reasoning part's signature: the script's, else one over its text ([`fake_signature`]),
/// which the fake checks when the block comes back.
fn signature(r: &ReasoningSpec) -> String {
    r.signature
        .clone()
        .unwrap_or_else(|| fake_signature(&r.text))
}

/// The fake's signature over a thinking text: `sigfake` and the text's FNV-1a hash, so a
/// thinking block sent back with its text changed is refused, as the real API refuses it.
pub fn fake_signature(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("sigfake{hash:016x}")
}

/// What the real API refuses about thinking blocks sent back: a signature that does not fit
/// its text (checked for the fake's own signatures), and, with thinking enabled, a last
/// assistant message with tool use that does not start with its thinking block.
fn thinking_blocks_refusal(request: &Value) -> Option<String> {
    let messages = request.get("messages")?.as_array()?;
    for (i, m) in messages.iter().enumerate() {
        for (j, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            if b["type"] != "thinking" {
                continue;
            }
            let sig = b["signature"].as_str().unwrap_or("");
            let text = b["thinking"].as_str().unwrap_or("");
            if sig.is_empty() || (sig.starts_with("sigfake") && sig != fake_signature(text)) {
                return Some(format!(
                    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                ));
            }
        }
    }
    let enabled = request.pointer("/thinking/type").and_then(Value::as_str) == Some("enabled");
    let last = messages.iter().rposition(|m| m["role"] == "assistant")?;
    let blocks = messages[last]["content"].as_array()?;
    let uses_tools = blocks.iter().any(|b| b["type"] == "tool_use");
    let first = blocks
        .first()
        .and_then(|b| b["type"].as_str())
        .unwrap_or("");
    if enabled && uses_tools && first != "thinking" && first != "redacted_thinking" {
        return Some(format!(
            "messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but \
             found `{first}`. When `thinking` is enabled, a final `assistant` message must \
             start with a thinking block (preceeding the lastmost set of `tool_use` and \
             `tool_result` blocks)."
        ));
    }
    None
}

pub fn render(
    ctx: &Ctx,
    text: Option<&str>,
    calls: &[ToolCall],
    reasoning: &[ReasoningSpec],
    stop_reason: Option<&str>,
    usage: Usage,
) -> Reply {
    let stream = ctx.request.get("stream").and_then(Value::as_bool) == Some(true);
    let stop_reason = match stop_reason {
        Some(s) => s,
        None if calls.is_empty() => "end_turn",
        None => "tool_use",
    };
    let id = format!("msg_fake_{}", ctx.n);
    let text = text.unwrap_or("");
    if !stream {
        let mut content = Vec::new();
        for r in reasoning {
            content.push(match &r.redacted {
                Some(data) => json!({"type": "redacted_thinking", "data": data}),
                None => json!({"type": "thinking", "thinking": r.text,
                               "signature": signature(r)}),
            });
        }
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for (i, call) in calls.iter().enumerate() {
            content.push(json!({
                "type": "tool_use",
                "id": call_id(ctx, i, call),
                "name": call.name,
                "input": call.arguments.to_wire_value(),
            }));
        }
        let body = json!({
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": null,
            "usage": usage_json(usage, usage.output_tokens),
        });
        // The whole answer comes once the reply is complete: after its calls' pauses.
        let held = calls.iter().filter_map(|c| c.pause_after_ms).sum();
        return Reply {
            pauses: vec![(0, held)],
            ..Reply::json(StatusCode::OK, &body)
        };
    }

    let mut pauses = Vec::new();
    let mut chunks = vec![
        sse_event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": ctx.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": usage_json(usage, 0),
            }}),
        ),
        sse_event("ping", &json!({"type": "ping"})),
    ];
    let mut index = 0;
    for r in reasoning {
        if let Some(data) = &r.redacted {
            chunks.push(sse_event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "redacted_thinking", "data": data}}),
            ));
        } else {
            chunks.push(sse_event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            ));
            for piece in split_words(&r.text) {
                chunks.push(sse_event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index,
                            "delta": {"type": "thinking_delta", "thinking": piece}}),
                ));
            }
            chunks.push(sse_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "signature_delta", "signature": signature(r)}}),
            ));
        }
        chunks.push(sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if !text.is_empty() {
        chunks.push(sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
        ));
        for piece in split_words(text) {
            chunks.push(sse_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}}),
            ));
        }
        chunks.push(sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (i, call) in calls.iter().enumerate() {
        chunks.push(sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": call_id(ctx, i, call),
                                      "name": call.name, "input": {}}}),
        ));
        let args = call.arguments.to_wire_string();
        for fragment in split_fragments(&args, ARG_FRAGMENTS) {
            chunks.push(sse_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": fragment}}),
            ));
        }
        chunks.push(sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        if let Some(ms) = call.pause_after_ms {
            pauses.push((chunks.len(), ms));
        }
        index += 1;
    }
    chunks.push(sse_event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": usage.output_tokens}}),
    ));
    chunks.push(sse_event("message_stop", &json!({"type": "message_stop"})));
    Reply {
        status: StatusCode::OK,
        content_type: "text/event-stream; charset=utf-8",
        headers: Vec::new(),
        chunks,
        streaming: true,
        pauses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_the_real_api_refuses() {
        let ok = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                                      {"role": "assistant", "content": "fine"}]});
        assert_eq!(refusal(&ok), None);
        let empty_block = json!({"messages": [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": " "}]}]});
        assert!(refusal(&empty_block)
            .unwrap()
            .contains("messages.1.content.0.text"));
        let no_blocks = json!({"messages": [{"role": "user", "content": []}]});
        assert!(refusal(&no_blocks).unwrap().contains("non-empty content"));
        let cc = json!({"type": "ephemeral"});
        let text = json!({"type": "text", "text": "x", "cache_control": cc});
        let five = json!({"system": [text, text], "messages": [{"role": "user",
            "content": [text, text, text]}]});
        assert_eq!(
            refusal(&five).unwrap(),
            "A maximum of 4 blocks with cache_control may be provided. Found 5."
        );
        let thinking = |extra: Value| {
            let mut r = json!({"max_tokens": 4096, "messages": [{"role": "user", "content": "hi"}],
                "thinking": {"type": "enabled", "budget_tokens": 2048}});
            r.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            refusal(&r)
        };
        assert_eq!(thinking(json!({})), None);
        assert_eq!(thinking(json!({"temperature": 1, "top_p": 0.95})), None);
        for bad in [
            json!({"max_tokens": 2048}),
            json!({"thinking": {"type": "enabled", "budget_tokens": 1000}}),
            json!({"temperature": 0.5}),
            json!({"top_k": 5}),
            json!({"top_p": 0.5}),
            json!({"tool_choice": {"type": "any"}}),
        ] {
            assert!(thinking(bad.clone()).is_some(), "{bad}");
        }
    }
}
