//! The anthropic request body, serialized straight to bytes from the engine's messages and tool
//! specs through borrowing `Serialize` structs (no `serde_json::Value` tree). Adjacent messages
//! of one role are merged, as the API requires alternation: tool results travel as
//! `tool_result` blocks in a user message.
//!
//! Fields are declared in sorted order: the bytes are those of the earlier `Value` rendering
//! (see [`super::wire_json`]).

use serde::Serialize;
use serde_json::Value;

use super::settings_body::{with_extra_body, AnthropicToolChoice, Thinking};
use super::wire_json::{to_body, wire_name, ArgsObject, Tools};
use super::{ModelRequest, RequestBody};
use crate::tool::ToolSpec;
use crate::transcript::Message;

/// The request body's bytes.
pub(crate) fn render(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> RequestBody {
    let s = req.settings;
    let has_tools = !req.tools.is_empty();
    let body = to_body(&Body {
        max_tokens,
        messages: merged(req.messages),
        model,
        stop_sequences: s.stop.as_deref(),
        stream: true,
        system: req.system,
        temperature: s.temperature,
        thinking: Thinking::of(s),
        tool_choice: AnthropicToolChoice::of(s, has_tools),
        tools: Tools(req.tools, Tool::of),
        top_k: s.top_k,
        top_p: s.top_p,
    });
    with_extra_body(body, s)
}

#[derive(Serialize)]
struct Body<'a> {
    max_tokens: u32,
    messages: Vec<WireMessage<'a>>,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_sequences: Option<&'a [String]>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<AnthropicToolChoice<'a>>,
    #[serde(skip_serializing_if = "Tools::is_empty")]
    tools: Tools<'a, Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
}

/// One wire message: the blocks of adjacent engine messages of its role.
#[derive(Serialize)]
struct WireMessage<'a> {
    content: Vec<Block<'a>>,
    role: &'static str,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Text {
        text: &'a str,
        r#type: &'static str,
    },
    ToolUse {
        id: &'a str,
        input: ArgsObject<'a>,
        name: &'a str,
        r#type: &'static str,
    },
    ToolResult {
        content: &'a str,
        is_error: bool,
        tool_use_id: &'a str,
        r#type: &'static str,
    },
}

/// The messages as blocks (borrowed), adjacent ones of a role merged into one message.
fn merged<'a>(messages: &'a [Message]) -> Vec<WireMessage<'a>> {
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
                if let Some(block) = text_block(content) {
                    push("user", block);
                }
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(block) = text_block(content) {
                    push("assistant", block);
                }
                for c in tool_calls {
                    push(
                        "assistant",
                        Block::ToolUse {
                            id: &c.id,
                            input: ArgsObject(c),
                            name: wire_name(c),
                            r#type: "tool_use",
                        },
                    );
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => push(
                "user",
                Block::ToolResult {
                    content,
                    is_error: *is_error,
                    tool_use_id: call_id,
                    r#type: "tool_result",
                },
            ),
        }
    }
    out
}

/// A text block; none for text without non-whitespace. The API refuses such blocks (HTTP 400,
/// not retried), so a reply that had neither text nor calls, once in the conversation, would fail
/// every later request: they are left out, and a message left with no block is left out whole
/// (the user messages around it merge).
fn text_block(text: &str) -> Option<Block<'_>> {
    (!text.trim().is_empty()).then_some(Block::Text {
        text,
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
