//! Host (Python) code the engine calls: how a callable is called ([`Host::call`]), and the
//! engine's extension points made of callables: [`PyTool`] (`Tool`), [`crate::hooks::PyHooks`] (`Hooks`, in `hooks.rs`),
//! [`PyWaitFor`] (`WaitFor`) and [`PyWebSearch`] (`WebSearchProvider`). They translate
//! arguments and return values; the engine decides everything else.
//!
//! - A sync callable runs on a tokio blocking thread holding the GIL only while Python runs, so
//!   it never blocks the event loop (a sync `wait_for` may wait for a person for minutes).
//! - An async callable runs as an asyncio task on the event loop of the call that started the
//!   turn (its task locals: loop and contextvars, captured at the entry point). When the engine
//!   stops waiting (the turn was cancelled, an ask timed out), the Python task is cancelled.

use std::sync::{Arc, Mutex};

use contenox::{
    async_trait, Answer, CancellationToken, CompactNotice, Compactor, Hooks, HostError,
    PendingRequest, SearchRequest, SearchResult, Tool, ToolContext, ToolError, ToolOutput,
    ToolSpec, Transcript, WaitFor, WebSearchProvider,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3_async_runtimes::TaskLocals;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::bridge::bridge;
use crate::convert::{from_py, ser_to_py, to_py, to_value};
use crate::runtime::{runtime, with_python};

/// The text of a Python exception as the model sees it: its message, or its type's name when
/// it has none.
pub fn exception_message(py: Python<'_>, err: &PyErr) -> String {
    let value = err.value(py);
    let text = value.str().map(|s| s.to_string()).unwrap_or_default();
    if text.is_empty() {
        crate::convert::type_name(value.as_any())
    } else {
        text
    }
}

/// A host callable and how to call it.
pub struct Callback {
    /// Shared, so that a call takes its own reference without the GIL (on a runtime worker,
    /// which must not wait for it).
    pub func: Arc<Py<PyAny>>,
    pub is_async: bool,
}

impl Callback {
    pub fn from_py(obj: &Bound<'_, PyAny>, is_async: bool) -> Self {
        Callback {
            func: Arc::new(obj.clone().unbind()),
            is_async,
        }
    }
}

/// What a client's callbacks share: the event loop async callbacks run on.
#[derive(Default)]
pub struct Host {
    locals: Mutex<Option<TaskLocals>>,
    /// The hosts of the subagents registered into this client: their turns run inside this
    /// client's, started by the engine rather than from Python, so they take its loop.
    subagents: Mutex<Vec<std::sync::Weak<Host>>>,
    /// Whether an async callable was handed to this client (it then needs an event loop).
    has_async: std::sync::atomic::AtomicBool,
}

impl Host {
    /// Remember the running loop (and a copy of the contextvars) of the caller, when there is
    /// one, here and in every subagent's host. Called at every entry point that starts a turn.
    pub fn capture(&self, py: Python<'_>) -> Option<TaskLocals> {
        let locals = TaskLocals::with_running_loop(py)
            .and_then(|l| l.copy_context(py))
            .ok()?;
        self.set_running(&locals);
        Some(locals)
    }

    /// [`Host::capture`] with the caller's loop and contextvars already in hand.
    pub fn set_running(&self, locals: &TaskLocals) {
        let mut seen = Vec::new();
        self.set_locals(locals, &mut seen);
    }

    /// Set `locals` here and down the subagent hosts (each once: a subagent may be registered
    /// into itself).
    fn set_locals(&self, locals: &TaskLocals, seen: &mut Vec<*const Host>) {
        if seen.contains(&(self as *const Host)) {
            return;
        }
        seen.push(self as *const Host);
        *self.locals.lock().unwrap_or_else(|e| e.into_inner()) = Some(locals.clone());
        for host in self.live_subagents() {
            host.set_locals(locals, seen);
        }
    }

    /// The hosts of the subagents registered into this client that are still alive (taken out
    /// of the lock, so walking them may lock theirs).
    fn live_subagents(&self) -> Vec<Arc<Host>> {
        self.subagents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect()
    }

    /// A subagent whose host is `child` was registered into this client.
    pub fn link(&self, child: &SharedHost) {
        let mut subagents = self.subagents.lock().unwrap_or_else(|e| e.into_inner());
        subagents.retain(|w| w.strong_count() > 0);
        if !subagents
            .iter()
            .any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(child)))
        {
            // Weak: a subagent registered into itself is no cycle of Arcs.
            subagents.push(Arc::downgrade(child));
        }
    }

    /// Remember that an async callable was handed over (an `async def` tool, hook, ...).
    pub fn note(&self, is_async: bool) {
        if is_async {
            self.has_async
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether this client, or a subagent registered into it (at any depth), was handed an async
    /// callable: its turns then need an asyncio event loop to run those callables on.
    pub fn needs_loop(&self) -> bool {
        self.needs_loop_seen(&mut Vec::new())
    }

    fn needs_loop_seen(&self, seen: &mut Vec<*const Host>) -> bool {
        if seen.contains(&(self as *const Host)) {
            return false;
        }
        seen.push(self as *const Host);
        if self.has_async.load(std::sync::atomic::Ordering::Relaxed) {
            return true;
        }
        self.live_subagents()
            .iter()
            .any(|h| h.needs_loop_seen(seen))
    }

    fn locals(&self) -> Option<TaskLocals> {
        self.locals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Call `cb` with the arguments `args` builds and convert what it returns with `convert`.
    /// A Python exception (or a failed conversion) becomes a `HostError` with its message.
    pub async fn call<A, C, T>(
        &self,
        what: &str,
        cb: &Callback,
        args: A,
        convert: C,
    ) -> Result<T, HostError>
    where
        A: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyTuple>> + Send + 'static,
        C: for<'py> FnOnce(Python<'py>, Bound<'py, PyAny>) -> PyResult<T> + Send + 'static,
        T: Send + 'static,
    {
        let shutting_down = || HostError::new("the Python interpreter is shutting down");
        let func = cb.func.clone();
        if !cb.is_async {
            let job = runtime().spawn_blocking(move || {
                with_python(|py| {
                    let out = args(py).and_then(|a| func.bind(py).call1(a));
                    let out = out.and_then(|v| {
                        if v.hasattr("__await__").unwrap_or(false) {
                            Err(pyo3::exceptions::PyTypeError::new_err(
                                "returned an awaitable, but was registered as a sync function \
                                 (declare it with `async def`)",
                            ))
                        } else {
                            convert(py, v)
                        }
                    });
                    out.map_err(|e| HostError::new(exception_message(py, &e)))
                })
            });
            return match job.await {
                Ok(Some(r)) => r,
                Ok(None) => Err(shutting_down()),
                Err(e) => Err(HostError::new(format!("{what} failed: {e}"))),
            };
        }

        let Some(locals) = self.locals() else {
            return Err(HostError::new(format!(
                "{what} is async, but no asyncio event loop is known: start the turn from async \
                 code (await client.run(...)) or use client.run_sync"
            )));
        };
        let (tx, rx) = oneshot::channel();
        let started = with_python(|py| -> PyResult<Py<PyAny>> {
            let done = Py::new(
                py,
                Done {
                    tx: Mutex::new(Some(tx)),
                },
            )?;
            let event_loop = locals.event_loop(py);
            let call = bridge(py)?
                .getattr("Call")?
                .call1((event_loop.clone(), done))?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("context", locals.context(py))?;
            event_loop.call_method(
                "call_soon_threadsafe",
                (call.getattr("start")?, func.clone_ref(py), args(py)?),
                Some(&kwargs),
            )?;
            Ok(call.unbind())
        })
        .ok_or_else(shutting_down)?;
        let call = match started {
            Ok(c) => c,
            Err(e) => {
                return Err(with_python(|py| {
                    HostError::new(format!(
                        "{what} could not be scheduled on the event loop: {}",
                        exception_message(py, &e)
                    ))
                })
                .unwrap_or_else(shutting_down))
            }
        };
        let mut guard = CancelTask(Some(call));
        let result = rx.await;
        guard.0 = None;
        with_python(|py| match result {
            Ok(Ok(v)) => {
                convert(py, v.into_bound(py)).map_err(|e| HostError::new(exception_message(py, &e)))
            }
            Ok(Err(e)) => Err(HostError::new(exception_message(py, &e))),
            Err(_) => Err(HostError::new(format!(
                "{what} never finished: its event loop stopped"
            ))),
        })
        .unwrap_or_else(|| Err(shutting_down()))
    }
}

/// Cancels the asyncio task of an async callback when the engine stops waiting for it.
struct CancelTask(Option<Py<PyAny>>);

impl Drop for CancelTask {
    fn drop(&mut self) {
        if let Some(call) = self.0.take() {
            with_python(|py| {
                if let Err(e) = call.bind(py).call_method0("cancel_threadsafe") {
                    e.print(py);
                }
            });
        }
    }
}

/// Receives an async callback's outcome from the event loop.
#[pyclass(frozen, module = "contenox._native")]
pub struct Done {
    tx: Mutex<Option<oneshot::Sender<PyResult<Py<PyAny>>>>>,
}

#[pymethods]
impl Done {
    fn __call__(&self, value: Py<PyAny>, error: Option<Bound<'_, PyAny>>) {
        let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        let _ = tx.send(match error {
            Some(e) => Err(PyErr::from_value(e)),
            None => Ok(value),
        });
    }
}

/// A cancel signal handed to host code: `wait_for`'s second argument and `ctx.cancel`.
#[pyclass(frozen, module = "contenox._native", name = "CancelSignal")]
pub struct CancelSignal {
    pub token: CancellationToken,
}

#[pymethods]
impl CancelSignal {
    /// True once the turn (or the wait) was cancelled.
    fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Same as `is_cancelled()`.
    #[getter]
    fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Block (without the GIL) until cancelled or `timeout` seconds passed; True when cancelled.
    /// For sync callbacks, which run in their own thread.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> bool {
        if self.token.is_cancelled() {
            return true;
        }
        let token = self.token.clone();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        runtime().spawn(async move {
            tokio::select! {
                _ = token.cancelled() => { let _ = tx.send(()); }
                _ = stop_rx => {}
            }
        });
        let cancelled = py.detach(move || match timeout {
            Some(t) if t.is_finite() => rx
                .recv_timeout(std::time::Duration::from_secs_f64(t.max(0.0)))
                .is_ok(),
            _ => rx.recv().is_ok(),
        });
        let _ = stop_tx.send(());
        cancelled || self.token.is_cancelled()
    }

    fn __bool__(&self) -> bool {
        self.token.is_cancelled()
    }

    fn __repr__(&self) -> String {
        format!("CancelSignal(cancelled={})", self.token.is_cancelled())
    }
}

/// The context of one tool call (`ctx`).
#[pyclass(frozen, module = "contenox._native", name = "ToolContext")]
pub struct PyToolContext {
    pub ctx: contenox::ToolContext,
    pub cancel: Py<CancelSignal>,
}

#[pymethods]
impl PyToolContext {
    /// The call id the model gave (or the engine made).
    #[getter]
    fn call_id(&self) -> &str {
        &self.ctx.call_id
    }

    /// The tool's name.
    #[getter]
    fn name(&self) -> &str {
        &self.ctx.name
    }

    /// `turn_id:call_id`: names this call once across a turn's suspensions and resumes (give it
    /// to the system a tool with side effects changes).
    #[getter]
    fn idempotency_key(&self) -> String {
        self.ctx.idempotency_key()
    }

    /// The client's root directory.
    #[getter]
    fn root(&self) -> String {
        self.ctx.root().display().to_string()
    }

    /// The turn's cancel signal.
    #[getter]
    fn cancel(&self, py: Python<'_>) -> Py<CancelSignal> {
        self.cancel.clone_ref(py)
    }

    /// Report progress: a `progress` event with this JSON data.
    fn progress(&self, data: &Bound<'_, PyAny>) -> PyResult<()> {
        self.ctx.progress(crate::convert::to_value(data)?);
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolContext(call_id={:?}, name={:?})",
            self.ctx.call_id, self.ctx.name
        )
    }
}

