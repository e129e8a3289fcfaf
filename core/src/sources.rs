//! Loading a tool source by kind, as every binding's one loader does (`loadSource(kind, json)`),
//! and `register_into`, the way the MCP and remote sources were added to a client before
//! [`Client::add_source`]: kept here, above both, so the sources never import the client.

use std::sync::Arc;

use serde_json::Value;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::mcp::{load_mcp_with, McpAuth, McpConfig, McpSource};
use crate::remote::{load_remote, RemoteHook, RemoteSource};
use crate::tool::{Tool, ToolSource};

impl McpSource {
    /// Register every tool into `client`, keep the client's tools in step with
    /// `notifications/tools/list_changed`, and stop the servers when the client is closed.
    /// The same as `client.add_source(self.source())`.
    pub fn register_into(&self, client: &Client) -> Result<()> {
        client.add_source(self.source())
    }
}

impl RemoteSource {
    /// Register every tool into `client`, probe unavailable hooks before each of its turns,
    /// and keep its tools in step with later refreshes. `Err` (and nothing registered) when a
    /// tool's name is taken in the client by a tool of another source. The same as
    /// `client.add_source(self.source())`.
    pub fn register_into(&self, client: &Client) -> Result<()> {
        client.add_source(self.source())
    }
}

/// A tool source's config as a host names it, read and checked before anything starts: what a
/// binding's one loader takes (`kind` and JSON text), for [`load_source`].
pub enum SourceConfig {
    /// Kind `mcp`: the servers of an `mcpServers` document.
    Mcp(McpConfig),
    /// Kind `remote`: remote hooks, a JSON array of hook objects.
    Remote(Vec<RemoteHook>),
}

impl SourceConfig {
    /// `json` read as the config of `kind` (`mcp` or `remote`). A configuration error names an
    /// unknown kind, text that is not JSON, or what is wrong in the config.
    pub fn from_json(kind: &str, json: &str) -> Result<SourceConfig> {
        match kind {
            "mcp" => Ok(SourceConfig::Mcp(McpConfig::from_json(json)?)),
            "remote" => {
                let value: Value = serde_json::from_str(json)
                    .map_err(|e| Error::config(format!("remote hooks are not JSON: {e}")))?;
                SourceConfig::from_value(kind, value)
            }
            other => SourceConfig::from_value(other, Value::Null),
        }
    }

    /// [`from_json`](Self::from_json) for a config already parsed.
    pub fn from_value(kind: &str, value: Value) -> Result<SourceConfig> {
        match kind {
            "mcp" => Ok(SourceConfig::Mcp(McpConfig::from_value(value)?)),
            "remote" => Ok(SourceConfig::Remote(RemoteHook::list_from_value(value)?)),
            other => Err(Error::config(format!(
                "no tool source kind {other:?} (mcp, remote)"
            ))),
        }
    }
}

/// A source [`load_source`] started: the engine's [`ToolSource`] (add it with
/// [`Client::add_source`]) and, for MCP, the opt-in resource tools (`list_mcp_resources`,
/// `read_mcp_resource`).
pub struct LoadedSource {
    /// The source.
    pub source: Arc<dyn ToolSource>,
    /// MCP's resource tools; none for remote hooks.
    pub resource_tools: Vec<Arc<dyn Tool>>,
}

/// Start the source `config` names ([`load_mcp`] or [`load_remote`]), calling `report(name,
/// state)` once per server or hook as it settles, its state as the JSON every binding carries
/// (`{"state": "ready", "tools": n}`, `{"state": "failed" | "unavailable", "error": ...}`).
pub async fn load_source<F>(config: SourceConfig, report: F) -> Result<LoadedSource>
where
    F: Fn(&str, &Value) + Send + Sync,
{
    load_source_with(config, None, report).await
}

/// [`load_source`] with OAuth for the HTTP servers of an MCP config (see
/// [`load_mcp_with`]); `auth` is ignored for remote hooks.
pub async fn load_source_with<F>(
    config: SourceConfig,
    auth: Option<Arc<dyn McpAuth>>,
    report: F,
) -> Result<LoadedSource>
where
    F: Fn(&str, &Value) + Send + Sync,
{
    Ok(match config {
        SourceConfig::Mcp(config) => {
            let mcp = load_mcp_with(config, auth, |name, s| report(name, &json(s))).await;
            LoadedSource {
                source: mcp.source(),
                resource_tools: mcp.resource_tools(),
            }
        }
        SourceConfig::Remote(hooks) => {
            let remote = load_remote(hooks, |name, s| report(name, &json(s))).await?;
            LoadedSource {
                source: remote.source(),
                resource_tools: Vec::new(),
            }
        }
    })
}

/// A member's state as JSON (`Null` for one that cannot be written, which none is).
fn json(state: &impl serde::Serialize) -> Value {
    serde_json::to_value(state).unwrap_or(Value::Null)
}
