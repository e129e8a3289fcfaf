//! What the MCP and remote sources share: the engine tool they hand out ([`NativeTool`]), the
//! `onServer` / `onHook` reporter of their loaders, and the methods every
//! [`contenox::ToolSource`] has (tools, states, refresh, adding to a client, close).

use std::sync::Arc;

use contenox::{Tool, ToolSource};
use napi::bindgen_prelude::{FnArgs, Function, PromiseRaw};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Env, Result, Status};
use napi_derive::napi;
use serde::Serialize;

use crate::error;

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
pub(crate) type OnMemberArg<'a> =
    Option<Function<'a, FnArgs<(String, String)>, UnknownReturnValue>>;

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
pub(crate) struct Reporter(Option<OnMember>);

impl Reporter {
    /// Wrap the host's callback (weakly: it never keeps the process alive).
    pub fn new(
        f: Option<Function<'_, FnArgs<(String, String)>, UnknownReturnValue>>,
    ) -> Result<Self> {
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
    pub fn report(&self, name: &str, state: &impl Serialize) {
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
    pub async fn flush(&self) {
        if let Some(f) = &self.0 {
            let _ = f
                .call_async_catch(FnArgs::from((String::new(), String::new())))
                .await;
        }
    }
}

/// A source as every Native*Source class holds it.
pub(crate) struct SourceHandle(pub Arc<dyn ToolSource>);

impl SourceHandle {
    /// Every tool of the source now.
    pub fn tools(&self) -> Vec<NativeTool> {
        self.0.tools().into_iter().map(NativeTool).collect()
    }

    /// Each member and its state, as JSON `[[name, {state, ...}], ...]`.
    pub fn states(&self) -> String {
        states_json(&self.0.states())
    }

    /// Read the members again; the states after, as [`states`](Self::states) gives them.
    pub fn refresh<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, String>> {
        let source = self.0.clone();
        env.spawn_future(async move { Ok(states_json(&source.refresh().await)) })
    }

    /// Add the source to `client` (the engine's `Client::add_source`).
    pub fn add_to(&self, env: &Env, client: &contenox::Client) -> Result<()> {
        napi::bindgen_prelude::within_runtime_if_available(|| {
            client
                .add_source(self.0.clone())
                .map_err(|e| error::to_js(env, e))
        })
    }

    /// Close the source; a promise.
    pub fn close<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let source = self.0.clone();
        env.spawn_future(async move {
            source.close().await;
            Ok(())
        })
    }

    /// Whether the source was closed.
    pub fn closed(&self) -> bool {
        self.0.is_closed()
    }
}

fn states_json(states: &[(String, serde_json::Value)]) -> String {
    serde_json::to_string(states).unwrap_or_else(|_| "[]".to_string())
}
