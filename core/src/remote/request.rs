//! A call's arguments back where the operation declared them: path parameters percent-encoded
//! into the path, query parameters into the query string (arrays repeated, or joined as the
//! style says), header and cookie parameters as headers, the rest as the body; injected values
//! merged in after the model's arguments, winning.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::gojson;
use super::openapi::{BodyShape, Location, Media, Operation, Place, Style};

/// Everything but RFC 3986's unreserved characters is encoded in a path segment (so a `/` in a
/// value stays inside its segment).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A request ready to send.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub method: reqwest::Method,
    pub url: reqwest::Url,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Option<PreparedBody>,
}

#[derive(Debug)]
pub(crate) enum PreparedBody {
    /// JSON bytes (Go's encoding) with their content type.
    Json(Vec<u8>, String),
    /// `application/x-www-form-urlencoded` text.
    Form(String),
    /// multipart/form-data text fields.
    Multipart(Vec<(String, String)>),
    /// Text as it is, with its content type.
    Raw(String, String),
}

/// A scalar as parameter text: strings as they are, other values as JSON.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Query pairs of one parameter, as its style and explode say.
fn query_pairs(
    name: &str,
    v: &Value,
    style: Style,
    explode: bool,
    out: &mut Vec<(String, String)>,
) {
    match v {
        Value::Null => {}
        Value::Array(items) => {
            let items: Vec<String> = items.iter().filter(|i| !i.is_null()).map(scalar).collect();
            match style {
                Style::SpaceDelimited => out.push((name.into(), items.join(" "))),
                Style::PipeDelimited => out.push((name.into(), items.join("|"))),
                _ if explode => out.extend(items.into_iter().map(|i| (name.to_string(), i))),
                _ => out.push((name.into(), items.join(","))),
            }
        }
        Value::Object(m) => match style {
            Style::DeepObject => {
                for (k, v) in m {
                    if !v.is_null() {
                        out.push((format!("{name}[{k}]"), scalar(v)));
                    }
                }
            }
            _ if explode => {
                for (k, v) in m {
                    if !v.is_null() {
                        out.push((k.clone(), scalar(v)));
                    }
                }
            }
            _ => {
                let flat: Vec<String> =
                    m.iter().flat_map(|(k, v)| [k.clone(), scalar(v)]).collect();
                out.push((name.into(), flat.join(",")));
            }
        },
        other => out.push((name.into(), scalar(other))),
    }
}

/// A path or header value: OpenAPI's `simple` style (arrays and objects comma-joined).
fn simple(v: &Value) -> String {
    match v {
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        Value::Object(m) => m
            .iter()
            .flat_map(|(k, v)| [k.clone(), scalar(v)])
            .collect::<Vec<_>>()
            .join(","),
        other => scalar(other),
    }
}

/// Form fields of a value, nested objects and arrays of objects in the bracket style
/// (`a[b]=1`, `a[0][b]=1`) that form-reading services (Stripe, Rails, PHP) use; arrays of
/// scalars repeat the key.
fn form_pairs(key: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Null => {}
        Value::Object(m) => {
            for (k, v) in m {
                form_pairs(&format!("{key}[{k}]"), v, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Object(_) | Value::Array(_) => {
                        form_pairs(&format!("{key}[{i}]"), item, out)
                    }
                    Value::Null => {}
                    other => out.push((key.to_string(), scalar(other))),
                }
            }
        }
        other => out.push((key.to_string(), scalar(other))),
    }
}

