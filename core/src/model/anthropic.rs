//! Anthropic Messages over SSE.

use async_trait::async_trait;
use serde_json::Value;

use super::anthropic_body::render;
use super::body::{read_sse, read_whole, Progress, MAX_BODY_BYTES};
use super::http::Http;
use super::openai::is_event_stream;
use super::{
    Backend, Delta, DeltaSink, Failure, ModelRequest, ModelResponse, RawCall, RequestBody,
};
use crate::config::Config;
use crate::event::{StopReason, Usage};
use crate::transcript::{Part, ProviderBlock, Reasoning};

/// The API version header every request carries.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

pub(crate) struct Anthropic {
    http: Http,
    model: String,
    max_tokens: u32,
    /// Whether requests carry `cache_control` breakpoints (config `prompt_cache`).
    cache: bool,
    headers: Vec<(&'static str, String)>,
}

impl Anthropic {
    pub fn new(http: Http, config: &Config) -> Self {
        Anthropic {
            http,
            model: config.model.clone().unwrap_or_default(),
            max_tokens: config.max_tokens,
            cache: config.prompt_cache_on(),
            headers: auth_headers(config),
        }
    }
}

pub(crate) fn auth_headers(config: &Config) -> Vec<(&'static str, String)> {
    let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
    if let Some(key) = config.resolved_api_key() {
        headers.push(("x-api-key", key));
    }
    headers
}

/// One content block being streamed.
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        /// The `input_json_delta` pieces so far.
        json: String,
        /// The `input` of `content_block_start`: `{}` when the input streams as deltas, the whole
        /// input when it does not (programmatic tool calls).
        start: Value,
    },
    /// Extended thinking: its text and signature, each streamed as deltas.
    Thinking(Reasoning),
    /// Reasoning sent encrypted (arrives whole in `content_block_start`).
    Redacted(String),
    /// A block of a kind the engine does not interpret (`server_tool_use`,
    /// `web_search_tool_result`, ...): kept as it came (its input's `input_json_delta` pieces
    /// joined into it) to be sent back, never a call of the client's.
    Provider {
        block: Value,
        json: String,
    },
}

/// Anthropic's usage fields as they arrive: `input_tokens` counts only the prompt tokens that
/// were neither read from nor written to the prompt cache.
#[derive(Default)]
struct WireUsage {
    uncached: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
}

impl WireUsage {
    /// Take the fields `u` carries (message_start has them all; message_delta repeats the
    /// cumulative counts it knows).
    fn read(&mut self, u: &Value) {
        let field = |k: &str| u.get(k).and_then(Value::as_u64);
        if let Some(n) = field("input_tokens") {
            self.uncached = n;
        }
        if let Some(n) = field("cache_read_input_tokens") {
            self.cache_read = n;
        }
        if let Some(n) = field("cache_creation_input_tokens") {
            self.cache_creation = n;
        }
        if let Some(n) = field("output_tokens") {
            self.output = n;
        }
    }

    /// The engine's usage: every prompt token in `input_tokens`, cached or not.
    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self
                .uncached
                .saturating_add(self.cache_read)
                .saturating_add(self.cache_creation),
            output_tokens: self.output,
            cache_read_input_tokens: self.cache_read,
            cache_creation_input_tokens: self.cache_creation,
        }
    }
}

/// The stop reasons that end a turn short of a full answer.
fn stop_reason(reason: &str) -> Option<StopReason> {
    match reason {
        "refusal" => Some(StopReason::Refusal),
        "max_tokens" => Some(StopReason::MaxTokens),
        _ => None,
    }
}

#[derive(Default)]
struct Assembler {
    text: String,
    blocks: Vec<(u64, Block)>,
    calls: Vec<RawCall>,
    /// Reasoning blocks, each with the number of calls before it.
    extra: Vec<(usize, Part)>,
    usage: WireUsage,
    /// A message_start arrived.
    started: bool,
    stopped: bool,
    stop: Option<StopReason>,
    /// `pause_turn`: the server paused a long turn (its server tools); the reply goes back as
    /// it came for the model to continue.
    paused: bool,
}

