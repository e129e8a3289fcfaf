//! Spans as an OTLP/HTTP JSON `ExportTraceServiceRequest` (the protobuf message in its
//! documented JSON mapping: ids in hex, 64-bit integers as strings, enums as numbers), written
//! straight into a string (no `serde_json::Value` tree: less code in every binding's library).

use std::fmt::Write;

use super::span::{AttributeValue, SpanKind, SpanRecord, SpanStatus};

/// The instrumentation scope every span is reported under.
pub(crate) const SCOPE: &str = "contenox";

/// `text` as a JSON string, escaped as serde_json escapes it.
pub(crate) fn quoted(out: &mut String, text: &str) {
    // Writing a `&str` through serde_json cannot fail.
    let _ = serde_json::to_writer(utf8_writer(out), text);
}

/// serde_json writes bytes; a `String` takes them as they are valid UTF-8 (JSON text of a
/// `&str` always is).
fn utf8_writer(out: &mut String) -> impl std::io::Write + '_ {
    struct Utf8<'a>(&'a mut String);
    impl std::io::Write for Utf8<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let text = std::str::from_utf8(buf)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            self.0.push_str(text);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    Utf8(out)
}

fn any_value(out: &mut String, value: &AttributeValue) {
    match value {
        AttributeValue::String(s) => {
            out.push_str("{\"stringValue\":");
            quoted(out, s);
            out.push('}');
        }
        AttributeValue::Int(i) => {
            let _ = write!(out, "{{\"intValue\":\"{i}\"}}");
        }
        // JSON has no NaN or infinity; the mapping writes them as strings.
        AttributeValue::Double(d) if d.is_finite() => {
            let _ = write!(out, "{{\"doubleValue\":{d:?}}}");
        }
        AttributeValue::Double(d) => {
            let _ = write!(out, "{{\"doubleValue\":\"{d}\"}}");
        }
        AttributeValue::Bool(b) => {
            let _ = write!(out, "{{\"boolValue\":{b}}}");
        }
        AttributeValue::StringArray(items) => {
            out.push_str("{\"arrayValue\":{\"values\":[");
            for (i, s) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"stringValue\":");
                quoted(out, s);
                out.push('}');
            }
            out.push_str("]}}");
        }
    }
}

fn key_values<'a>(
    out: &mut String,
    pairs: impl IntoIterator<Item = (&'a str, &'a AttributeValue)>,
) {
    out.push('[');
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"key\":");
        quoted(out, k);
        out.push_str(",\"value\":");
        any_value(out, v);
        out.push('}');
    }
    out.push(']');
}

fn span(out: &mut String, record: &SpanRecord) {
    out.push_str("{\"traceId\":");
    quoted(out, &record.trace_id);
    out.push_str(",\"spanId\":");
    quoted(out, &record.span_id);
    if let Some(parent) = &record.parent_span_id {
        out.push_str(",\"parentSpanId\":");
        quoted(out, parent);
    }
    out.push_str(",\"name\":");
    quoted(out, &record.name);
    let kind = match record.kind {
        SpanKind::Internal => 1,
        SpanKind::Client => 3,
    };
    let _ = write!(
        out,
        ",\"kind\":{kind},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":",
        record.start_time_unix_nano, record.end_time_unix_nano
    );
    key_values(out, record.attributes.iter().map(|(k, v)| (k.as_str(), v)));
    if !record.events.is_empty() {
        out.push_str(",\"events\":[");
        for (i, e) in record.events.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{{\"timeUnixNano\":\"{}\",\"name\":", e.time_unix_nano);
            quoted(out, &e.name);
            out.push_str(",\"attributes\":");
            key_values(out, e.attributes.iter().map(|(k, v)| (k.as_str(), v)));
            out.push('}');
        }
        out.push(']');
    }
    out.push_str(",\"status\":");
    match (record.status, &record.status_message) {
        (SpanStatus::Unset, _) => out.push_str("{}"),
        (SpanStatus::Error, Some(m)) => {
            out.push_str("{\"code\":2,\"message\":");
            quoted(out, m);
            out.push('}');
        }
        (SpanStatus::Error, None) => out.push_str("{\"code\":2}"),
    }
    out.push('}');
}

/// The request body exporting `spans` under `resource`.
pub(crate) fn export_request(resource: &[(String, String)], spans: &[SpanRecord]) -> Vec<u8> {
    let mut out = String::with_capacity(512 * spans.len() + 256);
    out.push_str("{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
    for (i, (k, v)) in resource.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"key\":");
        quoted(&mut out, k);
        out.push_str(",\"value\":{\"stringValue\":");
        quoted(&mut out, v);
        out.push_str("}}");
    }
    let _ = write!(
        out,
        "]}},\"scopeSpans\":[{{\"scope\":{{\"name\":\"{SCOPE}\",\"version\":\"{}\"}},\"spans\":[",
        env!("CARGO_PKG_VERSION")
    );
    for (i, record) in spans.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        span(&mut out, record);
    }
    out.push_str("]}]}]}");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::span::SpanEvent;
    use serde_json::{json, Value};

    #[test]
    fn a_span_is_written_in_the_otlp_json_mapping() {
        let record = SpanRecord {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: "b7ad6b7169203331".into(),
            parent_span_id: Some("00f067aa0ba902b7".into()),
            name: "chat \"m\"\n\u{1}é".into(),
            kind: SpanKind::Client,
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
            attributes: vec![
                ("gen_ai.usage.input_tokens".into(), 12u64.into()),
                ("gen_ai.request.temperature".into(), 0.5.into()),
                (
                    "gen_ai.response.finish_reasons".into(),
                    vec!["stop".to_string()].into(),
                ),
            ],
            events: vec![SpanEvent {
                name: "retry".into(),
                time_unix_nano: 3,
                attributes: vec![("error.type".into(), "503".into())],
            }],
            status: SpanStatus::Error,
            status_message: Some("boom".into()),
        };
        let body: Value = serde_json::from_slice(&export_request(
            &[("service.name".into(), "s".into())],
            &[record],
        ))
        .unwrap();
        let rs = &body["resourceSpans"][0];
        assert_eq!(rs["resource"]["attributes"][0]["value"]["stringValue"], "s");
        let s = &rs["scopeSpans"][0]["spans"][0];
        assert_eq!(s["name"], "chat \"m\"\n\u{1}é");
        assert_eq!(s["kind"], 3);
        assert_eq!(s["parentSpanId"], "00f067aa0ba902b7");
        assert_eq!(s["startTimeUnixNano"], "1");
        assert_eq!(s["attributes"][0]["value"]["intValue"], "12");
        assert_eq!(s["attributes"][1]["value"]["doubleValue"], 0.5);
        assert_eq!(
            s["attributes"][2]["value"]["arrayValue"]["values"][0]["stringValue"],
            "stop"
        );
        assert_eq!(s["events"][0]["timeUnixNano"], "3");
        assert_eq!(s["status"], json!({"code": 2, "message": "boom"}));
    }
}
