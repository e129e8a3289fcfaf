//! The `Client` and `Run` classes of `contenox._native` (wrapped by `contenox._client`).

use std::sync::{Arc, Mutex};

use contenox::{
    CancellationToken, ClientBuilder, Config, Event, Hooks, RunOptions, Style, Tool, ToolSpec,
    Transcript, TurnResult, WaitFor, WebSearchProvider,
};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_async_runtimes::TaskLocals;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::watch;

use crate::adapters::{Parts, PyHooks, PyTool, PyWaitFor, PyWebSearch};
use crate::callback::{Callback, Host, SharedHost};
use crate::convert::{from_py, ser_to_py};
use crate::errors::to_py_err;
use crate::runtime::{produce, py_future, runtime};

/// A host callable handed over by the Python layer: `(callable, is_async)`.
type PyCallable<'py> = (Bound<'py, PyAny>, bool);
/// The web search provider's `search`: `(callable, is_async, takes_cancel)`.
type PySearch<'py> = (Bound<'py, PyAny>, bool, bool);

pub(crate) fn running_loop(py: Python<'_>, what: &str) -> PyResult<TaskLocals> {
    TaskLocals::with_running_loop(py)
        .and_then(|l| l.copy_context(py))
        .map_err(|_| {
            PyRuntimeError::new_err(format!(
                "{what} needs a running asyncio event loop (await it from async code); \
                 in a script without one use client.run_sync(...)"
            ))
        })
}

/// Cancels a turn when the future awaiting it is dropped (asyncio cancelled the awaiting task).
struct CancelOnDrop(Option<CancellationToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.cancel();
        }
    }
}

/// A finished turn as a dict: outcome, final_text, usage, error and the transcript as JSON text
/// (parsed by the Python layer only when it is read).
fn result_dict(py: Python<'_>, r: TurnResult) -> PyResult<Py<PyAny>> {
    let d = PyDict::new(py);
    d.set_item("outcome", r.outcome.as_str())?;
    d.set_item("final_text", r.final_text)?;
    d.set_item("usage", ser_to_py(py, &r.usage)?)?;
    d.set_item("error", r.error)?;
    d.set_item(
        "transcript",
        serde_json::to_string(&r.transcript).map_err(|e| to_py_err(e.into()))?,
    )?;
    Ok(d.into_any().unbind())
}

fn tool_from_py(host: &SharedHost, tool: &Bound<'_, PyAny>) -> PyResult<Arc<dyn Tool>> {
    if let Ok(native) = tool.cast::<crate::mcp::PyNativeTool>() {
        return Ok(native.get().tool.clone());
    }
    let (spec, invoke, is_async): (Bound<'_, PyAny>, Bound<'_, PyAny>, bool) = tool.extract()?;
    let spec: ToolSpec = from_py(&spec).map_err(|e| {
        to_py_err(contenox::Error::Tool(format!(
            "{} (a spec has name, description, input_schema, hints, tier)",
            Python::attach(|py| e.value(py).to_string())
        )))
    })?;
    Ok(Arc::new(PyTool {
        spec,
        cb: Callback::from_py(&invoke, is_async),
        host: host.clone(),
    }))
}

struct State {
    pid: u32,
    client: contenox::Client,
}

/// The native client: a `contenox::Client` plus what async callbacks need.
#[pyclass(frozen, module = "contenox._native", name = "Client")]
pub struct PyClient {
    state: Mutex<State>,
    host: SharedHost,
    parts: Parts,
    /// The host tools registered so far, in order (to rebuild the engine client after a fork).
    host_tools: Mutex<Vec<Arc<dyn Tool>>>,
}

fn build(
    config: Config,
    tools: &[Arc<dyn Tool>],
    parts: &Parts,
) -> contenox::Result<contenox::Client> {
    let mut b = ClientBuilder::from_config(config);
    for t in tools {
        b = b.tool(t.clone());
    }
    if let Some(h) = &parts.hooks {
        b = b.hooks(h.clone());
    }
    if let Some(w) = &parts.wait_for {
        b = b.wait_for(w.clone());
    }
    if let Some(p) = &parts.websearch {
        b = b.websearch(p.clone());
    }
    b.build()
}

