//! The openai request body, serialized straight to bytes from the engine's messages and tool
//! specs through borrowing `Serialize` structs: no `serde_json::Value` tree is built, so a long
//! conversation is not copied once into Values and then walked again to serialize them.
//!
//! Fields are declared in sorted order: the bytes are those of the earlier `Value` rendering
//! (see [`super::wire_json`]).

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use super::wire_json::{to_body, wire_name, ArgsText, ErrorPrefixed, FunctionTool, Tools};
use super::{ModelRequest, RequestBody};
use crate::transcript::{Message, ToolCall};

/// The request body's bytes.
pub(crate) fn render(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> RequestBody {
    let body = Body {
        max_completion_tokens: max_tokens,
        messages: Messages(req),
        model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: Tools(req.tools, FunctionTool::of),
    };
    to_body(&body)
}

#[derive(Serialize)]
struct Body<'a> {
    max_completion_tokens: u32,
    messages: Messages<'a>,
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Tools::is_empty")]
    tools: Tools<'a, FunctionTool<'a>>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// The system prompt (when there is one) and then every message.
struct Messages<'a>(&'a ModelRequest<'a>);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let req = self.0;
        let system = req.system.map(|content| WireMessage::Text {
            content,
            role: "system",
        });
        s.collect_seq(system.into_iter().chain(req.messages.iter().map(wire)))
    }
}

/// One message as the wire shows it.
enum WireMessage<'a> {
    /// `{"content", "role"}`: system, user, and an assistant message without calls.
    Text {
        content: &'a str,
        role: &'static str,
    },
    /// An assistant message with calls; empty text is `null`.
    Calls {
        content: Option<&'a str>,
        calls: &'a [ToolCall],
    },
    /// A tool result; an error's text is prefixed with `Error: `.
    Result {
        content: &'a str,
        is_error: bool,
        call_id: &'a str,
    },
}

fn wire(m: &Message) -> WireMessage<'_> {
    match m {
        Message::User { content } => WireMessage::Text {
            content,
            role: "user",
        },
        Message::Assistant {
            content,
            tool_calls,
        } if tool_calls.is_empty() => WireMessage::Text {
            content,
            role: "assistant",
        },
        Message::Assistant {
            content,
            tool_calls,
        } => WireMessage::Calls {
            content: Some(content.as_str()).filter(|c| !c.is_empty()),
            calls: tool_calls,
        },
        Message::Tool {
            call_id,
            content,
            is_error,
            ..
        } => WireMessage::Result {
            content,
            is_error: *is_error,
            call_id,
        },
    }
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            WireMessage::Text { content, role } => {
                let mut m = s.serialize_struct("Message", 2)?;
                m.serialize_field("content", content)?;
                m.serialize_field("role", role)?;
                m.end()
            }
            WireMessage::Calls { content, calls } => {
                let mut m = s.serialize_struct("Message", 3)?;
                m.serialize_field("content", content)?;
                m.serialize_field("role", "assistant")?;
                m.serialize_field("tool_calls", &Calls(calls))?;
                m.end()
            }
            WireMessage::Result {
                content,
                is_error,
                call_id,
            } => {
                let mut m = s.serialize_struct("Message", 3)?;
                m.serialize_field("content", &ErrorPrefixed(content, *is_error))?;
                m.serialize_field("role", "tool")?;
                m.serialize_field("tool_call_id", call_id)?;
                m.end()
            }
        }
    }
}

struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| WireCall {
            function: Function {
                arguments: ArgsText(c),
                name: wire_name(c),
            },
            id: &c.id,
            r#type: "function",
        }))
    }
}

#[derive(Serialize)]
struct WireCall<'a> {
    function: Function<'a>,
    id: &'a str,
    r#type: &'static str,
}

#[derive(Serialize)]
struct Function<'a> {
    arguments: ArgsText<'a>,
    name: &'a str,
}
