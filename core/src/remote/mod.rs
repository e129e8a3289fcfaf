//! Remote tools: HTTP services as tool sources, from their OpenAPI document or one of five
//! one-tool wire protocols.
//!
//! [`load_remote`] takes [`RemoteHook`]s, reads every hook's tools at once and reports each
//! hook's [`HookState`] to `on_hook` as it settles. One failing hook never stops the others.
//!
//! ```no_run
//! use contenox::remote::{load_remote, RemoteHook};
//! use serde_json::json;
//!
//! # async fn demo(client: contenox::Client) -> contenox::Result<()> {
//! let hooks = RemoteHook::list_from_value(json!([
//!     {"name": "tickets", "url": "http://127.0.0.1:8000",
//!      "headers": {"Authorization": "Bearer ..."}, "inject": {"tenant_id": "acme"}},
//!     {"name": "summarize", "url": "http://127.0.0.1:9000/run", "protocol": "langserve",
//!      "tool": {"description": "Summarise a text.",
//!               "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}}
//! ]))?;
//! let source = load_remote(hooks, |name, state| println!("{name}: {state:?}")).await?;
//! source.register_into(&client)?;
//! let result = client.run("Open a ticket about the outage").await?;
//! source.close().await;
//! # Ok(()) }
//! ```
//!
//! OpenAPI (`protocol: "openapi"`, the default):
//! - The document is `GET {url}/openapi.json` (or `spec_url`: a URL, or a local file path),
//!   fetched with the hook's headers; OpenAPI 3.0 and 3.1, JSON or YAML, at most 64 MiB.
//! - Every operation (GET, POST, PUT, PATCH, DELETE) of every path is a tool, except the probes
//!   `/health`, `/healthz`, `/ready`, `/readyz`, `/metrics` (any case, trailing slash ignored).
//!   Name: `operationId`, else `x-tool-name`, else `<last path segment>_<method>` (`root` for
//!   `/`), sanitised by the rule of [`names`](crate::tool::names) and made unique within the
//!   source (`_2`, `_3` in document order; hooks in the order given). Description: summary and
//!   description (each once), at most 1024 characters. Hints: GET read-only (not destructive),
//!   DELETE destructive, others absent.
//! - Input schema: path, query, header and cookie parameters (each with its schema and
//!   `required`), plus the request body's properties lifted to the top level; a body that is not
//!   an object with properties, or whose property names collide with a parameter, is the one
//!   argument `body`. Property names are made to fit `^[A-Za-z0-9_.-]{1,64}$`. Schemas are
//!   made self-contained JSON Schema 2020-12: every local `$ref` resolved (cycles cut),
//!   `allOf` merged where the parts agree, 3.0's `nullable` as `null`, read-only properties
//!   and keywords that are not JSON Schema left out; nesting deeper than 24 levels or a schema
//!   past 4000 nodes is cut (the tool says so), a document expanding past 10 million nodes is
//!   refused, as is one with more than 50000 operations.
//! - Calls go to `{url}` plus the document's first server path when that is relative
//!   (`servers: [{"url": "/api"}]`); an absolute server URL is not used, so the hook's headers
//!   only ever go where the host pointed them. Redirects are not followed.
//! - Results: a 2xx JSON answer as compact JSON text, other text as it is, an empty body
//!   `(no content)`, binary content as one line naming its type and size; a body over 4 MiB is
//!   cut (metadata `truncated`). Any other status is the error result `HTTP <status>: <body cut
//!   to 2 KiB>`; a timeout names the limit, a connection failure the host. Cancelling the turn
//!   aborts the request.
//!
//! The five protocols (`openai`, `openai-object`, `ollama`, `langserve-openai`, `langserve`):
//! one tool named after the hook, its schema the hook's `tool` or `GET {url}/schema`; the
//! request bodies are the Go runtime's exact bytes (see `protocol.rs`).
//!
//! Secrets: header values and injected parameters never reach the model, an event, the
//! transcript, an error message or a `Debug` print. Injected names leave the input schema
//! (also inside a lifted body) and are merged into every call after the model's arguments,
//! winning, where the operation declares them (a parameter, the body), else in the query for
//! GET and DELETE and in the JSON body otherwise. The gate and the events see the model's
//! arguments only. A service that echoes a header value (or an injected string) back gets it
//! replaced by `<redacted>` in the result.
//!
//! Availability: a hook that cannot be read at load time is [`HookState::Unavailable`] and
//! stays registered: it is probed again by [`RemoteSource::refresh`] and before the first model
//! request of every turn of a client it was registered into (at most once a turn, each probe
//! bounded by its `timeout_ms`); its tools appear once it answers. A remote tool never replaces
//! a client's tool of another source with the same name (it is left out, with a warning).
//! The source holds no process: [`RemoteSource::close`] removes its tools from the clients and
//! makes calls in flight return an error; closing a client does not close the source. Dropping
//! every handle of the source ends the probes before turns; the tools already registered keep
//! working.

