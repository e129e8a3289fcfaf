//! OpenAI Chat Completions over SSE (also every OpenAI-compatible server).

use async_trait::async_trait;
use serde_json::{json, Value};

use super::body::{read_sse, read_whole, Progress, MAX_BODY_BYTES};
use super::http::Http;
use super::{
    error_prefixed, function_tool, object, wire_call, Backend, DeltaSink, Failure, ModelRequest,
    ModelResponse, RawCall,
};
use crate::config::Config;
use crate::event::Usage;
use crate::transcript::Message;

pub(crate) struct OpenAi {
    http: Http,
    model: String,
    max_tokens: u32,
    auth: Vec<(&'static str, String)>,
}

impl OpenAi {
    pub fn new(http: Http, config: &Config) -> Self {
        let auth = config
            .resolved_api_key()
            .map(|k| vec![("authorization", format!("Bearer {k}"))])
            .unwrap_or_default();
        OpenAi {
            http,
            model: config.model.clone().unwrap_or_default(),
            max_tokens: config.max_tokens,
            auth,
        }
    }
}

/// The request body.
pub(crate) fn body(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(system) = req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in req.messages {
        messages.push(match m {
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut msg = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|c| {
                            let (name, args) = wire_call(c);
                            let arguments = match (&args, c.raw_arguments) {
                                (Value::String(raw), true) => raw.clone(),
                                _ => args.to_string(),
                            };
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": name, "arguments": arguments}})
                        })
                        .collect();
                    msg["tool_calls"] = Value::Array(calls);
                    if content.is_empty() {
                        msg["content"] = Value::Null;
                    }
                }
                msg
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => json!({"role": "tool", "tool_call_id": call_id,
                         "content": error_prefixed(content, *is_error)}),
        });
    }
    let mut body = object([
        ("model", model.into()),
        ("messages", Value::Array(messages)),
        ("stream", true.into()),
        ("stream_options", json!({"include_usage": true})),
        ("max_completion_tokens", max_tokens.into()),
    ]);
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(req.tools.iter().map(|t| function_tool(t)).collect());
    }
    body
}

/// Tool calls assembled from deltas, by index.
#[derive(Default)]
struct CallParts {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// The state of one streamed answer.
#[derive(Default)]
pub(crate) struct Assembler {
    text: String,
    calls: Vec<(u64, CallParts)>,
    usage: Usage,
    finished: bool,
}

impl Assembler {
    /// Read one chunk (streamed) or whole completion (not streamed).
    pub fn chunk(&mut self, chunk: &Value, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        if let Some(err) = chunk.get("error") {
            return Err(Failure::Fatal(format!(
                "the model server sent an error: {err}"
            )));
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            // `prompt_tokens` is the whole prompt; `cached_tokens` is the part of it served
            // from the prompt cache (never more than the whole, whatever a server claims).
            let input = u["prompt_tokens"].as_u64().unwrap_or(0);
            self.usage = Usage {
                input_tokens: input,
                output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
                cache_read_input_tokens: u["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0)
                    .min(input),
                cache_creation_input_tokens: 0,
            };
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return Ok(());
        };
        // A streamed chunk carries `delta`; a whole completion carries `message`.
        let delta = choice.get("delta").or_else(|| choice.get("message"));
        if let Some(delta) = delta {
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                self.text.push_str(text);
                deltas(text);
            }
            if let Some(calls) = delta["tool_calls"].as_array() {
                for (pos, tc) in calls.iter().enumerate() {
                    let index = tc["index"].as_u64().unwrap_or(pos as u64);
                    let slot = match self.calls.iter().position(|(i, _)| *i == index) {
                        Some(s) => s,
                        None => {
                            self.calls.push((index, CallParts::default()));
                            self.calls.len() - 1
                        }
                    };
                    let parts = &mut self.calls[slot].1;
                    if let Some(id) = tc["id"].as_str().filter(|s| !s.is_empty()) {
                        parts.id = Some(id.to_string());
                    }
                    if let Some(name) = tc["function"]["name"].as_str() {
                        parts.name.push_str(name);
                    }
                    match &tc["function"]["arguments"] {
                        Value::String(a) => parts.arguments.push_str(a),
                        Value::Null => {}
                        other => parts.arguments.push_str(&other.to_string()),
                    }
                }
            }
        }
        if choice["finish_reason"].is_string() {
            self.finished = true;
        }
        Ok(())
    }

