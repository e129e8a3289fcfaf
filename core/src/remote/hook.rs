//! A remote hook: one HTTP service as a tool source, as the host configures it.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::redact::{redact_url, REDACTED};
use crate::error::{Error, Result};

/// The default limit of one request to a hook's service (discovery and each call).
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// Headers the remote client sets itself; a hook may not set them.
const RESERVED_HEADERS: &[&str] = &[
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
];

/// How a hook's service is spoken to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// The service's OpenAPI document: every operation is a tool.
    #[default]
    Openapi,
    /// One tool; POST `{"name", "arguments": "<JSON text>"}`; the whole body is the result.
    Openai,
    /// One tool; POST `{"name", "arguments": {...}}`; the whole body is the result.
    OpenaiObject,
    /// As `openai-object`; the result is the answer's `message.content`.
    Ollama,
    /// As `openai`; the result is the answer's `output`.
    LangserveOpenai,
    /// One tool; POST the bare argument object; the whole body is the result. Also read as
    /// `langserve-direct`.
    #[serde(alias = "langserve-direct")]
    Langserve,
}

impl Protocol {
    /// The name in a hook (`openapi`, `openai`, `openai-object`, `ollama`, `langserve-openai`,
    /// `langserve`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Openapi => "openapi",
            Protocol::Openai => "openai",
            Protocol::OpenaiObject => "openai-object",
            Protocol::Ollama => "ollama",
            Protocol::LangserveOpenai => "langserve-openai",
            Protocol::Langserve => "langserve",
        }
    }
}

/// The one tool of a hook that speaks one of the five protocols, when the host gives it (else
/// it is read from `GET {url}/schema`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookTool {
    /// Written for the model.
    #[serde(default)]
    pub description: String,
    /// A JSON Schema object for the arguments.
    pub input_schema: Value,
}

/// One HTTP service as a tool source:
/// `{name, url, protocol, headers, inject, timeout_ms, spec_url?, tool?}`.
///
/// - `protocol`: [`Protocol::Openapi`] (the default) reads the service's OpenAPI document
///   (`{url}/openapi.json`, or `spec_url`: an http(s) URL or a local file) and makes every
///   operation a tool; the five others make one tool named after the hook.
/// - `headers` go with every request to the service (discovery and calls); `inject` values are
///   merged into every call. Neither is ever shown to the model, an event, an error message or
///   this type's `Debug` output.
/// - `timeout_ms` (default [`DEFAULT_TIMEOUT_MS`]) bounds each request.
///
/// Read from JSON with [`RemoteHook::from_value`] / [`RemoteHook::list_from_value`]: unknown keys
/// are an error, so a typo never drops a header or an injected value silently.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteHook {
    /// The hook's name: the `server` of its calls at the gate, and the tool's name for the five
    /// protocols (sanitised).
    pub name: String,
    /// The service's base URL (http or https).
    pub url: String,
    /// How the service is spoken to.
    #[serde(default)]
    pub protocol: Protocol,
    /// Headers for every request (for example `Authorization`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Parameters hidden from the model and merged into every call, winning over the model's.
    #[serde(default)]
    pub inject: Map<String, Value>,
    /// The limit of each request, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Where the OpenAPI document is, when not at `{url}/openapi.json`: a URL or a local file.
    #[serde(default)]
    pub spec_url: Option<String>,
    /// The tool of the five protocols (else read from `GET {url}/schema`).
    #[serde(default)]
    pub tool: Option<HookTool>,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// Secrets stay out of `Debug`: header and injected values print as `<redacted>`, and a URL's
/// userinfo and query are hidden. (A local approach: when config types share one `Secret`
/// wrapper, `headers` and `inject` values become that and this impl goes.)
impl fmt::Debug for RemoteHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |keys: Vec<&String>| -> BTreeMap<String, &'static str> {
            keys.into_iter().map(|k| (k.clone(), REDACTED)).collect()
        };
        f.debug_struct("RemoteHook")
            .field("name", &self.name)
            .field("url", &redact_url(&self.url))
            .field("protocol", &self.protocol)
            .field("headers", &hidden(self.headers.keys().collect()))
            .field("inject", &hidden(self.inject.keys().collect()))
            .field("timeout_ms", &self.timeout_ms)
            .field("spec_url", &self.spec_url.as_deref().map(redact_url))
            .field("tool", &self.tool)
            .finish()
    }
}

