//! Spans as an OTLP/HTTP JSON `ExportTraceServiceRequest` (the protobuf message in its
//! documented JSON mapping: ids in hex, 64-bit integers as strings, enums as numbers).

use serde_json::{json, Map, Value};

use super::span::{AttributeValue, SpanKind, SpanRecord, SpanStatus};

/// The instrumentation scope every span is reported under.
pub(crate) const SCOPE: &str = "contenox";

fn any_value(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::String(s) => json!({ "stringValue": s }),
        AttributeValue::Int(i) => json!({ "intValue": i.to_string() }),
        AttributeValue::Double(d) if d.is_finite() => json!({ "doubleValue": d }),
        // JSON has no NaN or infinity; the mapping writes them as strings.
        AttributeValue::Double(d) => json!({ "doubleValue": d.to_string() }),
        AttributeValue::Bool(b) => json!({ "boolValue": b }),
        AttributeValue::StringArray(items) => json!({
            "arrayValue": { "values": items.iter().map(|s| json!({ "stringValue": s })).collect::<Vec<_>>() }
        }),
    }
}

fn key_values<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a AttributeValue)>) -> Value {
    Value::Array(
        pairs
            .into_iter()
            .map(|(k, v)| json!({ "key": k, "value": any_value(v) }))
            .collect(),
    )
}

fn span(record: &SpanRecord) -> Value {
    let mut span = Map::new();
    span.insert("traceId".into(), record.trace_id.clone().into());
    span.insert("spanId".into(), record.span_id.clone().into());
    if let Some(parent) = &record.parent_span_id {
        span.insert("parentSpanId".into(), parent.clone().into());
    }
    span.insert("name".into(), record.name.clone().into());
    let kind = match record.kind {
        SpanKind::Internal => 1,
        SpanKind::Client => 3,
    };
    span.insert("kind".into(), kind.into());
    span.insert(
        "startTimeUnixNano".into(),
        record.start_time_unix_nano.to_string().into(),
    );
    span.insert(
        "endTimeUnixNano".into(),
        record.end_time_unix_nano.to_string().into(),
    );
    span.insert(
        "attributes".into(),
        key_values(record.attributes.iter().map(|(k, v)| (k.as_str(), v))),
    );
    if !record.events.is_empty() {
        let events = record
            .events
            .iter()
            .map(|e| {
                json!({
                    "timeUnixNano": e.time_unix_nano.to_string(),
                    "name": e.name,
                    "attributes": key_values(e.attributes.iter().map(|(k, v)| (k.as_str(), v))),
                })
            })
            .collect();
        span.insert("events".into(), Value::Array(events));
    }
    let status = match (record.status, &record.status_message) {
        (SpanStatus::Unset, _) => json!({}),
        (SpanStatus::Error, Some(m)) => json!({ "code": 2, "message": m }),
        (SpanStatus::Error, None) => json!({ "code": 2 }),
    };
    span.insert("status".into(), status);
    Value::Object(span)
}

/// The request body exporting `spans` under `resource`.
pub(crate) fn export_request(resource: &[(String, String)], spans: &[SpanRecord]) -> Vec<u8> {
    let resource: Vec<(String, AttributeValue)> = resource
        .iter()
        .map(|(k, v)| (k.clone(), AttributeValue::String(v.clone())))
        .collect();
    let body = json!({
        "resourceSpans": [{
            "resource": { "attributes": key_values(resource.iter().map(|(k, v)| (k.as_str(), v))) },
            "scopeSpans": [{
                "scope": { "name": SCOPE, "version": env!("CARGO_PKG_VERSION") },
                "spans": spans.iter().map(span).collect::<Vec<_>>(),
            }],
        }],
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::span::SpanEvent;

    #[test]
    fn a_span_is_written_in_the_otlp_json_mapping() {
        let record = SpanRecord {
            trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            span_id: "b7ad6b7169203331".into(),
            parent_span_id: Some("00f067aa0ba902b7".into()),
            name: "chat m".into(),
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
