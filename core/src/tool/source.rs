//! Tool sources: what gives a client tools it does not own (MCP servers, remote hooks, and any
//! later source). A source implements [`ToolSource`]; [`Client::add_source`](crate::Client)
//! attaches it, and from then on the source keeps that client's tools in step through a
//! [`ToolHost`] (a weak view of the client), while the client polls its sources before each
//! turn. Neither holds the other strongly: a source's life is its host's business, and so is a
//! client's.

use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Entry, Source, Tool, Toolkit};
use crate::error::Result;

/// Something that gives clients tools it owns and may change: the servers of an MCP config, the
/// hooks of a remote source. Object-safe; a client holds it as `Weak<dyn ToolSource>`.
///
/// # Examples
///
/// A source of one fixed tool, added to a client; the host keeps the `Arc` (the client holds
/// it weakly) and the model calls the tool:
///
/// ```
/// use std::sync::Arc;
///
/// use contenox::{async_trait, tool_fn, Client, ScriptEntry, Tool, ToolHost, ToolOutput};
/// use contenox::{ToolSource, ToolSpec};
/// use serde_json::{json, Value};
///
/// struct Clock;
///
/// #[async_trait]
/// impl ToolSource for Clock {
///     fn tools(&self) -> Vec<Arc<dyn Tool>> {
///         let spec = ToolSpec::new("clock__now", "The time.", json!({"type": "object"}));
///         vec![Arc::new(tool_fn(spec, |_args, _ctx| async {
///             Ok(ToolOutput::text("12:00"))
///         }))]
///     }
///     fn states(&self) -> Vec<(String, Value)> {
///         vec![("clock".into(), json!({"state": "ready", "tools": 1}))]
///     }
///     async fn close(&self) {}
///     fn is_closed(&self) -> bool {
///         false
///     }
///     fn attach(self: Arc<Self>, host: &ToolHost) -> contenox::Result<()> {
///         self.tools().into_iter().try_for_each(|tool| host.register(tool))
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let client = Client::builder()
///     .script(vec![
///         ScriptEntry::tool_call("c1", "clock__now", json!({})),
///         ScriptEntry::text("It is noon."),
///     ])
///     .build()
///     .unwrap();
/// let clock: Arc<dyn ToolSource> = Arc::new(Clock);
/// client.add_source(clock.clone()).unwrap();
/// assert!(client.tools().iter().any(|t| t.name == "clock__now"));
/// let result = client.run("What time is it?").await.unwrap();
/// assert_eq!(result.final_text, "It is noon.");
/// # });
/// ```
#[async_trait]
pub trait ToolSource: Send + Sync + 'static {
    /// Every tool the source offers now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// Each member of the source (a server, a hook) by name, with its state as the JSON every
    /// binding carries (`{"state": "ready", "tools": n}`, ...), in the source's order.
    fn states(&self) -> Vec<(String, Value)>;

    /// Read the members again where the source can (a remote hook re-reads its document); the
    /// states after. The default reads nothing: a source whose members announce their own
    /// changes (MCP's `tools/list_changed`) has nothing to ask.
    async fn refresh(&self) -> Vec<(String, Value)> {
        self.states()
    }

    /// Stop the source and remove its tools from every client it was added to. Idempotent.
    async fn close(&self);

    /// Whether [`close`](ToolSource::close) was called (or the source closed itself).
    fn is_closed(&self) -> bool;

    /// Work the source wants done at the start of every turn of a client it was added to,
    /// before the first model request (a remote hook that was down is probed). Bounded by the
    /// source's own limits; the turn stops waiting when `cancel` fires. The default does nothing.
    async fn before_turn(&self, _cancel: &CancellationToken) {}

    /// Register the tools into `host` and keep them in step from now on (the source keeps
    /// `host` weakly). `Err`, with nothing registered, when the source refuses the client.
    fn attach(self: Arc<Self>, host: &ToolHost) -> Result<()>;
}