impl RemoteHook {
    /// A hook with the defaults: protocol `openapi`, no headers, nothing injected, 10 s.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> RemoteHook {
        RemoteHook {
            name: name.into(),
            url: url.into(),
            protocol: Protocol::Openapi,
            headers: BTreeMap::new(),
            inject: Map::new(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            spec_url: None,
            tool: None,
        }
    }

    /// Read and check one hook from JSON.
    pub fn from_value(value: Value) -> Result<RemoteHook> {
        let name = value
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string);
        let hook: RemoteHook = serde_json::from_value(value).map_err(|e| {
            let what = match &name {
                Some(n) => format!("remote hook {n:?}"),
                None => "remote hook".to_string(),
            };
            Error::config(format!("{what}: {}", quiet_serde_error(&e)))
        })?;
        hook.check()?;
        Ok(hook)
    }

    /// Read and check a list of hooks (a JSON array); names must be unique.
    pub fn list_from_value(value: Value) -> Result<Vec<RemoteHook>> {
        let Value::Array(items) = value else {
            return Err(Error::config(
                "remote hooks must be a JSON array of hook objects".into(),
            ));
        };
        let hooks = items
            .into_iter()
            .map(RemoteHook::from_value)
            .collect::<Result<Vec<_>>>()?;
        check_unique(&hooks)?;
        Ok(hooks)
    }

    /// Check what serde cannot: a name, an http(s) URL, valid headers that are not the client's
    /// own, a positive timeout, `tool` only with the five protocols and with an object schema.
    pub fn check(&self) -> Result<()> {
        let bad = |msg: String| Error::config(format!("remote hook {:?}: {msg}", self.name));
        if self.name.trim().is_empty() {
            return Err(Error::config("a remote hook needs a \"name\"".into()));
        }
        check_http_url(&self.url).map_err(|e| bad(format!("url: {e}")))?;
        for (k, v) in &self.headers {
            if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
                return Err(bad(format!("invalid header name {k:?}")));
            }
            if http::HeaderValue::from_str(v).is_err() {
                return Err(bad(format!("invalid value for header {k:?}")));
            }
            if RESERVED_HEADERS.contains(&k.to_ascii_lowercase().as_str()) {
                return Err(bad(format!(
                    "header {k:?} is set by the remote client itself"
                )));
            }
        }
        if self.inject.keys().any(|k| k.is_empty()) {
            return Err(bad("injected parameter names must not be empty".into()));
        }
        if self.timeout_ms == 0 {
            return Err(bad("timeout_ms must be at least 1".into()));
        }
        if let Some(spec) = &self.spec_url {
            if spec.trim().is_empty() {
                return Err(bad("spec_url must not be empty".into()));
            }
            if self.protocol != Protocol::Openapi {
                return Err(bad(format!(
                    "spec_url belongs to protocol \"openapi\", not {:?}",
                    self.protocol.as_str()
                )));
            }
            if spec.contains("://") {
                check_http_url(spec).map_err(|e| bad(format!("spec_url: {e}")))?;
            }
        }
        if let Some(tool) = &self.tool {
            if self.protocol == Protocol::Openapi {
                return Err(bad(
                    "\"tool\" belongs to the five protocols; an openapi hook's tools come from \
                     its document"
                        .into(),
                ));
            }
            if !tool.input_schema.is_object() {
                return Err(bad("tool.input_schema must be a JSON Schema object".into()));
            }
        }
        Ok(())
    }

    /// The base URL without a trailing slash.
    pub(crate) fn base(&self) -> &str {
        self.url.trim_end_matches('/')
    }
}

/// Hook names must be unique within one source.
pub(crate) fn check_unique(hooks: &[RemoteHook]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for h in hooks {
        if !seen.insert(h.name.as_str()) {
            return Err(Error::config(format!(
                "remote hook name {:?} is given twice",
                h.name
            )));
        }
    }
    Ok(())
}

fn check_http_url(url: &str) -> std::result::Result<(), String> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("{:?} is not a URL ({e})", redact_url(url)))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "{:?} must start with http:// or https://",
            redact_url(url)
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("{:?} has no host", redact_url(url)));
    }
    Ok(())
}

