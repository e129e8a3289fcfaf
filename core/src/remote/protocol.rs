//! The five one-tool protocols: the request body each writes (the exact bytes of the Go
//! runtime: see [`gojson`](super::gojson)) and how each answer is unwrapped into the result.
//!
//! | protocol | POST body | result |
//! |---|---|---|
//! | `openai` | `{"name": hook, "arguments": "<arguments as JSON text>"}` | the whole body |
//! | `openai-object` | `{"name": hook, "arguments": {...}}` | the whole body |
//! | `ollama` | as `openai-object` | the answer's `message.content` |
//! | `langserve-openai` | as `openai` | the answer's `output` |
//! | `langserve` (`langserve-direct`) | the bare argument object | the whole body |

use serde_json::{Map, Value};

use super::gojson;
use super::hook::Protocol;
use super::http::ERROR_BODY_MAX;

/// The request body of a call of `protocol` named `name` with `arguments` (the model's,
/// injected values merged in).
pub(crate) fn request_body(
    protocol: Protocol,
    name: &str,
    arguments: &Map<String, Value>,
) -> Vec<u8> {
    let args = Value::Object(arguments.clone());
    match protocol {
        Protocol::Openai | Protocol::LangserveOpenai => {
            gojson::call_body(name, &Value::String(gojson::to_string(&args)))
        }
        Protocol::OpenaiObject | Protocol::Ollama => gojson::call_body(name, &args),
        Protocol::Langserve | Protocol::Openapi => gojson::to_vec(&args),
    }
}

