//! Reading JSON into the engine's option types (a config, per-run settings) so that a mistake
//! comes back as a [`ConfigError`]: the path of the option (`script[0]`), the bad value, what is allowed,
//! spelled the host's way, and never a serde position the host did not write.
//!
//! serde_json's own errors are text; this reads the value through a small deserializer whose
//! error type keeps serde's structured callbacks (`unknown_field`, `unknown_variant`,
//! `invalid_type`, ...), and serde_path_to_error for the path.

use std::fmt::{self, Display};
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, Deserializer, IntoDeserializer, Unexpected, Visitor};
use serde_json::Value;

use crate::error::{ConfigError, Result};
use crate::spelling::Spelling;

/// Read `value` as a `T`, naming the option at fault the way `spelling` spells it.
pub(crate) fn read<T: DeserializeOwned>(
    value: &Value,
    spelling: Spelling,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(Json::<Problem>::new(value)).map_err(|e| {
        // The path of an unknown key ends with that key: name the object it is in.
        let skip = usize::from(matches!(e.inner(), Problem::UnknownField(..)));
        let path = path_of(e.path(), skip, spelling);
        e.into_inner().into_config_error(path, spelling)
    })
}

/// `script[0].tool_calls` in the host's spelling, without its last `skip` segments; empty at
/// the top.
fn path_of(path: &serde_path_to_error::Path, skip: usize, spelling: Spelling) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    let segments: Vec<&Segment> = path.iter().collect();
    let keep = segments.len().saturating_sub(skip);
    for segment in &segments[..keep] {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&spelling.name(key));
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// A mistake serde reported, with its parts kept.
#[derive(Debug)]
enum Problem {
    UnknownField(String, &'static [&'static str]),
    UnknownVariant(String, &'static [&'static str]),
    /// The value as text, and what was expected.
    Invalid(String, String),
    MissingField(&'static str),
    DuplicateField(&'static str),
    Custom(String),
}

impl Problem {
    fn into_config_error(self, option: String, spelling: Spelling) -> ConfigError {
        let names = |names: &[&str]| -> String {
            if names.is_empty() {
                return "none".to_string();
            }
            names
                .iter()
                .map(|n| spelling.name(n))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (value, reason) = match self {
            Problem::UnknownField(field, expected) if option.is_empty() => (
                None,
                format!(
                    "unknown option {:?}; the options are {}",
                    spelling.name(&field),
                    names(expected)
                ),
            ),
            Problem::UnknownField(field, expected) => (
                None,
                format!(
                    "unknown key {:?}; the keys are {}",
                    spelling.name(&field),
                    names(expected)
                ),
            ),
            Problem::UnknownVariant(variant, expected) => (
                Some(quote(&variant)),
                format!("is not one of {}", expected.join(", ")),
            ),
            Problem::Invalid(got, expected) => (Some(got), format!("is not {expected}")),
            Problem::MissingField(field) => {
                (None, format!("{:?} is missing", spelling.name(field)))
            }
            Problem::DuplicateField(field) => {
                (None, format!("{:?} is given twice", spelling.name(field)))
            }
            Problem::Custom(message) => (None, message),
        };
        ConfigError {
            option,
            value,
            reason,
        }
    }
}

impl Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for Problem {}

impl de::Error for Problem {
    fn custom<T: Display>(msg: T) -> Self {
        Problem::Custom(msg.to_string())
    }
    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        Problem::Invalid(shown(unexp), expected(exp))
    }
    fn invalid_value(unexp: Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        Problem::Invalid(shown(unexp), expected(exp))
    }
    fn invalid_length(len: usize, exp: &dyn de::Expected) -> Self {
        Problem::Invalid(format!("a list of {len}"), expected(exp))
    }
    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Problem::UnknownVariant(variant.to_string(), expected)
    }
    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Problem::UnknownField(field.to_string(), expected)
    }
    fn missing_field(field: &'static str) -> Self {
        Problem::MissingField(field)
    }
    fn duplicate_field(field: &'static str) -> Self {
        Problem::DuplicateField(field)
    }
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A value the way a host wrote it (JSON).
fn shown(unexp: Unexpected<'_>) -> String {
    match unexp {
        Unexpected::Bool(b) => b.to_string(),
        Unexpected::Unsigned(n) => n.to_string(),
        Unexpected::Signed(n) => n.to_string(),
        Unexpected::Float(n) => n.to_string(),
        Unexpected::Char(c) => quote(&c.to_string()),
        Unexpected::Str(s) => quote(s),
        Unexpected::Unit | Unexpected::Option => "null".to_string(),
        Unexpected::Seq => "a list".to_string(),
        Unexpected::Map => "an object".to_string(),
        other => other.to_string(),
    }
}

