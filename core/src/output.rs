//! A typed final answer: the host's `output_schema` (a JSON Schema), how each style asks for it
//! natively, how the final answer is checked against it, and the best-effort reading of a JSON
//! prefix that `output_delta` events carry while the answer streams.
//!
//! The answer is validated with the `jsonschema` crate (the one the engine already validates
//! tool arguments with). The schema sent to the model may be a stricter form of the host's
//! (see [`OutputSchema::strict_form`]): every answer valid under it is valid under the host's,
//! and the answer is always checked against the host's own.
//!
//! ```
//! use contenox::OutputSchema;
//! use serde_json::json;
//!
//! let schema = OutputSchema::new(&json!({
//!     "type": "object",
//!     "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
//!     "required": ["city"]
//! }))
//! .unwrap();
//! assert_eq!(schema.check("{\"city\": \"Oslo\", \"temp\": 3}").unwrap()["city"], "Oslo");
//! assert!(schema.check("{\"temp\": 3}").unwrap_err().contains("\"city\" is a required property"));
//! // The stricter form the openai style sends with `strict: true`: every property required,
//! // no others allowed (`temp` may still be null-free: its own schema is unchanged).
//! let strict = schema.strict_form(contenox::output::Dialect::Openai).unwrap();
//! assert_eq!(strict["required"], json!(["city", "temp"]));
//! assert_eq!(strict["additionalProperties"], json!(false));
//! ```

use serde_json::{Map, Value};

/// The longest answer text quoted back to the model with its validation errors.
const QUOTED_ANSWER_CHARS: usize = 2000;
/// At most this many validation errors are listed for one answer.
const LISTED_ERRORS: usize = 10;
/// `partial_json` gives up (no value) on text nested deeper than this (serde_json's own
/// recursion limit is 128): keeps its work linear in the text whatever the model writes.
const PARTIAL_MAX_DEPTH: usize = 64;
/// Below this many bytes an answer is re-read at every delta; above, only once it has grown by
/// an eighth since the last reading, so a long answer costs a bounded multiple of its length.
const PARTIAL_EVERY_DELTA_BYTES: usize = 4096;

/// A host's output schema, checked and compiled.
#[derive(Debug)]
pub struct OutputSchema {
    schema: Value,
    validator: jsonschema::Validator,
    name: String,
    openai_strict: Option<Value>,
    anthropic_strict: Option<Value>,
}

/// Which provider's structured-output subset a strict form is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// openai `response_format.json_schema` with `strict: true`.
    Openai,
    /// anthropic `output_config.format` (always constrained: there is no non-strict form).
    Anthropic,
}

/// Keywords openai's strict subset takes as they are.
const COMMON_KEYWORDS: [&str; 12] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "enum",
    "const",
    "description",
    "title",
    "$ref",
    "format",
];
/// More keywords openai's strict subset takes (numeric and array bounds, patterns).
const OPENAI_KEYWORDS: [&str; 8] = [
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];
/// Annotations that constrain nothing: dropped from the strict form.
const DROPPED_ANNOTATIONS: [&str; 4] = ["default", "examples", "$schema", "$id"];

