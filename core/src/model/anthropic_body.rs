//! The anthropic request body, serialized straight to bytes from the engine's messages and tool
//! specs through borrowing `Serialize` structs (no `serde_json::Value` tree). Adjacent messages
//! of one role are merged, as the API requires alternation: tool results travel as
//! `tool_result` blocks in a user message.
//!
//! Fields are declared in sorted order: the bytes are those of the earlier `Value` rendering
//! (see [`super::wire_json`]).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::images::{wire_image, WireImage};
use super::wire_json::{to_body, wire_name, ArgsObject, Tools};
use super::{ModelRequest, RequestBody};
use crate::tool::ToolSpec;
use crate::transcript::{join_text, Message, Part, Reasoning};

/// The request body's bytes.
pub(crate) fn render(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> RequestBody {
    to_body(&Body {
        max_tokens,
        messages: merged(req),
        model,
        stream: true,
        system: req.system,
        tools: Tools(req.tools, Tool::of),
    })
}

#[derive(Serialize)]
struct Body<'a> {
    max_tokens: u32,
    messages: Vec<WireMessage<'a>>,
    model: &'a str,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    #[serde(skip_serializing_if = "Tools::is_empty")]
    tools: Tools<'a, Tool<'a>>,
}

/// One wire message: the blocks of adjacent engine messages of its role.
#[derive(Serialize)]
struct WireMessage<'a> {
    content: Vec<Block<'a>>,
    role: &'static str,
}

/// One content block. Every block the body sends is rendered here, so what a block carries
/// beside its content (a cache breakpoint) is one field in one place.
#[derive(Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        r#type: &'static str,
    },
    Image {
        source: ImageSource<'a>,
        r#type: &'static str,
    },
    /// A `thinking` block sent back as it came: its text and its signature.
    Thinking {
        signature: &'a str,
        thinking: &'a str,
        r#type: &'static str,
    },
    /// A `redacted_thinking` block sent back as it came.
    RedactedThinking { data: &'a str, r#type: &'static str },
    ToolUse {
        id: &'a str,
        input: ArgsObject<'a>,
        name: &'a str,
        r#type: &'static str,
    },
    ToolResult {
        content: ResultContent<'a>,
        is_error: bool,
        tool_use_id: &'a str,
        r#type: &'static str,
    },
    /// A block of the API's own kind the engine kept without interpreting it (a server tool's
    /// use and result), sent back as it came.
    Provider(&'a Value),
}

/// `{"data", "media_type", "type": "base64"}`.
#[derive(Serialize)]
struct ImageSource<'a> {
    data: &'a str,
    media_type: &'a str,
    r#type: &'static str,
}

/// A tool result's content: its text as a string, or text and image blocks when it has images.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

/// The messages as blocks (borrowed), adjacent ones of a role merged into one message.
fn merged<'a>(req: &ModelRequest<'a>) -> Vec<WireMessage<'a>> {
    let messages = req.messages;
    let mut out: Vec<WireMessage<'a>> = Vec::with_capacity(messages.len());
    let mut push = |role: &'static str, block: Block<'a>| match out.last_mut() {
        Some(m) if m.role == role => m.content.push(block),
        _ => out.push(WireMessage {
            content: vec![block],
            role,
        }),
    };
    for m in messages {
        match m {
            Message::User { content } => {
                for p in content {
                    if let Some(block) = user_block(p, req) {
                        push("user", block);
                    }
                }
            }
            Message::Assistant { content } => {
                for p in content {
                    let block = match p {
                        Part::Text { text } => text_block(text),
                        Part::Reasoning(r) => thinking_block(r),
                        Part::ToolCall(c) => Some(Block::ToolUse {
                            id: &c.id,
                            input: ArgsObject(c),
                            name: wire_name(c),
                            r#type: "tool_use",
                        }),
                        Part::Provider(b) if b.style == "anthropic" => {
                            Some(Block::Provider(&b.block))
                        }
                        // Another style's block means nothing here; an assistant message holds
                        // no image (`Transcript::validate`).
                        Part::Provider(_) | Part::Image(_) => None,
                    };
                    if let Some(block) = block {
                        push("assistant", block);
                    }
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => {
                let content = if m.images().next().is_none() {
                    ResultContent::Text(join_text(content))
                } else {
                    ResultContent::Blocks(
                        content.iter().filter_map(|p| user_block(p, req)).collect(),
                    )
                };
                push(
                    "user",
                    Block::ToolResult {
                        content,
                        is_error: *is_error,
                        tool_use_id: call_id,
                        r#type: "tool_result",
                    },
                )
            }
        }
    }
    out
}

/// A text or image block of a user message or a tool result.
fn user_block<'a>(p: &'a Part, req: &ModelRequest<'a>) -> Option<Block<'a>> {
    match p {
        Part::Text { text } => text_block(text),
        Part::Image(image) => Some(match wire_image(image, req) {
            WireImage::Data { media_type, data } => Block::Image {
                source: ImageSource {
                    data,
                    media_type,
                    r#type: "base64",
                },
                r#type: "image",
            },
            WireImage::Note(note) => Block::Text {
                text: Cow::Owned(note),
                r#type: "text",
            },
        }),
        // Only assistant messages hold these (`Transcript::validate`).
        Part::Reasoning(_) | Part::ToolCall(_) | Part::Provider(_) => None,
    }
}

/// Reasoning as the API takes it back: a signed `thinking` block, or a `redacted_thinking`
/// block; none for reasoning another kind of server sent (it has neither), which the API
/// would refuse.
fn thinking_block(r: &Reasoning) -> Option<Block<'_>> {
    match (&r.redacted, &r.signature) {
        (Some(data), _) => Some(Block::RedactedThinking {
            data,
            r#type: "redacted_thinking",
        }),
        (None, Some(signature)) => Some(Block::Thinking {
            signature,
            thinking: &r.text,
            r#type: "thinking",
        }),
        (None, None) => None,
    }
}

/// A text block; none for text without non-whitespace. The API refuses such blocks (HTTP 400,
/// not retried), so a reply that had neither text nor calls, once in the conversation, would fail
/// every later request: they are left out, and a message left with no block is left out whole
/// (the user messages around it merge).
fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.trim().is_empty()).then_some(Block::Text {
        text: Cow::Borrowed(text),
        r#type: "text",
    })
}

/// A tool as anthropic declares it: `{"description", "input_schema", "name"}`.
#[derive(Serialize)]
struct Tool<'a> {
    description: &'a str,
    input_schema: &'a Value,
    name: &'a str,
}

impl<'a> Tool<'a> {
    fn of(t: &'a ToolSpec) -> Self {
        Tool {
            description: &t.description,
            input_schema: &t.input_schema,
            name: &t.name,
        }
    }
}
