//! The JavaScript spelling of core's JSON, in one place: camelCase keys for the small typed
//! surface (core's own rule, [`Spelling::Camel`]), plus `args` for `arguments` (a reserved name
//! in strict-mode JavaScript). Values the host or the model own (tool arguments, results,
//! metadata, headers, progress data, todos) are never touched. The TypeScript layer passes
//! objects as the host wrote them and receives them spelled here.

use contenox::{
    CompactNotice, Event, Message, ModelInfo, PendingRequest, SearchRequest, SearchResult,
    Spelling, ToolCallEvent, ToolOutput,
};
use serde_json::{Map, Value};

/// `call_id` -> `callId`; `arguments` -> `args`; other keys as they are.
pub fn camel(key: &str) -> String {
    if key == "arguments" {
        return "args".to_string();
    }
    Spelling::Camel.name(key)
}

/// `timeoutMs` -> `timeout_ms`; `args` -> `arguments`; other keys as they are.
pub fn snake(key: &str) -> String {
    if key == "args" {
        return "arguments".to_string();
    }
    Spelling::Camel.engine_name(key)
}

/// Rename the keys of one object level; nested values are left alone.
fn rename(map: Map<String, Value>, f: fn(&str) -> String) -> Map<String, Value> {
    map.into_iter().map(|(k, v)| (f(&k), v)).collect()
}

/// Rename the keys of `value` (one level) when it is an object.
pub fn rename_value(value: Value, f: fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(rename(map, f)),
        other => other,
    }
}

/// Rename the keys of `value` and of the objects under `nested` keys (each an object, or a list
/// of objects whose own `nested` keys are given too).
fn rename_tree(value: Value, f: fn(&str) -> String, nested: &[(&str, &[&str])]) -> Value {
    let Value::Object(map) = value else {
        return value;
    };
    let mut out = Map::with_capacity(map.len());
    for (k, v) in map {
        let key = f(&k);
        let inner = nested
            .iter()
            .find(|(name, _)| *name == snake(&key) || *name == key)
            .map(|(_, keys)| *keys);
        let v = match (inner, v) {
            (Some(keys), Value::Array(items)) => Value::Array(
                items
                    .into_iter()
                    .map(|item| rename_tree(item, f, &nested_of(keys)))
                    .collect(),
            ),
            (Some(keys), v) => rename_tree(v, f, &nested_of(keys)),
            (None, v) => v,
        };
        out.insert(key, v);
    }
    Value::Object(out)
}

/// Which keys of an object hold objects whose keys are renamed too.
fn nested_of(keys: &[&str]) -> Vec<(&'static str, &'static [&'static str])> {
    NESTED
        .iter()
        .filter(|(name, _)| keys.contains(name))
        .copied()
        .collect()
}

/// The options whose values are objects with option-like keys (not host data such as headers,
/// and not `policy`, a document in its own file format whose keys are never renamed).
const NESTED: &[(&str, &[&str])] = &[
    ("retry", &[]),
    ("sandbox", &[]),
    ("script", &["tool_calls", "error", "usage"]),
    ("tool_calls", &[]),
    ("error", &[]),
    ("usage", &[]),
    ("tool", &[]),
    ("compaction", &[]),
    ("code_execution", &[]),
    ("reasoning", &[]),
    ("fallback", &[]),
    ("telemetry", &[]),
];

/// The options of `createClient` (without the host callbacks) in core's vocabulary. Core checks
/// them and names any mistake in JavaScript's spelling.
pub fn config_from_js(options: Value) -> Value {
    rename_tree(
        options,
        snake,
        &nested_of(&[
            "retry",
            "script",
            "sandbox",
            "compaction",
            "code_execution",
            "reasoning",
            "fallback",
            "telemetry",
        ]),
    )
}

/// A run's model settings (`{temperature, topP, toolChoice, reasoning: {budgetTokens}, ...}`)
/// in core's vocabulary. `extraBody` is the provider's own JSON and keeps its keys, as does a
/// tool name.
pub fn settings_from_js(settings: Value) -> Value {
    rename_tree(settings, snake, &nested_of(&["reasoning"]))
}

/// `asToolWith`'s options (`{conversation, maxTurns, allow, inputSchema, hints, maxDepth}`) in
/// core's vocabulary (hints are camelCase in core too; the schema is the host's own).
pub fn subagent_options_from_js(options: Value) -> Value {
    rename_value(options, snake)
}

/// What `onCompact` and `client.compact()` see: `{trigger, preTokens, postTokens, summary?,
/// usage}`.
pub fn compact_notice(notice: &CompactNotice) -> String {
    match serde_json::to_value(notice) {
        Ok(Value::Object(map)) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if k == "usage" {
                        rename_value(v, camel)
                    } else {
                        v
                    };
                    (camel(&k), v)
                })
                .collect(),
        )
        .to_string(),
        _ => Value::Null.to_string(),
    }
}

