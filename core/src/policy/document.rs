//! A hitl-policy-v1 document, read and validated whole: anything that does not validate is an
//! error naming the rule and the field, so a typo can never quietly widen what runs.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value};

use super::condition::Condition;
use super::glob::NameGlob;

/// The newest document version this engine reads (`version` 0 or absent means this one).
pub const POLICY_VERSION: u64 = 1;
/// The largest policy file read.
pub const MAX_POLICY_FILE_BYTES: u64 = 4 << 20;

/// What a rule (or the default) decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The call runs (the host's `before_tool` may still narrow).
    Allow,
    /// The call waits for the host's `wait_for`.
    Approve,
    /// The call is refused with an error result the model sees.
    Deny,
}

impl Action {
    /// The action's name in a document.
    pub fn name(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Approve => "approve",
            Action::Deny => "deny",
        }
    }

    fn parse(s: &str) -> Option<Action> {
        match s {
            "allow" => Some(Action::Allow),
            "approve" => Some(Action::Approve),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }
}

/// Why a policy document was refused: where (`rules[3].when[0].op`) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy {at}: {message}")]
pub struct PolicyError {
    /// The field at fault, as a path into the document (`rules[3].action`), or the file.
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl PolicyError {
    fn new(at: impl Into<String>, message: impl Into<String>) -> Self {
        PolicyError {
            at: at.into(),
            message: message.into(),
        }
    }
}

/// A policy that does not validate is a configuration error of the option `policy` (the same
/// word in every host's spelling); the path into the document keeps the document's own keys.
impl From<PolicyError> for crate::Error {
    fn from(e: PolicyError) -> Self {
        crate::Error::Config(crate::ConfigError::new(
            "policy",
            format!("{}: {}", e.at, e.message),
        ))
    }
}

/// The hints a rule's `hints` extension asks for. An unknown hint counts as its unsafe side
/// (readOnly false, destructive true, openWorld true), so `{readOnly: true}` never matches a
/// tool that does not say so, and `{destructive: true}` also catches a tool that does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HintsMatch {
    /// `readOnly`.
    pub read_only: Option<bool>,
    /// `destructive`.
    pub destructive: Option<bool>,
    /// `openWorld`.
    pub open_world: Option<bool>,
}

impl HintsMatch {
    /// Whether a tool with `hints` matches.
    pub fn matches(&self, hints: &crate::tool::Hints) -> bool {
        let ok = |want: Option<bool>, got: Option<bool>, unknown: bool| {
            want.is_none_or(|w| got.unwrap_or(unknown) == w)
        };
        ok(self.read_only, hints.read_only, false)
            && ok(self.destructive, hints.destructive, true)
            && ok(self.open_world, hints.open_world, true)
    }
}

/// One rule, compiled.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its optional `name` (an extension), for messages.
    pub name: Option<String>,
    /// The group a tool comes from (`builtin`, `host`, `mcp`, an MCP server's or remote
    /// hook's name); `None` = any.
    pub tools: Option<String>,
    /// The tool-name glob as written; `None` = any.
    pub tool: Option<String>,
    tool_glob: Option<NameGlob>,
    /// All must hold.
    pub when: Vec<Condition>,
    /// The `hints` extension.
    pub hints: Option<HintsMatch>,
    /// What the rule decides.
    pub action: Action,
    /// Seconds an `approve` waits before it denies; `None` (absent, 0 or -1) = no deadline.
    pub timeout_s: Option<u64>,
}

impl Rule {
    /// Whether the rule's tool pattern matches `name`.
    pub fn tool_matches(&self, name: &str) -> bool {
        self.tool_glob.as_ref().is_none_or(|g| g.matches(name))
    }
}