impl PyClient {
    /// The engine client of this process. In a forked child the parent's client (its HTTP
    /// connections belong to the parent's runtime, and their sockets to both processes) is
    /// rebuilt once from the same config, tools, gate and conversation; a scripted client has
    /// no connections and is kept as it is.
    fn core(&self) -> PyResult<contenox::Client> {
        let pid = std::process::id();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.pid != pid && st.client.config().style == Style::Scripted {
            // No connections to lose: the scripted model keeps its client (and its place).
            st.pid = pid;
        } else if st.pid != pid {
            let tools = self
                .host_tools
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let fresh =
                build(st.client.config().clone(), &tools, &self.parts).map_err(to_py_err)?;
            fresh
                .set_transcript(st.client.transcript())
                .map_err(to_py_err)?;
            if st.client.is_closed() {
                fresh.close();
            }
            *st = State { pid, client: fresh };
        }
        Ok(st.client.clone())
    }

    fn start(&self, prompt: String, allow: Option<Vec<String>>) -> PyResult<contenox::Run> {
        let options = match allow {
            Some(patterns) => RunOptions::default().allow(&patterns).map_err(to_py_err)?,
            None => RunOptions::default(),
        };
        let core = self.core()?;
        let _rt = runtime().enter();
        core.stream_with(prompt, options).map_err(to_py_err)
    }
}

#[pymethods]
impl PyClient {
    /// Build a client from the config JSON, host tools `(spec, invoke, is_async)`, hooks and
    /// wait_for `(callable, is_async)`, and the web search provider's `search`
    /// `(callable, is_async, takes_cancel)`.
    #[staticmethod]
    #[pyo3(signature = (config_json, tools, before_tool=None, after_tool=None, wait_for=None, websearch=None))]
    fn create(
        config_json: &str,
        tools: Vec<Bound<'_, PyAny>>,
        before_tool: Option<PyCallable<'_>>,
        after_tool: Option<PyCallable<'_>>,
        wait_for: Option<PyCallable<'_>>,
        websearch: Option<PySearch<'_>>,
    ) -> PyResult<PyClient> {
        let config = Config::from_json(config_json).map_err(to_py_err)?;
        let host: SharedHost = Arc::new(Host::default());
        let tools = tools
            .iter()
            .map(|t| tool_from_py(&host, t))
            .collect::<PyResult<Vec<_>>>()?;
        let hooks: Option<Arc<dyn Hooks>> = if before_tool.is_some() || after_tool.is_some() {
            Some(Arc::new(PyHooks {
                before: before_tool.map(|(f, a)| Callback::from_py(&f, a)),
                after: after_tool.map(|(f, a)| Callback::from_py(&f, a)),
                host: host.clone(),
            }))
        } else {
            None
        };
        let wait_for: Option<Arc<dyn WaitFor>> = wait_for.map(|(f, a)| {
            Arc::new(PyWaitFor {
                cb: Callback::from_py(&f, a),
                host: host.clone(),
            }) as Arc<dyn WaitFor>
        });
        let websearch: Option<Arc<dyn WebSearchProvider>> = websearch.map(|(f, a, c)| {
            Arc::new(PyWebSearch {
                cb: Callback::from_py(&f, a),
                with_cancel: c,
                host: host.clone(),
            }) as Arc<dyn WebSearchProvider>
        });
        let parts = Parts {
            hooks,
            wait_for,
            websearch,
        };
        let client = build(config, &tools, &parts).map_err(to_py_err)?;
        Ok(PyClient {
            state: Mutex::new(State {
                pid: std::process::id(),
                client,
            }),
            host,
            parts,
            host_tools: Mutex::new(tools),
        })
    }

