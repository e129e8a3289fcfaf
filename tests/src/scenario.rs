//! Serde types for a conformance scenario (see `tests/conformance/README.md` and the shared
//! `SPEC.md`). Unknown keys are read everywhere: on the structs that are likely to grow they
//! are kept in an `extra` map, elsewhere they are ignored; the checker refuses unknown keys of
//! `expect` (`Expect::extra`), which would otherwise check nothing.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::texts::Texts;

/// The wire style the fake model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Style {
    Openai,
    /// OpenAI Responses (`/v1/responses`).
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    Anthropic,
    Ollama,
}

impl Style {
    pub fn as_str(self) -> &'static str {
        match self {
            Style::Openai => "openai",
            Style::OpenaiResponses => "openai-responses",
            Style::Anthropic => "anthropic",
            Style::Ollama => "ollama",
        }
    }

    /// The `base_url` a client gets for a server at `root` (e.g. `http://127.0.0.1:1234`):
    /// `root/v1` for openai and openai-responses, the root itself for anthropic and ollama.
    pub fn base_url(self, root: &str) -> String {
        let root = root.trim_end_matches('/');
        match self {
            Style::Openai | Style::OpenaiResponses => format!("{root}/v1"),
            Style::Anthropic | Style::Ollama => root.to_string(),
        }
    }

    /// The path of the chat endpoint of this style.
    pub fn chat_path(self) -> &'static str {
        match self {
            Style::Openai => "/v1/chat/completions",
            Style::OpenaiResponses => "/v1/responses",
            Style::Anthropic => "/v1/messages",
            Style::Ollama => "/api/chat",
        }
    }
}

impl fmt::Display for Style {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Style {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(Style::Openai),
            "openai-responses" => Ok(Style::OpenaiResponses),
            "anthropic" => Ok(Style::Anthropic),
            "ollama" => Ok(Style::Ollama),
            other => Err(format!(
                "unknown style {other:?} (expected openai, openai-responses, anthropic or ollama)"
            )),
        }
    }
}

/// One scenario file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub about: String,
    pub style: Style,
    #[serde(default)]
    pub config: Config,
    #[serde(default)]
    pub workspace: BTreeMap<String, String>,
    #[serde(default)]
    pub host_tools: Vec<HostTool>,
    #[serde(default)]
    pub before_tool: Vec<BeforeRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_tool: Option<Vec<AfterRule>>,
    #[serde(default)]
    pub wait_for: Vec<WaitAnswer>,
    #[serde(default)]
    pub actions: Vec<Action>,
    #[serde(default)]
    pub model: Vec<ModelEntry>,
    pub prompt: String,
    #[serde(default)]
    pub more_prompts: Vec<String>,
    #[serde(default)]
    pub expect: Expect,
    /// HTTP services registered as remote hooks (see `crate::remote`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote: Vec<crate::remote::RemoteService>,
    /// Extension: clients offered as tools (`as_tool_with`); their model requests come from
    /// the same scripted server, in order of arrival.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<Subagent>,
    /// Extension: a saved transcript restored into the client before the first prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<Value>,
    /// Extension: how long the runner waits after the last turn before it lists the workspace
    /// (to see whether anything kept running after the turn ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_ms: Option<u64>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One subagent of a scenario: a client of its own on the same fake server and root.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Subagent {
    /// The tool's name (and the `agent` tag of its events).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The child client's options, as `config` (the runner adds style, base_url, model,
    /// api_key and root, the same as the parent's).
    #[serde(default)]
    pub config: Config,
    /// `as_tool_with` options as the SDK takes them (`conversation`, `max_turns`, `allow`,
    /// `input_schema`, `hints`, `max_depth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_tools: Vec<HostTool>,
    /// The child's own before_tool rules; absent = the child has no hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_tool: Option<Vec<BeforeRule>>,
    /// The child's own wait_for answers; absent = the child has no wait_for (its asks go to
    /// the parent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<Vec<WaitAnswer>>,
    /// Names of subagents (this one included) registered as tools of this child.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<String>,
    /// Whether it is registered as a tool of the scenario's client (default true).
    #[serde(default = "yes")]
    pub in_parent: bool,
}

fn yes() -> bool {
    true
}

/// Error of [`Scenario::load`].
#[derive(Debug)]
pub struct LoadError {
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for LoadError {}

impl Scenario {
    /// Reads, parses and validates a scenario file.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, LoadError> {
        let path = path.as_ref();
        let err = |message: String| LoadError {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let scenario = Scenario::from_json(&text).map_err(err)?;
        Ok(scenario)
    }

