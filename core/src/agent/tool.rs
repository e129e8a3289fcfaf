//! The tool a subagent is: one turn of the child client per call, inside the parent's.

use async_trait::async_trait;
use serde_json::Value;

use crate::client::Client;
use crate::event::Outcome;
use crate::tool::{Allowlist, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use crate::turn::{client_id, run_turn, TurnSetup};

/// What [`crate::SubagentOptions`] became, checked.
pub(crate) struct Settings {
    pub fresh: bool,
    pub max_turns: Option<u32>,
    pub allow: Option<Allowlist>,
    pub own_schema: bool,
    pub max_depth: u32,
}

/// A client as a tool; made by [`Client::as_tool_with`].
pub struct SubagentTool {
    child: Client,
    spec: ToolSpec,
    settings: Settings,
}

impl SubagentTool {
    pub(crate) fn new(child: Client, spec: ToolSpec, settings: Settings) -> Self {
        SubagentTool {
            child,
            spec,
            settings,
        }
    }

    /// The child's prompt: `prompt`, or the whole arguments as JSON under a host schema.
    fn prompt(&self, args: &Value) -> Result<String, ToolError> {
        if self.settings.own_schema {
            return Ok(serde_json::to_string_pretty(args)?);
        }
        match args.get("prompt").and_then(Value::as_str) {
            Some(p) if !p.trim().is_empty() => Ok(p.to_string()),
            _ => Err(ToolError::new(format!(
                "{} needs a non-empty `prompt`: the task for the subagent",
                self.spec.name
            ))),
        }
    }
}

/// `lead → researcher` for messages.
fn chain_text(chain: &[String]) -> String {
    if chain.is_empty() {
        "the host's client".to_string()
    } else {
        chain.join(" → ")
    }
}

#[async_trait]
impl Tool for SubagentTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn source(&self) -> Source {
        Source::Subagent
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = &self.spec.name;
        let inner = self.child.state();
        let id = client_id(inner);
        let outer = ctx.scope.agent();
        if ctx.scope.contains(id) {
            return Err(ToolError::new(format!(
                "the subagent {name} cannot call itself: it already runs in this chain ({} → \
                 {name}); answer without it",
                chain_text(&outer)
            )));
        }
        let depth = ctx.scope.depth() + 1;
        if depth > self.settings.max_depth as usize {
            return Err(ToolError::new(format!(
                "subagents nest at most {} deep; {name} would run at depth {depth} ({} → \
                 {name}); answer without it",
                self.settings.max_depth,
                chain_text(&outer)
            )));
        }
        if self.child.is_closed() {
            return Err(ToolError::new(format!(
                "the subagent {name} is not available: its client was closed"
            )));
        }
        let prompt = self.prompt(&args)?;
        let scope = ctx.scope.enter(name, id, inner.clone());
        let sink = ctx.events.for_agent(scope.agent(), &ctx.call_id);
        // The child's turn stops with the parent's, and with its own client's close.
        let cancel = ctx.cancel.child_token();
        // A fresh child's background shells watch this token: they end with the call.
        let _end_fresh_shells = self.settings.fresh.then(|| cancel.clone().drop_guard());
        let turn = run_turn(
            inner.clone(),
            prompt.into(),
            TurnSetup {
                allow: self.settings.allow.clone(),
                max_turns: self.settings.max_turns,
                scope: Some(scope),
                fresh: self.settings.fresh,
                settings: None,
                report_to: Some(ctx.spent.clone()),
                // The subagent client's own output_schema, if it has one.
                output: None,
                output_retries: None,
                // A subagent's turn does not suspend: nothing to record.
                record: Default::default(),
                // The parent's call span is the child turn's parent (set on the sink).
                trace_parent: None,
                // A subagent's I/O is inside its parent's tool call (one action).
                stepped: None,
            },
            cancel.clone(),
            sink,
        );
        tokio::pin!(turn);
        let shutdown = inner.shutdown_token().clone();
        let result = tokio::select! {
            r = &mut turn => r,
            _ = shutdown.cancelled() => {
                cancel.cancel();
                turn.await
            }
        };
        let text = result.final_text;
        match result.outcome {
            Outcome::Done => Ok(ToolOutput::text(text)),
            Outcome::Cancelled => Err(ToolError::new(format!(
                "the subagent {name} was cancelled before it answered"
            ))),
            Outcome::MaxTurns => Err(ToolError::new(format!(
                "the subagent {name} reached its max_turns without a final answer{}",
                last_text(&text)
            ))),
            Outcome::Budget => Err(ToolError::new(format!(
                "the subagent {name} reached a compute ceiling ({}){}",
                result.error.unwrap_or_default(),
                last_text(&text)
            ))),
            Outcome::Error => Err(ToolError::new(format!(
                "the subagent {name} failed: {}",
                result.error.unwrap_or_else(|| "no reason given".into())
            ))),
            // A subagent's turn has no durable state: its calls never suspend.
            Outcome::Suspended => Err(ToolError::new(format!(
                "the subagent {name} suspended, which a subagent cannot do"
            ))),
            Outcome::OutputInvalid => Err(ToolError::new(format!(
                "the subagent {name}'s answer did not match its output schema: {}{}",
                result.error.unwrap_or_default(),
                last_text(&text)
            ))),
        }
    }
}

fn last_text(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("; its last text: {}", crate::error::cut(text, 2_000))
    }
}
