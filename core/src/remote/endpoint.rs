//! Where one hook is and how it is reached (its URL, HTTP client, secrets, timeout), and the
//! discovery of its tools: the OpenAPI document's operations or the one protocol tool, each
//! checked as the engine checks any tool. A remote tool holds its hook's endpoint.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::document::{self, MAX_DOCUMENT_BYTES};
use super::hook::{Protocol, RemoteHook};
use super::http::{self, Answer, Failure};
use super::openapi::{self, Operation, OperationDef};
use super::protocol;
use super::redact::{redact_url, Secrets};
use crate::tool::inject::strip_injected;
use crate::tool::{check_spec, names, ToolSpec};

/// What the servers or hooks of one source share (one type for MCP and remote sources).
pub(crate) use crate::tool::SourceShared as Shared;

/// What a remote tool calls.
pub(crate) enum ToolKind {
    /// An operation of the OpenAPI document.
    Operation(Arc<Operation>),
    /// The hook's one tool of this protocol.
    Protocol(Protocol),
}

/// A tool as discovered, before its name is made unique.
pub(crate) struct ToolDef {
    pub key: String,
    pub base_name: String,
    pub spec: ToolSpec,
    pub kind: ToolKind,
}

/// What a call and a discovery of one hook need: where it is, how it is reached, its secrets.
pub(crate) struct Endpoint {
    pub hook: RemoteHook,
    pub base: Option<reqwest::Url>,
    pub client: Result<reqwest::Client, String>,
    pub secrets: Secrets,
    pub timeout: Duration,
    pub shared: Arc<Shared>,
}

impl Endpoint {
    pub fn new(hook: RemoteHook, shared: Arc<Shared>) -> Endpoint {
        let secret_values: Vec<String> = hook
            .headers
            .values()
            .cloned()
            .chain(
                hook.inject
                    .values()
                    .filter_map(Value::as_str)
                    .map(str::to_string),
            )
            .collect();
        Endpoint {
            base: reqwest::Url::parse(&hook.url).ok(),
            client: http::client(&hook),
            secrets: Secrets::new(&secret_values),
            timeout: Duration::from_millis(hook.timeout_ms),
            shared,
            hook,
        }
    }

    pub fn name(&self) -> &str {
        &self.hook.name
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        self.client.as_ref().map_err(Clone::clone)
    }

    /// GET `url` with the hook's headers; the body as text (at most `max` bytes).
    async fn get_text(
        &self,
        url: &str,
        max: usize,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let client = self.client()?;
        let request = client
            .get(url)
            .header(
                reqwest::header::ACCEPT,
                "application/json, application/yaml;q=0.9, */*;q=0.8",
            )
            .build()
            .map_err(|_| format!("{:?} is not a URL it can fetch", redact_url(url)))?;
        let answer: Answer = match http::send_capped(
            self.name(),
            client,
            request,
            self.timeout,
            cancel,
            max,
        )
        .await
        {
            Ok(a) => a,
            Err(Failure::Cancelled) => return Err(crate::tool::CANCELLED_RESULT.into()),
            Err(Failure::Message(m)) => return Err(m),
        };
        if !answer.is_success() {
            return Err(format!(
                "GET {} answered {}",
                redact_url(url),
                answer.status_error()
            ));
        }
        if answer.truncated {
            return Err(format!(
                "{} is larger than {} MiB",
                redact_url(url),
                max >> 20
            ));
        }
        String::from_utf8(answer.body).map_err(|_| format!("{} is not UTF-8 text", redact_url(url)))
    }

    /// `{url}/<name>`: the name appended to the URL's path (a query the URL has is kept).
    fn endpoint(&self, name: &str) -> String {
        match &self.base {
            Some(base) => {
                let mut url = base.clone();
                let path = format!("{}/{name}", base.path().trim_end_matches('/'));
                url.set_path(&path);
                url.to_string()
            }
            None => format!("{}/{name}", self.hook.base()),
        }
    }

    /// The OpenAPI document's text: from `spec_url` (a URL or a file) or `{url}/openapi.json`.
    async fn document_text(&self, cancel: &CancellationToken) -> Result<(String, String), String> {
        let location = match &self.hook.spec_url {
            Some(s) => s.clone(),
            None => self.endpoint("openapi.json"),
        };
        if location.starts_with("http://") || location.starts_with("https://") {
            let text = self.get_text(&location, MAX_DOCUMENT_BYTES, cancel).await?;
            return Ok((redact_url(&location), text));
        }
        let path = location
            .strip_prefix("file://")
            .unwrap_or(&location)
            .to_string();
        let shown = path.clone();
        let read = tokio::task::spawn_blocking(move || -> Result<String, String> {
            use std::io::Read;
            let file =
                std::fs::File::open(&path).map_err(|e| format!("cannot open {path}: {e}"))?;
            let mut text = String::new();
            let read = file
                .take(MAX_DOCUMENT_BYTES as u64 + 1)
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read {path}: {e}"))?;
            if read > MAX_DOCUMENT_BYTES {
                return Err(format!(
                    "{path} is larger than {} MiB",
                    MAX_DOCUMENT_BYTES >> 20
                ));
            }
            Ok(text)
        });
        let text = read.await.map_err(|e| e.to_string())??;
        Ok((shown, text))
    }

    /// Read the hook's tools (the document's operations, or the one protocol tool).
    pub async fn discover(&self, cancel: &CancellationToken) -> Result<Vec<ToolDef>, String> {
        let found = match self.hook.protocol {
            Protocol::Openapi => self.discover_openapi(cancel).await,
            protocol => self.discover_protocol(protocol, cancel).await,
        };
        found.map_err(|e| {
            self.secrets
                .scrub(&format!("remote hook {:?}: {e}", self.name()))
                .into_owned()
        })
    }

