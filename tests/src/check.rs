//! The one checker every binding uses: compares a run's trace with the scenario's `expect`.
//!
//! Tools offered and tool results sent are read out of the raw request bodies that the fake
//! server recorded, per style, so a binding cannot report what it did not send.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::scenario::{
    EventPattern, Expect, ExpectCompaction, ExpectEventFields, Scenario, Style, Texts, Usage,
};

/// What a runner writes after running one scenario.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Trace {
    #[serde(default)]
    pub scenario: String,
    #[serde(default)]
    pub binding: String,
    #[serde(default)]
    pub outcome: Option<String>,
    #[serde(default)]
    pub final_text: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
    /// `{"type": ..., "name"?: <tool name>, ...}` in the order the host saw them.
    #[serde(default)]
    pub events: Vec<Value>,
    /// Raw request bodies as the fake server received them (`GET /_fake/requests`).
    #[serde(default)]
    pub requests: Vec<Value>,
    /// Every file under the root after the run: relative path (`/`-separated) -> content.
    #[serde(default)]
    pub workspace: BTreeMap<String, Option<String>>,
    /// What the fake remote services recorded, in order of arrival: `{service, method, path,
    /// query, headers, body}` (spec fetches excluded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_requests: Vec<Value>,
    /// The error text when creating the client failed (then no turn ran); only a scenario
    /// with `expect.config_error_contains` may have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    /// Extension: what the runner's `on_compact` was told, in order (`{trigger, pre_tokens,
    /// post_tokens, summary}` each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<Value>,
    /// Extension: the last result's `output` (the parsed answer of a turn with an
    /// `output_schema`); absent or `null` = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Trace {
    pub fn load(path: impl AsRef<Path>) -> Result<Trace, String> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// A tool result as found on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WireToolResult {
    /// `tool_call_id` (openai), `tool_use_id` (anthropic); ollama has none.
    pub id: Option<String>,
    pub is_error: bool,
    /// The text content (text parts joined).
    pub content: String,
}

/// The text of a content that is a string or a list of parts with `text`.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                other => other.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn messages(body: &Value) -> &[Value] {
    body.get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The tool results in one request body, in order, read per style.
pub fn tool_results(style: Style, body: &Value) -> Vec<WireToolResult> {
    let mut out = Vec::new();
    if style == Style::OpenaiResponses {
        // `function_call_output` items of `input`.
        for item in body
            .get("input")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if item.get("type").and_then(Value::as_str) == Some("function_call_output") {
                let content = content_text(item.get("output").unwrap_or(&Value::Null));
                out.push(WireToolResult {
                    id: str_field(item, "call_id"),
                    is_error: content.starts_with("Error: "),
                    content,
                });
            }
        }
        return out;
    }
    for m in messages(body) {
        let role = m.get("role").and_then(Value::as_str);
        match style {
            Style::Openai | Style::Ollama | Style::OpenaiResponses => {
                if role == Some("tool") {
                    let content = content_text(m.get("content").unwrap_or(&Value::Null));
                    out.push(WireToolResult {
                        id: str_field(m, "tool_call_id"),
                        is_error: content.starts_with("Error: "),
                        content,
                    });
                }
            }
            Style::Anthropic => {
                if role != Some("user") {
                    continue;
                }
                let Some(blocks) = m.get("content").and_then(Value::as_array) else {
                    continue;
                };
                for b in blocks {
                    if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                        out.push(WireToolResult {
                            id: str_field(b, "tool_use_id"),
                            is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
                            content: content_text(b.get("content").unwrap_or(&Value::Null)),
                        });
                    }
                }
            }
        }
    }
    out
}

/// The names of the tools offered in one request body, read per style: openai and ollama
/// `tools[].function.name`, anthropic and openai-responses `tools[].name`.
pub fn offered_tools(style: Style, body: &Value) -> Vec<String> {
    let Some(tools) = body.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|t| match style {
            Style::Openai | Style::Ollama => t.pointer("/function/name"),
            Style::Anthropic | Style::OpenaiResponses => t.get("name"),
        })
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Whether `needle` is in the compact JSON serialization of `body` (keys sorted), or in any
/// string (key or value) inside it, so JSON escapes cannot hide a match.
pub fn body_contains(body: &Value, needle: &str) -> bool {
    fn any_string(v: &Value, needle: &str) -> bool {
        match v {
            Value::String(s) => s.contains(needle),
            Value::Array(items) => items.iter().any(|i| any_string(i, needle)),
            Value::Object(m) => m
                .iter()
                .any(|(k, v)| k.contains(needle) || any_string(v, needle)),
            _ => false,
        }
    }
    body.to_string().contains(needle) || any_string(body, needle)
}

/// Whether an event matches `"type"`, `"type:name"`, optionally with `@agent` (see
/// [`EventPattern`]).
pub fn event_matches(event: &Value, pattern: &str) -> bool {
    let Some(kind) = event.get("type").and_then(Value::as_str) else {
        return false;
    };
    let agent: Vec<&str> = event
        .get("agent")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    EventPattern::parse(pattern).matches(kind, event_name(event), &agent)
}

/// What `"type:name"` compares `name` with: the tool's name, a chain task's id, or a `stop`
/// event's reason.
fn event_name(event: &Value) -> Option<&str> {
    event
        .get("name")
        .or_else(|| event.get("task_id"))
        .or_else(|| event.get("reason"))
        .and_then(Value::as_str)
}

/// Compact rendering of a value for failure messages.
struct Show<'a, T: Serialize>(&'a T);

impl<T: Serialize> fmt::Display for Show<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match serde_json::to_string(self.0) {
            Ok(s) => f.write_str(&s),
            Err(_) => f.write_str("?"),
        }
    }
}

fn texts(t: &Option<Texts>) -> &[String] {
    t.as_ref().map(|t| t.0.as_slice()).unwrap_or(&[])
}

/// Checks `trace` against `scenario.expect`; returns one line per failure (empty = pass).
pub fn check(scenario: &Scenario, trace: &Trace) -> Vec<String> {
    let mut fails = Vec::new();
    if !trace.scenario.is_empty() && trace.scenario != scenario.name {
        fails.push(format!(
            "scenario: the trace is of {}, not {}",
            Show(&trace.scenario),
            Show(&scenario.name)
        ));
    }
    check_expect(&scenario.expect, scenario.style, trace, &mut fails);
    fails
}

