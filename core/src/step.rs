//! A turn stepped by its host ([`Client::step`](crate::Client::step)): the turn's I/O points
//! (each model request, each tool call's run, each ask's wait) are handed out as [`Action`]s,
//! and the turn goes on only with the [`ActionResult`] the host gives back, either one it
//! recorded before ([`Stepper::feed`]) or the one the engine gets by doing the I/O now
//! ([`Stepper::perform`]). The turn's clock and id are state given at the start
//! ([`StepOptions`]), so the same options and the same results give the same actions: a
//! durable engine (DBOS, Temporal, Restate) records each result as a step and replays them
//! after a crash without redoing the model request or the tool call.
//!
//! The seam: [`Seam`] sits at each I/O point of `crate::turn`; a turn without one (every
//! `run`, `stream`, `resume`) does its I/O directly, as before. A stepped turn runs its calls
//! one at a time and starts none while a reply streams, so its actions come in one order.
//!
//! ```no_run
//! # async fn demo(client: contenox::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use contenox::step::Action;
//! let mut stepper = client.step("list the files")?;
//! loop {
//!     match stepper.next().await? {
//!         Action::Done { result } => { println!("{}", result.final_text); break; }
//!         _ => { stepper.perform().await?; } // or stepper.feed(recorded)?
//!     }
//! }
//! # Ok(()) }
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Mutex};

use crate::event::{StopReason, TurnResult, Usage};
use crate::gate::{Answer, PendingRequest};
use crate::model::{Answered, ModelResponse, RawCall, RequestFailed};
use crate::run::Run;
use crate::tool_output::ToolOutput;
use crate::transcript::{Part, ToolCall};

/// What a stepped turn waits for next.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    /// Send this request to the model (its body as the model's wire style has it, no headers:
    /// no key) and give back the reply ([`ActionResult::ModelResponse`]).
    ModelRequest {
        /// The turn's id.
        turn_id: String,
        /// The turn's model request number, from 0.
        step: u32,
        /// The request body (JSON).
        request: Value,
    },
    /// Run this call (it passed the gate) and give back its result
    /// ([`ActionResult::ToolResult`]). A tool with side effects should use `idempotency_key`
    /// (`turn_id:call_id`, what its `ToolContext` gets too).
    ToolCall {
        /// The call, its arguments parsed.
        call: ToolCall,
        /// `turn_id:call_id`.
        idempotency_key: String,
    },
    /// Send this summary request (the turn compacts its conversation before model request
    /// `step`) and give back the reply ([`ActionResult::ModelResponse`] with `summary: true`).
    SummaryRequest {
        /// The turn's id.
        turn_id: String,
        /// The model request it comes before.
        step: u32,
        /// The request body (JSON): the older messages written out, no tools.
        request: Value,
    },
    /// The gate asks: give back the host's answer ([`ActionResult::Answer`]).
    Ask {
        /// What `wait_for` would get.
        request: PendingRequest,
    },
    /// The turn ended: its result. Every later `next()` returns it again.
    Done {
        /// What `run` would have returned.
        result: Box<TurnResult>,
    },
}

impl Action {
    /// The action's kind as its wire spelling (`model_request`, `summary_request`,
    /// `tool_call`, `ask`, `done`).
    pub fn kind(&self) -> &'static str {
        match self {
            Action::ModelRequest { .. } => "model_request",
            Action::SummaryRequest { .. } => "summary_request",
            Action::ToolCall { .. } => "tool_call",
            Action::Ask { .. } => "ask",
            Action::Done { .. } => "done",
        }
    }
}

/// A call of a model reply, as the model sent it (arguments as text, parsed by the turn).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyCall {
    /// The call's id on the wire (styles without ids get one from the turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments' text.
    pub arguments: String,
}

/// A model's whole reply to one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelReply {
    /// The reply's text.
    #[serde(default)]
    pub text: String,
    /// The reply's tool calls, in order.
    #[serde(default)]
    pub calls: Vec<ReplyCall>,
    /// The parts beside text and calls (reasoning), each with the number of calls before it.
    #[serde(default)]
    pub extra: Vec<(usize, Part)>,
    /// What the request spent.
    #[serde(default)]
    pub usage: Usage,
    /// Why the reply stopped short of a full answer, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
    /// The server paused the turn (the turn asks again).
    #[serde(default)]
    pub paused: bool,
}

