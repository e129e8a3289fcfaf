//! MCP servers as tool sources: `contenox.load_mcp(...)` -> `McpSource`, whose tools are engine
//! tools (`NativeTool`) that `client.register` takes as they are.

use std::sync::Arc;

use contenox::mcp::{load_mcp as core_load_mcp, McpConfig, McpSource};
use contenox::ToolSource;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::client::PyClient;
use crate::error::to_py_err;
use crate::runtime::{produce, py_future, running_loop};
use crate::source::{self, native_tools, reporter};

/// The servers of an MCP config, their tools and resource tools.
#[pyclass(frozen, module = "contenox._native", name = "McpSource")]
pub struct PyMcpSource {
    mcp: McpSource,
    source: Arc<dyn ToolSource>,
}

#[pymethods]
impl PyMcpSource {
    /// The tools of every server that came up.
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        native_tools(py, self.source.tools())
    }

    /// `list_mcp_resources` and `read_mcp_resource` over these servers.
    fn resource_tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        native_tools(py, self.mcp.resource_tools())
    }

    /// `[[name, {"state": "ready", "tools": n} | {"state": "failed", "error": ...}], ...]`.
    fn servers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        source::states(py, &*self.source)
    }

    /// Register every tool into the client, follow `tools/list_changed`, stop with the client.
    fn register_into(&self, client: &PyClient) -> PyResult<()> {
        client.add_source(self.source.clone())
    }

    /// Stop the servers; an awaitable.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        source::close(py, self.source.clone(), "McpSource.close()")
    }

    #[getter]
    fn closed(&self) -> bool {
        self.source.is_closed()
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
    let report = reporter(locals.event_loop(py).unbind(), on_server);
    py_future(locals.event_loop(py), async move {
        let mcp = core_load_mcp(config, report).await;
        let source = mcp.source();
        produce(move |py| Ok(Py::new(py, PyMcpSource { mcp, source })?.into_any()))
    })
}
