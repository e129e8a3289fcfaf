//! An MCP server's question (`elicitation/create`, an ask of kind `elicitation`) as a form in
//! the terminal: the server's message, then each field of its requested schema with its type
//! and whether it is required; every answer is checked against the field's schema by the engine
//! ([`Elicitation::check_field`]) and the whole by [`Elicitation::check`] before it is sent.
//!
//! A form that is not what MCP allows (a flat object of text, number, integer, yes/no and
//! choice fields) or too large to ask is refused before the first question, with the reason
//! printed: the server gets a decline, never a half-read form.
//!
//! The person answers `y` to fill it in, `n` to decline; Esc (then Enter: the terminal is in
//! its normal line mode) or Ctrl-C cancels the question without cancelling the turn.

use serde_json::{Map, Number, Value};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use contenox::mcp::Elicitation;

use crate::printer::Printer;
use crate::terminal::{clean_line, cut_chars};

/// The most fields a form may have.
const MAX_FIELDS: usize = 64;
/// The largest requested schema (as JSON text) the terminal asks.
const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// The most options of one choice.
const MAX_OPTIONS: usize = 100;
/// The longest server text shown for one label, option or message (characters).
const MAX_SHOWN: usize = 300;

/// What kind of answer a field takes.
#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these values (each with what is shown for it).
    Choice(Vec<(Value, String)>),
    /// Some of these values, comma-separated.
    Choices(Vec<(Value, String)>),
}

/// One field of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    name: String,
    label: Option<String>,
    kind: Kind,
    required: bool,
    default: Option<Value>,
}

/// How a form ended.
#[derive(Debug, PartialEq)]
pub enum Filled {
    /// The content to send (checked against the schema).
    Accept(Value),
    /// The person declined.
    Decline,
    /// The person cancelled (Esc or Ctrl-C).
    Cancel,
    /// Stdin closed before the form was done.
    Closed,
    /// The turn was cancelled.
    TurnCancelled,
}

fn shown(text: &str) -> String {
    cut_chars(&clean_line(text), MAX_SHOWN)
}

/// The options of an `enum` / `oneOf` / `anyOf` (with `const`) in `schema`, if it is a choice.
fn options(schema: &Value, field: &str) -> Result<Option<Vec<(Value, String)>>, String> {
    let too_many = || format!("field {field:?} offers more than {MAX_OPTIONS} options");
    if let Some(values) = schema.get("enum") {
        let values = values
            .as_array()
            .ok_or_else(|| format!("field {field:?}: its enum is not a list"))?;
        if values.len() > MAX_OPTIONS {
            return Err(too_many());
        }
        let names = schema.get("enumNames").and_then(Value::as_array);
        let mut out = Vec::new();
        for (i, v) in values.iter().enumerate() {
            if !(v.is_string() || v.is_number() || v.is_boolean()) {
                return Err(format!("field {field:?}: an option is not a plain value"));
            }
            let name = names
                .and_then(|n| n.get(i))
                .and_then(Value::as_str)
                .map(shown);
            let plain = match v {
                Value::String(s) => shown(s),
                other => other.to_string(),
            };
            out.push((v.clone(), name.unwrap_or(plain)));
        }
        return Ok(Some(out));
    }
    for key in ["oneOf", "anyOf"] {
        let Some(list) = schema.get(key) else {
            continue;
        };
        let list = list
            .as_array()
            .ok_or_else(|| format!("field {field:?}: its {key} is not a list"))?;
        if list.len() > MAX_OPTIONS {
            return Err(too_many());
        }
        let mut out = Vec::new();
        for option in list {
            let Some(v) = option.get("const") else {
                return Err(format!(
                    "field {field:?}: its {key} holds something other than fixed options"
                ));
            };
            if !(v.is_string() || v.is_number() || v.is_boolean()) {
                return Err(format!("field {field:?}: an option is not a plain value"));
            }
            let plain = match v {
                Value::String(s) => shown(s),
                other => other.to_string(),
            };
            let name = option
                .get("title")
                .and_then(Value::as_str)
                .map(shown)
                .unwrap_or(plain);
            out.push((v.clone(), name));
        }
        return Ok(Some(out));
    }
    Ok(None)
}

