//! The engine's small stable types as UniFFI sees them.
//!
//! Types whose fields UniFFI can carry as they are (`Outcome`, `GateVerdict`, `Source`, `Tier`,
//! `Usage`, `CompactTrigger`, `CompactNotice`, the lifecycle hooks' `PromptAction`, `StopAction`,
//! `CompactAction`, `CompactRequest`, `Notification`, `TurnEndInfo`, `Hints`, `ModelInfo`, `SearchRequest`, `SearchResult`, `ServerState`) are the
//! engine's own, declared with `#[uniffi::remote]`: no copy, no conversion. Types with free-form values get a mirror whose values cross as JSON text
//! (fields named `…Json`); the mirrors derive serde with the engine's own JSON shape, so they
//! convert through it ([`via_json`]) instead of field by field.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use contenox::{
    CompactAction, CompactNotice, CompactRequest, CompactTrigger, GateVerdict, Hints, ModelInfo,
    Notification, NotificationKind, Outcome, PromptAction, SearchRequest, SearchResult,
    ServerState, Source, StopAction, StopReason, Tier, TurnEndInfo, Usage,
};

use crate::error::ContenoxError;

#[uniffi::remote(Enum)]
pub enum Outcome {
    Done,
    Cancelled,
    MaxTurns,
    Error,
    Budget,
    OutputInvalid,
    Suspended,
}

#[uniffi::remote(Enum)]
pub enum StopReason {
    Refusal,
    ContentFilter,
    MaxTokens,
}

/// The snake_case name of a stop reason (`refusal`, `content_filter`, `max_tokens`), as on
/// every wire.
#[uniffi::export]
pub fn stop_reason_name(reason: StopReason) -> String {
    reason.as_str().to_string()
}

#[uniffi::remote(Enum)]
pub enum GateVerdict {
    Allow,
    Deny,
    Ask,
}

#[uniffi::remote(Enum)]
pub enum Source {
    Builtin,
    Host,
    Mcp,
    Remote,
    Subagent,
}

#[uniffi::remote(Enum)]
pub enum Tier {
    Core,
    Deferred,
}

#[uniffi::remote(Record)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[uniffi(default = 0)]
    pub cache_read_input_tokens: u64,
    #[uniffi(default = 0)]
    pub cache_creation_input_tokens: u64,
    #[uniffi(default = 0)]
    pub reasoning_tokens: u64,
}

#[uniffi::remote(Enum)]
pub enum CompactTrigger {
    Auto,
    Manual,
}

#[uniffi::remote(Record)]
pub struct CompactNotice {
    pub trigger: CompactTrigger,
    pub pre_tokens: u64,
    pub post_tokens: u64,
    pub summary: Option<String>,
    pub usage: Usage,
}

#[uniffi::remote(Enum)]
pub enum PromptAction {
    Continue,
    Replace(String),
    AddContext(String),
    Refuse(String),
}

#[uniffi::remote(Enum)]
pub enum StopAction {
    Stop,
    Continue(String),
}

#[uniffi::remote(Enum)]
pub enum CompactAction {
    Proceed,
    Instructions(String),
    Veto(String),
}

#[uniffi::remote(Record)]
pub struct CompactRequest {
    pub trigger: CompactTrigger,
    pub pre_tokens: u64,
    pub instructions: Option<String>,
}

#[uniffi::remote(Enum)]
pub enum NotificationKind {
    Ask,
    BudgetNear,
}

#[uniffi::remote(Record)]
pub struct Notification {
    pub kind: NotificationKind,
    pub message: String,
}

#[uniffi::remote(Record)]
pub struct TurnEndInfo {
    pub outcome: Outcome,
    pub final_text: String,
    pub error: Option<String>,
}

#[uniffi::remote(Record)]
pub struct Hints {
    #[uniffi(default = None)]
    pub read_only: Option<bool>,
    #[uniffi(default = None)]
    pub destructive: Option<bool>,
    #[uniffi(default = None)]
    pub open_world: Option<bool>,
}

#[uniffi::remote(Record)]
pub struct ModelInfo {
    pub id: String,
    pub display_name: Option<String>,
}