impl OutputSchema {
    /// Check and compile `schema`: a JSON object that is a valid JSON Schema. The error says
    /// what is wrong (the caller names the option).
    pub fn new(schema: &Value) -> Result<Self, String> {
        if !schema.is_object() {
            return Err("is not a JSON Schema object".into());
        }
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| format!("is not a valid JSON Schema: {e}"))?;
        let name = schema
            .get("title")
            .and_then(Value::as_str)
            .map(wire_name)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "output".to_string());
        Ok(OutputSchema {
            openai_strict: strict_form(schema),
            anthropic_strict: anthropic_node(schema),
            schema: schema.clone(),
            validator,
            name,
        })
    }

    /// The host's schema, as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The name the openai style gives it (`json_schema.name`): the schema's `title` in the
    /// characters the API allows, else `output`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The form of the schema a provider's constrained decoding takes, when there is one.
    ///
    /// openai (`strict: true`): the host's schema with `additionalProperties: false` on every
    /// object that left it out, every property required, and annotations that constrain nothing
    /// dropped. Each change only narrows what is valid, so an answer valid under it is valid
    /// under the host's schema. `None` when the schema uses something the strict subset lacks
    /// (an object that allows other properties, `oneOf`, `allOf`, string lengths, ...): then
    /// openai gets the host's schema with `strict: false`.
    ///
    /// anthropic (`output_config.format`, always constrained): the transform the official
    /// anthropic SDK applies (`transform_schema`): every object closed, `oneOf` as `anyOf`, the
    /// keywords the API lacks (numeric bounds, string lengths, `minItems` above 1, unknown
    /// formats, ...) moved into the `description` as text. `None` only for a node with neither
    /// a single `type` nor `anyOf`/`oneOf`/`allOf`/`enum`/`const` (such as `{}`): then no
    /// native field is sent. Either way the answer is checked against the host's own schema,
    /// and corrected through the retries.
    pub fn strict_form(&self, dialect: Dialect) -> Option<&Value> {
        match dialect {
            Dialect::Openai => self.openai_strict.as_ref(),
            Dialect::Anthropic => self.anthropic_strict.as_ref(),
        }
    }

    /// Parse and validate a final answer. `Ok` is the parsed JSON; `Err` the message the model
    /// is sent back (and the turn reports when the retries are spent).
    pub fn check(&self, text: &str) -> Result<Value, String> {
        let json = unfenced(text);
        let value: Value = serde_json::from_str(json)
            .map_err(|e| format!("the answer is not valid JSON ({e})"))?;
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(LISTED_ERRORS + 1)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                format!("at {at}: {e}")
            })
            .collect();
        if errors.is_empty() {
            return Ok(value);
        }
        let mut message = String::from("the answer does not match the output schema:");
        for e in errors.iter().take(LISTED_ERRORS) {
            message.push_str("\n- ");
            message.push_str(e);
        }
        if errors.len() > LISTED_ERRORS {
            message.push_str("\n- (more)");
        }
        Err(message)
    }

    /// What the model is told after an answer failed [`OutputSchema::check`].
    pub(crate) fn correction(&self, answer: &str, error: &str) -> String {
        let quoted: String = answer.chars().take(QUOTED_ANSWER_CHARS).collect();
        let cut = if quoted.len() < answer.len() {
            " (cut)"
        } else {
            ""
        };
        format!(
            "Your final answer must be a single JSON value matching this JSON Schema, with no \
             other text:\n{}\n\nYour answer{cut}:\n{quoted}\n\nProblem: {error}\n\nAnswer again \
             with only the corrected JSON.",
            self.schema
        )
    }
}

/// The answer's JSON: the text itself, or the inside of a Markdown code fence around it (some
/// models fence JSON even when asked not to).
fn unfenced(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return t;
    };
    // The info string (`json`) up to the first line end.
    match body.find('\n') {
        Some(nl) => body[nl + 1..].trim(),
        None => t,
    }
}

/// `name` in the characters openai allows in `json_schema.name` (`[A-Za-z0-9_-]`, at most 64).
fn wire_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// See [`OutputSchema::strict_form`] (openai). The root must be an object schema.
fn strict_form(schema: &Value) -> Option<Value> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    strict_node(schema, true)
}

