//! `Stepper`: a turn stepped by its host (the engine's `contenox::step`) as a UniFFI object.
//! `Client.step(prompt, options)` starts it; `next()` hands out each model request, tool call,
//! compaction summary request and ask as an [`Action`], and the turn goes on only with the [`ActionResult`] the host gives
//! back: one it recorded before (`feed`: no I/O) or the one the engine gets by doing the I/O now
//! (`perform`). The same `options()` and the same results give the same actions, so a durable
//! engine records each result and replays them after a crash.
//!
//! The engine's step types are serde; the records here mirror them with free-form parts (the
//! request body, a reply, a call's arguments) as JSON text and convert through that JSON
//! ([`via_json`]), as the other mirrors do.

use serde::{Deserialize, Serialize};

use contenox::step::{ModelFailure, StepError, StepOptions};

use crate::convert::{
    answer_wire, json_text, via_json, Answer, PendingRequest, ToolOutput, TurnResult,
};
use crate::error::ContenoxError;
use crate::event::Event;

#[uniffi::remote(Record)]
pub struct StepOptions {
    #[uniffi(default = None)]
    pub turn_id: Option<String>,
    #[uniffi(default = None)]
    pub clock_ms: Option<u64>,
}

#[uniffi::remote(Record)]
pub struct ModelFailure {
    pub message: String,
    #[uniffi(default = false)]
    pub context_overflow: bool,
    #[uniffi(default = None)]
    pub malformed_call: Option<String>,
    #[uniffi(default = None)]
    pub status: Option<u16>,
}

/// A tool call a stepped turn hands out to be run (it passed the gate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Record)]
pub struct ToolCall {
    /// The call id (the engine's for styles without ids on the wire).
    pub id: String,
    /// The tool's name (for a call made through `call_tool`, the real tool's).
    pub name: String,
    /// The arguments as JSON text (a JSON string holding the raw text when they were not JSON).
    #[serde(rename = "arguments", with = "json_text")]
    pub arguments_json: String,
    /// True when the model's arguments were not valid JSON.
    #[serde(default)]
    pub raw_arguments: bool,
    /// Set when the model reached the tool through `call_tool`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// What a stepped turn waits for next.
#[derive(Debug, Clone, uniffi::Enum)]
pub enum Action {
    /// Send this request to the model and give back `ActionResult.ModelResponse` of the same
    /// `step` (or let `perform()` send it).
    ModelRequest {
        /// The turn's id.
        turn_id: String,
        /// The turn's model request number, from 0.
        step: u32,
        /// The request body as the model's wire style has it, as JSON text (no headers: no key).
        request_json: String,
    },
    /// Run this call and give back `ActionResult.ToolResult` of its id (or let `perform()` run
    /// it). A tool with side effects should use `idempotency_key`.
    ToolCall {
        /// The call.
        call: ToolCall,
        /// `turn_id:call_id`, what the tool's `ToolContext` gets too.
        idempotency_key: String,
    },
    /// The turn compacts its conversation before model request `step`: send this summary
    /// request and give back `ActionResult.ModelResponse` of the same `step` with `summary`
    /// true (or let `perform()` send it).
    SummaryRequest {
        /// The turn's id.
        turn_id: String,
        /// The model request it comes before.
        step: u32,
        /// The request body as JSON text: the older messages written out, no tools.
        request_json: String,
    },
    /// The gate asks: give back `ActionResult.Answer` of its call id (or let `perform()` ask the
    /// client's `WaitFor`).
    Ask {
        /// What `WaitFor` would get.
        request: PendingRequest,
    },
    /// The turn ended; every later `next()` gives it again.
    Done {
        /// What `run` would have returned.
        result: TurnResult,
    },
}

impl Action {
    /// The engine's action as this type.
    fn from_core(action: contenox::step::Action) -> Result<Action, ContenoxError> {
        use contenox::step::Action as Core;
        Ok(match action {
            Core::ModelRequest {
                turn_id,
                step,
                request,
            } => Action::ModelRequest {
                turn_id,
                step,
                request_json: request.to_string(),
            },
            Core::ToolCall {
                call,
                idempotency_key,
            } => Action::ToolCall {
                call: via_json(&call)?,
                idempotency_key,
            },
            Core::SummaryRequest {
                turn_id,
                step,
                request,
            } => Action::SummaryRequest {
                turn_id,
                step,
                request_json: request.to_string(),
            },
            Core::Ask { request } => Action::Ask {
                request: via_json(&request)?,
            },
            Core::Done { result } => Action::Done {
                result: (*result).into(),
            },
        })
    }
}

/// What the host gives back for an [`Action`]; each names the action it answers. `toJson()`
/// is the engine's JSON (the same in every binding), `actionResultFromJson` reads it back: a
/// durable host stores the journal that way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Enum)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActionResult {
    /// For `Action.ModelRequest` of the same `step` (with `summary`: `Action.SummaryRequest`):
    /// the reply, or why there is none (exactly one of the two).
    ModelResponse {
        /// The step of the request it answers.
        step: u32,
        /// The model's whole reply as the engine's JSON text (`{"text", "calls", "usage", ...}`),
        /// as `perform()` recorded it.
        #[serde(
            rename = "reply",
            default,
            skip_serializing_if = "Option::is_none",
            with = "json_text::option"
        )]
        reply_json: Option<String>,
        /// Why there is no reply.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ModelFailure>,
        /// It answers an `Action.SummaryRequest` (a compaction's), not a model request.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        #[uniffi(default = false)]
        summary: bool,
    },
    /// For `Action.ToolCall` of the same call id: the tool's result.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The tool's result.
        output: ToolOutput,
    },
    /// For `Action.Ask` of the same call id: the host's answer (`Suspend` is not one here: a
    /// stepped turn's host keeps its state, so it denies).
    Answer {
        /// The call whose ask it answers.
        call_id: String,
        /// The answer.
        #[serde(with = "answer_wire")]
        answer: Answer,
    },
}