/// A model request that failed for good (after the engine's retries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFailure {
    /// The message the turn ends with.
    pub message: String,
    /// Refused as over the context length (the turn compacts and asks once more).
    #[serde(default)]
    pub context_overflow: bool,
    /// Refused as a malformed tool call: what the model is told to try again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed_call: Option<String>,
    /// The last attempt's HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// What the host gives back for an [`Action`]; each names the action it answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActionResult {
    /// For [`Action::ModelRequest`] of the same `step` (or, with `summary`,
    /// [`Action::SummaryRequest`]): the reply, or why there is none.
    ModelResponse {
        /// The step of the request it answers.
        step: u32,
        /// It answers a summary request (a compaction's), not a model request.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        summary: bool,
        /// The reply (exactly one of `reply` and `error`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply: Option<ModelReply>,
        /// Why there is no reply.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ModelFailure>,
    },
    /// For [`Action::ToolCall`] of the same `call_id`.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// The tool's result.
        output: ToolOutput,
    },
    /// For [`Action::Ask`] of the same `call_id`: `{"approve": true}`, `{"approve": false,
    /// "message": ..}` or `{"result": value}` (a stepped turn does not suspend: its host
    /// keeps the state).
    Answer {
        /// The call whose ask it answers.
        call_id: String,
        /// The answer, in `wait_for`'s shape.
        answer: Value,
    },
}

impl ActionResult {
    fn kind(&self) -> &'static str {
        match self {
            ActionResult::ModelResponse { summary: true, .. } => "summary_request",
            ActionResult::ModelResponse { .. } => "model_request",
            ActionResult::ToolResult { .. } => "tool_call",
            ActionResult::Answer { .. } => "ask",
        }
    }
}

/// A stepped turn's start state: what a replay must give again to get the same actions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepOptions {
    /// The turn's id (`turn_<32 hex>`); `None` = one drawn now. Give the recorded one on replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// The turn's clock (Unix ms), which an ask's deadline counts from; `None` = now. Give the
    /// recorded one on replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_ms: Option<u64>,
}

/// A fed result that does not fit the turn's state; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError(pub String);

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StepError {}

/// What the host tells a waiting I/O point.
enum Directive {
    /// Use this result (recorded before).
    Feed(ActionResult),
    /// Do the I/O now and send its result back.
    Perform(oneshot::Sender<ActionResult>),
}

/// One action out of the turn, with where its directive goes.
struct Out {
    action: Action,
    reply: oneshot::Sender<Directive>,
}

/// The turn's side of the seam: held by a stepped turn (`Turn::stepped`).
pub(crate) struct Seam {
    pub turn_id: String,
    pub clock_ms: u64,
    out: mpsc::UnboundedSender<Out>,
    /// The stepper's journal (shared: a performed result is journaled by the turn).
    journal: Journal,
}

/// Every result given to a stepped turn so far, in order (fed by the host or performed).
type Journal = std::sync::Arc<parking_lot::Mutex<Vec<ActionResult>>>;

/// Why a stepped I/O point got no result: the host dropped the stepper, or fed one it could
/// not use (refused before it got here, so this is the dropped case).
const STEPPER_GONE: &str = "the stepper was dropped before it gave this action's result";

impl Seam {
    /// A performed action's result: journaled here, on the turn's side, so that it is kept
    /// even when the host stopped waiting for `perform()` (its future dropped) while the turn
    /// went on with it; then handed to `perform()`.
    fn performed(&self, back: oneshot::Sender<ActionResult>, result: ActionResult) {
        self.journal.lock().push(result.clone());
        let _ = back.send(result);
    }

    /// Hand `action` out and wait for its directive; `None` when the stepper is gone.
    async fn exchange(&self, action: Action) -> Option<Directive> {
        let (reply, directive) = oneshot::channel();
        self.out.send(Out { action, reply }).ok()?;
        directive.await.ok()
    }

    /// A model request: `perform` does it (the real request, with the client's retries and
    /// fallbacks). `len` = the conversation's length the request was rendered from.
    pub(crate) async fn model<F>(
        &self,
        step: u32,
        body: &[u8],
        slot: usize,
        len: usize,
        perform: F,
    ) -> Result<Answered<usize>, RequestFailed>
    where
        F: std::future::Future<Output = Result<Answered<usize>, RequestFailed>>,
    {
        let action = Action::ModelRequest {
            turn_id: self.turn_id.clone(),
            step,
            request: body_value(body),
        };
        let fed = match self.exchange(action).await {
            None => return Err(failed(STEPPER_GONE.into())),
            Some(Directive::Feed(r)) => r,
            Some(Directive::Perform(back)) => {
                let answered = perform.await;
                let reply = answered.as_ref().map(|a| &a.response);
                self.performed(back, model_result(step, false, reply));
                return answered;
            }
        };
        fed_reply(fed).map(|response| Answered {
            response,
            slot,
            rendered: len,
        })
    }

