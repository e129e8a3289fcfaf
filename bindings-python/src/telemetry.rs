//! The host's own OpenTelemetry tracer provider (`contenox/_telemetry.py` finds it): the
//! engine hands each host turn's finished spans here instead of to its exporter
//! (`ClientBuilder::host_tracer`), and they go to the Python replay as plain dicts, parents
//! first. The Python layer also gives the host's current span as a `traceparent` when a turn
//! starts, so the turn's span is a child of it.

use contenox::telemetry::{AttributeValue, SpanKind, SpanRecord, SpanSink, SpanStatus};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The Python layer's `(current_traceparent, replay)`.
pub(crate) struct PyHostTracer {
    /// `() -> str | None`: the host's current span, called when a turn starts.
    pub current: Py<PyAny>,
    /// `(spans: list[dict]) -> None`: re-creates one host turn's spans in the host's tracer.
    pub replay: Py<PyAny>,
}

impl PyHostTracer {
    /// The host's current span as a W3C `traceparent` (called with the caller's context, so
    /// where `run()` / `resume()` was called from); `None` when there is none or it failed.
    pub(crate) fn current(&self, py: Python<'_>) -> Option<String> {
        match self
            .current
            .call0(py)
            .and_then(|v| v.extract::<Option<String>>(py))
        {
            Ok(v) => v,
            Err(e) => {
                e.write_unraisable(py, Some(self.current.bind(py)));
                None
            }
        }
    }
}

impl SpanSink for PyHostTracer {
    fn export(&self, turn: Vec<SpanRecord>) {
        Python::attach(|py| {
            let spans = PyList::empty(py);
            for span in &turn {
                if let Err(e) = span_dict(py, span).and_then(|d| spans.append(d)) {
                    e.write_unraisable(py, None);
                    return;
                }
            }
            // The host's tracer failing loses these spans, never the turn.
            if let Err(e) = self.replay.call1(py, (spans,)) {
                e.write_unraisable(py, Some(self.replay.bind(py)));
            }
        });
    }
}

fn attribute<'py>(py: Python<'py>, value: &AttributeValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        AttributeValue::String(s) => s.into_pyobject(py)?.into_any(),
        AttributeValue::Int(i) => i.into_pyobject(py)?.into_any(),
        AttributeValue::Double(d) => d.into_pyobject(py)?.into_any(),
        AttributeValue::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        AttributeValue::StringArray(items) => PyList::new(py, items)?.into_any(),
    })
}

fn attributes<'py>(
    py: Python<'py>,
    attributes: &[(String, AttributeValue)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in attributes {
        d.set_item(k, attribute(py, v)?)?;
    }
    Ok(d)
}

/// One span as the replay takes it: ids as hex, times in nanoseconds since the epoch.
fn span_dict<'py>(py: Python<'py>, span: &SpanRecord) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("trace_id", &span.trace_id)?;
    d.set_item("span_id", &span.span_id)?;
    d.set_item("parent_span_id", span.parent_span_id.as_deref())?;
    d.set_item("name", &span.name)?;
    d.set_item(
        "kind",
        match span.kind {
            SpanKind::Internal => "internal",
            SpanKind::Client => "client",
        },
    )?;
    d.set_item("start_time_unix_nano", span.start_time_unix_nano)?;
    d.set_item("end_time_unix_nano", span.end_time_unix_nano)?;
    d.set_item("attributes", attributes(py, &span.attributes)?)?;
    let events = PyList::empty(py);
    for event in &span.events {
        let e = PyDict::new(py);
        e.set_item("name", &event.name)?;
        e.set_item("time_unix_nano", event.time_unix_nano)?;
        e.set_item("attributes", attributes(py, &event.attributes)?)?;
        events.append(e)?;
    }
    d.set_item("events", events)?;
    d.set_item(
        "status",
        match span.status {
            SpanStatus::Unset => "unset",
            SpanStatus::Error => "error",
        },
    )?;
    d.set_item("status_message", span.status_message.as_deref())?;
    Ok(d)
}
