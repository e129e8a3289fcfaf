//! The typed surface: records and enums that mirror the engine's small stable types.
//!
//! Tool arguments, results, schemas and other free-form values cross as JSON text (fields named
//! `…Json`), as everywhere in contenox. Every conversion here is lossless in both directions, so
//! [`Event::to_json`] gives exactly what the engine serializes.

use std::sync::Arc;

use serde_json::Value;

use crate::error::{parse_json, ContenoxError};

/// Advisory hints about a tool. `null` means unknown (treat as mutating). Never sent to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, uniffi::Record)]
pub struct Hints {
    /// The tool only reads.
    #[uniffi(default = None)]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[uniffi(default = None)]
    pub destructive: Option<bool>,
    /// The tool reaches outside the machine.
    #[uniffi(default = None)]
    pub open_world: Option<bool>,
}

impl From<contenox::Hints> for Hints {
    fn from(h: contenox::Hints) -> Self {
        Hints {
            read_only: h.read_only,
            destructive: h.destructive,
            open_world: h.open_world,
        }
    }
}

impl From<Hints> for contenox::Hints {
    fn from(h: Hints) -> Self {
        contenox::Hints {
            read_only: h.read_only,
            destructive: h.destructive,
            open_world: h.open_world,
        }
    }
}

/// Whether a tool is sent to the model (`Core`) or reached through `call_tool` (`Deferred`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum Tier {
    /// Sent to the model with every request.
    Core,
    /// Listed in `call_tool`'s description and called through it.
    Deferred,
}

impl From<contenox::Tier> for Tier {
    fn from(t: contenox::Tier) -> Self {
        match t {
            contenox::Tier::Core => Tier::Core,
            contenox::Tier::Deferred => Tier::Deferred,
        }
    }
}

impl From<Tier> for contenox::Tier {
    fn from(t: Tier) -> Self {
        match t {
            Tier::Core => contenox::Tier::Core,
            Tier::Deferred => contenox::Tier::Deferred,
        }
    }
}

/// Where a tool comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum Source {
    /// Built into contenox.
    Builtin,
    /// Given by the host program.
    Host,
    /// An MCP server's tool.
    Mcp,
    /// An HTTP service discovered from its OpenAPI document.
    Remote,
    /// A subagent offered as a tool.
    Subagent,
}

impl From<contenox::Source> for Source {
    fn from(s: contenox::Source) -> Self {
        match s {
            contenox::Source::Builtin => Source::Builtin,
            contenox::Source::Host => Source::Host,
            contenox::Source::Mcp => Source::Mcp,
            contenox::Source::Remote => Source::Remote,
            contenox::Source::Subagent => Source::Subagent,
        }
    }
}

impl From<Source> for contenox::Source {
    fn from(s: Source) -> Self {
        match s {
            Source::Builtin => contenox::Source::Builtin,
            Source::Host => contenox::Source::Host,
            Source::Mcp => contenox::Source::Mcp,
            Source::Remote => contenox::Source::Remote,
            Source::Subagent => contenox::Source::Subagent,
        }
    }
}

/// A tool's declaration.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct ToolSpec {
    /// Matches `^[A-Za-z0-9_-]{1,64}$`.
    pub name: String,
    /// Written for the model.
    pub description: String,
    /// A JSON Schema for the arguments (an object schema), as JSON text.
    pub input_schema_json: String,
    /// Advisory hints for the gate.
    #[uniffi(default)]
    pub hints: Hints,
    /// core or deferred.
    pub tier: Tier,
}

impl ToolSpec {
    pub(crate) fn into_core(self) -> Result<contenox::ToolSpec, ContenoxError> {
        let schema = parse_json(
            &format!("input schema of tool {:?}", self.name),
            &self.input_schema_json,
        )?;
        Ok(contenox::ToolSpec::new(self.name, self.description, schema)
            .with_hints(self.hints.into())
            .with_tier(self.tier.into()))
    }
}

impl From<contenox::ToolSpec> for ToolSpec {
    fn from(s: contenox::ToolSpec) -> Self {
        ToolSpec {
            name: s.name,
            description: s.description,
            input_schema_json: s.input_schema.to_string(),
            hints: s.hints.into(),
            tier: s.tier.into(),
        }
    }
}

/// A tool's result.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct ToolOutput {
    /// The text the model sees. (A result that is JSON is given as its JSON text.)
    pub content: String,
    /// Whether the model should read this as a failure.
    #[uniffi(default = false)]
    pub is_error: bool,
    /// Facts about the result that are not the result itself (`truncated`, `nextOffset`...),
    /// as JSON text.
    #[uniffi(default = None)]
    pub metadata_json: Option<String>,
}

