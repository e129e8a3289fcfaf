//! OpenTelemetry traces of a client's turns, following the GenAI semantic conventions.
//!
//! Off by default; the config's `telemetry` option turns it on (`true`, or
//! [`TelemetrySettings`]), and the standard `OTEL_*` variables apply then
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `_TRACES_ENDPOINT`, `_HEADERS`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SDK_DISABLED`, `OTEL_BSP_*`).
//!
//! Each turn is a tree of spans:
//! - `invoke_agent` (a subagent's: `invoke_agent {name}`): the turn, with its summed usage;
//! - `chat {model}` per model response: provider, model, server, request settings, token usage
//!   (cached tokens too), finish reason; retries are its events, a fallback ends it in error and
//!   opens the next model's;
//! - `execute_tool {name}` per call: its id, source, the gate's decision and the policy rule;
//!   a subagent's `invoke_agent {name}` nests under its call's span;
//! - `compact` per compaction, `chain_task {id}` per task of a chain.
//!
//! Message contents (prompt, answers, tool arguments and results, denial messages) are on the
//! spans only with `include_contents`; secrets never are (keys, headers and URLs' user info do
//! not reach spans at all).
//!
//! Spans go to an OTLP/HTTP JSON endpoint, batched by a thread of the client's (a bounded
//! queue: when full, spans are dropped and counted; a collector that is down never fails a
//! turn), flushed by `close`; or to a host's [`SpanSink`] (a binding replaying them into the
//! host's own tracer provider).
//!
//! ```
//! use contenox::{Client, ScriptEntry};
//! use contenox::telemetry::{SpanRecord, SpanSink};
//! use std::sync::{Arc, Mutex};
//!
//! #[derive(Default)]
//! struct Spans(Mutex<Vec<SpanRecord>>);
//! impl SpanSink for Spans {
//!     fn export(&self, turn: Vec<SpanRecord>) {
//!         self.0.lock().unwrap().extend(turn);
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let spans = Arc::new(Spans::default());
//! let client = Client::builder()
//!     .script(vec![ScriptEntry::text("hi")])
//!     .span_sink(spans.clone())
//!     .build()
//!     .unwrap();
//! client.run("hello").await.unwrap();
//! let names: Vec<String> = spans.0.lock().unwrap().iter().map(|s| s.name.clone()).collect();
//! assert_eq!(names, ["invoke_agent", "chat scripted"]);
//! # });
//! ```

mod exporter;
mod otlp_json;
mod propagate;
mod settings;
mod span;
mod turn_trace;

use std::sync::Arc;
use std::time::Duration;

pub use exporter::ExportStats;
pub use settings::{TelemetryOption, TelemetrySettings};
pub use span::{
    AttributeValue, Attributes, SpanContext, SpanEvent, SpanKind, SpanRecord, SpanStatus,
};

pub(crate) use propagate::{outgoing_traceparent, with_traceparent};
pub(crate) use turn_trace::{ModelTarget, TurnTrace};

use exporter::Exporter;
use settings::Resolved;

/// Where a host takes finished spans (instead of the OTLP exporter): a binding replays them
/// into the host's own tracer provider. Called on the turn's path when a host's turn ends:
/// keep it quick.
pub trait SpanSink: Send + Sync {
    /// Every span of one host turn (its subagents' turns included), parents before children
    /// (a replay can start each span under its parent's), each with its own times.
    fn export(&self, turn: Vec<SpanRecord>);
}

/// Spans a host's sink gets at most per turn; more are dropped (a turn of thousands of calls).
const MAX_HOST_SPANS: usize = 4096;

enum Output {
    Otlp(Exporter),
    Host {
        sink: Arc<dyn SpanSink>,
        /// The spans of each running host turn, by its span id, until it ends.
        pending: parking_lot::Mutex<Vec<([u8; 8], Vec<SpanRecord>)>>,
    },
}

