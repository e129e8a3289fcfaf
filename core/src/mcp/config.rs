//! The `mcpServers` document that Claude Desktop and Claude Code read, plus contenox's per-server
//! `inject` and `timeout_ms`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::redact::{RedactedList, RedactedObject, RedactedUrl, RedactedValues, UrlParts};

/// The default limit of one request to a server (a listing or one call). Starting a server (the
/// process and the `initialize` handshake) gets this limit too, but never less than 30 s.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// Headers the streamable HTTP transport sets itself; a config may not set them.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// The MCP configuration: `{"mcpServers": {"name": {...}, ...}}`. Other top-level keys (a
/// Claude Desktop config has some) are ignored.
///
/// A server is either a child process,
/// `{"command": "npx", "args": [...], "env": {...}, "cwd": "..."}` (optionally with
/// `"type": "stdio"`), or a streamable HTTP endpoint,
/// `{"type": "http", "url": "https://...", "headers": {...}}`. Both may add
/// `"inject": {"param": value}` (parameters hidden from the model and merged into every call of a
/// tool that declares them) and `"timeout_ms"` (the limit of each request to that server,
/// default [`DEFAULT_TIMEOUT_MS`]; starting it gets at least 30 s), and the switches of
/// [`ServerRequests`] (`"elicitation"`, `"sampling"`, `"roots"`, booleans). Unknown keys in a server entry are an error, so a typo never
/// drops a header or an injected value silently.
///
/// `Debug` prints of it (and of [`ServerConfig`] and [`Transport`]) show server names,
/// commands, header and variable names, and redact every value that may be a secret: header
/// and environment values, injected values, command arguments and the endpoint's path and
/// query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpConfig {
    /// The servers by name. Sorted by name, which is the order names are given out in.
    pub servers: BTreeMap<String, ServerConfig>,
}

/// One server of an [`McpConfig`].
#[derive(Clone, PartialEq)]
pub struct ServerConfig {
    /// How to reach it.
    pub transport: Transport,
    /// Parameters hidden from the model and merged into every call, winning over the model's.
    pub inject: Map<String, Value>,
    /// The limit of each request to the server (a listing, one call); a start gets at least 30 s.
    pub timeout: Duration,
    /// What contenox answers of the server's own requests (`elicitation`, `sampling`, `roots`).
    pub answers: ServerRequests,
    /// The `oauth` options of an HTTP server (a client id given beforehand, scopes); OAuth
    /// itself is on when the source is loaded with an [`McpAuth`](super::McpAuth).
    pub oauth: super::oauth::OAuthOptions,
}

/// Which of a server's requests to the client contenox offers to answer (the client
/// capabilities sent in `initialize`), per server: `"elicitation": false` and `"roots": false`
/// turn those off, `"sampling": true` turns sampling on (off by default: it spends the user's
/// tokens on the server's behalf).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerRequests {
    /// `elicitation/create` becomes a pending request of kind `elicitation` (default on).
    pub elicitation: bool,
    /// `sampling/createMessage` is answered by the calling client's model (default off).
    pub sampling: bool,
    /// `roots/list` is answered with the clients' roots (default on).
    pub roots: bool,
}

impl Default for ServerRequests {
    fn default() -> Self {
        ServerRequests {
            elicitation: true,
            sampling: false,
            roots: true,
        }
    }
}

