//! The one conversion of the engine's error kinds to this binding's exceptions (the classes of
//! `contenox._errors`), with the engine's cause chain as `__cause__`: an I/O error below the
//! engine becomes the matching `OSError` subclass (`ConnectionRefusedError`, ...), any other
//! link a `contenox.ContenoxCause`.

use contenox::ErrorKind;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(ERRORS
        .get_or_try_init(py, || py.import("contenox._errors").map(Bound::unbind))?
        .bind(py))
}

/// Raise an engine error as the matching `contenox` exception.
pub fn to_py_err(e: contenox::Error) -> PyErr {
    Python::attach(|py| build(py, &e).unwrap_or_else(|err| err))
}

fn build(py: Python<'_>, e: &contenox::Error) -> PyResult<PyErr> {
    use contenox::Error as E;
    let module = errors_module(py)?;
    let kwargs = PyDict::new(py);
    let sources: Vec<&(dyn std::error::Error + 'static)> =
        std::iter::successors(std::error::Error::source(e), |c| c.source()).collect();
    let mut causes = vec![e.to_string()];
    causes.extend(sources.iter().map(|c| c.to_string()));
    kwargs.set_item("causes", PyList::new(py, causes)?)?;
    match e {
        E::Config(c) => {
            kwargs.set_item("option", &c.option)?;
            kwargs.set_item("value", &c.value)?;
            kwargs.set_item("reason", &c.reason)?;
        }
        E::Http {
            status,
            body,
            retry_after,
        } => {
            kwargs.set_item("status", *status)?;
            kwargs.set_item("body", body)?;
            kwargs.set_item("retry_after", retry_after.map(|d| d.as_secs_f64()))?;
        }
        _ => {}
    }
    let class = class_of(e.kind());
    let exc = PyErr::from_value(
        module
            .getattr(class)?
            .call((e.to_string(),), Some(&kwargs))?,
    );
    exc.set_cause(py, cause_chain(py, module, &sources)?);
    Ok(exc)
}

/// A stepped turn's refused result (or failed turn task) as `contenox.StepError`.
pub fn step_error(e: contenox::step::StepError) -> PyErr {
    Python::attach(|py| {
        let build = || -> PyResult<PyErr> {
            let class = errors_module(py)?.getattr("StepError")?;
            Ok(PyErr::from_value(class.call1((e.to_string(),))?))
        };
        build().unwrap_or_else(|err| err)
    })
}

/// The `contenox._errors` class of each engine error kind: the one table of this binding.
fn class_of(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Config => "ConfigurationError",
        ErrorKind::Tool => "ToolDefinitionError",
        ErrorKind::Closed => "ClosedError",
        ErrorKind::Busy => "BusyError",
        ErrorKind::Transcript => "TranscriptError",
        ErrorKind::Http => "HttpError",
        ErrorKind::Transport => "TransportError",
        ErrorKind::Internal => "InternalError",
        ErrorKind::Compaction => "CompactionError",
        ErrorKind::Serialization => "SerializationError",
        ErrorKind::Io => "ContenoxIOError",
        ErrorKind::Checkpoint => "CheckpointError",
        _ => "ContenoxError",
    }
}

/// The sources as linked exceptions, outermost first (`None` when there are none).
fn cause_chain(
    py: Python<'_>,
    module: &Bound<'_, PyModule>,
    sources: &[&(dyn std::error::Error + 'static)],
) -> PyResult<Option<PyErr>> {
    let mut inner: Option<PyErr> = None;
    for source in sources.iter().rev() {
        let link = match source.downcast_ref::<std::io::Error>() {
            Some(io) => PyErr::from(std::io::Error::new(io.kind(), io.to_string())),
            None => PyErr::from_value(
                module
                    .getattr("ContenoxCause")?
                    .call1((source.to_string(),))?,
            ),
        };
        link.set_cause(py, inner.take());
        inner = Some(link);
    }
    Ok(inner)
}
