//! contenox-python: the Python binding of the contenox engine, built by maturin into the
//! package `contenox` as its native module `contenox._native`. Thin by design: kwargs arrive as
//! a config JSON (core reads and checks it), host callables become the engine's `Tool`, `Hooks`,
//! `WaitFor` and `WebSearchProvider` ([`host`]), events and results leave as plain dicts that
//! `contenox/_types.py` and `events.py` type, and each `contenox::Error` kind becomes its
//! `contenox.ContenoxError` subclass ([`error`]).

mod blocking;
mod bridge;
mod client;
mod completer;
mod convert;
mod error;
mod hooks;
mod host;
mod mcp_auth;
mod prompt;
mod quiet;
mod run;
mod runtime;
mod shells;
mod source;
mod step;
mod telemetry;
mod transcript;

use pyo3::prelude::*;

/// The pid that built the tokio runtime in use (0 before the first use): after a fork, the
/// child's first use builds its own.
#[pyfunction]
fn runtime_pid() -> u32 {
    runtime::runtime_pid()
}

/// Make sure the runtime of this process exists; returns the pid that built it.
#[pyfunction]
fn ensure_runtime() -> u32 {
    let _ = runtime::runtime();
    runtime::runtime_pid()
}

/// The version of the engine crate this binding was built with.
#[pyfunction]
fn engine_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<client::PyClient>()?;
    m.add_class::<run::PyRun>()?;
    m.add_class::<step::PyStepper>()?;
    m.add_class::<shells::PyBackgroundShells>()?;
    m.add_class::<transcript::PyTranscript>()?;
    m.add_class::<host::CancelSignal>()?;
    m.add_class::<host::PyToolContext>()?;
    m.add_class::<host::Done>()?;
    m.add_class::<runtime::OnDone>()?;
    m.add_class::<completer::Completer>()?;
    m.add_function(wrap_pyfunction!(runtime::shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(client::list_models, m)?)?;
    m.add_function(wrap_pyfunction!(client::policy_preset, m)?)?;
    m.add_class::<source::PyNativeTool>()?;
    m.add_class::<source::PySource>()?;
    m.add_function(wrap_pyfunction!(source::load_source, m)?)?;
    m.add_function(wrap_pyfunction!(runtime_pid, m)?)?;
    m.add_function(wrap_pyfunction!(ensure_runtime, m)?)?;
    m.add_function(wrap_pyfunction!(engine_version, m)?)?;
    Ok(())
}