impl ToolOutput {
    pub(crate) fn into_core(self) -> Result<contenox::ToolOutput, ContenoxError> {
        let metadata = self
            .metadata_json
            .as_deref()
            .map(|m| parse_json("tool result metadata", m))
            .transpose()?;
        Ok(contenox::ToolOutput {
            content: Value::String(self.content),
            is_error: self.is_error,
            metadata,
        })
    }
}

impl From<&contenox::ToolOutput> for ToolOutput {
    fn from(o: &contenox::ToolOutput) -> Self {
        ToolOutput {
            content: o.content_text(),
            is_error: o.is_error,
            metadata_json: o.metadata.as_ref().map(Value::to_string),
        }
    }
}

/// A tool call as the gate sees it.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct ToolCallEvent {
    /// The tool's name.
    pub name: String,
    /// The arguments, as JSON text (an object).
    pub arguments_json: String,
    /// The call id.
    pub call_id: String,
    /// The tool's hints.
    pub hints: Hints,
    /// Where the tool comes from.
    pub source: Source,
    /// The MCP server or remote service the tool belongs to.
    pub server: Option<String>,
    /// The chain of subagents whose turn makes the call (`["researcher"]`); empty for the
    /// client's own calls.
    pub agent: Vec<String>,
}

impl From<&contenox::ToolCallEvent> for ToolCallEvent {
    fn from(e: &contenox::ToolCallEvent) -> Self {
        ToolCallEvent {
            name: e.name.clone(),
            arguments_json: e.arguments.to_string(),
            call_id: e.call_id.clone(),
            hints: e.hints.into(),
            source: e.source.into(),
            server: e.server.clone(),
            agent: e.agent.clone(),
        }
    }
}

/// A request the host answers through `WaitFor`. The hook sets kind, prompt, timeout and data;
/// the engine fills in the call it is about.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct PendingRequest {
    /// Free text: `approval`, `input`, ...
    pub kind: String,
    /// What to show the person.
    pub prompt: Option<String>,
    /// The engine denies the call when no answer came in this time.
    pub timeout_ms: Option<u64>,
    /// Anything else the hook gave, as JSON text.
    pub data_json: Option<String>,
    /// The call id.
    pub call_id: String,
    /// The tool name.
    pub name: String,
    /// The call's arguments, as JSON text.
    pub arguments_json: String,
}

impl From<contenox::PendingRequest> for PendingRequest {
    fn from(r: contenox::PendingRequest) -> Self {
        PendingRequest {
            kind: r.kind,
            prompt: r.prompt,
            timeout_ms: r.timeout_ms,
            data_json: r.data.as_ref().map(Value::to_string),
            call_id: r.call_id,
            name: r.name,
            arguments_json: r.arguments.to_string(),
        }
    }
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
            } => contenox::Decision::Ask(contenox::PendingRequest {
                kind,
                prompt,
                timeout_ms,
                data: data_json
                    .as_deref()
                    .map(|d| parse_json("ask data", d))
                    .transpose()?,
                ..Default::default()
            }),
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
}

