//! OpenAPI discovery: every operation of a document as a tool definition (name, description,
//! input schema, hints) and the [`Operation`] that maps a call's arguments back onto HTTP.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::document::Document;
use super::schema::{Resolver, MAX_SCHEMA_DEPTH};
use crate::tool::names;
use crate::tool::Hints;

/// Operations one hook may have.
pub(crate) const MAX_TOOLS_PER_HOOK: usize = 50_000;
/// Characters of a tool description kept (the longest some providers accept).
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Paths that are never tools (probes, not operations).
const EXCLUDED_PATHS: &[&str] = &["/health", "/healthz", "/ready", "/readyz", "/metrics"];
/// The methods that become tools.
const METHODS: &[&str] = &["get", "post", "put", "patch", "delete"];
/// Header parameters OpenAPI says to ignore (the client sets them).
const IGNORED_HEADERS: &[&str] = &["accept", "content-type", "authorization"];

/// One operation as a tool, before its name is made unique.
pub(crate) struct OperationDef {
    /// `METHOD /path`: the operation's identity across refreshes.
    pub key: String,
    /// The sanitised name before uniqueness (`_2`, `_3` are added in document order).
    pub base_name: String,
    pub description: String,
    pub input_schema: Value,
    pub hints: Hints,
    pub operation: Arc<Operation>,
}

/// How a call of one operation becomes an HTTP request.
#[derive(Debug)]
pub(crate) struct Operation {
    pub method: reqwest::Method,
    /// The path template with the document's relative server prefix (`/v1/users/{id}`).
    pub path: String,
    pub params: Vec<Param>,
    pub body: Option<Body>,
    /// Injected values and where each goes.
    pub inject: Vec<Injected>,
}

/// A declared parameter.
#[derive(Debug)]
pub(crate) struct Param {
    /// The property name in the tool's input schema.
    pub arg: String,
    /// The name on the wire.
    pub name: String,
    pub location: Location,
    pub required: bool,
    pub style: Style,
    pub explode: bool,
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

/// OpenAPI's serialisation styles of parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Simple,
    Form,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

/// A request body.
#[derive(Debug)]
pub(crate) struct Body {
    pub media: Media,
    /// The declared media type (sent as Content-Type for JSON and raw bodies).
    pub content_type: String,
    pub required: bool,
    pub shape: BodyShape,
}

/// How a body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Media {
    Json,
    Form,
    Multipart,
    /// Text sent as it is (text/plain, application/xml, application/octet-stream, ...).
    Raw,
}

/// How the body appears in the tool's arguments.
#[derive(Debug)]
pub(crate) enum BodyShape {
    /// The body's properties are top-level arguments: `(arg, name on the wire)`.
    Lifted {
        props: Vec<(String, String)>,
        /// Arguments the schema does not declare go into the body (additionalProperties is not
        /// false).
        extra: bool,
    },
    /// The whole body is the one argument `arg` (named `body`, or `body_2` ...).
    Whole { arg: String },
}

/// An injected value and its place in the request.
#[derive(Debug)]
pub(crate) struct Injected {
    pub name: String,
    pub value: Value,
    pub place: Place,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The declared parameter of this index.
    Param(usize),
    /// A property of the (lifted, or new) JSON body.
    Body,
    /// A property of the object under the `Whole` body argument.
    InsideWhole,
    /// The query string (GET / DELETE, or a body that is not an object).
    Query,
}