/// `expect.traceparent` (see [`Expect::traceparent`]).
fn check_traceparent(want: &str, trace: &Trace, fails: &mut Vec<String>) {
    let headers: Vec<Option<&str>> = trace
        .requests
        .iter()
        .map(|r| r.get(crate::fake::TRACEPARENT_KEY).and_then(Value::as_str))
        .collect();
    match want {
        "absent" => {
            for (i, h) in headers.iter().enumerate() {
                if let Some(h) = h {
                    fails.push(format!("traceparent: request {i} carries one ({h})"));
                }
            }
        }
        "chat_spans" => {
            let mut traces: Vec<&str> = Vec::new();
            let mut spans: Vec<&str> = Vec::new();
            for (i, h) in headers.iter().enumerate() {
                let Some(h) = h else {
                    fails.push(format!("traceparent: request {i} carries none"));
                    continue;
                };
                let parts: Vec<&str> = h.split('-').collect();
                let hex = |s: &str, n: usize| {
                    s.len() == n
                        && s.bytes()
                            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                        && s.bytes().any(|b| b != b'0')
                };
                if parts.len() != 4
                    || parts[0] != "00"
                    || !hex(parts[1], 32)
                    || !hex(parts[2], 16)
                    || parts[3] != "01"
                {
                    fails.push(format!(
                        "traceparent: request {i}: not a sampled W3C traceparent: {h}"
                    ));
                    continue;
                }
                if !traces.contains(&parts[1]) {
                    traces.push(parts[1]);
                }
                if spans.contains(&parts[2]) {
                    fails.push(format!(
                        "traceparent: request {i} repeats span id {}",
                        parts[2]
                    ));
                }
                spans.push(parts[2]);
            }
            let turns = 1 + trace_turns(trace);
            if !headers.is_empty() && traces.len() > turns {
                fails.push(format!(
                    "traceparent: {} trace ids for {turns} turn(s): a turn's requests share one",
                    traces.len()
                ));
            }
        }
        other => fails.push(format!(
            "traceparent: expected \"chat_spans\" or \"absent\", got {}",
            Show(&other)
        )),
    }
}

/// How many turns after the first the trace ran (its `turn_end` events, less one).
fn trace_turns(trace: &Trace) -> usize {
    trace
        .events
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("turn_end"))
        .count()
        .saturating_sub(1)
}

fn check_expect(e: &Expect, style: Style, trace: &Trace, fails: &mut Vec<String>) {
    // A key this checker does not know would otherwise be carried unseen and check nothing (a
    // misspelt `tool_result` passes every trace): refuse it, naming it.
    if !e.extra.is_empty() {
        let keys: Vec<&str> = e.extra.keys().map(String::as_str).collect();
        fails.push(format!(
            "expect: unknown key(s) {} (the checker checks none of them; see \
             tests/conformance/README.md for the keys it knows)",
            keys.join(", ")
        ));
    }
    match (&e.config_error_contains, &trace.config_error) {
        (Some(want), Some(got)) => {
            for w in &want.0 {
                if !got.contains(w.as_str()) {
                    fails.push(format!(
                        "config_error_contains: {} is not in the creation error {}",
                        Show(w),
                        Show(got)
                    ));
                }
            }
        }
        (Some(want), None) => fails.push(format!(
            "config_error_contains: creating the client should have failed with {}, but it \
             succeeded",
            Show(&want.0)
        )),
        (None, Some(got)) => fails.push(format!(
            "config_error: creating the client failed: {}",
            Show(got)
        )),
        (None, None) => {}
    }
    if let Some(want) = e.outcome {
        if trace.outcome.as_deref() != Some(want.as_str()) {
            fails.push(format!(
                "outcome: expected {}, got {}",
                Show(&want),
                Show(&trace.outcome)
            ));
        }
    }
    if let Some(want) = &e.final_text {
        if trace.final_text.as_ref() != Some(want) {
            fails.push(format!(
                "final_text: expected {}, got {}",
                Show(want),
                Show(&trace.final_text)
            ));
        }
    }
    if let Some(want) = &e.output {
        let got = trace.output.clone().unwrap_or(Value::Null);
        if &got != want {
            fails.push(format!("output: expected {want}, got {got}"));
        }
    }
    for want in texts(&e.final_contains) {
        let got = trace.final_text.as_deref().unwrap_or("");
        if !got.contains(want.as_str()) {
            fails.push(format!(
                "final_contains: {} is not in the final text {}",
                Show(want),
                Show(&trace.final_text)
            ));
        }
    }
    if let Some(want) = &e.tool_results {
        check_tool_results(want, style, trace, fails);
    }
    if let Some(want) = &e.events {
        check_event_order(want, &trace.events, fails);
    }
    for pattern in e.no_events.iter().flatten() {
        let n = count_events(&trace.events, pattern);
        if n > 0 {
            fails.push(format!("no_events: {} appears {n} time(s)", Show(pattern)));
        }
    }
    for (pattern, min) in e.min_events.iter().flatten() {
        let n = count_events(&trace.events, pattern);
        if n < *min {
            fails.push(format!(
                "min_events: {} appears {n} time(s), expected at least {min}",
                Show(pattern)
            ));
        }
    }
    for (pattern, max) in e.max_events.iter().flatten() {
        let n = count_events(&trace.events, pattern);
        if n > *max {
            fails.push(format!(
                "max_events: {} appears {n} time(s), expected at most {max}",
                Show(pattern)
            ));
        }
    }
    for want in e.event_fields.iter().flatten() {
        check_event_fields(want, &trace.events, fails);
    }
    for (i, want) in e.requests.iter().flatten().enumerate() {
        let Some(body) = trace.requests.get(want.index) else {
            fails.push(format!(
                "requests[{i}]: no request at index {} (the server received {})",
                want.index,
                trace.requests.len()
            ));
            continue;
        };
        let offered = offered_tools(style, body);
        for t in &want.tools {
            if !offered.contains(t) {
                fails.push(format!(
                    "requests[{i}]: tool {} is not offered in request {} (offered: {})",
                    Show(t),
                    want.index,
                    Show(&offered)
                ));
            }
        }
        for t in &want.not_tools {
            if offered.contains(t) {
                fails.push(format!(
                    "requests[{i}]: tool {} is offered in request {}",
                    Show(t),
                    want.index
                ));
            }
        }
        for s in texts(&want.contains) {
            if !body_contains(body, s) {
                fails.push(format!(
                    "requests[{i}]: request {} does not contain {}",
                    want.index,
                    Show(s)
                ));
            }
        }
        for s in texts(&want.not_contains) {
            if body_contains(body, s) {
                fails.push(format!(
                    "requests[{i}]: request {} contains {}",
                    want.index,
                    Show(s)
                ));
            }
        }
    }
    if let Some(want) = e.request_count {
        if trace.requests.len() != want {
            fails.push(format!(
                "request_count: expected {want}, got {}",
                trace.requests.len()
            ));
        }
    }
    if let Some(want) = &e.traceparent {
        check_traceparent(want, trace, fails);
    }
    for (path, want) in e.workspace.iter().flatten() {
        let got = trace.workspace.get(path).and_then(Option::as_ref);
        match (want, got) {
            (Some(w), Some(g)) if w == g => {}
            (Some(w), Some(g)) => fails.push(format!(
                "workspace[{}]: expected {}, got {}",
                Show(path),
                Show(w),
                Show(g)
            )),
            (Some(w), None) => fails.push(format!(
                "workspace[{}]: expected {}, but the file does not exist",
                Show(path),
                Show(w)
            )),
            (None, Some(g)) => fails.push(format!(
                "workspace[{}]: must not exist, but has {}",
                Show(path),
                Show(g)
            )),
            (None, None) => {}
        }
    }
    if let Some(want) = &e.remote_requests {
        check_remote_requests(want, &trace.remote_requests, fails);
    }
    if let Some(want) = e.remote_request_count {
        if trace.remote_requests.len() != want {
            fails.push(format!(
                "remote_request_count: expected {want}, got {}",
                trace.remote_requests.len()
            ));
        }
    }
    if let Some(want) = &e.lifecycle {
        let got: Vec<&str> = trace
            .extra
            .get("lifecycle")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if got != want.iter().map(String::as_str).collect::<Vec<_>>() {
            fails.push(format!(
                "lifecycle: expected the hooks called as {}, got {}",
                Show(want),
                Show(&got)
            ));
        }
    }
    crate::check_step::check_step(e, trace.final_text.as_deref(), &trace.extra, fails);
    if let Some(want) = &e.resume_error_contains {
        let error = trace.extra.get("resume_error").and_then(Value::as_str);
        for w in &want.0 {
            if !error.is_some_and(|got| got.contains(w.as_str())) {
                fails.push(format!(
                    "resume_error_contains: {} not in the trace's resume_error {}",
                    Show(w),
                    Show(&error)
                ));
            }
        }
    }
    if let Some(want) = &e.chain_error_contains {
        let error = trace.extra.get("chain_error").and_then(Value::as_str);
        for w in &want.0 {
            if !error.is_some_and(|got| got.contains(w.as_str())) {
                fails.push(format!(
                    "chain_error_contains: {} not in the trace's chain_error {}",
                    Show(w),
                    Show(&error)
                ));
            }
        }
    }
    let turn_errors: Vec<&str> = trace
        .events
        .iter()
        .filter(|ev| ev.get("type").and_then(Value::as_str) == Some("turn_end"))
        .filter_map(|ev| ev.get("error").and_then(Value::as_str))
        .collect();
    for want in texts(&e.error_contains) {
        if !turn_errors.iter().any(|g| g.contains(want.as_str())) {
            fails.push(format!(
                "error_contains: {} is in no turn_end's error (errors: {})",
                Show(want),
                Show(&turn_errors)
            ));
        }
    }
    if let Some(want) = &e.compactions {
        check_compactions(want, trace, fails);
    }
    if let Some(want) = e.usage {
        if trace.usage != Some(want) {
            fails.push(format!(
                "usage: expected {}, got {}",
                Show(&want),
                Show(&trace.usage)
            ));
        }
    }
}

