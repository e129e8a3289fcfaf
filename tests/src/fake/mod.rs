//! The fake model server: replays a scenario's `model` script over a style's real wire format
//! and records every request body it receives.
//!
//! ```no_run
//! # async fn demo(scenario: contenox_conformance::scenario::Scenario) -> std::io::Result<()> {
//! let server = contenox_conformance::fake::serve(scenario.model.clone(), scenario.style).await?;
//! let base_url = server.base_url();
//! // ... run a client against base_url ...
//! let bodies = server.requests();
//! server.shutdown().await;
//! # Ok(()) }
//! ```

mod anthropic;
mod ollama;
mod openai;
mod prompt_cache;
mod responses;
mod turn_step;
mod wire;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::scenario::{EntryKind, ModelEntry, Style};

/// How long the server waits, after the last byte of a `break_after_bytes` response, before it
/// aborts the connection: long enough for hyper to flush what was written.
const BREAK_FLUSH_PAUSE: Duration = Duration::from_millis(100);

/// The largest request body a repeating (benchmark) server reads.
const REPEAT_BODY_LIMIT: usize = 64 << 20;

/// A response about to be sent: status, headers and the body as a list of chunks (one chunk per
/// SSE event / NDJSON line when streaming).
pub(crate) struct Reply {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub chunks: Vec<Bytes>,
    pub streaming: bool,
    /// Pauses in the stream: before chunk `.0`, wait `.1` ms (a call's `pause_after_ms`).
    pub pauses: Vec<(usize, u64)>,
}

impl Reply {
    pub(crate) fn json(status: StatusCode, value: &Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            chunks: vec![Bytes::from(value.to_string())],
            streaming: false,
            pauses: Vec::new(),
        }
    }

    fn text(status: StatusCode, text: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            chunks: vec![Bytes::from(text.to_string())],
            streaming: false,
            pauses: Vec::new(),
        }
    }
}

/// What a renderer knows about the request it answers.
pub(crate) struct Ctx<'a> {
    pub request: &'a Value,
    /// 1-based number of this answer (ids are derived from it).
    pub n: usize,
    /// The request's `model`, or `"fake"`.
    pub model: String,
}

struct Log {
    requests: Vec<Value>,
    /// The bodies as they came, byte for byte.
    raw: Vec<Bytes>,
    next: usize,
}

struct Shared {
    style: Style,
    script: Vec<ModelEntry>,
    /// Serve the script forever and keep no bodies (for benchmarks).
    repeat: Option<Repeat>,
    log: Mutex<Log>,
    /// What anthropic requests with counted usage wrote to the prompt cache.
    cache: Mutex<prompt_cache::PromptCache>,
    cancel: CancellationToken,
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A handle on the recorded request bodies of a running server.
#[derive(Clone)]
pub struct Requests(Arc<Shared>);

impl Requests {
    /// Every request body received on the chat endpoint so far, in order of arrival (parsed
    /// JSON; a body that is not JSON is recorded as a JSON string of its text).
    pub fn get(&self) -> Vec<Value> {
        self.0.log().requests.clone()
    }

    /// Every request body received on the chat endpoint so far, byte for byte as it came.
    pub fn raw(&self) -> Vec<Bytes> {
        self.0.log().raw.clone()
    }

