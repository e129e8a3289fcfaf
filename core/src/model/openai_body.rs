//! The openai request body, written straight to bytes from the engine's messages and tool specs
//! ([`super::json_writer`]): no `serde_json::Value` tree is built, and the body's constant keys
//! and punctuation are written as the bytes they are rather than serialized one by one.
//!
//! Keys are written in sorted order: the bytes are those of the earlier `Value` rendering (see
//! [`super::wire_json`]; the test against it is in `openai.rs`).

use super::json_writer::JsonBytes;
use super::settings_body;
use super::wire_json::{args_text, wire_name, ERROR_PREFIX};
use super::{ModelRequest, RequestBody};
use crate::tool::ToolSpec;
use crate::transcript::{Message, ToolCall};

/// The request body's bytes.
pub(crate) fn render(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> RequestBody {
    let mut out = JsonBytes::new();
    out.raw(r#"{"max_completion_tokens":"#);
    out.value(&max_tokens);
    out.raw(r#","messages":["#);
    // The system prompt (when there is one) and then every message.
    let mut first = true;
    if let Some(content) = req.system {
        text(&mut out, content, "system");
        first = false;
    }
    for m in req.messages {
        if !first {
            out.raw(",");
        }
        first = false;
        message(&mut out, m);
    }
    out.raw(r#"],"model":"#);
    out.string(model);
    let has_tools = !req.tools.is_empty();
    settings_body::openai_before_stream(&mut out, req.settings, has_tools);
    out.raw(r#","stream":true,"stream_options":{"include_usage":true}"#);
    settings_body::openai_before_tools(&mut out, req.settings, has_tools);
    if has_tools {
        out.raw(r#","tools":["#);
        for (i, t) in req.tools.iter().enumerate() {
            if i > 0 {
                out.raw(",");
            }
            tool(&mut out, t);
        }
        out.raw("]");
    }
    settings_body::openai_after_tools(&mut out, req.settings);
    out.raw("}");
    settings_body::with_extra_body(out.into_body(), req.settings)
}

/// `{"content", "role"}`: system, user, and an assistant message without calls.
fn text(out: &mut JsonBytes, content: &str, role: &str) {
    out.raw(r#"{"content":"#);
    out.string(content);
    out.raw(r#","role":"#);
    out.string(role);
    out.raw("}");
}

/// One message as the wire shows it.
fn message(out: &mut JsonBytes, m: &Message) {
    match m {
        Message::User { content } => text(out, content, "user"),
        Message::Assistant {
            content,
            tool_calls,
        } if tool_calls.is_empty() => text(out, content, "assistant"),
        // An assistant message with calls; empty text is `null`.
        Message::Assistant {
            content,
            tool_calls,
        } => {
            out.raw(r#"{"content":"#);
            if content.is_empty() {
                out.raw("null");
            } else {
                out.string(content);
            }
            out.raw(r#","role":"assistant","tool_calls":["#);
            for (i, c) in tool_calls.iter().enumerate() {
                if i > 0 {
                    out.raw(",");
                }
                call(out, c);
            }
            out.raw("]}");
        }
        // A tool result; an error's text is prefixed with `ERROR_PREFIX`.
        Message::Tool {
            call_id,
            content,
            is_error,
            ..
        } => {
            out.raw(r#"{"content":""#);
            if *is_error {
                out.raw(ERROR_PREFIX);
            }
            out.contents(content);
            out.raw(r#"","role":"tool","tool_call_id":"#);
            out.string(call_id);
            out.raw("}");
        }
    }
}

/// `{"function": {"arguments", "name"}, "id", "type": "function"}`.
fn call(out: &mut JsonBytes, c: &ToolCall) {
    out.raw(r#"{"function":{"arguments":"#);
    out.string(&args_text(c));
    out.raw(r#","name":"#);
    out.string(wire_name(c));
    out.raw(r#"},"id":"#);
    out.string(&c.id);
    out.raw(r#","type":"function"}"#);
}

/// `{"function": {"description", "name", "parameters"}, "type": "function"}`, as
/// [`super::wire_json::FunctionTool`] declares a tool for ollama.
fn tool(out: &mut JsonBytes, t: &ToolSpec) {
    out.raw(r#"{"function":{"description":"#);
    out.string(&t.description);
    out.raw(r#","name":"#);
    out.string(&t.name);
    out.raw(r#","parameters":"#);
    out.value(&t.input_schema);
    out.raw(r#"},"type":"function"}"#);
}