    async fn discover_openapi(&self, cancel: &CancellationToken) -> Result<Vec<ToolDef>, String> {
        let (location, text) = self.document_text(cancel).await?;
        let inject = self.hook.inject.clone();
        // Parsing and resolving a large document is CPU work: off the async threads.
        let defs = tokio::task::spawn_blocking(move || -> Result<Vec<ToolDef>, String> {
            let doc = document::parse(&text)?;
            drop(text);
            let ops = openapi::operations(&doc, &inject)?;
            let mut patterns = Patterns::default();
            ops.into_iter()
                .map(|d| openapi_def(d, &mut patterns))
                .collect()
        })
        .await
        .map_err(|e| e.to_string())?;
        defs.map_err(|e| format!("the OpenAPI document {location}: {e}"))
    }

    async fn discover_protocol(
        &self,
        protocol: Protocol,
        cancel: &CancellationToken,
    ) -> Result<Vec<ToolDef>, String> {
        let (description, mut schema) = match &self.hook.tool {
            Some(t) => (t.description.clone(), t.input_schema.clone()),
            None => {
                let url = self.endpoint("schema");
                let text = self
                    .get_text(&url, http::MAX_RESPONSE_BYTES, cancel)
                    .await?;
                let doc: Value = serde_json::from_str(&text)
                    .map_err(|_| format!("GET {} did not answer JSON", redact_url(&url)))?;
                protocol::tool_from_schema_doc(&doc, self.name())?
            }
        };
        strip_injected(&mut schema, &self.hook.inject);
        let base_name = names::fit(self.name());
        let description = if description.trim().is_empty() {
            format!("The {} service ({}).", self.name(), protocol.as_str())
        } else {
            description
        };
        let spec = ToolSpec::new(base_name.clone(), description, schema);
        check_tool(&spec)?;
        Ok(vec![ToolDef {
            key: self.name().to_string(),
            base_name,
            spec,
            kind: ToolKind::Protocol(protocol),
        }])
    }
}

/// The engine's own checks of a tool spec: a valid name, an object schema that is valid JSON
/// Schema and compiles.
fn check_tool(spec: &ToolSpec) -> Result<(), String> {
    check_spec(spec).map_err(|e| e.to_string())?;
    jsonschema::validator_for(&spec.input_schema)
        .map(|_| ())
        .map_err(|e| format!("tool {}: the input schema does not compile: {e}", spec.name))
}

/// The regular expressions of a document's schemas, each compiled once by the validator the
/// engine uses: a pattern it cannot read (a lookbehind in some engines, a broken one) would make
/// the whole schema fail to compile, so such a pattern is dropped (the schema then accepts more,
/// never less; the service still checks what it receives).
#[derive(Default)]
struct Patterns {
    readable: std::collections::HashMap<String, bool>,
}

impl Patterns {
    fn readable(&mut self, pattern: &str) -> bool {
        if let Some(ok) = self.readable.get(pattern) {
            return *ok;
        }
        let ok = jsonschema::validator_for(&serde_json::json!({ "pattern": pattern })).is_ok();
        self.readable.insert(pattern.to_string(), ok);
        ok
    }

    /// Drop the unreadable `pattern`s and `patternProperties` entries of `v`.
    fn clean(&mut self, v: &mut Value) {
        match v {
            Value::Object(m) => {
                let bad = m
                    .get("pattern")
                    .and_then(Value::as_str)
                    .is_some_and(|p| !self.readable(p));
                if bad {
                    m.remove("pattern");
                }
                if let Some(Value::Object(pp)) = m.get_mut("patternProperties") {
                    let keys: Vec<String> = pp.keys().cloned().collect();
                    for k in keys {
                        if !self.readable(&k) {
                            pp.remove(&k);
                        }
                    }
                }
                for (_, inner) in m.iter_mut() {
                    self.clean(inner);
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|i| self.clean(i)),
            _ => {}
        }
    }
}

/// An operation as a checked tool definition: unreadable patterns dropped, then the engine's
/// own spec check (name, object schema, JSON Schema meta-schema). The schema is built from
/// checked keywords only (see `schema.rs`), so with its patterns readable it compiles; the
/// corpus test compiles every tool of 2,639 published documents to hold that.
fn openapi_def(def: OperationDef, patterns: &mut Patterns) -> Result<ToolDef, String> {
    let mut spec = ToolSpec::new(def.base_name.clone(), def.description, def.input_schema)
        .with_hints(def.hints);
    patterns.clean(&mut spec.input_schema);
    check_spec(&spec).map_err(|e| format!("{}: {e}", def.key))?;
    Ok(ToolDef {
        key: def.key,
        base_name: def.base_name,
        spec,
        kind: ToolKind::Operation(def.operation),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unreadable_patterns_are_dropped() {
        let mut v = json!({"type": "object",
            "properties": {"a": {"type": "string", "pattern": "["},
                           "b": {"type": "string", "pattern": "^x+$"}},
            "patternProperties": {"(": {"type": "string"}, "^y": {"type": "integer"}}});
        assert!(jsonschema::validator_for(&v).is_err());
        Patterns::default().clean(&mut v);
        assert_eq!(
            v,
            json!({"type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "string", "pattern": "^x+$"}},
                "patternProperties": {"^y": {"type": "integer"}}})
        );
        jsonschema::validator_for(&v).unwrap();
    }
}
