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

use super::json_writer::JsonBytes;
use super::RequestBody;
use crate::tool::ToolSpec;
use crate::transcript::ToolCall;

/// The JSON bytes of `body`.
pub(crate) fn to_body(body: &impl Serialize) -> RequestBody {
    let mut out = JsonBytes::new();
    out.value(body);
    out.into_body()
}

/// What a failed tool result's text starts with on the wire of styles without an error flag.
pub(crate) const ERROR_PREFIX: &str = "Error: ";

/// A tool result's text, [`ERROR_PREFIX`] in front when it is an error (for styles without an
/// error flag; written as one JSON string without assembling it first).
pub(crate) struct ErrorPrefixed<'a>(pub &'a str, pub bool);

impl Serialize for ErrorPrefixed<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.1 {
            s.collect_str(&format_args!("{ERROR_PREFIX}{}", self.0))
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
pub(crate) fn args_text(c: &ToolCall) -> std::borrow::Cow<'_, str> {
    let text = match (&c.via, &c.arguments) {
        (None, Value::String(raw)) if c.raw_arguments => return raw.as_str().into(),
        (None, args) => serde_json::to_string(args),
        (Some(_), args) => serde_json::to_string(&ViaCallTool {
            arguments: args,
            name: &c.name,
        }),
    };
    // Cannot fail: a `Value` (or a struct of one and a string) always serializes: its map keys
    // are strings.
    text.expect("call arguments serialize").into()
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
