//! Injected parameters: values the host gives a source (MCP `inject`, a remote hook's `inject`)
//! that the model never sees. Their names leave the input schema the model is offered, and
//! their values are merged into every call after the model's arguments (the injected value
//! wins).

use serde_json::{Map, Value};

use super::ToolError;

/// Remove the injected names the schema declares from its `properties` and `required`; return
/// those names with their values (the ones to merge into calls).
pub(crate) fn strip_injected(
    schema: &mut Value,
    inject: &Map<String, Value>,
) -> Map<String, Value> {
    let mut applies = Map::new();
    if inject.is_empty() {
        return applies;
    }
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for (name, value) in inject {
            if props.remove(name).is_some() {
                applies.insert(name.clone(), value.clone());
            }
        }
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !inject.contains_key(r)));
    }
    applies
}

/// The model's arguments with the injected values merged in after them (injected wins).
pub(crate) fn merge_injected(
    args: Value,
    inject: &Map<String, Value>,
) -> Result<Map<String, Value>, ToolError> {
    let mut obj = match args {
        Value::Object(o) => o,
        Value::Null => Map::new(),
        other => {
            return Err(ToolError::new(format!(
                "arguments must be a JSON object, not {other}"
            )))
        }
    };
    for (k, v) in inject {
        obj.insert(k.clone(), v.clone());
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn injected_names_leave_the_schema_and_win_in_calls() {
        let mut schema = json!({
            "type": "object",
            "properties": {"user": {"type": "string"}, "tenant": {"type": "string"}},
            "required": ["user", "tenant"]
        });
        let inject = json!({"tenant": "acme", "absent": 1});
        let inject = inject.as_object().unwrap();
        let applies = strip_injected(&mut schema, inject);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"]})
        );
        assert_eq!(Value::Object(applies.clone()), json!({"tenant": "acme"}));
        let merged = merge_injected(json!({"user": "u", "tenant": "evil"}), &applies).unwrap();
        assert_eq!(
            Value::Object(merged),
            json!({"user": "u", "tenant": "acme"})
        );
        assert!(merge_injected(json!([1]), &applies).is_err());
    }
}