impl Operation {
    /// The request for `args` (the model's, already checked against the input schema) against
    /// the service at `base`. `Err` is a message for the model (a missing path parameter, an
    /// argument the operation does not take, a value a header cannot carry).
    pub fn prepare(
        &self,
        base: &reqwest::Url,
        mut args: Map<String, Value>,
    ) -> Result<Prepared, String> {
        let mut query: Vec<(String, String)> = Vec::new();
        let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
        let mut cookies: Vec<String> = Vec::new();
        let mut path = self.path.clone();

        // Injected values win over whatever the model sent under the same name.
        let mut body_inject = Map::new();
        let mut whole_inject = Map::new();
        for inj in &self.inject {
            match inj.place {
                Place::Param(i) => {
                    args.insert(self.params[i].arg.clone(), inj.value.clone());
                }
                Place::Body => {
                    args.remove(&inj.name);
                    body_inject.insert(inj.name.clone(), inj.value.clone());
                }
                Place::InsideWhole => {
                    whole_inject.insert(inj.name.clone(), inj.value.clone());
                }
                Place::Query => {
                    args.remove(&inj.name);
                    query_pairs(&inj.name, &inj.value, Style::Form, true, &mut query);
                }
            }
        }

        for p in &self.params {
            let value = args.remove(&p.arg).filter(|v| !v.is_null());
            let Some(value) = value else {
                if p.required {
                    return Err(format!(
                        "missing the required {} parameter {:?}",
                        location_name(p.location),
                        p.arg
                    ));
                }
                continue;
            };
            match p.location {
                Location::Path => {
                    let text = simple(&value);
                    if text.is_empty() || text == "." || text == ".." {
                        return Err(format!("the path parameter {:?} cannot be {text:?}", p.arg));
                    }
                    let encoded = utf8_percent_encode(&text, SEGMENT).to_string();
                    path = path.replace(&format!("{{{}}}", p.name), &encoded);
                }
                Location::Query => query_pairs(&p.name, &value, p.style, p.explode, &mut query),
                Location::Header => {
                    let name = HeaderName::from_bytes(p.name.as_bytes())
                        .map_err(|_| format!("{:?} is not a valid header name", p.name))?;
                    let value = HeaderValue::from_str(&simple(&value)).map_err(|_| {
                        format!("the header parameter {:?} cannot carry that value", p.arg)
                    })?;
                    headers.push((name, value));
                }
                Location::Cookie => {
                    let text = utf8_percent_encode(&simple(&value), SEGMENT).to_string();
                    cookies.push(format!("{}={text}", p.name));
                }
            }
        }
        if let Some(open) = path.find('{') {
            let close = path[open..].find('}').map_or(path.len(), |c| open + c + 1);
            return Err(format!(
                "the path {:?} has the parameter {} that the document does not describe",
                self.path,
                &path[open..close]
            ));
        }

        let body = self.body_of(&mut args, body_inject, whole_inject)?;
        if !args.is_empty() {
            let unknown: Vec<&String> = args.keys().collect();
            return Err(format!(
                "this operation does not take {}",
                unknown
                    .iter()
                    .map(|k| format!("{k:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !cookies.is_empty() {
            let value = HeaderValue::from_str(&cookies.join("; "))
                .map_err(|_| "a cookie parameter cannot carry that value".to_string())?;
            headers.push((reqwest::header::COOKIE, value));
        }

        let mut url = base.clone();
        let joined = format!("{}{path}", base.path().trim_end_matches('/'));
        url.set_path(&joined);
        if !query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in &query {
                pairs.append_pair(k, v);
            }
        }
        Ok(Prepared {
            method: self.method.clone(),
            url,
            headers,
            body,
        })
    }

    fn body_of(
        &self,
        args: &mut Map<String, Value>,
        body_inject: Map<String, Value>,
        whole_inject: Map<String, Value>,
    ) -> Result<Option<PreparedBody>, String> {
        let Some(body) = &self.body else {
            // No body declared: injected values meant for a body make one (POST, PUT, PATCH).
            if body_inject.is_empty() {
                return Ok(None);
            }
            return Ok(Some(PreparedBody::Json(
                gojson::to_vec(&Value::Object(body_inject)),
                "application/json".into(),
            )));
        };
        let value = match &body.shape {
            BodyShape::Lifted { props, extra } => {
                let mut fields = Map::new();
                for (arg, real) in props {
                    if let Some(v) = args.remove(arg) {
                        fields.insert(real.clone(), v);
                    }
                }
                if *extra {
                    fields.append(args);
                }
                fields.extend(body_inject);
                if fields.is_empty() && !body.required {
                    return Ok(None);
                }
                Value::Object(fields)
            }
            BodyShape::Whole { arg } => {
                let given = args.remove(arg);
                match (given, whole_inject.is_empty()) {
                    (None, true) if !body.required => return Ok(None),
                    (None, true) => Value::Object(Map::new()),
                    (Some(v), true) => v,
                    (None, false) => Value::Object(whole_inject),
                    (Some(Value::Object(mut m)), false) => {
                        m.extend(whole_inject);
                        Value::Object(m)
                    }
                    (Some(_), false) => {
                        return Err(format!("{arg:?} must be a JSON object"));
                    }
                }
            }
        };
        Ok(Some(match body.media {
            Media::Json => PreparedBody::Json(gojson::to_vec(&value), body.content_type.clone()),
            Media::Form => {
                let mut pairs = Vec::new();
                match &value {
                    Value::Object(m) => {
                        for (k, v) in m {
                            form_pairs(k, v, &mut pairs);
                        }
                    }
                    other => return Err(format!("a form body must be an object, not {other}")),
                }
                let mut ser = url::form_urlencoded::Serializer::new(String::new());
                for (k, v) in &pairs {
                    ser.append_pair(k, v);
                }
                PreparedBody::Form(ser.finish())
            }
            Media::Multipart => match value {
                Value::Object(m) => PreparedBody::Multipart(
                    m.into_iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| (k, scalar(&v)))
                        .collect(),
                ),
                other => return Err(format!("a multipart body must be an object, not {other}")),
            },
            Media::Raw => PreparedBody::Raw(scalar(&value), body.content_type.clone()),
        }))
    }
}

fn location_name(l: Location) -> &'static str {
    match l {
        Location::Path => "path",
        Location::Query => "query",
        Location::Header => "header",
        Location::Cookie => "cookie",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::document::parse;
    use crate::remote::openapi::operations;
    use serde_json::json;

    fn op(doc: Value, inject: Value) -> Vec<std::sync::Arc<Operation>> {
        let doc = parse(&doc.to_string()).unwrap();
        operations(&doc, inject.as_object().unwrap())
            .unwrap()
            .into_iter()
            .map(|d| d.operation)
            .collect()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn base() -> reqwest::Url {
        reqwest::Url::parse("http://127.0.0.1:9/svc/?key=k").unwrap()
    }

    #[test]
    fn arguments_go_where_declared() {
        let ops = op(
            json!({"openapi": "3.1.0", "paths": {"/users/{id}/items": {"post": {
                "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "tag", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "filter", "in": "query", "style": "deepObject", "schema": {"type": "object"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {"name": "session", "in": "cookie", "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/json": {"schema": {"type": "object",
                    "properties": {"title": {"type": "string"}}}}}}}}}}),
            json!({"tenant": "acme"}),
        );
        let p = ops[0]
            .prepare(
                &base(),
                args(
                    json!({"id": "a b/c", "tag": ["x", "y"], "filter": {"s": "open"},
                            "X-Trace": "t1", "session": "s 1", "title": "<hi>", "tenant": "evil"}),
                ),
            )
            .unwrap();
        assert_eq!(
            p.url.as_str(),
            "http://127.0.0.1:9/svc/users/a%20b%2Fc/items?key=k&tag=x&tag=y&filter%5Bs%5D=open"
        );
        assert_eq!(p.headers[0].0.as_str(), "x-trace");
        assert_eq!(p.headers[1].1.to_str().unwrap(), "session=s%201");
        match p.body.unwrap() {
            PreparedBody::Json(bytes, ct) => {
                assert_eq!(ct, "application/json");
                assert_eq!(
                    String::from_utf8(bytes).unwrap(),
                    r#"{"tenant":"acme","title":"\u003chi\u003e"}"#
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_arguments_are_messages() {
        let ops = op(
            json!({"openapi": "3.1.0", "paths": {"/u/{id}": {"get": {
                "parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}},
                               {"name": "X-A", "in": "header", "schema": {"type": "string"}}]}},
                "/v/{missing}": {"get": {}}}}),
            json!({}),
        );
        let e = |o: &Operation, a: Value| o.prepare(&base(), args(a)).unwrap_err();
        assert!(e(&ops[0], json!({})).contains("missing the required path parameter"));
        assert!(e(&ops[0], json!({"id": ".."})).contains("cannot be"));
        assert!(e(&ops[0], json!({"id": "1", "X-A": "a\nb"})).contains("header parameter"));
        assert!(e(&ops[0], json!({"id": "1", "other": 1})).contains("does not take \"other\""));
        assert!(e(&ops[1], json!({})).contains("{missing}"));
    }

    #[test]
    fn injected_values_for_gets_ride_in_the_query() {
        let ops = op(
            json!({"openapi": "3.1.0", "paths": {"/s": {"get": {}, "post": {}}}}),
            json!({"tenant": "acme"}),
        );
        let p = ops[0].prepare(&base(), Map::new()).unwrap();
        assert_eq!(p.url.query(), Some("key=k&tenant=acme"));
        assert!(p.body.is_none());
        let p = ops[1].prepare(&base(), Map::new()).unwrap();
        assert_eq!(p.url.query(), Some("key=k"));
        assert!(
            matches!(p.body, Some(PreparedBody::Json(ref b, _)) if b == br#"{"tenant":"acme"}"#)
        );
    }

    #[test]
    fn form_and_raw_bodies() {
        let ops = op(
            json!({"openapi": "3.0.0", "paths": {
                "/f": {"post": {"requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {
                    "type": "object", "properties": {"a": {"type": "object"}, "n": {"type": "array"}}}}}}}},
                "/r": {"put": {"requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}}}}}}),
            json!({}),
        );
        let p = ops[0]
            .prepare(
                &base(),
                args(json!({"a": {"b": 1, "c": [{"d": "x y"}]}, "n": [1, 2]})),
            )
            .unwrap();
        match p.body.unwrap() {
            PreparedBody::Form(s) => assert_eq!(s, "a%5Bb%5D=1&a%5Bc%5D%5B0%5D%5Bd%5D=x+y&n=1&n=2"),
            other => panic!("{other:?}"),
        }
        let p = ops[1]
            .prepare(&base(), args(json!({"body": "hello"})))
            .unwrap();
        assert!(
            matches!(p.body, Some(PreparedBody::Raw(ref t, ref ct)) if t == "hello" && ct == "text/plain")
        );
    }
}
