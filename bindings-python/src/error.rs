//! `contenox::Error` as the exceptions of `contenox._errors` (ContenoxError and its subclasses),
//! each carrying the Rust cause chain.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(ERRORS
        .get_or_try_init(py, || py.import("contenox._errors").map(Bound::unbind))?
        .bind(py))
}

/// The messages of `e` and of each of its sources, outermost first.
fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        out.push(c.to_string());
        cur = c.source();
    }
    out
}

/// Raise an engine error as the matching `contenox` exception.
pub fn to_py_err(e: contenox::Error) -> PyErr {
    Python::attach(|py| build(py, &e).unwrap_or_else(|err| err))
}

fn build(py: Python<'_>, e: &contenox::Error) -> PyResult<PyErr> {
    let module = errors_module(py)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("causes", PyList::new(py, chain(e))?)?;
    let class = match e {
        contenox::Error::Config(_) => "ConfigurationError",
        contenox::Error::Tool(_) => "ToolDefinitionError",
        contenox::Error::Http {
            status,
            body,
            retry_after,
        } => {
            kwargs.set_item("status", *status)?;
            kwargs.set_item("body", body)?;
            kwargs.set_item("retry_after", retry_after.map(|d| d.as_secs_f64()))?;
            "HttpError"
        }
        contenox::Error::Transport(_) => "TransportError",
        contenox::Error::Cancelled => "CancelledError",
        contenox::Error::Serde(_) => "SerializationError",
        contenox::Error::Io(_) => "ContenoxIOError",
        _ => "ContenoxError",
    };
    let exc = module
        .getattr(class)?
        .call((e.to_string(),), Some(&kwargs))?;
    Ok(PyErr::from_value(exc))
}
