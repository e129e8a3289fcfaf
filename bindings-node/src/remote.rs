//! Remote sources: `loadRemote(hooks, { onHook })` and what it returns. HTTP services read
//! from their OpenAPI document or spoken to in one of five protocols; the engine does the work.

use contenox::remote::{load_remote, RemoteHook};
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;

use crate::client::NativeClient;
use crate::source::{NativeTool, OnMemberArg, Reporter, SourceHandle};
use crate::{convert, error};

/// The hooks of one `loadRemote`, their states and tools.
#[napi]
pub struct NativeRemoteSource(SourceHandle);

#[napi]
impl NativeRemoteSource {
    /// Every tool of every ready hook, as they are now.
    #[napi]
    pub fn tools(&self) -> Vec<NativeTool> {
        self.0.tools()
    }

    /// Each hook and its state, in the order given, as JSON `[[name, {state, ...}], ...]`.
    #[napi]
    pub fn hooks(&self) -> String {
        self.0.states()
    }

    /// Read every hook again; the states as `hooks()` gives them.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn refresh<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, String>> {
        self.0.refresh(env)
    }

    /// Register every tool into the client, probe unavailable hooks before its turns, follow
    /// refreshes.
    #[napi]
    pub fn register_into(&self, env: &Env, client: &NativeClient) -> Result<()> {
        self.0.add_to(env, client.core())
    }

    /// Remove the tools from every client and make later calls error. Idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        self.0.close(env)
    }

    /// Whether `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.0.closed()
    }
}

/// Read the hooks (a JSON array, keys spelled as JavaScript writes them: `timeoutMs`,
/// `specUrl`, `tool.inputSchema`) and each one's tools. `onHook(name, stateJson)` is called once
/// per hook as it settles, before the promise resolves. Invalid hooks throw a
/// `ConfigurationError` before anything is fetched.
#[napi(
    ts_args_type = "hooksJson: string, onHook?: (name: string, stateJson: string) => void",
    ts_return_type = "Promise<NativeRemoteSource>"
)]
pub fn load_remote_source<'env>(
    env: &'env Env,
    hooks_json: String,
    on_hook: OnMemberArg<'_>,
) -> Result<PromiseRaw<'env, NativeRemoteSource>> {
    let value: serde_json::Value = serde_json::from_str(&hooks_json).map_err(|e| {
        error::to_js(
            env,
            contenox::Error::config(format!("remote hooks are not JSON: {e}")),
        )
    })?;
    let hooks = RemoteHook::list_from_value(convert::remote_hooks_from_js(value))
        .map_err(|e| error::to_js(env, e))?;
    let reporter = Reporter::new(on_hook)?;
    env.spawn_future(async move {
        let source = load_remote(hooks, |name, state| reporter.report(name, state)).await;
        reporter.flush().await;
        // Hooks were checked above, so load_remote has no error left to return.
        source
            .map(|s| NativeRemoteSource(SourceHandle(s.source())))
            .map_err(|e| napi::Error::from_reason(e.to_string()))
    })
}
