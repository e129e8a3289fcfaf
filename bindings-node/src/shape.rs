//! The JavaScript spelling of core's JSON: camelCase keys for the small typed surface, and
//! `args` for `arguments` (a reserved name in strict-mode JavaScript). Values the host or the
//! model own (tool arguments, results, metadata, progress data, todos) are never touched.

use contenox::{
    Event, ModelInfo, PendingRequest, SearchRequest, SearchResult, ToolCallEvent, ToolOutput,
};
use serde_json::{Map, Value};

/// `call_id` -> `callId`; `arguments` -> `args`; other keys as they are.
pub fn camel(key: &str) -> String {
    if key == "arguments" {
        return "args".to_string();
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `timeoutMs` -> `timeout_ms`; `args` -> `arguments`; other keys as they are.
pub fn snake(key: &str) -> String {
    if key == "args" {
        return "arguments".to_string();
    }
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Rename the keys of one object level; nested values are left alone.
fn rename(map: Map<String, Value>, f: fn(&str) -> String) -> Map<String, Value> {
    map.into_iter().map(|(k, v)| (f(&k), v)).collect()
}

/// Rename the keys of `value` (one level) when it is an object.
fn rename_value(value: Value, f: fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(rename(map, f)),
        other => other,
    }
}

/// An event as JavaScript sees it: its own keys and those of `usage` and `request` in camelCase.
pub fn event(event: &Event) -> Value {
    let Ok(Value::Object(map)) = serde_json::to_value(event) else {
        // An event always serializes to an object (serde tag `type`).
        return Value::Null;
    };
    Value::Object(
        map.into_iter()
            .map(|(k, v)| {
                let v = match k.as_str() {
                    "usage" | "request" => rename_value(v, camel),
                    _ => v,
                };
                (camel(&k), v)
            })
            .collect(),
    )
}

/// A batch of events as one JSON array text.
pub fn events(batch: &[Event]) -> String {
    Value::Array(batch.iter().map(event).collect()).to_string()
}

/// The gate's view of a call: `{name, args, callId, hints, source, server?}`.
pub fn tool_call(call: &ToolCallEvent) -> String {
    match serde_json::to_value(call) {
        Ok(v) => rename_value(v, camel).to_string(),
        Err(_) => Value::Null.to_string(),
    }
}

/// A request as `waitFor` sees it: `{kind, prompt?, timeoutMs?, data?, callId, name, args}`.
pub fn pending_request(request: &PendingRequest) -> String {
    match serde_json::to_value(request) {
        Ok(v) => rename_value(v, camel).to_string(),
        Err(_) => Value::Null.to_string(),
    }
}

/// A tool result as `afterTool` sees it: `{content, isError, metadata?}`.
pub fn tool_output(output: &ToolOutput) -> String {
    match serde_json::to_value(output) {
        Ok(v) => rename_value(v, camel).to_string(),
        Err(_) => Value::Null.to_string(),
    }
}

/// A tool result given by JavaScript (`{content, isError?, metadata?}`) in core's shape.
pub fn tool_output_from_js(value: Value) -> Result<ToolOutput, String> {
    serde_json::from_value(rename_value(value, snake))
        .map_err(|e| format!("a tool result is {{ content, isError?, metadata? }}: {e}"))
}

/// A request given by JavaScript (`{kind, prompt?, timeoutMs?, data?}`) in core's shape.
pub fn pending_request_from_js(value: Value) -> Result<PendingRequest, String> {
    if !value.is_object() {
        return Err(format!(
            "pending(request) takes an object {{ kind, prompt?, timeoutMs?, data? }}, got {value}"
        ));
    }
    serde_json::from_value(rename_value(value, snake)).map_err(|e| format!("pending(request): {e}"))
}

/// A web search request as the provider sees it:
/// `{query, maxResults, allowedDomains, blockedDomains}`.
pub fn search_request(request: &SearchRequest) -> String {
    match serde_json::to_value(request) {
        Ok(v) => rename_value(v, camel).to_string(),
        Err(_) => Value::Null.to_string(),
    }
}

/// What a web search provider resolved to: `[{title, url, snippet?}]` (core checks it).
pub fn search_results_from_js(value: Value) -> Result<Vec<SearchResult>, String> {
    SearchResult::list_from_json(value)
}

/// The models a server offers: `[{id, displayName?}]`.
pub fn models(models: &[ModelInfo]) -> String {
    Value::Array(
        models
            .iter()
            .map(|m| match serde_json::to_value(m) {
                Ok(v) => rename_value(v, camel),
                Err(_) => Value::Null,
            })
            .collect(),
    )
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use contenox::{Hints, Outcome, Source, Usage};
    use serde_json::json;

    #[test]
    fn keys_change_and_values_stay() {
        assert_eq!(camel("call_id"), "callId");
        assert_eq!(camel("final_text"), "finalText");
        assert_eq!(camel("arguments"), "args");
        assert_eq!(camel("type"), "type");
        assert_eq!(snake("timeoutMs"), "timeout_ms");
        assert_eq!(snake("args"), "arguments");
        assert_eq!(snake("kind"), "kind");

        let e = Event::ToolCall {
            call_id: "c1".into(),
            name: "echo".into(),
            arguments: json!({"some_key": 1}),
            agent: Vec::new(),
        };
        assert_eq!(
            event(&e),
            json!({"type": "tool_call", "callId": "c1", "name": "echo", "args": {"some_key": 1}})
        );
        let e = Event::TurnEnd {
            outcome: Outcome::Done,
            final_text: "ok".into(),
            usage: Usage {
                input_tokens: 3,
                output_tokens: 4,
                cache_read_input_tokens: 2,
                cache_creation_input_tokens: 0,
            },
            error: None,
        };
        assert_eq!(
            event(&e),
            json!({"type": "turn_end", "outcome": "done", "finalText": "ok",
                   "usage": {"inputTokens": 3, "outputTokens": 4, "cacheReadInputTokens": 2}})
        );
    }

    #[test]
    fn gate_views() {
        let call = ToolCallEvent {
            name: "write".into(),
            arguments: json!({"file_path": "x"}),
            call_id: "c2".into(),
            hints: Hints::destructive(),
            source: Source::Builtin,
            server: None,
            agent: Vec::new(),
        };
        let v: Value = serde_json::from_str(&tool_call(&call)).unwrap();
        assert_eq!(
            v,
            json!({"name": "write", "args": {"file_path": "x"}, "callId": "c2",
                   "hints": {"readOnly": false, "destructive": true, "openWorld": false},
                   "source": "builtin"})
        );
        let r = pending_request_from_js(json!({"kind": "input", "prompt": "p", "timeoutMs": 5}))
            .unwrap();
        assert_eq!(r.timeout_ms, Some(5));
        assert!(pending_request_from_js(json!("x")).is_err());
        let out = tool_output_from_js(json!({"content": {"a": 1}, "isError": true})).unwrap();
        assert!(out.is_error);
        assert!(tool_output_from_js(json!({"isError": true})).is_err());
    }

    #[test]
    fn search_views() {
        let request = SearchRequest {
            query: "rust".into(),
            max_results: 3,
            allowed_domains: vec!["example.com".into()],
            blocked_domains: vec![],
        };
        let v: Value = serde_json::from_str(&search_request(&request)).unwrap();
        assert_eq!(
            v,
            json!({"query": "rust", "maxResults": 3, "allowedDomains": ["example.com"],
                   "blockedDomains": []})
        );
        let results =
            search_results_from_js(json!([{"title": "T", "url": "https://a.b/"}])).unwrap();
        assert_eq!(results[0].snippet, "");
        let err = search_results_from_js(json!({"title": "T"})).unwrap_err();
        assert!(err.starts_with("websearch must return a list"), "{err}");
        assert!(search_results_from_js(json!([{"title": "T"}])).is_err());
    }
}
