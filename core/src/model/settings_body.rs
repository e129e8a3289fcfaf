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

use serde::Serialize;

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

/// `body` with the settings' `extra_body` merged in (RFC 7386), or unchanged without one. The
/// body's bytes are those of a `Value` rendering (sorted keys), so the parts `extra_body` does
/// not touch come out byte for byte as they were.
pub(crate) fn with_extra_body(body: RequestBody, s: &ModelSettings) -> RequestBody {
    let Some(extra) = &s.extra_body else {
        return body;
    };
    let mut value: serde_json::Value =
        serde_json::from_slice(&body).expect("the engine's request bodies are JSON");
    merge_patch(&mut value, extra);
    let mut out = JsonBytes::new();
    out.value(&value);
    out.into_body()
}
