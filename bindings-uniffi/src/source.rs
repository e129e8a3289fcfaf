//! What the MCP and remote sources share: the engine tool they hand out ([`SourceTool`]), their
//! loaders' report to the host's listener ([`reporter`]), and the methods every
//! [`contenox::ToolSource`] has (tools, adding to a client, shutdown), held with the tokio
//! runtime the source lives in ([`SourceHandle`], [`source_methods`]).

use std::sync::Arc;

use contenox::ToolSource;

use crate::convert::{via_json, ToolSpec};
use crate::error::ContenoxError;

/// A tool that lives in the engine: an MCP server's tool, a resource tool, a remote hook's tool
/// or a subagent. Register it with `client.registerSourceTool(tool)` (Kotlin also
/// `client.register(tool)`).
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

    /// The MCP server or remote hook it belongs to, if any.
    pub fn server(&self) -> Option<String> {
        self.tool.server()
    }
}

/// Engine tools as `SourceTool`s.
pub(crate) fn source_tools(tools: Vec<Arc<dyn contenox::Tool>>) -> Vec<Arc<SourceTool>> {
    tools
        .into_iter()
        .map(|tool| Arc::new(SourceTool { tool }))
        .collect()
}

/// A loader's listener (`onServer`, `onHook`) as the engine calls it: `tell(listener, name,
/// state)` once per member as it settles. A listener's error has nowhere to go: the load goes
/// on (as in every binding).
pub(crate) fn reporter<L: ?Sized, S: Clone>(
    listener: Option<Arc<L>>,
    tell: impl Fn(&L, String, S) -> Result<(), ContenoxError> + Send + Sync,
) -> impl Fn(&str, &S) + Send + Sync
where
    Arc<L>: Send + Sync,
{
    move |name, state| {
        if let Some(listener) = &listener {
            let _ = tell(listener, name.to_string(), state.clone());
        }
    }
}

/// A source as the McpSource and RemoteSource objects hold it, with the runtime it lives in
/// (the runtime UniFFI polls async exports in: the loader ran there).
pub(crate) struct SourceHandle {
    /// Always `Some` until dropped (taken in `drop` to free it inside the runtime).
    source: Option<Arc<dyn ToolSource>>,
    pub runtime: tokio::runtime::Handle,
}

impl SourceHandle {
    /// `source`, living in the runtime of the caller (call it inside an async export).
    pub fn current(source: Arc<dyn ToolSource>) -> SourceHandle {
        SourceHandle {
            source: Some(source),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    fn source(&self) -> &Arc<dyn ToolSource> {
        // Cannot fail: `source` is taken only by Drop.
        self.source
            .as_ref()
            .expect("the source is alive until dropped")
    }

    /// Every tool of the source now.
    pub fn tools(&self) -> Vec<Arc<SourceTool>> {
        source_tools(self.source().tools())
    }

    /// Add the source to `client` (the engine's `Client::add_source`), inside the source's
    /// runtime: a source may watch the client from a task there.
    pub fn add_to(&self, client: &contenox::Client) -> Result<(), ContenoxError> {
        let _runtime = self.runtime.enter();
        Ok(client.add_source(self.source().clone())?)
    }

    /// The engine's `close`.
    pub async fn shutdown(&self) {
        self.source().close().await;
    }

    /// Whether the source was shut down.
    pub fn is_closed(&self) -> bool {
        self.source().is_closed()
    }
}

impl Drop for SourceHandle {
    /// Freeing the last handle of a source may stop its servers (the engine's drop); it runs
    /// inside the source's runtime, as the engine's process and transport handles expect.
    fn drop(&mut self) {
        let _runtime = self.runtime.enter();
        drop(self.source.take());
    }
}

/// The methods every source object exports over its `handle` (`registerInto`, `shutdown`,
/// `isClosed`): one body for the MCP and the remote source, each with its own docs (one literal a line, as `///` would give). `$client`
/// is the binding's client object (named at the call, so this file needs no import of it).
macro_rules! source_methods {
    ($source:ty, $client:ty, register_into: [$($register_doc:literal),+], shutdown: [$($shutdown_doc:literal),+]) => {
        #[uniffi::export(async_runtime = "tokio")]
        impl $source {
            $(#[doc = $register_doc])+
            pub fn register_into(
                &self,
                client: std::sync::Arc<$client>,
            ) -> Result<(), $crate::error::ContenoxError> {
                self.handle.add_to(client.core())
            }

            $(#[doc = $shutdown_doc])+
            pub async fn shutdown(&self) {
                self.handle.shutdown().await;
            }

            /// Whether the source was shut down.
            pub fn is_closed(&self) -> bool {
                self.handle.is_closed()
            }
        }
    };
}
pub(crate) use source_methods;
