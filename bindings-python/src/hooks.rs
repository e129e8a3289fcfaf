//! `hooks={...}` as core's `Hooks`: the gate's `before_tool` / `after_tool`, and the lifecycle
//! points beside them (`on_prompt`, ...). A lifecycle point's argument goes to Python as the engine's JSON, `contenox._lifecycle` makes the
//! typed objects and reads the answer back into the engine's JSON form of [`PromptAction`],
//! [`StopAction`] or [`CompactAction`]. The engine decides what an answer does and applies the
//! point's fallback when the call fails (an exception, a wrong answer, the hook timeout).

use std::collections::HashMap;

use contenox::{
    async_trait, CompactAction, CompactRequest, Decision, Hooks, HostError, Notification,
    PendingRequest, PromptAction, StopAction, ToolCallEvent, ToolOutput, TurnEndInfo,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::bridge::bridge;
use crate::convert::{from_py, ser_to_py, to_py, to_value};
use crate::host::{output_from_py, Callback, Host, SharedHost};

static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(MODULE
        .get_or_try_init(py, || py.import("contenox._lifecycle").map(Bound::unbind))?
        .bind(py))
}

/// The host's lifecycle functions, by point name (`on_prompt`, ...).
#[derive(Default)]
pub struct PyLifecycle {
    pub points: HashMap<String, Callback>,
}

impl PyLifecycle {
    /// Call `point`'s function with `arg`; `None` when the host gave none.
    async fn call(
        &self,
        host: &Host,
        point: &'static str,
        arg: Value,
    ) -> Option<Result<Value, HostError>> {
        let cb = self.points.get(point)?;
        Some(
            host.call(
                point,
                cb,
                move |py| {
                    let args = module(py)?.call_method1("args", (point, to_py(py, &arg)?))?;
                    Ok(args.cast_into::<PyTuple>()?)
                },
                move |py, v| to_value(&module(py)?.call_method1("answer_wire", (point, v))?),
            )
            .await,
        )
    }

    /// A point that answers: its function's answer read as `T`.
    async fn decide<T: DeserializeOwned>(
        &self,
        host: &Host,
        point: &'static str,
        arg: Value,
        default: T,
    ) -> Result<T, HostError> {
        match self.call(host, point, arg).await {
            None => Ok(default),
            Some(answer) => serde_json::from_value(answer?).map_err(|e| {
                HostError::new(format!(
                    "{point} gave an answer the engine cannot read: {e}"
                ))
            }),
        }
    }

    /// A point that only observes.
    async fn observe(&self, host: &Host, point: &'static str, arg: Value) -> Result<(), HostError> {
        match self.call(host, point, arg).await {
            None => Ok(()),
            Some(done) => done.map(drop),
        }
    }

    pub async fn on_prompt(&self, host: &Host, prompt: &str) -> Result<PromptAction, HostError> {
        self.decide(host, "on_prompt", json!(prompt), PromptAction::Continue)
            .await
    }

    pub async fn on_stop(&self, host: &Host, final_text: &str) -> Result<StopAction, HostError> {
        self.decide(host, "on_stop", json!(final_text), StopAction::Stop)
            .await
    }

    pub async fn before_compact(
        &self,
        host: &Host,
        request: &CompactRequest,
    ) -> Result<CompactAction, HostError> {
        let arg = serde_json::to_value(request).map_err(|e| HostError::new(e.to_string()))?;
        self.decide(host, "before_compact", arg, CompactAction::Proceed)
            .await
    }

    pub async fn on_tool_error(
        &self,
        host: &Host,
        call: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<(), HostError> {
        let arg = json!({"call": call, "result": result});
        self.observe(host, "on_tool_error", arg).await
    }

    pub async fn on_turn_start(&self, host: &Host, prompt: &str) -> Result<(), HostError> {
        self.observe(host, "on_turn_start", json!(prompt)).await
    }

    pub async fn on_turn_end(&self, host: &Host, end: &TurnEndInfo) -> Result<(), HostError> {
        self.observe(host, "on_turn_end", json!(end)).await
    }

    pub async fn on_notification(&self, host: &Host, n: &Notification) -> Result<(), HostError> {
        self.observe(host, "on_notification", json!(n)).await
    }
}

/// `hooks={"before_tool": fn, "after_tool": fn, "on_prompt": fn, ...}`.
pub struct PyHooks {
    pub before: Option<Callback>,
    pub after: Option<Callback>,
    /// The lifecycle points' functions (`on_prompt`, ...).
    pub lifecycle: PyLifecycle,
    pub host: SharedHost,
}

fn call_event<'py>(py: Python<'py>, call: &ToolCallEvent) -> PyResult<Bound<'py, PyAny>> {
    bridge(py)?.call_method1("tool_call_event", (ser_to_py(py, call)?,))
}

#[async_trait]
impl Hooks for PyHooks {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        let Some(cb) = &self.before else {
            return Ok(Decision::Allow);
        };
        let call = call.clone();
        self.host
            .call(
                "before_tool",
                cb,
                move |py| PyTuple::new(py, [call_event(py, &call)?]),
                |py, v| {
                    if v.is_none() {
                        return Ok(Decision::Allow);
                    }
                    // ("deny", message|None) or ("ask", request dict); a TypeError otherwise.
                    let wire = bridge(py)?.call_method1("decision_wire", (v,))?;
                    let (kind, payload): (String, Bound<'_, PyAny>) = wire.extract()?;
                    match kind.as_str() {
                        "allow" => Ok(Decision::Allow),
                        "deny" => Ok(Decision::Deny(payload.extract()?)),
                        "ask" => Ok(Decision::Ask(from_py::<PendingRequest>(&payload)?)),
                        other => Err(PyTypeError::new_err(format!("unknown decision {other}"))),
                    }
                },
            )
            .await
    }

    async fn after_tool(
        &self,
        call: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<Option<ToolOutput>, HostError> {
        let Some(cb) = &self.after else {
            return Ok(None);
        };
        let (call, result) = (call.clone(), result.clone());
        self.host
            .call(
                "after_tool",
                cb,
                move |py| {
                    let out =
                        bridge(py)?.call_method1("tool_output", (ser_to_py(py, &result)?,))?;
                    PyTuple::new(py, [call_event(py, &call)?, out])
                },
                |py, v| {
                    if v.is_none() {
                        Ok(None)
                    } else {
                        output_from_py(py, &v).map(Some)
                    }
                },
            )
            .await
    }

    async fn on_prompt(&self, prompt: &str) -> Result<PromptAction, HostError> {
        self.lifecycle.on_prompt(&self.host, prompt).await
    }

    async fn on_stop(&self, final_text: &str) -> Result<StopAction, HostError> {
        self.lifecycle.on_stop(&self.host, final_text).await
    }

    async fn before_compact(&self, request: &CompactRequest) -> Result<CompactAction, HostError> {
        self.lifecycle.before_compact(&self.host, request).await
    }

    async fn on_tool_error(
        &self,
        call: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<(), HostError> {
        self.lifecycle.on_tool_error(&self.host, call, result).await
    }

    async fn on_turn_start(&self, prompt: &str) -> Result<(), HostError> {
        self.lifecycle.on_turn_start(&self.host, prompt).await
    }

    async fn on_turn_end(&self, end: &TurnEndInfo) -> Result<(), HostError> {
        self.lifecycle.on_turn_end(&self.host, end).await
    }

    async fn on_notification(&self, notification: &Notification) -> Result<(), HostError> {
        self.lifecycle
            .on_notification(&self.host, notification)
            .await
    }
}
