//! The host's own OpenTelemetry tracer provider (`lib/telemetry.ts` finds the global one of
//! `@opentelemetry/api`): the engine hands each host turn's finished spans here instead of to
//! its exporter (`ClientBuilder::host_tracer`), and they go to the TypeScript replay as one JSON
//! text, parents first. The TypeScript layer also passes the host's active span as a
//! `traceparent` when a turn starts, so the turn's span is a child of it.

use std::sync::mpsc;
use std::thread::ThreadId;
use std::time::Duration;

use contenox::telemetry::{AttributeValue, SpanKind, SpanRecord, SpanSink, SpanStatus};
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;
use serde_json::{json, Map, Value};

/// `(spansJson) => void`, weak (it never keeps the process alive).
type Replay = ThreadsafeFunction<String, UnknownReturnValue, String, Status, false, true>;

/// How long a turn's end waits for the replay on the JavaScript thread: long enough that a
/// `run()` resolves after its spans are in the host's provider, bounded so that a busy (or
/// blocked) event loop delays no turn for long.
const REPLAY_WAIT: Duration = Duration::from_secs(1);

/// The TypeScript layer's replay function.
pub(crate) struct JsHostTracer {
    replay: Replay,
    /// The JavaScript thread: a sink called there (a turn dropped by the host's code) must
    /// not wait for a call only that thread can run.
    js_thread: ThreadId,
}

impl JsHostTracer {
    pub(crate) fn new(replay: &Function<'_, String, UnknownReturnValue>) -> napi::Result<Self> {
        Ok(JsHostTracer {
            replay: replay
                .build_threadsafe_function::<String>()
                .weak::<true>()
                .callee_handled::<false>()
                .build()?,
            js_thread: std::thread::current().id(),
        })
    }
}

impl SpanSink for JsHostTracer {
    fn export(&self, turn: Vec<SpanRecord>) {
        let spans = Value::Array(turn.iter().map(span_json).collect()).to_string();
        if std::thread::current().id() == self.js_thread {
            self.replay
                .call(spans, ThreadsafeFunctionCallMode::NonBlocking);
            return;
        }
        let (done, replayed) = mpsc::channel();
        let status = self.replay.call_with_return_value(
            spans,
            ThreadsafeFunctionCallMode::NonBlocking,
            move |_, _| {
                let _ = done.send(());
                Ok(())
            },
        );
        if status == Status::Ok {
            let _ = replayed.recv_timeout(REPLAY_WAIT);
        }
    }
}

fn attribute(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::String(s) => json!(s),
        AttributeValue::Int(i) => json!(i),
        AttributeValue::Double(d) => json!(d),
        AttributeValue::Bool(b) => json!(b),
        AttributeValue::StringArray(items) => json!(items),
    }
}

fn attributes(attributes: &[(String, AttributeValue)]) -> Value {
    Value::Object(
        attributes
            .iter()
            .map(|(k, v)| (k.clone(), attribute(v)))
            .collect::<Map<String, Value>>(),
    )
}

/// One span as the replay takes it: ids as hex, times in nanoseconds since the epoch (as
/// decimal strings: they exceed JavaScript's safe integers).
fn span_json(span: &SpanRecord) -> Value {
    json!({
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "parentSpanId": span.parent_span_id,
        "name": span.name,
        "kind": match span.kind {
            SpanKind::Internal => "internal",
            SpanKind::Client => "client",
        },
        "startTimeUnixNano": span.start_time_unix_nano.to_string(),
        "endTimeUnixNano": span.end_time_unix_nano.to_string(),
        "attributes": attributes(&span.attributes),
        "events": span.events.iter().map(|e| json!({
            "name": e.name,
            "timeUnixNano": e.time_unix_nano.to_string(),
            "attributes": attributes(&e.attributes),
        })).collect::<Vec<_>>(),
        "status": match span.status {
            SpanStatus::Unset => "unset",
            SpanStatus::Error => "error",
        },
        "statusMessage": span.status_message,
    })
}
