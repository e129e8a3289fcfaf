//! Python callables as the engine's extension points: [`PyTool`] (`Tool`), [`PyHooks`]
//! (`Hooks`), [`PyWaitFor`] (`WaitFor`) and [`PyWebSearch`] (`WebSearchProvider`). They
//! translate arguments and return values; the engine decides everything else.

use std::sync::Arc;

use contenox::{
    async_trait, Answer, CancellationToken, Decision, Hooks, HostError, PendingRequest,
    SearchRequest, SearchResult, Tool, ToolCallEvent, ToolContext, ToolError, ToolOutput, ToolSpec,
    WaitFor, WebSearchProvider,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use serde_json::Value;

use crate::callback::{bridge, Callback, CancelSignal, PyToolContext, SharedHost};
use crate::convert::{from_py, ser_to_py, to_py, to_value};

/// A tool result from whatever a Python tool or after_tool returned: a `contenox.ToolOutput`,
/// or any JSON value (a str is sent as is, anything else as compact JSON).
fn output_from_py(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<ToolOutput> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(ToolOutput::text(s.to_str()?));
    }
    let wire = bridge(py)?.call_method1("output_wire", (v,))?;
    from_py(&wire)
}

/// A host tool: a spec and a Python callable `invoke(arguments, ctx)`.
pub struct PyTool {
    pub spec: ToolSpec,
    pub cb: Callback,
    pub host: SharedHost,
}

#[async_trait]
impl Tool for PyTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let what = format!("tool {}", self.spec.name);
        self.host
            .call(
                &what,
                &self.cb,
                move |py| {
                    let cancel = Py::new(
                        py,
                        CancelSignal {
                            token: ctx.cancel.clone(),
                        },
                    )?;
                    let ctx = Py::new(py, PyToolContext { ctx, cancel })?;
                    PyTuple::new(py, [to_py(py, &args)?, ctx.into_bound(py).into_any()])
                },
                |py, v| output_from_py(py, &v),
            )
            .await
    }
}

/// `hooks={"before_tool": fn, "after_tool": fn}`.
pub struct PyHooks {
    pub before: Option<Callback>,
    pub after: Option<Callback>,
    pub host: SharedHost,
}

fn call_event<'py>(py: Python<'py>, call: &ToolCallEvent) -> PyResult<Bound<'py, PyAny>> {
    bridge(py)?.call_method1("tool_call_event", (ser_to_py(py, call)?,))
}

#[async_trait]
impl Hooks for PyHooks {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        let Some(cb) = &self.before else {
            return Ok(Decision::Allow);
        };
        let call = call.clone();
        self.host
            .call(
                "before_tool",
                cb,
                move |py| PyTuple::new(py, [call_event(py, &call)?]),
                |py, v| {
                    if v.is_none() {
                        return Ok(Decision::Allow);
                    }
                    // ("deny", message|None) or ("ask", request dict); a TypeError otherwise.
                    let wire = bridge(py)?.call_method1("decision_wire", (v,))?;
                    let (kind, payload): (String, Bound<'_, PyAny>) = wire.extract()?;
                    match kind.as_str() {
                        "allow" => Ok(Decision::Allow),
                        "deny" => Ok(Decision::Deny(payload.extract()?)),
                        "ask" => Ok(Decision::Ask(from_py::<PendingRequest>(&payload)?)),
                        other => Err(PyTypeError::new_err(format!("unknown decision {other}"))),
                    }
                },
            )
            .await
    }

    async fn after_tool(
        &self,
        call: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<Option<ToolOutput>, HostError> {
        let Some(cb) = &self.after else {
            return Ok(None);
        };
        let (call, result) = (call.clone(), result.clone());
        self.host
            .call(
                "after_tool",
                cb,
                move |py| {
                    let out =
                        bridge(py)?.call_method1("tool_output", (ser_to_py(py, &result)?,))?;
                    PyTuple::new(py, [call_event(py, &call)?, out])
                },
                |py, v| {
                    if v.is_none() {
                        Ok(None)
                    } else {
                        output_from_py(py, &v).map(Some)
                    }
                },
            )
            .await
    }
}

/// `wait_for=fn(request, cancel)`.
pub struct PyWaitFor {
    pub cb: Callback,
    pub host: SharedHost,
}

#[async_trait]
impl WaitFor for PyWaitFor {
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        self.host
            .call(
                "wait_for",
                &self.cb,
                move |py| {
                    let req =
                        bridge(py)?.call_method1("pending_request", (ser_to_py(py, &request)?,))?;
                    let cancel = Py::new(py, CancelSignal { token: cancel })?;
                    PyTuple::new(py, [req, cancel.into_bound(py).into_any()])
                },
                |_py, v| {
                    Answer::from_value(&to_value(&v)?).map_err(|e| {
                        PyTypeError::new_err(format!("wait_for returned a bad answer: {e}"))
                    })
                },
            )
            .await
    }
}

/// `websearch=provider`: a callable `search(request)` or `search(request, cancel)` (the Python
/// layer finds it on the provider and says whether it takes `cancel`).
pub struct PyWebSearch {
    pub cb: Callback,
    pub with_cancel: bool,
    pub host: SharedHost,
}

#[async_trait]
impl WebSearchProvider for PyWebSearch {
    async fn search(
        &self,
        request: SearchRequest,
        cancel: CancellationToken,
    ) -> Result<Vec<SearchResult>, HostError> {
        // The engine drops this future when the turn is cancelled: an async provider's task
        // is then cancelled (see `callback`), a sync one sees `cancel`.
        let with_cancel = self.with_cancel;
        self.host
            .call(
                "websearch",
                &self.cb,
                move |py| {
                    let req =
                        bridge(py)?.call_method1("search_request", (ser_to_py(py, &request)?,))?;
                    if with_cancel {
                        let cancel = Py::new(py, CancelSignal { token: cancel })?;
                        PyTuple::new(py, [req, cancel.into_bound(py).into_any()])
                    } else {
                        PyTuple::new(py, [req])
                    }
                },
                |py, v| {
                    // SearchResult objects as dicts; core checks the shape.
                    let wire = bridge(py)?.call_method1("search_results_wire", (v,))?;
                    let wire: serde_json::Value = from_py(&wire)?;
                    SearchResult::list_from_json(wire).map_err(PyValueError::new_err)
                },
            )
            .await
    }
}

/// The pieces of a client that a rebuild (after a fork) needs again.
pub struct Parts {
    pub hooks: Option<Arc<dyn Hooks>>,
    pub wait_for: Option<Arc<dyn WaitFor>>,
    pub websearch: Option<Arc<dyn WebSearchProvider>>,
}