impl Assembler {
    fn event(&mut self, kind: &str, data: &Value, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        match kind {
            "message_start" => {
                // A second message_start before message_stop (a gateway that restarted its
                // upstream request): the unfinished message is dropped, never joined to the
                // new one.
                if self.started {
                    *self = Assembler {
                        started: true,
                        ..Assembler::default()
                    };
                }
                self.started = true;
                self.usage.read(&data["message"]["usage"]);
            }
            "content_block_start" => {
                let index = data["index"].as_u64().unwrap_or(self.blocks.len() as u64);
                let cb = &data["content_block"];
                let block = match cb["type"].as_str() {
                    Some("text") => {
                        if let Some(t) = cb["text"].as_str().filter(|t| !t.is_empty()) {
                            self.text.push_str(t);
                            deltas(Delta::Text(t));
                        }
                        Block::Text
                    }
                    Some("tool_use") => {
                        // `input` at start is `{}` and the real input streams as partial_json,
                        // or (programmatic tool calls) it is the whole input and nothing streams.
                        Block::ToolUse {
                            id: cb["id"].as_str().unwrap_or_default().to_string(),
                            name: cb["name"].as_str().unwrap_or_default().to_string(),
                            json: String::new(),
                            start: cb["input"].clone(),
                        }
                    }
                    Some("thinking") => {
                        let text = cb["thinking"].as_str().unwrap_or_default();
                        if !text.is_empty() {
                            deltas(Delta::Reasoning(text));
                        }
                        Block::Thinking(Reasoning {
                            text: text.to_string(),
                            signature: cb["signature"]
                                .as_str()
                                .filter(|s| !s.is_empty())
                                .map(str::to_string),
                            ..Reasoning::default()
                        })
                    }
                    Some("redacted_thinking") => {
                        Block::Redacted(cb["data"].as_str().unwrap_or_default().to_string())
                    }
                    _ => Block::Provider {
                        block: cb.clone(),
                        json: String::new(),
                    },
                };
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().unwrap_or(0);
                let d = &data["delta"];
                let block = self.blocks.iter_mut().find(|(i, _)| *i == index);
                match (d["type"].as_str(), block) {
                    (Some("text_delta"), _) => {
                        if let Some(t) = d["text"].as_str() {
                            self.text.push_str(t);
                            deltas(Delta::Text(t));
                        }
                    }
                    (Some("thinking_delta"), Some((_, Block::Thinking(r)))) => {
                        if let Some(t) = d["thinking"].as_str().filter(|t| !t.is_empty()) {
                            r.text.push_str(t);
                            deltas(Delta::Reasoning(t));
                        }
                    }
                    (Some("signature_delta"), Some((_, Block::Thinking(r)))) => {
                        if let Some(sig) = d["signature"].as_str() {
                            r.signature.get_or_insert_with(String::new).push_str(sig);
                        }
                    }
                    (
                        Some("input_json_delta"),
                        Some((_, Block::ToolUse { json, .. } | Block::Provider { json, .. })),
                    ) => {
                        json.push_str(d["partial_json"].as_str().unwrap_or_default());
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = data["index"].as_u64().unwrap_or(0);
                if let Some(pos) = self.blocks.iter().position(|(i, _)| *i == index) {
                    let (_, block) = self.blocks.remove(pos);
                    let calls = self.calls.len();
                    self.complete(block);
                    // A call's block is over: its arguments are complete now (unless the reply
                    // was cut inside them: then they are not whole JSON, and the call waits for
                    // the reply's end like any other).
                    if let Some(call) = self.calls.get(calls).filter(|c| c.whole()) {
                        deltas(Delta::Call(call));
                    }
                }
            }
            "message_delta" => {
                self.usage.read(&data["usage"]);
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    self.stop = stop_reason(reason);
                    self.paused = reason == "pause_turn";
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                return Err(Failure::Fatal(format!(
                    "the model server sent an error: {}",
                    data["error"]
                )))
            }
            _ => {} // ping and future event types
        }
        Ok(())
    }

    /// A streamed block is complete.
    fn complete(&mut self, block: Block) {
        match block {
            Block::ToolUse {
                id,
                name,
                json,
                start,
            } => {
                let whole_at_start =
                    json.is_empty() && start.as_object().is_some_and(|o| !o.is_empty());
                self.calls.push(RawCall {
                    id: Some(id),
                    name,
                    arguments: if whole_at_start {
                        start.to_string()
                    } else {
                        json
                    },
                });
            }
            Block::Thinking(r) => self.extra.push((self.calls.len(), Part::Reasoning(r))),
            Block::Redacted(data) => self.extra.push((
                self.calls.len(),
                Part::Reasoning(Reasoning {
                    redacted: Some(data),
                    ..Reasoning::default()
                }),
            )),
            Block::Provider { mut block, json } => {
                if !json.is_empty() {
                    // Its input streamed: the whole input replaces the start's `{}` (kept as
                    // text when it is not JSON, so nothing is lost).
                    block["input"] = serde_json::from_str(&json).unwrap_or(Value::String(json));
                }
                if block.is_object() {
                    self.extra.push((
                        self.calls.len(),
                        Part::Provider(ProviderBlock {
                            style: "anthropic".into(),
                            block,
                        }),
                    ));
                }
            }
            Block::Text => {}
        }
    }

    /// Read a whole (non-streamed) message.
    fn whole(&mut self, msg: &Value, deltas: DeltaSink<'_>) {
        for block in msg["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => {
                    let t = block["text"].as_str().unwrap_or_default();
                    self.text.push_str(t);
                    deltas(Delta::Text(t));
                }
                Some("thinking") => {
                    let text = block["thinking"].as_str().unwrap_or_default();
                    if !text.is_empty() {
                        deltas(Delta::Reasoning(text));
                    }
                    self.complete(Block::Thinking(Reasoning {
                        text: text.to_string(),
                        signature: block["signature"].as_str().map(str::to_string),
                        ..Reasoning::default()
                    }));
                }
                Some("redacted_thinking") => self.complete(Block::Redacted(
                    block["data"].as_str().unwrap_or_default().to_string(),
                )),
                Some("tool_use") => self.calls.push(RawCall {
                    id: block["id"].as_str().map(str::to_string),
                    name: block["name"].as_str().unwrap_or_default().to_string(),
                    arguments: block["input"].to_string(),
                }),
                Some(_) => self.complete(Block::Provider {
                    block: block.clone(),
                    json: String::new(),
                }),
                None => {}
            }
        }
        self.usage.read(&msg["usage"]);
        self.stop = msg["stop_reason"].as_str().and_then(stop_reason);
        self.paused = msg["stop_reason"] == "pause_turn";
        self.stopped = true;
    }

