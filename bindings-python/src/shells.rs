//! Background shells as Python holds them: made by the host (`contenox.BackgroundShells()`) and
//! given to clients, or a client's own (config `background=True`). Both are core's
//! [`contenox::BackgroundShells`], a shared handle.

use contenox::BackgroundShells;
use pyo3::prelude::*;

/// The shells `bash` with `run_in_background` started (`contenox._native.BackgroundShells`).
#[pyclass(name = "BackgroundShells", module = "contenox._native", frozen)]
#[derive(Clone)]
pub struct PyBackgroundShells {
    pub(crate) inner: BackgroundShells,
}

impl PyBackgroundShells {
    pub(crate) fn of(inner: BackgroundShells) -> Self {
        PyBackgroundShells { inner }
    }
}

#[pymethods]
impl PyBackgroundShells {
    /// No shells yet; give it to `create_client(background=...)`.
    #[new]
    fn new() -> Self {
        PyBackgroundShells::of(BackgroundShells::new())
    }

    /// The ids of every shell started so far (`shell_1`, ...).
    fn ids(&self) -> Vec<String> {
        self.inner.ids()
    }

    /// A shell's status (`running`, `exited N`, `killed`); None for an unknown id.
    fn status(&self, id: &str) -> Option<String> {
        self.inner.status(id)
    }

    /// Kill every running shell's process group.
    fn close_all(&self) {
        self.inner.close_all()
    }
}
