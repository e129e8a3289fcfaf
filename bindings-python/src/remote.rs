//! HTTP services as tool sources: `contenox.load_remote(hooks, on_hook=...)` -> `RemoteSource`,
//! whose tools are engine tools (`NativeTool`) and whose `register_into` keeps a client's tools
//! in step with the hooks (probed before each turn, replaced on refresh).

use std::sync::Arc;

use contenox::remote::{load_remote as core_load_remote, RemoteHook};
use contenox::ToolSource;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::client::PyClient;
use crate::error::to_py_err;
use crate::runtime::{produce, py_future, running_loop};
use crate::source::{self, native_tools, reporter};

/// The hooks of one `load_remote`, their states and tools.
#[pyclass(frozen, module = "contenox._native", name = "RemoteSource")]
pub struct PyRemoteSource {
    source: Arc<dyn ToolSource>,
}

#[pymethods]
impl PyRemoteSource {
    /// Every tool of every ready hook, as they are now.
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        native_tools(py, self.source.tools())
    }

    /// `[[name, {"state": "ready", "tools": n} | {"state": "unavailable", "error": ...}], ...]`
    /// in the order given.
    fn hooks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        source::states(py, &*self.source)
    }

    /// Read every hook again; an awaitable of the states (as `hooks()`).
    fn refresh<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        source::refresh(py, self.source.clone(), "RemoteSource.refresh()")
    }

    /// Register every tool into the client, probe unavailable hooks before its turns, follow
    /// refreshes.
    fn register_into(&self, client: &PyClient) -> PyResult<()> {
        client.add_source(self.source.clone())
    }

    /// Remove the tools from the clients and make calls error; an awaitable.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        source::close(py, self.source.clone(), "RemoteSource.close()")
    }

    #[getter]
    fn closed(&self) -> bool {
        self.source.is_closed()
    }
}

/// Read the hooks (a JSON array of hook objects) and each one's tools; an awaitable of a
/// `RemoteSource`. `on_hook(name, state)` is called on the caller's loop as each hook settles.
/// Invalid hooks raise `ConfigurationError` now, before anything is fetched.
#[pyfunction]
#[pyo3(signature = (hooks_json, on_hook=None))]
pub fn load_remote<'py>(
    py: Python<'py>,
    hooks_json: &str,
    on_hook: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let value: serde_json::Value = serde_json::from_str(hooks_json)
        .map_err(|e| to_py_err(contenox::Error::config(format!("remote hooks: {e}"))))?;
    let hooks = RemoteHook::list_from_value(value).map_err(to_py_err)?;
    let locals = running_loop(py, "contenox.load_remote()")?;
    let report = reporter(locals.event_loop(py).unbind(), on_hook);
    py_future(locals.event_loop(py), async move {
        let result = core_load_remote(hooks, report).await;
        produce(move |py| {
            let source = result.map_err(to_py_err)?.source();
            Ok(Py::new(py, PyRemoteSource { source })?.into_any())
        })
    })
}