    fn finish(self) -> ModelResponse {
        ModelResponse {
            paused: self.paused,
            stop: self.stop,
            extra: self.extra,
            text: self.text,
            calls: self.calls,
            usage: self.usage.usage(),
        }
    }
}

#[async_trait]
impl Backend for Anthropic {
    fn body(&self, req: &ModelRequest<'_>) -> RequestBody {
        render(
            req.model.unwrap_or(&self.model),
            self.max_tokens,
            self.cache,
            req,
        )
    }

    async fn send(
        &self,
        body: &RequestBody,
        deltas: DeltaSink<'_>,
    ) -> Result<ModelResponse, Failure> {
        let resp = self.http.post("/v1/messages", &self.headers, body).await?;
        let idle = self.http.idle_timeout;
        let mut asm = Assembler::default();
        if !is_event_stream(&resp.resp) {
            let bytes = read_whole(resp, MAX_BODY_BYTES, idle).await?;
            let whole: Value = serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Fatal(format!("the model server's answer is not JSON: {e}"))
            })?;
            asm.whole(&whole, deltas);
            return Ok(asm.finish());
        }
        read_sse(resp, idle, |ev| {
            let Some(text) = ev.data.filter(|d| !d.trim().is_empty()) else {
                return Ok(Progress::KeepAlive);
            };
            let data: Value = serde_json::from_str(&text).map_err(|e| {
                Failure::Fatal(format!("malformed stream event ({e}): {text:.200}"))
            })?;
            let kind = match ev.event {
                Some(kind) if !kind.is_empty() && kind != "message" => kind,
                _ => data["type"].as_str().unwrap_or_default().to_string(),
            };
            asm.event(&kind, &data, deltas)?;
            Ok(if asm.stopped {
                Progress::Done
            } else if kind == "ping" {
                // The server's keep-alive: it says the connection lives, not that the answer
                // moves on.
                Progress::KeepAlive
            } else {
                Progress::Data
            })
        })
        .await?;
        if !asm.stopped {
            return Err(Failure::Fatal(
                "the model's answer broke off: the stream ended before message_stop".into(),
            ));
        }
        Ok(asm.finish())
    }

    fn redact(&self, text: &str) -> String {
        self.http.redactor.redact(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Message, ToolCall};
    use serde_json::json;

    /// The rendered body read back, for the tests that look at its parts.
    fn body(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> Value {
        serde_json::from_slice(&render(model, max_tokens, false, req)).unwrap()
    }

    #[test]
    fn the_body_bytes_are_those_of_the_value_rendering() {
        use crate::model::value_body::{anthropic, anthropic_cached, assert_same_bytes};
        assert_same_bytes(anthropic, |m, t, r| render(m, t, false, r));
        assert_same_bytes(anthropic_cached, |m, t, r| render(m, t, true, r));
    }

    #[test]
    fn roles_alternate_and_raw_arguments_become_empty_input() {
        let messages = vec![
            Message::user("hi"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "t1".into(),
                    name: "echo".into(),
                    arguments: Value::String("{oops".into()),
                    raw_arguments: true,
                    via: None,
                }],
            ),
            Message::tool_result("t1", "echo", "bad", true),
            Message::user("again"),
        ];
        let body = body(
            "m",
            10,
            &ModelRequest {
                system: Some("sys"),
                model: None,
                messages: &messages,
                tools: &[],
                settings: &crate::settings::ModelSettings::default(),
                images: None,
                output: None,
            },
        );
        let msgs = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(msgs[1]["content"][0]["input"], json!({}));
        assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
        assert_eq!(msgs[2]["content"][0]["is_error"], true);
        assert_eq!(msgs[2]["content"][1]["text"], "again");
        assert_eq!(body["system"], "sys");
        assert!(body.get("tools").is_none());
    }

    /// Feed `(event, data)` pairs; the response, the text deltas and the reasoning deltas.
    fn stream(events: &[Value]) -> (ModelResponse, String, String) {
        let text = std::sync::Mutex::new(String::new());
        let reasoning = std::sync::Mutex::new(String::new());
        let sink = |d: Delta<'_>| match d {
            Delta::Text(t) => text.lock().unwrap().push_str(t),
            Delta::Reasoning(t) => reasoning.lock().unwrap().push_str(t),
            Delta::Call(_) => {}
        };
        let mut asm = Assembler::default();
        for e in events {
            asm.event(e["type"].as_str().unwrap(), e, &sink).unwrap();
        }
        (
            asm.finish(),
            text.into_inner().unwrap(),
            reasoning.into_inner().unwrap(),
        )
    }

    #[test]
    fn thinking_signatures_and_redacted_blocks_are_kept_in_order() {
        let (r, text, reasoning) = stream(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "look."}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQB+/="}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "ENC=="}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "t1", "name": "read", "input": {}}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":"}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"a\"}"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "thinking_delta", "thinking": "Then b."}}),
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "signature_delta", "signature": "SIG2"}}),
            json!({"type": "content_block_stop", "index": 3}),
            json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "b"}}}),
            json!({"type": "content_block_stop", "index": 4}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
            json!({"type": "message_stop"}),
        ]);
        assert_eq!(text, "");
        assert_eq!(reasoning, "Let me look.Then b.");
        let signed = |t: &str, s: &str| Reasoning {
            text: t.into(),
            signature: Some(s.into()),
            ..Reasoning::default()
        };
        assert_eq!(
            r.extra,
            [
                (0, Part::Reasoning(signed("Let me look.", "EqQB+/="))),
                (
                    0,
                    Part::Reasoning(Reasoning {
                        redacted: Some("ENC==".into()),
                        ..Reasoning::default()
                    })
                ),
                (1, Part::Reasoning(signed("Then b.", "SIG2"))),
            ]
        );
        // The first input streamed, the second came whole in content_block_start.
        let args: Vec<&str> = r.calls.iter().map(|c| c.arguments.as_str()).collect();
        assert_eq!(args, [r#"{"path":"a"}"#, r#"{"path":"b"}"#]);
        // In the transcript: each thinking block before the call it preceded.
        let calls = r
            .calls
            .iter()
            .map(|c| crate::transcript::ToolCall {
                id: c.id.clone().unwrap(),
                name: c.name.clone(),
                arguments: serde_json::from_str(&c.arguments).unwrap(),
                raw_arguments: false,
                via: None,
            })
            .collect();
        let m = Message::assistant_with("", calls, r.extra.clone());
        let kinds: Vec<&str> = m
            .content()
            .iter()
            .map(|p| match p {
                Part::Reasoning(r) if r.redacted.is_some() => "redacted",
                Part::Reasoning(_) => "thinking",
                Part::ToolCall(_) => "call",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["thinking", "redacted", "call", "thinking", "call"]);
    }

    #[test]
    fn a_second_message_start_drops_the_unfinished_message() {
        let (r, _, _) = stream(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "half"}}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\": "}}),
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 7}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t2", "name": "f", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"b\": 1}"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_stop"}),
        ]);
        assert_eq!(r.text, "");
        assert_eq!(r.calls.len(), 1);
        assert_eq!(r.calls[0].id.as_deref(), Some("t2"));
        assert_eq!(r.calls[0].arguments, r#"{"b": 1}"#);
        assert_eq!(r.usage.input_tokens, 7);
    }

    #[test]
    fn refusal_and_max_tokens_are_stop_reasons() {
        for (reason, stop) in [
            ("refusal", Some(StopReason::Refusal)),
            ("max_tokens", Some(StopReason::MaxTokens)),
            ("end_turn", None),
            ("tool_use", None),
        ] {
            let (r, _, _) = stream(&[
                json!({"type": "message_start", "message": {"usage": {}}}),
                json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {}}),
                json!({"type": "message_stop"}),
            ]);
            assert_eq!(r.stop, stop, "{reason}");
        }
    }

    #[test]
    fn server_blocks_are_kept_whole_never_calls_and_pause_turn_is_read() {
        let (r, text, _) = stream(&[
            json!({"type": "message_start", "message": {"usage": {}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"rust\"}"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": [{"type": "web_search_result", "url": "https://x"}]}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "a_block_of_next_year", "x": 1}}),
            json!({"type": "content_block_delta", "index": 2, "delta": {"type": "a_delta_of_next_year"}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {}}),
            json!({"type": "message_stop"}),
        ]);
        assert_eq!(text, "");
        assert!(r.calls.is_empty());
        assert!(r.paused);
        assert_eq!(r.stop, None);
        let blocks: Vec<&Value> = r
            .extra
            .iter()
            .map(|(_, p)| match p {
                Part::Provider(b) => {
                    assert_eq!(b.style, "anthropic");
                    &b.block
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            *blocks[0],
            json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "rust"}})
        );
        assert_eq!(blocks[1]["type"], "web_search_tool_result");
        assert_eq!(blocks[2]["type"], "a_block_of_next_year");
    }

    #[test]
    fn a_whole_message_keeps_its_thinking() {
        let mut asm = Assembler::default();
        let sink = |_: Delta<'_>| {};
        asm.whole(
            &json!({"content": [
                {"type": "thinking", "thinking": "hm", "signature": "S"},
                {"type": "redacted_thinking", "data": "D"},
                {"type": "text", "text": "ok"}], "usage": {}}),
            &sink,
        );
        let r = asm.finish();
        assert_eq!(r.extra.len(), 2);
        assert_eq!(r.text, "ok");
    }

    #[test]
    fn cached_prompt_tokens_count_as_input() {
        // What llama.cpp's llama-server and the real API send when the prompt came from cache.
        let mut asm = Assembler::default();
        let sink = |_: Delta<'_>| {};
        asm.event(
            "message_start",
            &json!({"message": {"usage": {"input_tokens": 1, "cache_read_input_tokens": 24,
                                          "cache_creation_input_tokens": 3, "output_tokens": 0}}}),
            &sink,
        )
        .unwrap();
        asm.event(
            "message_delta",
            &json!({"usage": {"output_tokens": 17}}),
            &sink,
        )
        .unwrap();
        let u = asm.finish().usage;
        assert_eq!(
            u,
            Usage {
                input_tokens: 28,
                output_tokens: 17,
                cache_read_input_tokens: 24,
                cache_creation_input_tokens: 3,
            }
        );
        // A whole (non-streamed) message reads the same fields.
        let mut asm = Assembler::default();
        asm.whole(
            &json!({"content": [], "usage": {"input_tokens": 2, "cache_read_input_tokens": 8,
                                             "output_tokens": 1}}),
            &sink,
        );
        assert_eq!(asm.finish().usage.input_tokens, 10);
    }

    #[test]
    fn an_empty_reply_is_left_out_and_the_user_turns_around_it_merge() {
        let messages = vec![
            Message::user("first"),
            Message::assistant("", vec![]),
            Message::user("second"),
            Message::assistant(
                " \n",
                vec![ToolCall {
                    id: "t1".into(),
                    name: "echo".into(),
                    arguments: json!({}),
                    raw_arguments: false,
                    via: None,
                }],
            ),
            Message::tool_result("t1", "echo", "", false),
            Message::user("  "),
        ];
        let body = body(
            "m",
            10,
            &ModelRequest {
                system: None,
                model: None,
                messages: &messages,
                tools: &[],
                settings: &crate::settings::ModelSettings::default(),
                images: None,
                output: None,
            },
        );
        let msgs = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"], "{body}");
        let texts: Vec<&str> = msgs[0]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"].as_str().unwrap())
            .collect();
        assert_eq!(texts, ["first", "second"]);
        // The whitespace-only text before the call is gone; the call stays.
        assert_eq!(msgs[1]["content"].as_array().unwrap().len(), 1);
        assert_eq!(msgs[1]["content"][0]["type"], "tool_use");
        // No message and no block is empty or whitespace-only.
        for m in msgs {
            let blocks = m["content"].as_array().unwrap();
            assert!(!blocks.is_empty(), "{body}");
            for b in blocks {
                if b["type"] == "text" {
                    assert!(!b["text"].as_str().unwrap().trim().is_empty(), "{body}");
                }
            }
        }
    }
}
