//! rmcp's streamable HTTP client transport, spoken through the reqwest 0.12 client the model
//! styles already use (rmcp's own reqwest feature brings reqwest 0.13 with another TLS stack).
//!
//! What the transport's worker needs from a client: POST one JSON-RPC message and read the
//! answer (202 / JSON / an SSE stream), GET the server's SSE stream, DELETE the session.
//!
//! rmcp's docs say a custom client must enforce the transport's size limits itself; this one
//! does (JSON bodies, error bodies, each SSE event, counted before parsing), and adds what
//! rmcp leaves to the client: a timeout until the response starts, an idle timeout between the
//! events of a POST's answer, no redirects (headers never travel to another host), and no URL in
//! any error text.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::StatusCode;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestParamsMeta, ServerJsonRpcMessage,
};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};
use tokio::time::Instant;

use crate::model::redact::origin;
use crate::model::sse::{Caps, Decoder};

/// Bytes of an error body kept in a message.
const ERROR_BODY_MAX: usize = 2048;

/// Why a connection's client last cut an answer short (a cap, a stall): rmcp reports such a
/// stream error only as a closed transport, so the server's error message reads it from here.
#[derive(Clone, Default)]
pub(crate) struct LastError(Arc<parking_lot::Mutex<Option<String>>>);

impl LastError {
    fn set(&self, why: String) {
        *self.0.lock() = Some(why);
    }

    /// The reason, once.
    pub fn take(&self) -> Option<String> {
        self.0.lock().take()
    }
}

/// The reqwest client behind an MCP HTTP server.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
    last_error: LastError,
    /// From sending a request to its response headers; also the longest silence between two
    /// events of a POST's SSE answer and two chunks of a JSON body (the server's `timeout_ms`).
    timeout: Duration,
    /// The OAuth access token sent with every request, when the server uses OAuth.
    bearer: Option<Arc<parking_lot::RwLock<Option<String>>>>,
    /// Where a 401's `WWW-Authenticate` is left for the OAuth session.
    challenge: Option<Arc<parking_lot::Mutex<Option<String>>>>,
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

impl HttpClient {
    pub fn new(timeout: Duration) -> Result<HttpClient, String> {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map(|client| HttpClient {
                client,
                timeout,
                last_error: LastError::default(),
                bearer: None,
                challenge: None,
            })
            .map_err(|e| format!("cannot build the HTTP client: {e}"))
    }

    /// Send the OAuth session's current token with every request, and leave a 401's
    /// challenge where the session reads it.
    pub fn with_oauth(
        mut self,
        bearer: Arc<parking_lot::RwLock<Option<String>>>,
        challenge: Arc<parking_lot::Mutex<Option<String>>>,
    ) -> HttpClient {
        self.bearer = Some(bearer);
        self.challenge = Some(challenge);
        self
    }

    /// The auth header rmcp gives, else the OAuth session's token, then the custom headers.
    fn apply(
        &self,
        req: reqwest::RequestBuilder,
        auth: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let auth = auth.or_else(|| self.bearer.as_ref().and_then(|b| b.read().clone()));
        apply(req, auth, headers)
    }