/// The form of `schema`, or why the terminal cannot ask it.
pub fn fields(schema: &Value) -> Result<Vec<Field>, String> {
    let size = serde_json::to_string(schema).map(|s| s.len()).unwrap_or(0);
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its form is {size} bytes of schema (at most {MAX_SCHEMA_BYTES} are asked)"
        ));
    }
    let Some(schema) = schema.as_object() else {
        return Err("its form is not a JSON object schema".into());
    };
    match schema.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Err(format!("its form has type {other} (MCP asks an object)")),
    }
    let empty = Map::new();
    let properties = match schema.get("properties") {
        None => &empty,
        Some(Value::Object(p)) => p,
        Some(_) => return Err("its form's properties are not an object".into()),
    };
    if properties.len() > MAX_FIELDS {
        return Err(format!(
            "its form has {} fields (at most {MAX_FIELDS} are asked)",
            properties.len()
        ));
    }
    let required: Vec<&str> = match schema.get("required") {
        None => Vec::new(),
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err("its form's required list is not a list".into()),
    };
    let mut out = Vec::new();
    for (name, prop) in properties {
        let shown_name = shown(name);
        let Some(p) = prop.as_object() else {
            return Err(format!("field {shown_name:?} has no schema object"));
        };
        let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
        let kind = match (ty, options(prop, &shown_name)?) {
            ("array", None) => {
                let items = p.get("items").unwrap_or(&Value::Null);
                match options(items, &shown_name)? {
                    Some(o) => Kind::Choices(o),
                    None => {
                        return Err(format!(
                            "field {shown_name:?} is a list of free values (the terminal asks \
                             text, numbers, integers, yes/no and choices)"
                        ))
                    }
                }
            }
            (_, Some(o)) if ty != "array" => Kind::Choice(o),
            ("string", None) => Kind::Text,
            ("number", None) => Kind::Number,
            ("integer", None) => Kind::Integer,
            ("boolean", None) => Kind::Boolean,
            (other, _) => {
                let other = if other.is_empty() {
                    "none".to_string()
                } else {
                    shown(other)
                };
                return Err(format!(
                    "field {shown_name:?} has type {other:?} (the terminal asks text, numbers, \
                     integers, yes/no and choices)"
                ));
            }
        };
        let label = p
            .get("title")
            .and_then(Value::as_str)
            .into_iter()
            .chain(p.get("description").and_then(Value::as_str))
            .map(shown)
            .collect::<Vec<_>>();
        out.push(Field {
            name: name.clone(),
            label: (!label.is_empty()).then(|| label.join(": ")),
            kind,
            required: required.contains(&name.as_str()),
            default: p.get("default").cloned(),
        });
    }
    Ok(out)
}

fn list(options: &[(Value, String)]) -> String {
    options
        .iter()
        .enumerate()
        .map(|(i, (_, name))| format!("{}) {name}", i + 1))
        .collect::<Vec<_>>()
        .join(" ")
}

fn default_shown(v: &Value, kind: &Kind) -> String {
    let name_of = |v: &Value, options: &[(Value, String)]| {
        options
            .iter()
            .find(|(o, _)| o == v)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| shown(&v.to_string()))
    };
    match (kind, v) {
        (Kind::Choice(o), v) => name_of(v, o),
        (Kind::Choices(o), Value::Array(vs)) => vs
            .iter()
            .map(|v| name_of(v, o))
            .collect::<Vec<_>>()
            .join(", "),
        (Kind::Boolean, Value::Bool(b)) => if *b { "yes" } else { "no" }.into(),
        (_, Value::String(s)) => shown(s),
        (_, other) => shown(&other.to_string()),
    }
}