/// Every operation of `doc` as a tool definition, in document order.
pub(crate) fn operations(
    doc: &Document,
    inject: &Map<String, Value>,
) -> Result<Vec<OperationDef>, String> {
    let root = &doc.value;
    match root.get("openapi").and_then(Value::as_str) {
        Some(v) if v.trim_start().starts_with('3') => {}
        Some(v) => {
            return Err(format!(
                "OpenAPI version {v:?} is not supported (3.0 and 3.1 are)"
            ))
        }
        None if root.get("swagger").is_some() => {
            return Err(
                "this is a Swagger 2.0 document; OpenAPI 3.0 and 3.1 are supported (convert it \
                 first, for example with swagger2openapi)"
                    .into(),
            )
        }
        None => return Err("not an OpenAPI document (it has no \"openapi\" version)".into()),
    }
    let prefix = server_prefix(root);
    let mut resolver = Resolver::new(root);
    let mut out = Vec::new();
    let paths = root.get("paths").and_then(Value::as_object);
    for (path, keys) in &doc.path_order {
        if excluded(path) {
            continue;
        }
        let Some(item) = paths
            .and_then(|p| p.get(path))
            .and_then(|i| resolver.deref(i))
        else {
            continue;
        };
        let path_params = item.get("parameters");
        for key in keys {
            let method = key.to_ascii_lowercase();
            if !METHODS.contains(&method.as_str()) {
                continue;
            }
            let Some(op) = item.get(key).filter(|o| o.is_object()) else {
                continue;
            };
            if out.len() >= MAX_TOOLS_PER_HOOK {
                return Err(format!(
                    "it declares more than {MAX_TOOLS_PER_HOOK} operations, the most one hook \
                     may have"
                ));
            }
            resolver.start_tool();
            let def = operation(
                &mut resolver,
                path,
                &prefix,
                &method,
                op,
                path_params,
                inject,
            )
            .map_err(|e| format!("{} {path}: {e}", method.to_ascii_uppercase()))?;
            out.push(def);
        }
    }
    Ok(out)
}

/// Whether a path is a probe (`/health`, `/metrics`, ...), which is never a tool.
fn excluded(path: &str) -> bool {
    let p = path.trim_end_matches('/').to_ascii_lowercase();
    EXCLUDED_PATHS.contains(&p.as_str())
}

/// The path of the first server when it is relative (`/api/v2`); an absolute server URL is not
/// used: calls go to the hook's `url`, where the host pointed it (and its secrets).
fn server_prefix(root: &Value) -> String {
    let Some(server) = root
        .get("servers")
        .and_then(Value::as_array)
        .and_then(|s| s.first())
    else {
        return String::new();
    };
    let Some(url) = server.get("url").and_then(Value::as_str) else {
        return String::new();
    };
    if !url.starts_with('/') {
        return String::new();
    }
    let mut url = url.to_string();
    if let Some(vars) = server.get("variables").and_then(Value::as_object) {
        for (name, var) in vars {
            if let Some(default) = var.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    url.trim_end_matches('/').to_string()
}

/// A name for a schema property: `[A-Za-z0-9_.-]`, at most 64 characters (the strictest
/// provider's rule for property keys), unique among the tool's arguments.
fn arg_name(name: &str, taken: &mut Vec<String>) -> String {
    let mut clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        clean = "param".into();
    }
    if clean.len() > 64 {
        clean.truncate(64);
    }
    let mut candidate = clean.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        let suffix = format!("_{n}");
        let keep = clean.len().min(64 - suffix.len());
        candidate = format!("{}{suffix}", &clean[..keep]);
        n += 1;
    }
    taken.push(candidate.clone());
    candidate
}

