//! MCP servers as tool sources: `loadMcp(configJson, onServer)` -> [`McpSource`], whose tools
//! ([`SourceTool`]) are the engine's own tools, registered into a client as they are.
//!
//! Everything is the engine's (`contenox::mcp`): the config format, starting the servers, the
//! tool names, hints, results, reconnecting, and when the servers stop. This module only
//! translates.

use std::sync::Arc;

use crate::client::Client;
use contenox::ServerState;

use crate::convert::{via_json, ToolSpec};
use crate::error::ContenoxError;

/// One server of a source and how it came out of `loadMcp`.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct McpServer {
    /// Its name in the `mcpServers` config (its tools are named `<name>__<tool>`, sanitised).
    pub name: String,
    /// Ready (with its tool count) or failed (with the error).
    pub state: ServerState,
}

/// Hears each server of a `loadMcp` as it settles (the `on_server` of the other bindings).
#[uniffi::export(foreign)]
pub trait McpServerListener: Send + Sync {
    /// Called once per server, before `loadMcp` returns. A thrown error is ignored.
    fn on_server(&self, name: String, state: ServerState) -> Result<(), ContenoxError>;
}

/// Start every server of an MCP config (`{"mcpServers": {...}}` as JSON text, the document
/// Claude Desktop and Claude Code read, plus contenox's `inject` and `timeout_ms`), list their
/// tools, and report each server to `on_server` as it settles. Servers that fail are reported and
/// left out; the others work. Throws only for an invalid config.
#[uniffi::export(async_runtime = "tokio", default(on_server = None))]
pub async fn load_mcp(
    config_json: String,
    on_server: Option<Arc<dyn McpServerListener>>,
) -> Result<Arc<McpSource>, ContenoxError> {
    let config = contenox::McpConfig::from_json(&config_json)?;
    let source = contenox::load_mcp(config, |name, state| {
        if let Some(listener) = &on_server {
            // A listener's error has nowhere to go: the load goes on (as in every binding).
            let _ = listener.on_server(name.to_string(), state.clone());
        }
    })
    .await;
    Ok(Arc::new(McpSource {
        inner: Some(source),
        // This runs inside the tokio runtime UniFFI polls async exports in; the source's
        // servers live there. Sync calls (`registerInto`, freeing) enter it again.
        runtime: tokio::runtime::Handle::current(),
    }))
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
    runtime: tokio::runtime::Handle,
}

impl McpSource {
    fn source(&self) -> &contenox::McpSource {
        self.inner
            .as_ref()
            .expect("the source is alive until dropped")
    }
}

pub(crate) fn source_tools(tools: Vec<Arc<dyn contenox::Tool>>) -> Vec<Arc<SourceTool>> {
    tools
        .into_iter()
        .map(|tool| Arc::new(SourceTool { tool }))
        .collect()
}

#[uniffi::export(async_runtime = "tokio")]
impl McpSource {
    /// Every tool of every ready server, as they are now (named `<server>__<tool>`).
    pub fn tools(&self) -> Vec<Arc<SourceTool>> {
        source_tools(self.source().tools())
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

    /// Register every tool into `client`, keep the client's tools in step with the servers'
    /// `notifications/tools/list_changed`, and stop the servers when the client is shut down or
    /// freed. (The resource tools are registered separately: `client.register(tool)` for each
    /// of `resourceTools()`.)
    pub fn register_into(&self, client: Arc<Client>) -> Result<(), ContenoxError> {
        // The engine watches the client from a task on the runtime the servers live in.
        let _runtime = self.runtime.enter();
        Ok(self.source().register_into(client.core())?)
    }

    /// Stop every server (stdio: stdin closed, then SIGTERM, then SIGKILL to its process group;
    /// HTTP: the session ended) and remove its tools from the clients they were registered into
    /// with `registerInto`. Returns when all have stopped. Idempotent. (The engine's `close`,
    /// named so because Kotlin's `close()` frees the object.)
    pub async fn shutdown(&self) {
        self.source().close().await;
    }

    /// Whether the source was shut down.
    pub fn is_closed(&self) -> bool {
        self.source().is_closed()
    }
}

impl Drop for McpSource {
    /// Freeing the last handle of the source kills its servers (the engine's drop); it runs
    /// inside the servers' runtime, as the engine's process and transport handles expect.
    fn drop(&mut self) {
        let _runtime = self.runtime.enter();
        drop(self.inner.take());
    }
}

/// A tool that lives in the engine: an MCP server's tool, a resource tool, or a remote hook's
/// tool. Register it with
/// `client.registerSourceTool(tool)` (Kotlin also `client.register(tool)`).
#[derive(uniffi::Object)]
pub struct SourceTool {
    pub(crate) tool: Arc<dyn contenox::Tool>,
}

#[uniffi::export]
impl SourceTool {
    /// The tool's name as the model sees it (MCP tools: `<server>__<tool>`).
    pub fn name(&self) -> String {
        self.tool.spec().name
    }

    /// Its declaration.
    pub fn spec(&self) -> Result<ToolSpec, ContenoxError> {
        via_json(&self.tool.spec())
    }

    /// Where it comes from (`Mcp` for an MCP server's tool and the resource tools).
    pub fn source(&self) -> contenox::Source {
        self.tool.source()
    }

    /// The MCP server it belongs to, if any.
    pub fn server(&self) -> Option<String> {
        self.tool.server()
    }
}
