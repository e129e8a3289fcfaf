//! The HTTP side of a hook: one client per hook (its headers on every request, marked
//! sensitive; no redirects followed, so the headers never go anywhere else), each request
//! bounded by the hook's timeout and the turn's cancel, and every body read with a byte cap.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::hook::RemoteHook;

/// Bytes of a response body read at most (the rest is dropped and the cut reported).
pub(crate) const MAX_RESPONSE_BYTES: usize = 4 << 20;
/// Bytes of a body quoted in an error message.
pub(crate) const ERROR_BODY_MAX: usize = 2048;

/// A hook's client: its headers on every request, no redirects.
pub(crate) fn client(hook: &RemoteHook) -> Result<reqwest::Client, String> {
    let mut headers = HeaderMap::new();
    for (k, v) in &hook.headers {
        // Checked when the hook was read.
        let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| format!("header {k:?}"))?;
        let mut value = HeaderValue::from_str(v).map_err(|_| format!("header {k:?}"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_millis(hook.timeout_ms))
        .user_agent(concat!("contenox/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// A response, its body read (up to [`MAX_RESPONSE_BYTES`]).
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    pub location: Option<String>,
    pub body: Vec<u8>,
    /// The body was longer than the cap; `body` holds its start.
    pub truncated: bool,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// `HTTP <status>: <body, cut to 2 KiB>` (and where a redirect pointed, as it was not
    /// followed).
    pub fn status_error(&self) -> String {
        let mut msg = format!(
            "HTTP {}: {}",
            self.status,
            crate::error::cut(&self.text(), ERROR_BODY_MAX)
        );
        if let Some(to) = &self.location {
            msg.push_str(&format!(
                " (a redirect to {} was not followed)",
                super::redact::redact_url(to)
            ));
        }
        msg
    }
}

/// How a request failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The turn was cancelled (the request was dropped, which aborts it).
    Cancelled,
    /// A message naming the hook and what went wrong (never a header, a query or a body).
    Message(String),
}

/// `host:port` of a URL, for messages (never its path or query).
pub(crate) fn host_of(url: &reqwest::Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_string(),
        _ => "the service".into(),
    }
}

/// The causes of a reqwest error without its URL (which may carry injected query values).
fn reason(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut parts = Vec::new();
    let mut source: Option<&dyn std::error::Error> = Some(&e);
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p: &String| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Send `request` and read the answer (at most [`MAX_RESPONSE_BYTES`]), within `timeout` (the
/// whole exchange) and until `cancel` fires.
pub(crate) async fn send(
    hook: &str,
    client: &reqwest::Client,
    request: reqwest::Request,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Answer, Failure> {
    send_capped(hook, client, request, timeout, cancel, MAX_RESPONSE_BYTES).await
}

/// [`send`] reading at most `max` bytes of the body.
pub(crate) async fn send_capped(
    hook: &str,
    client: &reqwest::Client,
    request: reqwest::Request,
    timeout: Duration,
    cancel: &CancellationToken,
    max: usize,
) -> Result<Answer, Failure> {
    let host = host_of(request.url());
    let exchange = async {
        let mut resp = client.execute(request).await.map_err(|e| {
            if e.is_connect() {
                Failure::Message(format!(
                    "remote hook {hook:?}: cannot connect to {host}: {}",
                    reason(e)
                ))
            } else {
                Failure::Message(format!(
                    "remote hook {hook:?}: the request to {host} failed: {}",
                    reason(e)
                ))
            }
        })?;
        let header = |name: reqwest::header::HeaderName| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let location = resp
            .status()
            .is_redirection()
            .then(|| header(reqwest::header::LOCATION))
            .flatten();
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        let mut truncated = false;
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    let room = max - body.len();
                    if chunk.len() > room {
                        body.extend_from_slice(&chunk[..room]);
                        truncated = true;
                        break;
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(Failure::Message(format!(
                        "remote hook {hook:?}: the answer from {host} broke off: {}",
                        reason(e)
                    )))
                }
            }
        }
        Ok(Answer {
            status,
            content_type,
            location,
            body,
            truncated,
        })
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Failure::Cancelled),
        r = tokio::time::timeout(timeout, exchange) => match r {
            Ok(r) => r,
            Err(_) => Err(Failure::Message(format!(
                "remote hook {hook:?}: {host} did not answer within {} ms (the hook's timeout_ms)",
                timeout.as_millis()
            ))),
        },
    }
}
