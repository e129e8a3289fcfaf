//! MCP servers as tool sources: `contenox.load_mcp(...)` -> `McpSource`, whose tools are engine
//! tools (`NativeTool`) that `client.register` takes as they are.

use std::sync::Arc;

use contenox::mcp::{load_mcp as core_load_mcp, McpConfig, McpSource, ServerState};
use contenox::Tool;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::client::running_loop;
use crate::convert::ser_to_py;
use crate::error::to_py_err;
use crate::runtime::{produce, py_future, with_python};

/// A tool that lives in the engine (an MCP server's tool, a resource tool).
#[pyclass(frozen, module = "contenox._native", name = "NativeTool")]
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

/// The servers of an MCP config, their tools and resource tools.
#[pyclass(frozen, module = "contenox._native", name = "McpSource")]
pub struct PyMcpSource {
    src: McpSource,
}

#[pymethods]
impl PyMcpSource {
    /// The tools of every server that came up.
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        native_tools(py, self.src.tools())
    }

    /// `list_mcp_resources` and `read_mcp_resource` over these servers.
    fn resource_tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        native_tools(py, self.src.resource_tools())
    }

    /// `[[name, {"state": "ready", "tools": n} | {"state": "failed", "error": ...}], ...]`.
    fn servers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.src.servers())
    }

    /// Stop the servers; an awaitable.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "McpSource.close()")?;
        let src = self.src.clone();
        py_future(locals.event_loop(py), async move {
            src.close().await;
            produce(|py| Ok(py.None()))
        })
    }

    #[getter]
    fn closed(&self) -> bool {
        self.src.is_closed()
    }
}

/// Start the servers of an `mcpServers` config (JSON text); an awaitable of an `McpSource`.
/// `on_server(name, state)` is called on the caller's loop as each server settles.
#[pyfunction]
#[pyo3(signature = (config_json, on_server=None))]
pub fn load_mcp<'py>(
    py: Python<'py>,
    config_json: &str,
    on_server: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = McpConfig::from_json(config_json).map_err(to_py_err)?;
    let locals = running_loop(py, "contenox.load_mcp()")?;
    let event_loop = locals.event_loop(py).unbind();
    py_future(locals.event_loop(py), async move {
        let report = move |name: &str, state: &ServerState| {
            let Some(f) = &on_server else { return };
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
        };
        let src = core_load_mcp(config, report).await;
        produce(move |py| Ok(Py::new(py, PyMcpSource { src })?.into_any()))
    })
}
