//! The engine's `Event`, typed for Kotlin (a sealed class; `when` over it is exhaustive) and
//! Swift (an enum). It has the engine's JSON shape through serde, so it is read from the
//! engine's event and written back (`toJson()`) without a field-by-field copy, and
//! `tests/event_schema.rs` checks it against the one event vocabulary,
//! `tests/conformance/event-schema.json`: a new or changed core event fails it until it is
//! mirrored here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::convert::{answer_wire, json_text, via_json, Answer, PendingRequest};

/// One thing that happened in a turn. `toJson()` gives the engine's own JSON (a `type` tag in
/// snake_case), the same in every language binding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Enum)]
#[serde(tag = "type", rename_all = "snake_case")]
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
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A piece of streamed text.
    TextDelta {
        /// The new text.
        text: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The answer so far, read as JSON (a turn with an `output_schema`): the best-effort value of
    /// the streamed text's prefix, as JSON text. Sent when it changes; not validated (the
    /// result's `outputJson` is).
    OutputDelta {
        /// The partial value as JSON text.
        #[serde(rename = "output", with = "json_text")]
        output_json: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The whole text of one model response.
    Text {
        /// The text.
        text: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A piece of the model's streamed reasoning (its thinking, where the server shows it).
    ReasoningDelta {
        /// The new reasoning text.
        text: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The whole text of one reasoning part of a model response (before its `Text`).
    Reasoning {
        /// The reasoning text.
        text: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The model asked for a tool call.
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool name (unwrapped from `call_tool`).
        name: String,
        /// The arguments as JSON text (a JSON string when the model sent text that is not JSON).
        #[serde(rename = "arguments", with = "json_text")]
        arguments_json: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The gate's decision for a call.
    Gate {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// allow / deny / ask.
        decision: contenox::GateVerdict,
        /// The deny message, when denied.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// The tool's hints.
        hints: contenox::Hints,
        /// Where the tool comes from.
        source: contenox::Source,
        /// The approval policy's rule that matched, when a policy is set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<String>,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
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
        #[serde(with = "answer_wire")]
        answer: Answer,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A tool is about to execute.
    ToolStart {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
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
        /// Metadata of the result, as JSON text.
        #[serde(
            rename = "metadata",
            default,
            skip_serializing_if = "Option::is_none",
            with = "json_text::option"
        )]
        metadata_json: Option<String>,
        /// Tokens the tool spent on models (a subagent's turn usage); counted in the turn's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<contenox::Usage>,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// Progress reported by a running tool.
    Progress {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// Free-form progress data, as JSON text.
        #[serde(rename = "data", with = "json_text")]
        data_json: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The turn's task list, replaced whole by `todo_write`.
    Todos {
        /// The task list, as JSON text.
        #[serde(rename = "todos", with = "json_text")]
        todos_json: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// Usage of one model response.
    Usage {
        /// Tokens read and written by that response.
        usage: contenox::Usage,
        /// The model that answered (the config's, a chain task's, or the `fallback` model the
        /// turn moved to).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The older part of the conversation was replaced by one summary message (or by what the
    /// host's compactor returned).
    Compact {
        /// `Auto` (over `compaction.threshold_tokens`, or a server refusing the request as too
        /// long) or `Manual` (`compact()`).
        trigger: contenox::CompactTrigger,
        /// The context's size before, in tokens.
        pre_tokens: u64,
        /// The context's size after, in tokens (estimated).
        post_tokens: u64,
        /// The summary that replaced the older messages; absent when a host compactor did it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// What the summary request cost; counted in the turn's usage.
        #[serde(default)]
        usage: contenox::Usage,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A model reply stopped short of a full answer (refused, filtered, cut at `max_tokens`);
    /// the turn ends after it.
    Stop {
        /// Why.
        reason: contenox::StopReason,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A model request failed and will be retried.
    Retry {
        /// The attempt that failed (0-based).
        attempt: u32,
        /// The HTTP status, when there was one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// What went wrong.
        error: String,
        /// How long the engine waits before the next attempt.
        wait_ms: u64,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// The model failed after its retries (overload, rate limit, server error, failed
    /// connection, timeout, before any byte of an answer): the request goes to the next
    /// `fallback` model, which answers the rest of the turn.
    Fallback {
        /// The model that failed.
        from_model: String,
        /// The model the request goes to now.
        to_model: String,
        /// Its HTTP status, when there was one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// What went wrong.
        error: String,
        /// The subagent chain this event comes from (`["researcher"]`); empty for the client's
        /// own.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        agent: Vec<String>,
    },
    /// A task of a chain starts (`Client.runChain`).
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
        /// The value its branches were matched against; absent when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        /// The task that runs next; absent when the chain ends here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next: Option<String>,
        /// Why the task failed (then `next` is its `on_failure`, if any).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The turn ended. Every stream ends with exactly one of these.
    TurnEnd {
        /// How it ended.
        outcome: contenox::Outcome,
        /// The text of the turn's last model response.
        final_text: String,
        /// Usage summed over the turn.
        usage: contenox::Usage,
        /// What went wrong, for outcome `Error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl Event {
    /// The engine's event as this type; `None` only for an event kind this binding does not
    /// mirror, which the schema tests (`tests/event_schema.rs`) rule out.
    pub fn from_core(event: &contenox::Event) -> Option<Event> {
        via_json(event).ok()
    }

    fn json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[uniffi::export]
impl Event {
    /// The engine's JSON of this event: `{"type": "tool_call", "call_id": ..., ...}`.
    pub fn to_json(&self) -> String {
        self.json().to_string()
    }

    /// The `type` tag (`turn_start`, `tool_call`, ...).
    pub fn kind(&self) -> String {
        self.json()["type"].as_str().unwrap_or_default().to_string()
    }

    /// The tool this event is about, if any.
    pub fn tool_name(&self) -> Option<String> {
        self.json()["name"].as_str().map(str::to_string)
    }

    /// The chain of subagents this event comes from, outermost first (`["researcher"]`);
    /// empty for the client's own events.
    pub fn agent(&self) -> Vec<String> {
        self.json()["agent"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}
