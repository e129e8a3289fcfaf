//! `load_mcp(..., auth=...)`: the host's OAuth part for MCP servers (core's `McpAuth`): its
//! redirect URI, the browser step and the token store, each a Python callable (sync or async)
//! run on the loop `load_mcp` was awaited on.

use std::sync::Arc;

use async_trait::async_trait;
use contenox::{HostError, McpAuth};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3_async_runtimes::TaskLocals;

use crate::host::{Callback, Host, SharedHost};

/// A callable and whether it is `async`.
pub type PyCallable = (Py<PyAny>, bool);

/// The Python side's `(redirect_uri, authorize, load, save)`.
pub type PyAuthParts = (String, PyCallable, PyCallable, PyCallable);

/// Core's `McpAuth` over Python callables.
pub struct PyMcpAuth {
    redirect_uri: String,
    authorize: Callback,
    load: Callback,
    save: Callback,
    host: SharedHost,
}

impl PyMcpAuth {
    /// From the parts `_mcp.py` passes, calling back on the loop of `locals`.
    pub fn shared(py: Python<'_>, parts: PyAuthParts, locals: &TaskLocals) -> Arc<dyn McpAuth> {
        let (redirect_uri, (authorize, a1), (load, a2), (save, a3)) = parts;
        let host = Arc::new(Host::default());
        host.set_running(locals);
        for is_async in [a1, a2, a3] {
            host.note(is_async);
        }
        Arc::new(PyMcpAuth {
            redirect_uri,
            authorize: Callback::from_py(authorize.bind(py), a1),
            load: Callback::from_py(load.bind(py), a2),
            save: Callback::from_py(save.bind(py), a3),
            host,
        })
    }
}

#[async_trait]
impl McpAuth for PyMcpAuth {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    async fn authorize(&self, server: &str, url: &str) -> Result<String, HostError> {
        let (server, url) = (server.to_string(), url.to_string());
        self.host
            .call(
                "auth.authorize",
                &self.authorize,
                move |py| PyTuple::new(py, [server, url]),
                |_py, v| v.extract::<String>(),
            )
            .await
    }

    async fn load(&self, key: &str) -> Result<Option<String>, HostError> {
        let key = key.to_string();
        self.host
            .call(
                "auth.load",
                &self.load,
                move |py| PyTuple::new(py, [key]),
                |_py, v| v.extract::<Option<String>>(),
            )
            .await
    }

    async fn save(&self, key: &str, value: &str) -> Result<(), HostError> {
        let (key, value) = (key.to_string(), value.to_string());
        self.host
            .call(
                "auth.save",
                &self.save,
                move |py| PyTuple::new(py, [key, value]),
                |_py, _v| Ok(()),
            )
            .await
    }
}
