//! The openai request body, serialized straight to bytes from the engine's messages and tool
//! specs through borrowing `Serialize` structs: no `serde_json::Value` tree is built, so a long
//! conversation is not copied once into Values and then walked again to serialize them.
//!
//! The bytes are those the `Value` rendering produced (the wire tests, recorded bodies and the
//! official clients' check compare them): serde_json's `Value` map sorts its keys, so every
//! struct below declares its fields in sorted order.

use bytes::Bytes;
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use serde_json::Value;

use super::ModelRequest;
use crate::tool::ToolSpec;
use crate::transcript::{Message, ToolCall};

/// The request body's bytes.
pub(crate) fn render(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> Bytes {
    let body = Body {
        max_completion_tokens: max_tokens,
        messages: Messages(req),
        model,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: Tools(req.tools),
    };
    Bytes::from(serde_json::to_vec(&body).expect("request bodies serialize"))
}

#[derive(Serialize)]
struct Body<'a> {
    max_completion_tokens: u32,
    messages: Messages<'a>,
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Tools::is_empty")]
    tools: Tools<'a>,
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

/// A tool result's text, `Error: ` in front when it is an error (written as one JSON string
/// without assembling it first).
struct ErrorPrefixed<'a>(&'a str, bool);

impl Serialize for ErrorPrefixed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.1 {
            s.collect_str(&format_args!("Error: {}", self.0))
        } else {
            s.serialize_str(self.0)
        }
    }
}

struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| WireCall {
            function: Function {
                arguments: Arguments(c),
                name: c.via.as_deref().unwrap_or(&c.name),
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
    arguments: Arguments<'a>,
    name: &'a str,
}

/// A call's arguments as the JSON text openai carries: the raw text when they did not parse,
/// `{"arguments", "name"}` of the real tool for a call made through `call_tool` (as
/// [`super::wire_call`] shows it), else the arguments' JSON.
struct Arguments<'a>(&'a ToolCall);

#[derive(Serialize)]
struct ViaCallTool<'a> {
    arguments: &'a Value,
    name: &'a str,
}

impl Serialize for Arguments<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let text = match (&c.via, &c.arguments) {
            (None, Value::String(raw)) if c.raw_arguments => return s.serialize_str(raw),
            (None, args) => serde_json::to_string(args),
            (Some(_), args) => serde_json::to_string(&ViaCallTool {
                arguments: args,
                name: &c.name,
            }),
        };
        s.serialize_str(&text.map_err(serde::ser::Error::custom)?)
    }
}

/// The tool specs: `{"function": {"description", "name", "parameters"}, "type": "function"}`
/// (the shape of [`super::function_tool`]).
struct Tools<'a>(&'a [std::sync::Arc<ToolSpec>]);

impl Tools<'_> {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| FunctionTool::of(t)))
    }
}

/// A tool spec as the openai and ollama styles declare it.
#[derive(Serialize)]
pub(crate) struct FunctionTool<'a> {
    function: FunctionSpec<'a>,
    r#type: &'static str,
}

#[derive(Serialize)]
struct FunctionSpec<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
}

impl<'a> FunctionTool<'a> {
    /// The declaration of `t`, borrowing it.
    pub(crate) fn of(t: &'a ToolSpec) -> Self {
        FunctionTool {
            function: FunctionSpec {
                description: &t.description,
                name: &t.name,
                parameters: &t.input_schema,
            },
            r#type: "function",
        }
    }
}
