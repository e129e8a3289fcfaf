//! OpenAPI schemas (3.0 and 3.1) as the self-contained JSON Schema (2020-12) a model is
//! offered: every local `$ref` resolved in place (cycles cut), `allOf` merged where the parts
//! agree, 3.0's `nullable` and boolean `exclusiveMinimum`/`exclusiveMaximum` rewritten to their
//! JSON Schema meaning, read-only properties left out (they are never sent), and every keyword
//! JSON Schema does not know (`example`, `discriminator`, `xml`, `x-*`, ...) dropped, so no
//! reference the model cannot follow, and nothing that is not a schema, reaches it.
//!
//! Bounded: a schema nested deeper than [`MAX_SCHEMA_DEPTH`] or a tool whose schema grows past
//! [`MAX_TOOL_SCHEMA_NODES`] is cut there (the cut part accepts any value, and the tool says
//! so); a document whose schemas expand past [`MAX_DOCUMENT_SCHEMA_NODES`] in all is refused.

use serde_json::{json, Map, Value};

/// Nesting levels of one schema kept; deeper parts accept any value.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 24;
/// Schema nodes of one tool's input schema; past that, the rest accepts any value.
pub(crate) const MAX_TOOL_SCHEMA_NODES: usize = 4_000;
/// Schema nodes built for one document in all; past that, the document is refused.
pub(crate) const MAX_DOCUMENT_SCHEMA_NODES: usize = 10_000_000;
/// `$ref`s followed inside one another before the chain is cut.
const MAX_REF_CHAIN: usize = 64;

const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];

/// A reference resolved once, kept for its next uses (operations share components).
struct Memo {
    value: Value,
    /// Nodes it took (charged again on every use: the budgets bound what the model gets).
    nodes: usize,
    /// Levels it nests below where it is used.
    height: usize,
}

/// Resolves the schemas of one document.
pub(crate) struct Resolver<'a> {
    doc: &'a Value,
    doc_budget: usize,
    tool_budget: usize,
    /// The references being expanded (a reference met again inside itself is a cycle).
    stack: Vec<&'a str>,
    /// Something in the current tool's schema was cut (depth, size or reference chain).
    pub cut: bool,
    /// References whose resolution did not depend on where they were met.
    memo: std::collections::HashMap<&'a str, Memo>,
    /// Cuts by depth, budget or chain length so far (a resolution with one is not kept).
    cuts: u64,
    /// The lowest stack position a cycle was cut at, within the current resolution.
    cycle_floor: usize,
    /// The deepest level reached within the current resolution.
    deepest: usize,
}

