//! Pieces of the request bodies that several styles share, as borrowing `Serialize` values: each
//! style's body is serialized straight to bytes from the engine's messages and tool specs, with
//! no `serde_json::Value` tree built in between.
//!
//! The bytes are those the earlier `Value` rendering produced (the wire tests, the recorded
//! bodies and the official clients' checks compare them): serde_json's `Value` map sorts its keys
//! (the workspace does not enable `preserve_order`), so every struct of a body declares its
//! fields in sorted order.

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

use super::RequestBody;
use crate::tool::ToolSpec;
use crate::transcript::ToolCall;

/// The JSON bytes of `body`.
pub(crate) fn to_body(body: &impl Serialize) -> RequestBody {
    let mut out = BodyBytes(Vec::with_capacity(BODY_START_CAPACITY));
    body.serialize(&mut serde_json::Serializer::new(&mut out))
        .expect("request bodies serialize");
    RequestBody::from(out.0)
}

/// A fresh turn's bodies are a few hundred bytes: 1 KiB spares the reallocations (and copies)
/// of growing from `serde_json::to_vec`'s 128 bytes and stays within glibc's per-thread cache
/// (requests of up to 1,024 bytes); 2 KiB went through `_int_malloc` every time and cost more
/// than the copies it spared.
const BODY_START_CAPACITY: usize = 1024;

/// The body being written. `Vec<u8>`'s own `io::Write` is not inlined into serde_json's writes,
/// and most of those are one to a few bytes (`{`, `"`, `:`, `,`, a key): each became a call to
/// `extend_from_slice` and one to `memcpy` (about 15k instructions of a fresh openai turn's two
/// bodies). Inlined, a constant piece is a store.
struct BodyBytes(Vec<u8>);

impl BodyBytes {
    #[inline(always)]
    fn put(&mut self, buf: &[u8]) {
        if buf.len() <= 4 {
            for &b in buf {
                self.0.push(b);
            }
        } else {
            self.0.extend_from_slice(buf);
        }
    }
}

impl std::io::Write for BodyBytes {
    #[inline(always)]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.put(buf);
        Ok(buf.len())
    }

    #[inline(always)]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.put(buf);
        Ok(())
    }

    #[inline(always)]
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A tool result's text, `Error: ` in front when it is an error (for styles without an error
/// flag; written as one JSON string without assembling it first).
pub(crate) struct ErrorPrefixed<'a>(pub &'a str, pub bool);

impl Serialize for ErrorPrefixed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.1 {
            s.collect_str(&format_args!("Error: {}", self.0))
        } else {
            s.serialize_str(self.0)
        }
    }
}

/// The name a call goes by on the wire: `call_tool` when the model went through it.
pub(crate) fn wire_name(c: &ToolCall) -> &str {
    c.via.as_deref().unwrap_or(&c.name)
}

/// The arguments of a call made through `call_tool`, as the model sent them:
/// `{"arguments", "name"}` of the real tool.
#[derive(Serialize)]
pub(crate) struct ViaCallTool<'a> {
    arguments: &'a Value,
    name: &'a str,
}

/// A call's arguments as a JSON object (anthropic `input`, ollama `arguments`): `{}` when they
/// did not parse or are not an object, the `call_tool` form for a call made through it.
pub(crate) struct ArgsObject<'a>(pub &'a ToolCall);

impl Serialize for ArgsObject<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        match &c.via {
            Some(_) if !c.raw_arguments => ViaCallTool {
                arguments: &c.arguments,
                name: &c.name,
            }
            .serialize(s),
            None if !c.raw_arguments && c.arguments.is_object() => c.arguments.serialize(s),
            _ => s.serialize_map(Some(0))?.end(),
        }
    }
}

/// A call's arguments as the JSON text openai carries: the raw text when they did not parse,
/// the `call_tool` form for a call made through it, else the arguments' JSON.
pub(crate) struct ArgsText<'a>(pub &'a ToolCall);

impl Serialize for ArgsText<'_> {
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

/// A tool as the openai and ollama styles declare it:
/// `{"function": {"description", "name", "parameters"}, "type": "function"}`.
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

/// Tool specs as a JSON array, each rendered by `each`.
pub(crate) struct Tools<'a, T>(
    pub &'a [std::sync::Arc<ToolSpec>],
    pub fn(&'a ToolSpec) -> T,
);

impl<'a, T: Serialize> Serialize for Tools<'a, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| (self.1)(t)))
    }
}

impl<T> Tools<'_, T> {
    /// Whether no tool is offered (the body then has no `tools` key).
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
