//! The `Stepper` class of `contenox._native` (wrapped by `contenox._step.Stepper`): a turn
//! stepped by its host (the engine's `contenox::step`). Actions and results cross as dicts /
//! JSON text; the `done` action's result is the same dict `run` resolves with.

use std::sync::Arc;

use contenox::step::{Action, ActionResult, Stepper};
use contenox::CancellationToken;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::blocking;
use crate::convert::ser_to_py;
use crate::error::step_error;
use crate::run::result_dict;
use crate::runtime::{produce, py_future, running_loop};

/// A stepped turn. Dropped before its turn ended, it cancels the turn (its `Run` does).
#[pyclass(frozen, module = "contenox._native", name = "Stepper")]
pub struct PyStepper {
    stepper: Arc<Stepper>,
}

impl PyStepper {
    pub(crate) fn new(stepper: Stepper) -> Self {
        PyStepper {
            stepper: Arc::new(stepper),
        }
    }
}

/// An action as a dict: `done`'s result as `run`'s result dict.
fn action_dict(py: Python<'_>, action: Action) -> PyResult<Py<PyAny>> {
    match action {
        Action::Done { result } => {
            let d = PyDict::new(py);
            d.set_item("kind", "done")?;
            d.set_item("result", result_dict(py, *result)?)?;
            Ok(d.into_any().unbind())
        }
        other => Ok(ser_to_py(py, &other)?.unbind()),
    }
}

#[pymethods]
impl PyStepper {
    /// An awaitable of the next action (the one waiting, if any).
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "stepper.next()")?;
        let stepper = self.stepper.clone();
        py_future(locals.event_loop(py), async move {
            let action = stepper.next().await;
            produce(move |py| action_dict(py, action.map_err(step_error)?))
        })
    }

    /// `next` blocking, without the GIL and without an event loop.
    fn next_blocking(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let stepper = self.stepper.clone();
        let cancel = self.cancel_token();
        let action = blocking::wait(py, async move { stepper.next().await }, &cancel)?;
        action_dict(py, action.map_err(step_error)?)
    }

    /// Give the waiting action its result (JSON text of a result dict); raises `StepError`
    /// when it does not fit, changing nothing.
    fn feed(&self, result_json: &str) -> PyResult<()> {
        let result: ActionResult = serde_json::from_str(result_json).map_err(|e| {
            step_error(contenox::step::StepError(format!(
                "not an action result: {e}"
            )))
        })?;
        self.stepper.feed(result).map_err(step_error)
    }

    /// An awaitable of the waiting action's result, its I/O done now by the engine.
    fn perform<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let locals = running_loop(py, "stepper.perform()")?;
        let stepper = self.stepper.clone();
        py_future(locals.event_loop(py), async move {
            let result = stepper.perform().await;
            produce(move |py| Ok(ser_to_py(py, &result.map_err(step_error)?)?.unbind()))
        })
    }

    /// `perform` blocking, without the GIL and without an event loop.
    fn perform_blocking(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let stepper = self.stepper.clone();
        let cancel = self.cancel_token();
        let result = blocking::wait(py, async move { stepper.perform().await }, &cancel)?;
        Ok(ser_to_py(py, &result.map_err(step_error)?)?.unbind())
    }

    /// Every result given so far, in order (a list of result dicts).
    fn journal<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.stepper.journal())
    }

    /// The start state a replay gives again: `{"turn_id": ..., "clock_ms": ...}`.
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.stepper.options())
    }

    /// The turn's id.
    #[getter]
    fn turn_id(&self) -> String {
        self.stepper.turn_id().to_string()
    }

    /// The events emitted so far and not yet taken (a list of event dicts).
    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        ser_to_py(py, &self.stepper.events())
    }

    /// Cancel the turn: `next()` then gives `done` with outcome `cancelled`.
    fn cancel(&self) {
        self.stepper.cancel();
    }
}

impl PyStepper {
    /// Ctrl-C in a blocking call cancels the turn.
    fn cancel_token(&self) -> CancellationToken {
        self.stepper.run().cancel_token()
    }
}
