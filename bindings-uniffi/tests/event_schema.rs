//! The typed Event against the one event vocabulary, `tests/conformance/event-schema.json`
//! (derived from the engine's `Event`): every engine event, with every field and without its
//! optional ones, crosses into `Event` and back (`toJson()`) unchanged.

use contenox_uniffi::{ContentPart, Event, Message, Transcript};
use serde_json::{json, Map, Value};

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
        Some("array") => match schema.get("items") {
            Some(items) => json!([sample(items, defs, all)]),
            None => json!([]),
        },
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
            let back: Value = serde_json::from_str(&ours.to_json()).unwrap();
            assert_eq!(back, engine, "the mirror changes the event");
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
    let ours = Transcript::from_json(t.to_json()).unwrap().messages();
    assert_eq!(ours.len(), 3);
    let Message::Assistant { content } = &ours[1] else {
        panic!("{ours:?}");
    };
    let [ContentPart::ToolCall {
        arguments_json,
        raw_arguments,
        via,
        ..
    }] = content.as_slice()
    else {
        panic!("{content:?}");
    };
    assert_eq!(arguments_json, "\"{bad\"");
    assert!(*raw_arguments);
    assert_eq!(via.as_deref(), Some("call_tool"));
    // Every kind of part crosses, in order.
    let parts = r#"{"version": 2, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look"},
            {"type": "image", "media_type": "image/png", "data": "iVBO"},
            {"type": "image", "path": "a.png"}]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "hm", "signature": "sig"},
            {"type": "reasoning", "redacted": "enc"},
            {"type": "reasoning", "text": "r", "field": "reasoning_content"},
            {"type": "text", "text": "ok"}]}]}"#;
    let ours = Transcript::from_json(parts.into()).unwrap().messages();
    let Message::User { content } = &ours[0] else {
        panic!("{ours:?}");
    };
    assert_eq!(content.len(), 3);
    assert!(matches!(&content[2], ContentPart::Image { path: Some(p), .. } if p == "a.png"));
    let Message::Assistant { content } = &ours[1] else {
        panic!("{ours:?}");
    };
    assert!(matches!(&content[0], ContentPart::Reasoning { signature: Some(s), .. } if s == "sig"));
    assert!(matches!(&content[1], ContentPart::Reasoning { redacted: Some(d), .. } if d == "enc"));
    assert!(
        matches!(&content[2], ContentPart::Reasoning { field: Some(f), .. } if f == "reasoning_content")
    );
    assert!(matches!(&content[3], ContentPart::Text { text } if text == "ok"));
}
