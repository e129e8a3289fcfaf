//! Ollama: `POST /api/chat` (NDJSON unless `stream` is false) and `GET /api/tags`. Tool calls
//! carry no ids, as on the real server.

use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::wire::{ndjson_line, split_words};
use super::{Ctx, Reply};
use crate::scenario::{ReasoningSpec, ToolCall, Usage};

const CREATED_AT: &str = "2025-01-01T00:00:00Z";

pub async fn tags() -> Json<Value> {
    Json(json!({
        "models": [{"name": "fake", "model": "fake", "modified_at": CREATED_AT,
                    "size": 1, "digest": "0", "details": {}}]
    }))
}

fn tool_calls_json(calls: &[ToolCall]) -> Value {
    calls
        .iter()
        .map(|c| json!({"function": {"name": c.name, "arguments": c.arguments.to_wire_value()}}))
        .collect()
}

fn final_object(ctx: &Ctx, message: Value, usage: Usage, done_reason: &str) -> Value {
    json!({
        "model": ctx.model,
        "created_at": CREATED_AT,
        "message": message,
        "done": true,
        "done_reason": done_reason,
        "total_duration": 1000,
        "load_duration": 100,
        "prompt_eval_count": usage.input_tokens,
        "prompt_eval_duration": 100,
        "eval_count": usage.output_tokens,
        "eval_duration": 100,
    })
}

pub fn render(
    ctx: &Ctx,
    text: Option<&str>,
    calls: &[ToolCall],
    reasoning: &[ReasoningSpec],
    stop_reason: Option<&str>,
    usage: Usage,
) -> Reply {
    let stream = ctx.request.get("stream").and_then(Value::as_bool) != Some(false);
    let text = text.unwrap_or("");
    let thinking: String = reasoning.iter().map(|r| r.text.as_str()).collect();
    if !stream {
        let mut message = json!({"role": "assistant", "content": text});
        if !thinking.is_empty() {
            message["thinking"] = Value::from(thinking);
        }
        if !calls.is_empty() {
            message["tool_calls"] = tool_calls_json(calls);
        }
        return Reply::json(
            StatusCode::OK,
            &final_object(ctx, message, usage, stop_reason.unwrap_or("stop")),
        );
    }
    let line = |message: Value| {
        ndjson_line(&json!({
            "model": ctx.model,
            "created_at": CREATED_AT,
            "message": message,
            "done": false,
        }))
    };
    let mut chunks = Vec::new();
    for piece in split_words(&thinking) {
        chunks.push(line(
            json!({"role": "assistant", "content": "", "thinking": piece}),
        ));
    }
    for piece in split_words(text) {
        chunks.push(line(json!({"role": "assistant", "content": piece})));
    }
    if !calls.is_empty() {
        chunks.push(line(
            json!({"role": "assistant", "content": "", "tool_calls": tool_calls_json(calls)}),
        ));
    }
    chunks.push(ndjson_line(&final_object(
        ctx,
        json!({"role": "assistant", "content": ""}),
        usage,
        stop_reason.unwrap_or("stop"),
    )));
    Reply {
        status: StatusCode::OK,
        content_type: "application/x-ndjson",
        headers: Vec::new(),
        chunks,
        streaming: true,
        pauses: Vec::new(),
    }
}