    /// Run one turn; an awaitable of the result dict. Cancelling the awaiting task cancels the
    /// turn (it still ends with outcome `cancelled` and a valid transcript).
    #[pyo3(signature = (prompt, allow=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        prompt: String,
        allow: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "client.run()")?;
        self.host.capture(py);
        let run = self.start(prompt, allow)?;
        let token = run.cancel_token();
        py_future(locals.event_loop(py), async move {
            let mut guard = CancelOnDrop(Some(token));
            let r = run.result().await;
            guard.0 = None;
            produce(move |py| result_dict(py, r.map_err(to_py_err)?))
        })
    }

    /// Start a turn and return its handle.
    #[pyo3(signature = (prompt, allow=None))]
    fn stream(
        &self,
        py: Python<'_>,
        prompt: String,
        allow: Option<Vec<String>>,
    ) -> PyResult<PyRun> {
        self.host.capture(py);
        let mut run = self.start(prompt, allow)?;
        let cancel = run.cancel_token();
        let (tx, rx) = unbounded_channel();
        let (result_tx, result_rx) = watch::channel(None);
        runtime().spawn(async move {
            while let Some(e) = run.next_event().await {
                let _ = tx.send(e);
            }
            drop(tx);
            let r = run.result().await.map_err(|e| e.to_string());
            let _ = result_tx.send(Some(Arc::new(r)));
        });
        Ok(PyRun {
            events: Arc::new(tokio::sync::Mutex::new(rx)),
            cancel,
            result: result_rx,
        })
    }

    /// Add a host tool `(spec, invoke, is_async)`, replacing one of the same name.
    fn register(&self, tool: &Bound<'_, PyAny>) -> PyResult<()> {
        let tool = tool_from_py(&self.host, tool)?;
        self.core()?.register(tool.clone()).map_err(to_py_err)?;
        let name = tool.spec().name;
        let mut tools = self.host_tools.lock().unwrap_or_else(|e| e.into_inner());
        tools.retain(|t| t.spec().name != name);
        tools.push(tool);
        Ok(())
    }

    /// Remove a tool; True when it was there.
    fn unregister(&self, name: &str) -> PyResult<bool> {
        self.host_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|t| t.spec().name != name);
        Ok(self.core()?.unregister(name))
    }

    /// The specs of every registered tool, as dicts.
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let specs = self.core()?.tools();
        PyList::new(
            py,
            specs
                .iter()
                .map(|s| ser_to_py(py, s))
                .collect::<PyResult<Vec<_>>>()?,
        )
    }

    /// The conversation as JSON text.
    fn transcript_json(&self) -> PyResult<String> {
        Ok(self.core()?.transcript().to_json())
    }

    /// Replace the conversation with one saved as JSON.
    fn set_transcript_json(&self, json: &str) -> PyResult<()> {
        let t = Transcript::from_json(json).map_err(to_py_err)?;
        self.core()?.set_transcript(t).map_err(to_py_err)
    }

    /// The models the configured server offers; an awaitable of a list of dicts.
    fn list_models<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "client.list_models()")?;
        let core = self.core()?;
        py_future(locals.event_loop(py), async move {
            let models = core.list_models().await;
            produce(move |py| Ok(ser_to_py(py, &models.map_err(to_py_err)?)?.unbind()))
        })
    }

    /// The config the client was built with, as a dict.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, self.core()?.config())
    }

    /// The ids of the background shells started so far (`shell_1`, ...); None when config
    /// `background` is off.
    fn background_shell_ids(&self) -> PyResult<Option<Vec<String>>> {
        Ok(self.core()?.background_shells().map(|s| s.ids()))
    }

    /// A background shell's status (`running`, `exited N`, `killed`); None for an unknown id
    /// or when config `background` is off.
    fn background_shell_status(&self, id: &str) -> PyResult<Option<String>> {
        Ok(self.core()?.background_shells().and_then(|s| s.status(id)))
    }

    /// Kill every background shell's process group (the client stays open).
    fn close_background_shells(&self) -> PyResult<()> {
        if let Some(shells) = self.core()?.background_shells() {
            shells.close_all();
        }
        Ok(())
    }

    /// Cancel every running turn, kill the background shells, and refuse new turns.
    fn close(&self) -> PyResult<()> {
        self.core()?.close();
        Ok(())
    }

    #[getter]
    fn closed(&self) -> PyResult<bool> {
        Ok(self.core()?.is_closed())
    }
}