fn description_of(op: &Value, method: &str, path: &str) -> String {
    let text = |k: &str| {
        op.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let text = match (text("summary"), text("description")) {
        (Some(s), Some(d)) if s == d || d.starts_with(s) => d.to_string(),
        (Some(s), Some(d)) => format!("{s}\n\n{d}"),
        (Some(s), None) => s.to_string(),
        (None, Some(d)) => d.to_string(),
        (None, None) => format!("{} {path}", method.to_ascii_uppercase()),
    };
    cut_chars(&text, MAX_DESCRIPTION_CHARS)
}

fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

fn tool_base_name(op: &Value, method: &str, path: &str) -> String {
    let given = |k: &str| {
        op.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let raw = match given("operationId").or_else(|| given("x-tool-name")) {
        Some(n) => n.to_string(),
        None => {
            let segment = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            let segment = if segment.is_empty() { "root" } else { segment };
            format!("{segment}_{method}")
        }
    };
    names::fit(&raw)
}

/// One declared parameter, read (after its `$ref`).
struct RawParam<'a> {
    name: &'a str,
    location: Location,
    required: bool,
    schema: Value,
    style: Style,
    explode: bool,
}

fn read_param<'a>(
    resolver: &mut Resolver<'a>,
    p: &'a Value,
) -> Result<Option<RawParam<'a>>, String> {
    let Some(p) = resolver.deref(p) else {
        return Ok(None);
    };
    let (Some(name), Some(location)) = (
        p.get("name").and_then(Value::as_str),
        p.get("in").and_then(Value::as_str),
    ) else {
        return Ok(None);
    };
    let location = match location {
        "path" => Location::Path,
        "query" => Location::Query,
        "header" => Location::Header,
        "cookie" => Location::Cookie,
        _ => return Ok(None),
    };
    if location == Location::Header && IGNORED_HEADERS.contains(&name.to_ascii_lowercase().as_str())
    {
        return Ok(None);
    }
    let raw_schema = p.get("schema").or_else(|| {
        p.get("content")
            .and_then(Value::as_object)
            .and_then(|c| c.values().next())
            .and_then(|m| m.get("schema"))
    });
    let mut schema = match raw_schema {
        Some(s) => resolver.schema(s, 1)?,
        None => json!({}),
    };
    if let (Some(d), Value::Object(m)) = (p.get("description").and_then(Value::as_str), &mut schema)
    {
        if !m.contains_key("description") && !d.trim().is_empty() {
            m.insert("description".into(), json!(cut_chars(d.trim(), 512)));
        }
    }
    let style = match p.get("style").and_then(Value::as_str) {
        Some("form") => Style::Form,
        Some("spaceDelimited") => Style::SpaceDelimited,
        Some("pipeDelimited") => Style::PipeDelimited,
        Some("deepObject") => Style::DeepObject,
        Some("simple") => Style::Simple,
        _ => match location {
            Location::Query | Location::Cookie => Style::Form,
            Location::Path | Location::Header => Style::Simple,
        },
    };
    let explode = p
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == Style::Form);
    Ok(Some(RawParam {
        name,
        location,
        required: location == Location::Path || p.get("required") == Some(&Value::Bool(true)),
        schema,
        style,
        explode,
    }))
}

/// The media type a request body is sent as: JSON first, then form, multipart, anything else.
fn pick_media(content: &Map<String, Value>) -> Option<(&String, &Value, Media)> {
    let essence = |k: &str| {
        k.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    let find = |pred: &dyn Fn(&str) -> bool| content.iter().find(|(k, _)| pred(&essence(k)));
    if let Some((k, v)) = find(&|m| m == "application/json" || m.ends_with("+json") || m == "*/*")
        .or_else(|| find(&|m| m.contains("json")))
    {
        return Some((k, v, Media::Json));
    }
    if let Some((k, v)) = find(&|m| m == "application/x-www-form-urlencoded") {
        return Some((k, v, Media::Form));
    }
    if let Some((k, v)) = find(&|m| m.starts_with("multipart/")) {
        return Some((k, v, Media::Multipart));
    }
    content.iter().next().map(|(k, v)| (k, v, Media::Raw))
}

/// Whether a resolved schema is an object whose properties can be lifted to the top level.
fn liftable(schema: &Value) -> Option<&Map<String, Value>> {
    let obj = schema.as_object()?;
    if obj.contains_key("oneOf") || obj.contains_key("anyOf") || obj.contains_key("allOf") {
        return None;
    }
    let object_type = match obj.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().all(|t| t == "object"),
        _ => false,
    };
    let props = obj.get("properties")?.as_object()?;
    (object_type && !props.is_empty()).then_some(props)
}

