//! Events a turn emits, the outcome it ends with, and token usage.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::gate::{Answer, PendingRequest};
use crate::tool::{Hints, Source};
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
}

impl Outcome {
    /// The snake_case name used on every wire (`done`, `cancelled`, `max_turns`, `error`,
    /// `budget`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Cancelled => "cancelled",
            Outcome::MaxTurns => "max_turns",
            Outcome::Error => "error",
            Outcome::Budget => "budget",
        }
    }
}

/// Token usage, per request or summed over a turn.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens the model read.
    pub input_tokens: u64,
    /// Tokens the model wrote.
    pub output_tokens: u64,
}

impl Usage {
    /// Add another usage to this one.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
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
    },
    /// A piece of streamed text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// The whole text of one model response (emitted when the response is complete).
    Text {
        /// The text.
        text: String,
    },
    /// The model asked for a tool call (emitted when the call is complete).
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool name (unwrapped from `call_tool`).
        name: String,
        /// The arguments: parsed JSON, or the raw string when they were not JSON.
        arguments: Value,
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
    },
    /// A call waits for the host's answer.
    Pending {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The request given to `wait_for`.
        request: PendingRequest,
    },
    /// The host answered a pending request (or the ask timed out, which denies).
    Answer {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The answer.
        answer: Answer,
    },
    /// A tool is about to execute.
    ToolStart {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
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
    },
    /// Progress reported by a running tool.
    Progress {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// Free-form progress data.
        data: Value,
    },
    /// The turn's task list, replaced whole by `todo_write`.
    Todos {
        /// The task list.
        todos: Value,
    },
    /// Usage of one model response.
    Usage {
        /// Tokens read and written by that response.
        usage: Usage,
    },
    /// The conversation was compacted.
    Compact {
        /// Messages before compaction.
        before: u32,
        /// Messages after compaction.
        after: u32,
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
            Event::ChainTaskStart { .. } => "chain_task_start",
            Event::ChainTaskEnd { .. } => "chain_task_end",
            Event::TurnEnd { .. } => "turn_end",
        }
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
    /// The whole conversation after the turn.
    pub transcript: Transcript,
}