mod document;
mod endpoint;
mod gojson;
mod hook;
mod http;
mod openapi;
mod protocol;
mod redact;
mod request;
mod schema;
mod service;
mod tool;

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{FuturesUnordered, StreamExt};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use hook::{HookTool, Protocol, RemoteHook, DEFAULT_TIMEOUT_MS};
pub use redact::redact_url;

use crate::error::{Error, Result};
use crate::tool::{Tool, ToolHost, ToolSource};
use service::{Service, Shared};

/// How a hook is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum HookState {
    /// Its tools are known.
    Ready {
        /// How many tools it offers (u64, as MCP's `ServerState`: every binding carries it).
        tools: u64,
    },
    /// It could not be read (it is probed again before each turn and on refresh).
    Unavailable {
        /// What went wrong (never a header, an injected value or a URL's query).
        error: String,
    },
}

/// The hooks given to [`load_remote`], their states and tools. Cheap to clone.
#[derive(Clone)]
pub struct RemoteSource {
    inner: Arc<SourceInner>,
}

struct SourceInner {
    services: Vec<Arc<Service>>,
    shared: Arc<Shared>,
}

/// Read every hook's tools at once and call `on_hook` once per hook, as each settles, with
/// its name and [`HookState`]. Hooks that fail are reported and kept as unavailable (they are
/// probed again later); the others work. `Err` only for invalid hooks (see
/// [`RemoteHook::check`]) or a name given twice. Needs a tokio runtime.
pub async fn load_remote<F>(hooks: Vec<RemoteHook>, on_hook: F) -> Result<RemoteSource>
where
    F: Fn(&str, &HookState) + Send + Sync,
{
    for h in &hooks {
        h.check()?;
    }
    hook::check_unique(&hooks)?;
    let shared = Shared::new();
    let services: Vec<Arc<Service>> = hooks
        .into_iter()
        .map(|h| Arc::new(Service::new(h, shared.clone())))
        .collect();
    let never = CancellationToken::new();
    let mut reading: FuturesUnordered<_> = services
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let never = &never;
            async move { (i, s.discover(never).await) }
        })
        .collect();
    let mut found: Vec<Option<Result<Vec<endpoint::ToolDef>, String>>> =
        (0..services.len()).map(|_| None).collect();
    while let Some((i, result)) = reading.next().await {
        let state = match &result {
            Ok(defs) => HookState::Ready {
                tools: defs.len() as u64,
            },
            Err(e) => HookState::Unavailable { error: e.clone() },
        };
        on_hook(services[i].name(), &state);
        found[i] = Some(result);
    }
    drop(reading);
    // Names are given out in the hooks' order, whatever order they answered in.
    for (service, result) in services.iter().zip(found) {
        match result {
            Some(Ok(defs)) => {
                service.install(defs);
            }
            Some(Err(e)) => service.fail(e),
            None => service.fail("not read".into()),
        }
    }
    Ok(RemoteSource {
        inner: Arc::new(SourceInner { services, shared }),
    })
}

impl RemoteSource {
    /// Every tool of every ready hook, as they are now.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner.tools()
    }

    /// Each hook's name and state now, in the order given.
    pub fn hooks(&self) -> Vec<(String, HookState)> {
        self.inner.hooks()
    }

    /// Read every hook again: unavailable hooks are probed (their tools appear once they
    /// answer), ready hooks re-read their document (tools that changed are replaced in the
    /// clients; a ready hook whose new read fails keeps its tools). Returns the states.
    pub async fn refresh(&self) -> Vec<(String, HookState)> {
        self.inner.probe_all().await;
        self.hooks()
    }

    /// The source as a [`ToolSource`], for [`Client::add_source`](crate::Client::add_source)
    /// (what [`register_into`](RemoteSource::register_into) does). The client holds it weakly.
    pub fn source(&self) -> Arc<dyn ToolSource> {
        self.inner.clone()
    }

    /// Whether the source was closed.
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Remove the tools from the clients they were registered into and make calls in flight
    /// (and later calls of a tool kept elsewhere) return an error. Idempotent.
    pub async fn close(&self) {
        self.inner.close().await
    }
}