    /// A 401: note its challenge for the OAuth session and say so (never the body).
    fn unauthorized(&self, resp: &reqwest::Response) -> StreamableHttpError<reqwest::Error> {
        let header = resp
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("Bearer")
            .to_string();
        let hint = match &self.challenge {
            Some(slot) => {
                *slot.lock() = Some(header);
                "the server needs OAuth authorization"
            }
            None => {
                "the server needs OAuth authorization; load it with an McpAuth (the token store \
                 and the browser step) or give an Authorization header"
            }
        };
        StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
            "HTTP 401 Unauthorized: {hint}"
        )))
    }

    /// Where this client leaves the reason it cut an answer short.
    pub fn last_error(&self) -> LastError {
        self.last_error.clone()
    }

    /// Send within the timeout; reqwest's errors lose their URL (it may carry a token).
    async fn send(&self, req: reqwest::RequestBuilder) -> HttpResult<reqwest::Response> {
        match tokio::time::timeout(self.timeout, req.send()).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(StreamableHttpError::Client(e.without_url())),
            Err(_) => Err(StreamableHttpError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the server did not answer within {} ms (timeout_ms)",
                    self.timeout.as_millis()
                ),
            ))),
        }
    }

    /// The next chunk of a body within the timeout.
    async fn chunk(
        &self,
        body: &mut BoxStream<'static, reqwest::Result<Bytes>>,
    ) -> HttpResult<Option<Bytes>> {
        match tokio::time::timeout(self.timeout, body.next()).await {
            Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
            Ok(Some(Err(e))) => Err(StreamableHttpError::Client(e.without_url())),
            Ok(None) => Ok(None),
            Err(_) => Err(idle_error(self.timeout)),
        }
    }

    /// A whole body of at most `max` bytes.
    async fn bounded_body(&self, resp: reqwest::Response, max: usize) -> HttpResult<Vec<u8>> {
        if resp.content_length().is_some_and(|n| n > max as u64) {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        let mut body = resp.bytes_stream().boxed();
        let mut out = Vec::new();
        while let Some(chunk) = self.chunk(&mut body).await? {
            if chunk.len() > max - out.len() {
                return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// At most the first `max` bytes of a body, as text (for a diagnostic); reads no further.
    async fn body_prefix(&self, resp: reqwest::Response, max: usize) -> String {
        let mut body = resp.bytes_stream().boxed();
        let mut out = Vec::new();
        while out.len() < max {
            match self.chunk(&mut body).await {
                Ok(Some(chunk)) => {
                    let n = chunk.len().min(max - out.len());
                    out.extend_from_slice(&chunk[..n]);
                }
                _ => break,
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn idle_error(timeout: Duration) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "nothing arrived for {} ms (timeout_ms)",
            timeout.as_millis()
        ),
    ))
}

/// A 3xx answer: an error naming the status and where it pointed (its origin only: the rest of
/// the URL may carry a token).
fn redirect_error(resp: &reqwest::Response) -> StreamableHttpError<reqwest::Error> {
    let to = resp
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|loc| resp.url().join(loc).ok())
        .map(|u| format!(" to {}", origin(&u)))
        .unwrap_or_default();
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
        "HTTP {}: a redirect{to}; redirects are not followed (use the URL that answers)",
        resp.status().as_u16()
    )))
}

fn is_media(content_type: Option<&HeaderValue>, media: &str) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(media))
}

fn apply(
    mut req: reqwest::RequestBuilder,
    auth: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(token) = auth {
        req = req.bearer_auth(token);
    }
    for (name, value) in headers {
        req = req.header(name, value);
    }
    req
}

/// An SSE body as rmcp's events, each event capped at `max_event` bytes; with `idle`, an error
/// once that long passed without an event (keep-alive comments do not count).
fn sse(
    resp: reqwest::Response,
    max_event: usize,
    idle: Option<Duration>,
    last_error: LastError,
) -> BoxStream<'static, Result<Sse, SseError>> {
    struct State {
        body: BoxStream<'static, reqwest::Result<Bytes>>,
        decoder: Decoder,
        idle: Option<Duration>,
        deadline: Option<Instant>,
        failed: bool,
        last_error: LastError,
    }
    let state = State {
        body: resp.bytes_stream().boxed(),
        decoder: Decoder::new(Caps {
            event: max_event,
            // A long-lived stream: its events are capped, not its length.
            body: usize::MAX,
        }),
        idle,
        deadline: idle.map(|d| Instant::now() + d),
        failed: false,
        last_error,
    };
    fn fail(
        mut st: State,
        e: Box<dyn std::error::Error + Send + Sync>,
    ) -> Option<(Result<Sse, SseError>, State)> {
        st.failed = true;
        st.last_error.set(e.to_string());
        Some((Err(SseError::Body(e)), st))
    }
    futures::stream::unfold(state, move |mut st| async move {
        if st.failed {
            return None;
        }
        loop {
            if let Some(ev) = st.decoder.next_event() {
                st.deadline = st.idle.map(|d| Instant::now() + d);
                let sse = Sse {
                    event: ev.event,
                    data: ev.data,
                    id: ev.id,
                    retry: ev.retry,
                };
                return Some((Ok(sse), st));
            }
            let next = match st.deadline {
                Some(deadline) => match tokio::time::timeout_at(deadline, st.body.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        let ms = st.idle.unwrap_or_default().as_millis();
                        let e = std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("no event for {ms} ms (timeout_ms)"),
                        );
                        return fail(st, Box::new(e));
                    }
                },
                None => st.body.next().await,
            };
            match next {
                None => return None,
                Some(Err(e)) => return fail(st, Box::new(e.without_url())),
                Some(Ok(chunk)) => {
                    if let Err(cap) = st.decoder.feed(&chunk) {
                        return fail(st, Box::new(cap));
                    }
                }
            }
        }
    })
    .boxed()
}

