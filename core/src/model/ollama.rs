//! Ollama's native `/api/chat`, streamed as NDJSON.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::body::{read_lines, Progress};
use super::http::Http;
use super::{
    error_prefixed, function_tool, object, wire_call, Backend, DeltaSink, Failure, ModelRequest,
    ModelResponse, RawCall, RequestBody,
};
use crate::config::Config;
use crate::event::Usage;
use crate::transcript::Message;

pub(crate) struct Ollama {
    http: Http,
    model: String,
    max_tokens: u32,
    auth: Vec<(&'static str, String)>,
}

impl Ollama {
    pub fn new(http: Http, config: &Config) -> Self {
        let auth = config
            .resolved_api_key()
            .map(|k| vec![("authorization", format!("Bearer {k}"))])
            .unwrap_or_default();
        Ollama {
            http,
            model: config.model.clone().unwrap_or_default(),
            max_tokens: config.max_tokens,
            auth,
        }
    }
}

/// The request body. Ollama has no call ids: results name their tool with `tool_name`.
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
                    msg["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            let (name, args) = wire_call(c);
                            let args = if c.raw_arguments || !args.is_object() {
                                json!({})
                            } else {
                                args
                            };
                            object([(
                                "function",
                                object([("name", name.into()), ("arguments", args)]),
                            )])
                        })
                        .collect();
                }
                msg
            }
            Message::Tool {
                name,
                content,
                is_error,
                ..
            } => json!({"role": "tool", "tool_name": name,
                         "content": error_prefixed(content, *is_error)}),
        });
    }
    let mut body = object([
        ("model", model.into()),
        ("messages", Value::Array(messages)),
        ("stream", true.into()),
        ("options", json!({"num_predict": max_tokens})),
    ]);
    if !req.tools.is_empty() {
        body["tools"] = req.tools.iter().map(|t| function_tool(t)).collect();
    }
    body
}

#[derive(Default)]
struct Assembler {
    text: String,
    calls: Vec<RawCall>,
    usage: Usage,
    done: bool,
}

impl Assembler {
    fn line(&mut self, obj: &Value, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        if let Some(err) = obj.get("error") {
            return Err(Failure::Fatal(format!(
                "the model server sent an error: {err}"
            )));
        }
        let msg = &obj["message"];
        if let Some(t) = msg["content"].as_str().filter(|t| !t.is_empty()) {
            self.text.push_str(t);
            deltas(t);
        }
        for tc in msg["tool_calls"].as_array().into_iter().flatten() {
            let f = &tc["function"];
            let arguments = match &f["arguments"] {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_string(),
                other => other.to_string(),
            };
            self.calls.push(RawCall {
                id: tc["id"].as_str().map(str::to_string),
                name: f["name"].as_str().unwrap_or_default().to_string(),
                arguments,
            });
        }
        if obj["done"].as_bool() == Some(true) {
            self.done = true;
            // Ollama reports no cache fields; `prompt_eval_count` may leave out a prompt
            // prefix its KV cache reused (compaction's estimate covers that, see compact/).
            self.usage = Usage {
                input_tokens: obj["prompt_eval_count"].as_u64().unwrap_or(0),
                output_tokens: obj["eval_count"].as_u64().unwrap_or(0),
                ..Usage::default()
            };
        }
        Ok(())
    }
}

fn parse_line(line: &str) -> Result<Value, Failure> {
    serde_json::from_str(line)
        .map_err(|e| Failure::Fatal(format!("malformed stream line ({e}): {line:.200}")))
}

#[async_trait]
impl Backend for Ollama {
    fn body(&self, req: &ModelRequest<'_>) -> RequestBody {
        let body = body(req.model.unwrap_or(&self.model), self.max_tokens, req);
        RequestBody::from(serde_json::to_vec(&body).expect("request bodies serialize"))
    }

    async fn send(
        &self,
        body: &RequestBody,
        deltas: DeltaSink<'_>,
    ) -> Result<ModelResponse, Failure> {
        let resp = self.http.post("/api/chat", &self.auth, body).await?;
        let mut asm = Assembler::default();
        read_lines(resp, self.http.idle_timeout, |line| {
            asm.line(&parse_line(line)?, deltas)?;
            Ok(if asm.done {
                Progress::Done
            } else {
                Progress::Data
            })
        })
        .await?;
        if !asm.done {
            return Err(Failure::Fatal(
                "the model's answer broke off: the stream ended before `done: true`".into(),
            ));
        }
        Ok(ModelResponse {
            text: asm.text,
            calls: asm.calls,
            usage: asm.usage,
        })
    }

    fn redact(&self, text: &str) -> String {
        self.http.redactor.redact(text)
    }
}