fn strict_node(node: &Value, root: bool) -> Option<Value> {
    let Value::Object(map) = node else {
        // `true` / `false` schemas have no strict form.
        return None;
    };
    let mut out = Map::new();
    for (key, value) in map {
        let key = key.as_str();
        if DROPPED_ANNOTATIONS.contains(&key) {
            continue;
        }
        let known = COMMON_KEYWORDS.contains(&key)
            || OPENAI_KEYWORDS.contains(&key)
            || (root && matches!(key, "$defs" | "definitions"));
        if !known {
            return None;
        }
        let value = match key {
            "properties" | "$defs" | "definitions" => {
                let Value::Object(children) = value else {
                    return None;
                };
                let mut strict = Map::new();
                for (name, child) in children {
                    strict.insert(name.clone(), strict_node(child, false)?);
                }
                Value::Object(strict)
            }
            "items" => strict_node(value, false)?,
            "anyOf" => {
                let Value::Array(branches) = value else {
                    return None;
                };
                let branches: Option<Vec<Value>> =
                    branches.iter().map(|b| strict_node(b, false)).collect();
                Value::Array(branches?)
            }
            "additionalProperties" if value != &Value::Bool(false) => return None,
            _ => value.clone(),
        };
        out.insert(key.to_string(), value);
    }
    let is_object =
        map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
    if is_object {
        let names: Vec<Value> = map
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(|k| Value::String(k.clone())).collect())
            .unwrap_or_default();
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    Some(Value::Object(out))
}

/// String formats anthropic's structured output takes (the official SDK's list).
const ANTHROPIC_FORMATS: [&str; 10] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// See [`OutputSchema::strict_form`] (anthropic).
fn anthropic_node(node: &Value) -> Option<Value> {
    let Value::Object(map) = node else {
        return None;
    };
    let mut rest = map.clone();
    for dropped in DROPPED_ANNOTATIONS {
        rest.remove(dropped);
    }
    let mut out = Map::new();
    if let Some(defs) = rest.remove("$defs").or_else(|| rest.remove("definitions")) {
        let Value::Object(defs) = defs else {
            return None;
        };
        let mut strict = Map::new();
        for (name, def) in &defs {
            strict.insert(name.clone(), anthropic_node(def)?);
        }
        out.insert("$defs".into(), Value::Object(strict));
    }
    if let Some(r) = rest.remove("$ref") {
        out.insert("$ref".into(), r);
        if let Some(d) = rest.remove("description") {
            out.insert("description".into(), d);
        }
        return Some(Value::Object(out));
    }
    let primitive = |v: &Value| !v.is_array() && !v.is_object();
    let mut literal = false;
    if let Some(Value::Array(values)) = rest.get("enum") {
        if !values.is_empty() && values.iter().all(primitive) {
            out.insert("enum".into(), rest.remove("enum")?);
            literal = true;
        }
    }
    if rest.get("const").is_some_and(primitive) {
        out.insert("const".into(), rest.remove("const")?);
        literal = true;
    }
    let ty = match rest.remove("type") {
        None => None,
        Some(Value::String(t)) => Some(t),
        // A list of types has no form there.
        Some(_) => return None,
    };
    let branches = |v: Value| -> Option<Value> {
        let Value::Array(items) = v else { return None };
        let items: Option<Vec<Value>> = items.iter().map(anthropic_node).collect();
        Some(Value::Array(items?))
    };
    if let Some(v) = rest.remove("anyOf") {
        out.insert("anyOf".into(), branches(v)?);
    } else if let Some(v) = rest.remove("oneOf") {
        out.insert("anyOf".into(), branches(v)?);
    } else if let Some(v) = rest.remove("allOf") {
        out.insert("allOf".into(), branches(v)?);
    } else if !literal {
        out.insert("type".into(), Value::String(ty.clone()?));
    }
    for key in ["description", "title"] {
        if let Some(v) = rest.remove(key) {
            out.insert(key.into(), v);
        }
    }
    match ty.as_deref() {
        Some("object") => {
            let mut props = Map::new();
            if let Some(p) = rest.remove("properties") {
                let Value::Object(p) = p else { return None };
                for (name, child) in &p {
                    props.insert(name.clone(), anthropic_node(child)?);
                }
            }
            out.insert("properties".into(), Value::Object(props));
            rest.remove("additionalProperties");
            out.insert("additionalProperties".into(), Value::Bool(false));
            if let Some(r) = rest.remove("required") {
                out.insert("required".into(), r);
            }
        }
        Some("string") => {
            let known = rest
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| ANTHROPIC_FORMATS.contains(&f));
            if known {
                out.insert("format".into(), rest.remove("format")?);
            }
        }
        Some("array") => {
            if let Some(items) = rest.remove("items") {
                out.insert("items".into(), anthropic_node(&items)?);
            }
            if rest.get("minItems").is_some_and(|n| n == 0 || n == 1) {
                out.insert("minItems".into(), rest.remove("minItems")?);
            }
        }
        _ => {}
    }
    // What the API lacks goes to the description as text the model may follow (and the
    // validation enforces).
    if !rest.is_empty() {
        let extra: Vec<String> = rest.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        let extra = format!("{{{}}}", extra.join(", "));
        let description = match out.get("description").and_then(Value::as_str) {
            Some(d) => format!("{d}\n\n{extra}"),
            None => extra,
        };
        out.insert("description".into(), Value::String(description));
    }
    Some(Value::Object(out))
}

