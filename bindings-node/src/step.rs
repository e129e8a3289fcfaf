//! A turn stepped by its host (the engine's `contenox::step`), as JavaScript sees it: the
//! TypeScript layer's `Stepper` (`lib/step.ts`) wraps it. Actions and results cross as JSON
//! text in JavaScript's spelling ([`convert::step_action`], [`convert::step_result`]); the
//! `done` action's result crosses as the same [`NativeTurnResult`] `run` resolves with. The
//! engine checks every result fed; a refusal is the binding's `StepError` (see `error`).

use std::sync::Arc;

use contenox::step::{Action, Stepper};
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;
use serde_json::Value;

use crate::run::NativeTurnResult;
use crate::transcript::Snapshots;
use crate::{convert, error};

/// An action: `json` is the action in JavaScript's spelling (`{"kind": "done"}` for the end),
/// `result` the turn's result when the kind is `done`.
#[napi(object, object_from_js = false)]
pub struct NativeAction {
    /// The action as JSON text: `model_request` `{turnId, step, request}`, `tool_call` `{call,
    /// idempotencyKey}`, `ask` `{request}`, or `{"kind": "done"}`.
    pub json: String,
    /// For `done`: what `run` would have returned.
    pub result: Option<NativeTurnResult>,
}

/// A stepped turn. Collected before its turn ended, it cancels the turn (its run does).
#[napi]
pub struct NativeStepper {
    stepper: Arc<Stepper>,
    /// Its client's: the result's transcript shares messages with the client's other snapshots.
    snapshots: Arc<Snapshots>,
}

impl NativeStepper {
    /// Take over core's stepper.
    pub(crate) fn new(stepper: Stepper, snapshots: Arc<Snapshots>) -> Self {
        NativeStepper {
            stepper: Arc::new(stepper),
            snapshots,
        }
    }
}

#[napi]
impl NativeStepper {
    /// The next action (the one waiting, if there is one; asking twice gives the same).
    #[napi(ts_return_type = "Promise<NativeAction>")]
    pub fn next<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, NativeAction>> {
        let stepper = self.stepper.clone();
        let snapshots = self.snapshots.clone();
        env.spawn_future_with_callback(async move { Ok(stepper.next().await) }, move |env, a| {
            match a.map_err(|e| error::step(env, e))? {
                Action::Done { result } => Ok(NativeAction {
                    json: r#"{"kind":"done"}"#.to_string(),
                    result: Some(NativeTurnResult::new(*result, &snapshots)),
                }),
                other => Ok(NativeAction {
                    json: convert::step_action(&other).to_string(),
                    result: None,
                }),
            }
        })
    }

    /// Give the waiting action its result (JSON text in JavaScript's spelling); throws
    /// `StepError`, changing nothing, when it is not a result or does not fit.
    #[napi]
    pub fn feed(&self, env: &Env, result_json: String) -> Result<()> {
        let value: Value = serde_json::from_str(&result_json).map_err(|e| {
            error::step(
                env,
                contenox::step::StepError(format!("not an action result: {e}")),
            )
        })?;
        let result = convert::step_result_from_js(value)
            .map_err(|m| error::step(env, contenox::step::StepError(m)))?;
        self.stepper.feed(result).map_err(|e| error::step(env, e))
    }

    /// Do the waiting action's I/O now; resolves with its result (JSON text) to record.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn perform<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, String>> {
        let stepper = self.stepper.clone();
        env.spawn_future_with_callback(async move { Ok(stepper.perform().await) }, |env, r| {
            r.map(|r| convert::step_result(&r).to_string())
                .map_err(|e| error::step(env, e))
        })
    }

    /// Every result given so far, in order, as a JSON array in JavaScript's spelling.
    #[napi]
    pub fn journal(&self) -> String {
        Value::Array(
            self.stepper
                .journal()
                .iter()
                .map(convert::step_result)
                .collect(),
        )
        .to_string()
    }

    /// The start state a replay gives again, as JSON `{turnId, clockMs}`.
    #[napi]
    pub fn options(&self) -> String {
        serde_json::to_value(self.stepper.options())
            .map(|v| convert::rename_value(v, convert::camel))
            .unwrap_or(Value::Null)
            .to_string()
    }

    /// The turn's id (the prefix of every idempotency key).
    #[napi(getter)]
    pub fn turn_id(&self) -> String {
        self.stepper.turn_id().to_string()
    }

    /// The events emitted so far and not yet taken, as a JSON array (maybe empty).
    #[napi]
    pub fn events(&self) -> String {
        convert::events(&self.stepper.events())
    }

    /// Cancel the turn: `next()` then gives `done` with outcome `cancelled`.
    #[napi]
    pub fn cancel(&self) {
        self.stepper.cancel();
    }
}
