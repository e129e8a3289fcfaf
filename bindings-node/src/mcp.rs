//! MCP sources: `loadMcp(config, { onServer })` and what it returns.

use std::sync::Arc;

use contenox::mcp::{load_mcp, McpConfig, McpSource};
use contenox::Tool;
use napi::bindgen_prelude::{FnArgs, Function, PromiseRaw};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Result, Status};
use napi_derive::napi;

use crate::client::NativeClient;
use crate::error;

type OnServer = ThreadsafeFunction<
    FnArgs<(String, String)>,
    UnknownReturnValue,
    FnArgs<(String, String)>,
    Status,
    false,
    true,
>;

/// A tool of another source (an MCP server's tool, a resource tool), registered as it is.
#[napi]
pub struct NativeTool(pub(crate) Arc<dyn Tool>);

#[napi]
impl NativeTool {
    /// The tool's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.0.spec().name
    }
}

/// The servers of an MCP config, their tools and resource tools.
#[napi]
pub struct NativeMcpSource(McpSource);

#[napi]
impl NativeMcpSource {
    /// Every tool of every ready server, as they are now.
    #[napi]
    pub fn tools(&self) -> Vec<NativeTool> {
        self.0.tools().into_iter().map(NativeTool).collect()
    }

    /// The opt-in `list_mcp_resources` and `read_mcp_resource` tools.
    #[napi]
    pub fn resource_tools(&self) -> Vec<NativeTool> {
        self.0
            .resource_tools()
            .into_iter()
            .map(NativeTool)
            .collect()
    }

    /// Each server and how it came out of the load, as JSON `[[name, {state, ...}], ...]`.
    #[napi]
    pub fn servers(&self) -> String {
        serde_json::to_string(&self.0.servers()).unwrap_or_else(|_| "[]".to_string())
    }

    /// Register every tool into the client, follow `tools/list_changed`, stop with the client.
    #[napi]
    pub fn register_into(&self, env: &Env, client: &NativeClient) -> Result<()> {
        napi::bindgen_prelude::within_runtime_if_available(|| {
            self.0
                .register_into(client.core())
                .map_err(|e| error::to_js(env, e))
        })
    }

    /// Stop every server and remove its tools from the clients. Idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let source = self.0.clone();
        env.spawn_future(async move {
            source.close().await;
            Ok(())
        })
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
    on_server: Option<Function<'_, FnArgs<(String, String)>, UnknownReturnValue>>,
) -> Result<PromiseRaw<'env, NativeMcpSource>> {
    let config = McpConfig::from_json(&config_json).map_err(|e| error::to_js(env, e))?;
    let on_server: Option<OnServer> = on_server
        .map(|f| {
            f.build_threadsafe_function::<FnArgs<(String, String)>>()
                .weak::<true>()
                .callee_handled::<false>()
                .build()
        })
        .transpose()?;
    env.spawn_future(async move {
        let notify = on_server.as_ref();
        let source = load_mcp(config, |name, state| {
            if let Some(f) = notify {
                let state = serde_json::to_string(state).unwrap_or_default();
                let _ = f.call(
                    FnArgs::from((name.to_string(), state)),
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            }
        })
        .await;
        // The calls above are queued in order on the same function: one more call, awaited,
        // means every report reached JavaScript before the promise resolves.
        if let Some(f) = &on_server {
            let _ = f
                .call_async_catch(FnArgs::from((String::new(), String::new())))
                .await;
        }
        Ok(NativeMcpSource(source))
    })
}