fn limits_with_event_size(max_sse_event_size: usize) -> StreamableHttpResponseLimits {
    let mut limits = StreamableHttpResponseLimits::default();
    limits.max_sse_event_size = max_sse_event_size;
    limits
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits_with_event_size(max_sse_event_size),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let body = serde_json::to_vec(&message)?;
        let mut req = self
            .client
            .post(uri.as_ref())
            .header(
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            )
            .header(CONTENT_TYPE, JSON_MIME_TYPE);
        req = self.apply(req, auth_header, custom_headers);
        if let Some(id) = &session_id {
            req = req.header(HEADER_SESSION_ID, id.as_ref());
        }
        if let Some(traceparent) = traceparent_of(&message) {
            req = req.header("traceparent", traceparent);
        }
        let resp = self.send(req.body(body)).await?;
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED {
            return Err(self.unauthorized(&resp));
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if status.is_redirection() {
            return Err(redirect_error(&resp));
        }
        let new_session = resp
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let content_type = resp.headers().get(CONTENT_TYPE).cloned();
        let awaits_nothing = !matches!(message, JsonRpcMessage::Request(_));
        if !status.is_success() {
            if is_media(content_type.as_ref(), JSON_MIME_TYPE) {
                // A JSON-RPC error is the answer; read it whole (within the JSON cap).
                let body = self
                    .bounded_body(resp, limits.max_json_response_size)
                    .await?;
                if let Ok(err @ JsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(err, new_session));
                }
                let text = String::from_utf8_lossy(&body);
                return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!(
                        "HTTP {status}: {}",
                        crate::error::cut(&text, ERROR_BODY_MAX)
                    ),
                )));
            }
            let max = limits.max_error_response_size.min(ERROR_BODY_MAX);
            let body = self.body_prefix(resp, max).await;
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {body}"),
            )));
        }
        if is_media(content_type.as_ref(), EVENT_STREAM_MIME_TYPE) {
            let events = sse(
                resp,
                limits.max_sse_event_size,
                Some(self.timeout),
                self.last_error.clone(),
            );
            return Ok(StreamableHttpPostResponse::Sse(events, new_session));
        }
        if is_media(content_type.as_ref(), JSON_MIME_TYPE) {
            let bytes = self
                .bounded_body(resp, limits.max_json_response_size)
                .await?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&bytes) {
                Ok(msg) => Ok(StreamableHttpPostResponse::Json(msg, new_session)),
                Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!(
                        "the server's JSON answer is not JSON-RPC ({e}): {}",
                        crate::error::cut(&String::from_utf8_lossy(&bytes), ERROR_BODY_MAX)
                    ),
                ))),
            };
        }
        if awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        ))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let req = self
            .apply(
                self.client.delete(uri.as_ref()),
                auth_header,
                custom_headers,
            )
            .header(HEADER_SESSION_ID, session_id.as_ref());
        let resp = self.send(req).await?;
        if resp.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        if resp.status().is_redirection() {
            return Err(redirect_error(&resp));
        }
        resp.error_for_status()
            .map(|_| ())
            .map_err(|e| StreamableHttpError::Client(e.without_url()))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut req = self.apply(
            self.client.get(uri.as_ref()).header(
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            ),
            auth_header,
            custom_headers,
        );
        if let Some(id) = session_id {
            req = req.header(HEADER_SESSION_ID, id.as_ref());
        }
        if let Some(id) = last_event_id {
            req = req.header(HEADER_LAST_EVENT_ID, id);
        }
        let resp = self.send(req).await?;
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED {
            return Err(self.unauthorized(&resp));
        }
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if status.is_redirection() {
            return Err(redirect_error(&resp));
        }
        if !status.is_success() {
            let body = self.body_prefix(resp, ERROR_BODY_MAX).await;
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {body}"),
            )));
        }
        let content_type = resp.headers().get(CONTENT_TYPE).cloned();
        if !is_media(content_type.as_ref(), EVENT_STREAM_MIME_TYPE) {
            return Err(StreamableHttpError::UnexpectedContentType(
                content_type.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
            ));
        }
        // The server's own channel: it may stay quiet for as long as it likes (no idle limit),
        // but each event is capped.
        Ok(sse(resp, max_sse_event_size, None, self.last_error.clone()))
    }
}

/// The trace context a tool call carries in its `_meta` (its `execute_tool` span's, telemetry
/// on), sent as the HTTP request's `traceparent` too. Connection-level messages (initialize,
/// lists, notifications) carry none: they belong to no turn's span.
fn traceparent_of(message: &ClientJsonRpcMessage) -> Option<&str> {
    match message {
        JsonRpcMessage::Request(r) => match &r.request {
            ClientRequest::CallToolRequest(call) => call.params.traceparent(),
            _ => None,
        },
        _ => None,
    }
}