/// Each expected entry against the recorded request at the same position, for the keys it gives.
fn check_remote_requests(
    want: &[crate::remote::ExpectRemoteRequest],
    got: &[Value],
    fails: &mut Vec<String>,
) {
    for (i, w) in want.iter().enumerate() {
        let Some(g) = got.get(i) else {
            fails.push(format!(
                "remote_requests[{i}]: no such request (the services received {})",
                got.len()
            ));
            continue;
        };
        let field = |k: &str| g.get(k).and_then(Value::as_str).unwrap_or_default();
        let mut fail = |what: String| fails.push(format!("remote_requests[{i}]: {what}"));
        if let Some(s) = &w.service {
            if field("service") != s {
                fail(format!(
                    "service: expected {}, got {}",
                    Show(s),
                    Show(&field("service"))
                ));
            }
        }
        if let Some(m) = &w.method {
            if !field("method").eq_ignore_ascii_case(m) {
                fail(format!(
                    "method: expected {}, got {}",
                    Show(m),
                    Show(&field("method"))
                ));
            }
        }
        if let Some(p) = &w.path {
            if field("path") != p {
                fail(format!(
                    "path: expected {}, got {}",
                    Show(p),
                    Show(&field("path"))
                ));
            }
        }
        let query = g.get("query").cloned().unwrap_or(Value::Null);
        for (k, v) in w.query.iter().flatten() {
            let got_v = query.get(k);
            if got_v != Some(v) {
                fail(format!(
                    "query {}: expected {}, got {} (query {})",
                    Show(k),
                    Show(v),
                    Show(&got_v),
                    Show(&query)
                ));
            }
        }
        let header = |name: &str| -> Option<String> {
            g.get("headers")
                .and_then(Value::as_object)
                .and_then(|h| h.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)))
                .and_then(|(_, v)| v.as_str())
                .map(str::to_string)
        };
        for (k, v) in w.headers.iter().flatten() {
            let got_v = header(k);
            if got_v.as_deref() != Some(v.as_str()) {
                fail(format!(
                    "header {}: expected {}, got {}",
                    Show(k),
                    Show(v),
                    Show(&got_v)
                ));
            }
        }
        for k in w.no_headers.iter().flatten() {
            if let Some(v) = header(k) {
                fail(format!(
                    "header {} must be absent, got {}",
                    Show(k),
                    Show(&v)
                ));
            }
        }
        let body = field("body");
        if let Some(want_json) = &w.json {
            match serde_json::from_str::<Value>(body) {
                Ok(v) if &v == want_json => {}
                Ok(v) => fail(format!(
                    "json: expected {}, got {}",
                    Show(want_json),
                    Show(&v)
                )),
                Err(_) => fail(format!(
                    "json: expected {}, the body is not JSON: {}",
                    Show(want_json),
                    Show(&body)
                )),
            }
        }
        if let Some(want_body) = &w.body {
            if body != want_body {
                fail(format!(
                    "body: expected {}, got {}",
                    Show(want_body),
                    Show(&body)
                ));
            }
        }
        for t in texts(&w.body_contains) {
            if !body.contains(t.as_str()) {
                fail(format!(
                    "body does not contain {}: {}",
                    Show(t),
                    Show(&body)
                ));
            }
        }
        for t in texts(&w.body_not_contains) {
            if body.contains(t.as_str()) {
                fail(format!("body contains {}: {}", Show(t), Show(&body)));
            }
        }
    }
}