/// The `compute` section: per-turn ceilings (absent or 0 = none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComputeBounds {
    /// Model responses per turn (combined with config `max_turns`: the smaller wins).
    pub max_turns: Option<u32>,
    /// Tool calls per turn.
    pub max_tool_calls: Option<u64>,
    /// Tokens (input + output) per turn.
    pub max_tokens: Option<u64>,
    /// Models the client may use.
    pub model_allowlist: Vec<String>,
    /// Wire styles (`openai`, `anthropic`, `ollama`, `scripted`) or base URLs the client may use.
    pub backend_allowlist: Vec<String>,
}

/// A validated hitl-policy-v1 document.
#[derive(Debug, Clone)]
pub struct Policy {
    pub(crate) default_action: Action,
    pub(crate) rules: Vec<Rule>,
    pub(crate) compute: ComputeBounds,
    /// A `trusted_binaries` block with entries: not enforced, so no prefix allowlist admits.
    pub(crate) trusted_binaries: bool,
    document: Value,
}

impl PartialEq for Policy {
    fn eq(&self, other: &Self) -> bool {
        self.document == other.document
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "policy ({} rules, default {})",
            self.rules.len(),
            self.default_action.name()
        )
    }
}

impl Policy {
    /// Read the `policy` option: a document (a JSON object), JSON text (a string whose first
    /// non-blank character is `{`), or otherwise the path of a file holding the document.
    pub fn from_source(source: &Value) -> Result<Policy, PolicyError> {
        match source {
            Value::Object(_) => Policy::from_value(source),
            Value::String(s) if s.trim_start().starts_with('{') => Policy::from_json(s),
            Value::String(s) => Policy::load(s),
            other => Err(PolicyError::new(
                "document",
                format!("must be an object, its JSON text or a file path, got {other}"),
            )),
        }
    }

    /// Parse JSON text.
    pub fn from_json(text: &str) -> Result<Policy, PolicyError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| PolicyError::new("document", format!("not valid JSON: {e}")))?;
        Policy::from_value(&v)
    }

    /// Read a policy file (a regular file of at most 4 MiB).
    pub fn load(path: impl AsRef<Path>) -> Result<Policy, PolicyError> {
        let path = path.as_ref();
        let at = format!("file {}", path.display());
        let meta = std::fs::metadata(path).map_err(|e| PolicyError::new(&at, e.to_string()))?;
        if !meta.is_file() {
            return Err(PolicyError::new(&at, "not a regular file"));
        }
        let file = std::fs::File::open(path).map_err(|e| PolicyError::new(&at, e.to_string()))?;
        let mut text = String::new();
        file.take(MAX_POLICY_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| PolicyError::new(&at, e.to_string()))?;
        if text.len() as u64 > MAX_POLICY_FILE_BYTES {
            return Err(PolicyError::new(
                &at,
                format!("larger than {MAX_POLICY_FILE_BYTES} bytes"),
            ));
        }
        Policy::from_json(&text).map_err(|e| PolicyError::new(format!("{at}: {}", e.at), e.message))
    }

    /// Validate a parsed document.
    pub fn from_value(doc: &Value) -> Result<Policy, PolicyError> {
        let obj = doc
            .as_object()
            .ok_or_else(|| PolicyError::new("document", "a policy is a JSON object"))?;
        check_keys(
            obj,
            "document",
            &[
                "version",
                "default_action",
                "rules",
                "compute",
                "attention",
                "trusted_binaries",
            ],
        )?;
        match obj.get("version") {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_u64() {
                Some(n) if n <= POLICY_VERSION => {}
                Some(n) => {
                    return Err(PolicyError::new(
                        "version",
                        format!(
                            "version {n} is newer than this engine reads (0 or {POLICY_VERSION})"
                        ),
                    ))
                }
                None => {
                    return Err(PolicyError::new(
                        "version",
                        format!("must be 0 or {POLICY_VERSION}, got {v}"),
                    ))
                }
            },
        }
        let default_action = match obj.get("default_action") {
            None | Some(Value::Null) => Action::Approve,
            Some(v) => action(v, "default_action")?,
        };
        let rules = match obj.get("rules") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, r)| rule(r, &format!("rules[{i}]")))
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(PolicyError::new(
                    "rules",
                    format!("must be a list, got {other}"),
                ))
            }
        };
        let compute = match obj.get("compute") {
            None | Some(Value::Null) => ComputeBounds::default(),
            Some(v) => compute(v)?,
        };
        if let Some(a) = obj.get("attention") {
            if !a.is_object() && !a.is_null() {
                return Err(PolicyError::new("attention", "must be an object"));
            }
        }
        let trusted_binaries = match obj.get("trusted_binaries") {
            None | Some(Value::Null) => false,
            Some(v) => trusted(v)?,
        };
        Ok(Policy {
            default_action,
            rules,
            compute,
            trusted_binaries,
            document: doc.clone(),
        })
    }

    /// The document as given.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// What applies when no rule matches (`approve` when the document names none).
    pub fn default_action(&self) -> Action {
        self.default_action
    }

    /// The `compute` ceilings.
    pub fn compute(&self) -> &ComputeBounds {
        &self.compute
    }
}

