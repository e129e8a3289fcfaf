//! The ollama request body, serialized straight to bytes from the engine's messages and tool
//! specs through borrowing `Serialize` structs (no `serde_json::Value` tree). Ollama has no call
//! ids: results name their tool with `tool_name`.
//!
//! Fields are declared in sorted order: the bytes are those of the earlier `Value` rendering
//! (see [`super::wire_json`]).

use std::borrow::Cow;

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use super::images::{wire_image, WireImage};
use super::settings_body::{ollama_think, with_extra_body};
use super::wire_json::{to_body, wire_name, ArgsObject, ErrorPrefixed, FunctionTool, Tools};
use super::{ModelRequest, RequestBody};
use crate::transcript::{join_text, Message, Part};

/// The request body's bytes.
pub(crate) fn render(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> RequestBody {
    let s = req.settings;
    let body = to_body(&Body {
        format: req.output.map(|o| o.schema()),
        messages: Messages(req),
        model,
        options: Options {
            num_predict: max_tokens,
            seed: s.seed,
            stop: s.stop.as_deref(),
            temperature: s.temperature,
            top_k: s.top_k,
            top_p: s.top_p,
        },
        stream: true,
        think: ollama_think(s),
        tools: Tools(req.tools, FunctionTool::of),
    });
    with_extra_body(body, s)
}

#[derive(Serialize)]
struct Body<'a> {
    /// The host's schema: ollama turns it into a grammar the answer follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a serde_json::Value>,
    messages: Messages<'a>,
    model: &'a str,
    options: Options<'a>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    think: Option<&'static str>,
    #[serde(skip_serializing_if = "Tools::is_empty")]
    tools: Tools<'a, FunctionTool<'a>>,
}

#[derive(Serialize)]
struct Options<'a> {
    num_predict: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
}

/// The system prompt (when there is one) and then every message.
struct Messages<'a>(&'a ModelRequest<'a>);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let req = self.0;
        let system = req.system.map(WireMessage::System);
        s.collect_seq(
            system
                .into_iter()
                .chain(req.messages.iter().map(|m| WireMessage::Engine(m, req))),
        )
    }
}

enum WireMessage<'a> {
    System(&'a str),
    Engine(&'a Message, &'a ModelRequest<'a>),
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (m, req) = match self {
            WireMessage::System(content) => {
                let mut m = s.serialize_struct("Message", 2)?;
                m.serialize_field("content", content)?;
                m.serialize_field("role", "system")?;
                return m.end();
            }
            WireMessage::Engine(m, req) => (*m, *req),
        };
        match m {
            Message::User { content } => {
                let (text, images) = text_and_images(content, req);
                let mut m = s.serialize_struct("Message", 3)?;
                m.serialize_field("content", &text)?;
                if !images.is_empty() {
                    m.serialize_field("images", &images)?;
                }
                m.serialize_field("role", "user")?;
                m.end()
            }
            Message::Assistant { content } => {
                let mut m = s.serialize_struct("Message", 3)?;
                m.serialize_field("content", &join_text(content))?;
                m.serialize_field("role", "assistant")?;
                if m_has_calls(content) {
                    m.serialize_field("tool_calls", &Calls(content))?;
                }
                m.end()
            }
            Message::Tool {
                name,
                content,
                is_error,
                ..
            } => {
                let (text, images) = text_and_images(content, req);
                let mut m = s.serialize_struct("Message", 4)?;
                m.serialize_field("content", &ErrorPrefixed(&text, *is_error))?;
                if !images.is_empty() {
                    m.serialize_field("images", &images)?;
                }
                m.serialize_field("role", "tool")?;
                m.serialize_field("tool_name", name)?;
                m.end()
            }
        }
    }
}

fn m_has_calls(parts: &[Part]) -> bool {
    parts.iter().any(|p| matches!(p, Part::ToolCall(_)))
}

/// A message's text and its `images` (ollama takes base64 bytes without media type, beside the
/// text): an image that cannot be sent is named in the text instead.
fn text_and_images<'a>(parts: &'a [Part], req: &ModelRequest<'a>) -> (Cow<'a, str>, Vec<&'a str>) {
    let mut text = join_text(parts);
    let mut images = Vec::new();
    for p in parts {
        if let Part::Image(image) = p {
            match wire_image(image, req) {
                WireImage::Data { data, .. } => images.push(data),
                WireImage::Note(note) => {
                    let t = text.to_mut();
                    if !t.is_empty() {
                        t.push('\n');
                    }
                    t.push_str(&note);
                }
            }
        }
    }
    (text, images)
}

/// `[{"function": {"arguments": {...}, "name"}}]`: the calls among an assistant's parts.
struct Calls<'a>(&'a [Part]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let calls = self.0.iter().filter_map(|p| match p {
            Part::ToolCall(c) => Some(c),
            _ => None,
        });
        s.collect_seq(calls.map(|c| WireCall {
            function: Function {
                arguments: ArgsObject(c),
                name: wire_name(c),
            },
        }))
    }
}

#[derive(Serialize)]
struct WireCall<'a> {
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    arguments: ArgsObject<'a>,
    name: &'a str,
}
