//! The responses of the `scripted` style: one entry per model request, the same entries as a
//! conformance scenario's `model`. Plain data: the config holds them, the scripted backend
//! ([`crate::model`]) replays them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Usage;

/// One tool call in a script entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// The call id (styles without ids ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool name.
    pub name: String,
    /// A JSON object, or a string sent as is (which may be invalid JSON).
    #[serde(default)]
    pub arguments: Value,
    /// The reply pauses this long (milliseconds) after this call is complete, before the rest
    /// of it comes: a call that may start while the model still streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_after_ms: Option<u64>,
}

/// An HTTP error a script entry stands for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptError {
    /// The HTTP status.
    pub status: u16,
    /// The Retry-After the server would send, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<f64>,
    /// The response body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// One model response of a script (the same entries as a conformance scenario's `model`).
///
/// Strict: an unknown key is an error, and a client refuses an entry that says nothing (no
/// `text`, `tool_calls`, `error`, `stall` or `break_after_bytes`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptEntry {
    /// The answer's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The answer's tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ScriptCall>>,
    /// Answer this request with an HTTP error instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ScriptError>,
    /// Never answer (until the turn is cancelled).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stall: bool,
    /// The usage reported for this response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Break the answer off after this many bytes of text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_after_bytes: Option<usize>,
    /// The answer stops short of a full one for this reason (`refusal`, `content_filter`,
    /// `max_tokens`), as a server's would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<crate::event::StopReason>,
}

impl ScriptEntry {
    /// A final text answer.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptEntry {
            text: Some(text.into()),
            ..Default::default()
        }
    }

    /// An answer with one tool call.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ScriptEntry {
            tool_calls: Some(vec![ScriptCall {
                id: Some(id.into()),
                name: name.into(),
                arguments,
                pause_after_ms: None,
            }]),
            ..Default::default()
        }
    }
}