/// Remote hooks as JavaScript writes them (`[{name, url, protocol, headers, inject, timeoutMs,
/// specUrl, tool: {description, inputSchema}}]`) in core's vocabulary. Header names and
/// injected parameter names are the host's data and keep their spelling.
pub fn remote_hooks_from_js(hooks: Value) -> Value {
    match hooks {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|h| rename_tree(h, snake, &nested_of(&["tool"])))
                .collect(),
        ),
        other => other,
    }
}

/// A tool declared in JavaScript (`{name, description, inputSchema, hints, tier}`) in core's
/// shape (hints are camelCase in core too).
pub fn tool_spec_from_js(spec: Value) -> Value {
    rename_value(spec, snake)
}

/// A conversation's messages as JavaScript reads them: `callId`, `isError` (always present on a
/// tool result), and each part of `content` camelCase too (`mediaType`, `args`, `rawArguments`
/// always present on a `tool_call` part); `type` values stay as core writes them.
pub fn messages<'a>(messages: impl IntoIterator<Item = &'a Message>) -> String {
    let messages = messages.into_iter().map(|m| {
        let Ok(Value::Object(map)) = serde_json::to_value(m) else {
            return Value::Null;
        };
        let mut out = rename(map, camel);
        if let Some(Value::Array(parts)) = out.get_mut("content") {
            for part in parts.iter_mut() {
                if let Value::Object(p) = std::mem::take(part) {
                    let mut p = rename(p, camel);
                    if p.get("type").and_then(Value::as_str) == Some("tool_call") {
                        p.entry("rawArguments").or_insert(Value::Bool(false));
                    }
                    *part = Value::Object(p);
                }
            }
        }
        if let Message::Tool { .. } = m {
            out.entry("isError").or_insert(Value::Bool(false));
        }
        Value::Object(out)
    });
    Value::Array(messages.collect()).to_string()
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

/// A stepped turn's action or action result (`contenox::step`) in the spelling `f` gives:
/// the keys of the action, of its `call` (`args`), of an ask's `request` (as `waitFor` sees
/// it), of a result's `output` (as `afterTool` sees it) and `error`, and of a reply with its
/// `usage` and `calls`. A model request's body, a reply's `extra` parts, an answer and a
/// tool's content are the model's or the host's and keep their keys, so `camel` then `snake`
/// gives back the same document.
fn step_json(value: Value, f: fn(&str) -> String) -> Value {
    let Value::Object(map) = value else {
        return value;
    };
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Value::Object(
        map.into_iter()
            .map(|(k, v)| {
                let key = f(&k);
                let v = match (kind.as_str(), snake(&key).as_str()) {
                    ("ask", "request") | (_, "call" | "output" | "error") => rename_value(v, f),
                    ("model_response", "reply") => reply(v, f),
                    _ => v,
                };
                (key, v)
            })
            .collect(),
    )
}

/// A model reply's keys, its `usage`'s and its `calls`' (`arguments` <-> `args`).
fn reply(value: Value, f: fn(&str) -> String) -> Value {
    let Value::Object(map) = value else {
        return value;
    };
    Value::Object(
        map.into_iter()
            .map(|(k, v)| {
                let key = f(&k);
                let v = match (snake(&key).as_str(), v) {
                    ("usage", v) => rename_value(v, f),
                    ("calls", Value::Array(calls)) => {
                        Value::Array(calls.into_iter().map(|c| rename_value(c, f)).collect())
                    }
                    (_, v) => v,
                };
                (key, v)
            })
            .collect(),
    )
}

/// An action of a stepped turn as JavaScript reads it (not `done`, whose result crosses as a
/// turn result): `{kind: 'model_request', turnId, step, request}`, `{kind: 'tool_call', call:
/// {id, name, args}, idempotencyKey}`, `{kind: 'ask', request}`.
pub fn step_action(action: &contenox::step::Action) -> Value {
    serde_json::to_value(action)
        .map(|v| step_json(v, camel))
        .unwrap_or(Value::Null)
}

/// An action result as JavaScript reads it: `{kind: 'model_response', step, reply | error}`,
/// `{kind: 'tool_result', callId, output: {content, isError}}`, `{kind: 'answer', callId,
/// answer}`.
pub fn step_result(result: &contenox::step::ActionResult) -> Value {
    serde_json::to_value(result)
        .map(|v| step_json(v, camel))
        .unwrap_or(Value::Null)
}

/// An action result given by JavaScript (as [`step_result`] spells it) in core's shape.
pub fn step_result_from_js(value: Value) -> Result<contenox::step::ActionResult, String> {
    if !value.is_object() {
        return Err(format!(
            "not an action result: an object {{kind, ...}} is, got {}",
            short(&value)
        ));
    }
    serde_json::from_value(step_json(value, snake))
        .map_err(|e| format!("not an action result: {e}"))
}

/// A value for a message: its JSON text, cut to 80 characters.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contenox::{Hints, Outcome, Source, Transcript, Usage};
    use serde_json::json;

    #[test]
    fn remote_hooks_keep_header_and_inject_names() {
        let js = json!([{"name": "a", "url": "http://x", "timeoutMs": 5, "specUrl": "s",
                         "headers": {"X-Api-Key": "k", "someHeader": "v"},
                         "inject": {"tenantId": "t"},
                         "tool": {"description": "d", "inputSchema": {"type": "object",
                                  "properties": {"camelArg": {}}}}}]);
        assert_eq!(
            remote_hooks_from_js(js),
            json!([{"name": "a", "url": "http://x", "timeout_ms": 5, "spec_url": "s",
                    "headers": {"X-Api-Key": "k", "someHeader": "v"},
                    "inject": {"tenantId": "t"},
                    "tool": {"description": "d", "input_schema": {"type": "object",
                             "properties": {"camelArg": {}}}}}])
        );
    }

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
                reasoning_tokens: 0,
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
    fn settings_rename_their_keys_but_not_the_providers() {
        let given = json!({"topP": 0.5, "toolChoice": {"name": "my_tool"},
            "parallelToolCalls": false, "reasoning": {"budgetTokens": 2048},
            "extraBody": {"top_k": 3, "someVendor": {"innerKey": 1}}, "stop": ["camelCase"]});
        let want = json!({"top_p": 0.5, "tool_choice": {"name": "my_tool"},
            "parallel_tool_calls": false, "reasoning": {"budget_tokens": 2048},
            "extra_body": {"top_k": 3, "someVendor": {"innerKey": 1}}, "stop": ["camelCase"]});
        assert_eq!(settings_from_js(given.clone()), want);
        assert_eq!(config_from_js(given), want);
    }

    #[test]
    fn fallback_entries_rename_their_keys_but_not_their_headers() {
        let v = config_from_js(json!({
            "fallback": [{"style": "openai", "baseUrl": "u", "model": "m", "apiKeyEnv": "K",
                          "headers": {"X-Api-Key": "k", "someHeader": "v"}}, "modelName"]
        }));
        assert_eq!(
            v,
            json!({"fallback": [{"style": "openai", "base_url": "u", "model": "m",
                                 "api_key_env": "K",
                                 "headers": {"X-Api-Key": "k", "someHeader": "v"}},
                                "modelName"]})
        );
    }

    #[test]
    fn options_rename_their_keys_and_never_host_values() {
        let v = config_from_js(json!({
            "baseUrl": "u", "maxTurns": 3, "retry": {"maxRetries": 1},
            "headers": {"X-Api-Key": "k", "some_header": "v"},
            "script": [{"toolCalls": [{"id": "c", "name": "n", "args": {"someKey": 1}}],
                        "breakAfterBytes": 3, "error": {"retryAfterS": 1}, "usage": {"inputTokens": 1}}]
        }));
        assert_eq!(
            v,
            json!({
                "base_url": "u", "max_turns": 3, "retry": {"max_retries": 1},
                "headers": {"X-Api-Key": "k", "some_header": "v"},
                "script": [{"tool_calls": [{"id": "c", "name": "n", "arguments": {"someKey": 1}}],
                            "break_after_bytes": 3, "error": {"retry_after_s": 1}, "usage": {"input_tokens": 1}}]
            })
        );
        // The new options of the sandbox and the policy: the sandbox is options, the policy a
        // document whose keys (`default_action`, `timeout_s`, `maxToolCalls`) stay as written.
        let policy = json!({"default_action": "deny", "rules": [{"tool": "bash", "action": "approve",
                            "timeout_s": 5, "on_timeout": "deny"}], "compute": {"maxToolCalls": 3}});
        let v = config_from_js(json!({
            "requestTimeoutMs": 1, "idleTimeoutMs": 2, "maxToolCalls": 3, "maxTurnTokens": 4,
            "shellEnv": ["A=b"], "webFetchAllowPrivate": true,
            "sandbox": {"enabled": true, "network": false, "writable": ["/w"]},
            "policy": policy.clone(),
        }));
        assert_eq!(
            v,
            json!({
                "request_timeout_ms": 1, "idle_timeout_ms": 2, "max_tool_calls": 3,
                "max_turn_tokens": 4, "shell_env": ["A=b"], "web_fetch_allow_private": true,
                "sandbox": {"enabled": true, "network": false, "writable": ["/w"]},
                "policy": policy,
            })
        );
        // A version 1 document: its parts come out camelCase; the model's arguments and a
        // provider's block are left as they are.
        let t = Transcript::from_json(
            r#"{"messages": [{"role": "user", "content": [{"type": "image", "media_type": "image/png", "data": "iVBO"}]},
                {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "name": "x", "arguments": {"a_b": 1}}]},
                {"role": "tool", "call_id": "c1", "name": "x", "content": "r"},
                {"role": "assistant", "content": [{"type": "provider", "style": "anthropic",
                  "block": {"type": "server_tool_use", "tool_use_id": "s"}}]}]}"#,
        )
        .unwrap();
        let m: Value = serde_json::from_str(&messages(&t.messages)).unwrap();
        assert_eq!(
            m,
            json!([{"role": "user", "content": [{"type": "image", "mediaType": "image/png", "data": "iVBO"}]},
                   {"role": "assistant",
                    "content": [{"type": "tool_call", "id": "c1", "name": "x", "args": {"a_b": 1}, "rawArguments": false}]},
                   {"role": "tool", "callId": "c1", "name": "x", "content": [{"type": "text", "text": "r"}], "isError": false},
                   {"role": "assistant", "content": [{"type": "provider", "style": "anthropic",
                    "block": {"type": "server_tool_use", "tool_use_id": "s"}}]}])
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
    fn step_documents_rename_the_engines_keys_and_round_trip() {
        use contenox::step::{Action, ActionResult};
        let action: Action = serde_json::from_value(json!({"kind": "tool_call",
            "call": {"id": "c1", "name": "write", "arguments": {"file_path": "x"}},
            "idempotency_key": "turn_1:c1"}))
        .unwrap();
        assert_eq!(
            step_action(&action),
            json!({"kind": "tool_call", "call": {"id": "c1", "name": "write",
                   "args": {"file_path": "x"}}, "idempotencyKey": "turn_1:c1"})
        );
        let action: Action = serde_json::from_value(json!({"kind": "model_request",
            "turn_id": "t", "step": 0, "request": {"max_tokens": 5, "tool_choice": "auto"}}))
        .unwrap();
        assert_eq!(
            step_action(&action),
            json!({"kind": "model_request", "turnId": "t", "step": 0,
                   "request": {"max_tokens": 5, "tool_choice": "auto"}})
        );
        let action: Action = serde_json::from_value(json!({"kind": "summary_request",
            "turn_id": "t", "step": 2, "request": {"max_tokens": 5}}))
        .unwrap();
        assert_eq!(
            step_action(&action),
            json!({"kind": "summary_request", "turnId": "t", "step": 2,
                   "request": {"max_tokens": 5}})
        );
        for core in [
            json!({"kind": "model_response", "step": 2, "summary": true,
                   "reply": {"text": "the summary"}}),
            json!({"kind": "model_response", "step": 1, "reply": {"text": "t",
                   "calls": [{"id": "c", "name": "n", "arguments": "{\"a_b\":1}"}],
                   "extra": [[0, {"type": "reasoning", "text": "r", "signature": "s"}]],
                   "usage": {"input_tokens": 3, "output_tokens": 1}, "paused": false}}),
            json!({"kind": "model_response", "step": 0, "error": {"message": "m",
                   "context_overflow": true, "malformed_call": "x", "status": 400}}),
            json!({"kind": "tool_result", "call_id": "c",
                   "output": {"content": {"some_key": 1}, "is_error": true,
                              "metadata": {"next_offset": 2}}}),
            json!({"kind": "answer", "call_id": "c", "answer": {"result": {"a_b": 1}}}),
        ] {
            let result: ActionResult = serde_json::from_value(core.clone()).unwrap();
            let js = step_result(&result);
            let text = js.to_string();
            assert!(
                !text.contains("call_id") && !text.contains("is_error"),
                "{text}"
            );
            assert_eq!(step_result_from_js(js).unwrap(), result);
        }
        let js = step_result(
            &serde_json::from_value(json!({"kind": "tool_result",
            "call_id": "c", "output": {"content": "x", "is_error": false}}))
            .unwrap(),
        );
        assert_eq!(
            js,
            json!({"kind": "tool_result", "callId": "c",
                   "output": {"content": "x", "isError": false}})
        );
        let err = step_result_from_js(json!("x".repeat(200))).unwrap_err();
        assert!(
            err.starts_with("not an action result") && err.len() < 200,
            "{err}"
        );
        assert!(step_result_from_js(json!({"kind": "nope"})).is_err());
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
