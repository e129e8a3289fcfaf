//! HTTP services as tool sources: `loadRemote(hooksJson, onHook)` -> [`RemoteSource`], whose
//! tools ([`SourceTool`]) are the engine's own, read from each service's OpenAPI document or
//! spoken to in one of five protocols.
//!
//! Everything is the engine's (`contenox::remote`): the hook format, discovery, names, calls,
//! secrets, probing unavailable hooks before each turn. This module only translates. The hooks
//! cross as the engine's JSON (`[{name, url, protocol, headers, inject, timeout_ms, spec_url,
//! tool}]`), as the Kotlin/Swift config does, so no type here holds a header value.

use std::sync::Arc;

use contenox::remote::{HookState, RemoteHook};

use crate::client::Client;
use crate::error::ContenoxError;
use crate::source::{reporter, source_methods, SourceHandle, SourceTool};

#[uniffi::remote(Enum)]
pub enum HookState {
    Ready { tools: u64 },
    Unavailable { error: String },
}

/// Read every hook's tools at once (a JSON array of hook objects) and report each hook to
/// `on_hook` as it settles. Hooks that cannot be read are unavailable (probed again later); the
/// others work. Throws a configuration error for invalid hooks (a bad URL, an unknown key, a
/// name given twice) before anything is fetched; its message never holds a header value.
#[uniffi::export(async_runtime = "tokio", default(on_hook = None))]
pub async fn load_remote(
    hooks_json: String,
    on_hook: Option<Arc<dyn RemoteHookListener>>,
) -> Result<Arc<RemoteSource>, ContenoxError> {
    let value: serde_json::Value = serde_json::from_str(&hooks_json)
        .map_err(|e| contenox::Error::config(format!("remote hooks are not JSON: {e}")))?;
    let hooks = RemoteHook::list_from_value(value)?;
    let report = reporter(on_hook, |listener, name, state| {
        listener.on_hook(name, state)
    });
    let inner = contenox::load_remote(hooks, report).await?;
    // The runtime UniFFI polls async exports in: the hooks' HTTP clients live there, and the
    // sync `registerInto` enters it again.
    let handle = SourceHandle::current(inner.source());
    Ok(Arc::new(RemoteSource { inner, handle }))
}

/// Hears each hook of a `loadRemote` as it settles (the `on_hook` of the other bindings).
#[uniffi::export(foreign)]
pub trait RemoteHookListener: Send + Sync {
    /// Called once per hook, before `loadRemote` returns. A thrown error is ignored.
    fn on_hook(&self, name: String, state: HookState) -> Result<(), ContenoxError>;
}

/// The hooks of one `loadRemote`, their states and tools. It holds no process: freeing it only
/// ends the probes before turns (tools already registered keep working); `shutdown()` removes
/// its tools from the clients and makes later calls error.
#[derive(uniffi::Object)]
pub struct RemoteSource {
    inner: contenox::RemoteSource,
    handle: SourceHandle,
}

#[uniffi::export(async_runtime = "tokio")]
impl RemoteSource {
    /// Every tool of every ready hook, as they are now.
    pub fn tools(&self) -> Vec<Arc<SourceTool>> {
        self.handle.tools()
    }

    /// Each hook's name and state now, in the order given.
    pub fn hooks(&self) -> Vec<RemoteHookState> {
        states(self.inner.hooks())
    }

    /// Read every hook again (an unavailable one may come up, a ready one picks up a changed
    /// document); the states after.
    pub async fn refresh(&self) -> Vec<RemoteHookState> {
        states(self.inner.refresh().await)
    }
}

/// One hook of a source and how it is now.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RemoteHookState {
    /// The hook's name (the `server` of its calls at the gate).
    pub name: String,
    /// Ready (with its tool count) or unavailable (with the error; probed again before each
    /// turn of a client it was registered into, and on `refresh()`).
    pub state: HookState,
}

source_methods!(
    RemoteSource,
    Client,
    register_into: [
        " Register every tool into `client`, probe unavailable hooks before its turns, keep its",
        " tools in step with refreshes. Throws (registering nothing) when a name is taken there by",
        " a tool of another source."
    ],
    shutdown: [
        " Remove the tools from every client they were registered into; later calls error.",
        " Idempotent. (The engine's `close`, named so because Kotlin's `close()` frees the object.)"
    ]
);

fn states(hooks: Vec<(String, HookState)>) -> Vec<RemoteHookState> {
    hooks
        .into_iter()
        .map(|(name, state)| RemoteHookState { name, state })
        .collect()
}