    /// The route of a compaction's summary request before model request `step`.
    pub(crate) fn summary_at(&self, step: u32) -> SummaryAt<'_> {
        SummaryAt { seam: self, step }
    }

    /// A compaction's summary request before model request `step`: `perform` sends it.
    async fn summary<F>(
        &self,
        step: u32,
        body: &[u8],
        perform: F,
    ) -> Result<ModelResponse, RequestFailed>
    where
        F: std::future::Future<Output = Result<ModelResponse, RequestFailed>>,
    {
        let action = Action::SummaryRequest {
            turn_id: self.turn_id.clone(),
            step,
            request: body_value(body),
        };
        match self.exchange(action).await {
            None => Err(failed(STEPPER_GONE.into())),
            Some(Directive::Feed(r)) => fed_reply(r),
            Some(Directive::Perform(back)) => {
                let answered = perform.await;
                self.performed(back, model_result(step, true, answered.as_ref()));
                answered
            }
        }
    }

    /// A call's run: `perform` runs the tool.
    pub(crate) async fn tool<F>(&self, call: ToolCall, perform: F) -> ToolOutput
    where
        F: std::future::Future<Output = ToolOutput>,
    {
        let call_id = call.id.clone();
        let action = Action::ToolCall {
            idempotency_key: format!("{}:{}", self.turn_id, call.id),
            call,
        };
        match self.exchange(action).await {
            None => ToolOutput::error(STEPPER_GONE),
            Some(Directive::Feed(ActionResult::ToolResult { output, .. })) => output,
            Some(Directive::Feed(_)) => ToolOutput::error("a result of another kind"),
            Some(Directive::Perform(back)) => {
                let output = perform.await;
                let result = ActionResult::ToolResult {
                    call_id,
                    output: output.clone(),
                };
                self.performed(back, result);
                output
            }
        }
    }

    /// An ask's wait: `perform` asks the host's `wait_for`; `None` = cancelled.
    pub(crate) async fn ask<F>(&self, request: PendingRequest, perform: F) -> Option<Answer>
    where
        F: std::future::Future<Output = Option<Answer>>,
    {
        let call_id = request.call_id.clone();
        let answer = match self.exchange(Action::Ask { request }).await? {
            Directive::Feed(ActionResult::Answer { answer, .. }) => {
                Answer::from_value(&answer).ok()
            }
            Directive::Feed(_) => None,
            Directive::Perform(back) => {
                let answer = perform.await?;
                let result = ActionResult::Answer {
                    call_id,
                    answer: answer.to_value(),
                };
                self.performed(back, result);
                Some(answer)
            }
        };
        // The host holds a stepped turn's state: there is no checkpoint to suspend to.
        answer.map(|a| match a {
            Answer::Suspend => Answer::deny(crate::gate::SUSPEND_UNAVAILABLE),
            a => a,
        })
    }
}

/// A stepped turn's summary requests before model request `step` go out as actions.
pub(crate) struct SummaryAt<'a> {
    seam: &'a Seam,
    step: u32,
}

impl crate::compact::SummaryRoute for SummaryAt<'_> {
    fn summary<'a>(
        &'a self,
        body: &'a [u8],
        perform: futures::future::BoxFuture<'a, Result<ModelResponse, RequestFailed>>,
    ) -> futures::future::BoxFuture<'a, Result<ModelResponse, RequestFailed>> {
        Box::pin(self.seam.summary(self.step, body, perform))
    }
}

