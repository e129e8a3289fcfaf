//! The lifecycle hooks beside `beforeTool` / `afterTool` (`hooks: { onPrompt, onStop, ... }`):
//! one wrapped function `(point, argsJson) => Promise<string>` calls the host's method named
//! `point` with the arguments in `argsJson` (JavaScript's spelling). Its answer comes back as
//! JavaScript spelled it (`{ replace }`, `{ addContext }`, `{ refuse }`, `{ continue }`,
//! `{ instructions }`, `{ veto }`, or nothing) and is read into core's [`PromptAction`],
//! [`StopAction`] or [`CompactAction`]; the engine decides what it does and applies the
//! point's fallback when the call fails (a throw, a rejection, a wrong answer, the timeout).

use contenox::{
    CompactAction, CompactRequest, HostError, Notification, PromptAction, StopAction,
    ToolCallEvent, ToolOutput, TurnEndInfo,
};
use napi::bindgen_prelude::FnArgs;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::convert::{self, camel, rename_value, snake};
use crate::host::{call, JsCallback};

/// `(point, argsJson) => Promise<string>`.
pub type LifecycleArgs = FnArgs<(String, String)>;

/// The host's lifecycle methods: the wrapped caller and the names it has a method for.
pub struct JsLifecycle {
    call: JsCallback<LifecycleArgs>,
    points: Vec<String>,
}

impl JsLifecycle {
    /// `points`: the methods the host's hooks object has (`onPrompt`, ...).
    pub fn new(call: JsCallback<LifecycleArgs>, points: Vec<String>) -> Self {
        JsLifecycle { call, points }
    }

    /// Call `point` with `args` (a JSON array); `None` when the host has no such method.
    async fn call(&self, point: &str, args: Value) -> Option<Result<Value, HostError>> {
        if !self.points.iter().any(|p| p == point) {
            return None;
        }
        let args = FnArgs::from((point.to_string(), args.to_string()));
        Some(call(&self.call, args, point).await)
    }

    /// A point that answers: nothing is `default`, anything else is read as `T`.
    async fn decide<T: DeserializeOwned>(
        &self,
        point: &str,
        args: Value,
        default: T,
    ) -> Result<T, HostError> {
        match self.call(point, args).await {
            None => Ok(default),
            Some(Err(e)) => Err(e),
            Some(Ok(Value::Null)) => Ok(default),
            Some(Ok(answer)) => serde_json::from_value(rename_value(answer.clone(), snake))
                .map_err(|_| {
                    HostError::new(format!(
                        "{point} returned an answer it does not take: {answer}"
                    ))
                }),
        }
    }

    /// A point that only observes.
    async fn observe(&self, point: &str, args: Value) -> Result<(), HostError> {
        match self.call(point, args).await {
            None => Ok(()),
            Some(done) => done.map(drop),
        }
    }

    pub async fn on_prompt(&self, prompt: &str) -> Result<PromptAction, HostError> {
        self.decide("onPrompt", json!([prompt]), PromptAction::Continue)
            .await
    }

    pub async fn on_stop(&self, final_text: &str) -> Result<StopAction, HostError> {
        self.decide("onStop", json!([final_text]), StopAction::Stop)
            .await
    }

    pub async fn before_compact(
        &self,
        request: &CompactRequest,
    ) -> Result<CompactAction, HostError> {
        let request = rename_value(json!(request), camel);
        self.decide("beforeCompact", json!([request]), CompactAction::Proceed)
            .await
    }

    pub async fn on_tool_error(
        &self,
        call: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<(), HostError> {
        let call: Value = serde_json::from_str(&convert::tool_call(call)).unwrap_or(Value::Null);
        let result: Value =
            serde_json::from_str(&convert::tool_output(result)).unwrap_or(Value::Null);
        self.observe("onToolError", json!([call, result])).await
    }

    pub async fn on_turn_start(&self, prompt: &str) -> Result<(), HostError> {
        self.observe("onTurnStart", json!([prompt])).await
    }

    pub async fn on_turn_end(&self, end: &TurnEndInfo) -> Result<(), HostError> {
        self.observe("onTurnEnd", json!([rename_value(json!(end), camel)]))
            .await
    }

    pub async fn on_notification(&self, n: &Notification) -> Result<(), HostError> {
        self.observe("onNotification", json!([n])).await
    }
}
