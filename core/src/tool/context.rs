//! What a tool call runs with: its context, and the sink its progress events go to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::event::Event;

/// Where a turn's events go. Cheap to clone; sending never blocks and never fails loudly (a host
/// that stopped listening just misses events).
#[derive(Clone, Debug, Default)]
pub struct EventSink {
    tx: Option<UnboundedSender<Event>>,
}

impl EventSink {
    pub(crate) fn new(tx: UnboundedSender<Event>) -> Self {
        EventSink { tx: Some(tx) }
    }

    /// A sink that drops everything (for running a tool by hand).
    pub fn discard() -> Self {
        EventSink { tx: None }
    }

    /// Send one event.
    pub fn emit(&self, event: Event) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(event);
        }
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
        }
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
        });
    }
}
