//! Host code the engine calls: tools, wait_for and a web search provider, implemented in
//! Kotlin or Swift (the hooks are in `hooks.rs`).
//!
//! Each is a foreign trait with async methods (`suspend fun` in Kotlin, `async throws` in Swift).
//! The adapters below translate them to the engine's `Tool`, `Hooks` and `WaitFor` traits and do
//! nothing else: every decision (what an error means, timeouts, cancellation) is the engine's.
//!
//! Cancellation: when a turn is cancelled (or an ask times out) the engine stops waiting for the
//! callback and drops its future; UniFFI then cancels the foreign call (the Kotlin coroutine /
//! the Swift `Task`), so a pending `waitFor` or a running host tool sees the cancellation.

use std::sync::Arc;

use parking_lot::Mutex;

use async_trait::async_trait;
use contenox::{CompactNotice, SearchRequest, SearchResult};
use serde_json::Value;

use crate::convert::{via_json, Answer, PendingRequest, ToolOutput, ToolSpec};
use crate::error::ContenoxError;

/// A tool implemented by the host.
#[uniffi::export(foreign)]
#[async_trait]
pub trait HostTool: Send + Sync {
    /// The tool's declaration. Read once, when the tool is registered.
    fn spec(&self) -> Result<ToolSpec, ContenoxError>;

    /// Run the tool. `arguments_json` is the call's arguments (a JSON object, already checked
    /// against the input schema). A thrown error becomes an error result the model sees.
    async fn call(
        &self,
        arguments_json: String,
        context: ToolContext,
    ) -> Result<ToolOutput, ContenoxError>;
}

/// Answers asks (a `Decision.Ask` of `beforeTool`). When the turn is cancelled, or the ask's
/// timeout passes, the engine stops waiting and the call is cancelled (Kotlin: the coroutine is
/// cancelled; Swift: the task is).
#[uniffi::export(foreign)]
#[async_trait]
pub trait WaitFor: Send + Sync {
    /// Answer one request.
    async fn wait_for(&self, request: PendingRequest) -> Result<Answer, ContenoxError>;
}

/// A web search backend the host supplies; with one, the client offers the `websearch` builtin.
/// The engine filters the results by the requested domains again and caps them, so a provider
/// may ignore filters it cannot apply. A thrown error becomes the tool's error result.
#[uniffi::export(foreign)]
#[async_trait]
pub trait WebSearchProvider: Send + Sync {
    /// Search.
    async fn search(&self, request: SearchRequest) -> Result<Vec<SearchResult>, ContenoxError>;
}

/// The host's search provider as the engine sees it.
pub(crate) struct WebSearchAdapter(pub(crate) Arc<dyn WebSearchProvider>);

#[async_trait]
impl contenox::WebSearchProvider for WebSearchAdapter {
    async fn search(
        &self,
        request: SearchRequest,
        _cancel: contenox::CancellationToken,
    ) -> Result<Vec<SearchResult>, contenox::HostError> {
        // As for wait_for: the engine drops this future on cancel, which cancels the foreign call.
        Ok(self.0.search(request).await?)
    }
}

/// What a host tool's call runs with.
#[derive(uniffi::Record)]
pub struct ToolContext {
    /// The call id the model gave (or the engine made).
    pub call_id: String,
    /// `turn_id:call_id`: names this call once across its turn's suspensions and resumes, in
    /// any process (the call id alone in a subagent's turn). A tool with side effects hands it
    /// to the system it changes (a payment's idempotency key, a row's unique id), so a call run
    /// again after a crash does its work once.
    pub idempotency_key: String,
    /// The tool's name.
    pub name: String,
    /// The client's root directory (canonical).
    pub root: String,
    /// Reports progress of this call (`progress` events).
    pub reporter: Arc<ToolReporter>,
}

/// Reports progress of one tool call as `progress` events of the turn. Valid while the call
/// runs: reports made after it returned are dropped.
#[derive(uniffi::Object)]
pub struct ToolReporter {
    /// The call's context; taken away when the call ends, so that a host keeping the reporter
    /// does not keep the turn's event stream open.
    ctx: Mutex<Option<contenox::ToolContext>>,
}

#[uniffi::export]
impl ToolReporter {
    /// Emit a `progress` event with this data (JSON text). Returns false when the call has
    /// already ended (nothing was emitted).
    pub fn progress(&self, data_json: String) -> Result<bool, ContenoxError> {
        let data = crate::error::parse_json("progress data", &data_json)?;
        let ctx = self.ctx.lock();
        if let Some(ctx) = ctx.as_ref() {
            ctx.progress(data);
        }
        Ok(ctx.is_some())
    }
}

/// Ends a reporter's validity when the call is over (also when its future is dropped).
struct EndReporter(Arc<ToolReporter>);

impl Drop for EndReporter {
    fn drop(&mut self) {
        self.0.ctx.lock().take();
    }
}

/// A host tool as the engine sees it.
pub(crate) struct ToolAdapter {
    spec: contenox::ToolSpec,
    tool: Arc<dyn HostTool>,
}

impl ToolAdapter {
    /// Read the tool's spec (once) and wrap it.
    pub(crate) fn wrap(tool: Arc<dyn HostTool>) -> Result<Arc<dyn contenox::Tool>, ContenoxError> {
        let spec = via_json(&tool.spec()?)?;
        Ok(Arc::new(ToolAdapter { spec, tool }))
    }
}

#[async_trait]
impl contenox::Tool for ToolAdapter {
    fn spec(&self) -> contenox::ToolSpec {
        self.spec.clone()
    }

    async fn call(
        &self,
        args: Value,
        ctx: contenox::ToolContext,
    ) -> Result<contenox::ToolOutput, contenox::ToolError> {
        let reporter = Arc::new(ToolReporter {
            ctx: Mutex::new(Some(ctx.clone())),
        });
        let _end = EndReporter(reporter.clone());
        let context = ToolContext {
            idempotency_key: ctx.idempotency_key(),
            call_id: ctx.call_id,
            name: ctx.name,
            root: ctx.root.to_string_lossy().into_owned(),
            reporter,
        };
        let out = self.tool.call(args.to_string(), context).await?;
        Ok(via_json(&out)?)
    }
}

/// Told after every compaction of the conversation (automatic, or `compact()`), with what the
/// `compact` event says. A thrown error is ignored: the compaction stands.
#[uniffi::export(foreign)]
#[async_trait]
pub trait OnCompact: Send + Sync {
    /// One compaction happened.
    async fn on_compact(&self, notice: CompactNotice) -> Result<(), ContenoxError>;
}

/// The host's on_compact as the engine's compactor (which then summarises with the model).
pub(crate) struct OnCompactAdapter(pub(crate) Arc<dyn OnCompact>);

#[async_trait]
impl contenox::Compactor for OnCompactAdapter {
    async fn on_compact(&self, notice: &CompactNotice) -> Result<(), contenox::HostError> {
        Ok(self.0.on_compact(notice.clone()).await?)
    }
}

/// The host's wait_for as the engine sees it.
pub(crate) struct WaitForAdapter(pub(crate) Arc<dyn WaitFor>);

#[async_trait]
impl contenox::WaitFor for WaitForAdapter {
    async fn wait_for(
        &self,
        request: contenox::PendingRequest,
        _cancel: contenox::CancellationToken,
    ) -> Result<contenox::Answer, contenox::HostError> {
        // The token needs no forwarding: the engine drops this future when it fires, and
        // dropping it cancels the foreign call.
        let answer = self.0.wait_for(via_json(&request)?).await?;
        Ok(answer.into_core()?)
    }
}
