//! What a tool call carries of the turn it runs in: the chain of clients whose turns led to it.
//!
//! A plain turn's chain is one client. A subagent's turn (see [`crate::agent`]) runs inside its
//! parent's tool call, so its chain is the parent's plus itself: every call it makes passes each
//! client's gate from the innermost outwards, its asks fall back to the nearest `wait_for` up
//! the chain, and the chain is how a subagent that would call itself is recognised.

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::event::Usage;
use crate::gate::{Decision, ToolCallEvent, WaitFor};
use crate::tool_output::ToolOutput;
use crate::transcript::Message;

/// One client's say on a call: its approval policy, then its `before_tool`.
pub(crate) struct Judgement {
    /// `Err` is a hook that failed (the call is denied saying so).
    pub decision: Result<Decision, String>,
    /// The policy rule that matched, when the client has a policy.
    pub rule: Option<String>,
}

/// The gate of one client of the chain. Implemented by the client's state (in `turn.rs`), so
/// this file needs nothing of the client.
pub(crate) trait Gatekeeper: Send + Sync {
    /// Judge `call` (paths resolve beneath `root`, the root of the client making the call);
    /// `None` when `cancel` fired first.
    fn judge<'a>(
        &'a self,
        call: &'a ToolCallEvent,
        root: &'a Path,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<Judgement>>;

    /// The client's `after_tool` on a result: `Some(new)` replaces it, `Err` is a hook that
    /// failed; `None` (outer) when `cancel` fired first.
    fn after<'a>(
        &'a self,
        call: &'a ToolCallEvent,
        output: &'a ToolOutput,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<Result<Option<ToolOutput>, String>>>;

    /// The client's `wait_for`, if it has one.
    fn wait_for(&self) -> Option<Arc<dyn WaitFor>>;

    /// One request to the client's own model, without tools (an MCP server's sampling):
    /// `Err` is the failure's message, already without the backend's secrets.
    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Sampled, String>>;
}

/// A request to a client's model on someone else's behalf (MCP `sampling/createMessage`).
#[derive(Debug, Clone, Default)]
pub(crate) struct SampleRequest {
    /// The system prompt (the server's `systemPrompt`).
    pub system: Option<String>,
    /// The conversation, ending with the user's message.
    pub messages: Vec<Message>,
    /// Replaces the client's temperature when set.
    pub temperature: Option<f64>,
    /// Replaces the client's stop sequences when set.
    pub stop: Option<Vec<String>>,
}

/// What the model answered a [`SampleRequest`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Sampled {
    /// The answer's text.
    pub text: String,
    /// What the request spent.
    pub usage: Usage,
    /// The model's name.
    pub model: String,
    /// The answer was cut at `max_tokens`.
    pub cut: bool,
}

/// One client of the chain.
#[derive(Clone)]
pub(crate) struct Frame {
    /// The subagent tool's name; `None` for the outermost client (the host's own).
    pub name: Option<String>,
    /// Which client this is (the address of its shared state): the same client twice in one
    /// chain is a subagent calling itself.
    pub id: usize,
    pub gate: Arc<dyn Gatekeeper>,
}

/// The chain of clients of a turn, outermost first; the last frame is the turn's own client.
#[derive(Clone, Default)]
pub(crate) struct TurnScope {
    frames: Arc<Vec<Frame>>,
}

impl std::fmt::Debug for TurnScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnScope")
            .field("agent", &self.agent())
            .finish()
    }
}

impl TurnScope {
    /// The scope of a host's own turn on one client.
    pub fn root(id: usize, gate: Arc<dyn Gatekeeper>) -> Self {
        TurnScope {
            frames: Arc::new(vec![Frame {
                name: None,
                id,
                gate,
            }]),
        }
    }

    /// The scope of a subagent's turn started from a call in this one.
    pub fn enter(&self, name: &str, id: usize, gate: Arc<dyn Gatekeeper>) -> Self {
        let mut frames = Vec::clone(&self.frames);
        frames.push(Frame {
            name: Some(name.to_string()),
            id,
            gate,
        });
        TurnScope {
            frames: Arc::new(frames),
        }
    }

    /// The subagent names of the chain, outermost first (`[]` for a host's own turn): the
    /// `agent` of the gate event and of every event the turn emits.
    pub fn agent(&self) -> Vec<String> {
        self.frames.iter().filter_map(|f| f.name.clone()).collect()
    }

    /// How many subagents deep this turn runs (0 for a host's own turn).
    pub fn depth(&self) -> usize {
        self.frames.iter().filter(|f| f.name.is_some()).count()
    }

    /// Whether the client `id` already runs a turn of this chain.
    pub fn contains(&self, id: usize) -> bool {
        self.frames.iter().any(|f| f.id == id)
    }

    /// The gate of the turn's own client (the last of the chain), if any.
    pub fn own(&self) -> Option<&Arc<dyn Gatekeeper>> {
        self.frames.last().map(|f| &f.gate)
    }

    /// The gates a call of this turn passes: its own client's first, then outwards.
    pub fn gates_inner_to_outer(&self) -> impl Iterator<Item = &Frame> {
        self.frames.iter().rev()
    }

    /// The `wait_for` that answers an ask raised at gate `level` (0 = the turn's own client):
    /// that client's, else the nearest one further out.
    pub fn wait_for_from(&self, level: usize) -> Option<Arc<dyn WaitFor>> {
        self.gates_inner_to_outer()
            .skip(level)
            .find_map(|f| f.gate.wait_for())
    }
}

/// Tokens a tool call spent on models (a subagent's turns), collected while it runs and added
/// to the calling turn's usage, also when the call is cut off by a cancel.
#[derive(Clone, Debug, Default)]
pub(crate) struct UsageCell(Arc<Mutex<Usage>>);

impl UsageCell {
    pub fn add(&self, usage: Usage) {
        self.0.lock().add(usage);
    }

    pub fn get(&self) -> Usage {
        *self.0.lock()
    }
}
