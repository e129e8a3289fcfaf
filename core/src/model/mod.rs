//! Model wire styles. One file per style; each renders the wire-neutral conversation into its
//! request body and reads its streamed answer back into a [`ModelResponse`].

mod anthropic;
mod anthropic_body;
mod body;
mod endpoint;
mod fallback;
mod http;
mod images;
mod json_writer;
mod lenient;
mod list_models;
mod ndjson;
mod ollama;
mod ollama_body;
mod openai;
mod openai_body;
mod overflow;
#[cfg(test)]
mod parts_wire_tests;
pub(crate) mod redact;
mod responses;
mod responses_body;
mod retry;
mod scripted;
mod settings_body;
pub(crate) mod sse;
#[cfg(test)]
mod value_body;
mod wire_json;

pub use list_models::{list_models, ModelInfo};

pub(crate) use fallback::{complete_with_fallback, Answered, Model};
pub(crate) use images::{ImageBytes, ResolvedImages};
pub(crate) use retry::{complete_with_retry, RequestFailed};

/// Entry points for fuzz targets (cargo-fuzz): they feed arbitrary bytes through the stream
/// decoders the model styles use. Not part of the API.
#[doc(hidden)]
pub mod fuzz {
    /// Feed `data` through the SSE decoder (openai, anthropic, MCP HTTP) in chunks sized by its
    /// first byte; returns the number of events decoded. Must never panic.
    pub fn sse(data: &[u8]) -> usize {
        super::sse::fuzz_decode(data)
    }

    /// Feed `data` through the NDJSON decoder (ollama) the same way; returns the lines decoded.
    pub fn ndjson(data: &[u8]) -> usize {
        super::ndjson::fuzz_decode(data)
    }
}

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::config::{Config, Style};
use crate::error::Result;
use crate::event::{StopReason, Usage};
use crate::tool::ToolSpec;
use crate::transcript::{Message, Part};

/// One model request, in wire-neutral terms.
pub(crate) struct ModelRequest<'a> {
    pub system: Option<&'a str>,
    /// This request's model, when not the client's (a chain task may name its own).
    pub model: Option<&'a str>,
    pub messages: &'a [Message],
    pub tools: &'a [std::sync::Arc<ToolSpec>],
    /// This request's model settings. A tool choice and `parallel_tool_calls` are sent only
    /// when the request offers tools (the servers refuse them otherwise).
    pub settings: &'a crate::settings::ModelSettings,
    /// The images of `messages` given by path, read for this request (`None`: none were read,
    /// and each is sent as a note saying so).
    pub images: Option<&'a ResolvedImages>,
    /// The schema the answer must match (`output_schema`), asked for in the style's own field.
    pub output: Option<&'a crate::output::OutputSchema>,
}

/// A call as it came off the wire, before the engine parses its arguments.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawCall {
    pub id: Option<String>,
    pub name: String,
    /// The arguments' text (objects from ollama are serialized back to text).
    pub arguments: String,
}

impl RawCall {
    /// Its arguments are whole: empty, or one complete JSON value (not cut off mid-way).
    pub fn whole(&self) -> bool {
        let text = self.arguments.trim();
        text.is_empty() || serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
    }
}

/// One complete model response.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ModelResponse {
    pub text: String,
    pub calls: Vec<RawCall>,
    /// The parts beside text and calls (reasoning), in the order they came, each with the number
    /// of calls that came before it: anthropic checks a signed thinking block's place when it
    /// is sent back, so the assistant message keeps it where it was.
    pub extra: Vec<(usize, Part)>,
    pub usage: Usage,
    /// Why the reply stopped short of a full answer, when it did.
    pub stop: Option<StopReason>,
    /// The server paused the turn (anthropic `pause_turn`): the reply goes back as it came and
    /// the model continues in the next request.
    pub paused: bool,
}

impl ModelResponse {
    /// The reasoning parts' texts, in order (the `reasoning` events).
    pub fn reasoning_texts(&self) -> impl Iterator<Item = &str> {
        self.extra.iter().filter_map(|(_, p)| match p {
            Part::Reasoning(r) if !r.text.is_empty() => Some(r.text.as_str()),
            _ => None,
        })
    }
}

/// Why a model request failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// Nothing of the response body arrived, so the request may be sent again when `retryable`.
    BeforeData {
        status: Option<u16>,
        message: String,
        retry_after: Option<Duration>,
        retryable: bool,
    },
    /// Part of the answer arrived, or the answer cannot be used: the turn ends with `error`.
    Fatal(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::BeforeData { message, .. } | Failure::Fatal(message) => message,
        }
    }
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Delta<'a> {
    /// Answer text.
    Text(&'a str),
    /// Reasoning text (the model's thinking before or between its answer and calls).
    Reasoning(&'a str),
    /// A call whose arguments are complete while the reply still streams (anthropic
    /// `content_block_stop`; openai when the next call begins). Announced in the reply's order,
    /// each once; the reply's `calls` list them again, these first.
    Call(&'a RawCall),
}

/// Receives streamed pieces as they arrive.
pub(crate) type DeltaSink<'a> = &'a (dyn Fn(Delta<'_>) + Send + Sync);

/// A request body's JSON bytes: rendered once per model request and sent again unchanged by
/// retries (a clone shares the bytes).
pub(crate) type RequestBody = bytes::Bytes;

/// A model server of one wire style. The body is rendered once per model request (under the
/// conversation's lock, without copying it) and sent again unchanged by retries.
#[async_trait]
pub(crate) trait Backend: Send + Sync {
    /// The request body for this style.
    fn body(&self, req: &ModelRequest<'_>) -> RequestBody;

    /// Send one body and read the whole (streamed) answer.
    async fn send(
        &self,
        body: &RequestBody,
        deltas: DeltaSink<'_>,
    ) -> Result<ModelResponse, Failure>;

    /// `text` without this backend's secrets (API key, header values, the base URL's userinfo
    /// and query): every failure message passes through here before it reaches an event or a
    /// result.
    fn redact(&self, text: &str) -> String {
        text.to_string()
    }
}

/// The backend a config asks for.
pub(crate) fn backend_for(config: &Config) -> Result<Arc<dyn Backend>> {
    Ok(match config.style {
        Style::Scripted => Arc::new(scripted::Scripted::new(
            config.script.clone().unwrap_or_default(),
        )),
        Style::Openai => Arc::new(openai::OpenAi::new(http::Http::new(config)?, config)),
        Style::OpenaiResponses => {
            Arc::new(responses::Responses::new(http::Http::new(config)?, config))
        }
        Style::Anthropic => Arc::new(anthropic::Anthropic::new(http::Http::new(config)?, config)),
        Style::Ollama => Arc::new(ollama::Ollama::new(http::Http::new(config)?, config)),
    })
}

/// Split text the way a server streams it: a few words at a time.
pub(crate) fn text_pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len();
        let mut spaces = 0;
        for (i, c) in rest.char_indices() {
            if c == ' ' {
                spaces += 1;
                if spaces == 3 {
                    end = i + 1;
                    break;
                }
            }
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}
