//! `contenox._bridge`, the Python half of the translation (typed objects, return values,
//! completing asyncio futures), imported once per interpreter.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static BRIDGE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// `contenox._bridge`: the Python half of the translation (typed objects, return values).
pub fn bridge(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(BRIDGE
        .get_or_try_init(py, || py.import("contenox._bridge").map(Bound::unbind))?
        .bind(py))
}