impl<'a> Resolver<'a> {
    pub fn new(doc: &'a Value) -> Resolver<'a> {
        Resolver {
            doc,
            doc_budget: MAX_DOCUMENT_SCHEMA_NODES,
            tool_budget: MAX_TOOL_SCHEMA_NODES,
            stack: Vec::new(),
            cut: false,
            memo: std::collections::HashMap::new(),
            cuts: 0,
            cycle_floor: usize::MAX,
            deepest: 0,
        }
    }

    /// Start the schema of a new tool (its own node budget, no cut yet).
    pub fn start_tool(&mut self) {
        self.tool_budget = MAX_TOOL_SCHEMA_NODES;
        self.cut = false;
    }

    /// What `value` is after following its `$ref`s (for parameters, request bodies and path
    /// items, which are referenced whole); `None` when a reference does not resolve.
    pub fn deref(&self, value: &'a Value) -> Option<&'a Value> {
        let mut v = value;
        for _ in 0..MAX_REF_CHAIN {
            match v.get("$ref").and_then(Value::as_str) {
                Some(r) => v = self.lookup(r)?,
                None => return Some(v),
            }
        }
        None
    }

    /// The target of a local reference (`#/components/schemas/User`).
    fn lookup(&self, reference: &str) -> Option<&'a Value> {
        let fragment = reference.strip_prefix('#')?;
        let decoded = percent_encoding::percent_decode_str(fragment).decode_utf8_lossy();
        if decoded.is_empty() {
            return Some(self.doc);
        }
        self.doc.pointer(&decoded)
    }

    /// Count one node; `Err` when the document's budget is spent, `Ok(false)` when the tool's is.
    fn spend(&mut self, n: usize) -> Result<bool, String> {
        if self.doc_budget < n {
            return Err(format!(
                "its schemas expand to more than {MAX_DOCUMENT_SCHEMA_NODES} nodes once \
                 references are resolved (too large, or references that multiply)"
            ));
        }
        self.doc_budget -= n;
        if self.tool_budget < n {
            self.tool_budget = 0;
            return Ok(false);
        }
        self.tool_budget -= n;
        Ok(true)
    }

    /// `schema` resolved and rewritten (see the module docs). `Err` only when the document's
    /// budget is spent.
    pub fn schema(&mut self, schema: &'a Value, depth: usize) -> Result<Value, String> {
        if !self.spend(1)? || depth > MAX_SCHEMA_DEPTH {
            self.cut = true;
            self.cuts += 1;
            return Ok(json!({}));
        }
        self.deepest = self.deepest.max(depth);
        let obj = match schema {
            Value::Bool(b) => return Ok(Value::Bool(*b)),
            Value::Object(o) => o,
            _ => return Ok(json!({})),
        };
        let Some(reference) = obj.get("$ref") else {
            return self.object(obj, depth, false);
        };
        let resolved = match reference.as_str() {
            Some(r) => self.follow(r, depth)?,
            None => json!({}),
        };
        if obj.len() == 1 {
            return Ok(resolved);
        }
        // 3.1 lets a `$ref` have siblings (a description, a default, more constraints).
        let own = self.object(obj, depth, true)?;
        Ok(with_siblings(resolved, own))
    }

    fn follow(&mut self, reference: &'a str, depth: usize) -> Result<Value, String> {
        if !reference.starts_with('#') {
            return Ok(json!({"description": "(defined in another document)"}));
        }
        let cached = self
            .memo
            .get(reference)
            .filter(|m| depth + m.height <= MAX_SCHEMA_DEPTH && m.nodes <= self.tool_budget)
            .map(|m| (m.value.clone(), m.nodes, m.height));
        if let Some((value, nodes, height)) = cached {
            self.spend(nodes)?;
            self.deepest = self.deepest.max(depth + height);
            return Ok(value);
        }
        let name = reference.rsplit('/').next().unwrap_or(reference);
        if let Some(at) = self.stack.iter().position(|r| *r == reference) {
            // A cycle: the inner occurrence is cut, keeping its type when it has a plain one.
            self.cycle_floor = self.cycle_floor.min(at);
            let mut cut = json!({"description": format!("(recursive: another {name})")});
            if let Some(t) = self
                .lookup(reference)
                .and_then(|t| t.get("type"))
                .and_then(Value::as_str)
                .filter(|t| TYPES.contains(t))
            {
                cut["type"] = json!(t);
            }
            return Ok(cut);
        }
        if self.stack.len() >= MAX_REF_CHAIN {
            self.cut = true;
            self.cuts += 1;
            return Ok(json!({}));
        }
        let Some(target) = self.lookup(reference) else {
            return Ok(json!({"description": format!("(unresolved reference {name})")}));
        };
        let (cuts, floor, deepest, budget) =
            (self.cuts, self.cycle_floor, self.deepest, self.tool_budget);
        self.cycle_floor = usize::MAX;
        self.deepest = depth;
        let at = self.stack.len();
        self.stack.push(reference);
        let out = self.schema(target, depth);
        self.stack.pop();
        let out = out?;
        // Kept when nothing was cut and every cycle closed within this reference: then it
        // comes out the same wherever it is used.
        if self.cuts == cuts && self.cycle_floor >= at {
            self.memo.insert(
                reference,
                Memo {
                    value: out.clone(),
                    nodes: budget - self.tool_budget,
                    height: self.deepest - depth,
                },
            );
        }
        self.cycle_floor = self.cycle_floor.min(floor);
        self.deepest = self.deepest.max(deepest);
        Ok(out)
    }

    fn list(&mut self, v: &'a Value, depth: usize) -> Result<Option<Value>, String> {
        let Value::Array(items) = v else {
            return Ok(None);
        };
        if items.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.push(self.schema(item, depth + 1)?);
        }
        Ok(Some(Value::Array(out)))
    }

    fn map(&mut self, v: &'a Value, depth: usize) -> Result<Option<Value>, String> {
        let Value::Object(m) = v else {
            return Ok(None);
        };
        let mut out = Map::new();
        for (k, s) in m {
            out.insert(k.clone(), self.schema(s, depth + 1)?);
        }
        Ok(Some(Value::Object(out)))
    }

