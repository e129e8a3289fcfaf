//! `hooks` as core's `Hooks`: the gate's `beforeTool` / `afterTool`, and the lifecycle methods
//! beside them (`hooks: { onPrompt, onStop, ... }`): one wrapped function `(point, argsJson) => Promise<string>` calls the host's method named
//! `point` with the arguments in `argsJson` (JavaScript's spelling). Its answer comes back as
//! JavaScript spelled it (`{ replace }`, `{ addContext }`, `{ refuse }`, `{ continue }`,
//! `{ instructions }`, `{ veto }`, or nothing) and is read into core's [`PromptAction`],
//! [`StopAction`] or [`CompactAction`]; the engine decides what it does and applies the
//! point's fallback when the call fails (a throw, a rejection, a wrong answer, the timeout).

use contenox::{
    async_trait, CompactAction, CompactRequest, Decision, Hooks, HostError, Notification,
    PromptAction, StopAction, ToolCallEvent, ToolOutput, TurnEndInfo,
};
use napi::bindgen_prelude::FnArgs;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::convert::{self, camel, rename_value, snake};
use crate::host::{call, AfterArgs, BeforeArgs, JsCallback};

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

/// `beforeTool` / `afterTool` and the lifecycle methods as core [`Hooks`].
pub struct JsHooks {
    before: Option<JsCallback<BeforeArgs>>,
    after: Option<JsCallback<AfterArgs>>,
    lifecycle: Option<JsLifecycle>,
}

impl JsHooks {
    /// Hooks from the wrapped functions (any may be absent).
    pub fn new(
        before: Option<JsCallback<BeforeArgs>>,
        after: Option<JsCallback<AfterArgs>>,
        lifecycle: Option<JsLifecycle>,
    ) -> Self {
        JsHooks {
            before,
            after,
            lifecycle,
        }
    }
}

/// Read the TypeScript layer's normalized decision.
fn decision(value: Value) -> Result<Decision, HostError> {
    let kind = value
        .get("decision")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "allow" => Ok(Decision::Allow),
        "deny" => Ok(Decision::Deny(
            value
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string),
        )),
        "ask" => {
            let request = value.get("request").cloned().unwrap_or(Value::Null);
            Ok(Decision::Ask(
                convert::pending_request_from_js(request).map_err(HostError::new)?,
            ))
        }
        _ => Err(HostError::new(format!(
            "beforeTool returned an unknown decision: {value}"
        ))),
    }
}

#[async_trait]
impl Hooks for JsHooks {
    async fn before_tool(&self, call_event: &ToolCallEvent) -> Result<Decision, HostError> {
        let Some(before) = &self.before else {
            return Ok(Decision::Allow);
        };
        decision(call(before, convert::tool_call(call_event), "beforeTool").await?)
    }

    async fn after_tool(
        &self,
        call_event: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<Option<ToolOutput>, HostError> {
        let Some(after) = &self.after else {
            return Ok(None);
        };
        let args = FnArgs::from((convert::tool_call(call_event), convert::tool_output(result)));
        match call(after, args, "afterTool").await? {
            Value::Null => Ok(None),
            replacement => convert::tool_output_from_js(replacement)
                .map(Some)
                .map_err(|e| HostError::new(format!("afterTool: {e}"))),
        }
    }

    async fn on_prompt(&self, prompt: &str) -> Result<PromptAction, HostError> {
        match &self.lifecycle {
            Some(l) => l.on_prompt(prompt).await,
            None => Ok(PromptAction::Continue),
        }
    }

    async fn on_stop(&self, final_text: &str) -> Result<StopAction, HostError> {
        match &self.lifecycle {
            Some(l) => l.on_stop(final_text).await,
            None => Ok(StopAction::Stop),
        }
    }

    async fn before_compact(&self, request: &CompactRequest) -> Result<CompactAction, HostError> {
        match &self.lifecycle {
            Some(l) => l.before_compact(request).await,
            None => Ok(CompactAction::Proceed),
        }
    }

    async fn on_tool_error(
        &self,
        call_event: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<(), HostError> {
        match &self.lifecycle {
            Some(l) => l.on_tool_error(call_event, result).await,
            None => Ok(()),
        }
    }

    async fn on_turn_start(&self, prompt: &str) -> Result<(), HostError> {
        match &self.lifecycle {
            Some(l) => l.on_turn_start(prompt).await,
            None => Ok(()),
        }
    }

    async fn on_turn_end(&self, end: &TurnEndInfo) -> Result<(), HostError> {
        match &self.lifecycle {
            Some(l) => l.on_turn_end(end).await,
            None => Ok(()),
        }
    }

    async fn on_notification(&self, notification: &Notification) -> Result<(), HostError> {
        match &self.lifecycle {
            Some(l) => l.on_notification(notification).await,
            None => Ok(()),
        }
    }
}
