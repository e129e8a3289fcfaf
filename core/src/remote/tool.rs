//! A remote tool: one operation of a service's OpenAPI document, or a hook's one protocol
//! tool, as a toolkit tool. Its answers become results here.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::endpoint::{Endpoint, ToolDef, ToolKind};
use super::hook::Protocol;
use super::http::{self, Answer, Failure};
use super::openapi::Operation;
use super::protocol;
use super::request::PreparedBody;
use crate::tool::CANCELLED_RESULT;
use crate::tool::{Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// One tool of one hook.
pub(crate) struct RemoteTool {
    pub endpoint: Arc<Endpoint>,
    /// The operation's identity across refreshes (`METHOD /path`, or the hook's name).
    pub key: String,
    /// The name the model sees.
    pub name: String,
    spec: ToolSpec,
    kind: ToolKind,
}

impl RemoteTool {
    pub fn new(endpoint: Arc<Endpoint>, name: String, def: ToolDef) -> RemoteTool {
        let mut spec = def.spec;
        spec.name = name.clone();
        RemoteTool {
            endpoint,
            key: def.key,
            name,
            spec,
            kind: def.kind,
        }
    }

    fn error(&self, message: &str) -> ToolOutput {
        ToolOutput::error(self.endpoint.secrets.scrub(message).into_owned())
    }

    /// Send a request built from the call and turn the answer into a result.
    async fn exchange(
        &self,
        request: reqwest::RequestBuilder,
        ctx: &ToolContext,
    ) -> Result<Answer, ToolOutput> {
        let mut request = request
            .build()
            .map_err(|_| self.error("the request could not be built"))?;
        if let Some(value) = ctx
            .traceparent()
            .and_then(|t| reqwest::header::HeaderValue::from_str(&t).ok())
        {
            request.headers_mut().insert("traceparent", value);
        }
        let client = self.endpoint.client.as_ref().map_err(|e| self.error(e))?;
        let closed = &self.endpoint.shared.closed;
        let sent = tokio::select! {
            biased;
            _ = closed.cancelled() => {
                return Err(self.error(&format!(
                    "remote hook {:?}: the remote source was closed", self.endpoint.name()
                )));
            }
            r = http::send(self.endpoint.name(), client, request, self.endpoint.timeout, &ctx.cancel) => r,
        };
        match sent {
            Ok(answer) => Ok(answer),
            Err(Failure::Cancelled) => Err(ToolOutput::error(CANCELLED_RESULT)),
            Err(Failure::Message(m)) => Err(self.error(&m)),
        }
    }

    async fn call_operation(
        &self,
        op: &Operation,
        args: Map<String, Value>,
        ctx: &ToolContext,
    ) -> ToolOutput {
        let Some(base) = &self.endpoint.base else {
            return self.error("the hook's url is not a URL");
        };
        let prepared = match op.prepare(base, args) {
            Ok(p) => p,
            Err(e) => return self.error(&format!("{}: {e}", self.name)),
        };
        let Ok(client) = &self.endpoint.client else {
            return self.error("the hook's HTTP client could not be built");
        };
        let mut request = client.request(prepared.method, prepared.url);
        for (k, v) in prepared.headers {
            request = request.header(k, v);
        }
        request = match prepared.body {
            None => request,
            Some(PreparedBody::Json(bytes, content_type)) => request
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(bytes),
            Some(PreparedBody::Form(text)) => request
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(text),
            Some(PreparedBody::Multipart(fields)) => {
                let mut form = reqwest::multipart::Form::new();
                for (k, v) in fields {
                    form = form.text(k, v);
                }
                request.multipart(form)
            }
            Some(PreparedBody::Raw(text, content_type)) => request
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(text),
        };
        match self.exchange(request, ctx).await {
            Ok(answer) => self.operation_output(&answer),
            Err(out) => out,
        }
    }

    /// A 2xx JSON answer as compact JSON text, other text as it is, an empty body as
    /// `(no content)`, binary content as one line naming it; any other status as an error
    /// result `HTTP <status>: <body>`.
    fn operation_output(&self, answer: &Answer) -> ToolOutput {
        if !answer.is_success() {
            return self.error(&answer.status_error());
        }
        if answer.body.is_empty() {
            return ToolOutput::text("(no content)");
        }
        let media = answer
            .content_type
            .as_deref()
            .and_then(|c| c.split(';').next())
            .map(|c| c.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let binary = media.starts_with("image/")
            || media.starts_with("audio/")
            || media.starts_with("video/")
            || matches!(
                media.as_str(),
                "application/octet-stream" | "application/pdf" | "application/zip"
            );
        let text = match std::str::from_utf8(&answer.body) {
            Ok(t) if !binary => t,
            Err(e) if !binary && answer.truncated && e.error_len().is_none() => {
                // The cap cut a character in two: the text up to it.
                std::str::from_utf8(&answer.body[..e.valid_up_to()]).unwrap_or_default()
            }
            _ => {
                let shown = if media.is_empty() {
                    "unknown type"
                } else {
                    &media
                };
                return ToolOutput::text(format!(
                    "[binary answer: {shown}, {} bytes{}]",
                    answer.body.len(),
                    if answer.truncated { " read, cut" } else { "" }
                ));
            }
        };
        if answer.truncated {
            return ToolOutput::text(self.endpoint.secrets.scrub(text).into_owned())
                .with_metadata(json!({"truncated": true, "bytesRead": answer.body.len()}));
        }
        let json_like = media.contains("json") || media.is_empty();
        let text = match serde_json::from_str::<Value>(text) {
            Ok(v) if json_like => v.to_string(),
            _ => text.to_string(),
        };
        ToolOutput::text(self.endpoint.secrets.scrub(&text).into_owned())
    }

    async fn call_protocol(
        &self,
        protocol: Protocol,
        mut args: Map<String, Value>,
        ctx: &ToolContext,
    ) -> ToolOutput {
        for (k, v) in &self.endpoint.hook.inject {
            args.insert(k.clone(), v.clone());
        }
        let Ok(client) = &self.endpoint.client else {
            return self.error("the hook's HTTP client could not be built");
        };
        let body = protocol::request_body(protocol, self.endpoint.name(), &args);
        let request = client
            .post(self.endpoint.hook.url.as_str())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let answer = match self.exchange(request, ctx).await {
            Ok(a) => a,
            Err(out) => return out,
        };
        if !answer.is_success() {
            return self.error(&answer.status_error());
        }
        if answer.truncated {
            return self.error(&format!(
                "the answer is longer than {} MiB",
                http::MAX_RESPONSE_BYTES >> 20
            ));
        }
        let text = answer.text();
        match protocol::unwrap(protocol, &text) {
            Ok(t) if t.is_empty() => ToolOutput::text("(no content)"),
            Ok(t) => ToolOutput::text(self.endpoint.secrets.scrub(&t).into_owned()),
            Err(e) => self.error(&format!("remote hook {:?}: {e}", self.endpoint.name())),
        }
    }
}

#[async_trait]
impl Tool for RemoteTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn source(&self) -> Source {
        Source::Remote
    }

    fn server(&self) -> Option<String> {
        Some(self.endpoint.name().to_string())
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        if self.endpoint.shared.closed.is_cancelled() {
            return Ok(self.error(&format!(
                "remote hook {:?}: the remote source was closed",
                self.endpoint.name()
            )));
        }
        let args = match args {
            Value::Object(o) => o,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::new(format!(
                    "arguments must be a JSON object, not {other}"
                )))
            }
        };
        Ok(match &self.kind {
            ToolKind::Operation(op) => self.call_operation(op, args, &ctx).await,
            ToolKind::Protocol(p) => self.call_protocol(*p, args, &ctx).await,
        })
    }
}
