//! OpenAI Responses over SSE (`openai-responses`): OpenAI's API for its reasoning models, also
//! served by vLLM, llama.cpp, LM Studio and Ollama.
//!
//! The answer streams as typed events (`response.output_text.delta`,
//! `response.output_item.added` / `.done`, `response.function_call_arguments.delta`,
//! `response.reasoning_summary_text.delta`, ..., ended by `response.completed`,
//! `response.incomplete`, `response.failed` or `error`). Text and reasoning stream as they come;
//! a `function_call` item is a whole call when its `output_item.done` arrives (announced then,
//! for tools that start early). A `reasoning` item is kept whole, as the server sent it (its
//! `encrypted_content` included), as a provider part of this style, and its summary as a
//! reasoning part; the body ([`super::responses_body`]) sends the item back on the next request.
//!
//! Items of the kinds the server runs itself or the engine never offers (web, file and code
//! search, image generation, MCP, shell, custom tools) are not kept: the engine did not ask
//! for them, cannot run them, and sending back a call without its output would be refused. The
//! text the model wrote about them is kept.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::body::{read_sse, read_whole, Progress, MAX_BODY_BYTES};
use super::endpoint::BearerEndpoint;
use super::http::Http;
use super::lenient::{Obj, Str, U64};
use super::openai::is_event_stream;
use super::responses_body::{render, STYLE};
use super::{
    Backend, Delta, DeltaSink, Failure, ModelRequest, ModelResponse, RawCall, RequestBody,
};
use crate::config::Config;
use crate::event::{StopReason, Usage};
use crate::transcript::{Part, ProviderBlock, Reasoning};

pub(crate) struct Responses {
    endpoint: BearerEndpoint,
}

impl Responses {
    pub fn new(http: Http, config: &Config) -> Self {
        Responses {
            endpoint: BearerEndpoint::new(http, config),
        }
    }
}

/// One streamed event, its fields read leniently (a field of the wrong type reads as absent).
/// `item` and `response` are kept as JSON: a reasoning item goes back to the server whole.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(borrow)]
    delta: Str<'a>,
    #[serde(borrow)]
    item_id: Str<'a>,
    output_index: U64,
    summary_index: U64,
    /// `response.function_call_arguments.done`: the whole arguments.
    #[serde(borrow)]
    arguments: Str<'a>,
    item: Option<Value>,
    response: Option<Value>,
    /// An `error` event's fields.
    #[serde(borrow)]
    code: Str<'a>,
    #[serde(borrow)]
    message: Str<'a>,
}

/// An output item being streamed.
#[derive(Debug)]
enum Open {
    /// A function call: its id (`call_id`), name and arguments so far.
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// A reasoning item: the text streamed for it, and the summary part it is in.
    Reasoning { text: String, summary: Option<u64> },
    /// A message: whether any of its text streamed.
    Message { streamed: bool },
    /// An item the engine does not read.
    Other,
}

/// The state of one streamed answer.
#[derive(Default)]
pub(crate) struct Assembler {
    text: String,
    calls: Vec<RawCall>,
    /// The items being streamed: output index, item id, state.
    open: Vec<(u64, Option<String>, Open)>,
    /// Reasoning and kept items, each with the number of calls before it.
    extra: Vec<(usize, Part)>,
    usage: Usage,
    finished: bool,
    stop: Option<StopReason>,
}

/// How much of an unknown or failing event an error message quotes.
const QUOTE: usize = 200;