#[uniffi::remote(Record)]
pub struct SearchResult {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

#[uniffi::remote(Record)]
pub struct SearchRequest {
    pub query: String,
    pub max_results: u64,
    pub allowed_domains: Vec<String>,
    pub blocked_domains: Vec<String>,
}

#[uniffi::remote(Enum)]
pub enum ServerState {
    Ready { tools: u64 },
    Failed { error: String },
}

/// The snake_case name of an outcome (`done`, `cancelled`, `max_turns`, `error`, `budget`), as
/// on every wire.
#[uniffi::export]
pub fn outcome_name(outcome: Outcome) -> String {
    outcome.as_str().to_string()
}

/// One value in the shape of another through the engine's JSON (the mirrors below and the
/// engine's types share it). Fails only for a `…Json` field whose text is not JSON.
pub(crate) fn via_json<A: Serialize, B: DeserializeOwned>(a: &A) -> Result<B, ContenoxError> {
    serde_json::to_value(a)
        .and_then(serde_json::from_value)
        .map_err(|e| ContenoxError::Json {
            detail: e.to_string(),
        })
}

/// A JSON value carried as its text: serde reads the value and writes the text back as a value.
pub(crate) mod json_text {
    use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| serde::ser::Error::custom(format!("not JSON text: {e}")))?;
        value.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Value::deserialize(d)
            .map(|v| v.to_string())
            .map_err(D::Error::custom)
    }

    /// The same for an optional value.
    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
            match text {
                Some(text) => super::serialize(text, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
            Ok(Option::<Value>::deserialize(d)?.map(|v| v.to_string()))
        }
    }
}

/// A tool's declaration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Record)]
pub struct ToolSpec {
    /// Matches `^[A-Za-z0-9_-]{1,64}$`.
    pub name: String,
    /// Written for the model.
    pub description: String,
    /// A JSON Schema for the arguments (an object schema), as JSON text.
    #[serde(rename = "input_schema", with = "json_text")]
    pub input_schema_json: String,
    /// Advisory hints for the gate.
    #[uniffi(default)]
    pub hints: contenox::Hints,
    /// core or deferred.
    pub tier: contenox::Tier,
}

/// A tool's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Record)]
pub struct ToolOutput {
    /// The text the model sees. (A result that is JSON is given as its JSON text.)
    #[serde(with = "content_text")]
    pub content: String,
    /// Whether the model should read this as a failure.
    #[uniffi(default = false)]
    pub is_error: bool,
    /// Facts about the result that are not the result itself (`truncated`, `nextOffset`...),
    /// as JSON text.
    #[uniffi(default = None)]
    #[serde(rename = "metadata", default, with = "json_text::option")]
    pub metadata_json: Option<String>,
    /// The images the model sees after the text (`read` of an image file), as the engine's
    /// JSON text (`[{"media_type", "data"}]`, base64); kept when `afterTool` returns a copy of
    /// the result it was given.
    #[uniffi(default = None)]
    #[serde(
        rename = "images",
        default,
        skip_serializing_if = "Option::is_none",
        with = "json_text::option"
    )]
    pub images_json: Option<String>,
}

/// A result's content as text: a string as it is, any other value as its JSON text (what the
/// model sees); written back as a string.
mod content_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }
}

/// A tool call as the gate sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Record)]
pub struct ToolCallEvent {
    /// The tool's name.
    pub name: String,
    /// The arguments, as JSON text (an object).
    #[serde(rename = "arguments", with = "json_text")]
    pub arguments_json: String,
    /// The call id.
    pub call_id: String,
    /// The tool's hints.
    pub hints: contenox::Hints,
    /// Where the tool comes from.
    pub source: contenox::Source,
    /// The MCP server or remote service the tool belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The chain of subagents whose turn makes the call (`["researcher"]`); empty for the
    /// client's own calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent: Vec<String>,
}

/// A request the host answers through `WaitFor`. The hook sets kind, prompt, timeout and data;
/// the engine fills in the call it is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Record)]
pub struct PendingRequest {
    /// Free text: `approval`, `input`, ...
    #[serde(default)]
    pub kind: String,
    /// What to show the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The engine denies the call when no answer came in this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Anything else the hook gave, as JSON text.
    #[serde(
        rename = "data",
        default,
        skip_serializing_if = "Option::is_none",
        with = "json_text::option"
    )]
    pub data_json: Option<String>,
    /// The call id.
    #[serde(default)]
    pub call_id: String,
    /// The tool name.
    #[serde(default)]
    pub name: String,
    /// The call's arguments, as JSON text.
    #[serde(rename = "arguments", with = "json_text")]
    pub arguments_json: String,
    /// In a suspended turn's `pending`: when the ask times out, Unix milliseconds (a resumed
    /// ask keeps it; `timeout_ms` there is what was left of it when the turn suspended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