/// The question of one field.
fn question(field: &Field) -> String {
    let kind = match &field.kind {
        Kind::Text => "text".to_string(),
        Kind::Number => "a number".to_string(),
        Kind::Integer => "an integer".to_string(),
        Kind::Boolean => "y/n".to_string(),
        Kind::Choice(o) => format!("one of: {}", list(o)),
        Kind::Choices(o) => format!("some of, comma-separated: {}", list(o)),
    };
    let mut parts = vec![kind];
    parts.push(
        if field.required {
            "required"
        } else {
            "optional"
        }
        .into(),
    );
    if let Some(d) = &field.default {
        parts.push(format!("Enter: {}", default_shown(d, &field.kind)));
    }
    let label = field
        .label
        .as_ref()
        .map(|l| format!(" ({l})"))
        .unwrap_or_default();
    format!("  {}{label} [{}]: ", shown(&field.name), parts.join("; "))
}

/// One option typed as its number, its value or its shown name.
fn pick(typed: &str, options: &[(Value, String)]) -> Result<Value, String> {
    let typed = typed.trim();
    if let Ok(k) = typed.parse::<usize>() {
        if (1..=options.len()).contains(&k) {
            return Ok(options[k - 1].0.clone());
        }
    }
    // A number or boolean option typed as itself.
    let literal = serde_json::from_str::<Value>(typed).ok();
    options
        .iter()
        .find(|(v, name)| v.as_str() == Some(typed) || name == typed || literal.as_ref() == Some(v))
        .map(|(v, _)| v.clone())
        .ok_or_else(|| format!("{:?} is none of the options", shown(typed)))
}

/// The value `typed` means for `field` (not yet checked against its schema).
fn parse(typed: &str, kind: &Kind) -> Result<Value, String> {
    let t = typed.trim();
    match kind {
        Kind::Text => Ok(Value::String(typed.to_string())),
        Kind::Number => t
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{:?} is not a number", shown(t))),
        Kind::Integer => t
            .parse::<i64>()
            .map(|n| Value::Number(n.into()))
            .map_err(|_| format!("{:?} is not an integer", shown(t))),
        Kind::Boolean => match t.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer y or n".into()),
        },
        Kind::Choice(o) => pick(t, o),
        Kind::Choices(o) => t
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| pick(s, o))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
    }
}

/// What was typed, or why the form stops.
enum Input {
    Line(String),
    Stop(Filled),
}

/// The next line typed: Esc in it or Ctrl-C (`interrupt`) cancels the question.
async fn read(
    lines: &mut UnboundedReceiver<Option<String>>,
    cancel: &CancellationToken,
    interrupt: &CancellationToken,
) -> Input {
    tokio::select! {
        line = lines.recv() => match line {
            Some(Some(l)) if l.contains('\u{1b}') => Input::Stop(Filled::Cancel),
            Some(Some(l)) => Input::Line(l.trim_end_matches('\r').to_string()),
            _ => Input::Stop(Filled::Closed),
        },
        _ = interrupt.cancelled() => Input::Stop(Filled::Cancel),
        _ = cancel.cancelled() => Input::Stop(Filled::TurnCancelled),
    }
}