/// `on_compact`'s notices against the expectations, and against the trace's `compact` events:
/// the host must have been told what the stream said.
fn check_compactions(want: &[ExpectCompaction], trace: &Trace, fails: &mut Vec<String>) {
    let got = &trace.compactions;
    if got.len() != want.len() {
        fails.push(format!(
            "compactions: expected {} compaction(s) told to on_compact, got {}: {}",
            want.len(),
            got.len(),
            Show(got)
        ));
    }
    let events: Vec<&Value> = trace
        .events
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("compact"))
        .collect();
    let number = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        let pre = number(g, "pre_tokens");
        let post = number(g, "post_tokens");
        if let Some(t) = &w.trigger {
            if g.get("trigger").and_then(Value::as_str) != Some(t) {
                fails.push(format!(
                    "compactions[{i}]: expected trigger {}, got {}",
                    Show(t),
                    Show(&g.get("trigger"))
                ));
            }
        }
        let bounds = [
            ("pre_tokens_min", pre, w.pre_tokens_min, true),
            ("pre_tokens_max", pre, w.pre_tokens_max, false),
            ("post_tokens_min", post, w.post_tokens_min, true),
            ("post_tokens_max", post, w.post_tokens_max, false),
        ];
        for (key, got, bound, is_min) in bounds {
            let Some(bound) = bound else { continue };
            let ok = got.is_some_and(|g| if is_min { g >= bound } else { g <= bound });
            if !ok {
                fails.push(format!(
                    "compactions[{i}]: {key} {bound} does not hold for {}",
                    Show(&got)
                ));
            }
        }
        let summary = g.get("summary").and_then(Value::as_str).unwrap_or("");
        for s in texts(&w.summary_contains) {
            if !summary.contains(s.as_str()) {
                fails.push(format!(
                    "compactions[{i}]: {} is not in the summary {}",
                    Show(s),
                    Show(&summary)
                ));
            }
        }
        let same = events.iter().any(|e| {
            number(e, "pre_tokens") == pre
                && number(e, "post_tokens") == post
                && e.get("trigger") == g.get("trigger")
        });
        if !same {
            fails.push(format!(
                "compactions[{i}]: on_compact was told {} but no compact event says so",
                Show(g)
            ));
        }
    }
}

/// `event_fields`: some event matches the pattern, and every one that does has the fields.
fn check_event_fields(want: &ExpectEventFields, events: &[Value], fails: &mut Vec<String>) {
    let matching: Vec<&Value> = events
        .iter()
        .filter(|e| event_matches(e, &want.event))
        .collect();
    if matching.is_empty() {
        fails.push(format!(
            "event_fields: no event matches {}",
            Show(&want.event)
        ));
    }
    for (n, event) in matching.iter().enumerate() {
        for (key, value) in &want.fields {
            let got = event.get(key);
            if got != Some(value) {
                fails.push(format!(
                    "event_fields: {} #{n} has {key} {}, expected {}",
                    Show(&want.event),
                    Show(&got),
                    Show(value)
                ));
            }
        }
    }
}

fn count_events(events: &[Value], pattern: &str) -> usize {
    events.iter().filter(|e| event_matches(e, pattern)).count()
}

fn check_event_order(want: &[String], events: &[Value], fails: &mut Vec<String>) {
    let mut pos = 0;
    for (i, pattern) in want.iter().enumerate() {
        match events[pos..].iter().position(|e| event_matches(e, pattern)) {
            Some(p) => pos += p + 1,
            None => {
                let seen: Vec<String> = events
                    .iter()
                    .map(|e| {
                        let t = e.get("type").and_then(Value::as_str).unwrap_or("?");
                        let mut shown = match event_name(e) {
                            Some(n) => format!("{t}:{n}"),
                            None => t.to_string(),
                        };
                        if let Some(agent) = e.get("agent").and_then(Value::as_array) {
                            let chain: Vec<&str> = agent.iter().filter_map(Value::as_str).collect();
                            shown.push('@');
                            shown.push_str(&chain.join("/"));
                        }
                        shown
                    })
                    .collect();
                fails.push(format!(
                    "events: {} (events[{i}]) not found in order after event #{pos}; events were {}",
                    Show(pattern),
                    Show(&seen)
                ));
                return;
            }
        }
    }
}