impl SourceInner {
    fn hooks(&self) -> Vec<(String, HookState)> {
        self.services
            .iter()
            .map(|s| (s.name().to_string(), s.state()))
            .collect()
    }

    async fn probe_all(&self) {
        let never = CancellationToken::new();
        futures::future::join_all(self.services.iter().map(|s| s.probe(&never, false))).await;
    }
}

#[async_trait]
impl ToolSource for SourceInner {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.services
            .iter()
            .flat_map(|s| s.tools())
            .map(|t| t as Arc<dyn Tool>)
            .collect()
    }

    fn states(&self) -> Vec<(String, serde_json::Value)> {
        self.hooks()
            .into_iter()
            .map(|(name, state)| (name, serde_json::to_value(state).unwrap_or_default()))
            .collect()
    }

    async fn refresh(&self) -> Vec<(String, serde_json::Value)> {
        self.probe_all().await;
        self.states()
    }

    fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    async fn close(&self) {
        self.shared.closed.cancel();
        for client in self.shared.live_clients() {
            for service in &self.services {
                for tool in service.tools() {
                    if service.owns(&client, &tool.name) {
                        client.unregister(&tool.name);
                    }
                }
            }
        }
    }

    /// Unavailable hooks are probed again.
    async fn before_turn(&self, cancel: &CancellationToken) {
        let down = self
            .services
            .iter()
            .filter(|s| matches!(s.state(), HookState::Unavailable { .. }));
        futures::future::join_all(down.map(|s| s.probe(cancel, true))).await;
    }

    /// Register every tool into the client and keep its tools in step with later refreshes
    /// (the client probes unavailable hooks before each of its turns). `Err` (and nothing
    /// registered) when the source is closed or a tool's name is taken in the client by a tool
    /// of another source.
    fn attach(self: Arc<Self>, client: &ToolHost) -> Result<()> {
        if self.is_closed() {
            return Err(Error::config("the remote source is closed".into()));
        }
        let mut clashes = Vec::new();
        for service in &self.services {
            for tool in service.tools() {
                let taken = client.lookup(&tool.name).is_some();
                if taken && !service.owns(client, &tool.name) {
                    clashes.push(format!("{} (hook {:?})", tool.name, service.name()));
                }
            }
        }
        if !clashes.is_empty() {
            return Err(Error::Tool(format!(
                "remote tools would replace the client's tools of the same name: {}",
                clashes.join(", ")
            )));
        }
        self.shared.add_client(client);
        for service in &self.services {
            for tool in service.tools() {
                service.register_one(client, &tool);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Client;
    use serde_json::json;
    use std::sync::Weak;

    /// A source of one langserve hook whose tool is given (no network at load).
    async fn one_hook_source() -> RemoteSource {
        let hooks = RemoteHook::list_from_value(json!([{
            "name": "echo", "url": "http://127.0.0.1:9/run", "protocol": "langserve",
            "tool": {"description": "Echo a text.",
                     "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}}}
        }]))
        .unwrap();
        load_remote(hooks, |_, _| {}).await.unwrap()
    }

    fn services_of(source: &RemoteSource) -> Vec<Weak<Service>> {
        source.inner.services.iter().map(Arc::downgrade).collect()
    }

    #[tokio::test]
    async fn dropping_the_source_frees_its_services() {
        let source = one_hook_source().await;
        assert_eq!(source.tools().len(), 1);
        let services = services_of(&source);
        drop(source);
        assert!(
            services.iter().all(|w| w.upgrade().is_none()),
            "a dropped source's services are still alive (a tool holds its service)"
        );
    }

    #[tokio::test]
    async fn tools_a_client_keeps_outlive_the_services_not_the_other_way() {
        let client = Client::builder()
            .script(Vec::new())
            .builtins(Vec::<String>::new())
            .build()
            .unwrap();
        let source = one_hook_source().await;
        source.register_into(&client).unwrap();
        let services = services_of(&source);
        drop(source);
        assert!(
            services.iter().all(|w| w.upgrade().is_none()),
            "the client's tools keep the dropped source's services alive"
        );
        // What the client holds still names its hook (its endpoint lives with the tool).
        let entry = client
            .state()
            .toolkit()
            .lookup("echo", &|_| true)
            .expect("the tool stays registered");
        assert_eq!(entry.server.as_deref(), Some("echo"));
    }
}