type SharedResult = Option<Arc<Result<TurnResult, String>>>;

/// A running turn: its events, its cancel, its result.
#[pyclass(frozen, module = "contenox._native", name = "Run")]
pub struct PyRun {
    events: Arc<tokio::sync::Mutex<UnboundedReceiver<Event>>>,
    cancel: CancellationToken,
    result: watch::Receiver<SharedResult>,
}

fn events_list<'py>(py: Python<'py>, events: &[Event]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(
        py,
        events
            .iter()
            .map(|e| ser_to_py(py, e))
            .collect::<PyResult<Vec<_>>>()?,
    )
}

fn drain(rx: &mut UnboundedReceiver<Event>, out: &mut Vec<Event>) -> bool {
    use tokio::sync::mpsc::error::TryRecvError;
    loop {
        match rx.try_recv() {
            Ok(e) => out.push(e),
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Disconnected) => return true,
        }
    }
}

#[pymethods]
impl PyRun {
    /// The events available right now without waiting: a list (empty = the stream ended), or
    /// None when none is ready yet.
    fn try_batch<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Ok(mut rx) = self.events.try_lock() else {
            return Ok(None);
        };
        let mut out = Vec::new();
        let ended = drain(&mut rx, &mut out);
        if out.is_empty() && !ended {
            return Ok(None);
        }
        events_list(py, &out).map(Some)
    }

    /// An awaitable of the next events (at least one; an empty list once the stream ended).
    fn next_batch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "iterating a run")?;
        let events = self.events.clone();
        py_future(locals.event_loop(py), async move {
            let mut rx = events.lock().await;
            let mut out = Vec::new();
            if let Some(e) = rx.recv().await {
                out.push(e);
                drain(&mut rx, &mut out);
            }
            drop(rx);
            produce(move |py| Ok(events_list(py, &out)?.into_any().unbind()))
        })
    }

    /// Cancel the turn: it ends with outcome `cancelled` and a valid transcript.
    fn cancel(&self) {
        self.cancel.cancel();
    }

    /// True once the turn ended and its result is there.
    #[getter]
    fn done(&self) -> bool {
        self.result.borrow().is_some()
    }

    /// An awaitable of the result dict (may be awaited any number of times).
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "run.result()")?;
        let mut rx = self.result.clone();
        py_future(locals.event_loop(py), async move {
            let r = rx.wait_for(|r| r.is_some()).await.map(|r| r.clone());
            produce(move |py| match r {
                Ok(Some(r)) => match &*r {
                    Ok(t) => result_dict(py, t.clone()),
                    Err(e) => Err(to_py_err(contenox::Error::Transport(e.clone()))),
                },
                _ => Err(PyRuntimeError::new_err("the turn's task went away")),
            })
        })
    }
}

impl Drop for PyRun {
    fn drop(&mut self) {
        // Like the engine's Run: a handle dropped before its turn ended cancels the turn.
        if self.result.borrow().is_none() {
            self.cancel.cancel();
        }
    }
}

/// The models of the server a config points at; an awaitable of a list of dicts.
#[pyfunction]
pub fn list_models<'py>(py: Python<'py>, config_json: &str) -> PyResult<Bound<'py, PyAny>> {
    let config = Config::from_json(config_json).map_err(to_py_err)?;
    let locals = running_loop(py, "contenox.list_models()")?;
    py_future(locals.event_loop(py), async move {
        let models = contenox::list_models(&config).await;
        produce(move |py| Ok(ser_to_py(py, &models.map_err(to_py_err)?)?.unbind()))
    })
}