    /// Parses and validates a scenario from JSON text.
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let mut scenario: Scenario = serde_json::from_str(text).map_err(|e| e.to_string())?;
        crate::remote::attach_documents(text, &mut scenario.remote)?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// Checks what serde cannot: model entries are of exactly one kind, ollama has no string
    /// arguments, error statuses are HTTP error statuses.
    pub fn validate(&self) -> Result<(), String> {
        for (i, entry) in self.model.iter().enumerate() {
            entry
                .validate(self.style)
                .map_err(|e| format!("model[{i}]: {e}"))?;
        }
        for (i, service) in self.remote.iter().enumerate() {
            service
                .validate()
                .map_err(|e| format!("remote[{i}]: {e}"))?;
            if self.remote[..i].iter().any(|s| s.name == service.name) {
                return Err(format!(
                    "remote[{i}]: the name {:?} is given twice",
                    service.name
                ));
            }
        }
        for (i, sub) in self.subagents.iter().enumerate() {
            if self.subagents[..i].iter().any(|s| s.name == sub.name) {
                return Err(format!("subagents[{i}]: the name {:?} is taken", sub.name));
            }
            for n in &sub.subagents {
                if !self.subagents.iter().any(|s| &s.name == n) {
                    return Err(format!(
                        "subagents[{i}].subagents: no subagent is named {n:?}"
                    ));
                }
            }
        }
        for (i, c) in self.expect.compactions.iter().flatten().enumerate() {
            if c.trigger
                .as_deref()
                .is_some_and(|t| t != "auto" && t != "manual")
            {
                return Err(format!(
                    "expect.compactions[{i}].trigger must be \"auto\" or \"manual\""
                ));
            }
        }
        Ok(())
    }
}

/// Client options, in the SDK's own vocabulary.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Config {
    /// Which builtins; `None` = the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builtins: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notebook_edit: Option<bool>,
    /// `false` in the starter scenarios; kept as JSON so a provider description can be added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websearch: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostToolKind {
    Echo,
    Fail,
    Sleep,
    Register,
    Rendezvous,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Core,
    Deferred,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    #[serde(rename = "readOnly", default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    #[serde(rename = "openWorld", default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostTool {
    pub name: String,
    pub kind: HostToolKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Hints>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// Input schema; `None` means `{"type":"object"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl HostTool {
    /// The input schema, with the default `{"type":"object"}`.
    pub fn input_schema(&self) -> Value {
        self.schema
            .clone()
            .unwrap_or_else(|| serde_json::json!({"type": "object"}))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Hint {
    #[serde(rename = "readOnly")]
    ReadOnly,
    #[serde(rename = "destructive")]
    Destructive,
    #[serde(rename = "openWorld")]
    OpenWorld,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Builtin,
    Host,
    Mcp,
    Remote,
    Subagent,
}

/// `match` of a before_tool / after_tool rule: all keys given must hold.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Match {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<Hint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_hints: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// The MCP server's or remote hook's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BeforeRule {
    #[serde(rename = "match", default)]
    pub matches: Match,
    pub decision: Decision,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AfterRule {
    #[serde(rename = "match", default)]
    pub matches: Match,
    pub replace: Value,
}

/// `"allow"`, `{"deny": "message"}`, `{"deny": null}` or `{"ask": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum Decision {
    Allow,
    /// `None` = deny with the default text.
    Deny(Option<String>),
    Ask(AskSpec),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskSpec {
    /// Defaults to `"approval"` when absent.
    #[serde(default = "default_ask_kind")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_ask_kind() -> String {
    "approval".to_string()
}

impl TryFrom<Value> for Decision {
    type Error = String;
    fn try_from(v: Value) -> Result<Self, String> {
        match v {
            Value::String(s) if s == "allow" => Ok(Decision::Allow),
            Value::Object(mut m) => {
                if let Some(d) = m.remove("deny") {
                    match d {
                        Value::Null => Ok(Decision::Deny(None)),
                        Value::String(s) => Ok(Decision::Deny(Some(s))),
                        other => Err(format!("deny must be a string or null, got {other}")),
                    }
                } else if let Some(a) = m.remove("ask") {
                    serde_json::from_value(a)
                        .map(Decision::Ask)
                        .map_err(|e| format!("ask: {e}"))
                } else {
                    Err("a decision object needs \"deny\" or \"ask\"".into())
                }
            }
            other => Err(format!(
                "a decision is \"allow\", {{\"deny\": ...}} or {{\"ask\": ...}}, got {other}"
            )),
        }
    }
}

impl From<Decision> for Value {
    fn from(d: Decision) -> Value {
        match d {
            Decision::Allow => Value::from("allow"),
            Decision::Deny(m) => serde_json::json!({ "deny": m }),
            Decision::Ask(a) => serde_json::json!({ "ask": a }),
        }
    }
}

/// One scripted answer of wait_for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum WaitAnswer {
    /// Never answers: the wait holds until cancel or timeout.
    Never,
    Approve {
        approve: bool,
        message: Option<String>,
    },
    /// This value becomes the tool result.
    Result(Value),
    /// `{"suspend": true}`: the turn suspends (extension `resume` continues it).
    Suspend,
}

impl TryFrom<Value> for WaitAnswer {
    type Error = String;
    fn try_from(v: Value) -> Result<Self, String> {
        match v {
            Value::String(s) if s == "never" => Ok(WaitAnswer::Never),
            Value::Object(mut m) => {
                if let Some(r) = m.remove("result") {
                    Ok(WaitAnswer::Result(r))
                } else if m.remove("suspend") == Some(Value::Bool(true)) {
                    Ok(WaitAnswer::Suspend)
                } else if let Some(a) = m.remove("approve") {
                    let approve = a
                        .as_bool()
                        .ok_or_else(|| format!("approve must be a boolean, got {a}"))?;
                    let message = match m.remove("message") {
                        None | Some(Value::Null) => None,
                        Some(Value::String(s)) => Some(s),
                        Some(other) => {
                            return Err(format!("message must be a string, got {other}"))
                        }
                    };
                    Ok(WaitAnswer::Approve { approve, message })
                } else {
                    Err("an answer object needs \"approve\" or \"result\"".into())
                }
            }
            other => Err(format!(
                "an answer is \"never\", {{\"approve\": ...}} or {{\"result\": ...}}, got {other}"
            )),
        }
    }
}

impl From<WaitAnswer> for Value {
    fn from(a: WaitAnswer) -> Value {
        match a {
            WaitAnswer::Never => Value::from("never"),
            WaitAnswer::Approve {
                approve,
                message: None,
            } => serde_json::json!({ "approve": approve }),
            WaitAnswer::Approve {
                approve,
                message: Some(m),
            } => serde_json::json!({ "approve": approve, "message": m }),
            WaitAnswer::Result(r) => serde_json::json!({ "result": r }),
            WaitAnswer::Suspend => serde_json::json!({ "suspend": true }),
        }
    }
}

/// `{"on": "<event type>[:<tool name>]", "do": ...}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Action {
    pub on: String,
    #[serde(rename = "do")]
    pub action: ActionDo,
}

