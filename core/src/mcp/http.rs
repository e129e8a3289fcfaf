//! rmcp's streamable HTTP client transport, spoken through the reqwest 0.12 client the model
//! styles already use (rmcp's own reqwest feature brings reqwest 0.13 with another TLS stack).
//!
//! What the transport's worker needs from a client: POST one JSON-RPC message and read the
//! answer (202 / JSON / an SSE stream), GET the server's SSE stream, DELETE the session.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::StreamExt;
use http::{HeaderName, HeaderValue};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Error as SseError, Sse, SseStream};

/// Bytes of an error body kept in a message.
const ERROR_BODY_MAX: usize = 2048;

/// The reqwest client behind an MCP HTTP server.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
}

type HttpResult<T> = Result<T, StreamableHttpError<reqwest::Error>>;

impl HttpClient {
    pub fn new() -> Result<HttpClient, String> {
        reqwest::Client::builder()
            .build()
            .map(|client| HttpClient { client })
            .map_err(|e| format!("cannot build the HTTP client: {e}"))
    }
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

async fn error_body(resp: reqwest::Response) -> String {
    let text = resp.text().await.unwrap_or_default();
    crate::error::cut(&text, ERROR_BODY_MAX)
}

fn sse(resp: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(resp.bytes_stream()).boxed()
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
        let body = serde_json::to_vec(&message)?;
        let mut req = self
            .client
            .post(uri.as_ref())
            .header(
                ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            )
            .header(CONTENT_TYPE, JSON_MIME_TYPE);
        req = apply(req, auth_header, custom_headers);
        if let Some(id) = &session_id {
            req = req.header(HEADER_SESSION_ID, id.as_ref());
        }
        let resp = req
            .body(body)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = resp.status();
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let new_session = resp
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let content_type = resp.headers().get(CONTENT_TYPE).cloned();
        let awaits_nothing = !matches!(message, JsonRpcMessage::Request(_));
        if !status.is_success() {
            let body = error_body(resp).await;
            if let Ok(err @ JsonRpcMessage::Error(_)) =
                serde_json::from_str::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(err, new_session));
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {body}"),
            )));
        }
        if is_media(content_type.as_ref(), EVENT_STREAM_MIME_TYPE) {
            return Ok(StreamableHttpPostResponse::Sse(sse(resp), new_session));
        }
        if is_media(content_type.as_ref(), JSON_MIME_TYPE) {
            let bytes = resp.bytes().await.map_err(StreamableHttpError::Client)?;
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
        let req = apply(
            self.client.delete(uri.as_ref()),
            auth_header,
            custom_headers,
        )
        .header(HEADER_SESSION_ID, session_id.as_ref());
        let resp = req.send().await.map_err(StreamableHttpError::Client)?;
        if resp.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        resp.error_for_status()
            .map(|_| ())
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut req = apply(
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
        let resp = req.send().await.map_err(StreamableHttpError::Client)?;
        let status = resp.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            let body = error_body(resp).await;
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
        Ok(sse(resp))
    }
}