/// What `beforeTool` decides.
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum Decision {
    /// Run the call.
    Allow,
    /// Refuse it: an error result with this message (`null`: the engine's default denial text).
    Deny {
        /// What the model is told.
        message: Option<String>,
    },
    /// Ask the client's `WaitFor`.
    Ask {
        /// Free text: `approval`, `input`, ...
        kind: String,
        /// What to show the person.
        prompt: Option<String>,
        /// Deny automatically when no answer came in this time.
        timeout_ms: Option<u64>,
        /// Anything else the host's `WaitFor` should have, as JSON text.
        data_json: Option<String>,
    },
}

impl Decision {
    pub(crate) fn into_core(self) -> Result<contenox::Decision, ContenoxError> {
        Ok(match self {
            Decision::Allow => contenox::Decision::Allow,
            Decision::Deny { message } => contenox::Decision::Deny(message),
            Decision::Ask {
                kind,
                prompt,
                timeout_ms,
                data_json,
            } => contenox::Decision::Ask(via_json(&PendingRequest {
                kind,
                prompt,
                timeout_ms,
                data_json,
                call_id: String::new(),
                name: String::new(),
                arguments_json: "null".into(),
                deadline_ms: None,
            })?),
        })
    }
}

/// The host's answer to a pending request.
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum Answer {
    /// Run the call.
    Approve,
    /// Refuse it, with a message (`null`: the engine's default denial text).
    Deny {
        /// What the model is told.
        message: Option<String>,
    },
    /// Do not run it: this value (JSON text) is the call's result.
    Result {
        /// The result, as JSON text.
        value_json: String,
    },
    /// Answer later, maybe in another process: the turn ends `Suspended`, its result carries
    /// `checkpoint` and `pending`, and `Client.resume(checkpoint, answers)` continues it.
    Suspend,
}

impl Answer {
    pub(crate) fn into_core(self) -> Result<contenox::Answer, ContenoxError> {
        Ok(match self {
            Answer::Approve => contenox::Answer::Approve,
            Answer::Deny { message } => contenox::Answer::Deny(message),
            Answer::Result { value_json } => {
                contenox::Answer::Result(crate::error::parse_json("answer result", &value_json)?)
            }
            Answer::Suspend => contenox::Answer::Suspend,
        })
    }
}

impl From<contenox::Answer> for Answer {
    fn from(a: contenox::Answer) -> Self {
        match a {
            contenox::Answer::Approve => Answer::Approve,
            contenox::Answer::Deny(message) => Answer::Deny { message },
            contenox::Answer::Result(v) => Answer::Result {
                value_json: v.to_string(),
            },
            contenox::Answer::Suspend => Answer::Suspend,
        }
    }
}

/// The engine's wire form of an answer (`{"approve": ...}` / `{"result": ...}`), for serde.
pub(crate) mod answer_wire {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Answer;

    pub fn serialize<S: Serializer>(answer: &Answer, s: S) -> Result<S::Ok, S::Error> {
        answer
            .clone()
            .into_core()
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Answer, D::Error> {
        contenox::Answer::deserialize(d).map(Answer::from)
    }
}

/// One part of a message: text, an image, the model's reasoning, a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Enum)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image: base64 `data` with its `media_type`, or a `path` beneath the root.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp` (with `data`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// The bytes, base64.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
        /// A file beneath the root, read when a request is built.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// The model's reasoning, with the provider's opaque fields.
    Reasoning {
        /// The reasoning text (empty when the provider sent it only encrypted).
        #[serde(default)]
        text: String,
        /// The provider's signature over the text (anthropic).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Encrypted reasoning (anthropic `redacted_thinking`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted: Option<String>,
        /// The message field an openai-style server sent it in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field: Option<String>,
    },
    /// A tool call.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The arguments as JSON text (a JSON string holding the raw text when it was not JSON).
        #[serde(rename = "arguments", with = "json_text")]
        arguments_json: String,
        /// True when the model's arguments were not valid JSON.
        #[serde(default)]
        raw_arguments: bool,
        /// Set when the model reached the tool through `call_tool`.
        #[serde(default)]
        via: Option<String>,
    },
    /// A block of the provider's own kind, kept to be sent back to that kind of server.
    Provider {
        /// The wire style whose server sent it.
        style: String,
        /// The block, as JSON text.
        #[serde(rename = "block", with = "json_text")]
        block_json: String,
    },
}