/// Keep an `Arc<Host>` handy for adapters.
pub type SharedHost = Arc<Host>;

/// A tool result from whatever a Python tool or after_tool returned: a `contenox.ToolOutput`,
/// or any JSON value (a str is sent as is, anything else as compact JSON).
pub fn output_from_py(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<ToolOutput> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(ToolOutput::text(s.to_str()?));
    }
    let wire = bridge(py)?.call_method1("output_wire", (v,))?;
    from_py(&wire)
}

/// A host tool: a spec and a Python callable `invoke(arguments, ctx)`.
pub struct PyTool {
    pub spec: ToolSpec,
    pub cb: Callback,
    pub host: SharedHost,
}

#[async_trait]
impl Tool for PyTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let what = format!("tool {}", self.spec.name);
        self.host
            .call(
                &what,
                &self.cb,
                move |py| {
                    let cancel = Py::new(
                        py,
                        CancelSignal {
                            token: ctx.cancel.clone(),
                        },
                    )?;
                    let ctx = Py::new(py, PyToolContext { ctx, cancel })?;
                    PyTuple::new(py, [to_py(py, &args)?, ctx.into_bound(py).into_any()])
                },
                |py, v| output_from_py(py, &v),
            )
            .await
    }
}

/// `wait_for=fn(request, cancel)`.
pub struct PyWaitFor {
    pub cb: Callback,
    pub host: SharedHost,
}

