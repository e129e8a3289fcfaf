//! OpenAI Chat Completions over SSE (also every OpenAI-compatible server).

use async_trait::async_trait;
use serde::Deserialize;
#[cfg(test)]
use serde_json::Value;

use super::body::{read_sse, read_whole, Progress, MAX_BODY_BYTES};
use super::endpoint::BearerEndpoint;
use super::http::Http;
use super::lenient::{First, Obj, Present, Seq, Str, StrOr, Text, U64};
use super::openai_body::{render, REASONING_FIELDS};
use super::{
    Backend, Delta, DeltaSink, Failure, ModelRequest, ModelResponse, RawCall, RequestBody,
};
use crate::config::Config;
use crate::event::{StopReason, Usage};
use crate::transcript::{Part, Reasoning};

pub(crate) struct OpenAi {
    endpoint: BearerEndpoint,
}

impl OpenAi {
    pub fn new(http: Http, config: &Config) -> Self {
        OpenAi {
            endpoint: BearerEndpoint::new(http, config),
        }
    }
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
    /// The reasoning being streamed: the number of calls before it, and the part.
    reasoning: Option<(usize, Reasoning)>,
    /// Reasoning parts already complete.
    extra: Vec<(usize, Part)>,
    usage: Usage,
    finished: bool,
    stop: Option<StopReason>,
    /// How many calls were announced complete ([`Delta::Call`]) while streaming, the first ones.
    announced: usize,
    /// Off once the calls came out of order or one was not whole JSON: nothing more is
    /// announced (the reply's end gives every call as always).
    no_more_announcing: bool,
}

/// One streamed chunk (or whole completion), read as typed borrowed fields instead of a
/// `serde_json::Value` tree: the fake streams one word per chunk, and a `Value` per chunk
/// allocated every key and string. Every field is lenient ([`super::lenient`]): a wrong type
/// reads as absent, as the `Value` lookups did.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Chunk<'a> {
    error: Present,
    usage: Obj<WireUsage>,
    #[serde(borrow)]
    choices: First<Obj<Choice<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireUsage {
    prompt_tokens: U64,
    completion_tokens: U64,
    prompt_tokens_details: Obj<PromptDetails>,
    completion_tokens_details: Obj<CompletionDetails>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CompletionDetails {
    reasoning_tokens: U64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PromptDetails {
    cached_tokens: U64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Choice<'a> {
    /// A streamed chunk carries `delta` (present, even as `null`, it wins over `message`).
    #[serde(borrow)]
    delta: Present<Obj<WireDelta<'a>>>,
    /// A whole completion carries `message`.
    #[serde(borrow)]
    message: Present<Obj<WireDelta<'a>>>,
    #[serde(borrow)]
    finish_reason: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireDelta<'a> {
    /// Text, or a list of parts (Mistral: `text` and `thinking` parts).
    #[serde(borrow)]
    content: StrOr<'a, Obj<ContentPart<'a>>>,
    /// Reasoning as DeepSeek, xAI, Alibaba, Moonshot, vLLM and llama.cpp stream it.
    #[serde(borrow)]
    reasoning_content: Str<'a>,
    /// Reasoning as Groq, OpenRouter and newer vLLM stream it.
    #[serde(borrow)]
    reasoning: Str<'a>,
    #[serde(borrow)]
    tool_calls: Seq<Obj<CallDelta<'a>>>,
    /// The model's refusal message (OpenAI structured outputs), streamed like content.
    #[serde(borrow)]
    refusal: Str<'a>,
}

/// One part of a `content` list.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ContentPart<'a> {
    #[serde(borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    /// A `thinking` part's reasoning: text, or a list of `text` parts.
    #[serde(borrow)]
    thinking: StrOr<'a, Obj<TextPart<'a>>>,
}

/// A `{"type": "text", "text": ...}` part inside a `thinking` part.
#[derive(Deserialize, Default)]
#[serde(default)]
struct TextPart<'a> {
    #[serde(borrow)]
    text: Str<'a>,
}

