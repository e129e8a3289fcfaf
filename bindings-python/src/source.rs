//! Tool sources, MCP servers and remote hooks alike: the one loader (`load_source(kind, json,
//! on_member)`), the one native source it returns ([`PySource`]: tools, states, refresh, close,
//! the MCP resource tools) and the engine tool a source hands out ([`PyNativeTool`]). The
//! Python layer gives each kind its own class (`McpSource`, `RemoteSource`, `_source.py`); the
//! engine reads the config by kind and starts the source (`contenox::load_source`).

use std::sync::Arc;

use contenox::{LoadedSource, SourceConfig, Tool, ToolSource};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde::Serialize;

use crate::convert::ser_to_py;
use crate::error::to_py_err;
use crate::mcp_auth::{PyAuthParts, PyMcpAuth};
use crate::runtime::{produce, py_future, running_loop, with_python};

/// A tool that lives in the engine (an MCP server's tool, a resource tool, a remote hook's tool,
/// a subagent).
#[pyclass(frozen, module = "contenox._native", name = "SourceTool")]
pub struct PyNativeTool {
    pub tool: Arc<dyn Tool>,
    /// A subagent's: the host of its client (async callbacks there run on the caller's loop).
    pub host: Option<crate::host::SharedHost>,
}

#[pymethods]
impl PyNativeTool {
    /// The tool's name (MCP tools: `<server>__<tool>`).
    #[getter]
    fn name(&self) -> String {
        self.tool.spec().name
    }

    /// Where it comes from: `mcp`, `builtin`, ...
    #[getter]
    fn source(&self) -> &'static str {
        self.tool.source().as_str()
    }

    /// The server it belongs to, if any.
    #[getter]
    fn server(&self) -> Option<String> {
        self.tool.server()
    }

    /// Its ToolSpec as a dict.
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.tool.spec())
    }

    fn __repr__(&self) -> String {
        format!(
            "<NativeTool {} source={}>",
            self.tool.spec().name,
            self.tool.source().as_str()
        )
    }
}

/// Engine tools as a list of `NativeTool`s.
fn native_tools<'py>(py: Python<'py>, tools: Vec<Arc<dyn Tool>>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(
        py,
        tools
            .into_iter()
            .map(|tool| Py::new(py, PyNativeTool { tool, host: None }))
            .collect::<PyResult<Vec<_>>>()?,
    )
}

/// A loader's `on_server` / `on_hook(name, state)`, called on the caller's loop as each member
/// settles (a callback that raises is printed; the load goes on).
fn reporter<S: Serialize>(
    event_loop: Py<PyAny>,
    on_member: Option<Py<PyAny>>,
) -> impl Fn(&str, &S) + Send + Sync {
    move |name: &str, state: &S| {
        let Some(f) = &on_member else { return };
        with_python(|py| {
            let call = ser_to_py(py, state).and_then(|state| {
                event_loop
                    .bind(py)
                    .call_method1("call_soon_threadsafe", (f, name, state))
            });
            if let Err(e) = call {
                e.print(py);
            }
        });
    }
}

/// The name of a kind's class and loader in Python (for messages).
fn named(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "mcp" => ("McpSource", "contenox.load_mcp()"),
        _ => ("RemoteSource", "contenox.load_remote()"),
    }
}

/// Start a tool source, `kind` `"mcp"` (`json`: an `mcpServers` config) or `"remote"` (`json`:
/// the hooks, a JSON array); an awaitable of a `ToolSource`. `on_member(name, state)` is called
/// on the caller's loop as each server or hook settles. A bad config raises
/// `ConfigurationError` now, before anything starts.
#[pyfunction]
#[pyo3(signature = (kind, json, on_member=None, auth=None))]
pub fn load_source<'py>(
    py: Python<'py>,
    kind: &str,
    json: &str,
    on_member: Option<Py<PyAny>>,
    auth: Option<PyAuthParts>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = SourceConfig::from_json(kind, json).map_err(to_py_err)?;
    let (class, what) = named(kind);
    let locals = running_loop(py, what)?;
    let report = reporter(locals.event_loop(py).unbind(), on_member);
    let auth = auth.map(|parts| PyMcpAuth::shared(py, parts, &locals));
    py_future(locals.event_loop(py), async move {
        let loaded = contenox::load_source_with(config, auth, report).await;
        produce(move |py| {
            let LoadedSource {
                source,
                resource_tools,
            } = loaded.map_err(to_py_err)?;
            let source = PySource {
                class,
                source,
                resource_tools,
            };
            Ok(Py::new(py, source)?.into_any())
        })
    })
}

/// A started tool source: an MCP config's servers or a set of remote hooks.
#[pyclass(frozen, module = "contenox._native", name = "ToolSource")]
pub struct PySource {
    /// `McpSource` or `RemoteSource` (for messages).
    class: &'static str,
    source: Arc<dyn ToolSource>,
    /// MCP's `list_mcp_resources` and `read_mcp_resource` (none for remote hooks).
    resource_tools: Vec<Arc<dyn Tool>>,
}

impl PySource {
    /// The engine's source (`Client.add_source` adds it to a client).
    pub(crate) fn core(&self) -> Arc<dyn ToolSource> {
        self.source.clone()
    }
}

#[pymethods]
impl PySource {
    /// Every tool of every ready member, as they are now.
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        native_tools(py, self.source.tools())
    }

    /// The MCP resource tools (empty for remote hooks).
    fn resource_tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        native_tools(py, self.resource_tools.clone())
    }

    /// `[[name, {"state": "ready", "tools": n} | {"state": ..., "error": ...}], ...]`, in the
    /// source's order.
    fn states<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.source.states())
    }

    /// Read the members again where the source can (remote hooks); an awaitable of the states
    /// (as `states()`).
    fn refresh<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, &format!("{}.refresh()", self.class))?;
        let source = self.source.clone();
        py_future(locals.event_loop(py), async move {
            let states = source.refresh().await;
            produce(move |py| Ok(ser_to_py(py, &states)?.unbind()))
        })
    }

    /// Stop the source and remove its tools from the clients; an awaitable.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, &format!("{}.close()", self.class))?;
        let source = self.source.clone();
        py_future(locals.event_loop(py), async move {
            source.close().await;
            produce(|py| Ok(py.None()))
        })
    }

    /// Whether `close()` was called (or the source closed itself).
    #[getter]
    fn closed(&self) -> bool {
        self.source.is_closed()
    }
}
