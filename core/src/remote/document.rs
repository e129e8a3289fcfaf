//! Reading an OpenAPI document: JSON or YAML text into JSON, keeping the order of the
//! operations (tool names are given out in document order, and serde_json's map is sorted).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The largest document read (Microsoft Graph's beta API, the largest published one we know,
/// is 47 MB).
pub(crate) const MAX_DOCUMENT_BYTES: usize = 64 << 20;

/// A parsed document: its JSON, and the order of its paths and of each path's keys.
pub(crate) struct Document {
    pub value: Value,
    /// `paths` keys in document order, each with its own keys (methods, `parameters`, ...) in
    /// document order.
    pub path_order: Vec<(String, Vec<String>)>,
}

/// Flow collections (`[`, `{`) a YAML document may nest. libyaml's work per token grows with
/// the flow depth, so a document of 100000 nested `[` took minutes before serde's own limit
/// (128 levels) could refuse it.
const MAX_YAML_FLOW_DEPTH: usize = 512;

/// Parse `text` (JSON when it starts with `{`, else YAML). The parsers' own nesting limits
/// (128 levels) bound the depth; YAML flow nesting is checked first (see
/// [`MAX_YAML_FLOW_DEPTH`]) and aliases are bounded by serde_norway's repetition limit.
pub(crate) fn parse(text: &str) -> Result<Document, String> {
    let text = text.trim_start_matches('\u{feff}');
    if text.trim_start().starts_with('{') {
        // JSON: serde_json's own Value (fast), and the order from a second pass that reads
        // only the keys of `paths` and of each path item (everything else skipped unparsed).
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        if !value.is_object() {
            return Err("the document is not an object".into());
        }
        let order: PathOrder =
            serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        return Ok(Document {
            value,
            path_order: order.0,
        });
    }
    check_flow_depth(text)?;
    let node = Node::deserialize(serde_norway::Deserializer::from_str(text))
        .map_err(|e| format!("not valid JSON or YAML: {e}"))?;
    let Node::Object(entries) = node else {
        return Err("the document is not an object".into());
    };
    let mut path_order = Vec::new();
    if let Some((_, Node::Object(paths))) = entries.iter().find(|(k, _)| k == "paths") {
        for (path, item) in paths {
            let keys = match item {
                Node::Object(fields) => fields.iter().map(|(k, _)| k.clone()).collect(),
                _ => Vec::new(),
            };
            path_order.push((path.clone(), keys));
        }
    }
    Ok(Document {
        value: Node::Object(entries).into_value(),
        path_order,
    })
}

/// The keys of `paths` and of each path item, in document order (a JSON pass that allocates
/// nothing else).
struct PathOrder(Vec<(String, Vec<String>)>);

impl<'de> Deserialize<'de> for PathOrder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PathOrder, D::Error> {
        struct Top;
        impl<'de> Visitor<'de> for Top {
            type Value = PathOrder;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PathOrder, A::Error> {
                let mut order = Vec::new();
                while let Some(key) = map.next_key::<Key>()? {
                    if key.0 == "paths" {
                        order = map
                            .next_value::<Keys<Keys<de::IgnoredAny>>>()?
                            .0
                            .into_iter()
                            .map(|(path, item)| {
                                (path, item.0.into_iter().map(|(k, _)| k).collect())
                            })
                            .collect();
                    } else {
                        map.next_value::<de::IgnoredAny>()?;
                    }
                }
                Ok(PathOrder(order))
            }
        }
        d.deserialize_map(Top)
    }
}

