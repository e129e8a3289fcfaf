//! What the MCP and remote sources share: the engine tool they hand out ([`PyNativeTool`]), the
//! `on_server` / `on_hook` report of their loaders, and the methods every
//! [`contenox::ToolSource`] has (tools, states, refresh, close).

use std::sync::Arc;

use contenox::{Tool, ToolSource};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde::Serialize;

use crate::convert::ser_to_py;
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
pub(crate) fn native_tools<'py>(
    py: Python<'py>,
    tools: Vec<Arc<dyn Tool>>,
) -> PyResult<Bound<'py, PyList>> {
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
pub(crate) fn reporter<S: Serialize>(
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

/// The members and their states: `[[name, {"state": ..., ...}], ...]`.
pub(crate) fn states<'py>(py: Python<'py>, source: &dyn ToolSource) -> PyResult<Bound<'py, PyAny>> {
    ser_to_py(py, &source.states())
}

/// Read the members again; an awaitable of the states (as [`states`]).
pub(crate) fn refresh<'py>(
    py: Python<'py>,
    source: Arc<dyn ToolSource>,
    what: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let locals = running_loop(py, what)?;
    py_future(locals.event_loop(py), async move {
        let states = source.refresh().await;
        produce(move |py| Ok(ser_to_py(py, &states)?.unbind()))
    })
}

/// Close the source; an awaitable.
pub(crate) fn close<'py>(
    py: Python<'py>,
    source: Arc<dyn ToolSource>,
    what: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let locals = running_loop(py, what)?;
    py_future(locals.event_loop(py), async move {
        source.close().await;
        produce(|py| Ok(py.None()))
    })
}