/// serde's message without the offending value: `invalid type: string "Bearer …"` would print
/// a secret given in the wrong place.
fn quiet_serde_error(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    if !(msg.starts_with("invalid type") || msg.starts_with("invalid value")) {
        return msg;
    }
    // `invalid type: string "xyz", expected a map` -> `invalid type: string, expected a map`
    let mut out = String::with_capacity(msg.len());
    let mut in_quote = false;
    let mut chars = msg.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '`' => {
                in_quote = !in_quote;
                if !in_quote && out.ends_with(' ') {
                    out.pop();
                }
            }
            '\\' if in_quote => {
                chars.next();
            }
            _ if in_quote => {}
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_every_protocol() {
        let h = RemoteHook::from_value(json!({"name": "a", "url": "http://127.0.0.1:1"})).unwrap();
        assert_eq!(h.protocol, Protocol::Openapi);
        assert_eq!(h.timeout_ms, DEFAULT_TIMEOUT_MS);
        for (text, p) in [
            ("openapi", Protocol::Openapi),
            ("openai", Protocol::Openai),
            ("openai-object", Protocol::OpenaiObject),
            ("ollama", Protocol::Ollama),
            ("langserve-openai", Protocol::LangserveOpenai),
            ("langserve", Protocol::Langserve),
            ("langserve-direct", Protocol::Langserve),
        ] {
            let h = RemoteHook::from_value(
                json!({"name": "a", "url": "https://x.example/run", "protocol": text}),
            )
            .unwrap();
            assert_eq!(h.protocol, p);
            if text != "langserve-direct" {
                assert_eq!(p.as_str(), text);
            }
        }
    }

    #[test]
    fn bad_hooks_are_clear_errors() {
        let err = |v: Value| RemoteHook::from_value(v).unwrap_err().to_string();
        assert!(err(json!({"name": "a", "url": "ftp://x"})).contains("http://"));
        assert!(err(json!({"name": "a", "url": "not a url"})).contains("not a URL"));
        assert!(err(json!({"name": "", "url": "http://x"})).contains("needs a \"name\""));
        assert!(err(json!({"name": "a", "url": "http://x", "heders": {}})).contains("heders"));
        assert!(err(json!({"name": "a", "url": "http://x", "protocol": "grpc"})).contains("grpc"));
        assert!(err(json!({"name": "a", "url": "http://x", "timeout_ms": 0})).contains("timeout"));
        assert!(
            err(json!({"name": "a", "url": "http://x", "headers": {"Content-Type": "x"}}))
                .contains("set by the remote client")
        );
        assert!(
            err(json!({"name": "a", "url": "http://x", "headers": {"X": "a\nb"}}))
                .contains("invalid value for header \"X\"")
        );
        assert!(err(json!({"name": "a", "url": "http://x",
                          "tool": {"input_schema": {"type": "object"}}}))
        .contains("five protocols"));
        assert!(
            err(json!({"name": "a", "url": "http://x", "protocol": "openai",
                          "tool": {"input_schema": true}}))
            .contains("input_schema")
        );
        assert!(
            err(json!({"name": "a", "url": "http://x", "protocol": "openai",
                          "spec_url": "/tmp/x.json"}))
            .contains("spec_url")
        );
        let twice = RemoteHook::list_from_value(json!([
            {"name": "a", "url": "http://x"}, {"name": "a", "url": "http://y"}
        ]))
        .unwrap_err()
        .to_string();
        assert!(twice.contains("given twice"), "{twice}");
        assert!(RemoteHook::list_from_value(json!({"name": "a"})).is_err());
    }

    #[test]
    fn secrets_never_print() {
        let h = RemoteHook::from_value(json!({
            "name": "a", "url": "https://user:pw-secret@x.example/api?key=query-secret",
            "headers": {"Authorization": "Bearer header-secret"},
            "inject": {"tenant": "inject-secret"},
            "spec_url": "https://x.example/openapi.json?token=spec-secret"
        }))
        .unwrap();
        let shown = format!("{h:?} {h:#?}");
        for secret in [
            "pw-secret",
            "query-secret",
            "header-secret",
            "inject-secret",
            "spec-secret",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("Authorization") && shown.contains("tenant"));
        assert!(shown.contains("x.example"));
        // A secret in the wrong place is not echoed by the error either.
        let e = RemoteHook::from_value(json!({
            "name": "a", "url": "http://x", "headers": "Bearer misplaced-secret"
        }))
        .unwrap_err()
        .to_string();
        assert!(!e.contains("misplaced-secret"), "{e}");
        assert!(e.contains("invalid type"), "{e}");
        let e = RemoteHook::from_value(json!({
            "name": "a", "url": "http://x", "headers": {"A": 12345}
        }))
        .unwrap_err()
        .to_string();
        assert!(!e.contains("12345"), "{e}");
    }
}
