//! OpenAI Responses: `POST /v1/responses`, streamed as the real API streams it (named SSE
//! events with a `sequence_number`, from `response.created` to `response.completed` or
//! `response.incomplete`), or the whole response object when `stream` is not true.
//!
//! A reasoning item carries its summary (the scripted text) and, when the request includes
//! `reasoning.encrypted_content`, an `encrypted_content` of the fake's own over that text: a
//! request that sends the item back with it changed, or without it while `store` is false, is
//! refused as the real API refuses it, and so is a `function_call_output` whose call is not in
//! the input.

use axum::body::Bytes;
use axum::http::StatusCode;
use serde_json::{json, Value};

use super::wire::{split_fragments, split_words};
use super::{Ctx, Reply};
use crate::scenario::{ReasoningSpec, ToolCall, Usage};

/// Argument strings are streamed in this many fragments (fewer when shorter).
const ARG_FRAGMENTS: usize = 3;

/// What the request asks to include for encrypted reasoning.
const ENCRYPTED: &str = "reasoning.encrypted_content";

/// The fake's encryption of a reasoning text: `encfake` and the text's FNV-1a hash (the same
/// hash as the anthropic fake's signatures), so a changed one is caught.
pub fn fake_encrypted(text: &str) -> String {
    let sig = super::anthropic::fake_signature(text);
    format!("encfake{}", sig.trim_start_matches("sigfake"))
}