/// Keys starting with `//` or `$` are comments (`"//": "why"`, `"$schema"`); any other key must
/// be known.
fn check_keys(obj: &Map<String, Value>, at: &str, known: &[&str]) -> Result<(), PolicyError> {
    for k in obj.keys() {
        if k.starts_with("//") || k.starts_with('$') || known.contains(&k.as_str()) {
            continue;
        }
        return Err(PolicyError::new(
            at,
            format!("unknown key {k:?} (known: {})", known.join(", ")),
        ));
    }
    Ok(())
}

fn action(v: &Value, at: &str) -> Result<Action, PolicyError> {
    v.as_str().and_then(Action::parse).ok_or_else(|| {
        PolicyError::new(
            at,
            format!("unknown action {v} (expected allow, approve or deny)"),
        )
    })
}

fn opt_str(obj: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, PolicyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(PolicyError::new(
            format!("{at}.{key}"),
            format!("must be a string, got {other}"),
        )),
    }
}

fn rule(v: &Value, at: &str) -> Result<Rule, PolicyError> {
    let obj = v
        .as_object()
        .ok_or_else(|| PolicyError::new(at, format!("a rule is an object, got {v}")))?;
    check_keys(
        obj,
        at,
        &[
            "name",
            "tools",
            "tool",
            "when",
            "hints",
            "action",
            "timeout_s",
            "on_timeout",
        ],
    )?;
    let action = match obj.get("action") {
        None => return Err(PolicyError::new(format!("{at}.action"), "is required")),
        Some(v) => action(v, &format!("{at}.action"))?,
    };
    let tools = opt_str(obj, "tools", at)?.filter(|t| !t.is_empty() && t != "*");
    let tool = opt_str(obj, "tool", at)?.filter(|t| !t.is_empty() && t != "*");
    let tool_glob = match &tool {
        Some(t) => Some(NameGlob::new(t).map_err(|e| PolicyError::new(format!("{at}.tool"), e))?),
        None => None,
    };
    let when = match obj.get("when") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(j, c)| condition(c, &format!("{at}.when[{j}]")))
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(PolicyError::new(
                format!("{at}.when"),
                format!("must be a list of conditions, got {other}"),
            ))
        }
    };
    let hints = match obj.get("hints") {
        None | Some(Value::Null) => None,
        Some(v) => Some(hints(v, &format!("{at}.hints"))?),
    };
    let timeout_s = match obj.get("timeout_s") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64() {
            Some(-1) | Some(0) => None,
            Some(n) if n > 0 => Some(n as u64),
            _ => {
                return Err(PolicyError::new(
                    format!("{at}.timeout_s"),
                    format!("must be a whole number of seconds, -1 (no deadline) or more, got {v}"),
                ))
            }
        },
    };
    match obj.get("on_timeout") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "deny" => {}
        Some(Value::String(s)) if s == "allow" => {
            return Err(PolicyError::new(
                format!("{at}.on_timeout"),
                "\"allow\" is refused: a timed-out approval would silently run the call; only \"deny\" is allowed",
            ))
        }
        Some(other) => {
            return Err(PolicyError::new(
                format!("{at}.on_timeout"),
                format!("only \"deny\" is allowed, got {other}"),
            ))
        }
    }
    Ok(Rule {
        name: opt_str(obj, "name", at)?,
        tools,
        tool,
        tool_glob,
        when,
        hints,
        action,
        timeout_s,
    })
}