    /// A schema object's keywords (without its `$ref` when `skip_ref`: the caller resolved it).
    fn object(
        &mut self,
        obj: &'a Map<String, Value>,
        depth: usize,
        skip_ref: bool,
    ) -> Result<Value, String> {
        let mut out = Map::new();
        let mut nullable = false;
        for (k, v) in obj {
            if skip_ref && k == "$ref" {
                continue;
            }
            let kept = match k.as_str() {
                "properties" | "patternProperties" | "dependentSchemas" => self.map(v, depth)?,
                "items" if v.is_array() => {
                    // 3.0's tuple form is 2020-12's prefixItems.
                    if let Some(items) = self.list(v, depth)? {
                        out.insert("prefixItems".into(), items);
                    }
                    None
                }
                "items"
                | "additionalProperties"
                | "not"
                | "contains"
                | "propertyNames"
                | "if"
                | "then"
                | "else"
                | "unevaluatedProperties"
                | "unevaluatedItems"
                | "contentSchema" => match v {
                    Value::Object(_) | Value::Bool(_) => Some(self.schema(v, depth + 1)?),
                    _ => None,
                },
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => self.list(v, depth)?,
                "type" => normalize_type(v),
                "enum" => match v {
                    Value::Array(a) if !a.is_empty() => {
                        self.spend(a.len())?;
                        Some(v.clone())
                    }
                    _ => None,
                },
                "const" | "default" => Some(v.clone()),
                "required" => string_set(v),
                "dependentRequired" => match v {
                    Value::Object(m) => Some(Value::Object(
                        m.iter()
                            .filter_map(|(k, v)| string_set(v).map(|s| (k.clone(), s)))
                            .collect(),
                    )),
                    _ => None,
                },
                "title" | "description" | "format" | "pattern" | "contentEncoding"
                | "contentMediaType" => v.is_string().then(|| v.clone()),
                "multipleOf" => v.as_f64().filter(|f| *f > 0.0).map(|_| v.clone()),
                "maximum" | "minimum" => v.is_number().then(|| v.clone()),
                "exclusiveMaximum" | "exclusiveMinimum" => {
                    (v.is_number() || v.is_boolean()).then(|| v.clone())
                }
                "maxLength" | "minLength" | "maxItems" | "minItems" | "maxProperties"
                | "minProperties" | "maxContains" | "minContains" => v
                    .as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|_| v.clone()),
                "uniqueItems" | "deprecated" | "readOnly" | "writeOnly" => {
                    v.is_boolean().then(|| v.clone())
                }
                "nullable" => {
                    nullable = v.as_bool() == Some(true);
                    None
                }
                // example, examples, discriminator, xml, externalDocs, $id, $schema,
                // $dynamicRef, x-*, ...: not for the model, or not resolvable by it.
                _ => None,
            };
            if let Some(kept) = kept {
                out.insert(k.clone(), kept);
            }
        }
        exclusive_bounds(&mut out);
        drop_read_only(&mut out);
        let out = merge_all_of(out);
        Ok(if nullable {
            make_nullable(out)
        } else {
            Value::Object(out)
        })
    }
}

/// `type` with the names JSON Schema knows (Swagger's `file` is a string); `None` when none.
fn normalize_type(v: &Value) -> Option<Value> {
    let fix = |t: &str| -> Option<&'static str> {
        let t = if t == "file" { "string" } else { t };
        TYPES.iter().find(|k| **k == t).copied()
    };
    match v {
        Value::String(t) => fix(t).map(|t| json!(t)),
        Value::Array(ts) => {
            let mut out: Vec<&str> = Vec::new();
            for t in ts.iter().filter_map(Value::as_str).filter_map(fix) {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
            (!out.is_empty()).then(|| json!(out))
        }
        _ => None,
    }
}

/// A list of distinct strings (JSON Schema's `required`), or `None`.
fn string_set(v: &Value) -> Option<Value> {
    let Value::Array(items) = v else {
        return None;
    };
    let mut out: Vec<&str> = Vec::new();
    for s in items.iter().filter_map(Value::as_str) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Some(json!(out))
}

/// 3.0's `exclusiveMaximum: true` next to `maximum: 10` is 2020-12's `exclusiveMaximum: 10`.
fn exclusive_bounds(out: &mut Map<String, Value>) {
    for (bound, exclusive) in [
        ("maximum", "exclusiveMaximum"),
        ("minimum", "exclusiveMinimum"),
    ] {
        match out.get(exclusive) {
            Some(Value::Bool(true)) => match out.remove(bound) {
                Some(b) => {
                    out.insert(exclusive.into(), b);
                }
                None => {
                    out.remove(exclusive);
                }
            },
            Some(Value::Bool(false)) => {
                out.remove(exclusive);
            }
            _ => {}
        }
    }
}

