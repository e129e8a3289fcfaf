//! Tool sources, MCP servers and remote hooks alike: the one loader (`loadSource(kind, json,
//! onMember)`), the one native source it returns ([`NativeSource`]: tools, states, refresh,
//! close, the MCP resource tools) and the engine tool a source hands out ([`NativeTool`]). The
//! TypeScript layer gives each kind its own class (`McpSource`, `RemoteSource`, lib/source.ts);
//! the engine reads the config by kind and starts the source (`contenox::load_source`).

use std::sync::Arc;

use contenox::{LoadedSource, McpAuth, SourceConfig, Tool, ToolSource};
use napi::bindgen_prelude::{FnArgs, Function, Promise, PromiseRaw};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Result, Status};
use napi_derive::napi;
use serde::Serialize;

use crate::mcp_auth::{AuthArgs, JsMcpAuth};
use crate::{convert, error};

/// A tool of another source (an MCP server's tool, a resource tool, a remote hook's tool, a
/// subagent), registered as it is.
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

/// A loader's `onServer` / `onHook` as JavaScript passes it (optional).
type OnMemberArg<'a> = Option<Function<'a, FnArgs<(String, String)>, UnknownReturnValue>>;

type OnMember = ThreadsafeFunction<
    FnArgs<(String, String)>,
    UnknownReturnValue,
    FnArgs<(String, String)>,
    Status,
    false,
    true,
>;

/// A loader's `onServer` / `onHook(name, stateJson)`: called from the engine as each member
/// settles, and flushed before the loader's promise resolves.
struct Reporter(Option<OnMember>);

impl Reporter {
    /// Wrap the host's callback (weakly: it never keeps the process alive).
    fn new(f: OnMemberArg<'_>) -> Result<Self> {
        let f = f
            .map(|f| {
                f.build_threadsafe_function::<FnArgs<(String, String)>>()
                    .weak::<true>()
                    .callee_handled::<false>()
                    .build()
            })
            .transpose()?;
        Ok(Reporter(f))
    }

    /// Queue one report: the member's name and its state as JSON.
    fn report(&self, name: &str, state: &impl Serialize) {
        if let Some(f) = &self.0 {
            let state = serde_json::to_string(state).unwrap_or_default();
            let _ = f.call(
                FnArgs::from((name.to_string(), state)),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }
    }

    /// Return once every queued report reached JavaScript: the calls are queued in order on the
    /// same function, so one more call, awaited, comes after them all.
    async fn flush(&self) {
        if let Some(f) = &self.0 {
            let _ = f
                .call_async_catch(FnArgs::from((String::new(), String::new())))
                .await;
        }
    }
}

/// `json` read as the config of `kind` (the engine's [`SourceConfig`]); remote hooks arrive as
/// JavaScript spells them (`timeoutMs`, `specUrl`, `tool.inputSchema`).
fn read(kind: &str, json: &str) -> contenox::Result<SourceConfig> {
    if kind != "remote" {
        return SourceConfig::from_json(kind, json);
    }
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| contenox::Error::config(format!("remote hooks are not JSON: {e}")))?;
    SourceConfig::from_value(kind, convert::remote_hooks_from_js(value))
}

/// Start a tool source: `kind` `mcp` (`json`: an MCP config, `{"mcpServers": {...}}`) or
/// `remote` (`json`: the hooks, a JSON array). `onMember(name, stateJson)` is called once per
/// server or hook as it settles, before the promise resolves. A bad config throws a
/// `ConfigurationError` before anything starts.
///
/// With `redirectUri` and `auth(op, argsJson)` (MCP only), HTTP servers that answer 401 are
/// authorized with OAuth through the host (crate::mcp_auth).
#[napi(
    ts_args_type = "kind: 'mcp' | 'remote', json: string, onMember?: (name: string, stateJson: string) => void, redirectUri?: string, auth?: (op: string, argsJson: string) => Promise<string>",
    ts_return_type = "Promise<NativeSource>"
)]
pub fn load_source<'env>(
    env: &'env Env,
    kind: String,
    json: String,
    on_member: OnMemberArg<'_>,
    redirect_uri: Option<String>,
    auth: Option<Function<'_, AuthArgs, Promise<String>>>,
) -> Result<PromiseRaw<'env, NativeSource>> {
    let config = read(&kind, &json).map_err(|e| error::to_js(env, e))?;
    let reporter = Reporter::new(on_member)?;
    let auth: Option<Arc<dyn McpAuth>> = match (redirect_uri, auth) {
        (Some(uri), Some(f)) => Some(Arc::new(JsMcpAuth::new(uri, &f)?)),
        _ => None,
    };
    env.spawn_future(async move {
        let loaded =
            contenox::load_source_with(config, auth, |name, state| reporter.report(name, state))
                .await;
        reporter.flush().await;
        // The config was checked above, so a loader has no error left to return.
        let LoadedSource {
            source,
            resource_tools,
        } = loaded.map_err(|e| napi::Error::from_reason(e.to_string()))?;
        Ok(NativeSource {
            source,
            resource_tools,
        })
    })
}

/// A started tool source: an MCP config's servers or a set of remote hooks.
#[napi]
pub struct NativeSource {
    source: Arc<dyn ToolSource>,
    /// MCP's opt-in `list_mcp_resources` and `read_mcp_resource` (none for remote hooks).
    resource_tools: Vec<Arc<dyn Tool>>,
}

impl NativeSource {
    /// The engine's source (`NativeClient.addSource` adds it to a client).
    pub(crate) fn core(&self) -> Arc<dyn ToolSource> {
        self.source.clone()
    }
}

#[napi]
impl NativeSource {
    /// Every tool of every ready member, as they are now.
    #[napi]
    pub fn tools(&self) -> Vec<NativeTool> {
        self.source.tools().into_iter().map(NativeTool).collect()
    }

    /// The MCP resource tools (empty for remote hooks).
    #[napi]
    pub fn resource_tools(&self) -> Vec<NativeTool> {
        self.resource_tools
            .iter()
            .cloned()
            .map(NativeTool)
            .collect()
    }

    /// Each member (server, hook) and its state now, as JSON `[[name, {state, ...}], ...]`.
    #[napi]
    pub fn states(&self) -> String {
        states_json(&self.source.states())
    }

    /// Read the members again where the source can (remote hooks); the states after, as
    /// `states()` gives them.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn refresh<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, String>> {
        let source = self.source.clone();
        env.spawn_future(async move { Ok(states_json(&source.refresh().await)) })
    }

    /// Stop the source and remove its tools from every client it was added to. Idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let source = self.source.clone();
        env.spawn_future(async move {
            source.close().await;
            Ok(())
        })
    }

    /// Whether `close()` was called (or the source closed itself).
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.source.is_closed()
    }
}

fn states_json(states: &[(String, serde_json::Value)]) -> String {
    serde_json::to_string(states).unwrap_or_else(|_| "[]".to_string())
}
