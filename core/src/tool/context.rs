//! What a tool call runs with: its context, and the sink its progress events go to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::event::{Event, Usage};
use crate::output::PartialOutput;
use crate::scope::{TurnScope, UsageCell};
use crate::telemetry::{SpanContext, Telemetry, TurnTrace};

use super::InnerCalls;

/// Where a turn's events go. Cheap to clone; sending never blocks and never fails loudly (a host
/// that stopped listening just misses events).
#[derive(Clone, Debug, Default)]
pub struct EventSink {
    tx: Option<UnboundedSender<Event>>,
    /// Set on a subagent's sink: its events reach the parent's stream tagged with this chain.
    agent: Option<Arc<Vec<String>>>,
    /// Set on the sink of a turn with an `output_schema`: its text deltas also become
    /// `output_delta` events.
    output: Option<Arc<parking_lot::Mutex<PartialOutput>>>,
    /// The spans of the turn this sink is for (telemetry on), or where a subagent's turn
    /// started from this sink hangs its own.
    trace: TraceSlot,
}

/// A sink's part in telemetry.
#[derive(Clone, Default)]
enum TraceSlot {
    /// Telemetry off (or not decided yet: a host's sink before its turn starts).
    #[default]
    Off,
    /// Every event also goes to this turn's spans.
    Turn(Arc<TurnTrace>),
    /// A subagent's sink before its turn starts: its spans go to this telemetry, under this
    /// span (its parent's call).
    /// The last part is the span of the host's turn the subagent's runs in.
    Under(Arc<Telemetry>, SpanContext, [u8; 8]),
}

impl std::fmt::Debug for TraceSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TraceSlot::Off => "Off",
            TraceSlot::Turn(_) => "Turn",
            TraceSlot::Under(..) => "Under",
        })
    }
}

impl EventSink {
    pub(crate) fn new(tx: UnboundedSender<Event>) -> Self {
        EventSink {
            tx: Some(tx),
            agent: None,
            output: None,
            trace: TraceSlot::Off,
        }
    }

    /// A sink that drops everything (for running a tool by hand).
    pub fn discard() -> Self {
        EventSink::default()
    }

    /// The same stream, for the turn of the subagent chain `chain`: its events are tagged
    /// with it, and its `turn_start` / `turn_end` stay out of the parent's stream (which ends
    /// with exactly one `turn_end`, its own). Its spans hang under the span of call `call_id`.
    pub(crate) fn for_agent(&self, chain: Vec<String>, call_id: &str) -> EventSink {
        let trace = match &self.trace {
            TraceSlot::Turn(turn) => {
                let (telemetry, parent, root) = turn.child_of_call(call_id);
                TraceSlot::Under(telemetry, parent, root)
            }
            _ => TraceSlot::Off,
        };
        EventSink {
            tx: self.tx.clone(),
            agent: Some(Arc::new(chain)),
            output: None,
            trace,
        }
    }

    /// The same stream, with every event also going to `trace` (the spans of the turn).
    pub(crate) fn traced(&self, trace: Arc<TurnTrace>) -> EventSink {
        EventSink {
            trace: TraceSlot::Turn(trace),
            ..self.clone()
        }
    }

    /// Where a turn started with this sink hangs its spans, when its parent decided it.
    pub(crate) fn trace_parent(&self) -> Option<(Arc<Telemetry>, SpanContext, [u8; 8])> {
        match &self.trace {
            TraceSlot::Under(telemetry, parent, root) => Some((telemetry.clone(), *parent, *root)),
            _ => None,
        }
    }

    /// The spans of this sink's turn, when telemetry is on.
    pub(crate) fn trace(&self) -> Option<&Arc<TurnTrace>> {
        match &self.trace {
            TraceSlot::Turn(trace) => Some(trace),
            _ => None,
        }
    }

    /// The `traceparent` a model request sent now carries: its `chat` span's (telemetry on).
    pub(crate) fn chat_traceparent(&self) -> Option<String> {
        self.trace().and_then(|t| t.chat_traceparent())
    }

    /// The same stream, for a turn whose answer is JSON (an `output_schema`): each text delta
    /// is followed by an `output_delta` when the best-effort value of the response's text so
    /// far changed; each `request` starts the text over.
    pub(crate) fn with_output(&self) -> EventSink {
        EventSink {
            tx: self.tx.clone(),
            agent: self.agent.clone(),
            output: self.tx.as_ref().map(|_| Arc::default()),
            trace: self.trace.clone(),
        }
    }

    /// Send the event `make` builds, building it only when someone listens: a host's plain
    /// `run` discards every event, and the copies of texts, names and arguments an event carries
    /// would be made for nothing (they are a few percent of a streamed turn's instructions).
    /// The turn's spans listen too, when telemetry is on.
    pub(crate) fn emit_with(&self, make: impl FnOnce() -> Event) {
        if self.tx.is_some() || matches!(self.trace, TraceSlot::Turn(_)) {
            self.emit(make());
        }
    }

    /// Send one event.
    pub fn emit(&self, mut event: Event) {
        if let TraceSlot::Turn(trace) = &self.trace {
            trace.observe(&event);
        }
        let Some(tx) = &self.tx else { return };
        if let Some(chain) = &self.agent {
            if !event.tag_agent(chain) {
                return;
            }
        }
        let partial = match (&self.output, &event) {
            (Some(output), Event::Request { .. }) => {
                output.lock().reset();
                None
            }
            (Some(output), Event::TextDelta { text, agent }) => {
                output.lock().push(text).map(|output| Event::OutputDelta {
                    output,
                    agent: agent.clone(),
                })
            }
            _ => None,
        };
        let _ = tx.send(event);
        if let Some(partial) = partial {
            let _ = tx.send(partial);
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
    /// The chain of clients whose turns led to this call (a subagent's calls run inside its
    /// parent's): their gates, their `wait_for`s, who is already running.
    pub(crate) scope: TurnScope,
    /// Tokens this call spent on models, added to the calling turn's usage.
    pub(crate) spent: UsageCell,
    /// Where the tool's own tool calls go (`js_execution` inside a turn); `None` elsewhere.
    pub(crate) inner: Option<InnerCalls>,
    /// The id of the host's own turn this call belongs to (kept through its suspensions and
    /// resumes); `None` in a subagent's or chain's turn and outside a turn.
    pub(crate) turn_id: Option<Arc<str>>,
}

impl ToolContext {
    /// The W3C `traceparent` of this call's `execute_tool` span while it runs, when telemetry
    /// is on (`None` otherwise): what a tool's outgoing request carries to continue the trace
    /// (remote tools and MCP calls send it).
    pub fn traceparent(&self) -> Option<String> {
        self.events
            .trace()
            .and_then(|t| t.call_traceparent(&self.call_id))
    }

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
            inner: None,
            turn_id: None,
        }
    }

    /// A key that names this call once across suspensions, resumes and processes:
    /// `turn_id:call_id` in a host's own turn, the call id elsewhere. A tool with side effects
    /// passes it to the system it changes (a payment's idempotency key, a row's unique id), so
    /// a call run again after a crash does its work once (docs/durable.md).
    pub fn idempotency_key(&self) -> String {
        match &self.turn_id {
            Some(turn) => format!("{turn}:{}", self.call_id),
            None => self.call_id.clone(),
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