/// Read-only properties are the service's to set: a request never carries them.
fn drop_read_only(out: &mut Map<String, Value>) {
    let Some(Value::Object(props)) = out.get_mut("properties") else {
        return;
    };
    let gone: Vec<String> = props
        .iter()
        .filter(|(_, s)| s.get("readOnly") == Some(&Value::Bool(true)))
        .map(|(k, _)| k.clone())
        .collect();
    if gone.is_empty() {
        return;
    }
    for k in &gone {
        props.remove(k);
    }
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|r| r.as_str().is_none_or(|r| !gone.iter().any(|g| g == r)));
    }
}

/// 3.0's `nullable: true`: the schema also accepts `null`.
fn make_nullable(mut out: Map<String, Value>) -> Value {
    if let Some(Value::Array(values)) = out.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    match out.get("type").cloned() {
        Some(Value::String(t)) => {
            if t != "null" {
                out.insert("type".into(), json!([t, "null"]));
            }
            Value::Object(out)
        }
        Some(Value::Array(mut ts)) => {
            if !ts.contains(&json!("null")) {
                ts.push(json!("null"));
            }
            out.insert("type".into(), Value::Array(ts));
            Value::Object(out)
        }
        _ if out.is_empty() => Value::Object(out),
        _ => {
            let mut any = Map::new();
            any.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(out), json!({"type": "null"})]),
            );
            Value::Object(any)
        }
    }
}

/// A resolved reference with the keywords written beside it: annotations of the referring
/// side win; other constraints join it under `allOf` (merged when they agree).
fn with_siblings(resolved: Value, own: Value) -> Value {
    const ANNOTATIONS: &[&str] = &[
        "description",
        "title",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
    ];
    let Value::Object(own) = own else {
        return resolved;
    };
    if own.is_empty() {
        return resolved;
    }
    if own.keys().all(|k| ANNOTATIONS.contains(&k.as_str())) {
        if let Value::Object(mut r) = resolved {
            for (k, v) in own {
                r.insert(k, v);
            }
            return Value::Object(r);
        }
        return resolved;
    }
    let mut both = Map::new();
    both.insert(
        "allOf".into(),
        Value::Array(vec![resolved, Value::Object(own)]),
    );
    Value::Object(merge_all_of(both))
}

/// `allOf` parts folded into the schema when they agree on every keyword they share;
/// otherwise the schema keeps its (resolved) `allOf`, which means the same. Checked first,
/// then merged by moving the parts (no copy of the resolved subtrees).
fn merge_all_of(mut schema: Map<String, Value>) -> Map<String, Value> {
    match schema.get("allOf") {
        Some(Value::Array(parts)) if mergeable(&schema, parts) => {}
        _ => return schema,
    }
    let Some(Value::Array(parts)) = schema.remove("allOf") else {
        return schema;
    };
    for part in parts {
        if let Value::Object(p) = part {
            merge_into(&mut schema, p);
        }
    }
    schema
}

/// Whether `parts` fold into `base` without a conflict: the same value wherever two give one
/// keyword (`properties` and `required` always fold; `type`s intersect; the first
/// `description` / `title` stays).
fn mergeable(base: &Map<String, Value>, parts: &[Value]) -> bool {
    let mut seen: Vec<(&str, &Value)> = base
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "allOf" | "properties" | "required" | "type"))
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let mut ty: Option<Value> = base.get("type").cloned();
    let shape_ok = |k: &str, v: &Value| match k {
        "properties" => v.is_object(),
        "required" => v.is_array(),
        _ => true,
    };
    for (k, v) in [
        ("properties", base.get("properties")),
        ("required", base.get("required")),
    ] {
        if v.is_some_and(|v| !shape_ok(k, v)) {
            return false;
        }
    }
    for part in parts {
        let p = match part {
            Value::Object(p) => p,
            Value::Bool(true) => continue,
            _ => return false,
        };
        for (k, v) in p {
            match k.as_str() {
                "properties" | "required" => {
                    if !shape_ok(k, v) {
                        return false;
                    }
                }
                "type" => {
                    ty = match &ty {
                        None => Some(v.clone()),
                        Some(t) => match intersect_types(t, v) {
                            Some(t) => Some(t),
                            None => return false,
                        },
                    }
                }
                "description" | "title" => {}
                key => match seen.iter().find(|(s, _)| *s == key) {
                    None => seen.push((key, v)),
                    Some((_, old)) if *old == v => {}
                    Some(_) => return false,
                },
            }
        }
    }
    true
}