impl Action {
    /// The event type and optional tool name of `on`.
    pub fn on_pattern(&self) -> (&str, Option<&str>) {
        split_event_pattern(&self.on)
    }
}

/// Splits `"type"` / `"type:name"` (an `@agent` suffix is left out; see [`EventPattern`]).
pub fn split_event_pattern(p: &str) -> (&str, Option<&str>) {
    let p = EventPattern::parse(p);
    (p.kind, p.name)
}

/// An event pattern: `type`, `type:name`, each optionally followed by `@agent` (extension):
/// `@researcher` = events of that subagent, `@lead/researcher` = of a nested one (the chain
/// joined by `/`), `@*` = of any subagent, `@` alone = the scenario client's own events.
/// Without `@` a pattern matches events of any origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventPattern<'a> {
    pub kind: &'a str,
    pub name: Option<&'a str>,
    /// `None` = any origin.
    pub agent: Option<&'a str>,
}

impl<'a> EventPattern<'a> {
    pub fn parse(p: &'a str) -> Self {
        let (p, agent) = match p.split_once('@') {
            Some((p, a)) => (p, Some(a)),
            None => (p, None),
        };
        let (kind, name) = match p.split_once(':') {
            Some((t, n)) => (t, Some(n)),
            None => (p, None),
        };
        EventPattern { kind, name, agent }
    }

    /// Whether an event of `kind`, about tool `name`, from the subagent chain `agent`
    /// (empty for the client's own) matches.
    pub fn matches<S: AsRef<str>>(&self, kind: &str, name: Option<&str>, agent: &[S]) -> bool {
        if kind != self.kind || self.name.is_some_and(|n| name != Some(n)) {
            return false;
        }
        match self.agent {
            None => true,
            Some("*") => !agent.is_empty(),
            Some(chain) => {
                let got: Vec<&str> = agent.iter().map(AsRef::as_ref).collect();
                got.join("/") == chain
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub enum ActionDo {
    Cancel,
    /// Registers an echo tool with this name.
    Register {
        name: String,
    },
}

impl TryFrom<Value> for ActionDo {
    type Error = String;
    fn try_from(v: Value) -> Result<Self, String> {
        match &v {
            Value::String(s) if s == "cancel" => Ok(ActionDo::Cancel),
            Value::Object(m) => match m.get("register").and_then(|r| r.get("name")) {
                Some(Value::String(name)) => Ok(ActionDo::Register { name: name.clone() }),
                _ => Err(format!(
                    "an action object is {{\"register\": {{\"name\": ...}}}}, got {v}"
                )),
            },
            _ => Err(format!(
                "an action is \"cancel\" or {{\"register\": ...}}, got {v}"
            )),
        }
    }
}

impl From<ActionDo> for Value {
    fn from(a: ActionDo) -> Value {
        match a {
            ActionDo::Cancel => Value::from("cancel"),
            ActionDo::Register { name } => serde_json::json!({ "register": { "name": name } }),
        }
    }
}

/// Token counts, in a model entry and in `expect.usage`. `input_tokens` is every prompt token,
/// cached or not (the engine's meaning); the cache fields are the parts of it read from and
/// written to the prompt cache. The fake reports them in each style's own fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Extension: of `input_tokens`, read from the prompt cache (anthropic
    /// `cache_read_input_tokens`, openai `prompt_tokens_details.cached_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// Extension: of `input_tokens`, written to the prompt cache (anthropic
    /// `cache_creation_input_tokens`; openai and ollama have no such field).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
    /// Extension: of `output_tokens`, spent reasoning (openai-responses
    /// `output_tokens_details.reasoning_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// What a style can report: the cache parts within the whole, and only the fields the
    /// style has.
    pub fn validate(&self, style: Style) -> Result<(), String> {
        let cached = self
            .cache_read_input_tokens
            .saturating_add(self.cache_creation_input_tokens);
        if cached > self.input_tokens {
            return Err(format!(
                "usage: the cache tokens ({cached}) are part of input_tokens ({}) and cannot \
                 exceed it",
                self.input_tokens
            ));
        }
        match style {
            _ if self.reasoning_tokens > self.output_tokens => Err(format!(
                "usage: reasoning_tokens ({}) are part of output_tokens ({}) and cannot exceed it",
                self.reasoning_tokens, self.output_tokens
            )),
            Style::Openai | Style::OpenaiResponses if self.cache_creation_input_tokens > 0 => {
                Err("usage: openai reports no cache_creation_input_tokens".into())
            }
            Style::Anthropic | Style::Ollama if self.reasoning_tokens > 0 => {
                Err("usage: reasoning_tokens are reported by openai and openai-responses".into())
            }
            Style::Ollama if cached > 0 => Err("usage: ollama reports no cache tokens".into()),
            _ => Ok(()),
        }
    }

    /// The prompt tokens neither read from nor written to the cache (anthropic's
    /// `input_tokens`).
    pub fn uncached_input(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_input_tokens)
            .saturating_sub(self.cache_creation_input_tokens)
    }
}

/// A model entry's `usage`: counts to report, or `"counted"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UsageSpec {
    /// These counts.
    Given(Usage),
    /// The fake counts the request itself.
    Counted(Counted),
}

/// The word `"counted"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Counted {
    Counted,
}