/// Why the real API would refuse this request (HTTP 400), if it would.
pub fn refusal(request: &Value) -> Option<String> {
    let items = request.get("input")?.as_array()?;
    let store = request.get("store").and_then(Value::as_bool) != Some(false);
    let mut calls: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item["type"].as_str() {
            Some("reasoning") => {
                let id = item["id"].as_str().unwrap_or("");
                // A server that does not encrypt (LM Studio, vLLM) sends its reasoning as
                // `content`, which it reads back; the real API needs `encrypted_content`.
                let readable = item["content"].as_array().is_some_and(|c| !c.is_empty());
                match item["encrypted_content"].as_str() {
                    None if !store && !readable => {
                        return Some(format!(
                            "Item with id '{id}' not found. Items are not persisted when \
                             `store` is set to false. Try again with `store` set to true, or \
                             remove this item from your input."
                        ))
                    }
                    Some(enc)
                        if enc.starts_with("encfake") && enc != fake_encrypted(&summary(item)) =>
                    {
                        return Some(format!(
                            "input[{i}]: The encrypted content for item {id} could not be verified."
                        ))
                    }
                    _ => {}
                }
            }
            Some("function_call") => calls.push(item["call_id"].as_str().unwrap_or("")),
            Some("function_call_output") => {
                let id = item["call_id"].as_str().unwrap_or("");
                if !calls.contains(&id) {
                    return Some(format!(
                        "No tool call found for function call output with call_id {id}."
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

/// A reasoning item's summary texts, joined as the engine joins them.
fn summary(item: &Value) -> String {
    item["summary"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The 400 answer to a refused request, in the API's error shape.
pub fn refusal_reply(message: &str) -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &json!({"error": {"message": message, "type": "invalid_request_error", "param": null,
                          "code": null}}),
    )
}

fn call_id(ctx: &Ctx, i: usize, call: &ToolCall) -> String {
    call.id
        .clone()
        .unwrap_or_else(|| format!("call_fake_{}_{i}", ctx.n))
}

fn usage_json(u: Usage) -> Value {
    json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cache_read_input_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.input_tokens + u.output_tokens,
    })
}

/// The events of one streamed response, numbered as they are added.
struct Events {
    chunks: Vec<Bytes>,
    sequence: u64,
}

impl Events {
    fn push(&mut self, mut event: Value) {
        event["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        let kind = event["type"].as_str().unwrap_or("message").to_string();
        self.chunks
            .push(Bytes::from(format!("event: {kind}\ndata: {event}\n\n")));
    }
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
    let encrypted = ctx
        .request
        .get("include")
        .and_then(Value::as_array)
        .is_some_and(|list| list.iter().any(|v| v == ENCRYPTED));
    let refusal = stop_reason == Some("refusal");
    let text = text.unwrap_or("");
    let id = format!("resp_fake_{}", ctx.n);
    let response = |status: &str, output: Vec<Value>, usage: Value| {
        let mut r = json!({
            "id": id, "object": "response", "created_at": 0, "status": status,
            "error": null, "incomplete_details": null, "model": ctx.model, "output": output,
            "parallel_tool_calls": true, "store": ctx.request.get("store").cloned().unwrap_or(json!(true)),
            "tool_choice": "auto", "tools": [], "usage": usage,
        });
        if let Some(reason) = stop_reason.filter(|r| *r != "refusal") {
            r["incomplete_details"] = json!({"reason": reason});
        }
        r
    };

    // The items, complete.
    let mut items: Vec<Value> = Vec::new();
    for (i, r) in reasoning.iter().enumerate() {
        let mut item = json!({"id": format!("rs_fake_{}_{i}", ctx.n), "type": "reasoning",
                              "summary": [{"type": "summary_text", "text": r.text}]});
        if encrypted {
            item["encrypted_content"] = json!(fake_encrypted(&r.text));
        }
        items.push(item);
    }
    if !text.is_empty() {
        let part = if refusal {
            json!({"type": "refusal", "refusal": text})
        } else {
            json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
        };
        items.push(
            json!({"id": format!("msg_fake_{}", ctx.n), "type": "message",
                          "status": "completed", "role": "assistant", "content": [part]}),
        );
    }
    for (i, c) in calls.iter().enumerate() {
        items.push(
            json!({"id": format!("fc_fake_{}_{i}", ctx.n), "type": "function_call",
                          "status": "completed", "arguments": c.arguments.to_wire_string(),
                          "call_id": call_id(ctx, i, c), "name": c.name}),
        );
    }
    let status = if stop_reason.is_some_and(|r| r != "refusal") {
        "incomplete"
    } else {
        "completed"
    };
    if !stream {
        let body = response(status, items, usage_json(usage));
        let held = calls.iter().filter_map(|c| c.pause_after_ms).sum();
        return Reply {
            pauses: vec![(0, held)],
            ..Reply::json(StatusCode::OK, &body)
        };
    }

    let mut ev = Events {
        chunks: Vec::new(),
        sequence: 0,
    };
    let mut pauses = Vec::new();
    ev.push(json!({"type": "response.created", "response": response("in_progress", vec![], Value::Null)}));
    ev.push(json!({"type": "response.in_progress", "response": response("in_progress", vec![], Value::Null)}));
    let mut call_at = 0;
    for (index, item) in items.iter().enumerate() {
        let item_id = item["id"].clone();
        let at = json!(index);
        match item["type"].as_str() {
            Some("reasoning") => {
                let mut added = item.clone();
                added["summary"] = json!([]);
                added.as_object_mut().map(|o| o.remove("encrypted_content"));
                ev.push(json!({"type": "response.output_item.added", "output_index": at, "item": added}));
                let summary = item["summary"][0]["text"].as_str().unwrap_or("");
                ev.push(
                    json!({"type": "response.reasoning_summary_part.added", "item_id": item_id,
                               "output_index": at, "summary_index": 0,
                               "part": {"type": "summary_text", "text": ""}}),
                );
                for piece in split_words(summary) {
                    ev.push(
                        json!({"type": "response.reasoning_summary_text.delta", "item_id": item_id,
                                   "output_index": at, "summary_index": 0, "delta": piece}),
                    );
                }
                ev.push(
                    json!({"type": "response.reasoning_summary_text.done", "item_id": item_id,
                               "output_index": at, "summary_index": 0, "text": summary}),
                );
                ev.push(
                    json!({"type": "response.reasoning_summary_part.done", "item_id": item_id,
                               "output_index": at, "summary_index": 0,
                               "part": {"type": "summary_text", "text": summary}}),
                );
            }
            Some("message") => {
                let mut added = item.clone();
                added["content"] = json!([]);
                added["status"] = json!("in_progress");
                ev.push(json!({"type": "response.output_item.added", "output_index": at, "item": added}));
                let (empty, delta_kind, done_kind, field) = if refusal {
                    (
                        json!({"type": "refusal", "refusal": ""}),
                        "response.refusal.delta",
                        "response.refusal.done",
                        "refusal",
                    )
                } else {
                    (
                        json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []}),
                        "response.output_text.delta",
                        "response.output_text.done",
                        "text",
                    )
                };
                ev.push(
                    json!({"type": "response.content_part.added", "item_id": item_id,
                               "output_index": at, "content_index": 0, "part": empty}),
                );
                for piece in split_words(text) {
                    let mut delta = json!({"type": delta_kind, "item_id": item_id, "output_index": at,
                                           "content_index": 0, "delta": piece});
                    if !refusal {
                        delta["logprobs"] = json!([]);
                    }
                    ev.push(delta);
                }
                ev.push(
                    json!({"type": done_kind, "item_id": item_id, "output_index": at,
                               "content_index": 0, field: text}),
                );
                ev.push(
                    json!({"type": "response.content_part.done", "item_id": item_id,
                               "output_index": at, "content_index": 0, "part": item["content"][0]}),
                );
            }
            _ => {
                let mut added = item.clone();
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
                ev.push(json!({"type": "response.output_item.added", "output_index": at, "item": added}));
                let args = item["arguments"].as_str().unwrap_or("");
                for fragment in split_fragments(args, ARG_FRAGMENTS) {
                    ev.push(
                        json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                                   "output_index": at, "delta": fragment}),
                    );
                }
                ev.push(
                    json!({"type": "response.function_call_arguments.done", "item_id": item_id,
                               "output_index": at, "arguments": args}),
                );
            }
        }
        ev.push(json!({"type": "response.output_item.done", "output_index": at, "item": item}));
        if item["type"] == "function_call" {
            // The call is whole now: what follows waits as the scenario says.
            if let Some(ms) = calls[call_at].pause_after_ms {
                pauses.push((ev.chunks.len(), ms));
            }
            call_at += 1;
        }
    }
    let end = if status == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    ev.push(json!({"type": end, "response": response(status, items, usage_json(usage))}));
    Reply {
        status: StatusCode::OK,
        content_type: "text/event-stream; charset=utf-8",
        headers: Vec::new(),
        chunks: ev.chunks,
        streaming: true,
        pauses,
    }
}
