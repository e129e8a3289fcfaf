//! The `Run` class of `contenox._native` (wrapped by `contenox._client.Run`): the engine's run
//! handle, whose events come in batches and whose result any number of callers may await.

use std::sync::Arc;

use contenox::TurnResult;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::ser_to_py;
use crate::error::to_py_err;
use crate::runtime::running_loop;
use crate::runtime::{produce, py_future};
use crate::transcript::PyTranscript;

/// A finished turn as a dict: outcome, final_text, usage, error and the transcript as a native
/// [`PyTranscript`] (written as JSON, and parsed by the Python layer, only when it is read).
pub(crate) fn result_dict(py: Python<'_>, r: TurnResult) -> PyResult<Py<PyAny>> {
    let d = PyDict::new(py);
    d.set_item("outcome", r.outcome.as_str())?;
    d.set_item("final_text", r.final_text)?;
    d.set_item("usage", ser_to_py(py, &r.usage)?)?;
    d.set_item("error", r.error)?;
    d.set_item("stop_reason", r.stop_reason.map(|s| s.as_str()))?;
    // The answer parsed as JSON (a turn with an output_schema), as Python values.
    let output = match &r.output {
        Some(v) => Some(ser_to_py(py, v)?),
        None => None,
    };
    d.set_item("output", output)?;
    d.set_item(
        "transcript",
        Py::new(py, PyTranscript::compact(r.transcript))?,
    )?;
    // A suspended turn's checkpoint (JSON text) and pending requests (dicts).
    d.set_item("checkpoint", r.checkpoint)?;
    d.set_item("pending", ser_to_py(py, &r.pending)?)?;
    Ok(d.into_any().unbind())
}

/// A running turn: its events, its cancel, its result. Dropped before its turn ended, it cancels
/// the turn (the engine's rule).
#[pyclass(frozen, module = "contenox._native", name = "Run")]
pub struct PyRun {
    run: Arc<contenox::Run>,
}

impl PyRun {
    pub(crate) fn new(run: contenox::Run) -> Self {
        PyRun { run: Arc::new(run) }
    }
}

#[pymethods]
impl PyRun {
    /// The events available right now without waiting: a list (empty = the stream ended), or
    /// None when none is ready yet.
    fn try_batch<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.run.try_batch().map(|b| ser_to_py(py, &b)).transpose()
    }

    /// An awaitable of the next events (at least one; an empty list once the stream ended).
    fn next_batch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "iterating a run")?;
        let run = self.run.clone();
        py_future(locals.event_loop(py), async move {
            let batch = run.next_batch().await;
            produce(move |py| Ok(ser_to_py(py, &batch)?.unbind()))
        })
    }

    /// Cancel the turn: it ends with outcome `cancelled` and a valid transcript.
    fn cancel(&self) {
        self.run.cancel();
    }

    /// True once the turn ended and its result is there.
    #[getter]
    fn done(&self) -> bool {
        self.run.is_finished()
    }

    /// An awaitable of the result dict (may be awaited any number of times).
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "run.result()")?;
        let run = self.run.clone();
        py_future(locals.event_loop(py), async move {
            let r = run.result().await;
            produce(move |py| result_dict(py, r.map_err(to_py_err)?))
        })
    }
}