impl Answer {
    pub(crate) fn into_core(self) -> Result<contenox::Answer, ContenoxError> {
        Ok(match self {
            Answer::Approve => contenox::Answer::Approve,
            Answer::Deny { message } => contenox::Answer::Deny(message),
            Answer::Result { value_json } => {
                contenox::Answer::Result(parse_json("answer result", &value_json)?)
            }
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
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum Outcome {
    /// The model gave a final answer.
    Done,
    /// The turn was cancelled; the transcript is kept and valid.
    Cancelled,
    /// The turn reached `max_turns` model responses.
    MaxTurns,
    /// The model could not be reached or answered badly; see `error`.
    Error,
    /// A compute ceiling was reached; `error` names it.
    Budget,
}

impl From<contenox::Outcome> for Outcome {
    fn from(o: contenox::Outcome) -> Self {
        match o {
            contenox::Outcome::Done => Outcome::Done,
            contenox::Outcome::Cancelled => Outcome::Cancelled,
            contenox::Outcome::MaxTurns => Outcome::MaxTurns,
            contenox::Outcome::Error => Outcome::Error,
            contenox::Outcome::Budget => Outcome::Budget,
        }
    }
}

impl From<Outcome> for contenox::Outcome {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::Done => contenox::Outcome::Done,
            Outcome::Cancelled => contenox::Outcome::Cancelled,
            Outcome::MaxTurns => contenox::Outcome::MaxTurns,
            Outcome::Error => contenox::Outcome::Error,
            Outcome::Budget => contenox::Outcome::Budget,
        }
    }
}

/// The snake_case name of an outcome (`done`, `cancelled`, `max_turns`, `error`), as on every wire.
#[uniffi::export]
pub fn outcome_name(outcome: Outcome) -> String {
    contenox::Outcome::from(outcome).as_str().to_string()
}

/// Token usage, per response or summed over a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, uniffi::Record)]
pub struct Usage {
    /// Tokens the model read (the whole prompt: cached, written to the cache, or neither).
    pub input_tokens: u64,
    /// Tokens the model wrote.
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the server's prompt cache.
    #[uniffi(default = 0)]
    pub cache_read_input_tokens: u64,
    /// Of `input_tokens`, those written to the server's prompt cache.
    #[uniffi(default = 0)]
    pub cache_creation_input_tokens: u64,
}

impl From<contenox::Usage> for Usage {
    fn from(u: contenox::Usage) -> Self {
        Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
        }
    }
}

impl From<Usage> for contenox::Usage {
    fn from(u: Usage) -> Self {
        contenox::Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
        }
    }
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum CompactTrigger {
    /// The engine: over the threshold, or the server refused the request as too long.
    Auto,
    /// The host: `compact()`.
    Manual,
}

impl From<contenox::CompactTrigger> for CompactTrigger {
    fn from(t: contenox::CompactTrigger) -> Self {
        match t {
            contenox::CompactTrigger::Auto => CompactTrigger::Auto,
            contenox::CompactTrigger::Manual => CompactTrigger::Manual,
        }
    }
}

impl From<CompactTrigger> for contenox::CompactTrigger {
    fn from(t: CompactTrigger) -> Self {
        match t {
            CompactTrigger::Auto => contenox::CompactTrigger::Auto,
            CompactTrigger::Manual => contenox::CompactTrigger::Manual,
        }
    }
}

/// What the gate decided for one call, as reported in [`Event::Gate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum GateVerdict {
    /// The call runs.
    Allow,
    /// The call is refused with an error result.
    Deny,
    /// The call waits for the host's `WaitFor`.
    Ask,
}

impl From<contenox::GateVerdict> for GateVerdict {
    fn from(v: contenox::GateVerdict) -> Self {
        match v {
            contenox::GateVerdict::Allow => GateVerdict::Allow,
            contenox::GateVerdict::Deny => GateVerdict::Deny,
            contenox::GateVerdict::Ask => GateVerdict::Ask,
        }
    }
}

impl From<GateVerdict> for contenox::GateVerdict {
    fn from(v: GateVerdict) -> Self {
        match v {
            GateVerdict::Allow => contenox::GateVerdict::Allow,
            GateVerdict::Deny => contenox::GateVerdict::Deny,
            GateVerdict::Ask => contenox::GateVerdict::Ask,
        }
    }
}

