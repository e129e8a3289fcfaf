//! The request bodies as they were rendered before each style serialized its body straight to
//! bytes: a `serde_json::Value` tree per request, then serialized. Kept only for the tests that
//! prove the new bytes are the same (`*_body` modules), with a conversation of every shape.

use std::sync::Arc;

use serde_json::{json, Value};

use super::ModelRequest;
use crate::config::Style;
use crate::settings::{Effort, ModelSettings, ToolChoice};
use crate::tool::ToolSpec;
use crate::transcript::{Message, ToolCall};

/// The request body.
pub(crate) fn openai(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(system) = req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in req.messages {
        messages.push(match m {
            Message::User { .. } => json!({"role": "user", "content": m.text()}),
            Message::Assistant { .. } => {
                let content = m.text();
                let tool_calls: Vec<&ToolCall> = m.tool_calls().collect();
                let mut msg = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|c| {
                            let (name, args) = wire_call(c);
                            let arguments = match (&args, c.raw_arguments) {
                                (Value::String(raw), true) => raw.clone(),
                                _ => args.to_string(),
                            };
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": name, "arguments": arguments}})
                        })
                        .collect();
                    msg["tool_calls"] = Value::Array(calls);
                    if content.is_empty() {
                        msg["content"] = Value::Null;
                    }
                }
                msg
            }
            Message::Tool {
                call_id, is_error, ..
            } => json!({"role": "tool", "tool_call_id": call_id,
                         "content": error_prefixed(&m.text(), *is_error)}),
        });
    }
    let mut body = object([
        ("model", model.into()),
        ("messages", Value::Array(messages)),
        ("stream", true.into()),
        ("stream_options", json!({"include_usage": true})),
        ("max_completion_tokens", max_tokens.into()),
    ]);
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(req.tools.iter().map(|t| function_tool(t)).collect());
    }
    with_settings(Style::Openai, body, req)
}

/// The request body. Adjacent messages of one role are merged, as the API requires alternation:
/// tool results travel as `tool_result` blocks in a user message.
pub(crate) fn anthropic(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> Value {
    anthropic_with(model, max_tokens, false, req)
}

/// [`anthropic`] with prompt caching's `cache_control` breakpoints: the last tool, the system
/// prompt as one text block, the newest message's last block and that of the user message
/// before the newest assistant message.
pub(crate) fn anthropic_cached(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> Value {
    anthropic_with(model, max_tokens, true, req)
}

fn anthropic_with(model: &str, max_tokens: u32, cache: bool, req: &ModelRequest<'_>) -> Value {
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::with_capacity(req.messages.len());
    let mut push = |role: &'static str, block: Value| match messages.last_mut() {
        Some((r, blocks)) if *r == role => blocks.push(block),
        _ => messages.push((role, vec![block])),
    };
    // The API refuses text blocks without non-whitespace text (HTTP 400, not retried), so a
    // reply that had neither text nor calls, once in the conversation, would fail every later
    // request: such blocks are left out, and a message left with no block is left out whole
    // (the user messages around it merge).
    let text_block = |text: &str| {
        (!text.trim().is_empty()).then(|| object([("type", "text".into()), ("text", text.into())]))
    };
    for m in req.messages {
        match m {
            Message::User { .. } => {
                if let Some(block) = text_block(&m.text()) {
                    push("user", block);
                }
            }
            Message::Assistant { .. } => {
                if let Some(block) = text_block(&m.text()) {
                    push("assistant", block);
                }
                for c in m.tool_calls() {
                    let (name, args) = wire_call(c);
                    let input = if c.raw_arguments || !args.is_object() {
                        json!({})
                    } else {
                        args
                    };
                    push(
                        "assistant",
                        object([
                            ("type", "tool_use".into()),
                            ("id", c.id.as_str().into()),
                            ("name", name.into()),
                            ("input", input),
                        ]),
                    );
                }
            }
            Message::Tool {
                call_id, is_error, ..
            } => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": call_id,
                       "content": m.text(), "is_error": is_error}),
            ),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| object([("role", role.into()), ("content", Value::Array(content))]))
        .collect();
    let mut body = object([
        ("model", model.into()),
        ("max_tokens", max_tokens.into()),
        ("messages", Value::Array(messages)),
        ("stream", true.into()),
    ]);
    if let Some(system) = req.system {
        body["system"] = Value::String(system.to_string());
    }
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(
            req.tools
                .iter()
                .map(|t| {
                    object([
                        ("name", t.name.as_str().into()),
                        ("description", t.description.as_str().into()),
                        ("input_schema", t.input_schema.clone()),
                    ])
                })
                .collect(),
        );
    }
    if cache {
        let ephemeral = json!({"type": "ephemeral"});
        if let Some(system) = req.system {
            body["system"] = json!([{"type": "text", "text": system,
                "cache_control": ephemeral}]);
        }
        if let Some(last) = body
            .get_mut("tools")
            .and_then(Value::as_array_mut)
            .and_then(|t| t.last_mut())
        {
            last["cache_control"] = ephemeral.clone();
        }
        let messages = body["messages"].as_array_mut().unwrap();
        let assistant = messages.iter().rposition(|m| m["role"] == "assistant");
        // The newest message when it is the user's (an assistant's may end in a block the API
        // does not let carry a breakpoint), and the user message before the newest assistant.
        let mut marked: Vec<usize> = messages
            .len()
            .checked_sub(1)
            .filter(|&last| messages[last]["role"] == "user")
            .into_iter()
            .collect();
        if let Some(before) = assistant.and_then(|a| a.checked_sub(1)) {
            if messages[before]["role"] == "user" {
                marked.push(before);
            }
        }
        for m in marked {
            let blocks = messages[m]["content"].as_array_mut().unwrap();
            blocks.last_mut().unwrap()["cache_control"] = ephemeral.clone();
        }
    }
    with_settings(Style::Anthropic, body, req)
}