/// A request body as the action shows it (JSON; text if it is not JSON).
fn body_value(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// A fed model response as the request's outcome (`feed` checked it has a reply or an error).
fn fed_reply(fed: ActionResult) -> Result<ModelResponse, RequestFailed> {
    match fed {
        ActionResult::ModelResponse {
            reply: Some(reply), ..
        } => Ok(reply.into()),
        ActionResult::ModelResponse { error: Some(e), .. } => Err(RequestFailed {
            message: e.message,
            context_overflow: e.context_overflow,
            malformed_call: e.malformed_call,
            fall_back: false,
            status: e.status,
        }),
        _ => Err(failed(
            "a model_response without a reply or an error".into(),
        )),
    }
}

fn failed(message: String) -> RequestFailed {
    RequestFailed {
        message,
        context_overflow: false,
        malformed_call: None,
        fall_back: false,
        status: None,
    }
}

fn model_result(
    step: u32,
    summary: bool,
    answered: Result<&ModelResponse, &RequestFailed>,
) -> ActionResult {
    match answered {
        Ok(response) => ActionResult::ModelResponse {
            step,
            summary,
            reply: Some(ModelReply::from(response)),
            error: None,
        },
        Err(f) => ActionResult::ModelResponse {
            step,
            summary,
            reply: None,
            error: Some(ModelFailure {
                message: f.message.clone(),
                context_overflow: f.context_overflow,
                malformed_call: f.malformed_call.clone(),
                status: f.status,
            }),
        },
    }
}

impl From<&ModelResponse> for ModelReply {
    fn from(r: &ModelResponse) -> Self {
        ModelReply {
            text: r.text.clone(),
            calls: r
                .calls
                .iter()
                .map(|c| ReplyCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
            extra: r.extra.clone(),
            usage: r.usage,
            stop: r.stop,
            paused: r.paused,
        }
    }
}

impl From<ModelReply> for ModelResponse {
    fn from(r: ModelReply) -> Self {
        ModelResponse {
            text: r.text,
            calls: r
                .calls
                .into_iter()
                .map(|c| RawCall {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect(),
            extra: r.extra,
            usage: r.usage,
            stop: r.stop,
            paused: r.paused,
        }
    }
}

/// The host's side: a turn that waits at each action for its result.
pub struct Stepper {
    run: Run,
    actions: Mutex<mpsc::UnboundedReceiver<Out>>,
    state: parking_lot::Mutex<State>,
    /// Every result given so far, in order: with the start options, a replay's input.
    journal: Journal,
    turn_id: String,
    clock_ms: u64,
}

#[derive(Default)]
struct State {
    /// The action handed out and not yet answered, with where its answer goes.
    waiting: Option<(Action, oneshot::Sender<Directive>)>,
    done: Option<Box<TurnResult>>,
}

impl Stepper {
    /// The turn's side of the seam and the host's, around the turn spawned as `run`.
    pub(crate) fn pair(options: &StepOptions) -> (Seam, impl FnOnce(Run) -> Stepper) {
        let turn_id = options
            .turn_id
            .clone()
            .unwrap_or_else(crate::durable::new_turn_id);
        let clock_ms = options.clock_ms.unwrap_or_else(crate::durable::now_ms);
        let (out, rx) = mpsc::unbounded_channel();
        let journal = Journal::default();
        let seam = Seam {
            turn_id: turn_id.clone(),
            clock_ms,
            out,
            journal: journal.clone(),
        };
        let make = move |run: Run| Stepper {
            run,
            actions: Mutex::new(rx),
            state: parking_lot::Mutex::default(),
            journal,
            turn_id,
            clock_ms,
        };
        (seam, make)
    }

    /// The turn's id (the prefix of every idempotency key).
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The start state to give [`Client::step_with`](crate::Client::step_with) to replay this
    /// turn.
    pub fn options(&self) -> StepOptions {
        StepOptions {
            turn_id: Some(self.turn_id.clone()),
            clock_ms: Some(self.clock_ms),
        }
    }

    /// Every result given so far, in order (fed or performed).
    pub fn journal(&self) -> Vec<ActionResult> {
        self.journal.lock().clone()
    }

    /// The next action: the one still waiting for its result if there is one (asking twice
    /// gives the same action), else the turn runs on to its next I/O point or its end.
    ///
    /// `Err` only when the turn's task failed (a panic: a bug, see [`Run::result`]).
    pub async fn next(&self) -> Result<Action, StepError> {
        if let Some(a) = self.current() {
            return Ok(a);
        }
        let mut actions = self.actions.lock().await;
        // Another caller may have taken one while this waited for the lock.
        if let Some(a) = self.current() {
            return Ok(a);
        }
        match actions.recv().await {
            Some(Out { action, reply }) => {
                self.state.lock().waiting = Some((action.clone(), reply));
                Ok(action)
            }
            None => {
                let result = self
                    .run
                    .result()
                    .await
                    .map_err(|e| StepError(e.to_string()))?;
                let result = Box::new(result);
                self.state.lock().done = Some(result.clone());
                Ok(Action::Done { result })
            }
        }
    }

    fn current(&self) -> Option<Action> {
        let state = self.state.lock();
        if let Some(result) = &state.done {
            return Some(Action::Done {
                result: result.clone(),
            });
        }
        state.waiting.as_ref().map(|(a, _)| a.clone())
    }

    /// Give the waiting action its result (one recorded before). Refused, changing nothing,
    /// when no action waits (call `next()` first; the turn may be done) or when `result` is
    /// for another action (another kind, step or call id).
    pub fn feed(&self, result: ActionResult) -> Result<(), StepError> {
        let mut state = self.state.lock();
        let Some((action, _)) = &state.waiting else {
            return Err(StepError(match state.done {
                Some(_) => "the turn is done: no action waits for a result".into(),
                None => "no action waits for a result: call next() first".into(),
            }));
        };
        check_fits(action, &result)?;
        if let ActionResult::Answer { answer, .. } = &result {
            Answer::from_value(answer)
                .map_err(|e| StepError(format!("the answer is not one: {e}")))?;
        }
        // cannot fail: `waiting` was checked to be Some above, under the same lock.
        let (_, reply) = state.waiting.take().expect("checked above");
        self.journal.lock().push(result.clone());
        // The turn is gone only when it was cancelled meanwhile; next() then reports its end.
        let _ = reply.send(Directive::Feed(result));
        Ok(())
    }

    /// Do the waiting action's I/O now (the model request, the tool's run, the host's
    /// `wait_for`) and return its result, which the turn goes on with; record it to replay.
    pub async fn perform(&self) -> Result<ActionResult, StepError> {
        let reply = {
            let mut state = self.state.lock();
            match state.waiting.take() {
                Some((_, reply)) => reply,
                None => {
                    return Err(StepError(match state.done {
                        Some(_) => "the turn is done: no action to perform".into(),
                        None => "no action waits: call next() first".into(),
                    }))
                }
            }
        };
        let (back, result) = oneshot::channel();
        reply
            .send(Directive::Perform(back))
            .map_err(|_| StepError("the turn ended before the action was performed".into()))?;
        let result = result
            .await
            .map_err(|_| StepError("the turn ended while the action was performed".into()))?;
        Ok(result)
    }

    /// The events the turn emitted so far and not yet taken (`turn_start`, `request`,
    /// `tool_call`, `gate`, ...), without waiting.
    pub fn events(&self) -> Vec<crate::event::Event> {
        self.run.try_batch().unwrap_or_default()
    }

    /// Cancel the turn; `next()` then runs it to its end (`cancelled`).
    pub fn cancel(&self) {
        self.run.cancel();
    }

    /// The spawned turn: its events as they happen ([`Run::next_batch`]).
    pub fn run(&self) -> &Run {
        &self.run
    }
}

/// `result` answers `action`: same kind, same step or call id.
fn check_fits(action: &Action, result: &ActionResult) -> Result<(), StepError> {
    let fits = match (action, result) {
        (
            Action::ModelRequest { step, .. } | Action::SummaryRequest { step, .. },
            ActionResult::ModelResponse {
                step: s,
                summary,
                reply,
                error,
            },
        ) if *summary == matches!(action, Action::SummaryRequest { .. }) => {
            if reply.is_some() == error.is_some() {
                return Err(StepError(
                    "a model_response has either a reply or an error".into(),
                ));
            }
            step == s
        }
        (Action::ToolCall { call, .. }, ActionResult::ToolResult { call_id, .. }) => {
            call.id == *call_id
        }
        (Action::Ask { request }, ActionResult::Answer { call_id, .. }) => {
            request.call_id == *call_id
        }
        _ => {
            return Err(StepError(format!(
                "the action waiting is a {}; a {} result does not answer it",
                action.kind(),
                result.kind()
            )))
        }
    };
    if fits {
        Ok(())
    } else {
        Err(StepError(format!(
            "the result is for another {} than the one waiting ({})",
            action.kind(),
            match action {
                Action::ModelRequest { step, .. } | Action::SummaryRequest { step, .. } => {
                    format!("step {step}")
                }
                Action::ToolCall { call, .. } => format!("call {}", call.id),
                Action::Ask { request } => format!("call {}", request.call_id),
                Action::Done { .. } => String::new(),
            }
        )))
    }
}
