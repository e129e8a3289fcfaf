//! Host callbacks: JavaScript functions the engine calls (tools, `beforeTool`, `afterTool`,
//! `waitFor`, the `websearch` provider).
//!
//! Every callback is a *weak* ThreadsafeFunction (it never keeps the Node.js event loop alive)
//! awaited with `call_async_catch` (a throw is an `Err`, never a crash). The TypeScript layer
//! wraps each user function so that it always returns a Promise of JSON text: `{"error": msg}`
//! when the user's function threw or rejected, else the value in a small envelope. Whatever
//! still goes wrong (a callback that can no longer be called, text that is not the envelope)
//! becomes a [`HostError`], which the engine turns into an error result.
//!
//! Cancellation goes the other way through one more weak function, `abort(key)`: every tool,
//! `waitFor` and `websearch` call gets a key, and when the engine drops the call before JavaScript answered
//! (the turn was cancelled or ended, an ask timed out), [`AbortOnDrop`] calls `abort(key)` and
//! the TypeScript layer aborts that call's `AbortSignal`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use contenox::CancellationToken;
use contenox::{
    async_trait, Answer, CompactNotice, Compactor, HostError, PendingRequest, SearchRequest,
    SearchResult, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, Transcript, WaitFor,
    WebSearchProvider,
};
use napi::bindgen_prelude::{FnArgs, Function, Promise};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;
use serde_json::Value;

use crate::convert;

/// A weak, callee-unhandled ThreadsafeFunction returning a Promise of JSON text.
pub type JsCallback<A> = ThreadsafeFunction<A, Promise<String>, A, Status, false, true>;
/// `(argsJson, callId, abortKey, idempotencyKey) => Promise<string>`.
pub type ToolArgs = FnArgs<(String, String, u32, String)>;
/// `(callJson) => Promise<string>`.
pub type BeforeArgs = String;
/// `(callJson, resultJson) => Promise<string>`.
pub type AfterArgs = FnArgs<(String, String)>;
/// `(requestJson, abortKey) => Promise<string>`.
pub type WaitArgs = FnArgs<(String, u32)>;
/// `(requestJson, abortKey) => Promise<string>`.
pub type SearchArgs = FnArgs<(String, u32)>;
/// `(noticeJson) => Promise<string>`.
pub type NoticeArgs = String;
/// `(transcriptJson, abortKey) => Promise<string>`.
pub type CompactArgs = FnArgs<(String, u32)>;
type AbortCallback = ThreadsafeFunction<u32, UnknownReturnValue, u32, Status, false, true>;

/// Turn a JavaScript function into a weak ThreadsafeFunction.
pub fn weak<A>(f: &Function<'_, A, Promise<String>>) -> napi::Result<JsCallback<A>>
where
    A: 'static + napi::bindgen_prelude::JsValuesTupleIntoVec,
{
    f.build_threadsafe_function::<A>()
        .weak::<true>()
        .callee_handled::<false>()
        .build()
}

/// What every callback of one client shares: the `abort(key)` function and the key counter.
pub struct Shared {
    abort: AbortCallback,
    next_key: AtomicU32,
}

impl Shared {
    /// Wrap the TypeScript layer's `abort(key)` function.
    pub fn new(abort: &Function<'_, u32, UnknownReturnValue>) -> napi::Result<Arc<Shared>> {
        let abort = abort
            .build_threadsafe_function::<u32>()
            .weak::<true>()
            .callee_handled::<false>()
            .build()?;
        Ok(Arc::new(Shared {
            abort,
            next_key: AtomicU32::new(1),
        }))
    }

    fn key(&self) -> u32 {
        self.next_key.fetch_add(1, Ordering::Relaxed)
    }
}

/// Calls `abort(key)` when dropped before [`AbortOnDrop::disarm`]: the engine stopped waiting.
struct AbortOnDrop<'a> {
    shared: &'a Shared,
    key: u32,
    armed: bool,
}

