//! MCP servers as tool sources: `loadMcp(configJson, onServer)` -> [`McpSource`], whose tools
//! ([`SourceTool`]) are the engine's own tools, registered into a client as they are.
//!
//! Everything is the engine's (`contenox::mcp`): the config format, starting the servers, the
//! tool names, hints, results, reconnecting, and when the servers stop. This module only
//! translates.

use std::sync::Arc;

use contenox::ServerState;

use crate::client::Client;
use crate::error::ContenoxError;
use crate::mcp_auth::{McpAuth, McpAuthAdapter};
use crate::source::{reporter, source_methods, source_tools, SourceHandle, SourceTool};

/// Start every server of an MCP config (`{"mcpServers": {...}}` as JSON text, the document
/// Claude Desktop and Claude Code read, plus contenox's `inject` and `timeout_ms`), list their
/// tools, and report each server to `on_server` as it settles. Servers that fail are reported and
/// left out; the others work. Throws only for an invalid config. With `auth`, HTTP servers that
/// answer 401 are authorized with OAuth through the host ([`McpAuth`], docs/mcp.md "OAuth").
#[uniffi::export(async_runtime = "tokio", default(on_server = None, auth = None))]
pub async fn load_mcp(
    config_json: String,
    on_server: Option<Arc<dyn McpServerListener>>,
    auth: Option<Arc<dyn McpAuth>>,
) -> Result<Arc<McpSource>, ContenoxError> {
    let config = contenox::McpConfig::from_json(&config_json)?;
    let report = reporter(on_server, |listener, name, state| {
        listener.on_server(name, state)
    });
    let auth = auth.map(|a| Arc::new(McpAuthAdapter(a)) as Arc<dyn contenox::McpAuth>);
    let source = contenox::load_mcp_with(config, auth, report).await;
    // This runs inside the tokio runtime UniFFI polls async exports in; the source's servers
    // live there. Sync calls (`registerInto`, freeing) enter it again.
    Ok(Arc::new(McpSource {
        handle: SourceHandle::current(source.source()),
        inner: Some(source),
    }))
}

/// What an MCP server's `elicitation/create` asks: the data of a pending request of kind
/// `elicitation` (docs/mcp.md). Answer it with `Answer.Result` holding JSON that matches
/// `requestedSchemaJson`, or a denial to decline.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct Elicitation {
    /// The server's name in the config.
    pub server: String,
    /// What to show the person.
    pub message: String,
    /// The JSON Schema the answer must match, as JSON text.
    pub requested_schema_json: String,
}

/// The elicitation a pending request carries, or null when it is another kind of ask.
#[uniffi::export]
pub fn elicitation_of(request: crate::convert::PendingRequest) -> Option<Elicitation> {
    let request: contenox::PendingRequest =
        serde_json::from_value(serde_json::to_value(request).ok()?).ok()?;
    let e = contenox::mcp::Elicitation::from_request(&request)?;
    Some(Elicitation {
        server: e.server,
        message: e.message,
        requested_schema_json: e.requested_schema.to_string(),
    })
}

/// Hears each server of a `loadMcp` as it settles (the `on_server` of the other bindings).
#[uniffi::export(foreign)]
pub trait McpServerListener: Send + Sync {
    /// Called once per server, before `loadMcp` returns. A thrown error is ignored.
    fn on_server(&self, name: String, state: ServerState) -> Result<(), ContenoxError>;
}

/// The servers of an MCP config, their tools and resource tools.
///
/// The source owns the servers (the engine's rule). They stop when `shutdown()` is awaited, when
/// a client the source was registered into with `registerInto` is shut down or freed, or when
/// the source itself is freed (Kotlin `close()` / the garbage collector, Swift `deinit`; the
/// servers are killed at once). So keep the source while its tools are in use.
#[derive(uniffi::Object)]
pub struct McpSource {
    /// Always `Some` until dropped (taken in `drop` to free it inside the runtime).
    inner: Option<contenox::McpSource>,
    handle: SourceHandle,
}

impl McpSource {
    fn source(&self) -> &contenox::McpSource {
        // Cannot fail: `inner` is taken only by Drop.
        self.inner
            .as_ref()
            .expect("the source is alive until dropped")
    }
}

#[uniffi::export]
impl McpSource {
    /// Every tool of every ready server, as they are now (named `<server>__<tool>`).
    pub fn tools(&self) -> Vec<Arc<SourceTool>> {
        self.handle.tools()
    }

    /// The opt-in `list_mcp_resources` and `read_mcp_resource` tools (read-only) over every
    /// server of the source.
    pub fn resource_tools(&self) -> Vec<Arc<SourceTool>> {
        source_tools(self.source().resource_tools())
    }

    /// Each server and how it came out of the load, in name order.
    pub fn servers(&self) -> Vec<McpServer> {
        self.source()
            .servers()
            .iter()
            .map(|(name, state)| McpServer {
                name: name.clone(),
                state: state.clone(),
            })
            .collect()
    }
}

/// One server of a source and how it came out of `loadMcp`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct McpServer {
    /// Its name in the `mcpServers` config (its tools are named `<name>__<tool>`, sanitised).
    pub name: String,
    /// Ready (with its tool count) or failed (with the error).
    pub state: ServerState,
}

source_methods!(
    McpSource,
    Client,
    register_into: [
        " Register every tool into `client`, keep the client's tools in step with the servers'",
        " `notifications/tools/list_changed`, and stop the servers when the client is shut down or",
        " freed. (The resource tools are registered separately: `client.register(tool)` for each",
        " of `resourceTools()`.)"
    ],
    shutdown: [
        " Stop every server (stdio: stdin closed, then SIGTERM, then SIGKILL to its process group;",
        " HTTP: the session ended) and remove its tools from the clients they were registered into",
        " with `registerInto`. Returns when all have stopped. Idempotent. (The engine's `close`,",
        " named so because Kotlin's `close()` frees the object.)"
    ]
);

impl Drop for McpSource {
    /// Freeing the last handle of the source kills its servers (the engine's drop); it runs
    /// inside the servers' runtime, as the engine's process and transport handles expect.
    fn drop(&mut self) {
        let _runtime = self.handle.runtime.enter();
        drop(self.inner.take());
    }
}
