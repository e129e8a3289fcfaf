//! Events a turn emits, the outcome it ends with, and token usage.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::gate::{Answer, PendingRequest};
use crate::tool_spec::{Hints, Source};
use crate::transcript::Transcript;

/// How a turn ended.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model gave a final answer.
    Done,
    /// The turn was cancelled; the transcript is kept and valid.
    Cancelled,
    /// The turn reached `max_turns` model responses.
    MaxTurns,
    /// The model could not be reached or answered badly; see the final event's `error`.
    Error,
    /// A compute ceiling (`max_tool_calls`, `max_turn_tokens`, or the policy's `compute`) was
    /// reached; the final event's `error` names it. Calls left unexecuted got the error result
    /// `budget reached: ...`, so the transcript stays valid.
    Budget,
    /// The turn has an `output_schema`, and its final answer did not match it after
    /// `output_retries` corrections (or stopped short: see `stop_reason`): `error` says why,
    /// `final_text` is the raw answer, `output` is absent.
    OutputInvalid,
    /// The host answered an ask `{"suspend": true}`: the turn stopped there, its result's
    /// `checkpoint` holds everything [`Client::resume`](crate::Client::resume) needs to
    /// continue it (in this process or another, with the same config), and `pending` the
    /// requests waiting for an answer.
    Suspended,
}

impl Outcome {
    /// The snake_case name used on every wire (`done`, `cancelled`, `max_turns`, `error`,
    /// `budget`, `output_invalid`, `suspended`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Cancelled => "cancelled",
            Outcome::MaxTurns => "max_turns",
            Outcome::Error => "error",
            Outcome::Budget => "budget",
            Outcome::OutputInvalid => "output_invalid",
            Outcome::Suspended => "suspended",
        }
    }
}

/// Why a model reply stopped short of a full answer. A reply with one of these ends the turn:
/// the `stop` event says so as it happens, and the result's `stop_reason` after.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model refused to answer (anthropic `refusal`, openai `refusal`); the text, if any, is
    /// its refusal.
    Refusal,
    /// The provider's content filter cut the reply (openai `content_filter`).
    ContentFilter,
    /// The reply reached `max_tokens` and was cut (anthropic `max_tokens`, openai `length`,
    /// ollama `length`): its text is incomplete, and calls it made are not executed (they get
    /// an error result saying so), since their arguments may be cut too.
    MaxTokens,
}

impl StopReason {
    /// The snake_case name used on every wire (`refusal`, `content_filter`, `max_tokens`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Refusal => "refusal",
            StopReason::ContentFilter => "content_filter",
            StopReason::MaxTokens => "max_tokens",
        }
    }
}

/// Token usage, per request or summed over a turn.
///
/// `input_tokens` counts every token the model read, cached or not; the two cache fields say
/// how many of them were read from the server's prompt cache and how many were written to it
/// (each style's own fields: anthropic `cache_read_input_tokens` /
/// `cache_creation_input_tokens` on top of its `input_tokens`, openai
/// `prompt_tokens_details.cached_tokens` within its `prompt_tokens`; ollama reports neither).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens the model read (the whole prompt: cached, written to the cache, or neither).
    pub input_tokens: u64,
    /// Tokens the model wrote.
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the server's prompt cache (left out of the JSON
    /// when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// Of `input_tokens`, those written to the server's prompt cache (left out of the JSON
    /// when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
    /// Of `output_tokens`, those the model spent reasoning (openai-responses
    /// `output_tokens_details.reasoning_tokens`; left out of the JSON when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Add another usage to this one.
    pub fn add(&mut self, other: Usage) {
        // Saturating: a hostile server may report any count.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(other.cache_read_input_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }

    /// Whether nothing was reported.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// What the gate decided for one call, as reported in [`Event::Gate`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    /// The call runs.
    Allow,
    /// The call is refused with an error result.
    Deny,
    /// The call waits for the host's `wait_for`.
    Ask,
}

/// What started a compaction, as reported in [`Event::Compact`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The engine: the context measured over `compaction.threshold_tokens` before a request,
    /// or the server refused a request as over its context length.
    Auto,
    /// The host: `client.compact()`.
    Manual,
}