/// Ask `asked` (its `fields`) in the terminal.
pub async fn ask(
    asked: &Elicitation,
    fields: &[Field],
    printer: &Printer,
    lines: &mut UnboundedReceiver<Option<String>>,
    cancel: &CancellationToken,
    interrupt: &CancellationToken,
) -> Filled {
    printer.note(&format!(
        "[mcp] {} asks: {}",
        shown(&asked.server),
        cut_chars(&crate::terminal::clean(&asked.message), 4 * MAX_SHOWN)
    ));
    printer.note(&format!(
        "  {} field(s); Enter keeps the default or skips an optional field; Esc then Enter, or \
         Ctrl-C, cancels the question",
        fields.len()
    ));
    printer.prompt("Fill in the form? [y = answer / n = decline] ");
    match read(lines, cancel, interrupt).await {
        Input::Line(l) if matches!(l.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {}
        Input::Line(_) => return Filled::Decline,
        Input::Stop(stop) => return stop,
    }
    let mut content = Map::new();
    for field in fields {
        loop {
            printer.prompt(&question(field));
            let typed = match read(lines, cancel, interrupt).await {
                Input::Line(l) => l,
                Input::Stop(stop) => return stop,
            };
            let value = if typed.trim().is_empty() {
                match (&field.default, field.required) {
                    (Some(d), _) => Some(d.clone()),
                    (None, false) => None,
                    (None, true) => {
                        printer.note("  required: type an answer (Esc cancels)");
                        continue;
                    }
                }
            } else {
                match parse(&typed, &field.kind) {
                    Ok(v) => Some(v),
                    Err(why) => {
                        printer.note(&format!("  not accepted: {why}"));
                        continue;
                    }
                }
            };
            let Some(value) = value else { break };
            if let Err(why) = asked.check_field(&field.name, &value) {
                printer.note(&format!("  not accepted: {}", shown(&why)));
                continue;
            }
            content.insert(field.name.clone(), value);
            break;
        }
    }
    let content = Value::Object(content);
    if let Err(why) = asked.check(&content) {
        printer.note(&format!(
            "  the answers do not match the form ({}); declined",
            shown(&why)
        ));
        return Filled::Decline;
    }
    Filled::Accept(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_choices_and_required_are_read() {
        let form = fields(
            &json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "title": "Name"},
            "age": {"type": "integer", "default": 3},
            "pet": {"type": "string", "enum": ["cat", "dog"], "enumNames": ["Cats", "Dogs"]},
            "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}]},
            "fish": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}]}},
            "ok": {"type": "boolean"}, "x": {"type": "number"}}}),
        )
        .unwrap();
        let by = |n: &str| fields_named(&form, n);
        assert!(by("name").required && by("name").kind == Kind::Text);
        assert!(!by("age").required && by("age").default == Some(json!(3)));
        assert_eq!(parse(" 2 ", &by("pet").kind), Ok(json!("dog")));
        assert_eq!(parse("Cats", &by("pet").kind), Ok(json!("cat")));
        assert_eq!(parse("Superman", &by("hero").kind), Ok(json!("h1")));
        assert_eq!(parse("1, Tuna", &by("fish").kind), Ok(json!(["f1", "f1"])));
        assert_eq!(parse("yes", &by("ok").kind), Ok(json!(true)));
        assert_eq!(parse("2.5", &by("x").kind), Ok(json!(2.5)));
        assert!(parse("two", &by("age").kind).is_err());
        assert!(parse("NaN", &by("x").kind).is_err());
        assert!(parse("3", &by("pet").kind).is_err());
        assert!(question(by("age")).contains("an integer; optional; Enter: 3"));
    }

    fn fields_named<'a>(form: &'a [Field], name: &str) -> &'a Field {
        form.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn forms_the_terminal_cannot_ask_are_refused_with_the_reason() {
        let nested = fields(&json!({"type": "object", "properties": {
            "addr": {"type": "object", "properties": {"street": {"type": "string"}}}}}));
        assert!(nested.unwrap_err().contains("\"addr\" has type \"object\""));
        let unknown = fields(&json!({"properties": {"f": {"type": "uuid"}}}));
        assert!(unknown.unwrap_err().contains("type \"uuid\""));
        let many: Map<String, Value> = (0..1000)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        let wide = fields(&json!({"type": "object", "properties": many}));
        assert!(wide.unwrap_err().contains("1000 fields"));
        let huge = fields(&json!({"properties": {"f": {"type": "string",
            "description": "x".repeat(100_000)}}}));
        assert!(huge.unwrap_err().contains("bytes of schema"));
        assert!(fields(&json!("text")).is_err());
        assert!(fields(&json!({"type": "array"})).is_err());
        let free_list = fields(&json!({"properties": {"tags": {"type": "array",
            "items": {"type": "string"}}}}));
        assert!(free_list.unwrap_err().contains("list of free values"));
    }
}
