//! The scenario key `remote`: HTTP services the runner starts on loopback (a fake remote service
//! per entry), registers as remote hooks through the binding's `load_remote`, and stops
//! afterwards; and what `expect.remote_requests` checks. See `tests/conformance/README.md`.
//!
//! ```jsonc
//! "remote": [
//!   { "name": "myapi", "protocol": "openapi",
//!     "openapi": { "openapi": "3.1.0", ... },   // served at GET /openapi.json, in the file's
//!                                               // key order (a JSON string: served as it is, e.g. YAML)
//!     "tool": { "description": "...", "input_schema": {...} },   // the five protocols
//!     "schema_endpoint": false,                 // extension: true = `tool` is served at
//!                                               // GET /schema instead of given to the hook
//!     "headers": {...}, "inject": {...}, "timeout_ms": 2000,
//!     "unreachable": false,                     // down at load; up before the first prompt
//!     "answers": [ { "match": "GET /users/{id}", "status": 200, "json": {...} },
//!                  { "match": "*", "status": 500, "text": "boom", "delay_ms": 10 } ] }
//! ]
//! ```

pub mod server;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// One entry of `remote`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RemoteService {
    pub name: String,
    #[serde(default = "default_protocol")]
    pub protocol: String,
    /// The document served at `/openapi.json` (parsed; the served bytes are `openapi_text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openapi: Option<Value>,
    /// The bytes served at `/openapi.json`: the document as written in the scenario file (key
    /// order kept), or the string itself when `openapi` is a JSON string (a YAML document).
    #[serde(skip)]
    pub openapi_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Value>,
    /// Extension: serve `tool` at `GET /schema` (`{"functions": [...]}`) and leave it out of
    /// the hook, so the engine reads it from there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub schema_endpoint: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub inject: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreachable: bool,
    #[serde(default)]
    pub answers: Vec<RemoteAnswer>,
}

fn default_protocol() -> String {
    "openapi".into()
}

/// One answer rule: the first whose `match` fits the request answers it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RemoteAnswer {
    /// `"METHOD /path-template"` (`{name}` matches one segment) or `"*"`.
    #[serde(rename = "match")]
    pub matches: String,
    #[serde(default = "default_status")]
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Extension: the answer's Content-Type (default `application/json` for `json`,
    /// `text/plain; charset=utf-8` for `text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

fn default_status() -> u16 {
    200
}

/// One entry of `expect.remote_requests`: the keys given must hold.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExpectRemoteRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// name -> value (a string, or a list for a repeated name), for the names given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<Map<String, Value>>,
    /// Case-insensitive names -> exact values, for the names given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_headers: Option<Vec<String>>,
    /// The body parsed as JSON, compared exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// The body's exact bytes as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_contains: Option<crate::texts::Texts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_not_contains: Option<crate::texts::Texts>,
}

impl RemoteService {
    /// Checks what serde cannot: a name, a known protocol, a document for openapi, a tool for
    /// the others, well-formed `match` patterns.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("a remote service needs a name".into());
        }
        let protocols = [
            "openapi",
            "openai",
            "openai-object",
            "ollama",
            "langserve-openai",
            "langserve",
            "langserve-direct",
        ];
        if !protocols.contains(&self.protocol.as_str()) {
            return Err(format!("unknown protocol {:?}", self.protocol));
        }
        if self.protocol == "openapi" {
            if self.openapi.is_none() {
                return Err(format!("{}: protocol openapi needs \"openapi\"", self.name));
            }
            if self.tool.is_some() {
                return Err(format!(
                    "{}: \"tool\" belongs to the five protocols",
                    self.name
                ));
            }
        } else if self.openapi.is_some() {
            return Err(format!(
                "{}: \"openapi\" belongs to protocol openapi",
                self.name
            ));
        } else if self.schema_endpoint && self.tool.is_none() {
            return Err(format!("{}: schema_endpoint needs \"tool\"", self.name));
        }
        for a in &self.answers {
            if a.matches != "*" {
                let (method, path) = a.matches.split_once(' ').ok_or_else(|| {
                    format!(
                        "{}: match {:?} is not \"METHOD /path\" or \"*\"",
                        self.name, a.matches
                    )
                })?;
                if method.is_empty() || !path.starts_with('/') {
                    return Err(format!(
                        "{}: match {:?} is not \"METHOD /path\"",
                        self.name, a.matches
                    ));
                }
            }
            if a.json.is_some() && a.text.is_some() {
                return Err(format!(
                    "{}: an answer has json or text, not both",
                    self.name
                ));
            }
            if !(100..=599).contains(&a.status) {
                return Err(format!("{}: status {} is not HTTP", self.name, a.status));
            }
        }
        Ok(())
    }

    /// The hook a runner passes to `load_remote` for this service at `url`: the engine's own
    /// vocabulary, the same JSON in every binding.
    pub fn hook(&self, url: &str) -> Value {
        let mut hook = json!({"name": self.name, "url": url, "protocol": self.protocol});
        if !self.headers.is_empty() {
            hook["headers"] = json!(self.headers);
        }
        if !self.inject.is_empty() {
            hook["inject"] = Value::Object(self.inject.clone());
        }
        if let Some(ms) = self.timeout_ms {
            hook["timeout_ms"] = json!(ms);
        }
        if let (Some(tool), false) = (&self.tool, self.schema_endpoint) {
            hook["tool"] = tool.clone();
        }
        hook
    }
}

#[derive(Deserialize)]
struct RawScenario<'a> {
    #[serde(borrow, default)]
    remote: Vec<RawService<'a>>,
}

#[derive(Deserialize)]
struct RawService<'a> {
    #[serde(borrow, default)]
    openapi: Option<&'a RawValue>,
}

/// Fill each service's `openapi_text` from the scenario's own text, so the document is served
/// in the order it was written (serde_json's map sorts keys, and operation names are given in
/// document order).
pub fn attach_documents(text: &str, services: &mut [RemoteService]) -> Result<(), String> {
    if services.is_empty() {
        return Ok(());
    }
    let raw: RawScenario = serde_json::from_str(text).map_err(|e| format!("remote: {e}"))?;
    for (service, raw) in services.iter_mut().zip(raw.remote) {
        service.openapi_text = match (&service.openapi, raw.openapi) {
            (Some(Value::String(s)), _) => Some(s.clone()),
            (Some(_), Some(raw)) => Some(raw.get().to_string()),
            _ => None,
        };
    }
    Ok(())
}