/// The request body. Ollama has no call ids: results name their tool with `tool_name`.
pub(crate) fn ollama(model: &str, max_tokens: u32, req: &ModelRequest<'_>) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(system) = req.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in req.messages {
        messages.push(match m {
            Message::User { .. } => json!({"role": "user", "content": m.text()}),
            Message::Assistant { .. } => {
                let tool_calls: Vec<&ToolCall> = m.tool_calls().collect();
                let mut msg = json!({"role": "assistant", "content": m.text()});
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            let (name, args) = wire_call(c);
                            let args = if c.raw_arguments || !args.is_object() {
                                json!({})
                            } else {
                                args
                            };
                            object([(
                                "function",
                                object([("name", name.into()), ("arguments", args)]),
                            )])
                        })
                        .collect();
                }
                msg
            }
            Message::Tool { name, is_error, .. } => {
                json!({"role": "tool", "tool_name": name,
                       "content": error_prefixed(&m.text(), *is_error)})
            }
        });
    }
    let mut body = object([
        ("model", model.into()),
        ("messages", Value::Array(messages)),
        ("stream", true.into()),
        ("options", json!({"num_predict": max_tokens})),
    ]);
    if !req.tools.is_empty() {
        body["tools"] = req.tools.iter().map(|t| function_tool(t)).collect();
    }
    with_settings(Style::Ollama, body, req)
}

/// The settings written into a `Value` body the plain way, each style's spelling as the issue
/// lists it: the reference the byte writers are compared with.
fn with_settings(style: Style, mut body: Value, req: &ModelRequest<'_>) -> Value {
    let s = req.settings;
    let tools = !req.tools.is_empty();
    let mut set = |key: &str, value: Value| {
        body[key] = value;
    };
    match style {
        Style::Openai => {
            if let Some(t) = s.temperature {
                set("temperature", json!(t));
            }
            if let Some(p) = s.top_p {
                set("top_p", json!(p));
            }
            if let Some(stop) = &s.stop {
                set("stop", json!(stop));
            }
            if let Some(seed) = s.seed {
                set("seed", json!(seed));
            }
            if let (Some(c), true) = (&s.tool_choice, tools) {
                set(
                    "tool_choice",
                    match c {
                        ToolChoice::Auto => json!("auto"),
                        ToolChoice::Required => json!("required"),
                        ToolChoice::None => json!("none"),
                        ToolChoice::Tool(n) => {
                            json!({"type": "function", "function": {"name": n}})
                        }
                    },
                );
            }
            if let (Some(p), true) = (s.parallel_tool_calls, tools) {
                set("parallel_tool_calls", json!(p));
            }
            if let Some(e) = s.reasoning.and_then(|r| r.effort) {
                set("reasoning_effort", json!(e));
            }
        }
        Style::Anthropic => {
            if let Some(t) = s.temperature {
                set("temperature", json!(t));
            }
            if let Some(p) = s.top_p {
                set("top_p", json!(p));
            }
            if let Some(k) = s.top_k {
                set("top_k", json!(k));
            }
            if let Some(stop) = &s.stop {
                set("stop_sequences", json!(stop));
            }
            if tools && (s.tool_choice.is_some() || s.parallel_tool_calls.is_some()) {
                let mut choice = match s.tool_choice.as_ref().unwrap_or(&ToolChoice::Auto) {
                    ToolChoice::Auto => json!({"type": "auto"}),
                    ToolChoice::Required => json!({"type": "any"}),
                    ToolChoice::None => json!({"type": "none"}),
                    ToolChoice::Tool(n) => json!({"type": "tool", "name": n}),
                };
                if let (Some(p), false) = (s.parallel_tool_calls, choice["type"] == "none") {
                    choice["disable_parallel_tool_use"] = json!(!p);
                }
                set("tool_choice", choice);
            }
            if let Some(r) = s.reasoning {
                let budget = match (r.budget_tokens, r.effort) {
                    (Some(n), _) => n,
                    (None, Some(e)) => e.budget_tokens(),
                    (None, None) => 1024,
                };
                set(
                    "thinking",
                    json!({"type": "enabled", "budget_tokens": budget}),
                );
            }
        }
        Style::Ollama => {
            let options = &mut body["options"];
            if let Some(t) = s.temperature {
                options["temperature"] = json!(t);
            }
            if let Some(p) = s.top_p {
                options["top_p"] = json!(p);
            }
            if let Some(k) = s.top_k {
                options["top_k"] = json!(k);
            }
            if let Some(stop) = &s.stop {
                options["stop"] = json!(stop);
            }
            if let Some(seed) = s.seed {
                options["seed"] = json!(seed);
            }
            if let Some(e) = s.reasoning.and_then(|r| r.effort) {
                let level = match e {
                    Effort::Minimal | Effort::Low => "low",
                    Effort::Medium => "medium",
                    Effort::High => "high",
                };
                body["think"] = json!(level);
            }
        }
        Style::Scripted => {}
    }
    if let Some(extra) = &s.extra_body {
        crate::settings::merge_patch(&mut body, extra);
    }
    body
}