#[async_trait]
impl WaitFor for PyWaitFor {
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        self.host
            .call(
                "wait_for",
                &self.cb,
                move |py| {
                    let req =
                        bridge(py)?.call_method1("pending_request", (ser_to_py(py, &request)?,))?;
                    let cancel = Py::new(py, CancelSignal { token: cancel })?;
                    PyTuple::new(py, [req, cancel.into_bound(py).into_any()])
                },
                |_py, v| {
                    Answer::from_value(&to_value(&v)?).map_err(|e| {
                        PyTypeError::new_err(format!("wait_for returned a bad answer: {e}"))
                    })
                },
            )
            .await
    }
}

/// `websearch=provider`: a callable `search(request)` or `search(request, cancel)` (the Python
/// layer finds it on the provider and says whether it takes `cancel`).
pub struct PyWebSearch {
    pub cb: Callback,
    pub with_cancel: bool,
    pub host: SharedHost,
}

#[async_trait]
impl WebSearchProvider for PyWebSearch {
    async fn search(
        &self,
        request: SearchRequest,
        cancel: CancellationToken,
    ) -> Result<Vec<SearchResult>, HostError> {
        // The engine drops this future when the turn is cancelled: an async provider's task
        // is then cancelled (see `callback`), a sync one sees `cancel`.
        let with_cancel = self.with_cancel;
        self.host
            .call(
                "websearch",
                &self.cb,
                move |py| {
                    let req =
                        bridge(py)?.call_method1("search_request", (ser_to_py(py, &request)?,))?;
                    if with_cancel {
                        let cancel = Py::new(py, CancelSignal { token: cancel })?;
                        PyTuple::new(py, [req, cancel.into_bound(py).into_any()])
                    } else {
                        PyTuple::new(py, [req])
                    }
                },
                |py, v| {
                    // SearchResult objects as dicts; core checks the shape.
                    let wire = bridge(py)?.call_method1("search_results_wire", (v,))?;
                    let wire: serde_json::Value = from_py(&wire)?;
                    SearchResult::list_from_json(wire).map_err(PyValueError::new_err)
                },
            )
            .await
    }
}