/// One model response of the script.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ModelEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Extension: a recorded stream (one JSON chunk per line, see `crate::recorded`) sent as
    /// this reply, in the style's framing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Vec<String>>,
    /// Extension: the reply's stop reason in the style's own word (openai `finish_reason`:
    /// `length`, `content_filter`, or `refusal` = the text sent as `delta.refusal`; anthropic
    /// `stop_reason`: `refusal`, `max_tokens`, `pause_turn`; ollama `done_reason`: `length`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Extension: reasoning streamed before the text and calls, in the style's own shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<ReasoningSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorSpec>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stall: bool,
    /// Reported in the style's own usage fields; absent = 0 and 0; `"counted"` = the fake
    /// counts the request's tokens itself (and on anthropic applies the prompt cache's prefix
    /// rule, see `fake/prompt_cache.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageSpec>,
    /// The server sends this many bytes of the body, then aborts the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_after_bytes: Option<usize>,
    /// Extension: the server waits this long before each body chunk (streaming pacing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_delay_ms: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a [`ModelEntry`] asks the server to do.
#[derive(Debug, Clone, Copy)]
pub enum EntryKind<'a> {
    Error(&'a ErrorSpec),
    Stall,
    /// A recorded stream's chunks.
    Replay(&'a [String]),
    Response {
        text: Option<&'a str>,
        tool_calls: &'a [ToolCall],
        reasoning: &'a [ReasoningSpec],
        stop_reason: Option<&'a str>,
    },
}

/// One reasoning part of a scripted response (extension `model[].reasoning`).
///
/// - openai: streamed as string deltas of the message field `field` (`reasoning_content`, the
///   default, or `reasoning`), or with `field: "thinking"` as Mistral's `thinking` parts of a
///   `content` list (the text then comes as `text` parts too);
/// - anthropic: a `thinking` block (`thinking_delta`s, then its `signature` as a
///   `signature_delta`), or with `redacted` a `redacted_thinking` block carrying that data;
/// - ollama: `message.thinking` pieces before the content;
/// - openai-responses: a `reasoning` item whose summary is the text (summary text deltas), and
///   its `encrypted_content` (the fake's own over the text, checked when the item comes back)
///   when the request includes `reasoning.encrypted_content`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReasoningSpec {
    #[serde(default)]
    pub text: String,
    /// anthropic only: the thinking block's signature (default: the fake's own over the text,
    /// checked when the block comes back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// anthropic only: a `redacted_thinking` block with this data instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
    /// openai only: `reasoning_content` (default), `reasoning` or `thinking` (Mistral parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ReasoningSpec {
    /// The openai-style field, `reasoning_content` when none is given.
    pub fn openai_field(&self) -> &str {
        self.field.as_deref().unwrap_or("reasoning_content")
    }

    fn validate(&self, style: Style) -> Result<(), String> {
        if style != Style::Anthropic && (self.signature.is_some() || self.redacted.is_some()) {
            return Err("reasoning `signature` / `redacted` are anthropic's".into());
        }
        if let Some(f) = &self.field {
            if style != Style::Openai {
                return Err("reasoning `field` is the openai style's".into());
            }
            if !["reasoning_content", "reasoning", "thinking"].contains(&f.as_str()) {
                return Err(format!(
                    "reasoning field {f:?} is not reasoning_content, reasoning or thinking"
                ));
            }
        }
        if self.redacted.is_some() && !self.text.is_empty() {
            return Err("redacted reasoning has no text".into());
        }
        Ok(())
    }
}