/// Fold one part into `acc` (checked by [`mergeable`] first). A property both define becomes
/// the `allOf` of its two schemas (merged again when they agree).
fn merge_into(acc: &mut Map<String, Value>, part: Map<String, Value>) {
    for (k, v) in part {
        match k.as_str() {
            "properties" => {
                let Value::Object(new) = v else { continue };
                let props = acc
                    .entry("properties")
                    .or_insert_with(|| Value::Object(Map::new()));
                let Value::Object(props) = props else {
                    continue;
                };
                for (name, s) in new {
                    match props.get_mut(&name) {
                        None => {
                            props.insert(name, s);
                        }
                        Some(old) if *old == s => {}
                        Some(old) => {
                            let mut both = Map::new();
                            both.insert("allOf".into(), Value::Array(vec![old.take(), s]));
                            *old = Value::Object(merge_all_of(both));
                        }
                    }
                }
            }
            "required" => {
                let Value::Array(new) = v else { continue };
                let req = acc
                    .entry("required")
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(req) = req else {
                    continue;
                };
                for r in new {
                    if !req.contains(&r) {
                        req.push(r);
                    }
                }
            }
            "type" => {
                let merged = match acc.get("type") {
                    None => Some(v),
                    Some(old) => intersect_types(old, &v),
                };
                if let Some(t) = merged {
                    acc.insert("type".into(), t);
                }
            }
            // The first description / title (the referring schema's own, then the parts' in
            // order) stays; other keywords agree (checked), so the first also stays.
            _ => {
                acc.entry(k).or_insert(v);
            }
        }
    }
}

/// The types both allow (`integer` is a `number`); `None` when none.
fn intersect_types(a: &Value, b: &Value) -> Option<Value> {
    let names = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    };
    let (a, b) = (names(a), names(b));
    let allows = |set: &[String], t: &str| {
        set.iter().any(|s| s == t) || (t == "integer" && set.iter().any(|s| s == "number"))
    };
    let mut out: Vec<String> = Vec::new();
    for t in a.iter().chain(&b) {
        if allows(&a, t) && allows(&b, t) && !out.contains(t) {
            out.push(t.clone());
        }
    }
    match out.len() {
        0 => None,
        1 => Some(json!(out[0])),
        _ => Some(json!(out)),
    }
}

