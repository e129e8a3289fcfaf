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
//!     fn export(&self, span: SpanRecord) {
//!         self.0.lock().unwrap().push(span);
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
//! assert_eq!(names, ["chat scripted", "invoke_agent"]);
//! # });
//! ```

mod exporter;
mod otlp_json;
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

pub(crate) use turn_trace::{ModelTarget, TurnTrace};

use exporter::Exporter;
use settings::Resolved;

/// Where a host takes finished spans (instead of the OTLP exporter): a binding replays them
/// into the host's own tracer provider. Called on the turn's path: keep it quick.
pub trait SpanSink: Send + Sync {
    /// One finished span (children end before their parents).
    fn export(&self, span: SpanRecord);
}

enum Output {
    Otlp(Exporter),
    Host(Arc<dyn SpanSink>),
}

/// A client's telemetry: whether contents go on spans, and where spans go.
pub(crate) struct Telemetry {
    pub(crate) include_contents: bool,
    output: Output,
}

/// How long `close` waits for the last spans to reach the collector.
const CLOSE_FLUSH: Duration = Duration::from_secs(5);

impl Telemetry {
    /// The config's `telemetry` option, if on: spans to `sink` when the host gives one, else to the
    /// OTLP endpoint. `Err` says what is wrong with the option.
    pub(crate) fn from_option(
        option: Option<&TelemetryOption>,
        sink: Option<Arc<dyn SpanSink>>,
    ) -> Result<Option<Arc<Telemetry>>, String> {
        let settings = match option {
            Some(option) => option.settings(),
            None => sink.as_ref().map(|_| TelemetrySettings::default()),
        };
        let Some(settings) = settings else {
            return Ok(None);
        };
        let output = match sink {
            Some(sink) => Output::Host(sink),
            None => Output::Otlp(Exporter::start(&Resolved::new(&settings))?),
        };
        Ok(Some(Arc::new(Telemetry {
            include_contents: settings.include_contents,
            output,
        })))
    }

    fn export(&self, span: SpanRecord) {
        match &self.output {
            Output::Otlp(exporter) => exporter.push(span),
            Output::Host(sink) => sink.export(span),
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
            Output::Host(_) => ExportStats::default(),
        }
    }
}