/// What serde expected, in words a host uses rather than Rust type names.
fn expected(exp: &dyn de::Expected) -> String {
    let text = exp.to_string();
    match text.as_str() {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of 0 or more".to_string(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".to_string(),
        "f32" | "f64" => "a number".to_string(),
        "a sequence" => "a list".to_string(),
        "a map" => "an object".to_string(),
        "path string" => "a path (a string)".to_string(),
        "a boolean" | "a string" => text,
        t if t.starts_with("struct ") || t.starts_with("internally tagged enum") => {
            "an object".to_string()
        }
        _ => text,
    }
}

/// A deserializer over a borrowed JSON value whose error type is `E` (serde_json's own is fixed
/// to its textual error).
struct Json<'a, E> {
    value: &'a Value,
    error: PhantomData<E>,
}

impl<'a, E> Json<'a, E> {
    fn new(value: &'a Value) -> Self {
        Json {
            value,
            error: PhantomData,
        }
    }
}

impl<'de, E: de::Error> IntoDeserializer<'de, E> for Json<'_, E> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de, E: de::Error> Deserializer<'de> for Json<'_, E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => visitor.visit_u64(u),
                (_, Some(i), _) => visitor.visit_i64(i),
                (_, _, Some(f)) => visitor.visit_f64(f),
                _ => Err(E::custom(format!("{n} is not a number this engine reads"))),
            },
            Value::String(s) => visitor.visit_str(s),
            Value::Array(items) => {
                let mut seq = SeqDeserializer::new(items.iter().map(Json::new));
                let v = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(v)
            }
            Value::Object(map) => {
                let mut entries =
                    MapDeserializer::new(map.iter().map(|(k, v)| (k.as_str(), Json::new(v))));
                let v = visitor.visit_map(&mut entries)?;
                entries.end()?;
                Ok(v)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match self.value {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::Object(map) if map.len() == 1 => {
                let entries =
                    MapDeserializer::new(map.iter().map(|(k, v)| (k.as_str(), Json::new(v))));
                visitor.visit_enum(MapAccessDeserializer::new(entries))
            }
            other => Err(E::invalid_type(
                unexpected(other),
                &"a name or a one-key object",
            )),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match n.as_f64() {
            Some(f) => Unexpected::Float(f),
            None => Unexpected::Other("number"),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use serde_json::json;

    fn err(v: Value, spelling: Spelling) -> String {
        read::<Config>(&v, spelling).unwrap_err().to_string()
    }

    #[test]
    fn messages_name_the_option_the_value_and_what_is_allowed() {
        assert_eq!(
            err(json!({"style": "nope"}), Spelling::Snake),
            r#"style: "nope" is not one of openai, openai-responses, anthropic, ollama, scripted"#
        );
        let unknown = err(json!({"script": [{"txt": "x"}]}), Spelling::Snake);
        assert!(
            unknown.starts_with(r#"script[0]: unknown key "txt"; the keys are text, tool_calls"#),
            "{unknown}"
        );
        let camel = err(json!({"script": [{"txt": "x"}]}), Spelling::Camel);
        assert!(
            camel.contains("toolCalls") && camel.contains("breakAfterBytes"),
            "{camel}"
        );
        let top = err(json!({"base_ur": "x"}), Spelling::Camel);
        assert!(
            top.starts_with(r#"unknown option "baseUr"; the options are style, baseUrl"#),
            "{top}"
        );
        assert_eq!(
            err(json!({"max_turns": "many"}), Spelling::Snake),
            r#"max_turns: "many" is not a whole number of 0 or more"#
        );
        assert_eq!(
            err(json!({"retry": {"max_retries": -1}}), Spelling::Camel),
            "retry.maxRetries: -1 is not a whole number of 0 or more"
        );
        assert_eq!(
            err(json!({"builtins": "read"}), Spelling::Snake),
            r#"builtins: "read" is not a list"#
        );
        let missing = err(
            json!({"script": [{"tool_calls": [{"id": "c"}]}]}),
            Spelling::Snake,
        );
        assert_eq!(missing, r#"script[0].tool_calls[0]: "name" is missing"#);
        for text in [unknown, camel, top, missing] {
            assert!(
                !text.contains("line ") && !text.contains("column"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_good_config_reads_as_serde_json_reads_it() {
        let v = json!({"style": "scripted", "script": [{"text": "hi", "usage": {"input_tokens": 1, "output_tokens": 2}},
            {"tool_calls": [{"id": "c1", "name": "echo", "arguments": {"a": [1, null, 2.5]}}]}],
            "retry": {"max_retries": 0}, "headers": {"X-A": "b"}, "root": "/tmp", "allow": ["*"]});
        let ours: Config = read(&v, Spelling::Snake).unwrap();
        let theirs: Config = serde_json::from_value(v).unwrap();
        assert_eq!(ours, theirs);
    }
}