/// One thing that happened in a turn: the engine's `Event`, typed. `toJson()` gives the engine's
/// own JSON (a `type` tag in snake_case), the same in every language binding.
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum Event {
    /// The turn began.
    TurnStart {
        /// The user's prompt.
        prompt: String,
    },
    /// A model request is about to be sent (once per HTTP attempt).
    Request {
        /// 0-based index of the model response this request asks for, within the turn.
        index: u32,
        /// 0 for the first attempt, 1.. for retries.
        attempt: u32,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// A piece of streamed text.
    TextDelta {
        /// The new text.
        text: String,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// The whole text of one model response.
    Text {
        /// The text.
        text: String,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// The model asked for a tool call.
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool name (unwrapped from `call_tool`).
        name: String,
        /// The arguments as JSON text (a JSON string when the model sent text that is not JSON).
        arguments_json: String,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// The gate's decision for a call.
    Gate {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// allow / deny / ask.
        decision: GateVerdict,
        /// The deny message, when denied.
        message: Option<String>,
        /// The tool's hints.
        hints: Hints,
        /// Where the tool comes from.
        source: Source,
        /// The approval policy's rule that matched, when a policy is set.
        rule: Option<String>,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// A call waits for the host's answer.
    Pending {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The request given to `WaitFor`.
        request: PendingRequest,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// The host answered a pending request (or the ask timed out, which denies).
    Answer {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The answer.
        answer: Answer,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// A tool is about to execute.
    ToolStart {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// A call's result, as the model will see it.
    ToolResult {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The text sent to the model.
        content: String,
        /// Whether it is an error result.
        is_error: bool,
        /// Metadata of the result, as JSON text.
        metadata_json: Option<String>,
        /// Tokens the tool spent on models (a subagent's turn); counted in the turn's usage.
        usage: Option<Usage>,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// Progress reported by a running tool.
    Progress {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// Free-form progress data, as JSON text.
        data_json: String,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// The turn's task list, replaced whole by `todo_write`.
    Todos {
        /// The task list, as JSON text.
        todos_json: String,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// Usage of one model response.
    Usage {
        /// Tokens read and written by that response.
        usage: Usage,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// The older part of the conversation was replaced by one summary (or by what the host's
    /// compactor returned).
    Compact {
        /// `Auto` (over the threshold, or a context-length refusal) or `Manual`.
        trigger: CompactTrigger,
        /// The context's size before, in tokens.
        pre_tokens: u64,
        /// The context's size after, in tokens (estimated).
        post_tokens: u64,
        /// The summary; absent when a host compactor did it.
        summary: Option<String>,
        /// What the summary request cost; counted in the turn's usage.
        usage: Usage,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// A model request failed and will be retried.
    Retry {
        /// The attempt that failed (0-based).
        attempt: u32,
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// What went wrong.
        error: String,
        /// How long the engine waits before the next attempt.
        wait_ms: u64,
        /// The subagent chain this event comes from, outermost first (`["researcher"]`);
        /// empty for the client's own events.
        agent: Vec<String>,
    },
    /// The turn ended. Every stream ends with exactly one of these.
    TurnEnd {
        /// How it ended.
        outcome: Outcome,
        /// The text of the turn's last model response.
        final_text: String,
        /// Usage summed over the turn.
        usage: Usage,
        /// What went wrong, for outcome `Error`.
        error: Option<String>,
    },
    /// An event kind this binding does not know yet (the engine is newer): its `type` tag and
    /// its JSON.
    Other {
        /// The `type` tag.
        kind: String,
        /// The event's JSON.
        json: String,
    },
}

fn json_text(v: &Value) -> String {
    v.to_string()
}

/// Every `…Json` field of an event the engine sent was made by `json_text`, so this only falls
/// back for an event the host built by hand with text that is not JSON: that text is kept as a
/// JSON string.
fn json_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

impl From<contenox::Event> for Event {
    fn from(e: contenox::Event) -> Self {
        use contenox::Event as E;
        match e {
            E::TurnStart { prompt } => Event::TurnStart { prompt },
            E::Request {
                index,
                attempt,
                agent,
            } => Event::Request {
                index,
                attempt,
                agent,
            },
            E::TextDelta { text, agent } => Event::TextDelta { text, agent },
            E::Text { text, agent } => Event::Text { text, agent },
            E::ToolCall {
                call_id,
                name,
                arguments,
                agent,
            } => Event::ToolCall {
                call_id,
                name,
                arguments_json: json_text(&arguments),
                agent,
            },
            E::Gate {
                call_id,
                name,
                decision,
                message,
                hints,
                source,
                rule,
                agent,
            } => Event::Gate {
                call_id,
                name,
                decision: decision.into(),
                message,
                hints: hints.into(),
                source: source.into(),
                rule,
                agent,
            },
            E::Pending {
                call_id,
                name,
                request,
                agent,
            } => Event::Pending {
                call_id,
                name,
                request: request.into(),
                agent,
            },
            E::Answer {
                call_id,
                name,
                answer,
                agent,
            } => Event::Answer {
                call_id,
                name,
                answer: answer.into(),
                agent,
            },
            E::ToolStart {
                call_id,
                name,
                agent,
            } => Event::ToolStart {
                call_id,
                name,
                agent,
            },
            E::ToolResult {
                call_id,
                name,
                content,
                is_error,
                metadata,
                usage,
                agent,
            } => Event::ToolResult {
                call_id,
                name,
                content,
                is_error,
                metadata_json: metadata.as_ref().map(json_text),
                usage: usage.map(Usage::from),
                agent,
            },
            E::Progress {
                call_id,
                name,
                data,
                agent,
            } => Event::Progress {
                call_id,
                name,
                data_json: json_text(&data),
                agent,
            },
            E::Todos { todos, agent } => Event::Todos {
                todos_json: json_text(&todos),
                agent,
            },
            E::Usage { usage, agent } => Event::Usage {
                usage: usage.into(),
                agent,
            },
            E::Compact {
                trigger,
                pre_tokens,
                post_tokens,
                summary,
                usage,
                agent,
            } => Event::Compact {
                trigger: trigger.into(),
                pre_tokens,
                post_tokens,
                summary,
                usage: usage.into(),
                agent,
            },
            E::Retry {
                attempt,
                status,
                error,
                wait_ms,
                agent,
            } => Event::Retry {
                attempt,
                status,
                error,
                wait_ms,
                agent,
            },
            E::TurnEnd {
                outcome,
                final_text,
                usage,
                error,
            } => Event::TurnEnd {
                outcome: outcome.into(),
                final_text,
                usage: usage.into(),
                error,
            },
            other => Event::Other {
                kind: other.kind().to_string(),
                json: serde_json::to_string(&other).expect("an event always serializes"),
            },
        }
    }
}

impl Event {
    /// The engine's event this one mirrors; `Err` holds the JSON of an [`Event::Other`].
    fn to_core(&self) -> Result<contenox::Event, String> {
        use contenox::Event as E;
        Ok(match self.clone() {
            Event::TurnStart { prompt } => E::TurnStart { prompt },
            Event::Request {
                index,
                attempt,
                agent,
            } => E::Request {
                index,
                attempt,
                agent,
            },
            Event::TextDelta { text, agent } => E::TextDelta { text, agent },
            Event::Text { text, agent } => E::Text { text, agent },
            Event::ToolCall {
                call_id,
                name,
                arguments_json,
                agent,
            } => E::ToolCall {
                call_id,
                name,
                arguments: json_value(&arguments_json),
                agent,
            },
            Event::Gate {
                call_id,
                name,
                decision,
                message,
                hints,
                source,
                rule,
                agent,
            } => E::Gate {
                call_id,
                name,
                decision: decision.into(),
                message,
                hints: hints.into(),
                source: source.into(),
                rule,
                agent,
            },
            Event::Pending {
                call_id,
                name,
                request,
                agent,
            } => E::Pending {
                call_id,
                name,
                request: contenox::PendingRequest {
                    kind: request.kind,
                    prompt: request.prompt,
                    timeout_ms: request.timeout_ms,
                    data: request.data_json.map(|d| json_value(&d)),
                    call_id: request.call_id,
                    name: request.name,
                    arguments: json_value(&request.arguments_json),
                },
                agent,
            },
            Event::Answer {
                call_id,
                name,
                answer,
                agent,
            } => E::Answer {
                call_id,
                name,
                answer: match answer {
                    Answer::Approve => contenox::Answer::Approve,
                    Answer::Deny { message } => contenox::Answer::Deny(message),
                    Answer::Result { value_json } => {
                        contenox::Answer::Result(json_value(&value_json))
                    }
                },
                agent,
            },
            Event::ToolStart {
                call_id,
                name,
                agent,
            } => E::ToolStart {
                call_id,
                name,
                agent,
            },
            Event::ToolResult {
                call_id,
                name,
                content,
                is_error,
                metadata_json,
                usage,
                agent,
            } => E::ToolResult {
                call_id,
                name,
                content,
                is_error,
                metadata: metadata_json.map(|m| json_value(&m)),
                usage: usage.map(contenox::Usage::from),
                agent,
            },
            Event::Progress {
                call_id,
                name,
                data_json,
                agent,
            } => E::Progress {
                call_id,
                name,
                data: json_value(&data_json),
                agent,
            },
            Event::Todos { todos_json, agent } => E::Todos {
                todos: json_value(&todos_json),
                agent,
            },
            Event::Usage { usage, agent } => E::Usage {
                usage: usage.into(),
                agent,
            },
            Event::Compact {
                trigger,
                pre_tokens,
                post_tokens,
                summary,
                usage,
                agent,
            } => E::Compact {
                trigger: trigger.into(),
                pre_tokens,
                post_tokens,
                summary,
                usage: usage.into(),
                agent,
            },
            Event::Retry {
                attempt,
                status,
                error,
                wait_ms,
                agent,
            } => E::Retry {
                attempt,
                status,
                error,
                wait_ms,
                agent,
            },
            Event::TurnEnd {
                outcome,
                final_text,
                usage,
                error,
            } => E::TurnEnd {
                outcome: outcome.into(),
                final_text,
                usage: usage.into(),
                error,
            },
            Event::Other { json, .. } => return Err(json),
        })
    }
}

#[uniffi::export]
impl Event {
    /// The engine's JSON of this event: `{"type": "tool_call", "call_id": ..., ...}`.
    pub fn to_json(&self) -> String {
        match self.to_core() {
            Ok(e) => serde_json::to_string(&e).expect("an event always serializes"),
            Err(raw) => raw,
        }
    }

    /// The `type` tag (`turn_start`, `tool_call`, ...).
    pub fn kind(&self) -> String {
        match self {
            Event::TurnStart { .. } => "turn_start",
            Event::Request { .. } => "request",
            Event::TextDelta { .. } => "text_delta",
            Event::Text { .. } => "text",
            Event::ToolCall { .. } => "tool_call",
            Event::Gate { .. } => "gate",
            Event::Pending { .. } => "pending",
            Event::Answer { .. } => "answer",
            Event::ToolStart { .. } => "tool_start",
            Event::ToolResult { .. } => "tool_result",
            Event::Progress { .. } => "progress",
            Event::Todos { .. } => "todos",
            Event::Usage { .. } => "usage",
            Event::Compact { .. } => "compact",
            Event::Retry { .. } => "retry",
            Event::TurnEnd { .. } => "turn_end",
            Event::Other { kind, .. } => kind,
        }
        .to_string()
    }

    /// The tool this event is about, if any.
    pub fn tool_name(&self) -> Option<String> {
        match self {
            Event::ToolCall { name, .. }
            | Event::Gate { name, .. }
            | Event::Pending { name, .. }
            | Event::Answer { name, .. }
            | Event::ToolStart { name, .. }
            | Event::ToolResult { name, .. }
            | Event::Progress { name, .. } => Some(name.clone()),
            _ => None,
        }
    }
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct ToolCall {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments as JSON text (a JSON string holding the raw text when it was not JSON).
    pub arguments_json: String,
    /// True when the model's arguments were not valid JSON.
    pub raw_arguments: bool,
    /// Set when the model reached the tool through `call_tool`.
    pub via: Option<String>,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, uniffi::Enum)]
pub enum Message {
    /// The user's prompt.
    User {
        /// The prompt text.
        content: String,
    },
    /// One model response.
    Assistant {
        /// Its text (may be empty).
        content: String,
        /// Its tool calls, in the model's order.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The call id it answers.
        call_id: String,
        /// The tool name.
        name: String,
        /// The text the model sees.
        content: String,
        /// Whether this is an error result.
        is_error: bool,
    },
}

impl From<&contenox::Message> for Message {
    fn from(m: &contenox::Message) -> Self {
        match m {
            contenox::Message::User { content } => Message::User {
                content: content.clone(),
            },
            contenox::Message::Assistant {
                content,
                tool_calls,
            } => Message::Assistant {
                content: content.clone(),
                tool_calls: tool_calls
                    .iter()
                    .map(|c| ToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments_json: c.arguments.to_string(),
                        raw_arguments: c.raw_arguments,
                        via: c.via.clone(),
                    })
                    .collect(),
            },
            contenox::Message::Tool {
                call_id,
                name,
                content,
                is_error,
            } => Message::Tool {
                call_id: call_id.clone(),
                name: name.clone(),
                content: content.clone(),
                is_error: *is_error,
            },
        }
    }
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
        self.inner.messages.iter().map(Message::from).collect()
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
    pub outcome: Outcome,
    /// The text of the turn's last model response.
    pub final_text: String,
    /// Usage summed over the turn's model responses.
    pub usage: Usage,
    /// What went wrong, for outcome `Error`.
    pub error: Option<String>,
    /// The whole conversation after the turn.
    pub transcript: Arc<Transcript>,
}

impl From<contenox::TurnResult> for TurnResult {
    fn from(r: contenox::TurnResult) -> Self {
        TurnResult {
            outcome: r.outcome.into(),
            final_text: r.final_text,
            usage: r.usage.into(),
            error: r.error,
            transcript: Arc::new(Transcript {
                inner: r.transcript,
            }),
        }
    }
}

/// A model the server offers.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ModelInfo {
    /// The name to pass as `model`.
    pub id: String,
    /// A human-readable name, when the server gives one.
    pub display_name: Option<String>,
}

impl From<contenox::ModelInfo> for ModelInfo {
    fn from(m: contenox::ModelInfo) -> Self {
        ModelInfo {
            id: m.id,
            display_name: m.display_name,
        }
    }
}
