//! The HTTP side shared by the network styles: one reqwest client, headers, status handling.

use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::Failure;
use crate::config::Config;
use crate::error::{cut, Error, Result};

/// How much of an error body ends up in a message.
const BODY_CUT: usize = 2_000;

pub(crate) struct Http {
    pub client: reqwest::Client,
    pub base: String,
}

impl Http {
    pub fn new(config: &Config) -> Result<Self> {
        let mut headers = HeaderMap::new();
        for (k, v) in &config.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| Error::config(format!("header name {k:?}: {e}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|e| Error::config(format!("header {k:?} value: {e}")))?;
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_millis(config.connect_timeout_ms))
            .build()
            .map_err(|e| Error::config(format!("HTTP client: {e}")))?;
        Ok(Http {
            client,
            base: config.resolved_base_url(),
        })
    }

    /// POST a JSON body; a non-2xx status becomes a [`Failure`] carrying status, body and
    /// Retry-After.
    pub async fn post(
        &self,
        path: &str,
        headers: &[(&str, String)],
        body: &Value,
    ) -> Result<reqwest::Response, Failure> {
        let mut req = self.client.post(format!("{}{}", self.base, path));
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let body = serde_json::to_vec(body).expect("request bodies serialize");
        let resp = req
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| Failure::BeforeData {
                status: None,
                message: format!("could not reach the model server: {}", chain(&e)),
                retry_after: None,
                retryable: true,
            })?;
        check_status(resp).await
    }

    /// GET a JSON document (list_models).
    pub async fn get_json(&self, path: &str, headers: &[(&str, String)]) -> Result<Value> {
        let mut req = self.client.get(format!("{}{}", self.base, path));
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| Error::transport("could not reach the model server", e))?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Err(Error::Http {
                status: status.as_u16(),
                body: cut(body.trim(), BODY_CUT),
                retry_after: None,
            });
        }
        resp.json()
            .await
            .map_err(|e| Error::transport("the model server's answer could not be read", e))
    }
}

async fn check_status(resp: reqwest::Response) -> Result<reqwest::Response, Failure> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64);
    let body = resp.text().await.unwrap_or_default();
    let code = status.as_u16();
    Err(Failure::BeforeData {
        status: Some(code),
        message: format!(
            "model server answered HTTP {code}: {}",
            cut(body.trim(), BODY_CUT)
        ),
        retry_after,
        retryable: code == 429 || code >= 500,
    })
}

/// An error with its sources, so "error sending request" says why.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let msg = c.to_string();
        if !s.contains(&msg) {
            s.push_str(": ");
            s.push_str(&msg);
        }
        cur = c.source();
    }
    s
}

/// A failure while reading a response body: retryable while no byte of it had arrived, fatal
/// once the answer had begun (never duplicated deltas, never a silently truncated answer).
pub(crate) fn body_failure(got_data: bool, what: String) -> Failure {
    if got_data {
        Failure::Fatal(format!("the model's answer broke off: {what}"))
    } else {
        Failure::BeforeData {
            status: None,
            message: format!("the model server closed the connection: {what}"),
            retry_after: None,
            retryable: true,
        }
    }
}

/// The body's byte stream, with `flag` set once a non-empty chunk arrives.
pub(crate) fn tracked_bytes(
    resp: reqwest::Response,
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> impl Stream<Item = reqwest::Result<bytes::Bytes>> {
    resp.bytes_stream().inspect(move |chunk| {
        if matches!(chunk, Ok(b) if !b.is_empty()) {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    })
}
