//! The fake remote service: one loopback HTTP server per `remote` entry. It serves the entry's
//! OpenAPI document (`GET /openapi.json`) or tool (`GET /schema`, with `schema_endpoint`),
//! answers every other request by the entry's `answers` (first match wins; no match = 404
//! `{"error": "no answer"}`), and records those requests (method, decoded path, query,
//! headers, body) in order of arrival across all services.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Map, Value};
use tokio::net::TcpSocket;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::RemoteService;

/// The recorded requests of all services, in order of arrival.
#[derive(Clone, Default)]
pub struct RemoteLog(Arc<Mutex<Vec<Value>>>);

impl RemoteLog {
    pub fn get(&self) -> Vec<Value> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn push(&self, v: Value) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(v);
    }
}

struct Running {
    spec: Arc<RemoteService>,
    port: u16,
    /// An `unreachable` service's port while it is down: bound, not listening (a connection is
    /// refused) and held, so no other process on the machine can be handed the port meanwhile.
    reserved: Option<TcpSocket>,
    /// `None` while an `unreachable` service is down.
    task: Option<JoinHandle<()>>,
}

/// The running services of one scenario. Dropping it stops them.
pub struct FakeRemote {
    services: Vec<Running>,
    log: RemoteLog,
    cancel: CancellationToken,
}

/// A loopback port nobody listens on, held: an `unreachable` service's address until it comes
/// up. (Bound and released, as it was, the kernel could hand the port to another process's
/// `bind(0)` before the service came up, and the "down" service answered.)
fn reserve_port() -> io::Result<(u16, TcpSocket)> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    Ok((socket.local_addr()?.port(), socket))
}

impl FakeRemote {
    /// Start every service on `127.0.0.1`, except the `unreachable` ones, whose ports are
    /// reserved and stay closed until [`FakeRemote::bring_up`].
    pub async fn start(specs: &[RemoteService]) -> io::Result<FakeRemote> {
        let mut me = FakeRemote {
            services: Vec::new(),
            log: RemoteLog::default(),
            cancel: CancellationToken::new(),
        };
        for spec in specs {
            let spec = Arc::new(spec.clone());
            let (port, reserved, task) = if spec.unreachable {
                let (port, socket) = reserve_port()?;
                (port, Some(socket), None)
            } else {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                let port = listener.local_addr()?.port();
                (port, None, Some(me.serve(spec.clone(), listener)))
            };
            me.services.push(Running {
                spec,
                port,
                reserved,
                task,
            });
        }
        Ok(me)
    }

    fn serve(&self, spec: Arc<RemoteService>, listener: tokio::net::TcpListener) -> JoinHandle<()> {
        let state = Arc::new(ServiceState {
            spec,
            log: self.log.clone(),
            cancel: self.cancel.clone(),
        });
        let app = Router::new().fallback(handle).with_state(state);
        let stop = self.cancel.clone();
        tokio::spawn(async move {
            let server = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned());
            if let Err(e) = server.await {
                eprintln!("fake-remote-service: {e}");
            }
        })
    }

    /// Start the `unreachable` services on their reserved ports (listening on the held socket).
    pub async fn bring_up(&mut self) -> io::Result<()> {
        for i in 0..self.services.len() {
            let Some(socket) = self.services[i].reserved.take() else {
                continue;
            };
            let listener = socket.listen(1024)?;
            let task = self.serve(self.services[i].spec.clone(), listener);
            self.services[i].task = Some(task);
        }
        Ok(())
    }

    /// Whether some service is registered while down.
    pub fn has_unreachable(&self) -> bool {
        self.services.iter().any(|s| s.spec.unreachable)
    }

    /// `http://127.0.0.1:PORT` of a service.
    pub fn url(&self, name: &str) -> Option<String> {
        self.services
            .iter()
            .find(|s| s.spec.name == name)
            .map(|s| format!("http://127.0.0.1:{}", s.port))
    }

    /// The hooks to pass to `load_remote`, in the scenario's order.
    pub fn hooks(&self) -> Vec<Value> {
        self.services
            .iter()
            .map(|s| s.spec.hook(&format!("http://127.0.0.1:{}", s.port)))
            .collect()
    }

    /// `{"name": {"url", "port", "unreachable"}}` for the CLI's first line.
    pub fn describe(&self) -> Value {
        let mut out = Map::new();
        for s in &self.services {
            out.insert(
                s.spec.name.clone(),
                json!({"url": format!("http://127.0.0.1:{}", s.port), "port": s.port,
                       "unreachable": s.spec.unreachable}),
            );
        }
        Value::Object(out)
    }

    /// The requests recorded so far (spec fetches excluded).
    pub fn requests(&self) -> Vec<Value> {
        self.log.get()
    }

    /// A handle on the log that outlives `self` (for the CLI's control endpoint).
    pub fn log(&self) -> RemoteLog {
        self.log.clone()
    }

    /// Stop every service (delayed answers are released).
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        for s in &mut self.services {
            if let Some(task) = s.task.take() {
                let abort = task.abort_handle();
                if tokio::time::timeout(Duration::from_secs(2), task)
                    .await
                    .is_err()
                {
                    abort.abort();
                }
            }
        }
    }
}

impl Drop for FakeRemote {
    fn drop(&mut self) {
        self.cancel.cancel();
        for s in &mut self.services {
            if let Some(task) = s.task.take() {
                task.abort();
            }
        }
    }
}