impl ActionResult {
    fn from_core(result: &contenox::step::ActionResult) -> Result<ActionResult, ContenoxError> {
        via_json(result)
    }

    /// This result as the engine's; one that does not read (bad JSON text) is a step error, as
    /// any other result that does not fit.
    fn into_core(self) -> Result<contenox::step::ActionResult, ContenoxError> {
        let value = serde_json::to_value(&self).map_err(not_a_result)?;
        serde_json::from_value(value).map_err(not_a_result)
    }
}

fn not_a_result(e: serde_json::Error) -> ContenoxError {
    StepError(format!("not an action result: {e}")).into()
}

#[uniffi::export]
impl ActionResult {
    /// The engine's JSON of this result (`{"kind": "tool_result", "call_id", "output"}`, ...).
    /// Throws `ContenoxError.Step` only for a result the host made with a `…Json` field that is
    /// not JSON text (every result the engine gives converts).
    pub fn to_json(&self) -> Result<String, ContenoxError> {
        serde_json::to_string(self).map_err(not_a_result)
    }
}

/// A result saved with `toJson()` (or written by another binding), read back; not one is
/// `ContenoxError.Step`.
#[uniffi::export]
pub fn action_result_from_json(json: String) -> Result<ActionResult, ContenoxError> {
    let core: contenox::step::ActionResult = serde_json::from_str(&json).map_err(not_a_result)?;
    ActionResult::from_core(&core)
}

/// A turn stepped by its host. Freeing it (Kotlin `close()`, Swift `deinit`) before the turn
/// ended cancels the turn.
#[derive(uniffi::Object)]
pub struct Stepper {
    stepper: contenox::step::Stepper,
}

impl Stepper {
    pub(crate) fn new(stepper: contenox::step::Stepper) -> Stepper {
        Stepper { stepper }
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Stepper {
    /// The next action: the one still waiting for its result if there is one (asking twice
    /// gives the same action), else the turn runs on to its next model request, tool call, ask
    /// or its end (`Action.Done`). Throws `ContenoxError.Step` only when the turn's task failed
    /// (a bug).
    pub async fn next(&self) -> Result<Action, ContenoxError> {
        Action::from_core(self.stepper.next().await?)
    }

    /// Give the waiting action its result (one recorded before); the engine does no I/O for
    /// it. Throws `ContenoxError.Step`, changing nothing, when no action waits (call `next()`
    /// first; the turn may be done) or when `result` is for another action (another kind, step
    /// or call id; a model response with both or neither of reply and error).
    pub fn feed(&self, result: ActionResult) -> Result<(), ContenoxError> {
        Ok(self.stepper.feed(result.into_core()?)?)
    }

    /// Do the waiting action's I/O now (the model request with the client's retries, the tool,
    /// the client's `WaitFor`) and return its result, which the turn goes on with: record it
    /// to replay. Throws `ContenoxError.Step` when no action waits.
    pub async fn perform(&self) -> Result<ActionResult, ContenoxError> {
        ActionResult::from_core(&self.stepper.perform().await?)
    }

    /// Every result given so far (fed or performed), in order: with `options()`, what a replay
    /// feeds again.
    pub fn journal(&self) -> Vec<ActionResult> {
        // The mirror reads every result the engine writes (see the tests): none is dropped.
        self.stepper
            .journal()
            .iter()
            .filter_map(|r| ActionResult::from_core(r).ok())
            .collect()
    }

    /// The start state a replay gives `Client.step` again (`turnId`, `clockMs`).
    pub fn options(&self) -> StepOptions {
        self.stepper.options()
    }

    /// The turn's id (`turn_` + 32 hex; the prefix of every idempotency key).
    pub fn turn_id(&self) -> String {
        self.stepper.turn_id().to_string()
    }

    /// The events the turn emitted so far and not yet taken, without waiting.
    pub fn events(&self) -> Vec<Event> {
        self.stepper
            .events()
            .iter()
            .filter_map(Event::from_core)
            .collect()
    }

    /// Cancel the turn: `next()` then gives `Action.Done` with outcome `Cancelled`.
    pub fn cancel(&self) {
        self.stepper.cancel();
    }
}