/// The name Mistral's reasoning arrives under (a `thinking` part of `content`); it is not one of
/// the message fields sent back ([`REASONING_FIELDS`]).
const THINKING_PART: &str = "thinking";

#[derive(Deserialize, Default)]
#[serde(default)]
struct CallDelta<'a> {
    index: U64,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    function: Obj<FunctionDelta<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct FunctionDelta<'a> {
    #[serde(borrow)]
    name: Str<'a>,
    /// A string piece of the arguments; a server that sends an object instead gets it as JSON
    /// text.
    #[serde(borrow)]
    arguments: Text<'a>,
}

/// A chunk's JSON text, typed.
fn parse(text: &str) -> serde_json::Result<Obj<Chunk<'_>>> {
    serde_json::from_str(text)
}

impl Assembler {
    /// Read one streamed chunk from its JSON text.
    pub fn chunk_text(&mut self, text: &str, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        let chunk = parse(text)
            .map_err(|e| Failure::Fatal(format!("malformed stream chunk ({e}): {text:.200}")))?;
        self.read(chunk, deltas)
    }

    /// Read one chunk already parsed (tests).
    #[cfg(test)]
    pub fn chunk(&mut self, chunk: &Value, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        self.chunk_text(&chunk.to_string(), deltas)
    }

    /// Read one chunk (streamed) or whole completion (not streamed).
    fn read(&mut self, chunk: Obj<Chunk<'_>>, deltas: DeltaSink<'_>) -> Result<(), Failure> {
        // JSON that is not an object carries nothing.
        let Obj(Some(chunk)) = chunk else {
            return Ok(());
        };
        if let Present(Some(err)) = &chunk.error {
            return Err(Failure::Fatal(format!(
                "the model server sent an error: {err}"
            )));
        }
        if let Obj(Some(u)) = &chunk.usage {
            // `prompt_tokens` is the whole prompt; `cached_tokens` is the part of it served
            // from the prompt cache (never more than the whole, whatever a server claims).
            let input = u.prompt_tokens.0.unwrap_or(0);
            let cached = match &u.prompt_tokens_details {
                Obj(Some(d)) => d.cached_tokens.0.unwrap_or(0),
                Obj(None) => 0,
            };
            let output = u.completion_tokens.0.unwrap_or(0);
            let reasoning = match &u.completion_tokens_details {
                Obj(Some(d)) => d.reasoning_tokens.0.unwrap_or(0),
                Obj(None) => 0,
            };
            self.usage = Usage {
                input_tokens: input,
                output_tokens: output,
                cache_read_input_tokens: cached.min(input),
                cache_creation_input_tokens: 0,
                reasoning_tokens: reasoning.min(output),
            };
        }
        let Some(choice) = chunk.choices.0 else {
            return Ok(());
        };
        // A first choice that is not an object has no delta and no finish reason.
        let Obj(Some(choice)) = choice else {
            return Ok(());
        };
        let delta = match (choice.delta, choice.message) {
            (Present(Some(Obj(d))), _) | (Present(None), Present(Some(Obj(d)))) => d,
            (Present(None), Present(None)) => None,
        };
        if let Some(delta) = delta {
            // Both fields in one delta (a server that sends its reasoning under both names)
            // are one reasoning: the first name is kept.
            let fields = [&delta.reasoning_content, &delta.reasoning];
            if let Some((field, text)) = REASONING_FIELDS
                .iter()
                .zip(fields)
                .find_map(|(f, v)| v.get().filter(|t| !t.is_empty()).map(|t| (*f, t)))
            {
                self.reason(field, text, deltas);
            }
            match &delta.content {
                StrOr::Str(text) => self.say(text, deltas),
                StrOr::Seq(parts) => {
                    for Obj(part) in parts {
                        let Some(part) = part else { continue };
                        match part.kind.get() {
                            Some("text") => self.say(part.text.get().unwrap_or(""), deltas),
                            Some("thinking") => match &part.thinking {
                                StrOr::Str(t) => self.reason(THINKING_PART, t, deltas),
                                StrOr::Seq(texts) => {
                                    for Obj(t) in texts {
                                        let t = t.as_ref().and_then(|t| t.text.get());
                                        self.reason(THINKING_PART, t.unwrap_or(""), deltas);
                                    }
                                }
                                StrOr::Neither => {}
                            },
                            // Parts of kinds the engine does not read (a reference, an image
                            // the model made) are left out.
                            _ => {}
                        }
                    }
                }
                StrOr::Neither => {}
            }
            if let Some(refusal) = delta.refusal.get().filter(|t| !t.is_empty()) {
                // The refusal is the answer: it shows as text, never as an empty reply.
                self.say(refusal, deltas);
                self.stop = Some(StopReason::Refusal);
            }
            if let Seq(Some(calls)) = delta.tool_calls {
                for (pos, Obj(tc)) in calls.into_iter().enumerate() {
                    // An element that is not an object still takes a slot, as before.
                    let tc = tc.unwrap_or_default();
                    let index = tc.index.0.unwrap_or(pos as u64);
                    let slot = match self.calls.iter().position(|(i, _)| *i == index) {
                        Some(s) => s,
                        None => {
                            self.announce_before(index, deltas);
                            self.calls.push((index, CallParts::default()));
                            self.calls.len() - 1
                        }
                    };
                    self.end_reasoning();
                    let parts = &mut self.calls[slot].1;
                    if let Some(id) = tc.id.get().filter(|s| !s.is_empty()) {
                        parts.id = Some(id.to_string());
                    }
                    let Obj(Some(function)) = tc.function else {
                        continue;
                    };
                    if let Some(name) = function.name.get() {
                        parts.name.push_str(name);
                    }
                    if let Some(piece) = function.arguments.0 {
                        parts.arguments.push_str(&piece);
                    }
                }
            }
        }
        if let Some(reason) = choice.finish_reason.get() {
            self.finished = true;
            match reason {
                "length" => self.stop = Some(StopReason::MaxTokens),
                "content_filter" => self.stop = Some(StopReason::ContentFilter),
                _ => {}
            }
        }
        Ok(())
    }

