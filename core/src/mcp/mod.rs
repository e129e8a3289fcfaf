//! MCP servers as tool sources.
//!
//! [`load_mcp`] reads the `mcpServers` document Claude Desktop and Claude Code use
//! ([`McpConfig`]), starts every server at once (stdio child processes and streamable HTTP
//! endpoints, through rmcp, the official Rust SDK), lists their tools, and reports each server's
//! [`ServerState`] to `on_server` as it settles. One failing server never stops the others.
//!
//! ```no_run
//! use contenox::mcp::{load_mcp, McpConfig};
//! use serde_json::json;
//!
//! # async fn demo(client: contenox::Client) -> contenox::Result<()> {
//! let config = McpConfig::from_value(json!({"mcpServers": {
//!     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
//!     "tickets": {"type": "http", "url": "https://tickets.example/mcp",
//!                 "headers": {"Authorization": "Bearer ..."}, "inject": {"tenant": "acme"}}
//! }}))?;
//! let source = load_mcp(config, |name, state| println!("{name}: {state:?}")).await;
//! source.register_into(&client)?;            // files__read_file, tickets__create, ...
//! for tool in source.resource_tools() {      // opt-in: list_mcp_resources, read_mcp_resource
//!     client.register(tool)?;
//! }
//! let result = client.run("Summarise README.md").await?;
//! source.close().await;                      // or drop it, or close the client
//! # Ok(()) }
//! ```
//!
//! What the engine sees:
//! - Every MCP tool is a tool named `<server>__<tool>`, sanitised to `^[A-Za-z0-9_-]{1,64}$`
//!   (see the rule in [`names`]), with [`Source::Mcp`](crate::Source::Mcp), the server's name on
//!   the gate event, and hints read from the MCP annotations (`readOnlyHint` -> `read_only`,
//!   `destructiveHint` -> `destructive`, `openWorldHint` -> `open_world`; an absent annotation
//!   stays absent: MCP's own defaults are not assumed). Calls pass `before_tool` like any other.
//! - Results: text blocks as text; images, audio and binary resources as one line with their
//!   MIME type and size (never the base64); structured content as the content when there is no
//!   text, or in `metadata.structuredContent` when the text does not already say it; `isError`
//!   as the output's `is_error`.
//! - Injected parameters (`inject`): the names a tool's input schema declares are removed from
//!   its `properties` and `required` before the model sees the schema, and merged into every call
//!   of that tool after the model's arguments (the injected value wins). Tools that do not
//!   declare a name do not receive it. HTTP `headers` go with every request to the server and
//!   never into the model's context.
//!
//! Life of a connection:
//! - Every request to a server is limited by its `timeout_ms` (default 60 s): listings and each
//!   tool call (the start, process and `initialize`, gets at least 30 s). A call that times out
//!   is an error result, and the server is sent `notifications/cancelled` for it.
//! - Cancelling the turn returns at once with the result `cancelled`, and rmcp sends MCP's
//!   `notifications/cancelled` for the request (the call's future is dropped).
//! - A server that dies mid-call gives an error result (with the last lines of its stderr); the
//!   next call reconnects (a stdio server's process is started again).
//! - `notifications/tools/list_changed` re-lists that server's tools and updates every client
//!   the source was registered into: when the notification comes with a call, before that call's
//!   result returns, so the model's next request is offered the new list.
//!
//! Ownership (the decision): the [`McpSource`] returned by `load_mcp` owns the connections and
//! the child processes. Clients only hold its tools. The servers stop when [`McpSource::close`]
//! is awaited (graceful: stdin closed, then SIGTERM, then SIGKILL to the server's process group),
//! when the last clone of the source is dropped (SIGKILL to each group at once, no runtime
//! needed), or when a client it was added to ([`Client::add_source`](crate::Client::add_source),
//! [`McpSource::register_into`]) is
//! closed with [`Client::close`](crate::Client::close). A tool of a closed source answers with an
//! error result. Each stdio server runs in its own process group, so what a launcher such as
//! `npx` starts is stopped with it.

mod calls;
mod config;
mod elicit;
mod http;
mod oauth;
mod resource;
mod roots;
mod sampling;
mod server;
mod stdio;
mod tool;

use std::collections::HashSet;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};

pub use config::{McpConfig, ServerConfig, ServerRequests, Transport, DEFAULT_TIMEOUT_MS};
pub use elicit::{Elicitation, ELICITATION_KIND};
pub use oauth::{McpAuth, OAuthOptions};
pub use resource::{LIST_MCP_RESOURCES, READ_MCP_RESOURCE};
pub use sampling::SAMPLING_CALL;

use async_trait::async_trait;

use crate::error::Result;
pub use crate::tool::names;
use crate::tool::{Tool, ToolHost, ToolSource};
use server::{Server, Shared};

/// How a server came out of [`load_mcp`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    /// Connected, with this many tools.
    Ready {
        /// How many tools it offers.
        tools: u64,
    },
    /// Could not be started or reached.
    Failed {
        /// What went wrong, with the last lines of a stdio server's stderr.
        error: String,
    },
}

/// The servers of an [`McpConfig`], their tools and their resource tools. Cheap to clone; the
/// servers stop when the last clone is dropped, or on [`McpSource::close`].
#[derive(Clone)]
pub struct McpSource {
    inner: Arc<SourceInner>,
}

struct SourceInner {
    servers: Arc<Vec<Arc<Server>>>,
    states: Vec<(String, ServerState)>,
    shared: Arc<Shared>,
}