fn condition(v: &Value, at: &str) -> Result<Condition, PolicyError> {
    let obj = v
        .as_object()
        .ok_or_else(|| PolicyError::new(at, format!("a condition is an object, got {v}")))?;
    check_keys(obj, at, &["key", "op", "value"])?;
    let key = opt_str(obj, "key", at)?.unwrap_or_default();
    let op = opt_str(obj, "op", at)?
        .ok_or_else(|| PolicyError::new(format!("{at}.op"), "is required"))?;
    let value = opt_str(obj, "value", at)?.unwrap_or_default();
    Condition::new(&key, &op, &value)
        .map_err(|(field, m)| PolicyError::new(format!("{at}.{field}"), m))
}

fn hints(v: &Value, at: &str) -> Result<HintsMatch, PolicyError> {
    let obj = v
        .as_object()
        .ok_or_else(|| PolicyError::new(at, format!("must be an object, got {v}")))?;
    let mut m = HintsMatch::default();
    for (k, val) in obj {
        if k.starts_with("//") {
            continue;
        }
        let b = val.as_bool().ok_or_else(|| {
            PolicyError::new(
                format!("{at}.{k}"),
                format!("must be true or false, got {val}"),
            )
        })?;
        match k.as_str() {
            "readOnly" | "read_only" => m.read_only = Some(b),
            "destructive" => m.destructive = Some(b),
            "openWorld" | "open_world" => m.open_world = Some(b),
            _ => {
                return Err(PolicyError::new(
                    at,
                    format!("unknown hint {k:?} (known: readOnly, destructive, openWorld)"),
                ))
            }
        }
    }
    Ok(m)
}

fn compute(v: &Value) -> Result<ComputeBounds, PolicyError> {
    let obj = v
        .as_object()
        .ok_or_else(|| PolicyError::new("compute", format!("must be an object, got {v}")))?;
    check_keys(
        obj,
        "compute",
        &[
            "maxTurns",
            "maxToolCalls",
            "maxTokens",
            "modelAllowlist",
            "backendAllowlist",
            "onExhausted",
        ],
    )?;
    let ceiling = |key: &str, max: u64| -> Result<Option<u64>, PolicyError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(0) => Ok(None),
                Some(n) if n <= max => Ok(Some(n)),
                _ => Err(PolicyError::new(
                    format!("compute.{key}"),
                    format!("must be a whole number from 0 (none) to {max}, got {v}"),
                )),
            },
        }
    };
    let list = |key: &str| -> Result<Vec<String>, PolicyError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) if items.len() <= 256 => items
                .iter()
                .enumerate()
                .map(|(i, e)| match e.as_str() {
                    Some(s) if !s.trim().is_empty() && s.len() <= 512 => Ok(s.to_string()),
                    _ => Err(PolicyError::new(
                        format!("compute.{key}[{i}]"),
                        format!("must be a non-empty name, got {e}"),
                    )),
                })
                .collect(),
            Some(other) => Err(PolicyError::new(
                format!("compute.{key}"),
                format!("must be a list of at most 256 names, got {other}"),
            )),
        }
    };
    match obj.get("onExhausted") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() || s == "finish_stuck" || s == "pause_ask" => {}
        Some(other) => {
            return Err(PolicyError::new(
                "compute.onExhausted",
                format!("must be finish_stuck or pause_ask, got {other}"),
            ))
        }
    }
    Ok(ComputeBounds {
        max_turns: ceiling("maxTurns", 100_000)?.map(|n| n as u32),
        max_tool_calls: ceiling("maxToolCalls", 10_000_000)?,
        max_tokens: ceiling("maxTokens", 100_000_000_000)?,
        model_allowlist: list("modelAllowlist")?,
        backend_allowlist: list("backendAllowlist")?,
    })
}