/// A client's telemetry: whether contents go on spans, and where spans go.
pub(crate) struct Telemetry {
    pub(crate) include_contents: bool,
    output: Output,
}

/// How long `close` waits for the last spans to reach the collector.
const CLOSE_FLUSH: Duration = Duration::from_secs(5);

impl Telemetry {
    /// The config's `telemetry` option, if on: spans to `sink` when the host gives one (which
    /// turns telemetry on by itself), else to `host_tracer` when the host has its own tracer
    /// provider (only while the option is on), else to the OTLP endpoint. `Err` says what is
    /// wrong with the option.
    pub(crate) fn from_option(
        option: Option<&TelemetryOption>,
        sink: Option<Arc<dyn SpanSink>>,
        host_tracer: Option<Arc<dyn SpanSink>>,
    ) -> Result<Option<Arc<Telemetry>>, String> {
        let settings = match option {
            Some(option) => option.settings(),
            None => sink.as_ref().map(|_| TelemetrySettings::default()),
        };
        let Some(settings) = settings else {
            return Ok(None);
        };
        // `settings` is there without the option only for a `span_sink`, which comes first.
        let output = match sink.or(host_tracer) {
            Some(sink) => {
                exporter::checked_headers(&Resolved::new(&settings))?;
                Output::Host {
                    sink,
                    pending: parking_lot::Mutex::default(),
                }
            }
            None => Output::Otlp(Exporter::start(&Resolved::new(&settings))?),
        };
        Ok(Some(Arc::new(Telemetry {
            include_contents: settings.include_contents,
            output,
        })))
    }

    /// A finished span of the host turn `root`.
    fn export(&self, span: SpanRecord, root: [u8; 8]) {
        match &self.output {
            Output::Otlp(exporter) => exporter.push(span),
            Output::Host { pending, .. } => {
                let mut pending = pending.lock();
                let at = match pending.iter().position(|(r, _)| *r == root) {
                    Some(at) => at,
                    None => {
                        pending.push((root, Vec::new()));
                        pending.len() - 1
                    }
                };
                let spans = &mut pending[at].1;
                if spans.len() < MAX_HOST_SPANS {
                    spans.push(span);
                }
            }
        }
    }

    /// The host turn `root` ended: a host's sink gets its spans.
    fn turn_ended(&self, root: [u8; 8]) {
        if let Output::Host { sink, pending } = &self.output {
            let spans = {
                let mut pending = pending.lock();
                match pending.iter().position(|(r, _)| *r == root) {
                    Some(at) => pending.swap_remove(at).1,
                    None => Vec::new(),
                }
            };
            if !spans.is_empty() {
                sink.export(parents_first(spans));
            }
        }
    }

    /// Send what is queued (a client's `close`); waits at most a few seconds.
    pub(crate) fn flush(&self) {
        if let Output::Otlp(exporter) = &self.output {
            exporter.flush(CLOSE_FLUSH);
        }
    }

    /// What happened to the spans so far (zeros with a host's sink).
    pub(crate) fn stats(&self) -> ExportStats {
        match &self.output {
            Output::Otlp(exporter) => exporter.stats(),
            Output::Host { .. } => ExportStats::default(),
        }
    }
}

/// `spans` ordered so that each comes after its parent (those whose parent is not among them
/// first), siblings by start time. Quadratic, on at most `MAX_HOST_SPANS` spans.
fn parents_first(mut spans: Vec<SpanRecord>) -> Vec<SpanRecord> {
    spans.sort_by_key(|s| s.start_time_unix_nano);
    let mut ordered: Vec<SpanRecord> = Vec::with_capacity(spans.len());
    while !spans.is_empty() {
        let ready = spans.iter().position(|s| {
            s.parent_span_id
                .as_ref()
                .is_none_or(|p| !spans.iter().any(|other| &other.span_id == p))
        });
        // A cycle cannot come from the engine; whatever is left still goes out.
        ordered.push(spans.remove(ready.unwrap_or(0)));
    }
    ordered
}