/// An object's keys in order, each with what `T` reads of its value; anything that is not an
/// object reads as no keys.
struct Keys<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Keys<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Keys<T>, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Keys<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Keys<T>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<Key, T>()? {
                    out.push((k.0, v));
                }
                Ok(Keys(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Keys<T>, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Keys(Vec::new()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Keys<T>, E> {
                Ok(Keys(Vec::new()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Keys<T>, E> {
                Ok(Keys(Vec::new()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Keys<T>, E> {
                Ok(Keys(Vec::new()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Keys<T>, E> {
                Ok(Keys(Vec::new()))
            }
            fn visit_str<E>(self, _: &str) -> Result<Keys<T>, E> {
                Ok(Keys(Vec::new()))
            }
            fn visit_unit<E>(self) -> Result<Keys<T>, E> {
                Ok(Keys(Vec::new()))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Refuse YAML whose brackets nest deeper than [`MAX_YAML_FLOW_DEPTH`]. Counted over the raw
/// text (brackets inside strings too): an overestimate that only balanced text stays under,
/// which real documents are.
fn check_flow_depth(text: &str) -> Result<(), String> {
    let mut depth = 0usize;
    for b in text.bytes() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_YAML_FLOW_DEPTH {
                    return Err(format!(
                        "the YAML is nested more than {MAX_YAML_FLOW_DEPTH} levels deep"
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// A JSON value whose objects keep their key order.
enum Node {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    fn into_value(self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Number(n) => Value::Number(n),
            Node::String(s) => Value::String(s),
            Node::Array(items) => Value::Array(items.into_iter().map(Node::into_value).collect()),
            Node::Object(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k, v.into_value());
                }
                Value::Object(map)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON or YAML value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Node, E> {
        Ok(Node::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Node, E> {
        Ok(Node::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Node, E> {
        Ok(Node::Number(n.into()))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Node, E> {
        // YAML's .inf / .nan have no JSON form.
        Ok(Number::from_f64(f).map_or(Node::Null, Node::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Node, E> {
        Ok(Node::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Node, E> {
        Ok(Node::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = map.next_entry::<Key, Node>()? {
            entries.push((k.0, v));
        }
        Ok(Node::Object(entries))
    }
}

/// An object key: a string, or (YAML) a scalar written as one, such as the status `200:`.
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        d.deserialize_any(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar object key")
    }
    fn visit_str<E>(self, s: &str) -> Result<Key, E> {
        Ok(Key(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Key, E> {
        Ok(Key(s))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Key, E> {
        Ok(Key(n.to_string()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Key, E> {
        Ok(Key(n.to_string()))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Key, E> {
        Ok(Key(f.to_string()))
    }
    fn visit_bool<E>(self, b: bool) -> Result<Key, E> {
        Ok(Key(b.to_string()))
    }
    fn visit_unit<E>(self) -> Result<Key, E> {
        Ok(Key("null".into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Key, A::Error> {
        Err(de::Error::custom("a list cannot be an object key"))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Key, A::Error> {
        Err(de::Error::custom("an object cannot be an object key"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_and_yaml_keep_path_order() {
        let json_doc =
            r#"{"openapi": "3.1.0", "paths": {"/z": {"post": {}, "get": {}}, "/a": {"get": {}}}}"#;
        let yaml_doc = "openapi: 3.0.3\npaths:\n  /z:\n    post: {}\n    get: {}\n  /a:\n    get:\n      responses:\n        200:\n          description: ok\n";
        for text in [json_doc, yaml_doc] {
            let doc = parse(text).unwrap();
            assert_eq!(
                doc.path_order,
                vec![
                    (
                        "/z".to_string(),
                        vec!["post".to_string(), "get".to_string()]
                    ),
                    ("/a".to_string(), vec!["get".to_string()])
                ]
            );
        }
        let doc = parse(yaml_doc).unwrap();
        assert_eq!(
            doc.value
                .pointer("/paths/~1a/get/responses/200/description"),
            Some(&json!("ok"))
        );
    }

    #[test]
    fn broken_and_hostile_documents_are_errors() {
        assert!(parse("[1, 2]").err().unwrap().contains("not an object"));
        assert!(parse("{\"a\": ").err().unwrap().contains("not valid JSON"));
        assert!(parse("a: [b").err().unwrap().contains("YAML"));
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(&format!("{{\"a\": {deep}}}")).is_err());
        let deep_yaml = format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000));
        // libyaml's work grows with the square of the flow nesting: refused before it parses.
        assert!(parse(&deep_yaml)
            .err()
            .unwrap()
            .contains("nested more than"));
        // Billion laughs: each alias level multiplies the nodes by ten.
        let mut laughs = String::from("a0: &a0 [\"lol\"]\n");
        for i in 1..12 {
            let prev = format!("*a{}", i - 1);
            let list = vec![prev; 10].join(", ");
            laughs.push_str(&format!("a{i}: &a{i} [{list}]\n"));
        }
        assert!(parse(&laughs).err().unwrap().contains("repetition limit"));
        // Brackets in ordinary text do not count against a document.
        let text = format!(
            "openapi: 3.0.0\ninfo:\n  description: '{}'\npaths: {{}}\n",
            "a[0] ".repeat(2000)
        );
        assert!(parse(&text).is_ok());
    }
}
