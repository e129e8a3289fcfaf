//! The engine's `Event`, typed for Kotlin (a sealed class; `when` over it is exhaustive) and
//! Swift (an enum). It has the engine's JSON shape through serde, so it is read from the
//! engine's event and written back (`toJson()`) without a field-by-field copy, and its tests
//! check it against the one event vocabulary, `tests/conformance/event-schema.json`: a new or
//! changed core event fails them until it is mirrored here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::convert::{answer_wire, json_text, via_json, Answer, PendingRequest};

/// One thing that happened in a turn. `toJson()` gives the engine's own JSON (a `type` tag in
/// snake_case), the same in every language binding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, uniffi::Enum)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The turn began.
    TurnStart {
        /// The user's prompt.
        prompt: String,
    },
    /// A model request is about to be sent (once per HTTP attempt).
    Request {
        /// 0-based index of the model response this request asks for, within the turn.
        index: u32,
        /// 0 for the first attempt, 1.. for retries.
        attempt: u32,
    },
    /// A piece of streamed text.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// The whole text of one model response.
    Text {
        /// The text.
        text: String,
    },
    /// The model asked for a tool call.
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool name (unwrapped from `call_tool`).
        name: String,
        /// The arguments as JSON text (a JSON string when the model sent text that is not JSON).
        #[serde(rename = "arguments", with = "json_text")]
        arguments_json: String,
    },
    /// The gate's decision for a call.
    Gate {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// allow / deny / ask.
        decision: contenox::GateVerdict,
        /// The deny message, when denied.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// The tool's hints.
        hints: contenox::Hints,
        /// Where the tool comes from.
        source: contenox::Source,
    },
    /// A call waits for the host's answer.
    Pending {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The request given to `WaitFor`.
        request: PendingRequest,
    },
    /// The host answered a pending request (or the ask timed out, which denies).
    Answer {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The answer.
        #[serde(with = "answer_wire")]
        answer: Answer,
    },
    /// A tool is about to execute.
    ToolStart {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
    },
    /// A call's result, as the model will see it.
    ToolResult {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The text sent to the model.
        content: String,
        /// Whether it is an error result.
        is_error: bool,
        /// Metadata of the result, as JSON text.
        #[serde(
            rename = "metadata",
            default,
            skip_serializing_if = "Option::is_none",
            with = "json_text::option"
        )]
        metadata_json: Option<String>,
    },
    /// Progress reported by a running tool.
    Progress {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// Free-form progress data, as JSON text.
        #[serde(rename = "data", with = "json_text")]
        data_json: String,
    },
    /// The turn's task list, replaced whole by `todo_write`.
    Todos {
        /// The task list, as JSON text.
        #[serde(rename = "todos", with = "json_text")]
        todos_json: String,
    },
    /// Usage of one model response.
    Usage {
        /// Tokens read and written by that response.
        usage: contenox::Usage,
    },
    /// The conversation was compacted.
    Compact {
        /// Messages before compaction.
        before: u32,
        /// Messages after compaction.
        after: u32,
    },
    /// A model request failed and will be retried.
    Retry {
        /// The attempt that failed (0-based).
        attempt: u32,
        /// The HTTP status, when there was one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// What went wrong.
        error: String,
        /// How long the engine waits before the next attempt.
        wait_ms: u64,
    },
    /// The turn ended. Every stream ends with exactly one of these.
    TurnEnd {
        /// How it ended.
        outcome: contenox::Outcome,
        /// The text of the turn's last model response.
        final_text: String,
        /// Usage summed over the turn.
        usage: contenox::Usage,
        /// What went wrong, for outcome `Error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl Event {
    /// The engine's event as this type; `None` only for an event kind this binding does not
    /// mirror, which the schema tests rule out.
    pub(crate) fn from_core(event: &contenox::Event) -> Option<Event> {
        via_json(event).ok()
    }

    fn json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[uniffi::export]
impl Event {
    /// The engine's JSON of this event: `{"type": "tool_call", "call_id": ..., ...}`.
    pub fn to_json(&self) -> String {
        self.json().to_string()
    }

    /// The `type` tag (`turn_start`, `tool_call`, ...).
    pub fn kind(&self) -> String {
        self.json()["type"].as_str().unwrap_or_default().to_string()
    }

    /// The tool this event is about, if any.
    pub fn tool_name(&self) -> Option<String> {
        self.json()["name"].as_str().map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    const SCHEMA: &str = include_str!("../../tests/conformance/event-schema.json");

    /// A value of the schema's shape: every property when `all`, only the required ones else.
    fn sample(schema: &Value, defs: &Value, all: bool) -> Value {
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            let name = r.trim_start_matches("#/$defs/");
            return sample(&defs[name], defs, all);
        }
        if let Some(c) = schema.get("const") {
            return c.clone();
        }
        if let Some(first) = schema
            .get("oneOf")
            .or_else(|| schema.get("anyOf"))
            .and_then(|v| v.get(0))
        {
            return sample(first, defs, all);
        }
        if let Some(Value::Array(names)) = schema.get("enum") {
            return names[0].clone();
        }
        let kind = match &schema["type"] {
            Value::Array(kinds) => kinds[0].clone(),
            other => other.clone(),
        };
        match kind.as_str() {
            Some("string") => json!("text"),
            Some("integer") => json!(7),
            Some("boolean") => json!(true),
            Some("object") => {
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut out = Map::new();
                for (key, prop) in schema["properties"].as_object().into_iter().flatten() {
                    if all || required.contains(&key.as_str()) {
                        out.insert(key.clone(), sample(prop, defs, all));
                    }
                }
                Value::Object(out)
            }
            // Free-form values (`true` schemas): something nested, to prove it is carried as is.
            _ => json!({"free": ["form", 1, null]}),
        }
    }

    #[test]
    fn every_core_event_crosses_as_itself() {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let variants = schema["oneOf"].as_array().expect("a tagged union");
        assert!(variants.len() >= 16);
        for variant in variants {
            for all in [true, false] {
                let json = sample(variant, &schema["$defs"], all);
                let core: contenox::Event = serde_json::from_value(json.clone())
                    .unwrap_or_else(|e| panic!("core does not read its own schema: {json}: {e}"));
                let engine = serde_json::to_value(&core).unwrap();
                let ours = Event::from_core(&core)
                    .unwrap_or_else(|| panic!("not mirrored in bindings-uniffi: {engine}"));
                assert_eq!(ours.json(), engine, "the mirror changes the event");
                assert_eq!(ours.kind(), json["type"].as_str().unwrap());
                assert_eq!(ours.tool_name().as_deref(), engine["name"].as_str());
            }
        }
    }

    #[test]
    fn messages_cross_as_themselves() {
        let t = contenox::Transcript::from_json(
            r#"{"messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c1", "name": "x", "arguments": "{bad", "raw_arguments": true, "via": "call_tool"}]},
                {"role": "tool", "call_id": "c1", "name": "x", "content": "r", "is_error": true}]}"#,
        )
        .unwrap();
        let ours = crate::convert::Transcript { inner: t }.messages();
        assert_eq!(ours.len(), 3);
        let crate::convert::Message::Assistant { tool_calls, .. } = &ours[1] else {
            panic!("{ours:?}");
        };
        assert_eq!(tool_calls[0].arguments_json, "\"{bad\"");
        assert!(tool_calls[0].raw_arguments);
    }
}