    /// Answer text.
    fn say(&mut self, text: &str, deltas: DeltaSink<'_>) {
        if text.is_empty() {
            return;
        }
        self.end_reasoning();
        self.text.push_str(text);
        deltas(Delta::Text(text));
    }

    /// Reasoning text that arrived under `field`; a new field starts a new part.
    fn reason(&mut self, field: &str, text: &str, deltas: DeltaSink<'_>) {
        if text.is_empty() {
            return;
        }
        if self
            .reasoning
            .as_ref()
            .is_some_and(|(_, r)| r.field.as_deref() != Some(field))
        {
            self.end_reasoning();
        }
        let calls = self.calls.len();
        let (_, r) = self.reasoning.get_or_insert_with(|| {
            (
                calls,
                Reasoning {
                    field: Some(field.to_string()),
                    ..Reasoning::default()
                },
            )
        });
        r.text.push_str(text);
        deltas(Delta::Reasoning(text));
    }

    /// The reasoning being streamed is complete.
    fn end_reasoning(&mut self) {
        if let Some((at, r)) = self.reasoning.take() {
            self.extra.push((at, Part::Reasoning(r)));
        }
    }

    /// A call with `index` begins: the one before it is complete (the server streams calls one
    /// after another), so announce it, if every call before it was and it is whole JSON.
    fn announce_before(&mut self, index: u64, deltas: DeltaSink<'_>) {
        if self.no_more_announcing || self.announced + 1 != self.calls.len() {
            return;
        }
        let Some((last, parts)) = self.calls.last() else {
            return;
        };
        let call = RawCall {
            id: parts.id.clone(),
            name: parts.name.clone(),
            arguments: parts.arguments.clone(),
        };
        if index <= *last || !call.whole() || call.name.is_empty() {
            self.no_more_announcing = true;
            return;
        }
        self.announced += 1;
        deltas(Delta::Call(&call));
    }