/// One thing that happened in a turn. Serialized with a `type` tag in snake_case, the same in
/// every language binding.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
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
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A piece of streamed text.
    TextDelta {
        /// The new text.
        text: String,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The answer so far, read as JSON (a turn with an `output_schema`): the best-effort value
    /// of the streamed text's prefix, open strings, arrays and objects closed. Sent when it
    /// changes; not validated (the result's `output` is). A new request starts over.
    OutputDelta {
        /// The partial value.
        output: serde_json::Value,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The whole text of one model response (emitted when the response is complete).
    Text {
        /// The text.
        text: String,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A piece of the model's streamed reasoning (its thinking, where the server shows it:
    /// openai-style `reasoning_content` / `reasoning`, Mistral `thinking` parts, anthropic
    /// `thinking` blocks, ollama `message.thinking`).
    ReasoningDelta {
        /// The new reasoning text.
        text: String,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The whole text of one reasoning part of a model response (emitted when the response is
    /// complete, before its `text`; encrypted reasoning, which has no text, emits none).
    Reasoning {
        /// The reasoning text.
        text: String,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The model asked for a tool call (emitted when the call is complete).
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool name (unwrapped from `call_tool`).
        name: String,
        /// The arguments: parsed JSON, or the raw string when they were not JSON.
        arguments: Value,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The gate's decision for a call (emitted for every call that reaches the gate).
    Gate {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// allow / deny / ask.
        decision: GateVerdict,
        /// The deny message, when denied.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// The tool's hints.
        hints: Hints,
        /// Where the tool comes from.
        source: Source,
        /// The approval policy's rule that matched the call (`rules[3]`, `rules[3] ("name")`,
        /// `default_action`), when a policy is set; the `decision` is the final verdict (a host
        /// `before_tool` may have narrowed what the rule allowed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<String>,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A call waits for the host's answer.
    Pending {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The request given to `wait_for`.
        request: PendingRequest,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A tool is about to execute.
    ToolStart {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
        /// Metadata of the result (for example `truncated`, `nextOffset`, `total`).
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        /// Tokens the tool spent on models (a subagent's turn usage); counted in the turn's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// Progress reported by a running tool.
    Progress {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// Free-form progress data.
        data: Value,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The turn's task list, replaced whole by `todo_write`.
    Todos {
        /// The task list.
        todos: Value,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// Usage of one model response.
    Usage {
        /// Tokens read and written by that response.
        usage: Usage,
        /// The model that answered (the config's `model`, a chain task's, or the `fallback`
        /// model the turn moved to): a host adds usage up per model from these.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The older part of the conversation was replaced by one summary message (or by what the
    /// host's compactor returned).
    Compact {
        /// `auto` (over `compaction.threshold_tokens`, or a server refusing the request as over
        /// its context length) or `manual` (`client.compact()`).
        trigger: CompactTrigger,
        /// The context's size before, in tokens (measured as the next request would be).
        pre_tokens: u64,
        /// The context's size after, in tokens (estimated).
        post_tokens: u64,
        /// The summary that replaced the older messages; absent when a host compactor did it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// What the summary request cost (zero for a host compactor); counted in the turn's
        /// usage (no `usage` event is emitted for it).
        #[serde(default)]
        usage: Usage,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A model reply stopped short of a full answer (refused, filtered, cut at `max_tokens`):
    /// the turn ends after it, and the result's `stop_reason` says the same.
    Stop {
        /// Why.
        reason: StopReason,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A model request failed and will be retried.
    Retry {
        /// The attempt that failed (0-based).
        attempt: u32,
        /// The HTTP status, when there was one.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// What went wrong.
        error: String,
        /// How long the engine waits before the next attempt.
        wait_ms: u64,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The model failed for good (after its retries) with an overload, a rate limit, a server
    /// error, a failed connection or a timeout, before any byte of an answer: the same request
    /// goes to the next model of the config's `fallback`, which answers the rest of the turn.
    Fallback {
        /// The model that failed.
        from_model: String,
        /// The model the request goes to now.
        to_model: String,
        /// Its HTTP status, when there was one (529, 429, 503, ...).
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// What went wrong (redacted).
        error: String,
        /// The subagent chain this event comes from; see [`Event::agent`].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A task of a chain starts ([`crate::Client::run_chain`]).
    ChainTaskStart {
        /// The task's id.
        task_id: String,
        /// Its handler, as the chain wrote it (`chat_completion`, `execute_tool_calls`, ...).
        handler: String,
    },
    /// A task of a chain ended: its transition value and where the chain goes next.
    ChainTaskEnd {
        /// The task's id.
        task_id: String,
        /// Its handler, as the chain wrote it.
        handler: String,
        /// The value its branches were matched against (`tool-call`, `stop`,
        /// `tools_executed`, a tool's result, ...; cut at 4 KiB); absent when it failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        /// The task that runs next; absent when the chain ends here.
        #[serde(skip_serializing_if = "Option::is_none")]
        next: Option<String>,
        /// Why the task failed (then `next` is its `on_failure`, if any).
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The turn ended. Every stream ends with exactly one of these.
    TurnEnd {
        /// How it ended.
        outcome: Outcome,
        /// The text of the turn's last model response.
        final_text: String,
        /// Usage summed over the turn.
        usage: Usage,
        /// What went wrong, for outcome `error`; which ceiling, for outcome `budget`.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl Event {
    /// The `type` tag of this event (`turn_start`, `tool_call`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::TurnStart { .. } => "turn_start",
            Event::Request { .. } => "request",
            Event::TextDelta { .. } => "text_delta",
            Event::OutputDelta { .. } => "output_delta",
            Event::Text { .. } => "text",
            Event::ReasoningDelta { .. } => "reasoning_delta",
            Event::Reasoning { .. } => "reasoning",
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
            Event::Stop { .. } => "stop",
            Event::Retry { .. } => "retry",
            Event::Fallback { .. } => "fallback",
            Event::ChainTaskStart { .. } => "chain_task_start",
            Event::ChainTaskEnd { .. } => "chain_task_end",
            Event::TurnEnd { .. } => "turn_end",
        }
    }

    /// The chain of subagents this event comes from, outermost first (`["researcher"]`,
    /// `["planner", "researcher"]`); empty, and left out of the JSON, for the client's own.
    pub fn agent(&self) -> &[String] {
        match self {
            // A chain is a host's own run (no subagent runs one): its task events, like the
            // turn's frame, carry no agent.
            Event::TurnStart { .. }
            | Event::TurnEnd { .. }
            | Event::ChainTaskStart { .. }
            | Event::ChainTaskEnd { .. } => &[],
            Event::Request { agent, .. }
            | Event::TextDelta { agent, .. }
            | Event::OutputDelta { agent, .. }
            | Event::Text { agent, .. }
            | Event::ReasoningDelta { agent, .. }
            | Event::Reasoning { agent, .. }
            | Event::ToolCall { agent, .. }
            | Event::Gate { agent, .. }
            | Event::Pending { agent, .. }
            | Event::Answer { agent, .. }
            | Event::ToolStart { agent, .. }
            | Event::ToolResult { agent, .. }
            | Event::Progress { agent, .. }
            | Event::Todos { agent, .. }
            | Event::Usage { agent, .. }
            | Event::Compact { agent, .. }
            | Event::Stop { agent, .. }
            | Event::Retry { agent, .. }
            | Event::Fallback { agent, .. } => agent,
        }
    }

    /// Tag the event as coming from the subagent chain `chain` (events already tagged, from
    /// deeper subagents, keep their longer chain). `false` for `turn_start` / `turn_end`, which
    /// a subagent's turn does not forward: its tool call's `tool_start` / `tool_result` frame it.
    pub(crate) fn tag_agent(&mut self, chain: &[String]) -> bool {
        let agent = match self {
            Event::TurnStart { .. }
            | Event::TurnEnd { .. }
            | Event::ChainTaskStart { .. }
            | Event::ChainTaskEnd { .. } => return false,
            Event::Request { agent, .. }
            | Event::TextDelta { agent, .. }
            | Event::OutputDelta { agent, .. }
            | Event::Text { agent, .. }
            | Event::ReasoningDelta { agent, .. }
            | Event::Reasoning { agent, .. }
            | Event::ToolCall { agent, .. }
            | Event::Gate { agent, .. }
            | Event::Pending { agent, .. }
            | Event::Answer { agent, .. }
            | Event::ToolStart { agent, .. }
            | Event::ToolResult { agent, .. }
            | Event::Progress { agent, .. }
            | Event::Todos { agent, .. }
            | Event::Usage { agent, .. }
            | Event::Compact { agent, .. }
            | Event::Stop { agent, .. }
            | Event::Retry { agent, .. }
            | Event::Fallback { agent, .. } => agent,
        };
        if agent.is_empty() {
            agent.extend(chain.iter().cloned());
        }
        true
    }

    /// The tool name this event is about, if any.
    pub fn tool_name(&self) -> Option<&str> {
        match self {
            Event::ToolCall { name, .. }
            | Event::Gate { name, .. }
            | Event::Pending { name, .. }
            | Event::Answer { name, .. }
            | Event::ToolStart { name, .. }
            | Event::ToolResult { name, .. }
            | Event::Progress { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// What a finished turn returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnResult {
    /// How the turn ended.
    pub outcome: Outcome,
    /// The text of the turn's last model response.
    pub final_text: String,
    /// Usage summed over the turn's model responses.
    pub usage: Usage,
    /// What went wrong, for outcome `error`; which ceiling, for outcome `budget`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the last model reply stopped short of a full answer (refused, filtered, cut at
    /// `max_tokens`), when it did; the turn ended there (outcome `done`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// The final answer parsed and validated against the turn's `output_schema`: present
    /// exactly when the turn has one and the outcome is `done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// The whole conversation after the turn (for outcome `suspended`: the conversation before
    /// the reply whose call is waiting; the checkpoint holds the reply).
    pub transcript: Transcript,
    /// For outcome `suspended`: the checkpoint, as JSON text, to give
    /// [`Client::resume`](crate::Client::resume) (it holds no secret of the config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// For outcome `suspended`: the requests waiting for an answer, each with its `call_id`
    /// (answers to [`Client::resume`](crate::Client::resume) are keyed by it) and its
    /// `deadline_ms`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingRequest>,
}