/// One message of the conversation: its parts, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Enum)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The user's prompt: text and images.
    User {
        /// Its parts.
        content: Vec<ContentPart>,
    },
    /// One model response: reasoning, text and tool calls, in the model's order.
    Assistant {
        /// Its parts.
        content: Vec<ContentPart>,
    },
    /// The result of one tool call: text and images.
    Tool {
        /// The call id it answers.
        call_id: String,
        /// The tool name.
        name: String,
        /// What the model sees.
        content: Vec<ContentPart>,
        /// Whether this is an error result.
        #[serde(default)]
        is_error: bool,
    },
}

/// The conversation: read it, save it as JSON, restore it with `Client.setTranscript`.
#[derive(Debug, uniffi::Object)]
pub struct Transcript {
    pub(crate) inner: contenox::Transcript,
}

#[uniffi::export]
impl Transcript {
    /// Parse a transcript saved with `toJson()`, and check that it is valid (every tool call
    /// has a result).
    #[uniffi::constructor]
    pub fn from_json(json: String) -> Result<Arc<Self>, ContenoxError> {
        Ok(Arc::new(Transcript {
            inner: contenox::Transcript::from_json(&json)?,
        }))
    }

    /// An empty conversation.
    #[uniffi::constructor]
    pub fn empty() -> Arc<Self> {
        Arc::new(Transcript {
            inner: contenox::Transcript::default(),
        })
    }

    /// The transcript as JSON, for saving.
    pub fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> Vec<Message> {
        // The mirror reads every message the engine writes (see the tests): none is dropped.
        self.inner
            .messages
            .iter()
            .filter_map(|m| via_json(m).ok())
            .collect()
    }

    /// How many messages there are.
    pub fn len(&self) -> u64 {
        self.inner.messages.len() as u64
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.inner.messages.is_empty()
    }
}

/// What a finished turn returns.
#[derive(Debug, Clone, uniffi::Record)]
pub struct TurnResult {
    /// How the turn ended.
    pub outcome: contenox::Outcome,
    /// The text of the turn's last model response.
    pub final_text: String,
    /// Usage summed over the turn's model responses.
    pub usage: contenox::Usage,
    /// What went wrong, for outcome `Error`.
    pub error: Option<String>,
    /// Why the last model reply stopped short of a full answer (refused, filtered, cut at
    /// `max_tokens`), when it did.
    pub stop_reason: Option<StopReason>,
    /// The final answer as JSON text, parsed and validated against the turn's `output_schema`:
    /// present exactly when the turn has one and the outcome is `Done`.
    pub output_json: Option<String>,
    /// The whole conversation after the turn.
    pub transcript: Arc<Transcript>,
    /// For outcome `Suspended`: the checkpoint (JSON text) `Client.resume` continues from, in
    /// this process or another with the same config (it holds no secret of the config).
    pub checkpoint: Option<String>,
    /// For outcome `Suspended`: the requests waiting; answers to `Client.resume` are keyed by
    /// their `call_id`.
    pub pending: Vec<PendingRequest>,
}

impl From<contenox::TurnResult> for TurnResult {
    fn from(r: contenox::TurnResult) -> Self {
        TurnResult {
            outcome: r.outcome,
            final_text: r.final_text,
            usage: r.usage,
            error: r.error,
            stop_reason: r.stop_reason,
            output_json: r.output.map(|v| v.to_string()),
            transcript: Arc::new(Transcript {
                inner: r.transcript,
            }),
            checkpoint: r.checkpoint,
            // Both shapes are the engine's request; the conversion cannot fail.
            pending: r.pending.iter().filter_map(|p| via_json(p).ok()).collect(),
        }
    }
}