impl<'a> AbortOnDrop<'a> {
    fn new(shared: &'a Shared) -> Self {
        AbortOnDrop {
            shared,
            key: shared.key(),
            armed: true,
        }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            // Non-blocking: never wait on the JavaScript thread from here. A closed
            // environment only means there is nobody left to tell.
            let _ = self
                .shared
                .abort
                .call(self.key, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

/// Call a JavaScript callback and read its envelope's `value`. `{"error": msg}` is the host's
/// error.
pub(crate) async fn call<A: 'static + napi::bindgen_prelude::JsValuesTupleIntoVec>(
    f: &JsCallback<A>,
    args: A,
    what: &str,
) -> Result<Value, HostError> {
    let mut envelope = call_envelope(f, args, what).await?;
    Ok(envelope
        .get_mut("value")
        .map(Value::take)
        .unwrap_or(Value::Null))
}

/// Call a JavaScript callback and return its whole envelope (`{"value"}`, or a tool's
/// `{"output"}`). `{"error": msg}` is the host's error.
async fn call_envelope<A: 'static + napi::bindgen_prelude::JsValuesTupleIntoVec>(
    f: &JsCallback<A>,
    args: A,
    what: &str,
) -> Result<Value, HostError> {
    let promise = f
        .call_async_catch(args)
        .await
        .map_err(|e| HostError::new(format!("{what} could not be called: {}", e.reason)))?;
    let text = promise
        .await
        .map_err(|e| HostError::new(format!("{what} failed: {}", e.reason)))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| HostError::new(format!("{what} answered something that is not JSON: {e}")))?;
    if let Some(message) = value.get("error") {
        let message = match message {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return Err(HostError::new(message));
    }
    Ok(value)
}

/// A tool whose `execute` is a JavaScript function.
pub struct JsTool {
    spec: ToolSpec,
    execute: JsCallback<ToolArgs>,
    shared: Arc<Shared>,
}

impl JsTool {
    /// A tool from its spec (core's JSON) and the wrapped `execute`.
    pub fn new(spec: ToolSpec, execute: JsCallback<ToolArgs>, shared: Arc<Shared>) -> Self {
        JsTool {
            spec,
            execute,
            shared,
        }
    }
}

#[async_trait]
impl Tool for JsTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut guard = AbortOnDrop::new(&self.shared);
        let key = ctx.idempotency_key();
        let args = FnArgs::from((args.to_string(), ctx.call_id, guard.key, key));
        let what = format!("the tool {}", self.spec.name);
        let envelope = call_envelope(&self.execute, args, &what).await;
        guard.disarm();
        let mut envelope = envelope?;
        if let Some(output) = envelope.get_mut("output").map(Value::take) {
            // A `ToolOutput` the TypeScript layer wrote in the engine's form (its images are
            // checked by the engine as a prompt's).
            return serde_json::from_value(output).map_err(|e| {
                HostError::new(format!(
                    "{what} returned a ToolOutput the engine cannot read: {e}"
                ))
            });
        }
        let value = envelope
            .get_mut("value")
            .map(Value::take)
            .unwrap_or(Value::Null);
        Ok(ToolOutput::json(value))
    }
}

/// `waitFor` as core [`WaitFor`].
pub struct JsWaitFor {
    wait_for: JsCallback<WaitArgs>,
    shared: Arc<Shared>,
}

impl JsWaitFor {
    /// `waitFor` from the wrapped function.
    pub fn new(wait_for: JsCallback<WaitArgs>, shared: Arc<Shared>) -> Self {
        JsWaitFor { wait_for, shared }
    }
}

#[async_trait]
impl WaitFor for JsWaitFor {
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        let mut guard = AbortOnDrop::new(&self.shared);
        let args = FnArgs::from((convert::pending_request(&request), guard.key));
        let answer = tokio::select! {
            biased;
            // The engine stopped waiting (turn over, cancelled, timed out): the guard aborts.
            _ = cancel.cancelled() => return Err(HostError::new("cancelled")),
            answer = call(&self.wait_for, args, "waitFor") => answer,
        };
        guard.disarm();
        Answer::from_value(&answer?).map_err(HostError::new)
    }
}

/// The `websearch` provider as core's [`WebSearchProvider`].
pub struct JsWebSearch {
    search: JsCallback<SearchArgs>,
    shared: Arc<Shared>,
}

impl JsWebSearch {
    /// The provider from the wrapped `search` function.
    pub fn new(search: JsCallback<SearchArgs>, shared: Arc<Shared>) -> Self {
        JsWebSearch { search, shared }
    }
}

#[async_trait]
impl WebSearchProvider for JsWebSearch {
    async fn search(
        &self,
        request: SearchRequest,
        _cancel: CancellationToken,
    ) -> Result<Vec<SearchResult>, HostError> {
        // The engine drops this future when the turn is cancelled: the guard aborts the
        // provider's signal.
        let mut guard = AbortOnDrop::new(&self.shared);
        let args = FnArgs::from((convert::search_request(&request), guard.key));
        let value = call(&self.search, args, "websearch").await;
        guard.disarm();
        convert::search_results_from_js(value?).map_err(HostError::new)
    }
}

/// `compactor({ onCompact, compact })` as core's [`Compactor`].
pub struct JsCompactor {
    on_compact: Option<JsCallback<NoticeArgs>>,
    compact: Option<JsCallback<CompactArgs>>,
    shared: Arc<Shared>,
}

impl JsCompactor {
    /// The compactor from the wrapped functions (either may be absent).
    pub fn new(
        on_compact: Option<JsCallback<NoticeArgs>>,
        compact: Option<JsCallback<CompactArgs>>,
        shared: Arc<Shared>,
    ) -> Self {
        JsCompactor {
            on_compact,
            compact,
            shared,
        }
    }
}

#[async_trait]
impl Compactor for JsCompactor {
    async fn compact(
        &self,
        transcript: &Transcript,
        _cancel: CancellationToken,
    ) -> Result<Option<Transcript>, HostError> {
        let Some(compact) = &self.compact else {
            return Ok(None);
        };
        // The engine drops this future when the turn is cancelled: the guard aborts the
        // function's signal. The engine checks what it returns.
        let mut guard = AbortOnDrop::new(&self.shared);
        let args = FnArgs::from((transcript.to_json(), guard.key));
        let value = call(compact, args, "compact").await;
        guard.disarm();
        match value? {
            Value::Null => Ok(None),
            doc => serde_json::from_value(doc).map(Some).map_err(|e| {
                HostError::new(format!(
                    "compact must return a Transcript, a saved transcript or nothing: {e}"
                ))
            }),
        }
    }

    async fn on_compact(&self, notice: &CompactNotice) -> Result<(), HostError> {
        let Some(on_compact) = &self.on_compact else {
            return Ok(());
        };
        call(on_compact, convert::compact_notice(notice), "onCompact").await?;
        Ok(())
    }
}
