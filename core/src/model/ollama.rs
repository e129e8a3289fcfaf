//! Ollama's native `/api/chat`, streamed as NDJSON.

use async_trait::async_trait;
use serde_json::Value;

use super::body::{read_lines, Progress};
use super::endpoint::BearerEndpoint;
use super::http::Http;
use super::ollama_body::render;
use super::{
    Backend, Delta, DeltaSink, Failure, ModelRequest, ModelResponse, RawCall, RequestBody,
};
use crate::config::Config;
use crate::event::{StopReason, Usage};
use crate::transcript::{Part, Reasoning};

pub(crate) struct Ollama {
    endpoint: BearerEndpoint,
}

impl Ollama {
    pub fn new(http: Http, config: &Config) -> Self {
        Ollama {
            endpoint: BearerEndpoint::new(http, config),
        }
    }
}

#[derive(Default)]
struct Assembler {
    text: String,
    /// `message.thinking`, joined (Ollama streams it before the answer).
    thinking: String,
    /// The number of calls before the thinking began.
    thinking_at: usize,
    calls: Vec<RawCall>,
    usage: Usage,
    done: bool,
    stop: Option<StopReason>,
}

impl Assembler {
    fn line(&mut self, obj: &Value, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        if let Some(err) = obj.get("error") {
            return Err(Failure::Fatal(format!(
                "the model server sent an error: {err}"
            )));
        }
        let msg = &obj["message"];
        if let Some(t) = msg["thinking"].as_str().filter(|t| !t.is_empty()) {
            if self.thinking.is_empty() {
                self.thinking_at = self.calls.len();
            }
            self.thinking.push_str(t);
            deltas(Delta::Reasoning(t));
        }
        if let Some(t) = msg["content"].as_str().filter(|t| !t.is_empty()) {
            self.text.push_str(t);
            deltas(Delta::Text(t));
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
            if obj["done_reason"].as_str() == Some("length") {
                self.stop = Some(StopReason::MaxTokens);
            }
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
        render(
            req.model.unwrap_or(&self.endpoint.model),
            self.endpoint.max_tokens,
            req,
        )
    }

    async fn send(
        &self,
        body: &RequestBody,
        deltas: DeltaSink<'_>,
    ) -> Result<ModelResponse, Failure> {
        let resp = self
            .endpoint
            .http
            .post("/api/chat", &self.endpoint.auth, body)
            .await?;
        let mut asm = Assembler::default();
        read_lines(resp, self.endpoint.http.idle_timeout, |line| {
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
        let extra = if asm.thinking.is_empty() {
            Vec::new()
        } else {
            // Ollama takes no reasoning back: no field is recorded, so none is sent.
            vec![(
                asm.thinking_at,
                Part::Reasoning(Reasoning {
                    text: asm.thinking,
                    ..Reasoning::default()
                }),
            )]
        };
        Ok(ModelResponse {
            paused: false,
            stop: asm.stop,
            extra,
            text: asm.text,
            calls: asm.calls,
            usage: asm.usage,
        })
    }

    fn redact(&self, text: &str) -> String {
        self.endpoint.http.redactor.redact(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_is_read_before_the_answer() {
        let reasoning = std::sync::Mutex::new(String::new());
        let sink = |d: Delta<'_>| {
            if let Delta::Reasoning(t) = d {
                reasoning.lock().unwrap().push_str(t)
            }
        };
        let mut asm = Assembler::default();
        for line in [
            r#"{"message": {"role": "assistant", "content": "", "thinking": "Two "}, "done": false}"#,
            r#"{"message": {"role": "assistant", "content": "", "thinking": "plus two."}, "done": false}"#,
            r#"{"message": {"role": "assistant", "content": "4"}, "done": false}"#,
            r#"{"message": {"role": "assistant", "content": ""}, "done": true}"#,
        ] {
            asm.line(&parse_line(line).unwrap(), &sink).unwrap();
        }
        assert_eq!(asm.thinking, "Two plus two.");
        assert_eq!(*reasoning.lock().unwrap(), "Two plus two.");
        assert_eq!(asm.text, "4");
    }

    #[test]
    fn the_body_bytes_are_those_of_the_value_rendering() {
        crate::model::value_body::assert_same_bytes(crate::model::value_body::ollama, render);
    }
}