    pub fn len(&self) -> usize {
        self.0.log().requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A running fake model server. Dropping it stops it too.
pub struct FakeServer {
    pub addr: SocketAddr,
    pub style: Style,
    pub requests: Requests,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// `http://127.0.0.1:<port>`.
    pub fn root_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The `base_url` a client of this style takes (`…/v1` for openai, the root otherwise).
    pub fn base_url(&self) -> String {
        self.style.base_url(&self.root_url())
    }

    /// The recorded request bodies so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.get()
    }

    /// Stops the server: stalled requests are released, the listener is closed.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
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

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Starts a fake server on `127.0.0.1:0` replaying `script` in `style`.
pub async fn serve(script: Vec<ModelEntry>, style: Style) -> io::Result<FakeServer> {
    serve_on(script, style, SocketAddr::from(([127, 0, 0, 1], 0))).await
}

/// How a repeating server picks the script entry for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// The next entry in arrival order, cycling: right for one client at a time.
    Cycle,
    /// The entry at the request's step within its turn (the number of model replies since the
    /// user's prompt, modulo the script's length): a tool-call-then-text script answers every
    /// turn of every client in order, however concurrent clients interleave their requests.
    ByTurnStep,
}

/// Starts a fake server on `127.0.0.1:0` that cycles through `script` forever and records no
/// request bodies (only their count stays bounded: nothing is kept). For benchmarks.
pub async fn serve_repeating(script: Vec<ModelEntry>, style: Style) -> io::Result<FakeServer> {
    serve_repeating_by(script, style, Repeat::Cycle).await
}

/// Like [`serve_repeating`], picking each request's entry as `repeat` says.
pub async fn serve_repeating_by(
    script: Vec<ModelEntry>,
    style: Style,
    repeat: Repeat,
) -> io::Result<FakeServer> {
    start(
        script,
        style,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        Some(repeat),
    )
    .await
}

/// Starts a fake server on `addr`.
pub async fn serve_on(
    script: Vec<ModelEntry>,
    style: Style,
    addr: SocketAddr,
) -> io::Result<FakeServer> {
    start(script, style, addr, None).await
}

async fn start(
    script: Vec<ModelEntry>,
    style: Style,
    addr: SocketAddr,
    repeat: Option<Repeat>,
) -> io::Result<FakeServer> {
    if repeat.is_some() && script.is_empty() {
        return Err(io::Error::other("--repeat needs a non-empty script"));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let cancel = CancellationToken::new();
    let shared = Arc::new(Shared {
        style,
        script,
        repeat,
        log: Mutex::new(Log {
            requests: Vec::new(),
            raw: Vec::new(),
            next: 0,
        }),
        cache: Mutex::new(prompt_cache::PromptCache::default()),
        cancel: cancel.clone(),
    });
    let app = router(shared.clone());
    let stop = cancel.clone();
    let task = tokio::spawn(async move {
        let server = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned());
        if let Err(e) = server.await {
            eprintln!("fake-model-server: {e}");
        }
    });
    Ok(FakeServer {
        addr,
        style,
        requests: Requests(shared),
        cancel,
        task: Some(task),
    })
}

fn router(shared: Arc<Shared>) -> Router {
    let mut app = Router::new().route("/_fake/requests", get(recorded));
    // Every style's chat endpoint (their paths differ), each answering in its own wire from
    // the one script: a client falling back to a model of another style talks to the same
    // server (the runners point such a `fallback` entry here).
    for style in [
        Style::Openai,
        Style::OpenaiResponses,
        Style::Anthropic,
        Style::Ollama,
    ] {
        app = app.route(
            style.chat_path(),
            post(
                move |state: State<Arc<Shared>>, headers: HeaderMap, body: Bytes| {
                    chat(state, style, headers, body)
                },
            ),
        );
    }
    let app = match shared.style {
        Style::Openai | Style::OpenaiResponses => app.route("/v1/models", get(openai::models)),
        Style::Anthropic => app.route("/v1/models", get(anthropic::models)),
        Style::Ollama => app
            .route("/api/tags", get(ollama::tags))
            .route("/", get(|| async { "Ollama is running" })),
    };
    // A benchmark's long conversation is megabytes per request: lift axum's 2 MB default for
    // repeating servers (bounded still, so a runaway client cannot exhaust memory).
    let app = match shared.repeat {
        Some(_) => app.layer(DefaultBodyLimit::max(REPEAT_BODY_LIMIT)),
        None => app,
    };
    app.with_state(shared)
}

async fn recorded(State(shared): State<Arc<Shared>>) -> Json<Vec<Value>> {
    Json(shared.log().requests.clone())
}

/// The key a recorded body gets for the request's `traceparent` header (the client's telemetry
/// on): the runners pass the recorded bodies through unchanged, so the checker sees it.
pub const TRACEPARENT_KEY: &str = "_traceparent";

async fn chat(
    State(shared): State<Arc<Shared>>,
    style: Style,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    // A request the real API refuses (HTTP 400) before answering consumes no script entry.
    let refused = match (&parsed, style) {
        (Some(request), Style::Anthropic) => anthropic::refusal(request),
        (Some(request), Style::OpenaiResponses) => responses::refusal(request),
        _ => None,
    };
    let index = {
        let mut log = shared.log();
        if shared.repeat.is_none() {
            // Only the recording server copies the body (a benchmark's may be megabytes).
            let mut recorded = parsed
                .clone()
                .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&body).into_owned()));
            if let (Some(object), Some(traceparent)) = (
                recorded.as_object_mut(),
                headers.get("traceparent").and_then(|v| v.to_str().ok()),
            ) {
                object.insert(TRACEPARENT_KEY.into(), Value::String(traceparent.into()));
            }
            log.requests.push(recorded);
            log.raw.push(body.clone());
        }
        if let Some(message) = &refused {
            return match style {
                Style::OpenaiResponses => responses::refusal_reply(message),
                _ => anthropic::refusal_reply(message),
            }
            .into();
        }
        if parsed.is_none() {
            None
        } else if let (Some(repeat), Some(request)) = (shared.repeat, &parsed) {
            let at = match repeat {
                Repeat::Cycle => log.next,
                // By the request's own content, not arrival order: concurrent clients interleave.
                Repeat::ByTurnStep => turn_step::turn_step(request),
            };
            log.next += 1;
            Some(at % shared.script.len())
        } else if log.next < shared.script.len() {
            log.next += 1;
            Some(log.next - 1)
        } else {
            return Reply::text(StatusCode::INTERNAL_SERVER_ERROR, "script exhausted").into();
        }
    };
    let (Some(request), Some(index)) = (parsed, index) else {
        return Reply::text(StatusCode::BAD_REQUEST, "request body is not JSON").into();
    };
    let entry = &shared.script[index];
    let ctx = Ctx {
        request: &request,
        n: index + 1,
        model: request
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("fake")
            .to_string(),
    };
    let reply = match entry.kind() {
        EntryKind::Stall => {
            // Accept and never answer: hold until the client goes away (hyper then drops this
            // future) or the server shuts down.
            shared.cancel.cancelled().await;
            return Reply::text(StatusCode::SERVICE_UNAVAILABLE, "fake server shut down").into();
        }
        EntryKind::Error(spec) => wire::error_reply(style, spec),
        EntryKind::Replay(lines) => wire::replay_reply(style, lines),
        EntryKind::Response {
            text,
            tool_calls,
            reasoning,
            stop_reason,
        } => {
            let usage = entry.usage().unwrap_or_else(|| {
                shared
                    .cache
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .count(style, &request, text, tool_calls)
            });
            match style {
                Style::Openai => {
                    openai::render(&ctx, text, tool_calls, reasoning, stop_reason, usage)
                }
                Style::OpenaiResponses => {
                    responses::render(&ctx, text, tool_calls, reasoning, stop_reason, usage)
                }
                Style::Anthropic => {
                    anthropic::render(&ctx, text, tool_calls, reasoning, stop_reason, usage)
                }
                Style::Ollama => {
                    ollama::render(&ctx, text, tool_calls, reasoning, stop_reason, usage)
                }
            }
        }
    };
    respond(
        reply,
        entry.break_after_bytes,
        entry.chunk_delay_ms.map(Duration::from_millis),
    )
}