impl Assembler {
    /// Read one event from its JSON text.
    pub fn event_text(&mut self, text: &str, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        let event: Obj<Event<'_>> = serde_json::from_str(text).map_err(|e| {
            Failure::Fatal(format!(
                "malformed stream event ({e}): {}",
                cut(text, QUOTE)
            ))
        })?;
        // JSON that is not an object is no event of this API: nothing to read.
        match event {
            Obj(Some(event)) => self.read(event, deltas),
            Obj(None) => Ok(()),
        }
    }

    fn read(&mut self, ev: Event<'_>, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        let Some(kind) = ev.kind.get() else {
            // Not an event of this API (a keep-alive object, a stray value): nothing to read.
            return Ok(());
        };
        match kind {
            "response.output_item.added" => {
                if let Some(item) = &ev.item {
                    self.item_added(ev.output_index.0, item);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let text = ev.delta.get().unwrap_or("");
                if kind == "response.refusal.delta" && !text.is_empty() {
                    self.stop = Some(StopReason::Refusal);
                }
                match self.find(&ev) {
                    Some(Open::Message { streamed }) => *streamed = true,
                    Some(_) => {}
                    // Text for a message never announced: remembered as streamed, so its done
                    // item does not give the text again.
                    None => self.open.push((
                        ev.output_index.0.unwrap_or(u64::MAX),
                        ev.item_id.get().map(str::to_string),
                        Open::Message { streamed: true },
                    )),
                }
                self.say(text, deltas);
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let summary = (kind == "response.reasoning_summary_text.delta")
                    .then_some(ev.summary_index.0.unwrap_or(0));
                let text = ev.delta.get().unwrap_or("");
                self.reason(&ev, summary, text, deltas);
            }
            "response.function_call_arguments.delta" => {
                if let Some(Open::Call { arguments, .. }) = self.find(&ev) {
                    arguments.push_str(ev.delta.get().unwrap_or(""));
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(whole), Some(Open::Call { arguments, .. })) =
                    (ev.arguments.get(), self.find(&ev))
                {
                    whole.clone_into(arguments);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = ev.item {
                    self.item_done(ev.output_index.0, item, deltas);
                }
            }
            "response.completed" | "response.incomplete" => {
                self.finished = true;
                if let Some(response) = &ev.response {
                    self.usage = usage(&response["usage"]);
                    if kind == "response.incomplete" {
                        self.stop = Some(match response["incomplete_details"]["reason"].as_str() {
                            Some("content_filter") => StopReason::ContentFilter,
                            _ => StopReason::MaxTokens,
                        });
                    }
                }
            }
            "response.failed" => {
                let error = ev.response.as_ref().map(|r| &r["error"]);
                return Err(Failure::Fatal(format!(
                    "the model server sent an error: {}",
                    error_text(error.unwrap_or(&Value::Null))
                )));
            }
            "error" => {
                let code = ev.code.get().map(|c| format!(" ({c})")).unwrap_or_default();
                return Err(Failure::Fatal(format!(
                    "the model server sent an error{code}: {}",
                    cut(ev.message.get().unwrap_or("no message"), 2_000)
                )));
            }
            // `response.created`, `.in_progress`, `.content_part.*`, `.output_text.done`,
            // annotations, and the progress events of tools the server runs: nothing the answer
            // needs.
            _ => {}
        }
        Ok(())
    }

    /// The open item an event is about: by its output index, else by its item id.
    fn find(&mut self, ev: &Event<'_>) -> Option<&mut Open> {
        let id = ev.item_id.get();
        let at = self.open.iter().position(|(index, item_id, _)| {
            ev.output_index.0 == Some(*index) || (id.is_some() && item_id.as_deref() == id)
        })?;
        Some(&mut self.open[at].2)
    }

    fn item_added(&mut self, index: Option<u64>, item: &Value) {
        let index = index.unwrap_or(self.open.len() as u64);
        let open = match item["type"].as_str() {
            Some("function_call") => Open::Call {
                call_id: str_of(&item["call_id"]).to_string(),
                name: str_of(&item["name"]).to_string(),
                arguments: str_of(&item["arguments"]).to_string(),
            },
            Some("reasoning") => Open::Reasoning {
                text: String::new(),
                summary: None,
            },
            Some("message") => Open::Message { streamed: false },
            _ => Open::Other,
        };
        let id = item["id"].as_str().map(str::to_string);
        // A second `added` for the same index restarts that item.
        self.open.retain(|(i, _, _)| *i != index);
        self.open.push((index, id, open));
    }

    /// An item is complete: a call is whole, a reasoning item is kept, a message whose text did
    /// not stream gives its text now.
    fn item_done(&mut self, index: Option<u64>, item: Value, deltas: DeltaSink<'_>) {
        let id = item["id"].as_str();
        let at = self.open.iter().position(|(i, item_id, _)| {
            index == Some(*i) || (id.is_some() && item_id.as_deref() == id)
        });
        let open = at.map(|at| self.open.remove(at).2);
        match item["type"].as_str() {
            Some("function_call") => {
                let (mut call_id, mut name, mut arguments) = match open {
                    Some(Open::Call {
                        call_id,
                        name,
                        arguments,
                    }) => (call_id, name, arguments),
                    _ => Default::default(),
                };
                // The done item is the whole call; what streamed fills in what it lacks.
                if let Some(v) = item["call_id"].as_str().filter(|v| !v.is_empty()) {
                    v.clone_into(&mut call_id);
                }
                if let Some(v) = item["name"].as_str().filter(|v| !v.is_empty()) {
                    v.clone_into(&mut name);
                }
                if let Some(v) = item["arguments"].as_str() {
                    v.clone_into(&mut arguments);
                }
                let call = RawCall {
                    id: (!call_id.is_empty()).then_some(call_id),
                    name,
                    arguments,
                };
                if !call.name.is_empty() && call.whole() {
                    deltas(Delta::Call(&call));
                }
                self.calls.push(call);
            }
            Some("reasoning") => {
                let mut text = match open {
                    Some(Open::Reasoning { text, .. }) => text,
                    _ => String::new(),
                };
                if text.is_empty() {
                    // Nothing streamed: the summary (or the reasoning text) the item holds.
                    text = item_reasoning_text(&item);
                    if !text.is_empty() {
                        deltas(Delta::Reasoning(&text));
                    }
                }
                let at = self.calls.len();
                self.extra.push((
                    at,
                    Part::Provider(ProviderBlock {
                        style: STYLE.to_string(),
                        block: item,
                    }),
                ));
                if !text.is_empty() {
                    self.extra.push((
                        at,
                        Part::Reasoning(Reasoning {
                            text,
                            ..Reasoning::default()
                        }),
                    ));
                }
            }
            // A message whose text streamed is done already; one whose did not gives it now.
            Some("message") if !matches!(open, Some(Open::Message { streamed: true })) => {
                for part in item["content"].as_array().into_iter().flatten() {
                    match part["type"].as_str() {
                        Some("output_text") => self.say(str_of(&part["text"]), deltas),
                        Some("refusal") => {
                            self.say(str_of(&part["refusal"]), deltas);
                            self.stop = Some(StopReason::Refusal);
                        }
                        _ => {}
                    }
                }
            }
            // Items the engine does not run (see the module's doc): not kept.
            _ => {}
        }
    }

    fn say(&mut self, text: &str, deltas: DeltaSink<'_>) {
        if text.is_empty() {
            return;
        }
        self.text.push_str(text);
        deltas(Delta::Text(text));
    }

    /// Reasoning text for the open reasoning item the event names; a new summary part of the
    /// same item begins after a blank line.
    fn reason(&mut self, ev: &Event<'_>, summary: Option<u64>, text: &str, deltas: DeltaSink<'_>) {
        if text.is_empty() {
            return;
        }
        let open = match self.find(ev) {
            Some(open @ Open::Reasoning { .. }) => open,
            // Reasoning for an item that was never announced: it starts here.
            _ => {
                let index = ev.output_index.0.unwrap_or(u64::MAX);
                let id = ev.item_id.get().map(str::to_string);
                self.open.push((
                    index,
                    id,
                    Open::Reasoning {
                        text: String::new(),
                        summary: None,
                    },
                ));
                // Cannot fail: pushed just above.
                &mut self.open.last_mut().expect("just pushed").2
            }
        };
        let Open::Reasoning {
            text: so_far,
            summary: part,
        } = open
        else {
            return;
        };
        if let Some(n) = summary {
            if part.is_some_and(|p| p != n) && !so_far.is_empty() {
                so_far.push_str(SUMMARY_BREAK);
                deltas(Delta::Reasoning(SUMMARY_BREAK));
            }
            *part = Some(n);
        }
        so_far.push_str(text);
        deltas(Delta::Reasoning(text));
    }

    pub fn finish(mut self) -> ModelResponse {
        // Reasoning whose item never completed (a stream cut after `completed`): its text is
        // kept, with no item to send back.
        for (_, _, open) in self.open.drain(..) {
            if let Open::Reasoning { text, .. } = open {
                if !text.is_empty() {
                    self.extra.push((
                        self.calls.len(),
                        Part::Reasoning(Reasoning {
                            text,
                            ..Reasoning::default()
                        }),
                    ));
                }
            }
        }
        ModelResponse {
            text: self.text,
            calls: self.calls,
            extra: self.extra,
            usage: self.usage,
            stop: self.stop,
            paused: false,
        }
    }
}

