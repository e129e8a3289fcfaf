//! OpenAI Chat Completions: `POST /v1/chat/completions` (SSE when `stream` is true) and
//! `GET /v1/models`.

use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::wire::{split_fragments, split_words, sse_data};
use super::{Ctx, Reply};
use crate::scenario::{ReasoningSpec, ToolCall, Usage};

/// Argument strings are streamed in this many fragments (fewer when shorter).
const ARG_FRAGMENTS: usize = 3;

pub async fn models() -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{"id": "fake", "object": "model", "created": 0, "owned_by": "contenox"}]
    }))
}

fn call_id(ctx: &Ctx, i: usize, call: &ToolCall) -> String {
    call.id
        .clone()
        .unwrap_or_else(|| format!("call_fake_{}_{i}", ctx.n))
}

fn usage_json(u: Usage) -> Value {
    let mut usage = json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
    });
    // As the real API: the cached part of the prompt, within `prompt_tokens`.
    if u.cache_read_input_tokens > 0 {
        usage["prompt_tokens_details"] = json!({"cached_tokens": u.cache_read_input_tokens});
    }
    usage
}

/// Whether the reasoning is Mistral's: `thinking` parts of a `content` list (then the text is
/// sent as `text` parts too, as Mistral's reasoning models do).
fn as_parts(reasoning: &[ReasoningSpec]) -> bool {
    reasoning.iter().any(|r| r.openai_field() == "thinking")
}

pub fn render(
    ctx: &Ctx,
    text: Option<&str>,
    calls: &[ToolCall],
    reasoning: &[ReasoningSpec],
    stop_reason: Option<&str>,
    usage: Usage,
) -> Reply {
    let parts = as_parts(reasoning);
    // `refusal`: the text is the model's refusal message, sent in its own field.
    let refusal = stop_reason == Some("refusal");
    let stream = ctx.request.get("stream").and_then(Value::as_bool) == Some(true);
    let finish = match stop_reason {
        Some(s) if s != "refusal" => s,
        _ if calls.is_empty() => "stop",
        _ => "tool_calls",
    };
    let id = format!("chatcmpl-fake-{}", ctx.n);
    let text = text.unwrap_or("");
    if !stream {
        let mut message = json!({
            "role": "assistant",
            "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { Value::from(text) },
            "refusal": null,
        });
        if refusal {
            message["content"] = Value::Null;
            message["refusal"] = Value::from(text);
        }
        if parts {
            let mut content: Vec<Value> = reasoning
                .iter()
                .map(
                    |r| json!({"type": "thinking", "thinking": [{"type": "text", "text": r.text}]}),
                )
                .collect();
            if !text.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            message["content"] = Value::from(content);
        } else {
            for r in reasoning {
                let field = r.openai_field();
                let joined = message[field].as_str().unwrap_or("").to_string() + &r.text;
                message[field] = Value::from(joined);
            }
        }
        if !calls.is_empty() {
            message["tool_calls"] = calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    json!({
                        "id": call_id(ctx, i, c),
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments.to_wire_string()},
                    })
                })
                .collect();
        }
        let body = json!({
            "id": id,
            "object": "chat.completion",
            "created": 0,
            "model": ctx.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
            "usage": usage_json(usage),
        });
        // The whole answer comes once the reply is complete: after its calls' pauses.
        let held = calls.iter().filter_map(|c| c.pause_after_ms).sum();
        return Reply {
            pauses: vec![(0, held)],
            ..Reply::json(StatusCode::OK, &body)
        };
    }

    let include_usage = ctx
        .request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true);
    let chunk = |delta: Value, finish_reason: Value| {
        let mut c = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        if include_usage {
            c["usage"] = Value::Null;
        }
        sse_data(&c)
    };
    let mut chunks = Vec::new();
    let mut pauses = Vec::new();
    let first_content = if text.is_empty() {
        Value::Null
    } else {
        Value::from("")
    };
    chunks.push(chunk(
        json!({"role": "assistant", "content": first_content}),
        Value::Null,
    ));
    for r in reasoning {
        for piece in split_words(&r.text) {
            let delta = if parts {
                json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": piece}]}]})
            } else {
                json!({ r.openai_field(): piece })
            };
            chunks.push(chunk(delta, Value::Null));
        }
    }
    for piece in split_words(text) {
        let delta = if refusal {
            json!({ "refusal": piece })
        } else if parts {
            json!({"content": [{"type": "text", "text": piece}]})
        } else {
            json!({ "content": piece })
        };
        chunks.push(chunk(delta, Value::Null));
    }
    for (i, call) in calls.iter().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{
                "index": i,
                "id": call_id(ctx, i, call),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            Value::Null,
        ));
        // The call before this one is complete now that this one began.
        if let Some(ms) = i.checked_sub(1).and_then(|p| calls[p].pause_after_ms) {
            pauses.push((chunks.len(), ms));
        }
        let args = call.arguments.to_wire_string();
        for fragment in split_fragments(&args, ARG_FRAGMENTS) {
            chunks.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": fragment}}]}),
                Value::Null,
            ));
        }
    }
    if let Some(ms) = calls.last().and_then(|c| c.pause_after_ms) {
        pauses.push((chunks.len(), ms));
    }
    chunks.push(chunk(json!({}), Value::from(finish)));
    if include_usage {
        chunks.push(sse_data(&json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": ctx.model,
            "choices": [],
            "usage": usage_json(usage),
        })));
    }
    chunks.push("data: [DONE]\n\n".into());
    Reply {
        status: StatusCode::OK,
        content_type: "text/event-stream; charset=utf-8",
        headers: Vec::new(),
        chunks,
        streaming: true,
        pauses,
    }
}