    pub fn finish(mut self) -> ModelResponse {
        self.end_reasoning();
        self.calls.sort_by_key(|(i, _)| *i);
        ModelResponse {
            paused: false,
            stop: self.stop,
            extra: self.extra,
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
            .post("/chat/completions", &self.endpoint.auth, body)
            .await?;
        let idle = self.endpoint.http.idle_timeout;
        let mut asm = Assembler::default();
        if !is_event_stream(&resp.resp) {
            // A server that ignores `stream: true` answers with one completion.
            let bytes = read_whole(resp, MAX_BODY_BYTES, idle).await?;
            let whole = std::str::from_utf8(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|text| parse(text).map_err(|e| e.to_string()))
                .map_err(|e| {
                    Failure::Fatal(format!("the model server's answer is not JSON: {e}"))
                })?;
            asm.read(whole, deltas)?;
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
            asm.chunk_text(data, deltas)?;
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
        self.endpoint.http.redactor.redact(text)
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
    use serde_json::json;

    #[test]
    fn the_body_bytes_are_those_of_the_value_rendering() {
        crate::model::value_body::assert_same_bytes(crate::model::value_body::openai, render);
    }

    #[test]
    fn deltas_assemble_several_calls_by_index() {
        let mut asm = Assembler::default();
        let seen = std::sync::Mutex::new(String::new());
        let sink = |d: Delta<'_>| {
            if let Delta::Text(t) = d {
                seen.lock().unwrap().push_str(t)
            }
        };
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
                                            "prompt_tokens_details": {"cached_tokens": 5},
                                            "completion_tokens_details": {"reasoning_tokens": 9}}}),
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
        // Reasoning tokens are part of the completion's: never more than it, whatever is claimed.
        assert_eq!(r.usage.reasoning_tokens, 2);
        let err = Assembler::default()
            .chunk(&json!({"error": {"message": "nope"}}), &sink)
            .unwrap_err();
        assert!(matches!(err, Failure::Fatal(m) if m.contains("nope")));
    }

    /// The deltas a stream gave: text and reasoning, each joined.
    fn collect(chunks: &[Value]) -> (ModelResponse, String, String) {
        let text = std::sync::Mutex::new(String::new());
        let reasoning = std::sync::Mutex::new(String::new());
        let sink = |d: Delta<'_>| match d {
            Delta::Text(t) => text.lock().unwrap().push_str(t),
            Delta::Reasoning(t) => reasoning.lock().unwrap().push_str(t),
            Delta::Call(_) => {}
        };
        let mut asm = Assembler::default();
        for c in chunks {
            asm.chunk(c, &sink).unwrap();
        }
        (
            asm.finish(),
            text.into_inner().unwrap(),
            reasoning.into_inner().unwrap(),
        )
    }

    fn reasoning_of(r: &ModelResponse) -> Vec<(usize, String, Option<String>)> {
        r.extra
            .iter()
            .map(|(at, p)| match p {
                Part::Reasoning(r) => (*at, r.text.clone(), r.field.clone()),
                other => panic!("not reasoning: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn reasoning_is_read_under_the_field_it_came_in() {
        // DeepSeek: `reasoning_content` (an empty first piece), then the answer and a call.
        let (r, text, reasoning) = collect(&[
            json!({"choices": [{"delta": {"role": "assistant", "content": null, "reasoning_content": ""}}]}),
            json!({"choices": [{"delta": {"content": null, "reasoning_content": "We"}}]}),
            json!({"choices": [{"delta": {"content": null, "reasoning_content": " add."}}]}),
            json!({"choices": [{"delta": {"content": "4", "reasoning_content": null}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]}),
        ]);
        assert_eq!((text.as_str(), reasoning.as_str()), ("4", "We add."));
        assert_eq!(
            reasoning_of(&r),
            [(0, "We add.".into(), Some("reasoning_content".into()))]
        );
        assert_eq!(r.text, "4");
        assert_eq!(r.calls.len(), 1);
        // Groq: `reasoning`; a server sending both names in one delta gives it once.
        let (r, _, reasoning) = collect(&[
            json!({"choices": [{"delta": {"reasoning": "Okay"}}]}),
            json!({"choices": [{"delta": {"reasoning": ", so", "reasoning_content": ", so"}}]}),
            json!({"choices": [{"delta": {"content": "Hi"}, "finish_reason": "stop"}]}),
        ]);
        assert_eq!(reasoning, "Okay, so");
        assert_eq!(
            reasoning_of(&r),
            [
                (0, "Okay".into(), Some("reasoning".into())),
                (0, ", so".into(), Some("reasoning_content".into()))
            ]
        );
    }

    #[test]
    fn stop_reasons_that_end_a_turn_short() {
        let finish = |reason: &str| {
            collect(&[json!({"choices": [{"delta": {"content": "x"}, "finish_reason": reason}]})])
                .0
                .stop
        };
        assert_eq!(finish("length"), Some(StopReason::MaxTokens));
        assert_eq!(finish("content_filter"), Some(StopReason::ContentFilter));
        assert_eq!(finish("stop"), None);
        assert_eq!(finish("tool_calls"), None);
        // A refusal streams in its own field: it is the answer's text, and the stop reason.
        let (r, text, _) = collect(&[
            json!({"choices": [{"delta": {"role": "assistant", "content": null, "refusal": null}}]}),
            json!({"choices": [{"delta": {"refusal": "I can't"}}]}),
            json!({"choices": [{"delta": {"refusal": " do that."}, "finish_reason": "stop"}]}),
        ]);
        assert_eq!(
            (r.text.as_str(), text.as_str()),
            ("I can't do that.", "I can't do that.")
        );
        assert_eq!(r.stop, Some(StopReason::Refusal));
    }

    #[test]
    fn content_as_a_list_of_parts_gives_text_and_thinking() {
        // Mistral's reasoning models (magistral), as recorded from the real API.
        let (r, text, reasoning) = collect(&[
            json!({"choices": [{"delta": {"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "The user is asking"}]}]}}]}),
            json!({"choices": [{"delta": {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": " for 2+2."}]}]}}]}),
            json!({"choices": [{"delta": {"content": [{"type": "text", "text": "2 + 2 = 4"}, {"type": "image_url", "image_url": "x"}, 5]}}]}),
            json!({"choices": [{"delta": {"content": ""}, "finish_reason": "stop"}]}),
        ]);
        assert_eq!(text, "2 + 2 = 4");
        assert_eq!(r.text, "2 + 2 = 4");
        assert_eq!(reasoning, "The user is asking for 2+2.");
        assert_eq!(
            reasoning_of(&r),
            [(
                0,
                "The user is asking for 2+2.".into(),
                Some("thinking".into())
            )]
        );
        // A whole completion with parts, and `thinking` as a plain string.
        let (r, _, _) = collect(&[json!({"choices": [{"message": {"content": [
            {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}]},
            "finish_reason": "stop"}]})]);
        assert_eq!(r.text, "ok");
        assert_eq!(
            reasoning_of(&r),
            [(0, "hmm".into(), Some("thinking".into()))]
        );
    }

    #[test]
    fn odd_chunks_read_as_the_value_lookups_did() {
        let sink = |_: Delta<'_>| {};
        // JSON that is not an object, a first choice that is not one, fields of the wrong type.
        let mut asm = Assembler::default();
        for odd in [
            json!(5),
            json!("text"),
            json!({"choices": "none"}),
            json!({"choices": [7, {"delta": {"content": "skipped"}}]}),
            json!({"choices": [{"delta": {"content": 3, "tool_calls": {"index": 0}}}]}),
            json!({"usage": [1], "choices": []}),
        ] {
            asm.chunk(&odd, &sink).unwrap();
        }
        assert!(!asm.finished);
        let r = asm.finish();
        assert_eq!((r.text.as_str(), r.calls.len()), ("", 0));
        // `delta: null` hides `message`; a call that is not an object still takes its slot; an
        // object as arguments arrives as its JSON text.
        let mut asm = Assembler::default();
        asm.chunk(
            &json!({"choices": [{"delta": null, "message": {"content": "hidden"}}]}),
            &sink,
        )
        .unwrap();
        asm.chunk(
            &json!({"choices": [{"delta": {"tool_calls": [
                "junk",
                {"index": 1, "id": "", "function": {"name": "f", "arguments": {"a": [1]}}}]},
                "finish_reason": "tool_calls"}]}),
            &sink,
        )
        .unwrap();
        assert!(asm.finished);
        let r = asm.finish();
        assert_eq!(r.text, "");
        assert_eq!(r.calls.len(), 2);
        assert_eq!(r.calls[1].id, None);
        assert_eq!(r.calls[1].arguments, r#"{"a":[1]}"#);
        // `message` is read when there is no `delta` (a whole completion).
        let mut asm = Assembler::default();
        asm.chunk(
            &json!({"choices": [{"message": {"content": "whole"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1.5,
                              "prompt_tokens_details": {"cached_tokens": 9}}}),
            &sink,
        )
        .unwrap();
        let r = asm.finish();
        assert_eq!(r.text, "whole");
        assert_eq!(r.usage.input_tokens, 3);
        assert_eq!(r.usage.output_tokens, 0);
        assert_eq!(r.usage.cache_read_input_tokens, 3);
        // `error: null` is an error, as before; broken JSON is a malformed chunk.
        let err = Assembler::default()
            .chunk(&json!({"error": null}), &sink)
            .unwrap_err();
        assert!(matches!(err, Failure::Fatal(m) if m.contains("sent an error: null")));
        let err = Assembler::default()
            .chunk_text(r#"{"choices": [{"delta": {"content": "cut"#, &sink)
            .unwrap_err();
        assert!(matches!(err, Failure::Fatal(m) if m.starts_with("malformed stream chunk")));
    }

    #[test]
    fn a_deeply_nested_chunk_is_malformed_not_a_stack_overflow() {
        let sink = |_: Delta<'_>| {};
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        // Nested where the reader skips (an unknown field), where it reads any JSON (the
        // arguments of a call), and where it expects an object (the delta).
        for chunk in [
            format!(r#"{{"unknown": {deep}, "choices": []}}"#),
            format!(
                r#"{{"choices": [{{"delta": {{"tool_calls": [{{"index": 0, "function": {{"arguments": {deep}}}}}]}}}}]}}"#
            ),
            format!(r#"{{"choices": [{{"delta": {deep}}}]}}"#),
        ] {
            let mut asm = Assembler::default();
            match asm.chunk_text(&chunk, &sink) {
                Err(Failure::Fatal(m)) => {
                    assert!(m.starts_with("malformed stream chunk"), "{m}");
                    assert!(m.len() < 1_000, "the error must not echo the chunk");
                }
                // A value of the wrong type reads as absent (the leniency rule), however deep.
                Ok(()) => {
                    let r = asm.finish();
                    assert_eq!(
                        (r.text.as_str(), r.calls.len()),
                        ("", 0),
                        "{}",
                        &chunk[..40]
                    );
                }
                Err(other) => panic!("unexpected failure kind: {other:?}"),
            }
        }
    }
}
