//! What the lifecycle hooks of [`crate::Hooks`] see and answer: the points of a turn beside
//! `before_tool` / `after_tool` (see `docs/hooks.md` for every point, what it may do and its
//! fallback when the hook fails), and the two facts of a turn's life they name: how it ended
//! ([`Outcome`]) and what started a compaction ([`CompactTrigger`]) (here rather than in
//! `event`, which reports them, so that `gate` can name them without a cycle).

use serde::{Deserialize, Serialize};

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

/// What `on_prompt` decides about a turn's prompt (before the first model request).
///
/// Its JSON form (how the Python and Node bindings hand a host's answer over) is serde's
/// external tagging: `"continue"`, `{"replace": TEXT}`, `{"add_context": TEXT}`,
/// `{"refuse": REASON}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptAction {
    /// Send the prompt as it is.
    Continue,
    /// Send this text instead of the prompt's text (its images stay).
    Replace(String),
    /// Send the prompt with this text added after it (as a text part of the same message).
    AddContext(String),
    /// Do not send it: the turn ends with outcome `error`, its `error` saying
    /// `the prompt was refused by a hook: {reason}`; the conversation is left unchanged and no
    /// model request is made.
    Refuse(String),
}

/// What `on_stop` decides when the model gave its final answer. JSON: `"stop"`,
/// `{"continue": MESSAGE}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopAction {
    /// Let the turn end.
    Stop,
    /// Send the model back to work with this message (a user message), within `max_turns`: at
    /// the last response `max_turns` allows the turn ends anyway (outcome `done`).
    Continue(String),
}

/// What `before_compact` decides about a compaction about to run. JSON: `"proceed"`,
/// `{"instructions": TEXT}`, `{"veto": REASON}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactAction {
    /// Compact with the configured instructions.
    Proceed,
    /// Compact with these instructions for the summary instead.
    Instructions(String),
    /// Do not compact now: the conversation stays whole (a compaction the server's context
    /// limit called for then leaves that request failed).
    Veto(String),
}

/// The compaction `before_compact` is asked about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactRequest {
    /// `auto` (the threshold, or the server's context limit) or `manual` (`client.compact()`).
    pub trigger: CompactTrigger,
    /// The context's size now, in tokens.
    pub pre_tokens: u64,
    /// The configured summary instructions (`compaction.instructions`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// What `on_notification` is told about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// A call waits for the host's answer (an ask was raised).
    Ask,
    /// The turn is near one of its ceilings: one model response left before `max_turns`, or
    /// 80 % of `max_tool_calls` / `max_turn_tokens` spent.
    BudgetNear,
}

impl NotificationKind {
    /// The snake_case name (`ask`, `budget_near`).
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::Ask => "ask",
            NotificationKind::BudgetNear => "budget_near",
        }
    }
}

/// A notification: something the host may want to show a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    /// What it is about.
    pub kind: NotificationKind,
    /// A sentence for a person.
    pub message: String,
}

/// How a turn ended, as `on_turn_end` sees it (the `turn_end` event's content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnEndInfo {
    /// The turn's outcome.
    pub outcome: Outcome,
    /// The text of the last model response.
    pub final_text: String,
    /// What went wrong (outcome `error`), which ceiling (outcome `budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The `error` of a turn whose prompt a hook refused.
pub fn refused_prompt_error(reason: &str) -> String {
    format!("the prompt was refused by a hook: {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The JSON forms the bindings send are the documented ones, both ways.
    #[test]
    fn answers_have_their_documented_json_forms() {
        let cases = [
            (json!("continue"), PromptAction::Continue),
            (json!({"replace": "x"}), PromptAction::Replace("x".into())),
            (
                json!({"add_context": "c"}),
                PromptAction::AddContext("c".into()),
            ),
            (json!({"refuse": "r"}), PromptAction::Refuse("r".into())),
        ];
        for (wire, action) in cases {
            assert_eq!(serde_json::to_value(&action).unwrap(), wire);
            assert_eq!(
                serde_json::from_value::<PromptAction>(wire).unwrap(),
                action
            );
        }
        assert_eq!(
            serde_json::from_value::<StopAction>(json!({"continue": "m"})).unwrap(),
            StopAction::Continue("m".into())
        );
        assert_eq!(
            serde_json::from_value::<StopAction>(json!("stop")).unwrap(),
            StopAction::Stop
        );
        assert_eq!(
            serde_json::from_value::<CompactAction>(json!({"veto": "v"})).unwrap(),
            CompactAction::Veto("v".into())
        );
        assert_eq!(
            serde_json::from_value::<CompactAction>(json!({"instructions": "i"})).unwrap(),
            CompactAction::Instructions("i".into())
        );
        // A misspelt answer is an error (the binding's fallback), never read as "continue".
        assert!(serde_json::from_value::<PromptAction>(json!({"refuse_it": "r"})).is_err());
        assert!(serde_json::from_value::<PromptAction>(json!({"refuse": 1})).is_err());
    }
}