fn check_tool_results(
    want: &[crate::scenario::ExpectToolResult],
    style: Style,
    trace: &Trace,
    fails: &mut Vec<String>,
) {
    let got = trace
        .requests
        .last()
        .map(|b| tool_results(style, b))
        .unwrap_or_default();
    if got.len() != want.len() {
        fails.push(format!(
            "tool_results: expected {} result(s), the last request carries {}: {}",
            want.len(),
            got.len(),
            Show(&got)
        ));
    }
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        if let Some(id) = &w.id {
            if g.id.as_ref() != Some(id) {
                fails.push(format!(
                    "tool_results[{i}]: expected id {}, got {}",
                    Show(id),
                    Show(&g.id)
                ));
            }
        }
        if let Some(is_error) = w.is_error {
            if g.is_error != is_error {
                fails.push(format!(
                    "tool_results[{i}]: expected is_error {is_error}, got {} (content {})",
                    g.is_error,
                    Show(&g.content)
                ));
            }
        }
        for s in texts(&w.contains) {
            if !g.content.contains(s.as_str()) {
                fails.push(format!(
                    "tool_results[{i}]: {} is not in {}",
                    Show(s),
                    Show(&g.content)
                ));
            }
        }
        for s in texts(&w.not_contains) {
            if g.content.contains(s.as_str()) {
                fails.push(format!(
                    "tool_results[{i}]: {} is in {}",
                    Show(s),
                    Show(&g.content)
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scenario(style: &str, expect: Value) -> Scenario {
        serde_json::from_value(json!({
            "name": "s", "style": style, "prompt": "p", "model": [{"text": "x"}], "expect": expect
        }))
        .unwrap()
    }

    fn trace(v: Value) -> Trace {
        serde_json::from_value(v).unwrap()
    }

    /// Asserts the check passes on `good` and fails on `bad` with a line containing `needle`.
    fn pass_fail(style: &str, expect: Value, good: Value, bad: Value, needle: &str) {
        let s = scenario(style, expect);
        let ok = check(&s, &trace(good));
        assert!(ok.is_empty(), "expected a pass, got {ok:?}");
        let fails = check(&s, &trace(bad));
        assert!(
            fails.iter().any(|f| f.contains(needle)),
            "expected a failure containing {needle:?}, got {fails:?}"
        );
    }

    #[test]
    fn an_unknown_expect_key_fails_the_check() {
        let good = json!({"outcome": "done"});
        let s = scenario("openai", json!({"outcome": "done"}));
        assert!(check(&s, &trace(good.clone())).is_empty());
        let s = scenario("openai", json!({"outcome": "done", "tool_reslts": []}));
        let fails = check(&s, &trace(good));
        assert!(
            fails
                .iter()
                .any(|f| f.contains("unknown key(s) tool_reslts")),
            "{fails:?}"
        );
    }

    #[test]
    fn event_fields_hold_for_every_matching_event() {
        let expect = json!({"event_fields": [
            {"event": "tool_result:nap", "fields": {"content": "cancelled", "is_error": true}}
        ]});
        let s = scenario("anthropic", expect.clone());
        let cancelled = json!({"events": [
            {"type": "tool_result", "name": "nap", "content": "cancelled", "is_error": true}
        ]});
        assert!(check(&s, &trace(cancelled)).is_empty());
        // The tool's own answer passed through instead of the engine's: fails, naming it.
        let slept = json!({"events": [
            {"type": "tool_result", "name": "nap", "content": "cancelled", "is_error": true},
            {"type": "tool_result", "name": "nap", "content": "interrupted", "is_error": false}
        ]});
        let fails = check(&s, &trace(slept));
        assert!(
            fails
                .iter()
                .any(|f| f.contains("#1 has content \"interrupted\"")),
            "{fails:?}"
        );
        assert!(
            fails.iter().any(|f| f.contains("#1 has is_error false")),
            "{fails:?}"
        );
        // No matching event at all fails too.
        let none = json!({"events": [{"type": "turn_end"}]});
        let fails = check(&s, &trace(none));
        assert!(
            fails.iter().any(|f| f.contains("no event matches")),
            "{fails:?}"
        );
        // A misspelt entry key is refused when the scenario is read.
        let bad: Result<Expect, _> = serde_json::from_value(json!({"event_fields": [
            {"event": "retry", "field": {"wait_ms": 1}}
        ]}));
        assert!(bad.is_err());
    }

    fn openai_body(tools: &[&str], messages: Value) -> Value {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t, "parameters": {"type": "object"}}}))
            .collect();
        json!({"model": "fake", "messages": messages, "tools": tools, "stream": true})
    }

    #[test]
    fn empty_expect_passes() {
        assert!(check(&scenario("openai", json!({})), &Trace::default()).is_empty());
    }

    #[test]
    fn scenario_name_mismatch_fails() {
        pass_fail(
            "openai",
            json!({}),
            json!({"scenario": "s"}),
            json!({"scenario": "other"}),
            "scenario: the trace is of",
        );
    }

    #[test]
    fn config_error_contains() {
        pass_fail(
            "openai",
            json!({"config_error_contains": ["rules[0]", "on_timeout"]}),
            json!({"config_error": "invalid configuration: policy rules[0].on_timeout: no"}),
            json!({"config_error": "invalid configuration: policy rules[1].action: no"}),
            "config_error_contains: \"rules[0]\" is not in the creation error",
        );
        // A client that was created when it should not have been fails.
        pass_fail(
            "openai",
            json!({"config_error_contains": "version"}),
            json!({"config_error": "policy version: newer"}),
            json!({"outcome": "done"}),
            "but it succeeded",
        );
        // A creation error nobody expected fails even with an empty expect.
        pass_fail(
            "openai",
            json!({}),
            json!({"outcome": "done"}),
            json!({"config_error": "boom"}),
            "config_error: creating the client failed",
        );
        pass_fail(
            "openai",
            json!({"outcome": "budget"}),
            json!({"outcome": "budget"}),
            json!({"outcome": "done"}),
            "outcome: expected \"budget\"",
        );
    }

    #[test]
    fn outcome() {
        pass_fail(
            "openai",
            json!({"outcome": "max_turns"}),
            json!({"outcome": "max_turns"}),
            json!({"outcome": "done"}),
            "outcome: expected \"max_turns\", got \"done\"",
        );
        let s = scenario("openai", json!({"outcome": "done"}));
        assert_eq!(check(&s, &Trace::default()).len(), 1);
    }

    #[test]
    fn final_text_and_contains() {
        pass_fail(
            "openai",
            json!({"final_text": "done"}),
            json!({"final_text": "done"}),
            json!({"final_text": "done!"}),
            "final_text: expected \"done\"",
        );
        pass_fail(
            "openai",
            json!({"final_text": "done"}),
            json!({"final_text": "done"}),
            json!({}),
            "got null",
        );
        pass_fail(
            "openai",
            json!({"final_contains": "lo th"}),
            json!({"final_text": "Hello there"}),
            json!({"final_text": "Hello"}),
            "final_contains",
        );
        pass_fail(
            "openai",
            json!({"final_contains": ["a", "b"]}),
            json!({"final_text": "ab"}),
            json!({"final_text": "a"}),
            "\"b\" is not in",
        );
    }

    #[test]
    fn tool_results_openai() {
        let good = openai_body(
            &["echo"],
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "echo", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{\"text\":\"hi from model\"}"},
                {"role": "tool", "tool_call_id": "call_2",
                 "content": [{"type": "text", "text": "Error: "}, {"type": "text", "text": "boom"}]}
            ]),
        );
        let expect = json!({"tool_results": [
            {"id": "call_1", "is_error": false, "contains": "hi from model", "not_contains": "Error"},
            {"id": "call_2", "is_error": true, "contains": "boom"}
        ]});
        let ok = json!({"requests": [{"messages": []}, good.clone()]});
        // Wrong id.
        let mut bad = good.clone();
        bad["messages"][2]["tool_call_id"] = json!("call_9");
        pass_fail(
            "openai",
            expect.clone(),
            ok.clone(),
            json!({"requests": [bad]}),
            "expected id \"call_1\", got \"call_9\"",
        );
        // Not an error any more.
        let mut bad = good.clone();
        bad["messages"][3]["content"] = json!("boom");
        pass_fail(
            "openai",
            expect.clone(),
            ok.clone(),
            json!({"requests": [bad]}),
            "tool_results[1]: expected is_error true, got false",
        );
        // contains / not_contains.
        let mut bad = good.clone();
        bad["messages"][2]["content"] = json!("Error-free but wrong");
        let fails = check(
            &scenario("openai", expect.clone()),
            &trace(json!({"requests": [bad]})),
        );
        assert!(fails
            .iter()
            .any(|f| f.contains("\"hi from model\" is not in")));
        assert!(fails.iter().any(|f| f.contains("\"Error\" is in")));
        // Only the LAST request counts.
        pass_fail(
            "openai",
            expect.clone(),
            ok,
            json!({"requests": [good, {"messages": []}]}),
            "expected 2 result(s), the last request carries 0",
        );
        // No request at all compares against an empty list.
        pass_fail(
            "openai",
            json!({"tool_results": []}),
            json!({}),
            json!({"requests": [openai_body(&[], json!([{"role": "tool", "tool_call_id": "x", "content": "r"}]))]}),
            "expected 0 result(s)",
        );
        pass_fail(
            "openai",
            json!({"tool_results": [{"is_error": false}]}),
            json!({"requests": [openai_body(&[], json!([{"role": "tool", "tool_call_id": "x", "content": "r"}]))]}),
            json!({}),
            "expected 1 result(s), the last request carries 0",
        );
    }

    #[test]
    fn tool_results_anthropic() {
        let body = |is_error: Value, content: Value| {
            json!({"model": "fake", "max_tokens": 10, "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": is_error, "content": content}
                ]}
            ]})
        };
        let expect =
            json!({"tool_results": [{"id": "toolu_1", "is_error": true, "contains": "not today"}]});
        pass_fail(
            "anthropic",
            expect.clone(),
            json!({"requests": [body(json!(true), json!("denied: not today"))]}),
            json!({"requests": [body(json!(false), json!("denied: not today"))]}),
            "expected is_error true, got false",
        );
        // A content of text blocks; `Error: ` means nothing for anthropic.
        pass_fail(
            "anthropic",
            json!({"tool_results": [{"is_error": false, "contains": "ok"}]}),
            json!({"requests": [body(Value::Null, json!([{"type": "text", "text": "Error: ok"}]))]}),
            json!({"requests": [body(Value::Null, json!([{"type": "text", "text": "nope"}]))]}),
            "\"ok\" is not in \"nope\"",
        );
        // openai-shaped results are not read for anthropic.
        let openai_shaped = openai_body(
            &[],
            json!([{"role": "tool", "tool_call_id": "toolu_1", "content": "Error: not today"}]),
        );
        pass_fail(
            "anthropic",
            expect,
            json!({"requests": [body(json!(true), json!("not today"))]}),
            json!({"requests": [openai_shaped]}),
            "the last request carries 0",
        );
    }

    #[test]
    fn tool_results_ollama() {
        let body = |content: &str| {
            json!({"model": "fake", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "echo", "arguments": {}}}]},
                {"role": "tool", "tool_name": "echo", "content": content}
            ]})
        };
        pass_fail(
            "ollama",
            json!({"tool_results": [{"is_error": false, "contains": "hi from model"}]}),
            json!({"requests": [body("{\"text\":\"hi from model\"}")]}),
            json!({"requests": [body("Error: hi from model")]}),
            "expected is_error false, got true",
        );
        // ollama carries no ids: an expected id cannot match.
        pass_fail(
            "ollama",
            json!({"tool_results": [{"is_error": false}]}),
            json!({"requests": [body("x")]}),
            json!({"requests": [body("Error: x")]}),
            "is_error",
        );
        let s = scenario("ollama", json!({"tool_results": [{"id": "call_1"}]}));
        let fails = check(&s, &trace(json!({"requests": [body("x")]})));
        assert_eq!(
            fails,
            vec!["tool_results[0]: expected id \"call_1\", got null"]
        );
    }

    #[test]
    fn events_in_order() {
        let events = json!([
            {"type": "turn_start"},
            {"type": "tool_call", "name": "echo"},
            {"type": "gate", "name": "echo", "decision": "allow"},
            {"type": "tool_result", "name": "echo"},
            {"type": "turn_end", "outcome": "done"}
        ]);
        let expect = json!({"events": ["turn_start", "tool_call:echo", "gate", "tool_result:echo", "turn_end"]});
        pass_fail(
            "openai",
            expect.clone(),
            json!({ "events": events }),
            json!({"events": [{"type": "turn_start"}, {"type": "tool_result", "name": "echo"},
                              {"type": "tool_call", "name": "echo"}, {"type": "gate"}, {"type": "turn_end"}]}),
            "\"tool_result:echo\" (events[3]) not found",
        );
        // The name must match too.
        pass_fail(
            "openai",
            json!({"events": ["tool_call:echo"]}),
            json!({ "events": events }),
            json!({"events": [{"type": "tool_call", "name": "other"}]}),
            "\"tool_call:echo\" (events[0]) not found",
        );
        // Repeated patterns need repeated events.
        pass_fail(
            "openai",
            json!({"events": ["text_delta", "text_delta"]}),
            json!({"events": [{"type": "text_delta"}, {"type": "usage"}, {"type": "text_delta"}]}),
            json!({"events": [{"type": "text_delta"}]}),
            "events[1]",
        );
    }

    #[test]
    fn no_min_max_events() {
        let ev = |types: &[&str]| -> Value {
            json!({"events": types.iter().map(|t| json!({"type": t})).collect::<Vec<_>>()})
        };
        pass_fail(
            "openai",
            json!({"no_events": ["pending"]}),
            ev(&["gate", "turn_end"]),
            ev(&["gate", "pending", "turn_end"]),
            "no_events: \"pending\" appears 1 time(s)",
        );
        pass_fail(
            "openai",
            json!({"no_events": ["tool_result:write"]}),
            json!({"events": [{"type": "tool_result", "name": "read"}]}),
            json!({"events": [{"type": "tool_result", "name": "write"}]}),
            "no_events",
        );
        pass_fail(
            "openai",
            json!({"min_events": {"text_delta": 2}}),
            ev(&["text_delta", "text_delta", "text"]),
            ev(&["text_delta", "text"]),
            "min_events: \"text_delta\" appears 1 time(s), expected at least 2",
        );
        pass_fail(
            "openai",
            json!({"max_events": {"retry": 1}}),
            ev(&["retry", "request"]),
            ev(&["retry", "retry"]),
            "max_events: \"retry\" appears 2 time(s), expected at most 1",
        );
    }

    #[test]
    fn requests_tools_and_contains() {
        let expect = json!({"requests": [
            {"index": 0, "tools": ["read", "edit"], "not_tools": ["write"]},
            {"index": 1, "contains": "My name is Ada.", "not_contains": "readOnly"}
        ]});
        let r1 = openai_body(
            &["read"],
            json!([{"role": "user", "content": "My name is Ada."}]),
        );
        pass_fail(
            "openai",
            expect.clone(),
            json!({"requests": [openai_body(&["read", "edit", "bash"], json!([])), r1.clone()]}),
            json!({"requests": [openai_body(&["read", "write"], json!([])), r1.clone()]}),
            "requests[0]: tool \"edit\" is not offered in request 0",
        );
        let fails = check(
            &scenario("openai", expect.clone()),
            &trace(json!({"requests": [openai_body(&["read", "edit", "write"], json!([]))]})),
        );
        assert!(fails
            .iter()
            .any(|f| f.contains("requests[0]: tool \"write\" is offered")));
        assert!(fails
            .iter()
            .any(|f| f.contains("requests[1]: no request at index 1 (the server received 1)")));
        let mut hinted = r1.clone();
        hinted["tools"][0]["function"]["readOnly"] = json!(true);
        pass_fail(
            "openai",
            expect,
            json!({"requests": [openai_body(&["read", "edit"], json!([])), r1]}),
            json!({"requests": [openai_body(&["read", "edit"], json!([])), hinted]}),
            "requests[1]: request 1 contains \"readOnly\"",
        );
        // anthropic tools are tools[].name; an openai-shaped list offers nothing there.
        pass_fail(
            "anthropic",
            json!({"requests": [{"index": 0, "tools": ["echo"]}]}),
            json!({"requests": [{"tools": [{"name": "echo", "input_schema": {"type": "object"}}]}]}),
            json!({"requests": [openai_body(&["echo"], json!([]))]}),
            "tool \"echo\" is not offered",
        );
        pass_fail(
            "ollama",
            json!({"requests": [{"index": 0, "tools": ["echo"]}]}),
            json!({"requests": [{"tools": [{"type": "function", "function": {"name": "echo"}}]}]}),
            json!({"requests": [{"tools": [{"name": "echo"}]}]}),
            "tool \"echo\" is not offered",
        );
    }

    #[test]
    fn contains_sees_through_escapes() {
        // The tool result content is a JSON text inside a string: its quotes are escaped in the
        // compact body, but the raw string still matches.
        let body = json!({"messages": [{"role": "tool", "content": "{\"text\":\"hi\"}"}]});
        assert!(body_contains(&body, "{\"text\":\"hi\"}"));
        assert!(body_contains(&body, "\"role\":\"tool\""));
        assert!(!body_contains(&body, "bye"));
        pass_fail(
            "openai",
            json!({"requests": [{"index": 0, "contains": "line 1\nline 2"}]}),
            json!({"requests": [{"messages": [{"content": "line 1\nline 2"}]}]}),
            json!({"requests": [{"messages": [{"content": "line 1 line 2"}]}]}),
            "does not contain",
        );
    }

    #[test]
    fn request_count() {
        pass_fail(
            "openai",
            json!({"request_count": 2}),
            json!({"requests": [{}, {}]}),
            json!({"requests": [{}, {}, {}]}),
            "request_count: expected 2, got 3",
        );
    }

    #[test]
    fn traceparent() {
        let tp = |t: &str, s: &str| format!("00-{t}-{s}-01");
        let (t1, t2) = (
            "0af7651916cd43dd8448eb211c80319c",
            "1bf7651916cd43dd8448eb211c80319c",
        );
        let (s1, s2) = ("b7ad6b7169203331", "c7ad6b7169203331");
        let turn_end = json!({"type": "turn_end"});
        pass_fail(
            "openai",
            json!({"traceparent": "chat_spans"}),
            json!({"requests": [{"_traceparent": tp(t1, s1)}, {"_traceparent": tp(t1, s2)}],
                   "events": [turn_end]}),
            json!({"requests": [{"_traceparent": tp(t1, s1)}, {"_traceparent": tp(t2, s2)}],
                   "events": [turn_end]}),
            "traceparent: 2 trace ids for 1 turn(s)",
        );
        pass_fail(
            "openai",
            json!({"traceparent": "chat_spans"}),
            json!({"requests": [{"_traceparent": tp(t1, s1)}]}),
            json!({"requests": [{"_traceparent": tp(t1, s1)}, {"_traceparent": tp(t1, s1)}]}),
            "traceparent: request 1 repeats span id",
        );
        pass_fail(
            "openai",
            json!({"traceparent": "chat_spans"}),
            json!({"requests": [{"_traceparent": tp(t1, s1)}]}),
            json!({"requests": [{}]}),
            "traceparent: request 0 carries none",
        );
        pass_fail(
            "openai",
            json!({"traceparent": "chat_spans"}),
            json!({"requests": [{"_traceparent": tp(t1, s1)}]}),
            json!({"requests": [{"_traceparent": format!("00-{t1}-0000000000000000-01")}]}),
            "not a sampled W3C traceparent",
        );
        pass_fail(
            "openai",
            json!({"traceparent": "absent"}),
            json!({"requests": [{}, {}]}),
            json!({"requests": [{}, {"_traceparent": tp(t1, s1)}]}),
            "traceparent: request 1 carries one",
        );
    }

    #[test]
    fn workspace() {
        let expect = json!({"workspace": {"out.txt": "x", "gone.txt": null}});
        pass_fail(
            "openai",
            expect.clone(),
            json!({"workspace": {"out.txt": "x", "other.txt": "y"}}),
            json!({"workspace": {"out.txt": "x\n"}}),
            "workspace[\"out.txt\"]: expected \"x\", got \"x\\n\"",
        );
        pass_fail(
            "openai",
            expect.clone(),
            json!({"workspace": {"out.txt": "x", "gone.txt": null}}),
            json!({"workspace": {"out.txt": "x", "gone.txt": ""}}),
            "workspace[\"gone.txt\"]: must not exist",
        );
        pass_fail(
            "openai",
            expect,
            json!({"workspace": {"out.txt": "x"}}),
            json!({"workspace": {}}),
            "the file does not exist",
        );
    }

    #[test]
    fn usage() {
        pass_fail(
            "openai",
            json!({"usage": {"input_tokens": 10, "output_tokens": 5}}),
            json!({"usage": {"input_tokens": 10, "output_tokens": 5}}),
            json!({"usage": {"input_tokens": 10, "output_tokens": 4}}),
            "usage: expected {\"input_tokens\":10,\"output_tokens\":5}",
        );
        pass_fail(
            "openai",
            json!({"usage": {"input_tokens": 0, "output_tokens": 0}}),
            json!({"usage": {"input_tokens": 0, "output_tokens": 0}}),
            json!({}),
            "got null",
        );
    }

    #[test]
    fn remote_requests_every_key() {
        let rec = json!({"service": "api", "method": "POST", "path": "/users/a b",
            "query": {"tag": ["x", "y"], "q": "1"},
            "headers": {"authorization": "Bearer t", "content-type": "application/json"},
            "body": "{\"b\":1,\"a\":\"z\"}"});
        let good = json!({"remote_requests": [rec.clone()]});
        let cases: Vec<(Value, Value, &str)> = vec![
            (
                json!({"service": "api"}),
                json!({"service": "other"}),
                "service: expected",
            ),
            (
                json!({"method": "post"}),
                json!({"method": "GET"}),
                "method: expected",
            ),
            (
                json!({"path": "/users/a b"}),
                json!({"path": "/users/a%20b"}),
                "path: expected",
            ),
            (
                json!({"query": {"tag": ["x", "y"]}}),
                json!({"query": {"tag": "x"}}),
                "query \"tag\"",
            ),
            (
                json!({"headers": {"Authorization": "Bearer t"}}),
                json!({"headers": {}}),
                "header \"Authorization\"",
            ),
            (
                json!({"no_headers": ["X-Secret"]}),
                json!({"headers": {"x-secret": "s"}}),
                "must be absent",
            ),
            (
                json!({"json": {"a": "z", "b": 1}}),
                json!({"body": "{\"a\":1}"}),
                "json: expected",
            ),
            (
                json!({"json": {"b": 1, "a": "z"}}),
                json!({"body": "nope"}),
                "not JSON",
            ),
            (
                json!({"body": "{\"b\":1,\"a\":\"z\"}"}),
                json!({"body": "{\"a\":\"z\",\"b\":1}"}),
                "body: expected",
            ),
            (
                json!({"body_contains": "\"a\""}),
                json!({"body": "{}"}),
                "body does not contain",
            ),
            (
                json!({"body_not_contains": "secret"}),
                json!({"body": "a secret"}),
                "body contains",
            ),
        ];
        for (want, change, needle) in cases {
            let mut bad = rec.clone();
            for (k, v) in change.as_object().unwrap() {
                bad[k] = v.clone();
            }
            pass_fail(
                "openai",
                json!({"remote_requests": [want]}),
                good.clone(),
                json!({"remote_requests": [bad]}),
                needle,
            );
        }
        pass_fail(
            "openai",
            json!({"remote_requests": [{}, {}]}),
            json!({"remote_requests": [rec.clone(), rec.clone()]}),
            good.clone(),
            "remote_requests[1]: no such request",
        );
        pass_fail(
            "openai",
            json!({"remote_request_count": 1}),
            good,
            json!({}),
            "remote_request_count: expected 1, got 0",
        );
    }

    #[test]
    fn error_contains_and_chain_error_contains() {
        pass_fail(
            "openai",
            json!({"error_contains": ["step limit", "loop"]}),
            json!({"events": [{"type": "turn_end", "error": "stopped: the step limit (a loop?)"}]}),
            json!({"events": [{"type": "turn_end", "error": "script exhausted"}]}),
            "error_contains",
        );
        pass_fail(
            "openai",
            json!({"chain_error_contains": "tasks[1].id"}),
            json!({"chain_error": "chain: at tasks[1].id: \"a\" is also the id of tasks[0]"}),
            json!({"events": []}),
            "chain_error_contains",
        );
    }

    #[test]
    fn chain_events_match_by_task_id() {
        pass_fail(
            "openai",
            json!({"events": ["chain_task_start:chat", "chain_task_end:chat"]}),
            json!({"events": [{"type": "chain_task_start", "task_id": "chat"},
                              {"type": "chain_task_end", "task_id": "chat"}]}),
            json!({"events": [{"type": "chain_task_start", "task_id": "other"},
                              {"type": "chain_task_end", "task_id": "chat"}]}),
            "events",
        );
    }

    #[test]
    fn several_failures_are_all_reported() {
        let s = scenario(
            "openai",
            json!({"outcome": "done", "final_text": "a", "request_count": 1, "no_events": ["retry"]}),
        );
        let fails = check(
            &s,
            &trace(json!({"outcome": "error", "final_text": "b", "events": [{"type": "retry"}]})),
        );
        assert_eq!(fails.len(), 4, "{fails:?}");
    }

    #[test]
    fn agent_patterns() {
        let events = |agent: Value| {
            json!({"events": [
                {"type": "tool_call", "name": "read", "agent": agent},
                {"type": "turn_end"}
            ]})
        };
        pass_fail(
            "openai",
            json!({"events": ["tool_call:read@researcher", "turn_end@"]}),
            events(json!(["researcher"])),
            events(json!(["other"])),
            "\"tool_call:read@researcher\" (events[0]) not found",
        );
        // A nested chain is joined with `/`; the failure lists events with their chain.
        pass_fail(
            "openai",
            json!({"events": ["tool_call@lead/researcher"]}),
            events(json!(["lead", "researcher"])),
            events(json!(["researcher"])),
            "tool_call:read@researcher",
        );
        // `@` alone: the client's own events; `@*`: any subagent's; no `@`: any.
        pass_fail(
            "openai",
            json!({"no_events": ["tool_call@"], "min_events": {"tool_call@*": 1, "tool_call": 1}}),
            events(json!(["a"])),
            json!({"events": [{"type": "tool_call", "name": "read"}]}),
            "no_events: \"tool_call@\" appears 1 time(s)",
        );
    }

    #[test]
    fn error_contains() {
        pass_fail(
            "openai",
            json!({"error_contains": "compaction failed"}),
            json!({"events": [
                {"type": "turn_end", "outcome": "error", "error": "compaction failed: x"},
                {"type": "turn_end", "outcome": "done"}
            ]}),
            json!({"events": [{"type": "turn_end", "outcome": "error", "error": "other"}]}),
            "error_contains: \"compaction failed\" is in no turn_end's error",
        );
    }

    #[test]
    fn lifecycle_calls_in_order() {
        let expect = json!({"lifecycle": ["on_turn_start", "on_prompt", "on_turn_end:done"]});
        pass_fail(
            "openai",
            expect.clone(),
            json!({"lifecycle": ["on_turn_start", "on_prompt", "on_turn_end:done"]}),
            json!({"lifecycle": ["on_prompt", "on_turn_start", "on_turn_end:done"]}),
            "lifecycle: expected the hooks called as",
        );
        pass_fail(
            "openai",
            expect,
            json!({"lifecycle": ["on_turn_start", "on_prompt", "on_turn_end:done"]}),
            json!({}),
            "lifecycle: expected the hooks called as",
        );
    }

    #[test]
    fn compactions() {
        let told = json!({"trigger": "auto", "pre_tokens": 1500, "post_tokens": 40,
                          "summary": "SUMMARY: two echoes"});
        let event = json!({"type": "compact", "trigger": "auto", "pre_tokens": 1500,
                           "post_tokens": 40, "summary": "SUMMARY: two echoes"});
        let expect = json!({"compactions": [{"trigger": "auto", "pre_tokens_min": 1500,
            "pre_tokens_max": 1600, "post_tokens_min": 1, "post_tokens_max": 100,
            "summary_contains": "two echoes"}]});
        let good = json!({"compactions": [told], "events": [event]});
        pass_fail(
            "openai",
            expect.clone(),
            good.clone(),
            json!({"compactions": [], "events": []}),
            "compactions: expected 1 compaction(s) told to on_compact, got 0",
        );
        let mut small = good.clone();
        small["compactions"][0]["pre_tokens"] = json!(900);
        small["events"][0]["pre_tokens"] = json!(900);
        pass_fail(
            "openai",
            expect.clone(),
            good.clone(),
            small,
            "compactions[0]: pre_tokens_min 1500 does not hold for 900",
        );
        let mut manual = good.clone();
        manual["compactions"][0]["trigger"] = json!("manual");
        pass_fail(
            "openai",
            expect.clone(),
            good.clone(),
            manual,
            "compactions[0]: expected trigger \"auto\"",
        );
        // on_compact told something no event said.
        let mut unlike = good.clone();
        unlike["events"][0]["post_tokens"] = json!(41);
        pass_fail(
            "openai",
            expect.clone(),
            good.clone(),
            unlike,
            "but no compact event says so",
        );
        let mut other = good;
        other["compactions"][0]["summary"] = json!("something else");
        pass_fail(
            "openai",
            expect,
            json!({"compactions": [told], "events": [event]}),
            other,
            "is not in the summary",
        );
    }

    #[test]
    fn usage_with_cache_tokens() {
        pass_fail(
            "anthropic",
            json!({"usage": {"input_tokens": 30, "output_tokens": 4, "cache_read_input_tokens": 24}}),
            json!({"usage": {"input_tokens": 30, "output_tokens": 4, "cache_read_input_tokens": 24}}),
            json!({"usage": {"input_tokens": 30, "output_tokens": 4}}),
            "usage: expected",
        );
    }
}