impl ModelEntry {
    pub fn kind(&self) -> EntryKind<'_> {
        if let Some(e) = &self.error {
            EntryKind::Error(e)
        } else if self.stall {
            EntryKind::Stall
        } else if let Some(lines) = &self.replay {
            EntryKind::Replay(lines)
        } else {
            EntryKind::Response {
                text: self.text.as_deref(),
                tool_calls: self.tool_calls.as_deref().unwrap_or(&[]),
                reasoning: &self.reasoning,
                stop_reason: self.stop_reason.as_deref(),
            }
        }
    }

    /// The counts an entry gives (`None` when the fake counts them itself).
    pub fn usage(&self) -> Option<Usage> {
        match self.usage {
            None => Some(Usage::default()),
            Some(UsageSpec::Given(u)) => Some(u),
            Some(UsageSpec::Counted(_)) => None,
        }
    }

    pub fn validate(&self, style: Style) -> Result<(), String> {
        let response = self.text.is_some() || self.tool_calls.is_some();
        let kinds = [
            response,
            self.error.is_some(),
            self.stall,
            self.replay.is_some(),
        ]
        .iter()
        .filter(|k| **k)
        .count();
        if kinds == 0 {
            return Err("an entry needs text, tool_calls, error, stall or replay".into());
        }
        if kinds > 1 {
            return Err("text/tool_calls, error, stall and replay exclude each other".into());
        }
        if let Some(UsageSpec::Given(u)) = &self.usage {
            u.validate(style)?;
        }
        if !self.reasoning.is_empty() && !response {
            return Err("reasoning goes with text or tool_calls".into());
        }
        for r in &self.reasoning {
            r.validate(style)?;
        }
        if let Some(stop) = &self.stop_reason {
            let known: &[&str] = match style {
                Style::Openai => &["stop", "tool_calls", "length", "content_filter", "refusal"],
                // `response.incomplete` with its `incomplete_details.reason`, or a refusal item.
                Style::OpenaiResponses => &["max_output_tokens", "content_filter", "refusal"],
                Style::Anthropic => &[
                    "end_turn",
                    "tool_use",
                    "refusal",
                    "max_tokens",
                    "pause_turn",
                ],
                Style::Ollama => &["stop", "length"],
            };
            if !known.contains(&stop.as_str()) {
                return Err(format!(
                    "stop_reason {stop:?} is not one of {known:?} for {}",
                    style.as_str()
                ));
            }
        }
        if let Some(e) = &self.error {
            if !(400..=599).contains(&e.status) {
                return Err(format!("error.status {} is not 400..=599", e.status));
            }
        }
        if style == Style::Ollama {
            for call in self.tool_calls.iter().flatten() {
                if matches!(call.arguments, Arguments::Raw(_)) {
                    return Err(format!(
                        "tool call {:?}: string arguments are not allowed for ollama",
                        call.name
                    ));
                }
                if call.pause_after_ms.is_some() {
                    return Err(format!(
                        "tool call {:?}: pause_after_ms is not for ollama (its calls come in \
                         one line)",
                        call.name
                    ));
                }
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCall {
    /// Ignored for ollama; generated (`call_fake_<n>_<i>` / `toolu_fake_<n>_<i>`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Arguments,
    /// The stream pauses this long (ms) once this call is complete, before the rest of the
    /// reply: anthropic after its block's `content_block_stop`; openai after the next call's
    /// first delta (for the last call, before the finish chunk). Refused for ollama (all calls
    /// come in one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_after_ms: Option<u64>,
}

/// A JSON object, or a raw string sent as-is (which may be invalid JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Arguments {
    Object(Map<String, Value>),
    Raw(String),
}

impl Default for Arguments {
    fn default() -> Self {
        Arguments::Object(Map::new())
    }
}

impl Arguments {
    /// The text sent on a wire that carries arguments as a string: compact JSON for an object,
    /// the raw string as-is.
    pub fn to_wire_string(&self) -> String {
        match self {
            Arguments::Object(m) => Value::Object(m.clone()).to_string(),
            Arguments::Raw(s) => s.clone(),
        }
    }

    /// The value sent on a wire that carries arguments as JSON: the object, or the raw string
    /// parsed when it is valid JSON, else the raw string as a JSON string.
    pub fn to_wire_value(&self) -> Value {
        match self {
            Arguments::Object(m) => Value::Object(m.clone()),
            Arguments::Raw(s) => {
                serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
            }
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorSpec {
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
    /// A string is sent as-is; any other JSON is sent compact; absent = the style's error object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Done,
    Cancelled,
    MaxTurns,
    Error,
    /// Extension: a compute ceiling (`max_tool_calls`, `max_turn_tokens`, a policy's `compute`)
    /// ended the turn.
    Budget,
    /// Extension: the answer did not match the `output_schema` after its corrections.
    OutputInvalid,
    Suspended,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Cancelled => "cancelled",
            Outcome::MaxTurns => "max_turns",
            Outcome::Error => "error",
            Outcome::Budget => "budget",
            Outcome::OutputInvalid => "output_invalid",
            Outcome::Suspended => "suspended",
        }
    }
}

/// `expect`: every key given must hold.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Expect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_contains: Option<Texts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_results: Option<Vec<ExpectToolResult>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_events: Option<Vec<String>>,
    /// Extension: at least N events matching each pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_events: Option<BTreeMap<String, usize>>,
    /// Extension: at most N events matching each pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<BTreeMap<String, usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<Vec<ExpectRequest>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_count: Option<usize>,
    /// `path -> Some(content)` must exist with that content, `None` (JSON null) must not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<BTreeMap<String, Option<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// What the remote services received, in order of arrival (spec fetches not listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_requests: Option<Vec<crate::remote::ExpectRemoteRequest>>,
    /// How many requests the remote services received (spec fetches not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_request_count: Option<usize>,
    /// Extension (`chain` scenarios): the chain is refused before anything runs, with an error
    /// holding these substrings (the trace's `chain_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_error_contains: Option<Texts>,
    /// Extension `resume`: the resume was refused with an error holding these substrings (the
    /// trace's `resume_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_error_contains: Option<Texts>,
    /// SPEC "Approval policies": creating the client must fail with an error containing this
    /// (a list = all of them); no turn runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error_contains: Option<Texts>,
    /// Extension: the `error` of some `turn_end` event (of any turn) contains this (a list =
    /// all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_contains: Option<Texts>,
    /// Extension: what `on_compact` was told, in order (exactly this many), each also a
    /// `compact` event of the trace with the same numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compactions: Option<Vec<ExpectCompaction>>,
    /// Extension `step`: the stepper's actions in order (`model_request:STEP`,
    /// `tool_call:NAME`, `ask:CALL_ID`, `done`): the trace's `actions`, same length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<String>>,
    /// Extension `step`: the turn replayed from its journal gave the same actions and final
    /// text (the trace's `replay_actions`, `replay_final_text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_same: Option<bool>,
    /// Extension `step`: the feeds the binding refused, exactly this many, entry i holding
    /// text i (the trace's `step_errors`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_errors_contain: Option<Vec<String>>,
    /// Extension: the scenario's lifecycle hooks (top-level `lifecycle`) were called exactly
    /// these times, in this order (`on_prompt`, `on_tool_error:NAME`, `on_notification:KIND`,
    /// `before_compact:TRIGGER`, `on_turn_end:OUTCOME`, ...): the trace's `lifecycle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Vec<String>>,
    /// Extension: for each entry, some event matches `event` (a pattern as in `events`) and
    /// every event that matches it has each of `fields` with exactly that JSON value (in
    /// core's serialized form), e.g. the `content` of a cancelled call's `tool_result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_fields: Option<Vec<ExpectEventFields>>,
    /// Extension: the trace's `output` (the result's parsed answer) equals this JSON exactly;
    /// `null` = no output.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<Value>,
    /// Extension: the `traceparent` header of the model requests (the fake server records it
    /// as the key `_traceparent` of each body). `"chat_spans"`: every request has a valid W3C
    /// `traceparent` (version 00, sampled), the requests of each turn share one trace id (one
    /// per turn: `prompt` and each of `more_prompts`) and no two requests share a span id
    /// (each names its own `chat` span); `"absent"`: no request has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A key given, `null` included: `Some(value)`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One `event_fields` entry: which events, and the fields each of them must have.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectEventFields {
    /// An event pattern (`"type"`, `"type:name"`, optionally `@agent`).
    pub event: String,
    /// Field name -> the exact value every matching event has.
    pub fields: Map<String, Value>,
}

/// One compaction as `on_compact` saw it; every key given must hold.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExpectCompaction {
    /// `auto` or `manual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_tokens_min: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_tokens_max: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_tokens_min: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_tokens_max: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_contains: Option<Texts>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExpectToolResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Absent = not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<Texts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_contains: Option<Texts>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExpectRequest {
    pub index: usize,
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub not_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<Texts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_contains: Option<Texts>,
}

/// The scenario directories of a run: `CONTENOX_SCENARIOS` (colon-separated) when set, else
/// `default`.
pub fn scenario_dirs(default: &[PathBuf]) -> Vec<PathBuf> {
    match std::env::var_os("CONTENOX_SCENARIOS") {
        Some(v) if !v.is_empty() => std::env::split_paths(&v).collect(),
        _ => default.to_vec(),
    }
}

/// Every `*.json` in `dirs`, sorted by path; a missing directory is skipped. A path that is
/// itself a `*.json` file is taken as it is (to run chosen scenarios).
pub fn scenario_files(dirs: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir in dirs {
        if dir.is_file() && dir.extension().is_some_and(|e| e == "json") {
            files.push(dir.clone());
            continue;
        }
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario, String> {
        Scenario::from_json(text)
    }

    #[test]
    fn parses_every_key() {
        let s = parse(
            r#"{
              "name": "n", "about": "a", "style": "anthropic",
              "config": {"builtins": ["read"], "max_turns": 3, "background": false,
                         "notebook_edit": false, "websearch": false, "system": "sys",
                         "allow": ["*", "!bash"], "future_option": 1},
              "workspace": {"a.txt": "x"},
              "host_tools": [{"name": "e", "kind": "echo", "hints": {"readOnly": true},
                              "tier": "deferred", "schema": {"type": "object"}},
                             {"name": "f", "kind": "fail"}],
              "before_tool": [
                {"match": {"name": "write"}, "decision": {"ask": {"kind": "approval", "prompt": "p", "timeout_ms": 5}}},
                {"match": {"hint": "readOnly", "source": "host"}, "decision": "allow"},
                {"match": {"no_hints": true}, "decision": {"deny": null}},
                {"match": {}, "decision": {"deny": "no"}}
              ],
              "after_tool": [{"match": {"name": "e"}, "replace": {"x": 1}}],
              "wait_for": [{"approve": true}, {"approve": false, "message": "m"}, {"result": null}, "never"],
              "actions": [{"on": "pending", "do": "cancel"}, {"on": "tool_call:e", "do": {"register": {"name": "late"}}}],
              "model": [
                {"tool_calls": [{"id": "c1", "name": "e", "arguments": {"a": 1}},
                                {"name": "e", "arguments": "{bad"}], "text": "before",
                 "usage": {"input_tokens": 3, "output_tokens": 4}},
                {"error": {"status": 429, "retry_after_s": 0, "body": "slow down"}},
                {"stall": true},
                {"text": "t", "break_after_bytes": 10, "chunk_delay_ms": 5}
              ],
              "prompt": "p", "more_prompts": ["q"],
              "expect": {"outcome": "max_turns", "final_text": "t", "final_contains": ["a", "b"],
                         "tool_results": [{"id": "c1", "is_error": false, "contains": "x", "not_contains": "y"}],
                         "events": ["turn_start"], "no_events": ["retry"],
                         "min_events": {"text_delta": 2}, "max_events": {"retry": 0},
                         "requests": [{"index": 0, "tools": ["e"], "not_tools": ["f"], "contains": "p"}],
                         "request_count": 2, "workspace": {"a.txt": "x", "b.txt": null},
                         "usage": {"input_tokens": 1, "output_tokens": 2}},
              "unknown_top_level": true
            }"#,
        )
        .unwrap();
        assert_eq!(s.style, Style::Anthropic);
        assert_eq!(s.config.max_turns, Some(3));
        assert!(s.config.extra.contains_key("future_option"));
        assert!(s.extra.contains_key("unknown_top_level"));
        assert_eq!(s.host_tools[0].tier, Some(Tier::Deferred));
        assert_eq!(
            s.host_tools[1].input_schema(),
            serde_json::json!({"type": "object"})
        );
        assert!(
            matches!(s.before_tool[0].decision, Decision::Ask(ref a) if a.timeout_ms == Some(5))
        );
        assert_eq!(s.before_tool[1].decision, Decision::Allow);
        assert_eq!(s.before_tool[2].decision, Decision::Deny(None));
        assert_eq!(s.before_tool[3].decision, Decision::Deny(Some("no".into())));
        assert_eq!(s.wait_for[2], WaitAnswer::Result(Value::Null));
        assert_eq!(s.wait_for[3], WaitAnswer::Never);
        assert_eq!(
            s.actions[1].action,
            ActionDo::Register {
                name: "late".into()
            }
        );
        assert_eq!(s.actions[1].on_pattern(), ("tool_call", Some("e")));
        let calls = s.model[0].tool_calls.as_ref().unwrap();
        assert_eq!(calls[0].arguments.to_wire_string(), r#"{"a":1}"#);
        assert_eq!(calls[1].arguments, Arguments::Raw("{bad".into()));
        assert_eq!(calls[1].arguments.to_wire_value(), Value::from("{bad"));
        assert!(matches!(s.model[1].kind(), EntryKind::Error(e) if e.status == 429));
        assert!(matches!(s.model[2].kind(), EntryKind::Stall));
        assert_eq!(s.model[3].break_after_bytes, Some(10));
        assert_eq!(s.expect.outcome, Some(Outcome::MaxTurns));
        assert_eq!(
            s.expect.final_contains,
            Some(Texts(vec!["a".into(), "b".into()]))
        );
        assert_eq!(s.expect.workspace.as_ref().unwrap()["b.txt"], None);
        // Round trip keeps the meaning.
        let again: Scenario = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(again.wait_for, s.wait_for);
        assert_eq!(again.before_tool[2].decision, Decision::Deny(None));
    }

    #[test]
    fn rejects_invalid_entries() {
        let base = |model: &str, style: &str| {
            format!(r#"{{"name":"n","style":"{style}","prompt":"p","model":[{model}]}}"#)
        };
        assert!(parse(&base(r#"{"text":"a"}"#, "openai")).is_ok());
        assert!(parse(&base(r#"{}"#, "openai"))
            .unwrap_err()
            .contains("needs text"));
        assert!(parse(&base(r#"{"text":"a","stall":true}"#, "openai"))
            .unwrap_err()
            .contains("exclude"));
        assert!(parse(&base(r#"{"error":{"status":200}}"#, "openai"))
            .unwrap_err()
            .contains("400..=599"));
        let raw = r#"{"tool_calls":[{"name":"e","arguments":"{x"}]}"#;
        assert!(parse(&base(raw, "openai")).is_ok());
        assert!(parse(&base(raw, "ollama"))
            .unwrap_err()
            .contains("not allowed for ollama"));
        assert!(parse(&base(r#"{"text":"a"}"#, "gemini")).is_err());
        let bad_decision = r#"{"name":"n","style":"openai","prompt":"p","model":[],
            "before_tool":[{"match":{},"decision":{"maybe":1}}]}"#;
        assert!(parse(bad_decision).is_err());
        let bad_args = base(r#"{"tool_calls":[{"name":"e","arguments":[1]}]}"#, "openai");
        assert!(parse(&bad_args).is_err());
    }

    #[test]
    fn subagents_usage_and_compaction_keys() {
        let s = parse(
            r#"{"name":"n","style":"anthropic","prompt":"p",
                "transcript": {"messages": []}, "settle_ms": 10,
                "subagents": [
                  {"name": "a", "config": {"builtins": ["read"]}, "options": {"conversation": "kept"},
                   "before_tool": [], "wait_for": ["never"], "subagents": ["a", "b"]},
                  {"name": "b", "in_parent": false}
                ],
                "model": [{"text": "x", "usage": {"input_tokens": 30, "output_tokens": 1,
                           "cache_read_input_tokens": 20, "cache_creation_input_tokens": 5}}],
                "expect": {"error_contains": "x", "compactions": [{"trigger": "auto"}]}}"#,
        )
        .unwrap();
        assert_eq!(s.subagents.len(), 2);
        assert!(s.subagents[0].in_parent && !s.subagents[1].in_parent);
        assert_eq!(s.subagents[0].wait_for, Some(vec![WaitAnswer::Never]));
        assert!(s.subagents[1].before_tool.is_none());
        assert_eq!(s.model[0].usage().unwrap().uncached_input(), 5);
        assert_eq!(s.settle_ms, Some(10));
        let base = |extra: &str| {
            format!(
                r#"{{"name":"n","style":"openai","prompt":"p","model":[{{"text":"x"}}]{extra}}}"#
            )
        };
        assert!(
            parse(&base(r#","subagents":[{"name":"a","subagents":["zz"]}]"#))
                .unwrap_err()
                .contains("no subagent is named")
        );
        assert!(parse(&base(r#","subagents":[{"name":"a"},{"name":"a"}]"#))
            .unwrap_err()
            .contains("taken"));
        assert!(parse(&base(
            r#","expect":{"compactions":[{"trigger":"sometimes"}]}"#
        ))
        .unwrap_err()
        .contains("trigger"));
        let usage = |style: &str, u: &str| {
            parse(&format!(
                r#"{{"name":"n","style":"{style}","prompt":"p","model":[{{"text":"x","usage":{u}}}]}}"#
            ))
        };
        assert!(usage(
            "openai",
            r#"{"input_tokens":3,"cache_read_input_tokens":4}"#
        )
        .unwrap_err()
        .contains("cannot exceed"));
        assert!(usage(
            "openai",
            r#"{"input_tokens":9,"cache_creation_input_tokens":4}"#
        )
        .unwrap_err()
        .contains("openai reports no cache_creation_input_tokens"));
        assert!(usage(
            "ollama",
            r#"{"input_tokens":9,"cache_read_input_tokens":4}"#
        )
        .unwrap_err()
        .contains("ollama reports no cache tokens"));
        assert!(usage(
            "openai",
            r#"{"input_tokens":9,"cache_read_input_tokens":4}"#
        )
        .is_ok());
    }

    #[test]
    fn event_patterns_with_an_agent() {
        let p = EventPattern::parse("tool_call:read@lead/researcher");
        assert_eq!(
            (p.kind, p.name, p.agent),
            ("tool_call", Some("read"), Some("lead/researcher"))
        );
        assert!(p.matches("tool_call", Some("read"), &["lead", "researcher"]));
        assert!(!p.matches("tool_call", Some("read"), &["researcher"]));
        let own = EventPattern::parse("text@");
        assert!(own.matches::<&str>("text", None, &[]));
        assert!(!own.matches("text", None, &["a"]));
        let any_sub = EventPattern::parse("text@*");
        assert!(
            any_sub.matches("text", None, &["a"]) && !any_sub.matches::<&str>("text", None, &[])
        );
        let any = EventPattern::parse("text");
        assert!(any.matches("text", None, &["a"]) && any.matches::<&str>("text", None, &[]));
        assert_eq!(split_event_pattern("gate:write@w"), ("gate", Some("write")));
    }
}
