//! MCP sources: `loadMcp(config, { onServer })` and what it returns.

use contenox::mcp::{load_mcp, McpConfig, McpSource};
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;

use crate::client::NativeClient;
use crate::error;
use crate::source::{NativeTool, OnMemberArg, Reporter, SourceHandle};

/// The servers of an MCP config, their tools and resource tools.
#[napi]
pub struct NativeMcpSource {
    mcp: McpSource,
    source: SourceHandle,
}

#[napi]
impl NativeMcpSource {
    /// Every tool of every ready server, as they are now.
    #[napi]
    pub fn tools(&self) -> Vec<NativeTool> {
        self.source.tools()
    }

    /// The opt-in `list_mcp_resources` and `read_mcp_resource` tools.
    #[napi]
    pub fn resource_tools(&self) -> Vec<NativeTool> {
        self.mcp
            .resource_tools()
            .into_iter()
            .map(NativeTool)
            .collect()
    }

    /// Each server and how it came out of the load, as JSON `[[name, {state, ...}], ...]`.
    #[napi]
    pub fn servers(&self) -> String {
        self.source.states()
    }

    /// Register every tool into the client, follow `tools/list_changed`, stop with the client.
    #[napi]
    pub fn register_into(&self, env: &Env, client: &NativeClient) -> Result<()> {
        self.source.add_to(env, client.core())
    }

    /// Stop every server and remove its tools from the clients. Idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        self.source.close(env)
    }
}

/// Start the servers of an MCP config (`{"mcpServers": {...}}` JSON); `onServer(name,
/// stateJson)` is called once per server as it settles, before the promise resolves.
#[napi(
    ts_args_type = "configJson: string, onServer?: (name: string, stateJson: string) => void",
    ts_return_type = "Promise<NativeMcpSource>"
)]
pub fn load_mcp_source<'env>(
    env: &'env Env,
    config_json: String,
    on_server: OnMemberArg<'_>,
) -> Result<PromiseRaw<'env, NativeMcpSource>> {
    let config = McpConfig::from_json(&config_json).map_err(|e| error::to_js(env, e))?;
    let reporter = Reporter::new(on_server)?;
    env.spawn_future(async move {
        let mcp = load_mcp(config, |name, state| reporter.report(name, state)).await;
        reporter.flush().await;
        let source = SourceHandle(mcp.source());
        Ok(NativeMcpSource { mcp, source })
    })
}