/// Whether `v` holds a `$ref` key anywhere.
#[cfg(test)]
pub(crate) fn has_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| k == "$ref" || has_ref(v)),
        Value::Array(a) => a.iter().any(has_ref),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(doc: &Value, schema: &Value) -> Value {
        let mut r = Resolver::new(doc);
        r.schema(schema, 0).unwrap()
    }

    #[test]
    fn refs_nested_and_cycles_cut() {
        let doc = json!({"components": {"schemas": {
            "User": {"type": "object", "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/components/schemas/Address"},
                "friends": {"type": "array", "items": {"$ref": "#/components/schemas/User"}}
            }, "required": ["name"]},
            "Address": {"type": "object", "properties": {"city": {"type": "string", "example": "Oslo"}}}
        }}});
        let out = resolve(&doc, &json!({"$ref": "#/components/schemas/User"}));
        assert!(!has_ref(&out), "{out}");
        assert_eq!(
            out["properties"]["address"],
            json!({"type": "object", "properties": {"city": {"type": "string"}}})
        );
        assert_eq!(
            out["properties"]["friends"]["items"],
            json!({"type": "object", "description": "(recursive: another User)"})
        );
        // Unresolvable and external references become open schemas, never a $ref.
        let out = resolve(
            &doc,
            &json!({"type": "object", "properties": {
            "a": {"$ref": "#/components/schemas/Missing"},
            "b": {"$ref": "other.yaml#/X"}}}),
        );
        assert!(!has_ref(&out), "{out}");
    }

    #[test]
    fn all_of_merges_and_conflicts_stay() {
        let doc = json!({"components": {"schemas": {
            "Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            "Named": {"properties": {"name": {"type": "string"}}, "required": ["name"]}
        }}});
        let out = resolve(
            &doc,
            &json!({"allOf": [
                {"$ref": "#/components/schemas/Base"}, {"$ref": "#/components/schemas/Named"},
                {"description": "A thing"}
            ]}),
        );
        assert_eq!(
            out,
            json!({"type": "object", "description": "A thing",
                   "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                   "required": ["id", "name"]})
        );
        let out = resolve(
            &doc,
            &json!({"allOf": [{"type": "string"}, {"type": "object"}]}),
        );
        assert_eq!(
            out,
            json!({"allOf": [{"type": "string"}, {"type": "object"}]})
        );
        let out = resolve(
            &doc,
            &json!({"allOf": [{"type": "number"}, {"type": "integer", "minimum": 1}]}),
        );
        assert_eq!(out, json!({"type": "integer", "minimum": 1}));
    }

    #[test]
    fn openapi_30_meaning_kept_in_json_schema() {
        let doc = json!({});
        assert_eq!(
            resolve(&doc, &json!({"type": "string", "nullable": true})),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            resolve(
                &doc,
                &json!({"enum": ["a"], "type": "string", "nullable": true})
            ),
            json!({"enum": ["a", null], "type": ["string", "null"]})
        );
        assert_eq!(
            resolve(
                &doc,
                &json!({"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": true})
            ),
            json!({"anyOf": [{"oneOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]})
        );
        assert_eq!(
            resolve(
                &doc,
                &json!({"type": "integer", "maximum": 5, "exclusiveMaximum": true, "minimum": 0, "exclusiveMinimum": false})
            ),
            json!({"type": "integer", "exclusiveMaximum": 5, "minimum": 0})
        );
        assert_eq!(
            resolve(
                &doc,
                &json!({"type": "object", "properties": {"id": {"type": "string", "readOnly": true},
                       "name": {"type": "string"}}, "required": ["id", "name"],
                       "discriminator": {"propertyName": "x"}, "x-internal": true,
                       "example": {"id": "1"}})
            ),
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
        );
        assert_eq!(
            resolve(&doc, &json!({"type": "file", "minLength": -1})),
            json!({"type": "string"})
        );
        assert_eq!(
            resolve(
                &doc,
                &json!({"type": "array", "items": [{"type": "string"}]})
            ),
            json!({"type": "array", "prefixItems": [{"type": "string"}]})
        );
        // 3.1: a $ref with siblings keeps both.
        let doc = json!({"components": {"schemas": {"S": {"type": "string"}}}});
        assert_eq!(
            resolve(
                &doc,
                &json!({"$ref": "#/components/schemas/S", "description": "the name"})
            ),
            json!({"type": "string", "description": "the name"})
        );
    }

    #[test]
    fn hostile_schemas_are_bounded() {
        // Each level references the next twice: 2^40 nodes if expanded in full.
        let mut schemas = Map::new();
        for i in 0..40 {
            schemas.insert(
                format!("L{i}"),
                json!({"type": "object", "properties": {
                    "a": {"$ref": format!("#/components/schemas/L{}", i + 1)},
                    "b": {"$ref": format!("#/components/schemas/L{}", i + 1)}
                }}),
            );
        }
        let doc = json!({"components": {"schemas": schemas}});
        let top = json!({"$ref": "#/components/schemas/L0"});
        let mut r = Resolver::new(&doc);
        r.start_tool();
        let out = r.schema(&top, 0).unwrap();
        assert!(r.cut);
        assert!(!has_ref(&out));
        // Many tools of such schemas exhaust the document's budget: a clear error.
        r.doc_budget = 5 * MAX_TOOL_SCHEMA_NODES;
        let mut failed = None;
        for _ in 0..10 {
            r.start_tool();
            if let Err(e) = r.schema(&top, 0) {
                failed = Some(e);
                break;
            }
        }
        assert!(failed.unwrap().contains("more than"));
        // A long chain of references is cut, never a stack overflow.
        let mut chain = Map::new();
        for i in 0..10_000 {
            chain.insert(
                format!("C{i}"),
                json!({"$ref": format!("#/components/schemas/C{}", i + 1)}),
            );
        }
        let doc = json!({"components": {"schemas": chain}});
        let top = json!({"$ref": "#/components/schemas/C0"});
        let mut r = Resolver::new(&doc);
        let out = r.schema(&top, 0).unwrap();
        assert!(r.cut && !has_ref(&out));
        // Deep nesting is cut at MAX_SCHEMA_DEPTH.
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"type": "array", "items": deep});
        }
        let mut r = Resolver::new(&doc);
        r.schema(&deep, 0).unwrap();
        assert!(r.cut);
    }
}