/// The result text of a 2xx answer `body`; `Err` quotes the body (cut to 2 KiB) when the
/// field it must be unwrapped from is missing or the body is not JSON.
pub(crate) fn unwrap(protocol: Protocol, body: &str) -> Result<String, String> {
    let field: &[&str] = match protocol {
        Protocol::Ollama => &["message", "content"],
        Protocol::LangserveOpenai => &["output"],
        _ => return Ok(body.to_string()),
    };
    let quoted = || crate::error::cut(body, ERROR_BODY_MAX);
    let parsed: Value = serde_json::from_str(body)
        .map_err(|_| format!("the {} answer is not JSON: {}", protocol.as_str(), quoted()))?;
    let mut v = &parsed;
    for key in field {
        v = match v.get(key) {
            Some(inner) if !inner.is_null() => inner,
            _ => {
                return Err(format!(
                    "the {} answer has no {}: {}",
                    protocol.as_str(),
                    field.join("."),
                    quoted()
                ))
            }
        };
    }
    Ok(match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// The tool of a `GET {url}/schema` answer: `{"functions": [{name, description, parameters}]}`,
/// the function named like the hook, else the first. Returns `(description, input schema)`.
pub(crate) fn tool_from_schema_doc(doc: &Value, hook: &str) -> Result<(String, Value), String> {
    let functions = doc
        .get("functions")
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty())
        .ok_or("the /schema answer has no \"functions\" list")?;
    let f = functions
        .iter()
        .find(|f| f.get("name").and_then(Value::as_str) == Some(hook))
        .unwrap_or(&functions[0]);
    let description = f
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let parameters = match f.get("parameters") {
        Some(p @ Value::Object(_)) => p.clone(),
        None | Some(Value::Null) => serde_json::json!({"type": "object"}),
        Some(_) => return Err("the function's \"parameters\" is not a JSON Schema object".into()),
    };
    Ok((description, parameters))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// The model's arguments of the golden tests, and the same with the injected `tenant`.
    fn plain() -> Map<String, Value> {
        args(json!({"query": "a<b & c>d", "n": 3, "nested": {"z": 1, "a": [true, null]}}))
    }
    fn injected() -> Map<String, Value> {
        let mut a = plain();
        a.insert("tenant".into(), json!("acme"));
        a
    }

    /// What Go's encoding/json writes for the runtime's call structs (`go run`, Go 1.26).
    const GO_OPENAI: &str = r#"{"name":"my-hook","arguments":"{\"n\":3,\"nested\":{\"a\":[true,null],\"z\":1},\"query\":\"a\\u003cb \\u0026 c\\u003ed\"}"}"#;
    const GO_OPENAI_INJECTED: &str = r#"{"name":"my-hook","arguments":"{\"n\":3,\"nested\":{\"a\":[true,null],\"z\":1},\"query\":\"a\\u003cb \\u0026 c\\u003ed\",\"tenant\":\"acme\"}"}"#;
    const GO_OBJECT: &str = r#"{"name":"my-hook","arguments":{"n":3,"nested":{"a":[true,null],"z":1},"query":"a\u003cb \u0026 c\u003ed"}}"#;
    const GO_OBJECT_INJECTED: &str = r#"{"name":"my-hook","arguments":{"n":3,"nested":{"a":[true,null],"z":1},"query":"a\u003cb \u0026 c\u003ed","tenant":"acme"}}"#;
    const GO_BARE: &str =
        r#"{"n":3,"nested":{"a":[true,null],"z":1},"query":"a\u003cb \u0026 c\u003ed"}"#;
    const GO_BARE_INJECTED: &str = r#"{"n":3,"nested":{"a":[true,null],"z":1},"query":"a\u003cb \u0026 c\u003ed","tenant":"acme"}"#;

    #[test]
    fn golden_request_bytes() {
        let body =
            |p, a: &Map<String, Value>| String::from_utf8(request_body(p, "my-hook", a)).unwrap();
        for (p, want, want_injected) in [
            (Protocol::Openai, GO_OPENAI, GO_OPENAI_INJECTED),
            (Protocol::LangserveOpenai, GO_OPENAI, GO_OPENAI_INJECTED),
            (Protocol::OpenaiObject, GO_OBJECT, GO_OBJECT_INJECTED),
            (Protocol::Ollama, GO_OBJECT, GO_OBJECT_INJECTED),
            (Protocol::Langserve, GO_BARE, GO_BARE_INJECTED),
        ] {
            assert_eq!(body(p, &plain()), want, "{p:?}");
            assert_eq!(body(p, &injected()), want_injected, "{p:?} injected");
        }
        assert_eq!(
            body(Protocol::Openai, &Map::new()),
            r#"{"name":"my-hook","arguments":"{}"}"#
        );
    }

    #[test]
    fn answers_unwrap_or_quote_the_body() {
        assert_eq!(unwrap(Protocol::Openai, "any text").unwrap(), "any text");
        assert_eq!(
            unwrap(Protocol::Langserve, "{\"a\":1}").unwrap(),
            "{\"a\":1}"
        );
        assert_eq!(
            unwrap(
                Protocol::Ollama,
                r#"{"message":{"role":"assistant","content":"hi"}}"#
            )
            .unwrap(),
            "hi"
        );
        assert_eq!(
            unwrap(Protocol::LangserveOpenai, r#"{"output":{"x":[1]}}"#).unwrap(),
            r#"{"x":[1]}"#
        );
        let e = unwrap(Protocol::Ollama, r#"{"msg":"nope"}"#).unwrap_err();
        assert!(
            e.contains("no message.content") && e.contains(r#"{"msg":"nope"}"#),
            "{e}"
        );
        let e = unwrap(Protocol::LangserveOpenai, r#"{"output":null}"#).unwrap_err();
        assert!(e.contains("no output"), "{e}");
        let e = unwrap(Protocol::LangserveOpenai, "<html>").unwrap_err();
        assert!(e.contains("not JSON: <html>"), "{e}");
        let long = format!("{{\"x\":\"{}\"}}", "y".repeat(10_000));
        let e = unwrap(Protocol::Ollama, &long).unwrap_err();
        assert!(e.len() < 2300, "{}", e.len());
    }

    #[test]
    fn schema_documents() {
        let doc = json!({"functions": [
            {"name": "other", "parameters": {"type": "object"}},
            {"name": "mine", "description": "Mine.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
        ]});
        let (d, s) = tool_from_schema_doc(&doc, "mine").unwrap();
        assert_eq!(d, "Mine.");
        assert_eq!(s["properties"]["q"]["type"], "string");
        let (_, s) = tool_from_schema_doc(&doc, "absent").unwrap();
        assert_eq!(s, json!({"type": "object"}));
        assert!(tool_from_schema_doc(&json!({"functions": []}), "x").is_err());
        assert!(tool_from_schema_doc(&json!({"functions": [{"parameters": 3}]}), "x").is_err());
    }
}