/// Whether a `trusted_binaries` block has any entry (validated for shape).
fn trusted(v: &Value) -> Result<bool, PolicyError> {
    let obj = v.as_object().ok_or_else(|| {
        PolicyError::new("trusted_binaries", format!("must be an object, got {v}"))
    })?;
    check_keys(obj, "trusted_binaries", &["dirs", "hashes"])?;
    let mut any = false;
    if let Some(d) = obj.get("dirs") {
        let dirs = d.as_array().ok_or_else(|| {
            PolicyError::new(
                "trusted_binaries.dirs",
                "must be a list of absolute directories",
            )
        })?;
        for (i, dir) in dirs.iter().enumerate() {
            if !dir.as_str().is_some_and(|s| s.starts_with('/')) {
                return Err(PolicyError::new(
                    format!("trusted_binaries.dirs[{i}]"),
                    format!("must be an absolute directory, got {dir}"),
                ));
            }
        }
        any |= !dirs.is_empty();
    }
    if let Some(h) = obj.get("hashes") {
        let hashes = h.as_object().ok_or_else(|| {
            PolicyError::new(
                "trusted_binaries.hashes",
                "must map absolute paths to SHA-256 hex digests",
            )
        })?;
        for (path, hash) in hashes {
            let ok = path.starts_with('/')
                && hash
                    .as_str()
                    .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()));
            if !ok {
                return Err(PolicyError::new(
                    format!("trusted_binaries.hashes[{path:?}]"),
                    "must map an absolute path to a SHA-256 hex digest",
                ));
            }
        }
        any |= !hashes.is_empty();
    }
    Ok(any)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(doc: Value) -> PolicyError {
        Policy::from_value(&doc).unwrap_err()
    }

    #[test]
    fn minimal_and_defaults() {
        let p = Policy::from_value(&json!({})).unwrap();
        assert_eq!(p.default_action(), Action::Approve);
        assert!(p.rules().is_empty());
        let p = Policy::from_value(&json!({
            "$schema": "x", "//": "comment", "version": 1, "default_action": "deny",
            "rules": [{"//": "why", "tools": "builtin", "tool": "read", "action": "allow",
                       "timeout_s": -1, "hints": {"readOnly": true}, "name": "reads"}],
            "compute": {"maxToolCalls": 3, "maxTokens": 0, "onExhausted": "finish_stuck"},
            "attention": {"allowAgentAnswers": true}
        }))
        .unwrap();
        assert_eq!(p.default_action(), Action::Deny);
        assert_eq!(p.compute().max_tool_calls, Some(3));
        assert_eq!(p.compute().max_tokens, None);
        assert_eq!(p.rules()[0].timeout_s, None);
        assert_eq!(p.rules()[0].name.as_deref(), Some("reads"));
    }

    #[test]
    fn every_refusal_names_its_field() {
        let cases = [
            (json!({"version": 2}), "version", "newer"),
            (json!({"version": -1}), "version", "must be"),
            (
                json!({"default_action": "maybe"}),
                "default_action",
                "unknown action",
            ),
            (
                json!({"rules": [{"tool": "x"}]}),
                "rules[0].action",
                "required",
            ),
            (
                json!({"rules": [{"action": "allow"}, {"action": "ok"}]}),
                "rules[1].action",
                "unknown action",
            ),
            (
                json!({"rules": [{"action": "approve", "on_timeout": "allow"}]}),
                "rules[0].on_timeout",
                "refused",
            ),
            (
                json!({"rules": [{"action": "approve", "on_timeout": "approve"}]}),
                "rules[0].on_timeout",
                "only",
            ),
            (
                json!({"rules": [{"action": "approve", "timeout_s": -5}]}),
                "rules[0].timeout_s",
                "-1",
            ),
            (
                json!({"rules": [{"action": "deny", "when": [{"key": "p", "op": "regex", "value": "x"}]}]}),
                "rules[0].when[0].op",
                "unknown op",
            ),
            (
                json!({"rules": [{"action": "deny", "when": [{"key": "p", "op": "glob", "value": "{a,b"}]}]}),
                "rules[0].when[0].value",
                "bad glob",
            ),
            (
                json!({"rules": [{"action": "deny", "when": [{"key": "p"}]}]}),
                "rules[0].when[0].op",
                "required",
            ),
            (
                json!({"rules": [{"action": "deny", "whne": []}]}),
                "rules[0]",
                "unknown key",
            ),
            (
                json!({"rules": [{"action": "deny", "tool": "{a"}]}),
                "rules[0].tool",
                "bad glob",
            ),
            (
                json!({"rules": [{"action": "deny", "hints": {"readonly": true}}]}),
                "rules[0].hints",
                "unknown hint",
            ),
            (
                json!({"rules": [{"action": "deny", "when": [{"key": "p", "op": "eq", "value": 3}]}]}),
                "rules[0].when[0].value",
                "string",
            ),
            (json!({"rules": {}}), "rules", "list"),
            (
                json!({"compute": {"maxToolcalls": 3}}),
                "compute",
                "unknown key",
            ),
            (
                json!({"compute": {"maxTokens": -3}}),
                "compute.maxTokens",
                "whole number",
            ),
            (
                json!({"compute": {"onExhausted": "explode"}}),
                "compute.onExhausted",
                "finish_stuck",
            ),
            (
                json!({"trusted_binaries": {"dirs": ["bin"]}}),
                "trusted_binaries.dirs[0]",
                "absolute",
            ),
            (json!({"polcy": {}}), "document", "unknown key"),
            (json!([]), "document", "object"),
        ];
        for (doc, at, message) in cases {
            let e = err(doc.clone());
            assert_eq!(e.at, at, "{doc}: {e}");
            assert!(e.message.contains(message), "{doc}: {e}");
        }
    }

    #[test]
    fn sources() {
        let doc = json!({"default_action": "allow"});
        assert_eq!(
            Policy::from_source(&doc).unwrap().default_action(),
            Action::Allow
        );
        let text = Value::String(" {\"default_action\": \"deny\"}".into());
        assert_eq!(
            Policy::from_source(&text).unwrap().default_action(),
            Action::Deny
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        std::fs::write(&path, "{\"rules\": [{\"action\": \"nope\"}]}").unwrap();
        let e = Policy::from_source(&Value::String(path.display().to_string())).unwrap_err();
        assert!(
            e.at.starts_with("file ") && e.at.ends_with("rules[0].action"),
            "{e}"
        );
        let e = Policy::from_source(&Value::String(dir.path().display().to_string())).unwrap_err();
        assert!(e.message.contains("regular file"), "{e}");
        assert!(Policy::from_source(&json!("/no/such/policy.json")).is_err());
        assert!(Policy::from_source(&json!(3)).is_err());
        assert!(Policy::from_source(&json!("{not json"))
            .unwrap_err()
            .message
            .contains("JSON"));
    }

    #[test]
    fn the_go_presets_load() {
        // Copies of ../shared/reference/contenox-go/hitl-policy-*.json, the Go runtime's
        // presets: their rules name tools this project does not have, and still validate.
        for (name, text) in [
            ("default", include_str!("testdata/hitl-policy-default.json")),
            ("strict", include_str!("testdata/hitl-policy-strict.json")),
            ("dev", include_str!("testdata/hitl-policy-dev.json")),
        ] {
            let p = Policy::from_json(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!p.rules().is_empty(), "{name}");
            assert!(p.compute().max_tool_calls.is_some(), "{name}");
        }
    }
}
