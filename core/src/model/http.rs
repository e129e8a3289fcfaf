//! The HTTP side shared by the network styles: one reqwest client (no redirects), headers, the
//! request timeout, status handling with bounded error bodies, and the redaction of secrets
//! from every message.

use std::sync::Mutex;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::body::{read_prefix, read_whole, Answer, MAX_BODY_BYTES, MAX_ERROR_BODY_BYTES};
use super::redact::{origin, url_secrets, Redactor};
use super::Failure;
use crate::config::Config;
use crate::error::{chain, cut, Error, Result};

/// How much of an error body ends up in a message.
const BODY_CUT: usize = 2_000;

pub(crate) struct Http {
    pub client: reqwest::Client,
    pub base: String,
    /// The secrets of this endpoint (API key, header values, URL userinfo and query).
    pub redactor: Redactor,
    /// From sending a request to its response headers.
    pub request_timeout: Duration,
    /// The longest silence inside an answer.
    pub idle_timeout: Duration,
    /// The URLs requested so far, parsed, by path: reqwest parses a URL given as text on every
    /// request (about 7k instructions for a loopback URL, the host most of it); a parsed one is
    /// cloned instead. Only URLs that parsed are kept: one that does not goes to reqwest as text
    /// each time, so it fails there as before.
    parsed: Mutex<Vec<(String, reqwest::Url)>>,
}

/// A reqwest client that follows no redirect: a 3xx is answered as it is, so custom headers and
/// API keys never travel to a host the config did not name (reqwest strips only
/// `authorization` and cookies on a cross-host redirect, not `x-api-key` or custom headers).
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none())
}

impl Http {
    pub fn new(config: &Config) -> Result<Self> {
        let mut headers = HeaderMap::new();
        for (k, v) in &config.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| Error::config(format!("header name {k:?}: {e}")))?;
            let mut value = HeaderValue::from_str(v)
                .map_err(|_| Error::config(format!("header {k:?}: the value is not valid")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let client = client_builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_millis(config.connect_timeout_ms))
            .build()
            .map_err(|e| Error::config(format!("HTTP client: {e}")))?;
        let base = config.resolved_base_url();
        let mut secrets = url_secrets(&base);
        secrets.extend(config.headers.values().cloned());
        secrets.extend(config.resolved_api_key());
        Ok(Http {
            client,
            redactor: Redactor::new(secrets),
            base,
            request_timeout: Duration::from_millis(config.request_timeout_ms),
            idle_timeout: Duration::from_millis(config.idle_timeout_ms),
            parsed: Mutex::new(Vec::new()),
        })
    }

    /// The full URL of `path`: the base URL's path plus `path`, with the base URL's query kept
    /// (`https://host/openai?api-version=1` + `/chat/completions`).
    fn url(&self, path: &str) -> String {
        match self.base.split_once('?') {
            Some((base, query)) => format!("{}{path}?{query}", base.trim_end_matches('/')),
            None => format!("{}{path}", self.base),
        }
    }