impl From<Reply> for Response {
    fn from(reply: Reply) -> Response {
        respond(reply, None, None)
    }
}

/// Keeps the first `n` bytes of `chunks`.
fn truncate(chunks: Vec<Bytes>, n: usize) -> Vec<Bytes> {
    let mut left = n;
    let mut out = Vec::new();
    for chunk in chunks {
        if left == 0 {
            break;
        }
        if chunk.len() <= left {
            left -= chunk.len();
            out.push(chunk);
        } else {
            out.push(chunk.slice(..left));
            left = 0;
        }
    }
    out
}

/// Builds the HTTP response. Streaming bodies go out chunk by chunk (after `delay` each);
/// non-streaming ones carry a Content-Length of the full body. With `break_after`, only that
/// many bytes are sent, then the body stream fails, which makes hyper abort the connection.
fn respond(reply: Reply, break_after: Option<usize>, delay: Option<Duration>) -> Response {
    let total: usize = reply.chunks.iter().map(Bytes::len).sum();
    let mut builder = Response::builder()
        .status(reply.status)
        .header(header::CONTENT_TYPE, reply.content_type);
    if reply.streaming {
        builder = builder.header(header::CACHE_CONTROL, "no-cache");
    } else {
        builder = builder.header(header::CONTENT_LENGTH, total);
    }
    for (name, value) in &reply.headers {
        if let Ok(v) = HeaderValue::from_str(value) {
            builder = builder.header(*name, v);
        }
    }
    let delay = delay.filter(|d| !d.is_zero());
    // Not streamed, the answer comes when the whole reply is there: after every pause.
    let held: u64 = reply.pauses.iter().map(|(_, ms)| *ms).sum();
    let body = if break_after.is_none() && delay.is_none() && !reply.streaming && held == 0 {
        Body::from(reply.chunks.concat())
    } else if break_after.is_none() && delay.is_none() && !reply.streaming {
        let whole = reply.chunks.concat();
        Body::from_stream(futures::stream::once(async move {
            tokio::time::sleep(Duration::from_millis(held)).await;
            Ok::<Bytes, io::Error>(Bytes::from(whole))
        }))
    } else {
        let chunks = match break_after {
            Some(n) => truncate(reply.chunks, n),
            None => reply.chunks,
        };
        let pauses = reply.pauses;
        let data = futures::stream::iter(chunks.into_iter().enumerate()).then(move |(i, chunk)| {
            let pause: u64 = pauses
                .iter()
                .filter(|(at, _)| *at == i)
                .map(|(_, ms)| ms)
                .sum();
            async move {
                if let Some(d) = delay {
                    tokio::time::sleep(d).await;
                }
                if pause > 0 {
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
                Ok::<Bytes, io::Error>(chunk)
            }
        });
        let broken = futures::stream::iter(break_after.map(|_| ())).then(|()| async {
            tokio::time::sleep(BREAK_FLUSH_PAUSE).await;
            Err::<Bytes, io::Error>(io::Error::other("break_after_bytes: connection aborted"))
        });
        Body::from_stream(data.chain(broken))
    };
    builder
        .body(body)
        .unwrap_or_else(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_exactly_n_bytes() {
        let chunks = vec![Bytes::from("abc"), Bytes::from("defg"), Bytes::from("h")];
        let cut = |n| truncate(chunks.clone(), n).concat();
        assert_eq!(cut(0), b"");
        assert_eq!(cut(2), b"ab");
        assert_eq!(cut(3), b"abc");
        assert_eq!(cut(5), b"abcde");
        assert_eq!(cut(100), b"abcdefgh");
    }
}