/// Settings of every shape, one or all at a time, for the byte tests.
pub(crate) fn settings_cases() -> Vec<ModelSettings> {
    let read = |v: Value| serde_json::from_value::<ModelSettings>(v).unwrap();
    vec![
        ModelSettings::default(),
        read(json!({"temperature": 0})),
        read(json!({"temperature": 0.7, "top_p": 0.25, "seed": -9007199254740993_i64})),
        read(json!({"top_k": 40, "stop": ["END", "\"quoted\"\n"]})),
        read(json!({"tool_choice": "auto", "parallel_tool_calls": false})),
        read(json!({"tool_choice": "required"})),
        read(json!({"tool_choice": "none", "parallel_tool_calls": true})),
        read(json!({"tool_choice": {"name": "echo \"x\""}, "parallel_tool_calls": true})),
        read(json!({"parallel_tool_calls": false})),
        read(json!({"reasoning": {"effort": "minimal"}})),
        read(json!({"reasoning": {"effort": "high"}, "seed": 1})),
        read(json!({"reasoning": {"budget_tokens": 3000}})),
        read(
            json!({"extra_body": {"stream_options": null, "x_vendor": {"a": [1, "é"]},
            "temperature": 1.5, "max_tokens": 7, "options": {"num_ctx": 8192}}}),
        ),
        read(
            json!({"temperature": 1, "top_p": 1, "top_k": 1, "stop": [], "seed": 0,
            "tool_choice": {"name": "call_tool"}, "parallel_tool_calls": true,
            "reasoning": {"effort": "medium"}, "extra_body": {}}),
        ),
    ]
}