struct ServiceState {
    spec: Arc<RemoteService>,
    log: RemoteLog,
    cancel: CancellationToken,
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Whether `"METHOD /template"` (or `"*"`) fits the request; `{name}` matches one segment.
pub fn rule_fits(rule: &str, method: &str, raw_path: &str) -> bool {
    if rule == "*" {
        return true;
    }
    let Some((m, template)) = rule.split_once(' ') else {
        return false;
    };
    if !m.eq_ignore_ascii_case(method) {
        return false;
    }
    let trim = |p: &str| -> String {
        let t = p.trim_end_matches('/');
        if t.is_empty() {
            "/".into()
        } else {
            t.to_string()
        }
    };
    let (template, path) = (trim(template.trim()), trim(raw_path));
    let t: Vec<&str> = template.split('/').collect();
    let p: Vec<&str> = path.split('/').collect();
    t.len() == p.len()
        && t.iter().zip(&p).all(|(t, p)| {
            (t.starts_with('{') && t.ends_with('}') && !p.is_empty()) || decode(p) == *t
        })
}

/// The query string as `{name: value}`, a repeated name as a list of its values.
fn query_map(query: Option<&str>) -> Value {
    let mut out: Map<String, Value> = Map::new();
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let (k, v) = (k.into_owned(), Value::String(v.into_owned()));
        match out.get_mut(&k) {
            None => {
                out.insert(k, v);
            }
            Some(Value::Array(items)) => items.push(v),
            Some(first) => {
                let first = first.take();
                out.insert(k, Value::Array(vec![first, v]));
            }
        }
    }
    Value::Object(out)
}

fn header_map(headers: &HeaderMap) -> Value {
    let mut out: Map<String, Value> = Map::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match out.get_mut(name.as_str()) {
            Some(Value::String(s)) => {
                s.push_str(", ");
                s.push_str(&value);
            }
            _ => {
                out.insert(name.as_str().to_string(), Value::String(value));
            }
        }
    }
    Value::Object(out)
}

async fn handle(
    State(state): State<Arc<ServiceState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let spec = &state.spec;
    let path = uri.path();
    if method == Method::GET && path == "/openapi.json" && spec.protocol == "openapi" {
        let text = spec
            .openapi_text
            .clone()
            .unwrap_or_else(|| match &spec.openapi {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            });
        let content_type = if text.trim_start().starts_with('{') {
            "application/json"
        } else {
            "application/yaml"
        };
        return ([(header::CONTENT_TYPE, content_type)], text).into_response();
    }
    if method == Method::GET && path == "/schema" && spec.schema_endpoint {
        let tool = spec.tool.clone().unwrap_or(json!({}));
        let doc = json!({"functions": [{
            "name": spec.name,
            "description": tool.get("description").cloned().unwrap_or(json!("")),
            "parameters": tool.get("input_schema").cloned().unwrap_or(json!({"type": "object"}))
        }]});
        return (
            [(header::CONTENT_TYPE, "application/json")],
            doc.to_string(),
        )
            .into_response();
    }
    state.log.push(json!({
        "service": spec.name,
        "method": method.as_str(),
        "path": decode(path),
        "query": query_map(uri.query()),
        "headers": header_map(&headers),
        "body": String::from_utf8_lossy(&body),
    }));
    let Some(answer) = spec
        .answers
        .iter()
        .find(|a| rule_fits(&a.matches, method.as_str(), path))
    else {
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"error":"no answer"}"#,
        )
            .into_response();
    };
    if let Some(ms) = answer.delay_ms {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
            _ = state.cancel.cancelled() => {
                return (StatusCode::SERVICE_UNAVAILABLE, "fake remote service shut down").into_response();
            }
        }
    }
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (content_type, body) = match (&answer.json, &answer.text) {
        (Some(v), _) => ("application/json", v.to_string()),
        (None, Some(t)) => ("text/plain; charset=utf-8", t.clone()),
        (None, None) => ("text/plain; charset=utf-8", String::new()),
    };
    let content_type = answer.content_type.as_deref().unwrap_or(content_type);
    (
        status,
        [(header::CONTENT_TYPE, content_type.to_string())],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_templates() {
        assert!(rule_fits("*", "DELETE", "/x"));
        assert!(rule_fits("GET /users/{id}", "GET", "/users/42"));
        assert!(rule_fits("get /users/{id}/", "GET", "/users/a%2Fb"));
        assert!(!rule_fits("GET /users/{id}", "GET", "/users/42/items"));
        assert!(!rule_fits("GET /users/{id}", "POST", "/users/42"));
        assert!(rule_fits("POST /", "POST", "/"));
        assert!(rule_fits("GET /a b", "GET", "/a%20b"));
    }

    #[tokio::test]
    async fn an_unreachable_service_holds_its_port_until_it_comes_up() {
        let spec: RemoteService = serde_json::from_value(json!({
            "name": "late", "unreachable": true, "openapi": {"openapi": "3.0.0", "paths": {}}
        }))
        .unwrap();
        let mut fake = FakeRemote::start(&[spec]).await.unwrap();
        let url = fake.url("late").unwrap();
        let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
        // Down: connections are refused, and nobody else can take the port meanwhile (a
        // released reservation could be handed to another process's server, which answered).
        assert!(tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err());
        let taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap_err();
        assert_eq!(taken.kind(), io::ErrorKind::AddrInUse);
        assert!(tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .is_err());
        // Up: the same port answers.
        fake.bring_up().await.unwrap();
        let doc = reqwest::get(format!("{url}/openapi.json")).await.unwrap();
        assert!(doc.status().is_success(), "{}", doc.status());
    }

    #[test]
    fn queries_keep_repeats() {
        assert_eq!(
            query_map(Some("a=1&b=x+y&a=2&a=3")),
            json!({"a": ["1", "2", "3"], "b": "x y"})
        );
        assert_eq!(query_map(None), json!({}));
    }
}