/// What separates two summary parts of one reasoning item.
const SUMMARY_BREAK: &str = "\n\n";

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// A reasoning item's text: its summary parts, or else its reasoning text parts.
fn item_reasoning_text(item: &Value) -> String {
    let texts = |key: &str| -> Vec<&str> {
        item[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .filter(|t| !t.is_empty())
            .collect()
    };
    let summary = texts("summary");
    if !summary.is_empty() {
        return summary.join(SUMMARY_BREAK);
    }
    texts("content").concat()
}

/// The usage of a `response` object: `input_tokens` (the whole prompt), of which
/// `input_tokens_details.cached_tokens` were read from the cache, and `output_tokens`, of which
/// `output_tokens_details.reasoning_tokens` were spent reasoning.
fn usage(u: &Value) -> Usage {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let input = n(&u["input_tokens"]);
    let output = n(&u["output_tokens"]);
    Usage {
        input_tokens: input,
        output_tokens: output,
        // Never more than the whole, whatever a server claims.
        cache_read_input_tokens: n(&u["input_tokens_details"]["cached_tokens"]).min(input),
        cache_creation_input_tokens: 0,
        reasoning_tokens: n(&u["output_tokens_details"]["reasoning_tokens"]).min(output),
    }
}

/// An error object's message (and code), cut.
fn error_text(error: &Value) -> String {
    let message = error["message"]
        .as_str()
        .map(|m| cut(m, 2_000).to_string())
        .unwrap_or_else(|| cut(&error.to_string(), 2_000).to_string());
    match error["code"].as_str() {
        Some(code) => format!("{message} ({code})"),
        None => message,
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[async_trait]
impl Backend for Responses {
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
            .post("/responses", &self.endpoint.auth, body)
            .await?;
        let idle = self.endpoint.http.idle_timeout;
        let mut asm = Assembler::default();
        if !is_event_stream(&resp.resp) {
            // A server that ignores `stream: true` answers with the whole response object.
            let bytes = read_whole(resp, MAX_BODY_BYTES, idle).await?;
            let whole: Value = std::str::from_utf8(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|text| serde_json::from_str(text).map_err(|e| e.to_string()))
                .map_err(|e| {
                    Failure::Fatal(format!("the model server's answer is not JSON: {e}"))
                })?;
            asm.whole(whole, deltas)?;
            return Ok(asm.finish());
        }
        read_sse(resp, idle, |ev| {
            let Some(data) = ev.data else {
                return Ok(Progress::KeepAlive);
            };
            let data = data.trim();
            if data.is_empty() {
                return Ok(Progress::KeepAlive);
            }
            if data == "[DONE]" {
                return Ok(Progress::Done);
            }
            asm.event_text(data, deltas)?;
            Ok(if asm.finished {
                Progress::Done
            } else {
                Progress::Data
            })
        })
        .await?;
        if !asm.finished {
            return Err(Failure::Fatal(
                "the model's answer broke off: the stream ended before the response was complete"
                    .into(),
            ));
        }
        Ok(asm.finish())
    }

    fn redact(&self, text: &str) -> String {
        self.endpoint.http.redactor.redact(text)
    }
}

impl Assembler {
    /// Read a whole (not streamed) response object: its output items in order, then its end.
    fn whole(&mut self, response: Value, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        if !response["error"].is_null() {
            return Err(Failure::Fatal(format!(
                "the model server sent an error: {}",
                error_text(&response["error"])
            )));
        }
        let Value::Object(mut fields) = response else {
            return Err(Failure::Fatal(
                "the model server's answer is not a response object".into(),
            ));
        };
        let output = fields.remove("output");
        for (i, item) in output
            .and_then(|o| match o {
                Value::Array(items) => Some(items),
                _ => None,
            })
            .into_iter()
            .flatten()
            .enumerate()
        {
            self.item_done(Some(i as u64), item, deltas);
        }
        let response = Value::Object(fields);
        self.usage = usage(&response["usage"]);
        match response["status"].as_str() {
            Some("incomplete") => {
                self.stop = Some(match response["incomplete_details"]["reason"].as_str() {
                    Some("content_filter") => StopReason::ContentFilter,
                    _ => StopReason::MaxTokens,
                })
            }
            Some("failed") => {
                return Err(Failure::Fatal(
                    "the model server answered with a failed response".into(),
                ))
            }
            _ => {}
        }
        self.finished = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    /// What a stream of events gave: the response, the text and reasoning deltas joined, the
    /// calls announced while streaming.
    struct Seen {
        response: ModelResponse,
        text: String,
        reasoning: String,
        announced: Vec<RawCall>,
    }

    fn run(events: &[Value]) -> Result<Seen, Failure> {
        let text = Mutex::new(String::new());
        let reasoning = Mutex::new(String::new());
        let announced = Mutex::new(Vec::new());
        let sink = |d: Delta<'_>| match d {
            Delta::Text(t) => text.lock().unwrap().push_str(t),
            Delta::Reasoning(t) => reasoning.lock().unwrap().push_str(t),
            Delta::Call(c) => announced.lock().unwrap().push(c.clone()),
        };
        let mut asm = Assembler::default();
        for e in events {
            asm.event_text(&e.to_string(), &sink)?;
        }
        assert!(asm.finished, "the stream was not finished");
        Ok(Seen {
            response: asm.finish(),
            text: text.into_inner().unwrap(),
            reasoning: reasoning.into_inner().unwrap(),
            announced: announced.into_inner().unwrap(),
        })
    }

    fn completed(usage: Value) -> Value {
        json!({"type": "response.completed", "response": {"status": "completed", "usage": usage}})
    }

    #[test]
    fn text_streams_and_usage_counts_cached_and_reasoning_tokens() {
        let seen = run(&[
            json!({"type": "response.created", "response": {"id": "resp_1", "output": []}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "message", "id": "msg_1", "content": [], "role": "assistant"}}),
            json!({"type": "response.content_part.added", "output_index": 0, "content_index": 0}),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "Hel"}),
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "lo"}),
            json!({"type": "response.output_text.done", "output_index": 0, "text": "Hello"}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "message", "id": "msg_1", "role": "assistant",
                            "content": [{"type": "output_text", "text": "Hello"}]}}),
            completed(json!({"input_tokens": 20, "input_tokens_details": {"cached_tokens": 16},
                             "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 4}})),
        ])
        .unwrap();
        // The done item's text is not given twice.
        assert_eq!(
            (seen.text.as_str(), seen.response.text.as_str()),
            ("Hello", "Hello")
        );
        let u = seen.response.usage;
        assert_eq!(
            (
                u.input_tokens,
                u.cache_read_input_tokens,
                u.output_tokens,
                u.reasoning_tokens
            ),
            (20, 16, 9, 4)
        );
        assert!(seen.response.extra.is_empty() && seen.response.calls.is_empty());
        assert_eq!(seen.response.stop, None);
    }

    #[test]
    fn reasoning_is_kept_whole_and_a_call_is_announced_when_its_item_is_done() {
        let reasoning_item = json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA-secret",
            "summary": [{"type": "summary_text", "text": "Add them."}, {"type": "summary_text", "text": "Then check."}]});
        let seen = run(&[
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Add "}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "them."}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 1, "delta": "Then check."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item}),
            json!({"type": "response.output_item.added", "output_index": 1,
                   "item": {"type": "function_call", "id": "fc_1", "call_id": "call_A", "name": "add", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"a\":"}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "1}"}),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"a\":1}"}),
            json!({"type": "response.output_item.done", "output_index": 1,
                   "item": {"type": "function_call", "id": "fc_1", "call_id": "call_A", "name": "add", "arguments": "{\"a\":1}", "status": "completed"}}),
            json!({"type": "response.output_item.added", "output_index": 2,
                   "item": {"type": "function_call", "id": "fc_2", "call_id": "call_B", "name": "add", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"a\":2}"}),
            json!({"type": "response.output_item.done", "output_index": 2,
                   "item": {"type": "function_call", "id": "fc_2", "call_id": "call_B", "name": "add"}}),
            completed(json!({"input_tokens": 5, "output_tokens": 50})),
        ])
        .unwrap();
        assert_eq!(seen.reasoning, "Add them.\n\nThen check.");
        let calls: Vec<(Option<&str>, &str, &str)> = seen
            .response
            .calls
            .iter()
            .map(|c| (c.id.as_deref(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        // The call's id is its `call_id` (what its output names); arguments streamed are kept
        // when the done item has none.
        assert_eq!(
            calls,
            [
                (Some("call_A"), "add", "{\"a\":1}"),
                (Some("call_B"), "add", "{\"a\":2}")
            ]
        );
        assert_eq!(seen.announced, seen.response.calls);
        // The item goes back whole, as this style's provider part; its summary is the reasoning.
        assert_eq!(
            seen.response.extra,
            [
                (
                    0,
                    Part::Provider(ProviderBlock {
                        style: STYLE.into(),
                        block: reasoning_item
                    })
                ),
                (
                    0,
                    Part::Reasoning(Reasoning {
                        text: "Add them.\n\nThen check.".into(),
                        ..Reasoning::default()
                    })
                )
            ]
        );
        assert_eq!(
            seen.response.reasoning_texts().collect::<Vec<_>>(),
            ["Add them.\n\nThen check."]
        );
    }

    #[test]
    fn items_that_only_arrive_done_give_their_text_and_reasoning() {
        // A server that streams no deltas (LM Studio's first versions): the done items hold it.
        let seen = run(&[
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "reasoning", "id": "rs", "summary": [],
                            "content": [{"type": "reasoning_text", "text": "thinking"}]}}),
            json!({"type": "response.output_item.done", "output_index": 1,
                   "item": {"type": "message", "content": [{"type": "output_text", "text": "4"},
                            {"type": "refusal", "refusal": " no"}]}}),
            json!({"type": "response.output_item.done", "output_index": 2,
                   "item": {"type": "web_search_call", "id": "ws", "status": "completed"}}),
            completed(json!(null)),
        ])
        .unwrap();
        assert_eq!(
            (seen.text.as_str(), seen.reasoning.as_str()),
            ("4 no", "thinking")
        );
        assert_eq!(seen.response.stop, Some(StopReason::Refusal));
        // The reasoning item is kept; the web search the server ran is not.
        assert_eq!(seen.response.extra.len(), 2);
        assert!(seen.response.usage.is_zero());
    }

    #[test]
    fn text_of_a_message_never_announced_is_not_given_twice() {
        let seen = run(&[
            json!({"type": "response.output_text.delta", "item_id": "msg", "output_index": 0, "delta": "Hi"}),
            json!({"type": "response.output_item.done", "output_index": 0,
                   "item": {"type": "message", "id": "msg", "content": [{"type": "output_text", "text": "Hi"}]}}),
            completed(json!(null)),
        ])
        .unwrap();
        assert_eq!(
            (seen.text.as_str(), seen.response.text.as_str()),
            ("Hi", "Hi")
        );
    }

    #[test]
    fn an_incomplete_response_stops_short_and_errors_end_the_answer() {
        let seen = run(&[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "cut"}),
            json!({"type": "response.incomplete", "response": {"status": "incomplete",
                   "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 1, "output_tokens": 2}}}),
        ])
        .unwrap();
        assert_eq!(seen.response.stop, Some(StopReason::MaxTokens));
        assert_eq!(seen.response.usage.output_tokens, 2);
        let filtered = run(&[json!({"type": "response.incomplete", "response": {
            "incomplete_details": {"reason": "content_filter"}}})])
        .unwrap();
        assert_eq!(filtered.response.stop, Some(StopReason::ContentFilter));

        let failed = run(&[
            json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "server_error", "message": "The model failed."}}}),
        ]);
        assert!(
            matches!(&failed, Err(Failure::Fatal(m)) if m == "the model server sent an error: The model failed. (server_error)"),
            "{:?}",
            failed.err()
        );
        let error = run(&[
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down", "param": null}),
        ]);
        assert!(
            matches!(&error, Err(Failure::Fatal(m)) if m == "the model server sent an error (rate_limit_exceeded): Slow down"),
            "{:?}",
            error.err()
        );
    }

    #[test]
    fn hostile_events_are_clear_errors_or_ignored_never_a_panic() {
        let sink = |_: Delta<'_>| {};
        // Broken JSON: a malformed event, quoted briefly.
        let long = format!(
            r#"{{"type": "response.output_text.delta", "delta": "{}"#,
            "x".repeat(10_000)
        );
        match Assembler::default().event_text(&long, &sink) {
            Err(Failure::Fatal(m)) => {
                assert!(m.starts_with("malformed stream event"), "{m}");
                assert!(m.len() < 1_000, "the error must not echo the event");
            }
            other => panic!("{other:?}"),
        }
        // Nesting deeper than the parser allows, where it skips and where it keeps JSON.
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        for text in [
            format!(r#"{{"type": "x", "unknown": {deep}}}"#),
            format!(r#"{{"type": "response.output_item.done", "item": {deep}}}"#),
        ] {
            match Assembler::default().event_text(&text, &sink) {
                Err(Failure::Fatal(m)) => assert!(m.starts_with("malformed stream event"), "{m}"),
                Ok(()) => {}
                other => panic!("{other:?}"),
            }
        }
        // Unknown events, fields of the wrong type, values that are not objects, events for
        // items never announced: read as nothing, or as what they plainly are.
        let mut asm = Assembler::default();
        for odd in [
            json!(5),
            json!("text"),
            json!({"type": 7}),
            json!({"type": "response.brand_new_event", "delta": "x"}),
            json!({"type": "response.output_text.delta", "delta": 3}),
            json!({"type": "response.output_item.added", "item": "not an item"}),
            json!({"type": "response.output_item.done", "item": {"type": "function_call", "arguments": 5}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 99, "delta": "{"}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "ghost", "delta": "boo"}),
            json!({"type": "response.completed", "response": {"usage": {"input_tokens": "many", "output_tokens": -1}}}),
        ] {
            asm.event_text(&odd.to_string(), &sink).unwrap();
        }
        let r = asm.finish();
        assert_eq!(r.text, "");
        // A done call without a name is still a call (the engine answers it with an error
        // result); the stray reasoning is kept as text only.
        assert_eq!(r.calls.len(), 1);
        assert_eq!(r.calls[0].name, "");
        assert_eq!(r.reasoning_texts().collect::<Vec<_>>(), ["boo"]);
        assert!(r.usage.is_zero());
        // Huge deltas are taken as they come (the SSE decoder caps each event and the stream).
        let big = "y".repeat(4 * 1024 * 1024);
        let seen = run(&[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": big}),
            completed(
                json!({"input_tokens": 1, "input_tokens_details": {"cached_tokens": 99},
                             "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 7}}),
            ),
        ])
        .unwrap();
        assert_eq!(seen.response.text.len(), big.len());
        // Cached and reasoning counts never exceed their whole.
        assert_eq!(
            (
                seen.response.usage.cache_read_input_tokens,
                seen.response.usage.reasoning_tokens
            ),
            (1, 1)
        );
    }

    #[test]
    fn mutated_streams_never_panic() {
        // A real-shaped stream, then thousands of corruptions of it (bytes changed, lines cut,
        // repeated or dropped): each ends in a response or a clear failure, never a panic.
        let stream: Vec<String> = [
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs", "output_index": 0, "summary_index": 0, "delta": "hé"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs", "encrypted_content": "e", "summary": [{"type": "summary_text", "text": "hé"}]}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc", "call_id": "c", "name": "f", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc", "output_index": 1, "delta": "{\"a\":"}),
            json!({"type": "response.function_call_arguments.done", "item_id": "fc", "output_index": 1, "arguments": "{\"a\":1}"}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc", "call_id": "c", "name": "f", "arguments": "{\"a\":1}"}}),
            json!({"type": "response.output_text.delta", "item_id": "m", "output_index": 2, "delta": "ok"}),
            completed(json!({"input_tokens": 3, "output_tokens": 2})),
        ]
        .iter()
        .map(Value::to_string)
        .collect();
        let sink = |_: Delta<'_>| {};
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..3_000 {
            let mut lines = stream.clone();
            for _ in 0..1 + next(3) {
                if lines.is_empty() {
                    break;
                }
                let at = next(lines.len());
                let mut bytes = lines[at].clone().into_bytes();
                match next(4) {
                    0 if !bytes.is_empty() => {
                        let i = next(bytes.len());
                        let table = b"{}[]\":,0a\\";
                        bytes[i] = table[next(table.len())];
                    }
                    1 => bytes.truncate(next(bytes.len() + 1)),
                    2 => lines.insert(at, lines[at].clone()),
                    _ => {
                        lines.remove(at);
                        continue;
                    }
                }
                lines[at] = String::from_utf8_lossy(&bytes).into_owned();
            }
            let mut asm = Assembler::default();
            let read: Result<(), Failure> = lines.iter().try_for_each(|l| asm.event_text(l, &sink));
            if read.is_ok() {
                let r = asm.finish();
                // At most a call, or a reasoning item and its text, per line.
                assert!(r.calls.len() + r.extra.len() <= 2 * lines.len(), "{r:?}");
            }
        }
    }

    #[test]
    fn a_whole_response_object_reads_as_its_stream_would() {
        let sink = |_: Delta<'_>| {};
        let mut asm = Assembler::default();
        asm.whole(
            json!({"id": "resp", "status": "completed", "output": [
                {"type": "reasoning", "id": "rs", "summary": [{"type": "summary_text", "text": "hm"}], "encrypted_content": "e"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "message", "content": [{"type": "output_text", "text": "ok"}]}],
                "usage": {"input_tokens": 3, "output_tokens": 2}}),
            &sink,
        )
        .unwrap();
        let r = asm.finish();
        assert_eq!(
            (r.text.as_str(), r.calls.len(), r.extra.len()),
            ("ok", 1, 2)
        );
        let err = Assembler::default()
            .whole(json!({"error": {"message": "bad key"}}), &sink)
            .unwrap_err();
        assert_eq!(
            err,
            Failure::Fatal("the model server sent an error: bad key".into())
        );
        assert!(Assembler::default().whole(json!([1]), &sink).is_err());
    }
}