impl Drop for SourceInner {
    fn drop(&mut self) {
        self.shared.closed.cancel();
        for server in self.servers.iter() {
            server.kill_now();
        }
    }
}

/// Start every server of `config` at once, list their tools, and call `on_server` once per
/// server (as each settles) with its name and [`ServerState`]. Servers that fail are reported
/// and left out; the others work. Needs a tokio runtime.
pub async fn load_mcp<F>(config: McpConfig, on_server: F) -> McpSource
where
    F: Fn(&str, &ServerState) + Send + Sync,
{
    load_mcp_with(config, None, on_server).await
}

/// [`load_mcp`] with OAuth: HTTP servers that answer 401 are authorized through `auth` (its
/// token store and browser step; docs/mcp.md "OAuth"), their tokens refreshed when they stop
/// working, and authorized again when a refresh fails.
pub async fn load_mcp_with<F>(
    config: McpConfig,
    auth: Option<Arc<dyn McpAuth>>,
    on_server: F,
) -> McpSource
where
    F: Fn(&str, &ServerState) + Send + Sync,
{
    let shared = Shared::new();
    let mut prefixes = HashSet::new();
    let servers: Vec<Arc<Server>> = config
        .servers
        .into_iter()
        .map(|(name, cfg)| {
            let prefix = names::unique(&names::server_prefix(&name), &mut prefixes);
            Arc::new(Server::new(name, prefix, cfg, shared.clone(), auth.clone()))
        })
        .collect();
    let mut starting: FuturesUnordered<_> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| async move { (i, s.list_tools_for_start().await) })
        .collect();
    let mut listed = vec![None; servers.len()];
    let mut states = vec![None; servers.len()];
    while let Some((i, result)) = starting.next().await {
        let state = match result {
            Ok(tools) => {
                let state = ServerState::Ready {
                    tools: tools.len() as u64,
                };
                listed[i] = Some(tools);
                state
            }
            Err(error) => ServerState::Failed { error },
        };
        on_server(&servers[i].name, &state);
        states[i] = Some((servers[i].name.clone(), state));
    }
    drop(starting);
    // Names are given out in the config's (sorted) order, whatever order the servers came up in.
    for (server, tools) in servers.iter().zip(listed) {
        if let Some(tools) = tools {
            server.install_listed(tools);
        }
    }
    McpSource {
        inner: Arc::new(SourceInner {
            servers: Arc::new(servers),
            states: states.into_iter().flatten().collect(),
            shared,
        }),
    }
}

impl McpSource {
    /// Every tool of every ready server, as they are now.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner.tools()
    }

    /// The opt-in resource tools `list_mcp_resources` and `read_mcp_resource` (read-only),
    /// covering every server of the source.
    pub fn resource_tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(resource::ListResources {
                servers: self.inner.servers.clone(),
            }),
            Arc::new(resource::ReadResource {
                servers: self.inner.servers.clone(),
            }),
        ]
    }

    /// Each server's name and how it came out of [`load_mcp`], in name order.
    pub fn servers(&self) -> Vec<(String, ServerState)> {
        self.inner.states.clone()
    }

    /// The process ids of the running stdio servers, by server name.
    pub async fn pids(&self) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        for s in self.inner.servers.iter() {
            if let Some(pid) = s.pid().await {
                out.push((s.name.clone(), pid));
            }
        }
        out
    }

    /// The source as a [`ToolSource`], for [`Client::add_source`](crate::Client::add_source)
    /// (what [`register_into`](McpSource::register_into) does). The client holds it weakly.
    pub fn source(&self) -> Arc<dyn ToolSource> {
        self.inner.clone()
    }

    /// Whether the source was closed.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Stop every server (stdio: close stdin, then SIGTERM, then SIGKILL to its process group;
    /// HTTP: end the session) and remove the tools from the clients they were registered into.
    /// Returns when all have stopped. Idempotent.
    pub async fn close(&self) {
        self.inner.close().await
    }
}

#[async_trait]
impl ToolSource for SourceInner {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers
            .iter()
            .flat_map(|s| s.tools())
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    fn states(&self) -> Vec<(String, serde_json::Value)> {
        self.states
            .iter()
            .map(|(name, state)| {
                (
                    name.clone(),
                    serde_json::to_value(state).unwrap_or_default(),
                )
            })
            .collect()
    }

    fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    async fn close(&self) {
        self.shared.closed.cancel();
        let names: Vec<String> = self
            .servers
            .iter()
            .flat_map(|s| s.tools())
            .map(|t| t.spec_name.clone())
            .collect();
        for client in self.shared.live_clients() {
            for name in &names {
                client.unregister(name);
            }
        }
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }

    /// Register every tool into the client, keep its tools in step with
    /// `notifications/tools/list_changed`, and stop the servers when the client is closed.
    fn attach(self: Arc<Self>, host: &ToolHost) -> Result<()> {
        for tool in ToolSource::tools(&*self) {
            host.register(tool)?;
        }
        self.shared.add_client(host);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            // The new client's root and writable directories are roots now.
            let servers = self.servers.clone();
            handle.spawn(async move {
                futures::future::join_all(servers.iter().map(|s| s.roots_changed())).await;
            });
            let client_closed = host.closed();
            let source_closed = self.shared.closed.clone();
            let source = Arc::downgrade(&self);
            handle.spawn(async move {
                tokio::select! {
                    _ = client_closed.cancelled() => {
                        if let Some(inner) = source.upgrade() {
                            inner.close().await;
                        }
                    }
                    _ = source_closed.cancelled() => {}
                }
            });
        }
        Ok(())
    }
}