fn remove_required(schema: &mut Value, name: &str) {
    if let Some(Value::Array(req)) = schema.get_mut("required") {
        req.retain(|r| r.as_str() != Some(name));
        if req.is_empty() {
            if let Some(o) = schema.as_object_mut() {
                o.remove("required");
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn operation<'a>(
    resolver: &mut Resolver<'a>,
    path: &str,
    prefix: &str,
    method: &str,
    op: &'a Value,
    path_params: Option<&'a Value>,
    inject: &Map<String, Value>,
) -> Result<OperationDef, String> {
    // Path-level parameters, overridden by the operation's own of the same name and place.
    let mut raw: Vec<RawParam<'a>> = Vec::new();
    for list in [path_params, op.get("parameters")].into_iter().flatten() {
        for p in list.as_array().into_iter().flatten() {
            if let Some(p) = read_param(resolver, p)? {
                raw.retain(|q| !(q.name == p.name && q.location == p.location));
                raw.push(p);
            }
        }
    }
    // Path, query, header, cookie: the order names are given out in.
    raw.sort_by_key(|p| p.location as u8);

    let mut taken: Vec<String> = Vec::new();
    let mut properties = Map::new();
    let mut required: Vec<String> = Vec::new();
    let mut params = Vec::with_capacity(raw.len());
    for p in raw {
        let arg = arg_name(p.name, &mut taken);
        if p.required {
            required.push(arg.clone());
        }
        properties.insert(arg.clone(), p.schema);
        params.push(Param {
            arg,
            name: p.name.to_string(),
            location: p.location,
            required: p.required,
            style: p.style,
            explode: p.explode,
        });
    }

    let mut body = None;
    if let Some(request_body) = op.get("requestBody").and_then(|b| resolver.deref(b)) {
        if let Some((content_type, media_obj, media)) = request_body
            .get("content")
            .and_then(Value::as_object)
            .and_then(pick_media)
        {
            let body_required = request_body.get("required") == Some(&Value::Bool(true));
            let mut schema = match media_obj.get("schema") {
                Some(s) => resolver.schema(s, 1)?,
                None => json!({}),
            };
            if media == Media::Raw && schema.get("type") != Some(&json!("string")) {
                schema = json!({"type": "string", "description": format!("The request body ({content_type}).")});
            }
            let collides = |props: &Map<String, Value>| {
                props
                    .keys()
                    .any(|k| params.iter().any(|p| &p.name == k || &p.arg == k))
            };
            let lift = match media {
                Media::Raw => None,
                _ => liftable(&schema).filter(|props| !collides(props)).cloned(),
            };
            let shape = match lift {
                Some(props) => {
                    let body_req: Vec<&str> = schema
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let mut lifted = Vec::with_capacity(props.len());
                    for (name, s) in props {
                        let arg = arg_name(&name, &mut taken);
                        if body_required && body_req.contains(&name.as_str()) {
                            required.push(arg.clone());
                        }
                        properties.insert(arg.clone(), s);
                        lifted.push((arg, name));
                    }
                    BodyShape::Lifted {
                        props: lifted,
                        extra: schema.get("additionalProperties") != Some(&Value::Bool(false)),
                    }
                }
                None => {
                    let arg = arg_name("body", &mut taken);
                    if body_required {
                        required.push(arg.clone());
                    }
                    properties.insert(arg.clone(), schema);
                    BodyShape::Whole { arg }
                }
            };
            body = Some(Body {
                media,
                content_type: content_type.clone(),
                required: body_required,
                shape,
            });
        }
    }

    // Injected values leave the schema and go where the operation declares them.
    let mut injected = Vec::with_capacity(inject.len());
    for (name, value) in inject {
        let place = if let Some(i) = params.iter().position(|p| &p.name == name) {
            let arg = &params[i].arg;
            properties.remove(arg);
            required.retain(|r| r != arg);
            Place::Param(i)
        } else if let Some(Body {
            shape: BodyShape::Lifted { props, .. },
            ..
        }) = &body
        {
            if let Some((arg, _)) = props.iter().find(|(_, real)| real == name) {
                properties.remove(arg);
                required.retain(|r| r != arg);
            }
            if matches!(method, "get" | "delete") && !props.iter().any(|(_, r)| r == name) {
                Place::Query
            } else {
                Place::Body
            }
        } else if let Some(Body {
            shape: BodyShape::Whole { arg },
            media,
            ..
        }) = &body
        {
            let inner = properties.get_mut(arg);
            let declared = inner
                .as_ref()
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(name));
            if declared {
                if let Some(inner) = inner {
                    if let Some(Value::Object(p)) = inner.get_mut("properties") {
                        p.remove(name);
                    }
                    remove_required(inner, name);
                }
                Place::InsideWhole
            } else if *media != Media::Raw
                && !matches!(method, "get" | "delete")
                && inner.is_some_and(|s| {
                    s.get("type").is_none_or(|t| t == "object") && s.get("oneOf").is_none()
                })
            {
                Place::InsideWhole
            } else {
                Place::Query
            }
        } else if matches!(method, "get" | "delete") {
            Place::Query
        } else {
            Place::Body
        };
        injected.push(Injected {
            name: name.clone(),
            value: value.clone(),
            place,
        });
    }

    let mut input_schema = Map::new();
    input_schema.insert("type".into(), json!("object"));
    input_schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        input_schema.insert("required".into(), json!(required));
    }
    let input_schema = Value::Object(input_schema);
    let mut description = description_of(op, method, path);
    if resolver.cut {
        description.push_str(&format!(
            "\n\n(Parts of the input schema nested deeper than {MAX_SCHEMA_DEPTH} levels, or \
             past its size limit, are not shown: they accept any value.)"
        ));
    }
    let hints = match method {
        "get" => Hints {
            read_only: Some(true),
            destructive: Some(false),
            open_world: None,
        },
        "delete" => Hints {
            read_only: Some(false),
            destructive: Some(true),
            open_world: None,
        },
        _ => Hints::default(),
    };
    let http_method = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|e| e.to_string())?;
    Ok(OperationDef {
        key: format!("{} {path}", method.to_ascii_uppercase()),
        base_name: tool_base_name(op, method, path),
        description,
        input_schema,
        hints,
        operation: Arc::new(Operation {
            method: http_method,
            path: format!("{prefix}{path}"),
            params,
            body,
            inject: injected,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::document::parse;

    /// `doc` is JSON text: a `json!` value would sort the paths and lose the document's order.
    fn defs(doc: &str, inject: Value) -> Vec<OperationDef> {
        let doc = parse(doc).unwrap();
        operations(&doc, inject.as_object().unwrap()).unwrap()
    }

    #[test]
    fn names_order_and_excluded_paths() {
        let doc = r#"{"openapi": "3.1.0", "paths": {
            "/alerts": {"get": {}, "post": {"operationId": "make.alert"}},
            "/Health/": {"get": {}},
            "/metrics": {"get": {}},
            "/users/{id}": {"get": {"x-tool-name": "user"}, "delete": {}, "head": {}},
            "/": {"get": {}}
        }}"#;
        let defs = defs(doc, json!({}));
        let names: Vec<&str> = defs.iter().map(|d| d.base_name.as_str()).collect();
        // serde_json sorts "/" before "/alerts"; the document's order is kept anyway.
        assert_eq!(
            names,
            vec![
                "alerts_get",
                "make_alert",
                "user",
                "_id__delete",
                "root_get"
            ]
        );
        assert_eq!(defs[0].hints.read_only, Some(true));
        assert_eq!(defs[0].hints.destructive, Some(false));
        assert!(defs[1].hints.is_empty());
        assert_eq!(defs[3].hints.destructive, Some(true));
    }

    #[test]
    fn parameters_and_body_make_the_schema() {
        let doc = json!({"openapi": "3.0.3",
        "servers": [{"url": "/api/{v}", "variables": {"v": {"default": "v2"}}}],
        "components": {"schemas": {"New": {"type": "object", "required": ["title"],
            "properties": {"title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}},
            "parameters": {"Tenant": {"name": "tenant", "in": "query", "schema": {"type": "string"}}}},
        "paths": {"/projects/{project_id}/items": {
            "parameters": [{"name": "project_id", "in": "path", "schema": {"type": "integer"}}],
            "post": {"summary": "Add an item", "description": "Adds one item.",
                "parameters": [{"$ref": "#/components/parameters/Tenant"},
                               {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}},
                               {"name": "Accept", "in": "header", "schema": {"type": "string"}}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/New"}}}}}
        }}});
        let d = &defs(&doc.to_string(), json!({"tenant": "acme"}))[0];
        assert_eq!(d.description, "Add an item\n\nAdds one item.");
        assert_eq!(
            d.input_schema,
            json!({"type": "object", "properties": {
                "project_id": {"type": "integer"}, "X-Request-Id": {"type": "string"},
                "title": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["project_id", "title"]})
        );
        let op = &d.operation;
        assert_eq!(op.path, "/api/v2/projects/{project_id}/items");
        assert_eq!(op.inject[0].place, Place::Param(1));
        assert!(matches!(
            op.body.as_ref().unwrap().shape,
            BodyShape::Lifted { .. }
        ));
    }

    #[test]
    fn colliding_or_scalar_bodies_go_under_body() {
        let doc = r#"{"openapi": "3.0.0", "paths": {"/a/{id}": {
            "put": {"parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}}],
                    "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                        "properties": {"id": {"type": "string"}, "secret": {"type": "string"}}}}}}},
            "post": {"requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "array", "items": {"type": "integer"}}}}}}
        }}}"#;
        let d = defs(doc, json!({"secret": "s"}));
        assert_eq!(
            d[0].input_schema["properties"]["body"],
            json!({"type": "object", "properties": {"id": {"type": "string"}}})
        );
        assert_eq!(d[0].operation.inject[0].place, Place::InsideWhole);
        assert_eq!(d[1].input_schema["required"], json!(["body"]));
        assert_eq!(
            d[1].input_schema["properties"]["body"],
            json!({"type": "array", "items": {"type": "integer"}})
        );
        // An array body cannot take an injected property: it goes in the query.
        assert_eq!(d[1].operation.inject[0].place, Place::Query);
    }

    #[test]
    fn injected_names_leave_lifted_bodies_and_undeclared_ones_are_placed() {
        let doc = r#"{"openapi": "3.1.0", "paths": {
            "/t": {"post": {"requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": ["tenant_id", "text"],
                "properties": {"tenant_id": {"type": "string"}, "text": {"type": "string"}}}}}}},
                   "get": {}}}}"#;
        let d = defs(doc, json!({"tenant_id": "acme", "region": "eu"}));
        assert_eq!(
            d[0].input_schema,
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
        );
        let places: Vec<Place> = d[0].operation.inject.iter().map(|i| i.place).collect();
        assert_eq!(places, vec![Place::Body, Place::Body]);
        let places: Vec<Place> = d[1].operation.inject.iter().map(|i| i.place).collect();
        assert_eq!(places, vec![Place::Query, Place::Query]);
    }

    #[test]
    fn documents_that_are_not_openapi_3_are_refused() {
        let err = |v: Value| {
            operations(&parse(&v.to_string()).unwrap(), &Map::new())
                .err()
                .unwrap()
        };
        assert!(err(json!({"swagger": "2.0", "paths": {}})).contains("Swagger 2.0"));
        assert!(err(json!({"paths": {}})).contains("no \"openapi\""));
        assert!(err(json!({"openapi": "4.0", "paths": {}})).contains("not supported"));
        let mut paths = Map::new();
        for i in 0..MAX_TOOLS_PER_HOOK + 1 {
            paths.insert(format!("/p{i}"), json!({"get": {}}));
        }
        assert!(err(json!({"openapi": "3.0.0", "paths": paths})).contains("more than"));
    }

    #[test]
    fn property_names_fit_every_provider() {
        let mut taken = Vec::new();
        assert_eq!(arg_name("$filter", &mut taken), "_filter");
        assert_eq!(arg_name("filter[status]", &mut taken), "filter_status_");
        assert_eq!(arg_name("_filter", &mut taken), "_filter_2");
        assert_eq!(arg_name(&"x".repeat(80), &mut taken).len(), 64);
    }
}
