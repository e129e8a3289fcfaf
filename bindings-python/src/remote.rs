//! HTTP services as tool sources: `contenox.load_remote(hooks, on_hook=...)` -> `RemoteSource`,
//! whose tools are engine tools (`NativeTool`) and whose `register_into` keeps a client's tools
//! in step with the hooks (probed before each turn, replaced on refresh).

use contenox::remote::{load_remote as core_load_remote, HookState, RemoteHook, RemoteSource};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::client::{running_loop, PyClient};
use crate::convert::ser_to_py;
use crate::error::to_py_err;
use crate::mcp::native_tools;
use crate::runtime::{produce, py_future, with_python};

/// The hooks of one `load_remote`, their states and tools.
#[pyclass(frozen, module = "contenox._native", name = "RemoteSource")]
pub struct PyRemoteSource {
    pub src: RemoteSource,
}

#[pymethods]
impl PyRemoteSource {
    /// Every tool of every ready hook, as they are now.
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        native_tools(py, self.src.tools())
    }

    /// `[[name, {"state": "ready", "tools": n} | {"state": "unavailable", "error": ...}], ...]`
    /// in the order given.
    fn hooks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.src.hooks())
    }

    /// Read every hook again; an awaitable of the states (as `hooks()`).
    fn refresh<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "RemoteSource.refresh()")?;
        let src = self.src.clone();
        py_future(locals.event_loop(py), async move {
            let states = src.refresh().await;
            produce(move |py| Ok(ser_to_py(py, &states)?.unbind()))
        })
    }

    /// Register every tool into the client, probe unavailable hooks before its turns, follow
    /// refreshes.
    fn register_into(&self, client: &PyClient) -> PyResult<()> {
        client.add_remote(&self.src)
    }

    /// Remove the tools from the clients and make calls error; an awaitable.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "RemoteSource.close()")?;
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
    let event_loop = locals.event_loop(py).unbind();
    py_future(locals.event_loop(py), async move {
        let report = move |name: &str, state: &HookState| {
            let Some(f) = &on_hook else { return };
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
        let result = core_load_remote(hooks, report).await;
        produce(move |py| {
            let src = result.map_err(to_py_err)?;
            Ok(Py::new(py, PyRemoteSource { src })?.into_any())
        })
    })
}
