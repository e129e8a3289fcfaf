//! What a tool call runs with and what it returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::event::{Event, Usage};
use crate::scope::{TurnScope, UsageCell};

/// Where a turn's events go. Cheap to clone; sending never blocks and never fails loudly (a host
/// that stopped listening just misses events).
#[derive(Clone, Debug, Default)]
pub struct EventSink {
    tx: Option<UnboundedSender<Event>>,
    /// Set on a subagent's sink: its events reach the parent's stream tagged with this chain.
    agent: Option<Arc<Vec<String>>>,
}

impl EventSink {
    pub(crate) fn new(tx: UnboundedSender<Event>) -> Self {
        EventSink {
            tx: Some(tx),
            agent: None,
        }
    }

    /// A sink that drops everything (for running a tool by hand).
    pub fn discard() -> Self {
        EventSink::default()
    }

    /// The same stream, for the turn of the subagent chain `chain`: its events are tagged
    /// with it, and its `turn_start` / `turn_end` stay out of the parent's stream (which ends
    /// with exactly one `turn_end`, its own).
    pub(crate) fn for_agent(&self, chain: Vec<String>) -> EventSink {
        EventSink {
            tx: self.tx.clone(),
            agent: Some(Arc::new(chain)),
        }
    }

    /// Send one event.
    pub fn emit(&self, mut event: Event) {
        let Some(tx) = &self.tx else { return };
        if let Some(chain) = &self.agent {
            if !event.tag_agent(chain) {
                return;
            }
        }
        let _ = tx.send(event);
    }
}

/// The context of one tool call.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The call id the model gave (or the engine made).
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// Cancelled when the turn is cancelled. Long-running tools should watch it.
    pub cancel: CancellationToken,
    /// The client's root directory (canonical).
    pub root: Arc<PathBuf>,
    /// Where progress events go.
    pub events: EventSink,
    /// Environment variable names that must not reach child processes (API keys, host secrets).
    pub secret_env: Arc<Vec<String>>,
    /// The chain of clients whose turns led to this call (a subagent's calls run inside its
    /// parent's): their gates, their `wait_for`s, who is already running.
    pub(crate) scope: TurnScope,
    /// Tokens this call spent on models, added to the calling turn's usage.
    pub(crate) spent: UsageCell,
}

impl ToolContext {
    /// A context for running a tool outside a turn, rooted at `root`.
    pub fn detached(root: impl Into<PathBuf>, name: impl Into<String>) -> Self {
        ToolContext {
            call_id: "manual".into(),
            name: name.into(),
            cancel: CancellationToken::new(),
            root: Arc::new(root.into()),
            events: EventSink::discard(),
            secret_env: Arc::new(Vec::new()),
            scope: TurnScope::default(),
            spent: UsageCell::default(),
        }
    }

    /// The chain of subagents this call runs in, outermost first (`[]` in a host's own turn,
    /// `["researcher"]` inside the subagent `researcher`).
    pub fn agent(&self) -> Vec<String> {
        self.scope.agent()
    }

    /// Count tokens this tool spent on models (a tool that calls a model itself) in the
    /// calling turn's usage; the call's `tool_result` event reports them too.
    pub fn report_usage(&self, usage: Usage) {
        self.spent.add(usage);
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Report progress (a `progress` event).
    pub fn progress(&self, data: Value) {
        self.events.emit(Event::Progress {
            call_id: self.call_id.clone(),
            name: self.name.clone(),
            data,
            agent: Vec::new(),
        });
    }
}

/// A tool's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// A string is sent as is; any other JSON value is sent as compact JSON text.
    pub content: Value,
    /// Whether the model should read this as a failure.
    #[serde(default)]
    pub is_error: bool,
    /// Facts about the result that are not the result itself (`truncated`, `nextOffset`, `total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl ToolOutput {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: Value::String(text.into()),
            is_error: false,
            metadata: None,
        }
    }

    /// A JSON result.
    pub fn json(value: Value) -> Self {
        ToolOutput {
            content: value,
            is_error: false,
            metadata: None,
        }
    }

    /// An error result.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            content: Value::String(message.into()),
            is_error: true,
            metadata: None,
        }
    }

    /// Attach metadata.
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The content as text (strings as they are, other values as compact JSON).
    pub fn content_text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// The text the model sees: the content, then the metadata (when there is any) on a line of
    /// its own, so the model learns about a cut without the content's bytes changing.
    pub fn model_text(&self) -> String {
        let mut text = self.content_text();
        if let Some(meta) = &self.metadata {
            text.push_str("\n\n[metadata: ");
            text.push_str(&meta.to_string());
            text.push(']');
        }
        text
    }
}

/// An error raised by host code (a tool, a hook, a wait_for): it becomes an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    /// The message the model sees.
    pub message: String,
}

/// The error a tool returns.
pub type ToolError = HostError;

impl HostError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        HostError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HostError {}

impl From<String> for HostError {
    fn from(message: String) -> Self {
        HostError { message }
    }
}

impl From<&str> for HostError {
    fn from(message: &str) -> Self {
        HostError::new(message)
    }
}

impl From<std::io::Error> for HostError {
    fn from(e: std::io::Error) -> Self {
        HostError::new(e.to_string())
    }
}

impl From<serde_json::Error> for HostError {
    fn from(e: serde_json::Error) -> Self {
        HostError::new(e.to_string())
    }
}