/// How a server is reached.
#[derive(Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout. Its stderr is kept (the last lines show in
    /// errors). Its environment is explicit: `env` on top of a few harmless variables of the host
    /// (`PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`, `LANG`, `LC_ALL`, `TMPDIR`), never the
    /// host's whole environment (API keys stay with the host).
    Stdio {
        /// The program (looked up in `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// The working directory (default: the host's).
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint. `headers` go with every request and are never shown to the
    /// model.
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers for every request (for example `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

// The Debug impls name every field (no `..`): a new field does not compile until its author
// decides whether it is secret.
impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ServerConfig {
            transport,
            inject,
            timeout,
            answers,
            oauth,
        } = self;
        f.debug_struct("ServerConfig")
            .field("transport", transport)
            .field("inject", &RedactedObject(inject))
            .field("timeout", timeout)
            .field("answers", answers)
            .field("oauth_client_id", &oauth.client_id)
            .field(
                "oauth_client_secret",
                &oauth.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("oauth_scope", &oauth.scope)
            .finish()
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                // Arguments carry tokens and connection strings as often as `env` does.
                .field("args", &RedactedList(args.len()))
                .field("env", &RedactedValues(env))
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &RedactedUrl(url, UrlParts::OriginOnly))
                .field("headers", &RedactedValues(headers))
                .finish(),
        }
    }
}

#[derive(Deserialize)]
struct RawConfig {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<BTreeMap<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    inject: Map<String, Value>,
    timeout_ms: Option<u64>,
    elicitation: Option<bool>,
    sampling: Option<bool>,
    roots: Option<bool>,
    oauth: Option<super::oauth::OAuthOptions>,
}

impl McpConfig {
    /// Parse the JSON text of an `mcpServers` document.
    pub fn from_json(text: &str) -> Result<McpConfig> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::config(format!("MCP config is not valid JSON: {e}")))?;
        McpConfig::from_value(value)
    }

    /// Read an `mcpServers` document from a JSON value.
    pub fn from_value(value: Value) -> Result<McpConfig> {
        if !value.is_object() {
            return Err(Error::config(
                "MCP config must be an object {\"mcpServers\": {...}}".into(),
            ));
        }
        let raw: RawConfig =
            serde_json::from_value(value).map_err(|e| Error::config(format!("MCP config: {e}")))?;
        let Some(entries) = raw.mcp_servers else {
            return Err(Error::config(
                "MCP config has no \"mcpServers\" object".into(),
            ));
        };
        let mut servers = BTreeMap::new();
        for (name, entry) in entries {
            if name.is_empty() {
                return Err(Error::config("MCP server names must not be empty".into()));
            }
            let server = ServerConfig::from_value(&name, entry)?;
            servers.insert(name, server);
        }
        Ok(McpConfig { servers })
    }
}

impl ServerConfig {
    fn from_value(name: &str, value: Value) -> Result<ServerConfig> {
        let bad = |msg: String| Error::config(format!("MCP server {name:?}: {msg}"));
        let raw: RawServer = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        let kind = match raw.kind.as_deref() {
            None if raw.url.is_some() && raw.command.is_none() => "http",
            None => "stdio",
            Some("stdio") => "stdio",
            Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => "http",
            Some("sse") => {
                return Err(bad(
                    "the legacy SSE transport is not supported; use \"type\": \"http\" \
                     (streamable HTTP)"
                        .into(),
                ))
            }
            Some(other) => {
                return Err(bad(format!(
                    "unknown type {other:?} (expected \"stdio\" or \"http\")"
                )))
            }
        };
        let transport = if kind == "stdio" {
            let Some(command) = raw.command.filter(|c| !c.is_empty()) else {
                return Err(bad("a stdio server needs \"command\"".into()));
            };
            if raw.url.is_some() || !raw.headers.is_empty() || raw.oauth.is_some() {
                return Err(bad(
                    "\"url\", \"headers\" and \"oauth\" belong to \"type\": \"http\" servers"
                        .into(),
                ));
            }
            Transport::Stdio {
                command,
                args: raw.args,
                env: raw.env,
                cwd: raw.cwd,
            }
        } else {
            let Some(url) = raw.url.filter(|u| !u.is_empty()) else {
                return Err(bad("an http server needs \"url\"".into()));
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(bad(format!(
                    "url {url:?} must start with http:// or https://"
                )));
            }
            if raw.command.is_some() || !raw.args.is_empty() || !raw.env.is_empty() {
                return Err(bad(
                    "\"command\", \"args\" and \"env\" belong to stdio servers".into(),
                ));
            }
            for (k, v) in &raw.headers {
                if http::HeaderName::from_bytes(k.as_bytes()).is_err() {
                    return Err(bad(format!("invalid header name {k:?}")));
                }
                if http::HeaderValue::from_str(v).is_err() {
                    return Err(bad(format!("invalid value for header {k:?}")));
                }
                if RESERVED_HEADERS.contains(&k.to_ascii_lowercase().as_str()) {
                    return Err(bad(format!(
                        "header {k:?} is set by the MCP transport itself"
                    )));
                }
            }
            Transport::Http {
                url,
                headers: raw.headers,
            }
        };
        let timeout_ms = raw.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 {
            return Err(bad("timeout_ms must be at least 1".into()));
        }
        Ok(ServerConfig {
            transport,
            inject: raw.inject,
            timeout: Duration::from_millis(timeout_ms),
            answers: ServerRequests {
                elicitation: raw.elicitation.unwrap_or(true),
                sampling: raw.sampling.unwrap_or(false),
                roots: raw.roots.unwrap_or(true),
            },
            oauth: raw.oauth.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_shapes_parse() {
        let cfg = McpConfig::from_value(json!({
            "globalShortcut": "x",
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}, "cwd": "/tmp",
                          "inject": {"root": "/data"}, "timeout_ms": 5000},
                "web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer t"}}
            }
        }))
        .unwrap();
        let files = &cfg.servers["files"];
        assert_eq!(files.timeout, Duration::from_millis(5000));
        assert_eq!(files.inject["root"], json!("/data"));
        match &files.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                assert_eq!(command, "npx");
                assert_eq!(args, &["-y", "srv"]);
                assert_eq!(env["A"], "1");
                assert_eq!(cwd.as_deref(), Some(std::path::Path::new("/tmp")));
            }
            other => panic!("{other:?}"),
        }
        match &cfg.servers["web"].transport {
            Transport::Http { url, headers } => {
                assert_eq!(url, "http://127.0.0.1:1/mcp");
                assert_eq!(headers["Authorization"], "Bearer t");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            cfg.servers["web"].timeout,
            Duration::from_millis(DEFAULT_TIMEOUT_MS)
        );
    }

    #[test]
    fn bad_entries_are_clear_errors() {
        let err = |v: Value| McpConfig::from_value(v).unwrap_err().to_string();
        assert!(err(json!({})).contains("mcpServers"));
        assert!(err(json!({"mcpServers": {"a": {"args": []}}})).contains("needs \"command\""));
        assert!(err(json!({"mcpServers": {"a": {"type": "http"}}})).contains("needs \"url\""));
        assert!(
            err(json!({"mcpServers": {"a": {"type": "sse", "url": "http://x"}}}))
                .contains("legacy SSE")
        );
        assert!(
            err(json!({"mcpServers": {"a": {"command": "x", "heders": {}}}})).contains("heders")
        );
        assert!(
            err(json!({"mcpServers": {"a": {"url": "http://x", "headers": {"Accept": "x"}}}}))
                .contains("set by the MCP transport")
        );
        assert!(
            err(json!({"mcpServers": {"a": {"command": "x", "timeout_ms": 0}}}))
                .contains("timeout_ms")
        );
        assert!(err(json!({"mcpServers": {"a": {"url": "ftp://x"}}})).contains("http://"));
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn debug_prints_redact_secrets_and_keep_names() {
        let cfg = McpConfig::from_value(json!({
            "mcpServers": {
                "db": {"command": "npx",
                       "args": ["-y", "server-postgres", "postgresql://u:MARKER-arg@db/x"],
                       "env": {"API_TOKEN": "MARKER-env"}, "cwd": "/srv",
                       "inject": {"tenant": "MARKER-inject"}},
                "web": {"type": "http",
                        "url": "https://mcp.example.com/mcp/MARKER-path/sse?key=MARKER-query",
                        "headers": {"Authorization": "Bearer MARKER-header"}}
            }
        }))
        .unwrap();
        let prints = [
            format!("{cfg:?}"),
            format!("{cfg:#?}"),
            format!("{:?}", cfg.servers["db"]),
            format!("{:#?}", cfg.servers["web"].transport),
        ];
        for print in &prints[..2] {
            for name in [
                "\"db\"",
                "\"web\"",
                "\"npx\"",
                "\"API_TOKEN\"",
                "\"tenant\"",
                "\"Authorization\"",
                "\"/srv\"",
                "https://mcp.example.com/<redacted>?<redacted>",
            ] {
                assert!(print.contains(name), "{name} missing from {print}");
            }
        }
        for print in &prints {
            assert!(!print.contains("MARKER"), "{print}");
        }
        assert!(
            prints[0].contains("args: [<redacted>, <redacted>, <redacted>]"),
            "{}",
            prints[0]
        );
    }
}