    /// The URL of `path` as reqwest takes it: parsed once, then cloned.
    fn target(&self, path: &str) -> Target {
        let mut parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, url)) = parsed.iter().find(|(p, _)| p == path) {
            return Target::Parsed(url.clone());
        }
        let text = self.url(path);
        match reqwest::Url::parse(&text) {
            // A handful of paths per endpoint; the bound only guards against a caller that
            // makes paths up.
            Ok(url) if parsed.len() < MAX_PARSED_URLS => {
                parsed.push((path.to_string(), url.clone()));
                Target::Parsed(url)
            }
            _ => Target::Text(text),
        }
    }

    /// Send `req` within the request timeout. The timer goes on with the response, to bound the
    /// reads of its body ([`Answer`]).
    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Answer, NoResponse> {
        let mut timer = Box::pin(tokio::time::sleep(self.request_timeout));
        // The request first, as `tokio::time::timeout` did: an answer that is there wins over a
        // deadline that has just passed.
        let sent = tokio::select! {
            biased;
            sent = req.send() => sent,
            () = &mut timer => {
                return Err(NoResponse {
                    what: format!(
                        "the model server did not answer within {} ms (request_timeout_ms)",
                        self.request_timeout.as_millis()
                    ),
                    source: None,
                })
            }
        };
        match sent {
            Err(e) => Err(NoResponse {
                what: "could not reach the model server".into(),
                // Its URL may carry secrets (userinfo, a key in the query).
                source: Some(e.without_url()),
            }),
            Ok(resp) => Ok(Answer::new(resp, timer)),
        }
    }

    /// POST a JSON body; a non-2xx status becomes a [`Failure`] carrying status, body and
    /// Retry-After.
    pub async fn post(
        &self,
        path: &str,
        headers: &[(&str, String)],
        body: &super::RequestBody,
    ) -> Result<Answer, Failure> {
        let mut req = match self.target(path) {
            Target::Parsed(url) => self.client.post(url),
            Target::Text(text) => self.client.post(text),
        };
        for (k, v) in headers {
            req = with_header(req, k, v);
        }
        if let Some(traceparent) = crate::telemetry::outgoing_traceparent() {
            req = req.header("traceparent", traceparent);
        }
        let req = req
            .header("content-type", "application/json")
            .body(body.clone());
        let resp = self.send(req).await.map_err(|e| Failure::BeforeData {
            status: None,
            message: e.sentence(),
            retry_after: None,
            retryable: true,
        })?;
        self.check_status(resp).await
    }

    /// GET a JSON document (list_models). Errors are redacted.
    pub async fn get_json(&self, path: &str, headers: &[(&str, String)]) -> Result<Value> {
        let mut req = match self.target(path) {
            Target::Parsed(url) => self.client.get(url),
            Target::Text(text) => self.client.get(text),
        };
        for (k, v) in headers {
            req = with_header(req, k, v);
        }
        let redact = |s: String| self.redactor.redact(&s);
        let transport = |message: String| Error::Transport {
            message: redact(message),
            source: None,
        };
        let resp = self.send(req).await.map_err(|e| Error::Transport {
            message: redact(e.what),
            source: e.source.map(Into::into),
        })?;
        let resp = self.check_status(resp).await.map_err(|f| match f {
            Failure::BeforeData {
                status: Some(status),
                message,
                retry_after,
                ..
            } => Error::Http {
                status,
                body: redact(
                    message
                        .split_once(": ")
                        .map_or(message.clone(), |(_, b)| b.to_string()),
                ),
                retry_after,
            },
            other => transport(other.message().to_string()),
        })?;
        let bytes = read_whole(resp, MAX_BODY_BYTES, self.idle_timeout)
            .await
            .map_err(|f| transport(f.message().to_string()))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| transport(format!("the model list is not JSON: {e}")))
    }

    async fn check_status(&self, answer: Answer) -> Result<Answer, Failure> {
        let status = answer.resp.status();
        if status.is_success() {
            return Ok(answer);
        }
        let resp = &answer.resp;
        let code = status.as_u16();
        if status.is_redirection() {
            let target = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|loc| resp.url().join(loc).ok());
            let to = match target {
                Some(url) => format!("a redirect to {}", origin(&url)),
                None => "a redirect".to_string(),
            };
            return Err(Failure::BeforeData {
                status: Some(code),
                message: format!(
                    "model server answered HTTP {code}: {to}; redirects are not followed (set \
                     base_url to the endpoint that answers)"
                ),
                retry_after: None,
                retryable: false,
            });
        }
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let body = read_prefix(answer, MAX_ERROR_BODY_BYTES, self.idle_timeout).await;
        let body = String::from_utf8_lossy(&body);
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
}

/// How many parsed URLs one endpoint keeps.
const MAX_PARSED_URLS: usize = 16;

/// A request's URL: parsed (and cached), or text that did not parse (reqwest reports it).
enum Target {
    Parsed(reqwest::Url),
    Text(String),
}

/// Why a request got no response: what failed, and reqwest's error (without its URL) when
/// there is one. Turns report [`NoResponse::sentence`]; `list_models` keeps the error as the
/// cause of its [`Error::Transport`].
struct NoResponse {
    what: String,
    source: Option<reqwest::Error>,
}

impl NoResponse {
    /// `what` and the causes, in one line.
    fn sentence(&self) -> String {
        match &self.source {
            Some(e) => format!("{}: {}", self.what, chain(e)),
            None => self.what.clone(),
        }
    }
}

/// Add a header whose value is marked sensitive (kept out of Debug output). A value that is not
/// a valid header value is passed as it is, so the request fails with reqwest's builder error
/// (which does not quote it) instead of going out without it.
fn with_header(req: reqwest::RequestBuilder, name: &str, v: &str) -> reqwest::RequestBuilder {
    match HeaderValue::from_str(v) {
        Ok(mut value) => {
            value.set_sensitive(true);
            req.header(name, value)
        }
        Err(_) => req.header(name, v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `Http` for a base URL, with a model and a key.
    fn http(base: &str) -> Http {
        let cfg: Config = serde_json::from_value(serde_json::json!({
            "base_url": base, "model": "m", "api_key": "k"
        }))
        .unwrap();
        Http::new(&cfg).unwrap()
    }

    #[test]
    fn the_base_urls_query_follows_the_path() {
        assert_eq!(
            http("https://h/openai/v1?api-version=1&key=s").url("/chat/completions"),
            "https://h/openai/v1/chat/completions?api-version=1&key=s"
        );
        assert_eq!(http("https://h/v1/").url("/models"), "https://h/v1/models");
    }

    #[test]
    fn a_path_is_parsed_once_and_a_url_that_does_not_parse_stays_text() {
        let h = http("http://127.0.0.1:9/v1?api-version=1");
        for _ in 0..2 {
            let Target::Parsed(url) = h.target("/chat/completions") else {
                panic!("a valid URL is parsed");
            };
            assert_eq!(
                url.as_str(),
                "http://127.0.0.1:9/v1/chat/completions?api-version=1"
            );
        }
        assert_eq!(h.parsed.lock().unwrap().len(), 1);
        // Made-up paths do not grow the cache without bound.
        for i in 0..100 {
            h.target(&format!("/p{i}"));
        }
        assert_eq!(h.parsed.lock().unwrap().len(), MAX_PARSED_URLS);
        let bad = http("http://[::1/v1");
        assert!(matches!(bad.target("/models"), Target::Text(t) if t == "http://[::1/v1/models"));
        assert!(bad.parsed.lock().unwrap().is_empty());
    }
}
