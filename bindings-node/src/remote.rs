//! Remote sources: `loadRemote(hooks, { onHook })` and what it returns. HTTP services read
//! from their OpenAPI document or spoken to in one of five protocols; the engine does the work.

use contenox::remote::{load_remote, RemoteHook, RemoteSource};
use napi::bindgen_prelude::{FnArgs, Function, PromiseRaw};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Result, Status};
use napi_derive::napi;

use crate::client::NativeClient;
use crate::mcp::NativeTool;
use crate::{convert, error};

type OnHook = ThreadsafeFunction<
    FnArgs<(String, String)>,
    UnknownReturnValue,
    FnArgs<(String, String)>,
    Status,
    false,
    true,
>;

/// The hooks of one `loadRemote`, their states and tools.
#[napi]
pub struct NativeRemoteSource(RemoteSource);

#[napi]
impl NativeRemoteSource {
    /// Every tool of every ready hook, as they are now.
    #[napi]
    pub fn tools(&self) -> Vec<NativeTool> {
        self.0.tools().into_iter().map(NativeTool).collect()
    }

    /// Each hook and its state, in the order given, as JSON `[[name, {state, ...}], ...]`.
    #[napi]
    pub fn hooks(&self) -> String {
        serde_json::to_string(&self.0.hooks()).unwrap_or_else(|_| "[]".to_string())
    }

    /// Read every hook again; the states as `hooks()` gives them.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn refresh<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, String>> {
        let source = self.0.clone();
        env.spawn_future(async move {
            let states = source.refresh().await;
            Ok(serde_json::to_string(&states).unwrap_or_else(|_| "[]".to_string()))
        })
    }

    /// Register every tool into the client, probe unavailable hooks before its turns, follow
    /// refreshes.
    #[napi]
    pub fn register_into(&self, env: &Env, client: &NativeClient) -> Result<()> {
        napi::bindgen_prelude::within_runtime_if_available(|| {
            self.0
                .register_into(client.core())
                .map_err(|e| error::to_js(env, e))
        })
    }

    /// Remove the tools from every client and make later calls error. Idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let source = self.0.clone();
        env.spawn_future(async move {
            source.close().await;
            Ok(())
        })
    }

    /// Whether `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.0.is_closed()
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
    on_hook: Option<Function<'_, FnArgs<(String, String)>, UnknownReturnValue>>,
) -> Result<PromiseRaw<'env, NativeRemoteSource>> {
    let value: serde_json::Value = serde_json::from_str(&hooks_json).map_err(|e| {
        error::to_js(
            env,
            contenox::Error::config(format!("remote hooks are not JSON: {e}")),
        )
    })?;
    let hooks = RemoteHook::list_from_value(convert::remote_hooks_from_js(value))
        .map_err(|e| error::to_js(env, e))?;
    let on_hook: Option<OnHook> = on_hook
        .map(|f| {
            f.build_threadsafe_function::<FnArgs<(String, String)>>()
                .weak::<true>()
                .callee_handled::<false>()
                .build()
        })
        .transpose()?;
    env.spawn_future(async move {
        let notify = on_hook.as_ref();
        let source = load_remote(hooks, |name, state| {
            if let Some(f) = notify {
                let state = serde_json::to_string(state).unwrap_or_default();
                let _ = f.call(
                    FnArgs::from((name.to_string(), state)),
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            }
        })
        .await;
        // As in loadMcp: one more call, awaited, means every report reached JavaScript first.
        if let Some(f) = &on_hook {
            let _ = f
                .call_async_catch(FnArgs::from((String::new(), String::new())))
                .await;
        }
        // Hooks were checked above, so load_remote has no error left to return.
        source
            .map(NativeRemoteSource)
            .map_err(|e| napi::Error::from_reason(e.to_string()))
    })
}
