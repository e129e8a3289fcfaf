//! The gate every tool call passes: [`Hooks`] decide, [`WaitFor`] answers asks.

use async_trait::async_trait;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::tool_output::{HostError, ToolOutput};
use crate::tool_spec::{Hints, Source};

/// The text of a denial that carries no message of its own.
pub const DEFAULT_DENIAL: &str = "User denied the operation. Please ask for clarification or try a different, less destructive approach.";

/// The text of an ask that timed out.
pub const ASK_TIMEOUT_DENIAL: &str = "Approval timed out. The operation was automatically denied.";

/// A tool call as the gate sees it (after `call_tool` was unwrapped and the arguments checked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallEvent {
    /// The tool's name.
    pub name: String,
    /// The arguments (a JSON object).
    pub arguments: Value,
    /// The call id.
    pub call_id: String,
    /// The tool's hints.
    pub hints: Hints,
    /// Where the tool comes from.
    pub source: Source,
    /// The MCP server or remote service the tool belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The chain of subagents whose turn makes the call, outermost first (`["researcher"]`);
    /// empty for the client's own calls. Every client of the chain sees the call with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent: Vec<String>,
}

/// What `before_tool` decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run the call.
    Allow,
    /// Refuse it: an error result with this message (or [`DEFAULT_DENIAL`]); the turn goes on.
    Deny(Option<String>),
    /// Ask the host's [`WaitFor`].
    Ask(PendingRequest),
}

impl Decision {
    /// Deny with a message.
    pub fn deny(message: impl Into<String>) -> Self {
        Decision::Deny(Some(message.into()))
    }
}

/// A request the host answers through [`WaitFor`]. The hook sets `kind`, `prompt`, `timeout_ms`
/// and `data`; the engine fills in the call it is about.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingRequest {
    /// Free text: `approval`, `input`, ...
    #[serde(default)]
    pub kind: String,
    /// What to show the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Deny with [`ASK_TIMEOUT_DENIAL`] when no answer came in this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Anything else the hook wants the host to have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// The call id (filled by the engine).
    #[serde(default)]
    pub call_id: String,
    /// The tool name (filled by the engine).
    #[serde(default)]
    pub name: String,
    /// The call's arguments (filled by the engine).
    #[serde(default)]
    pub arguments: Value,
    /// When the ask is denied as timed out, in Unix milliseconds: set in a suspended turn's
    /// `pending` (a resumed ask keeps its deadline; `timeout_ms` there is what is left of it).
    // Never in a `pending` event (only in a suspended turn's result): not in the event schema.
    #[cfg_attr(feature = "schema", schemars(skip))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

impl PendingRequest {
    /// A request of this kind with a prompt.
    pub fn new(kind: impl Into<String>, prompt: impl Into<String>) -> Self {
        PendingRequest {
            kind: kind.into(),
            prompt: Some(prompt.into()),
            ..Default::default()
        }
    }

    /// Deny automatically after this many milliseconds without an answer.
    pub fn with_timeout_ms(mut self, ms: u64) -> Self {
        self.timeout_ms = Some(ms);
        self
    }
}

/// The host's answer to a [`PendingRequest`]. On every wire: `{"approve": true}`,
/// `{"approve": false, "message": "..."}`, `{"result": value}` or `{"suspend": true}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Run the call.
    Approve,
    /// Refuse it, with a message (or [`DEFAULT_DENIAL`]).
    Deny(Option<String>),
    /// Do not run it: this value is the call's result.
    Result(Value),
    /// Answer later, maybe in another process: the turn ends with outcome `suspended`, its
    /// result carries a checkpoint and the pending requests, and
    /// [`Client::resume`](crate::Client::resume) continues it with the answers. Only a turn's
    /// own calls suspend; a subagent's, a task chain's or `js_execution`'s inner call is denied
    /// instead (see [`SUSPEND_UNAVAILABLE`]).
    Suspend,
}

/// The denial of a `{"suspend": true}` answer where a turn cannot suspend.
pub const SUSPEND_UNAVAILABLE: &str = "The host answered suspend, but this call cannot suspend (only a turn's own calls can: not a subagent's, a task chain's or js_execution's); it was denied.";

impl Answer {
    /// Approve.
    pub fn approve() -> Self {
        Answer::Approve
    }
    /// Deny with a message.
    pub fn deny(message: impl Into<String>) -> Self {
        Answer::Deny(Some(message.into()))
    }
    /// Answer with a result.
    pub fn result(value: Value) -> Self {
        Answer::Result(value)
    }

    /// Read the wire shape.
    pub fn from_value(v: &Value) -> Result<Self, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| format!("an answer must be an object, got {v}"))?;
        if let Some(r) = obj.get("result") {
            return Ok(Answer::Result(r.clone()));
        }
        if let Some(s) = obj.get("suspend") {
            return match s {
                Value::Bool(true) => Ok(Answer::Suspend),
                _ => Err(format!("suspend must be true, got {s}")),
            };
        }
        match obj.get("approve") {
            Some(Value::Bool(true)) => Ok(Answer::Approve),
            Some(Value::Bool(false)) => Ok(Answer::Deny(
                obj.get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            )),
            _ => Err(format!(
                "an answer is {{\"approve\": bool, \"message\"?: str}}, {{\"result\": value}} or {{\"suspend\": true}}, got {v}"
            )),
        }
    }

    /// The wire shape.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        match self {
            Answer::Approve => {
                m.insert("approve".into(), Value::Bool(true));
            }
            Answer::Deny(msg) => {
                m.insert("approve".into(), Value::Bool(false));
                if let Some(msg) = msg {
                    m.insert("message".into(), Value::String(msg.clone()));
                }
            }
            Answer::Result(v) => {
                m.insert("result".into(), v.clone());
            }
            Answer::Suspend => {
                m.insert("suspend".into(), Value::Bool(true));
            }
        }
        Value::Object(m)
    }
}

impl Serialize for Answer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Answer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Answer::from_value(&v).map_err(serde::de::Error::custom)
    }
}

/// The host's gate. Both methods have defaults (allow; keep the result), so a host implements
/// only what it needs. An `Err` from a hook becomes an error result for that call.
#[async_trait]
pub trait Hooks: Send + Sync + 'static {
    /// Decide on a call before it runs. Called for every call from every source.
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        let _ = call;
        Ok(Decision::Allow)
    }

    /// See a result after the tool ran (also after an approved ask); return `Some` to replace it.
    /// Not called for denied calls.
    async fn after_tool(
        &self,
        call: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<Option<ToolOutput>, HostError> {
        let _ = (call, result);
        Ok(None)
    }
}

/// Answers asks. The token is cancelled when the turn ends or is cancelled; the engine stops
/// waiting then in any case, so an implementation that ignores it only wastes its own work.
#[async_trait]
pub trait WaitFor: Send + Sync + 'static {
    /// Answer one request. An `Err` denies the call with the error's message.
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError>;
}
