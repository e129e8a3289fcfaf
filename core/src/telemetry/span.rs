//! A finished span as the engine records it: what the OTLP exporter encodes and what a binding
//! replays into its host's own tracer.

use std::time::{SystemTime, UNIX_EPOCH};

/// Which side of a call a span stands for (OTLP `SpanKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// Work inside the engine (a turn, a tool call, a compaction, a chain task).
    Internal,
    /// A request to another service (a model request).
    Client,
}

/// How a span ended (OTLP `Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanStatus {
    /// Nothing to report (the OpenTelemetry default for a span that did not fail).
    Unset,
    /// The span's work failed: its `error.type` attribute says how.
    Error,
}

/// An attribute's value: the OTLP `AnyValue` kinds the conventions use.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeValue {
    /// A string.
    String(String),
    /// An integer (token counts, ports).
    Int(i64),
    /// A floating-point number (temperature, top_p).
    Double(f64),
    /// A boolean.
    Bool(bool),
    /// A list of strings (finish reasons, stop sequences).
    StringArray(Vec<String>),
}

impl From<&str> for AttributeValue {
    fn from(v: &str) -> Self {
        AttributeValue::String(v.to_string())
    }
}

impl From<String> for AttributeValue {
    fn from(v: String) -> Self {
        AttributeValue::String(v)
    }
}

impl From<u64> for AttributeValue {
    fn from(v: u64) -> Self {
        AttributeValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<i64> for AttributeValue {
    fn from(v: i64) -> Self {
        AttributeValue::Int(v)
    }
}

impl From<f64> for AttributeValue {
    fn from(v: f64) -> Self {
        AttributeValue::Double(v)
    }
}

impl From<bool> for AttributeValue {
    fn from(v: bool) -> Self {
        AttributeValue::Bool(v)
    }
}

impl From<Vec<String>> for AttributeValue {
    fn from(v: Vec<String>) -> Self {
        AttributeValue::StringArray(v)
    }
}

/// Attributes in the order they were set (a key set twice keeps its last value).
pub type Attributes = Vec<(String, AttributeValue)>;

/// Something that happened at one moment of a span (a retry, an ask, the host's answer).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    /// What happened (`retry`, `fallback`, `pending`, `answer`).
    pub name: String,
    /// When, in nanoseconds since the Unix epoch.
    pub time_unix_nano: u64,
    /// Its details.
    pub attributes: Attributes,
}

/// One finished span. Ids are lowercase hex (32 digits for the trace, 16 for spans), as W3C
/// trace context and OTLP/JSON write them.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    /// The trace it belongs to.
    pub trace_id: String,
    /// Its own id.
    pub span_id: String,
    /// Its parent's id; `None` for a trace's root.
    pub parent_span_id: Option<String>,
    /// `invoke_agent`, `chat {model}`, `execute_tool {name}`, ...
    pub name: String,
    /// Internal or client.
    pub kind: SpanKind,
    /// Start, in nanoseconds since the Unix epoch.
    pub start_time_unix_nano: u64,
    /// End, in nanoseconds since the Unix epoch.
    pub end_time_unix_nano: u64,
    /// The GenAI conventions' attributes (and `contenox.*` ones where they have none).
    pub attributes: Attributes,
    /// Moments within it.
    pub events: Vec<SpanEvent>,
    /// Whether it failed.
    pub status: SpanStatus,
    /// Why it failed (the status description), when it did.
    pub status_message: Option<String>,
}

impl SpanRecord {
    /// The value of attribute `key`, if set.
    pub fn attribute(&self, key: &str) -> Option<&AttributeValue> {
        self.attributes
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }
}

/// A span's place in a trace: what a child names as its parent, and what `traceparent` carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    /// The trace id (16 bytes).
    pub trace_id: [u8; 16],
    /// The span id (8 bytes).
    pub span_id: [u8; 8],
    /// Whether the trace is sampled (`traceparent` flags `01`).
    pub sampled: bool,
}

impl SpanContext {
    /// A W3C `traceparent` header value (`00-TRACE-SPAN-FLAGS`).
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{}",
            hex(&self.trace_id),
            hex(&self.span_id),
            if self.sampled { "01" } else { "00" }
        )
    }

    /// Read a W3C `traceparent` (version `00`; the all-zero ids are invalid). `None` when it is
    /// not one: a host's bad header starts a new trace rather than failing the turn.
    pub fn from_traceparent(value: &str) -> Option<SpanContext> {
        let mut parts = value.trim().split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version != "00" || parts.next().is_some() {
            return None;
        }
        let trace_id: [u8; 16] = unhex(trace)?.try_into().ok()?;
        let span_id: [u8; 8] = unhex(span)?.try_into().ok()?;
        let flags = unhex(flags)?;
        if flags.len() != 1 || trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(SpanContext {
            trace_id,
            span_id,
            sampled: flags[0] & 1 == 1,
        })
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2)
        || !text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// A new random trace id (never all zeros).
pub(crate) fn new_trace_id() -> [u8; 16] {
    loop {
        let id: [u8; 16] = rand::random();
        if id != [0; 16] {
            return id;
        }
    }
}

/// A new random span id (never all zeros).
pub(crate) fn new_span_id() -> [u8; 8] {
    loop {
        let id: [u8; 8] = rand::random();
        if id != [0; 8] {
            return id;
        }
    }
}

/// Now, in nanoseconds since the Unix epoch.
pub(crate) fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trips_and_bad_ones_are_refused() {
        let ctx = SpanContext {
            trace_id: new_trace_id(),
            span_id: new_span_id(),
            sampled: true,
        };
        assert_eq!(SpanContext::from_traceparent(&ctx.traceparent()), Some(ctx));
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-zzf7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert_eq!(SpanContext::from_traceparent(bad), None, "{bad}");
        }
    }
}