/// The best-effort value of a JSON text cut anywhere: open strings, arrays and objects closed,
/// an unfinished key or literal dropped. `None` when nothing of a JSON object or array has
/// arrived yet (or the text is not JSON). What `output_delta` events carry.
///
/// ```
/// use contenox::output::partial_json;
/// use serde_json::json;
///
/// assert_eq!(partial_json(r#"{"city": "Os"#), Some(json!({"city": "Os"})));
/// assert_eq!(partial_json(r#"{"a": 1, "b": [tr"#), Some(json!({"a": 1, "b": []})));
/// assert_eq!(partial_json("Let me look"), None);
/// ```
pub fn partial_json(text: &str) -> Option<Value> {
    let start = text.find(|c: char| !c.is_whitespace())?;
    let mut text = &text[start..];
    if let Some(rest) = text.strip_prefix("```") {
        // A fence: the JSON starts on the next line.
        text = &rest[rest.find('\n')? + 1..];
        if let Some(end) = text.find("```") {
            text = &text[..end];
        }
    }
    let text = text.trim_start();
    if !text.starts_with(['{', '[']) {
        return None;
    }
    // Walk the text once: the open containers, and the last few places where a value ended
    // (with the closers the text needs there).
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut ends: Vec<(usize, Vec<u8>)> = Vec::new();
    let closers = |stack: &[u8]| -> Vec<u8> {
        stack
            .iter()
            .rev()
            .map(|&c| if c == b'{' { b'}' } else { b']' })
            .collect()
    };
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => {
                    in_string = false;
                    ends.push((i + 1, closers(&stack)));
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                if stack.len() >= PARTIAL_MAX_DEPTH {
                    return None;
                }
                stack.push(b);
                ends.push((i + 1, closers(&stack)));
            }
            b'}' | b']' => {
                stack.pop();
                ends.push((i + 1, closers(&stack)));
                if stack.is_empty() {
                    // The value is whole: what follows it is not part of it.
                    return serde_json::from_str(&text[..=i]).ok();
                }
            }
            b',' => ends.push((i, closers(&stack))),
            _ => {}
        }
        if ends.len() > 8 {
            ends.drain(..4);
        }
    }
    // The whole text, an open string closed (an escape cut in half dropped).
    let mut whole = text.to_string();
    if in_string {
        if escaped {
            whole.pop();
        }
        if let Some(u) = whole.rfind("\\u").filter(|&u| whole.len() - u < 6) {
            whole.truncate(u);
        }
        whole.push('"');
    }
    whole.push_str(std::str::from_utf8(&closers(&stack)).unwrap_or_default());
    if let Ok(v) = serde_json::from_str(&whole) {
        return Some(v);
    }
    for (at, close) in ends.iter().rev() {
        let mut candidate = text[..*at].to_string();
        candidate.push_str(std::str::from_utf8(close).unwrap_or_default());
        if let Ok(v) = serde_json::from_str(&candidate) {
            return Some(v);
        }
    }
    None
}

