//! The `telemetry` option and what it resolves to once the standard `OTEL_*` variables are read.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::redact::RedactedValues;

/// The `telemetry` option: `true` (export to the standard `OTEL_*` endpoint, or
/// `http://localhost:4318`), `false` (off, the default) or an object of [`TelemetrySettings`].
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TelemetryOption {
    /// On with every default, or off.
    Enabled(bool),
    /// On with these settings.
    Settings(TelemetrySettings),
}

/// The `telemetry` option's object form. Every field is optional; a field left out falls back
/// to its `OTEL_*` variable, then to the default.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The OTLP/HTTP endpoint: a base (`http://127.0.0.1:4318`, to which `/v1/traces` is added)
    /// or the full traces URL (ending in `/v1/traces`). Default: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
    /// as is, `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, then `http://localhost:4318/v1/traces`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// HTTP headers sent with every export (an API key for a hosted collector), over those of
    /// `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS`. Never in a span.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Put message contents on the spans: the prompt and final answer, each response's text and
    /// tool calls, tool arguments and results, a denial's message. Off by default.
    pub include_contents: bool,
    /// The resource's `service.name`. Default: `OTEL_SERVICE_NAME`, the `service.name` of
    /// `OTEL_RESOURCE_ATTRIBUTES`, then `contenox`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
}

impl fmt::Debug for TelemetryOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TelemetryOption::Enabled(on) => f.debug_tuple("Enabled").field(on).finish(),
            TelemetryOption::Settings(s) => f.debug_tuple("Settings").field(s).finish(),
        }
    }
}

impl fmt::Debug for TelemetrySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every field by name: headers carry collector keys, so only their names print.
        let TelemetrySettings {
            endpoint,
            headers,
            include_contents,
            service_name,
        } = self;
        f.debug_struct("TelemetrySettings")
            .field(
                "endpoint",
                &endpoint
                    .as_deref()
                    .map(|e| crate::redact::redact_url(e, crate::redact::UrlParts::KeepPath)),
            )
            .field("headers", &RedactedValues(headers))
            .field("include_contents", include_contents)
            .field("service_name", service_name)
            .finish()
    }
}

impl TelemetryOption {
    /// The settings when telemetry is on (`OTEL_SDK_DISABLED=true` turns it off).
    pub(crate) fn settings(&self) -> Option<TelemetrySettings> {
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return None;
        }
        match self {
            TelemetryOption::Enabled(false) => None,
            TelemetryOption::Enabled(true) => Some(TelemetrySettings::default()),
            TelemetryOption::Settings(s) => Some(s.clone()),
        }
    }
}

/// Telemetry as a client runs it: the option with the `OTEL_*` variables applied.
#[derive(Clone)]
pub(crate) struct Resolved {
    /// Where spans are posted (`…/v1/traces`).
    pub endpoint: String,
    pub headers: Vec<(String, String)>,
    /// The resource's attributes, `service.name` among them.
    pub resource: Vec<(String, String)>,
    pub timeout: Duration,
    /// Spans kept waiting for export at most; more are dropped (and counted).
    pub max_queue: usize,
    /// Spans per export at most.
    pub max_batch: usize,
    /// How long a span waits for its batch to fill.
    pub delay: Duration,
}

const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
const TRACES_PATH: &str = "/v1/traces";

fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn env_number(name: &str, default: u64) -> u64 {
    env(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_RESOURCE_ATTRIBUTES`: `key=value` pairs, comma separated,
/// values percent-encoded. Malformed entries are skipped (the OpenTelemetry SDKs do the same).
pub(crate) fn parse_pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|entry| {
            let (k, v) = entry.split_once('=')?;
            let k = k.trim();
            if k.is_empty() {
                return None;
            }
            let v = percent_encoding::percent_decode_str(v.trim())
                .decode_utf8()
                .ok()?;
            Some((k.to_string(), v.into_owned()))
        })
        .collect()
}

fn traces_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with(TRACES_PATH) {
        base.to_string()
    } else {
        format!("{base}{TRACES_PATH}")
    }
}

impl Resolved {
    pub(crate) fn new(settings: &TelemetrySettings) -> Resolved {
        let endpoint = match &settings.endpoint {
            Some(e) => traces_url(e),
            None => env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT").map(|e| traces_url(&e)))
                .unwrap_or_else(|| traces_url(DEFAULT_ENDPOINT)),
        };
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            headers.extend(env(name).map(|v| parse_pairs(&v)).unwrap_or_default());
        }
        headers.extend(settings.headers.clone());
        let mut resource: Vec<(String, String)> = env("OTEL_RESOURCE_ATTRIBUTES")
            .map(|v| parse_pairs(&v))
            .unwrap_or_default();
        let from_resource = resource
            .iter()
            .find(|(k, _)| k == "service.name")
            .map(|(_, v)| v.clone());
        let service = settings
            .service_name
            .clone()
            .or_else(|| env("OTEL_SERVICE_NAME"))
            .or(from_resource)
            .unwrap_or_else(|| "contenox".to_string());
        resource.retain(|(k, _)| k != "service.name" && !k.starts_with("telemetry.sdk."));
        resource.insert(0, ("service.name".into(), service));
        resource.push(("telemetry.sdk.name".into(), "contenox".into()));
        resource.push(("telemetry.sdk.language".into(), "rust".into()));
        resource.push((
            "telemetry.sdk.version".into(),
            env!("CARGO_PKG_VERSION").into(),
        ));
        let max_queue = env_number("OTEL_BSP_MAX_QUEUE_SIZE", 2048).clamp(1, 1 << 20) as usize;
        Resolved {
            endpoint,
            headers: headers.into_iter().collect(),
            resource,
            timeout: Duration::from_millis(
                env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
                    .or_else(|| env("OTEL_EXPORTER_OTLP_TIMEOUT"))
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(10_000)
                    .clamp(1, 600_000),
            ),
            max_queue,
            max_batch: (env_number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512) as usize)
                .clamp(1, max_queue),
            delay: Duration::from_millis(
                env_number("OTEL_BSP_SCHEDULE_DELAY", 1_000).clamp(1, 60_000),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_percent_decoded_and_malformed_ones_skipped() {
        assert_eq!(
            parse_pairs("a=1, b = x%20y ,broken,=v,c=%3D"),
            vec![
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "x y".to_string()),
                ("c".to_string(), "=".to_string()),
            ]
        );
    }

    #[test]
    fn an_endpoint_gets_the_traces_path_once() {
        assert_eq!(traces_url("http://h:4318"), "http://h:4318/v1/traces");
        assert_eq!(traces_url("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(
            traces_url("http://h:4318/v1/traces"),
            "http://h:4318/v1/traces"
        );
    }

    #[test]
    fn the_option_reads_as_a_bool_or_an_object() {
        let on: TelemetryOption = serde_json::from_str("true").unwrap();
        assert_eq!(on.settings(), Some(TelemetrySettings::default()));
        let off: TelemetryOption = serde_json::from_str("false").unwrap();
        assert_eq!(off.settings(), None);
        let s: TelemetryOption = serde_json::from_str(
            r#"{"endpoint": "http://127.0.0.1:9", "include_contents": true, "service_name": "x"}"#,
        )
        .unwrap();
        let s = s.settings().unwrap();
        assert!(s.include_contents);
        let r = Resolved::new(&s);
        assert_eq!(r.endpoint, "http://127.0.0.1:9/v1/traces");
        assert_eq!(r.resource[0], ("service.name".into(), "x".into()));
        assert!(serde_json::from_str::<TelemetryOption>(r#"{"endpont": "x"}"#).is_err());
    }

    #[test]
    fn debug_hides_header_values() {
        let s = TelemetrySettings {
            headers: [("authorization".to_string(), "Bearer SECRET".to_string())].into(),
            ..Default::default()
        };
        let printed = format!("{:?}", TelemetryOption::Settings(s));
        assert!(printed.contains("authorization") && !printed.contains("SECRET"));
    }
}