/// `on_compact=fn(notice)` and `compactor=fn(transcript)`: the host's part in compaction.
pub struct PyCompactor {
    pub on_compact: Option<Callback>,
    pub compact: Option<Callback>,
    pub host: SharedHost,
}

#[async_trait]
impl Compactor for PyCompactor {
    async fn compact(
        &self,
        transcript: &Transcript,
        _cancel: CancellationToken,
    ) -> Result<Option<Transcript>, HostError> {
        let Some(cb) = &self.compact else {
            return Ok(None);
        };
        // The engine drops this future when the turn is cancelled, which cancels an async
        // compactor's task; the result is checked by the engine (a valid, non-empty transcript).
        let transcript = transcript.clone();
        self.host
            .call(
                "compactor",
                cb,
                move |py| {
                    let t =
                        bridge(py)?.call_method1("transcript", (ser_to_py(py, &transcript)?,))?;
                    PyTuple::new(py, [t])
                },
                |_py, v| {
                    if v.is_none() {
                        return Ok(None);
                    }
                    let v = match v.getattr("to_dict") {
                        Ok(to_dict) => to_dict.call0()?,
                        Err(_) => v,
                    };
                    from_py::<Transcript>(&v).map(Some).map_err(|e| {
                        PyTypeError::new_err(format!(
                            "compactor must return a transcript ({{\"messages\": [...]}}) or None: \
                             {}",
                            Python::attach(|py| e.value(py).to_string())
                        ))
                    })
                },
            )
            .await
    }

    async fn on_compact(&self, notice: &CompactNotice) -> Result<(), HostError> {
        let Some(cb) = &self.on_compact else {
            return Ok(());
        };
        let notice = notice.clone();
        self.host
            .call(
                "on_compact",
                cb,
                move |py| {
                    let n =
                        bridge(py)?.call_method1("compact_notice", (ser_to_py(py, &notice)?,))?;
                    PyTuple::new(py, [n])
                },
                |_py, _v| Ok(()),
            )
            .await
    }
}

/// The pieces of a client that a rebuild (after a fork) needs again.
pub struct Parts {
    pub hooks: Option<Arc<dyn Hooks>>,
    pub wait_for: Option<Arc<dyn WaitFor>>,
    pub websearch: Option<Arc<dyn WebSearchProvider>>,
    pub compactor: Option<Arc<dyn Compactor>>,
    /// Background shells the host made and gave (`background=BackgroundShells()`).
    pub shells: Option<contenox::BackgroundShells>,
    /// The host's own tracer provider, when the Python layer found one.
    pub host_tracer: Option<Arc<crate::telemetry::PyHostTracer>>,
}
