//! The host's hooks, implemented in Kotlin or Swift: the gate's (`Hooks`: `beforeTool` /
//! `afterTool`) and the turn's lifecycle points (`LifecycleHooks`: `onPrompt`, `onStop`,
//! `beforeCompact`, `onToolError`, `onTurnStart`, `onTurnEnd`, `onNotification`), translated to
//! the engine's one `Hooks` trait. The engine decides what an answer does, and applies a point's
//! fallback when the host's method throws or gives no answer within `hook_timeout_ms`.
//!
//! Two foreign traits rather than one: a UniFFI foreign trait has no default methods, so adding
//! the lifecycle points to `Hooks` would make every existing `Hooks` implementation incomplete.
//! The Kotlin helper `LifecycleHooksBase` and a Swift protocol extension give every method its
//! "no hook" answer, so a host overrides only the points it needs.

use std::sync::Arc;

use async_trait::async_trait;
use contenox::{
    CompactAction, CompactRequest, HostError, Notification, PromptAction, StopAction, TurnEndInfo,
};

use crate::convert::{via_json, Decision, ToolCallEvent, ToolOutput};
use crate::error::ContenoxError;

/// The gate's hooks, implemented by the host. A thrown error becomes an error result for that
/// call.
#[uniffi::export(foreign)]
#[async_trait]
pub trait Hooks: Send + Sync {
    /// Decide on a call before it runs. Called for every call from every source.
    async fn before_tool(&self, call: ToolCallEvent) -> Result<Decision, ContenoxError>;

    /// See a result after the tool ran (also after an approved ask); return a result to replace
    /// it, or `null` to keep it. Not called for denied calls.
    async fn after_tool(
        &self,
        call: ToolCallEvent,
        result: ToolOutput,
    ) -> Result<Option<ToolOutput>, ContenoxError>;
}

/// The turn's lifecycle points, implemented by the host (see `docs/hooks.md`). Each answer is
/// the engine's own type; the "no hook" answers are `PromptAction.Continue`, `StopAction.Stop`,
/// `CompactAction.Proceed` and returning normally. A thrown error, or no answer within the hook
/// timeout (config `hook_timeout_ms`, default 60 s), is logged and the point's fallback applies:
/// the prompt is sent as it is, the turn ends, the compaction proceeds; never a failed turn.
#[uniffi::export(foreign)]
#[async_trait]
pub trait LifecycleHooks: Send + Sync {
    /// Before the turn's first model request: keep, replace, add to or refuse the prompt.
    async fn on_prompt(&self, prompt: String) -> Result<PromptAction, ContenoxError>;

    /// The model gave its final answer (not at the last response `max_turns` allows): let the
    /// turn end, or send the model back to work with a message.
    async fn on_stop(&self, final_text: String) -> Result<StopAction, ContenoxError>;

    /// A compaction is about to run: proceed, change its instructions or veto it.
    async fn before_compact(&self, request: CompactRequest)
        -> Result<CompactAction, ContenoxError>;

    /// A call ran and its result is an error (after `afterTool`). Observes.
    async fn on_tool_error(
        &self,
        call: ToolCallEvent,
        result: ToolOutput,
    ) -> Result<(), ContenoxError>;

    /// A turn starts (after its `turn_start` event). Observes.
    async fn on_turn_start(&self, prompt: String) -> Result<(), ContenoxError>;

    /// A turn ended (before its `turn_end` event). Observes.
    async fn on_turn_end(&self, end: TurnEndInfo) -> Result<(), ContenoxError>;

    /// An ask was raised, or the turn is near a ceiling. Observes.
    async fn on_notification(&self, notification: Notification) -> Result<(), ContenoxError>;
}

/// The host's hooks (the gate's and the lifecycle's, either may be absent) as the engine's one
/// `Hooks`.
pub(crate) struct HooksAdapter {
    pub(crate) gate: Option<Arc<dyn Hooks>>,
    pub(crate) lifecycle: Option<Arc<dyn LifecycleHooks>>,
}

#[async_trait]
impl contenox::Hooks for HooksAdapter {
    async fn before_tool(
        &self,
        call: &contenox::ToolCallEvent,
    ) -> Result<contenox::Decision, contenox::HostError> {
        let Some(gate) = &self.gate else {
            return Ok(contenox::Decision::Allow);
        };
        let decision = gate.before_tool(via_json(call)?).await?;
        Ok(decision.into_core()?)
    }

    async fn after_tool(
        &self,
        call: &contenox::ToolCallEvent,
        result: &contenox::ToolOutput,
    ) -> Result<Option<contenox::ToolOutput>, contenox::HostError> {
        let Some(gate) = &self.gate else {
            return Ok(None);
        };
        let replaced = gate.after_tool(via_json(call)?, via_json(result)?).await?;
        Ok(replaced.map(|out| via_json(&out)).transpose()?)
    }

    async fn on_prompt(&self, prompt: &str) -> Result<PromptAction, HostError> {
        match &self.lifecycle {
            Some(l) => Ok(l.on_prompt(prompt.to_string()).await?),
            None => Ok(PromptAction::Continue),
        }
    }

    async fn on_stop(&self, final_text: &str) -> Result<StopAction, HostError> {
        match &self.lifecycle {
            Some(l) => Ok(l.on_stop(final_text.to_string()).await?),
            None => Ok(StopAction::Stop),
        }
    }

    async fn before_compact(&self, request: &CompactRequest) -> Result<CompactAction, HostError> {
        match &self.lifecycle {
            Some(l) => Ok(l.before_compact(request.clone()).await?),
            None => Ok(CompactAction::Proceed),
        }
    }

    async fn on_tool_error(
        &self,
        call: &contenox::ToolCallEvent,
        result: &contenox::ToolOutput,
    ) -> Result<(), HostError> {
        match &self.lifecycle {
            Some(l) => Ok(l.on_tool_error(via_json(call)?, via_json(result)?).await?),
            None => Ok(()),
        }
    }

    async fn on_turn_start(&self, prompt: &str) -> Result<(), HostError> {
        match &self.lifecycle {
            Some(l) => Ok(l.on_turn_start(prompt.to_string()).await?),
            None => Ok(()),
        }
    }

    async fn on_turn_end(&self, end: &TurnEndInfo) -> Result<(), HostError> {
        match &self.lifecycle {
            Some(l) => Ok(l.on_turn_end(end.clone()).await?),
            None => Ok(()),
        }
    }

    async fn on_notification(&self, notification: &Notification) -> Result<(), HostError> {
        match &self.lifecycle {
            Some(l) => Ok(l.on_notification(notification.clone()).await?),
            None => Ok(()),
        }
    }
}
