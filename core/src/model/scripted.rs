//! The scripted style: a fixed list of responses replayed in-process, no network. It behaves like
//! a server: `error` entries act as that HTTP error (and are retried), `stall` waits until the
//! turn is cancelled, and running out of script ends the turn with `error`, not retried.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{text_pieces, Backend, DeltaSink, Failure, ModelRequest, ModelResponse, RawCall};
use crate::event::Usage;

/// One tool call in a script entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptCall {
    /// The call id (styles without ids ignore it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool name.
    pub name: String,
    /// A JSON object, or a string sent as is (which may be invalid JSON).
    #[serde(default)]
    pub arguments: Value,
}

/// An HTTP error a script entry stands for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
            }]),
            ..Default::default()
        }
    }
}

pub(crate) struct Scripted {
    entries: Vec<ScriptEntry>,
    next: AtomicUsize,
}

impl Scripted {
    pub fn new(entries: Vec<ScriptEntry>) -> Self {
        Scripted {
            entries,
            next: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl Backend for Scripted {
    fn body(&self, _req: &ModelRequest<'_>) -> Value {
        Value::Null
    }

    async fn send(&self, _body: &Value, deltas: DeltaSink<'_>) -> Result<ModelResponse, Failure> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(entry) = self.entries.get(i) else {
            return Err(Failure::Fatal(
                "model server answered HTTP 500: script exhausted".into(),
            ));
        };
        if let Some(err) = &entry.error {
            let body = err.body.clone().unwrap_or_default();
            return Err(Failure::BeforeData {
                status: Some(err.status),
                message: format!("model server answered HTTP {}: {}", err.status, body),
                retry_after: err.retry_after_s.map(Duration::from_secs_f64),
                retryable: err.status == 429 || err.status >= 500,
            });
        }
        if entry.stall {
            std::future::pending::<()>().await;
        }
        let text = entry.text.clone().unwrap_or_default();
        let mut sent = 0usize;
        for piece in text_pieces(&text) {
            if let Some(limit) = entry.break_after_bytes {
                if sent + piece.len() > limit {
                    return Err(Failure::Fatal(format!(
                        "the model's answer broke off after {limit} bytes"
                    )));
                }
            }
            sent += piece.len();
            deltas(piece);
        }
        if entry.break_after_bytes.is_some() {
            return Err(Failure::Fatal(
                "the model's answer broke off before it was complete".into(),
            ));
        }
        let calls = entry
            .tool_calls
            .iter()
            .flatten()
            .map(|c| RawCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: match &c.arguments {
                    Value::String(raw) => raw.clone(),
                    Value::Null => "{}".to_string(),
                    other => other.to_string(),
                },
            })
            .collect();
        Ok(ModelResponse {
            text,
            calls,
            usage: entry.usage.unwrap_or_default(),
        })
    }
}