    pub fn finish(mut self) -> ModelResponse {
        self.calls.sort_by_key(|(i, _)| *i);
        ModelResponse {
            text: self.text,
            calls: self
                .calls
                .into_iter()
                .map(|(_, p)| RawCall {
                    id: p.id,
                    name: p.name,
                    arguments: p.arguments,
                })
                .collect(),
            usage: self.usage,
        }
    }
}

#[async_trait]
impl Backend for OpenAi {
    fn body(&self, req: &ModelRequest<'_>) -> Value {
        body(req.model.unwrap_or(&self.model), self.max_tokens, req)
    }

    async fn send(&self, body: &Value, deltas: DeltaSink<'_>) -> Result<ModelResponse, Failure> {
        let resp = self
            .http
            .post("/chat/completions", &self.auth, body)
            .await?;
        let idle = self.http.idle_timeout;
        let mut asm = Assembler::default();
        if !is_event_stream(&resp) {
            // A server that ignores `stream: true` answers with one completion.
            let bytes = read_whole(resp, MAX_BODY_BYTES, idle).await?;
            let whole: Value = serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Fatal(format!("the model server's answer is not JSON: {e}"))
            })?;
            asm.chunk(&whole, deltas)?;
            return Ok(asm.finish());
        }
        let mut done = false;
        read_sse(resp, idle, |ev| {
            let Some(data) = ev.data else {
                return Ok(Progress::KeepAlive);
            };
            let data = data.trim();
            if data == "[DONE]" {
                done = true;
                return Ok(Progress::Done);
            }
            if data.is_empty() {
                return Ok(Progress::KeepAlive);
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                Failure::Fatal(format!("malformed stream chunk ({e}): {data:.200}"))
            })?;
            asm.chunk(&chunk, deltas)?;
            Ok(Progress::Data)
        })
        .await?;
        if !done && !asm.finished {
            return Err(Failure::Fatal(
                "the model's answer broke off: the stream ended before the response was complete"
                    .into(),
            ));
        }
        Ok(asm.finish())
    }

    fn redact(&self, text: &str) -> String {
        self.http.redactor.redact(text)
    }
}

/// Whether a response is an SSE stream.
pub(crate) fn is_event_stream(resp: &reqwest::Response) -> bool {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_assemble_several_calls_by_index() {
        let mut asm = Assembler::default();
        let seen = std::sync::Mutex::new(String::new());
        let sink = |t: &str| seen.lock().unwrap().push_str(t);
        let chunks = [
            json!({"choices": [{"delta": {"role": "assistant", "content": "Hel"}}]}),
            json!({"choices": [{"delta": {"content": "lo"}}]}),
            json!({"choices": [{"delta": {"tool_calls": [
                {"index": 0, "id": "a", "function": {"name": "x", "arguments": "{\"k\""}},
                {"index": 1, "id": "b", "function": {"name": "y", "arguments": ""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [
                {"index": 1, "function": {"arguments": "{}"}},
                {"index": 0, "function": {"arguments": ": 1}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2,
                                            "prompt_tokens_details": {"cached_tokens": 5}}}),
        ];
        for c in &chunks {
            asm.chunk(c, &sink).unwrap();
        }
        assert!(asm.finished);
        let r = asm.finish();
        assert_eq!(r.text, "Hello");
        assert_eq!(*seen.lock().unwrap(), "Hello");
        assert_eq!(r.calls.len(), 2);
        assert_eq!(r.calls[0].arguments, "{\"k\": 1}");
        assert_eq!(r.calls[1].id.as_deref(), Some("b"));
        assert_eq!(r.usage.input_tokens, 7);
        assert_eq!(r.usage.cache_read_input_tokens, 5);
        let err = Assembler::default()
            .chunk(&json!({"error": {"message": "nope"}}), &sink)
            .unwrap_err();
        assert!(matches!(err, Failure::Fatal(m) if m.contains("nope")));
    }
}