/// What a client shows the sources added to it: its toolkit and its shutdown signal.
/// Implemented by the client's state; the sources never see the client itself.
pub(crate) trait HostTools: Send + Sync + 'static {
    /// The client's tools.
    fn toolkit(&self) -> &Toolkit;
    /// Cancelled when the client closes.
    fn shutdown_token(&self) -> &CancellationToken;
    /// The directories the client works in: its root, then `sandbox.writable` (MCP roots).
    fn roots(&self) -> Vec<std::path::PathBuf>;
}

/// A client as a source sees it: register and unregister tools, see who owns a name, learn
/// when the client closes. Given to [`ToolSource::attach`]; kept by the source as a
/// [`WeakHost`].
#[derive(Clone)]
pub struct ToolHost {
    inner: Arc<dyn HostTools>,
}

/// A [`ToolHost`] held weakly (a source must not keep its clients alive).
#[derive(Clone)]
pub struct WeakHost {
    inner: Weak<dyn HostTools>,
}

impl ToolHost {
    pub(crate) fn new(inner: Arc<dyn HostTools>) -> ToolHost {
        ToolHost { inner }
    }

    /// Add `tool` (or replace the client's tool of the same name).
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<()> {
        self.inner.toolkit().register(tool)
    }

    /// Remove the tool `name`; whether there was one.
    pub fn unregister(&self, name: &str) -> bool {
        self.inner.toolkit().unregister(name)
    }

    /// Where the client's tool `name` comes from and its server, if the client has one.
    pub fn owner(&self, name: &str) -> Option<(Source, Option<String>)> {
        self.lookup(name).map(|e| (e.source, e.server.clone()))
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Arc<Entry>> {
        self.inner.toolkit().lookup(name, &|_| true)
    }

    /// Whether the client was closed.
    pub fn is_closed(&self) -> bool {
        self.inner.shutdown_token().is_cancelled()
    }

    /// Cancelled when the client closes.
    pub fn closed(&self) -> CancellationToken {
        self.inner.shutdown_token().clone()
    }

    /// The directories the client works in: its root, then its `sandbox.writable`
    /// directories (what an MCP server is given as its roots).
    pub fn roots(&self) -> Vec<std::path::PathBuf> {
        self.inner.roots()
    }

    /// The weak form a source keeps.
    pub fn downgrade(&self) -> WeakHost {
        WeakHost {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Whether `self` and `other` are the same client.
    pub fn same(&self, other: &ToolHost) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.inner), Arc::as_ptr(&other.inner))
    }
}

impl WeakHost {
    /// The client, while it is alive and open.
    pub fn upgrade(&self) -> Option<ToolHost> {
        self.inner
            .upgrade()
            .map(|inner| ToolHost { inner })
            .filter(|h| !h.is_closed())
    }

    /// Whether the client was dropped.
    pub fn is_gone(&self) -> bool {
        self.inner.strong_count() == 0
    }
}

/// The sources a client was given, held weakly (a dropped source is simply no longer polled).
#[derive(Default)]
pub(crate) struct SourceList {
    sources: Mutex<Vec<Weak<dyn ToolSource>>>,
}

impl SourceList {
    /// Keep `source` (once, however often it is added).
    pub fn add(&self, source: Weak<dyn ToolSource>) {
        let mut sources = self.sources.lock();
        sources.retain(|s| s.strong_count() > 0);
        if !sources.iter().any(|s| Weak::ptr_eq(s, &source)) {
            sources.push(source);
        }
    }

    /// The sources still alive and open.
    pub fn live(&self) -> Vec<Arc<dyn ToolSource>> {
        let sources = self.sources.lock();
        sources
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|s| !s.is_closed())
            .collect()
    }

    /// Each live source's work before a turn, all at once; returns when all are done or
    /// `cancel` fires.
    pub async fn before_turn(&self, cancel: &CancellationToken) {
        let live = self.live();
        if live.is_empty() {
            return;
        }
        let all = futures::future::join_all(live.iter().map(|s| s.before_turn(cancel)));
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {}
            _ = all => {}
        }
    }
}
