//! The openai request body, written straight to bytes from the engine's messages and tool specs
//! ([`super::json_writer`]): no `serde_json::Value` tree is built, and the body's constant keys
//! and punctuation are written as the bytes they are rather than serialized one by one.
//!
//! Keys are written in sorted order: the bytes of a text-only conversation are those of the
//! earlier `Value` rendering (see [`super::wire_json`]; the test against it is in `openai.rs`).
//! Images go as `image_url` data URLs; the chat API holds no image in a tool message, so a tool
//! result's images follow the step's tool messages in one user message. Reasoning goes back
//! under the field it arrived in, on assistant messages that carried tool calls.

use super::images::{wire_image, WireImage};
use super::json_writer::JsonBytes;
use super::settings_body;
use super::wire_json::{args_text, wire_name, ERROR_PREFIX};
use super::{ModelRequest, RequestBody};
use crate::output::{Dialect, OutputSchema};
use crate::tool::ToolSpec;
use crate::transcript::{join_text, Image, Message, Part, ToolCall};

/// The reasoning fields an openai-style server sends (and takes back) on a message.
pub(crate) const REASONING_FIELDS: [&str; 2] = ["reasoning_content", "reasoning"];

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
    // Images of the tool results since the last message that was not one.
    let mut tool_images: Vec<(&str, &Image)> = Vec::new();
    for (i, m) in req.messages.iter().enumerate() {
        if !first {
            out.raw(",");
        }
        first = false;
        message(&mut out, m, req);
        if let Message::Tool { call_id, .. } = m {
            tool_images.extend(m.images().map(|img| (call_id.as_str(), img)));
            let step_ends = !matches!(req.messages.get(i + 1), Some(Message::Tool { .. }));
            if step_ends && !tool_images.is_empty() {
                out.raw(",");
                images_of_results(&mut out, &tool_images, req);
                tool_images.clear();
            }
        }
    }
    out.raw(r#"],"model":"#);
    out.string(model);
    let has_tools = !req.tools.is_empty();
    settings_body::openai_before_stream(&mut out, req.settings, has_tools);
    if let Some(output) = req.output {
        response_format(&mut out, output);
    }
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

/// `response_format: {type: json_schema, json_schema: {name, schema, strict}}`: the strict form
/// of the schema with `strict: true` where it has one, else the host's schema, not strict.
fn response_format(out: &mut JsonBytes, output: &OutputSchema) {
    let (schema, strict) = match output.strict_form(Dialect::Openai) {
        Some(strict) => (strict, true),
        None => (output.schema(), false),
    };
    out.raw(r#","response_format":{"json_schema":{"name":"#);
    out.string(output.name());
    out.raw(r#","schema":"#);
    out.value(schema);
    out.raw(r#","strict":"#);
    out.value(&strict);
    out.raw(r#"},"type":"json_schema"}"#);
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
fn message(out: &mut JsonBytes, m: &Message, req: &ModelRequest<'_>) {
    match m {
        Message::User { content } if content.iter().any(|p| matches!(p, Part::Image(_))) => {
            out.raw(r#"{"content":["#);
            let mut first = true;
            for p in content {
                match p {
                    Part::Text { text } => {
                        comma(out, &mut first);
                        text_part(out, text);
                    }
                    Part::Image(img) => {
                        comma(out, &mut first);
                        image_part(out, img, req);
                    }
                    // A user message holds only text and images (`Transcript::validate`).
                    Part::Reasoning(_) | Part::ToolCall(_) | Part::Provider(_) => {}
                }
            }
            out.raw(r#"],"role":"user"}"#);
        }
        Message::User { content } => text(out, &join_text(content), "user"),
        Message::Assistant { content } if !m.has_tool_calls() => {
            text(out, &join_text(content), "assistant")
        }
        // An assistant message with calls; empty text is `null`; reasoning under its field.
        Message::Assistant { content } => {
            out.raw(r#"{"content":"#);
            let joined = join_text(content);
            if joined.is_empty() {
                out.raw("null");
            } else {
                out.string(&joined);
            }
            for field in REASONING_FIELDS {
                let mut reasoning = m
                    .reasoning()
                    .filter(|r| r.field.as_deref() == Some(field))
                    .peekable();
                if reasoning.peek().is_some() {
                    out.raw(",");
                    out.string(field);
                    out.raw(r#":""#);
                    reasoning.for_each(|r| out.contents(&r.text));
                    out.raw(r#"""#);
                }
            }
            out.raw(r#","role":"assistant","tool_calls":["#);
            for (i, c) in m.tool_calls().enumerate() {
                if i > 0 {
                    out.raw(",");
                }
                call(out, c);
            }
            out.raw("]}");
        }
        // A tool result; an error's text is prefixed with `ERROR_PREFIX`. Its images follow the
        // step's results (see `render`); a note here says so.
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
            out.contents(&join_text(content));
            match m.images().count() {
                0 => {}
                1 => out.raw(" [the image follows in the next user message]"),
                _ => out.raw(" [the images follow in the next user message]"),
            }
            out.raw(r#"","role":"tool","tool_call_id":"#);
            out.string(call_id);
            out.raw("}");
        }
    }
}

fn comma(out: &mut JsonBytes, first: &mut bool) {
    if !*first {
        out.raw(",");
    }
    *first = false;
}

/// `{"text", "type": "text"}`.
fn text_part(out: &mut JsonBytes, text: &str) {
    out.raw(r#"{"text":"#);
    out.string(text);
    out.raw(r#","type":"text"}"#);
}

/// `{"image_url": {"url": "data:<type>;base64,<data>"}, "type": "image_url"}`, or a text part
/// saying why the image was not sent.
fn image_part(out: &mut JsonBytes, image: &Image, req: &ModelRequest<'_>) {
    match wire_image(image, req) {
        WireImage::Data { media_type, data } => {
            out.raw(r#"{"image_url":{"url":"data:"#);
            out.contents(media_type);
            out.raw(";base64,");
            out.contents(data);
            out.raw(r#""},"type":"image_url"}"#);
        }
        WireImage::Note(note) => text_part(out, &note),
    }
}

/// The user message that carries the images of a step's tool results, each after a line that
/// names its call.
fn images_of_results(out: &mut JsonBytes, images: &[(&str, &Image)], req: &ModelRequest<'_>) {
    out.raw(r#"{"content":["#);
    let mut first = true;
    let mut last_call = None;
    for (call_id, image) in images {
        if last_call != Some(*call_id) {
            comma(out, &mut first);
            text_part(
                out,
                &format!("Images from the result of tool call {call_id}:"),
            );
            last_call = Some(*call_id);
        }
        comma(out, &mut first);
        image_part(out, image, req);
    }
    out.raw(r#"],"role":"user"}"#);
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
