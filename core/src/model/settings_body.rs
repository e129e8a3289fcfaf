//! The model settings in each style's spelling, for the body writers: the openai fields written
//! as bytes at their sorted places, the anthropic and ollama ones as borrowing `Serialize`
//! values, and `extra_body` merged last. A request without settings writes none of this.
//!
//! | setting | openai | anthropic | ollama |
//! |---|---|---|---|
//! | `temperature` | `temperature` | `temperature` | `options.temperature` |
//! | `top_p` | `top_p` | `top_p` | `options.top_p` |
//! | `top_k` | (refused) | `top_k` | `options.top_k` |
//! | `stop` | `stop` | `stop_sequences` | `options.stop` |
//! | `seed` | `seed` | (refused) | `options.seed` |
//! | `tool_choice` | `tool_choice` | `tool_choice.type` (+ `name`) | (refused) |
//! | `parallel_tool_calls` | `parallel_tool_calls` | `tool_choice.disable_parallel_tool_use` | (refused) |
//! | `reasoning` | `reasoning_effort` | `thinking` | `think` |

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::json_writer::JsonBytes;
use super::RequestBody;
use crate::settings::{merge_patch, ModelSettings, ToolChoice};

/// `,"parallel_tool_calls":..,"reasoning_effort":..,"seed":..,"stop":[..]`: the openai
/// settings sorted between `model` and `stream`.
pub(crate) fn openai_before_stream(out: &mut JsonBytes, s: &ModelSettings, has_tools: bool) {
    if let Some(parallel) = s.parallel_tool_calls.filter(|_| has_tools) {
        out.raw(if parallel {
            r#","parallel_tool_calls":true"#
        } else {
            r#","parallel_tool_calls":false"#
        });
    }
    if let Some(effort) = s.reasoning.and_then(|r| r.effort) {
        out.raw(r#","reasoning_effort":"#);
        out.string(effort.as_str());
    }
    if let Some(seed) = s.seed {
        out.raw(r#","seed":"#);
        out.value(&seed);
    }
    if let Some(stop) = &s.stop {
        out.raw(r#","stop":"#);
        out.value(stop);
    }
}

/// `,"temperature":..,"tool_choice":..`: the openai settings sorted between `stream_options`
/// and `tools`.
pub(crate) fn openai_before_tools(out: &mut JsonBytes, s: &ModelSettings, has_tools: bool) {
    if let Some(t) = s.temperature {
        out.raw(r#","temperature":"#);
        out.value(&t);
    }
    if let Some(choice) = s.tool_choice.as_ref().filter(|_| has_tools) {
        out.raw(r#","tool_choice":"#);
        match choice {
            ToolChoice::Auto => out.raw(r#""auto""#),
            ToolChoice::Required => out.raw(r#""required""#),
            ToolChoice::None => out.raw(r#""none""#),
            ToolChoice::Tool(name) => {
                out.raw(r#"{"function":{"name":"#);
                out.string(name);
                out.raw(r#"},"type":"function"}"#);
            }
        }
    }
}

/// `,"top_p":..`: the openai setting sorted after `tools`.
pub(crate) fn openai_after_tools(out: &mut JsonBytes, s: &ModelSettings) {
    if let Some(p) = s.top_p {
        out.raw(r#","top_p":"#);
        out.value(&p);
    }
}

/// Anthropic's `tool_choice` object, when the settings give a choice or
/// `parallel_tool_calls` and the request offers tools.
#[derive(Serialize)]
pub(crate) struct AnthropicToolChoice<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    disable_parallel_tool_use: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    r#type: &'static str,
}

impl<'a> AnthropicToolChoice<'a> {
    pub fn of(s: &'a ModelSettings, has_tools: bool) -> Option<Self> {
        if !has_tools || (s.tool_choice.is_none() && s.parallel_tool_calls.is_none()) {
            return None;
        }
        let (r#type, name) = match s.tool_choice.as_ref().unwrap_or(&ToolChoice::Auto) {
            ToolChoice::Auto => ("auto", None),
            ToolChoice::Required => ("any", None),
            ToolChoice::None => ("none", None),
            ToolChoice::Tool(name) => ("tool", Some(name.as_str())),
        };
        Some(AnthropicToolChoice {
            // A choice of no tool has nothing to run in parallel (the API takes the field only
            // beside a choice that may call).
            disable_parallel_tool_use: s
                .parallel_tool_calls
                .filter(|_| r#type != "none")
                .map(|p| !p),
            name,
            r#type,
        })
    }
}

/// Anthropic's `thinking`: `{"budget_tokens": N, "type": "enabled"}`.
#[derive(Serialize)]
pub(crate) struct Thinking {
    budget_tokens: u32,
    r#type: &'static str,
}

impl Thinking {
    pub fn of(s: &ModelSettings) -> Option<Self> {
        s.anthropic_thinking().map(|budget_tokens| Thinking {
            budget_tokens,
            r#type: "enabled",
        })
    }
}

/// Ollama's `think`: the effort's level.
pub(crate) fn ollama_think(s: &ModelSettings) -> Option<&'static str> {
    s.reasoning.and_then(|r| r.effort).map(|e| e.ollama_level())
}

/// `body` with the settings' `extra_body` merged in (RFC 7386), or unchanged without one.
///
/// The body is not parsed whole: its top-level values are found by a scan of its bytes (the
/// engine wrote them: valid JSON, keys sorted), those the patch does not touch are copied as
/// they are, and only a value an object patch merges into is parsed (never `messages` or
/// `tools`, which `extra_body` may not touch, so a conversation nested deeper than a parser's
/// depth limit cannot fail here). The result's keys are sorted, as a `Value` writes them.
pub(crate) fn with_extra_body(body: RequestBody, s: &ModelSettings) -> RequestBody {
    let Some(extra) = &s.extra_body else {
        return body;
    };
    let mut fields: BTreeMap<String, Cow<'_, [u8]>> = top_level(&body)
        .into_iter()
        .map(|(key, value)| (key, Cow::Borrowed(value)))
        .collect();
    for (key, patch) in extra {
        match patch {
            Value::Null => {
                fields.remove(key);
            }
            Value::Object(inner) => {
                let mut target = fields
                    .get(key)
                    .and_then(|raw| serde_json::from_slice::<Value>(raw).ok())
                    .unwrap_or(Value::Null);
                merge_patch(&mut target, inner);
                fields.insert(key.clone(), Cow::Owned(bytes_of(&target)));
            }
            other => {
                fields.insert(key.clone(), Cow::Owned(bytes_of(other)));
            }
        }
    }
    let mut out = JsonBytes::new();
    out.raw("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.raw(",");
        }
        out.string(key);
        out.raw(":");
        out.put_bytes(value);
    }
    out.raw("}");
    out.into_body()
}

fn bytes_of(value: &Value) -> Vec<u8> {
    let mut out = JsonBytes::new();
    out.value(value);
    out.into_body().to_vec()
}

/// The top-level keys and the bytes of their values in a JSON object the engine wrote, found
/// without recursion (brackets counted, strings skipped with their escapes).
fn top_level(body: &[u8]) -> Vec<(String, &[u8])> {
    let mut fields = Vec::new();
    let mut i = body
        .iter()
        .position(|&b| b == b'{')
        .map_or(body.len(), |p| p + 1);
    loop {
        // The key: a JSON string.
        let Some(start) = body[i..].iter().position(|&b| b == b'"').map(|p| p + i) else {
            return fields;
        };
        let end = string_end(body, start);
        let key: String = serde_json::from_slice(&body[start..end]).unwrap_or_default();
        // The value: from after the colon to the comma or brace that closes it at depth 0.
        let value_start = end
            + body[end..]
                .iter()
                .position(|&b| b == b':')
                .map_or(0, |p| p + 1);
        let mut depth = 0usize;
        let mut j = value_start;
        while j < body.len() {
            match body[j] {
                b'"' => {
                    j = string_end(body, j);
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => depth -= 1,
                b',' | b'}' if depth == 0 => break,
                _ => {}
            }
            j += 1;
        }
        fields.push((key, &body[value_start..j]));
        if j >= body.len() || body[j] == b'}' {
            return fields;
        }
        i = j + 1;
    }
}

/// The index just past the JSON string that starts (with its quote) at `start`.
fn string_end(body: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    while j < body.len() {
        match body[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    body.len()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{value_body, ModelRequest};
    use crate::transcript::{Message, ToolCall};

    /// A conversation nested deeper than serde_json's parser allows (128) merges `extra_body`
    /// all the same: the body is never parsed whole.
    #[test]
    fn extra_body_merges_beside_a_conversation_deeper_than_a_parser_allows() {
        let mut deep = json!("bottom");
        for _ in 0..300 {
            deep = json!({"k": [deep]});
        }
        let messages = vec![
            Message::user("go"),
            Message::assistant(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "echo".into(),
                    arguments: deep,
                    raw_arguments: false,
                    via: None,
                }],
            ),
            Message::tool_result("c1", "echo", "ok", false),
        ];
        let settings: ModelSettings = serde_json::from_value(json!({"extra_body":
            {"stream_options": null, "options": {"num_ctx": 1}, "zz": [1], "system": "s2"}}))
        .unwrap();
        let tools = value_body::rich_tools();
        let req = ModelRequest {
            system: Some("s"),
            model: None,
            messages: &messages,
            tools: &tools,
            settings: &settings,
            images: None,
            output: None,
        };
        type Old = fn(&str, u32, &ModelRequest<'_>) -> Value;
        type New = fn(&str, u32, &ModelRequest<'_>) -> RequestBody;
        let styles: [(Old, New); 3] = [
            (value_body::openai, super::super::openai_body::render),
            (value_body::ollama, super::super::ollama_body::render),
            (value_body::anthropic_cached, |m, t, r| {
                super::super::anthropic_body::render(m, t, true, r)
            }),
        ];
        for (old, new) in styles {
            let want = serde_json::to_vec(&old("m", 10, &req)).unwrap();
            let got = new("m", 10, &req);
            assert_eq!(&got[..], &want[..]);
        }
    }

    #[test]
    fn the_top_level_scan_finds_every_value() {
        let body = br#"{"a":{"x":"}\"]","y":[1,{"z":null}]},"b":"s,\\","c":[],"d":true}"#;
        let fields = top_level(body);
        let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c", "d"]);
        assert_eq!(fields[0].1, br#"{"x":"}\"]","y":[1,{"z":null}]}"#);
        assert_eq!(fields[1].1, br#""s,\\""#);
        assert_eq!(fields[3].1, b"true");
        assert!(top_level(b"{}").is_empty());
    }
}