/// A JSON object from owned values. `json!` runs every interpolated expression through the
/// serializer again (a deep copy of a message list or a schema); request bodies are assembled
/// from moved values and plain clones instead.
pub(crate) fn object<const N: usize>(pairs: [(&str, serde_json::Value); N]) -> serde_json::Value {
    serde_json::Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A tool as the openai and ollama styles declare it:
/// `{"type": "function", "function": {name, description, parameters}}`.
pub(crate) fn function_tool(t: &ToolSpec) -> serde_json::Value {
    object([
        ("type", "function".into()),
        (
            "function",
            object([
                ("name", t.name.as_str().into()),
                ("description", t.description.as_str().into()),
                ("parameters", t.input_schema.clone()),
            ]),
        ),
    ])
}

pub(crate) fn error_prefixed(content: &str, is_error: bool) -> String {
    if is_error {
        format!("Error: {content}")
    } else {
        content.to_string()
    }
}

/// The arguments of a call as the wire shows them: the raw text when they were not JSON,
/// `call_tool {name, arguments}` when the model went through it.
pub(crate) fn wire_call(call: &crate::transcript::ToolCall) -> (String, serde_json::Value) {
    match &call.via {
        Some(via) => (
            via.clone(),
            serde_json::json!({"name": call.name, "arguments": call.arguments}),
        ),
        None => (call.name.clone(), call.arguments.clone()),
    }
}

/// A conversation with every shape the bodies have: text with characters JSON escapes; calls
/// with parsed, non-object, raw and `call_tool` arguments (raw ones through `call_tool` too);
/// empty, whitespace-only and non-empty assistant text beside calls; an assistant reply with
/// neither text nor calls; adjacent messages of one role; ok and error results; empty text.
pub(crate) fn rich_conversation() -> Vec<Message> {
    let call = |id: &str, name: &str, arguments: Value, raw: bool, via: Option<&str>| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        raw_arguments: raw,
        via: via.map(Into::into),
    };
    let result = |call_id: &str, name: &str, content: &str, is_error: bool| {
        Message::tool_result(call_id, name, content, is_error)
    };
    let assistant =
        |content: &str, tool_calls: Vec<ToolCall>| Message::assistant(content, tool_calls);
    let user = |content: &str| Message::user(content);
    vec![
        user("quote \" backslash \\ newline \n tab \t nul \u{0} é 😀 </script> \u{2028}"),
        user("a second user message in a row"),
        assistant(
            "",
            vec![
                call(
                    "c1",
                    "echo",
                    json!({"z": 1, "a": [true, null, 1.5, -0.0, 1e300, "x"], "m": {"k": "v"}}),
                    false,
                    None,
                ),
                call("c2", "echo", Value::String("{not json".into()), true, None),
                call(
                    "c3",
                    "deep_tool",
                    json!({"q": "\u{1}"}),
                    false,
                    Some("call_tool"),
                ),
                call(
                    "c4",
                    "echo",
                    Value::String("a string, parsed".into()),
                    false,
                    None,
                ),
                call(
                    "c5",
                    "deep",
                    Value::String("{raw".into()),
                    true,
                    Some("call_tool"),
                ),
                call("c6", "echo", json!([1, 2]), false, None),
            ],
        ),
        result("c1", "echo", "ok \"1\"", false),
        result("c2", "echo", "bad args", true),
        result("c3", "call_tool", "", false),
        result("c4", "echo", "x", false),
        result("c5", "call_tool", " ", true),
        result("c6", "echo", "y", false),
        user("after the results"),
        assistant(" \n", vec![call("c7", "echo", json!({}), false, None)]),
        result("c7", "echo", "done", true),
        assistant(
            "thinking aloud",
            vec![call("c8", "echo", json!({"t": "é"}), false, None)],
        ),
        result("c8", "echo", "ok", false),
        assistant("final \u{7f}", vec![]),
        assistant("", vec![]),
        user(""),
        user("  "),
        assistant("last", vec![]),
        assistant("another in a row", vec![]),
    ]
}

/// Tools with schemas whose keys are out of order and descriptions that need escaping.
pub(crate) fn rich_tools() -> Vec<Arc<ToolSpec>> {
    vec![
        Arc::new(ToolSpec::new(
            "echo",
            "Echo \"text\".\n",
            json!({"type": "object", "properties": {"text": {"type": "string"}},
                   "required": ["text"]}),
        )),
        Arc::new(ToolSpec::new(
            "call_tool",
            "",
            json!({"type": "object", "additionalProperties": false, "properties": {}}),
        )),
    ]
}

/// Assert that `render` writes the bytes of `old` for the rich conversation and for smaller
/// requests (no system prompt, no tools, no messages, an empty model), at several token caps.
pub(crate) fn assert_same_bytes(
    old: fn(&str, u32, &ModelRequest<'_>) -> Value,
    render: fn(&str, u32, &ModelRequest<'_>) -> super::RequestBody,
) {
    let messages = rich_conversation();
    let tools = rich_tools();
    type Case<'a> = (Option<&'a str>, &'a str, &'a [Message], &'a [Arc<ToolSpec>]);
    let cases: [Case<'_>; 5] = [
        (Some("You are \"terse\".\n"), "gpt-x", &messages, &tools),
        (None, "m", &messages, &[]),
        (Some(""), "m", &[], &tools),
        (None, "", &messages[..1], &tools[..1]),
        (Some("s"), "m", &messages[2..9], &[]),
    ];
    let settings = settings_cases();
    for (system, model, messages, tools) in cases {
        for s in &settings {
            let req = ModelRequest {
                system,
                model: None,
                messages,
                tools,
                settings: s,
                images: None,
                output: None,
            };
            for max_tokens in [0, 4096, u32::MAX] {
                let want = serde_json::to_vec(&old(model, max_tokens, &req)).unwrap();
                let got = render(model, max_tokens, &req);
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want),
                    "{s:?}"
                );
                assert_eq!(&got[..], &want[..]);
            }
        }
    }
}