/// Feeds an answer's text deltas as they stream and says when its best-effort value changed
/// (what becomes an `output_delta` event).
#[derive(Debug, Default)]
pub(crate) struct PartialOutput {
    text: String,
    /// The text's length when it was last read.
    read_at: usize,
    last: Option<Value>,
}

impl PartialOutput {
    /// Forget the text so far (a new request, or a retried attempt).
    pub(crate) fn reset(&mut self) {
        self.text.clear();
        self.read_at = 0;
        self.last = None;
    }

    /// Add `delta`; the value when it differs from the last one given.
    pub(crate) fn push(&mut self, delta: &str) -> Option<Value> {
        self.text.push_str(delta);
        let len = self.text.len();
        if len > PARTIAL_EVERY_DELTA_BYTES && len - self.read_at < len / 8 {
            return None;
        }
        self.read_at = len;
        let value = partial_json(&self.text)?;
        if self.last.as_ref() == Some(&value) {
            return None;
        }
        self.last = Some(value.clone());
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_that_is_not_one_is_refused() {
        assert!(OutputSchema::new(&json!("object")).is_err());
        assert!(OutputSchema::new(&json!({"type": "nope"}))
            .unwrap_err()
            .contains("not a valid JSON Schema"));
        assert!(OutputSchema::new(&json!({"type": "object"})).is_ok());
    }

    #[test]
    fn invalid_answers_say_why() {
        let s = OutputSchema::new(&json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": false
        }))
        .unwrap();
        assert_eq!(s.check(" {\"n\": 2} ").unwrap(), json!({"n": 2}));
        assert_eq!(
            s.check("```json\n{\"n\": 2}\n```").unwrap(),
            json!({"n": 2})
        );
        assert!(s.check("{\"n\": 2").unwrap_err().contains("not valid JSON"));
        let e = s.check("{\"n\": \"two\", \"x\": 1}").unwrap_err();
        assert!(e.contains("at /n:") && e.contains("\"two\""), "{e}");
        assert!(e.contains("Additional properties"), "{e}");
        let note = s.correction("{\"n\": \"two\"}", &e);
        assert!(note.contains("\"required\":[\"n\"]") && note.contains("{\"n\": \"two\"}"));
    }

    #[test]
    fn the_native_forms() {
        let pydantic_like = json!({
            "title": "Weather report",
            "type": "object",
            "properties": {
                "city": {"title": "City", "type": "string"},
                "temp": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": null},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}}
            },
            "required": ["city"],
            "$defs": {"Tag": {"type": "object", "properties": {"t": {"type": "string"}}}}
        });
        let s = OutputSchema::new(&pydantic_like).unwrap();
        assert_eq!(s.name(), "Weather_report");
        let strict = s.strict_form(Dialect::Openai).unwrap();
        assert_eq!(strict["required"], json!(["city", "tags", "temp"]));
        assert_eq!(strict["$defs"]["Tag"]["additionalProperties"], json!(false));
        assert!(strict["properties"]["temp"].get("default").is_none());
        // Not expressible: an open object, a keyword outside the subsets, a non-object root.
        for schema in [
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"type": "object", "properties": {"s": {"type": "string", "minLength": 2}}}),
            json!({"type": "object", "properties": {"o": {"oneOf": [{"type": "string"}]}}}),
            json!({"type": "array", "items": {"type": "string"}}),
        ] {
            let s = OutputSchema::new(&schema).unwrap();
            assert!(s.strict_form(Dialect::Openai).is_none(), "{schema}");
        }
        // Numeric bounds: openai's subset has them; anthropic's form carries them as text.
        let bounded = json!({"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1, "description": "count"},
            "s": {"type": "string", "minLength": 2, "format": "email"},
            "o": {"oneOf": [{"type": "string"}, {"type": "null"}]},
            "l": {"type": "array", "items": {"type": "string"}, "minItems": 3},
            "m": {"type": "object", "additionalProperties": {"type": "string"}}
        }, "required": ["n"]});
        let s = OutputSchema::new(&bounded).unwrap();
        assert!(s.strict_form(Dialect::Openai).is_none());
        let a = s.strict_form(Dialect::Anthropic).unwrap();
        assert_eq!(a["required"], json!(["n"]));
        assert_eq!(a["additionalProperties"], json!(false));
        let p = &a["properties"];
        assert_eq!(
            p["n"],
            json!({"type": "integer", "description": "count\n\n{minimum: 1}"})
        );
        assert_eq!(
            p["s"],
            json!({"type": "string", "format": "email", "description": "{minLength: 2}"})
        );
        assert_eq!(
            p["o"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
        assert_eq!(p["l"]["description"], json!("{minItems: 3}"));
        assert_eq!(p["m"]["additionalProperties"], json!(false));
        // No type to constrain: no native form.
        let any = OutputSchema::new(&json!({"type": "object", "properties": {"x": {}}})).unwrap();
        assert!(any.strict_form(Dialect::Anthropic).is_none());
        let pydantic = json!({"$defs": {"T": {"type": "object", "properties": {"t": {"type": "string"}}}},
                              "type": "object", "properties": {"t": {"$ref": "#/$defs/T", "default": null}}});
        let a = OutputSchema::new(&pydantic).unwrap();
        let a = a.strict_form(Dialect::Anthropic).unwrap();
        assert_eq!(a["$defs"]["T"]["additionalProperties"], json!(false));
        assert_eq!(a["properties"]["t"], json!({"$ref": "#/$defs/T"}));
    }

    #[test]
    fn partial_json_reads_every_prefix() {
        let full =
            r#"{"city": "Os\"lo", "temps": [1, 2.5, -3], "ok": true, "n": null, "u": "\u00e9"}"#;
        let mut last = None;
        for end in 0..=full.len() {
            let got = partial_json(&full[..end]);
            if end > 0 {
                assert!(got.is_some(), "nothing for {:?}", &full[..end]);
            }
            last = got.or(last);
        }
        assert_eq!(last.unwrap(), serde_json::from_str::<Value>(full).unwrap());
        assert_eq!(partial_json(r#"{"a": "x\"#), Some(json!({"a": "x"})));
        assert_eq!(partial_json(r#"{"a": "\u00"#), Some(json!({"a": ""})));
        assert_eq!(partial_json(r#"{"a"#), Some(json!({})));
        assert_eq!(
            partial_json(r#"[{"a": 1}, {"b""#),
            Some(json!([{"a": 1}, {}]))
        );
        assert_eq!(partial_json("```json\n{\"a\": 1"), Some(json!({"a": 1})));
        assert_eq!(partial_json("{\"a\": 1} and more"), Some(json!({"a": 1})));
        assert_eq!(partial_json("I will check"), None);
        assert_eq!(partial_json(""), None);
    }

    #[test]
    fn partial_json_work_stays_bounded() {
        // Nesting past the limit gives no value (not a stack of closers per character).
        let deep = "[".repeat(PARTIAL_MAX_DEPTH + 1);
        assert_eq!(partial_json(&deep), None);
        assert!(partial_json(&"[".repeat(PARTIAL_MAX_DEPTH)).is_some());
        // A long answer streamed a character at a time is read a bounded number of times.
        let mut p = PartialOutput::default();
        let mut reads = 0;
        let long = format!("{{\"s\": \"{}\"}}", "x".repeat(200_000));
        for c in long.chars() {
            let before = p.read_at;
            p.push(&c.to_string());
            reads += usize::from(p.read_at != before);
        }
        assert!(reads < PARTIAL_EVERY_DELTA_BYTES + 200, "{reads} reads");
    }

    #[test]
    fn partial_output_reports_changes_only() {
        let mut p = PartialOutput::default();
        assert_eq!(p.push("{\"a\""), Some(json!({})));
        assert_eq!(p.push(": "), None);
        assert_eq!(p.push("1"), Some(json!({"a": 1})));
        assert_eq!(p.push("}"), None);
        p.reset();
        assert_eq!(p.push("[1"), Some(json!([1])));
    }
}
