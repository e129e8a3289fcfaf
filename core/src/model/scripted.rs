//! The scripted style: a fixed list of responses replayed in-process, no network. It behaves like
//! a server: `error` entries act as that HTTP error (and are retried), `stall` waits until the
//! turn is cancelled, and running out of script ends the turn with `error`, not retried.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::{
    text_pieces, Backend, DeltaSink, Failure, ModelRequest, ModelResponse, RawCall, RequestBody,
};
use crate::script::ScriptEntry;

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
    fn body(&self, _req: &ModelRequest<'_>) -> RequestBody {
        RequestBody::new()
    }

    async fn send(
        &self,
        _body: &RequestBody,
        deltas: DeltaSink<'_>,
    ) -> Result<ModelResponse, Failure> {
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
            deltas(super::Delta::Text(piece));
        }
        if entry.break_after_bytes.is_some() {
            return Err(Failure::Fatal(
                "the model's answer broke off before it was complete".into(),
            ));
        }
        let mut calls = Vec::new();
        for c in entry.tool_calls.iter().flatten() {
            let call = RawCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: match &c.arguments {
                    Value::String(raw) => raw.clone(),
                    Value::Null => "{}".to_string(),
                    other => other.to_string(),
                },
            };
            // Each call is complete as it comes, as an anthropic block's stop says.
            deltas(super::Delta::Call(&call));
            calls.push(call);
            if let Some(ms) = c.pause_after_ms {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
        }
        Ok(ModelResponse {
            paused: false,
            stop: entry.stop_reason,
            extra: Vec::new(),
            text,
            calls,
            usage: entry.usage.unwrap_or_default(),
        })
    }
}
