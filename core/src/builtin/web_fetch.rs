//! `web_fetch`: fetch an http(s) URL and return it as text, HTML turned into Markdown
//! ([`super::html`]).
//!
//! Limits: 30 s, 10 MiB of body (the rest is dropped and reported), 100000 characters of text
//! per call (`offset` pages on). Redirects within the same host are followed (at most 10); a
//! redirect to another host is reported, not followed, so the model (and the gate) sees where
//! it leads.

use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{cut_chars, opt_u64, str_arg};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The whole request, connect to last byte.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Body bytes read at most.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Characters of text returned per call.
pub const MAX_CHARS: usize = 100_000;
/// Same-host redirects followed.
const MAX_REDIRECTS: usize = 10;

pub(crate) struct WebFetch {
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl WebFetch {
    pub fn new() -> Self {
        WebFetch {
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .timeout(TIMEOUT)
                    .connect_timeout(Duration::from_secs(10))
                    .user_agent(concat!(
                        "contenox/",
                        env!("CARGO_PKG_VERSION"),
                        " (web_fetch)"
                    ))
                    .redirect(reqwest::redirect::Policy::custom(|attempt| {
                        let same_host = attempt
                            .previous()
                            .first()
                            .is_some_and(|first| first.host_str() == attempt.url().host_str());
                        if !same_host || attempt.previous().len() > MAX_REDIRECTS {
                            attempt.stop()
                        } else {
                            attempt.follow()
                        }
                    }))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ToolError::new(format!("cannot make an HTTP client: {e}")))
    }
}

#[async_trait]
impl Tool for WebFetch {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "web_fetch",
            "Fetch a web page (http or https) and return its content as text: HTML is \
             converted to Markdown; plain text, JSON and other text types come as they are. Up \
             to 100000 characters per call; when there is more, the metadata gives `nextOffset` \
             to continue. A redirect to another host is not followed: the result names the new \
             URL, to fetch if you want it.",
            json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "The http:// or https:// URL to fetch."},
                    "offset": {"type": "integer", "minimum": 0, "description": "Character offset to continue from (for long pages)."}
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints {
            read_only: Some(true),
            destructive: Some(false),
            open_world: Some(true),
        })
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let given = str_arg(&args, "url")?;
        let url = reqwest::Url::parse(given).map_err(|e| format!("invalid URL {given:?}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "only http and https URLs can be fetched, not {}:",
                url.scheme()
            )
            .into());
        }
        let offset = opt_u64(&args, "offset").unwrap_or(0) as usize;
        let client = self.client()?.clone();
        tokio::select! {
            r = fetch(client, url, offset) => r,
            _ = ctx.cancel.cancelled() => Err("cancelled".into()),
        }
    }
}

async fn fetch(
    client: reqwest::Client,
    url: reqwest::Url,
    offset: usize,
) -> Result<ToolOutput, ToolError> {
    let mut resp = client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,*/*;q=0.8",
        )
        .send()
        .await
        .map_err(|e| format!("cannot fetch {url}: {}", error_chain(&e)))?;
    let status = resp.status();
    let final_url = resp.url().clone();
    if status.is_redirection() {
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| final_url.join(l).ok());
        return match location {
            Some(to) => Ok(ToolOutput::text(format!(
                "{final_url} redirects (HTTP {}) to another host: {to}\nThe redirect was not \
                 followed; call web_fetch with that URL to fetch it.",
                status.as_u16()
            ))
            .with_metadata(json!({"status": status.as_u16(), "redirect": to.as_str()}))),
            None => Err(format!(
                "{final_url} answered HTTP {} without a usable Location header",
                status.as_u16()
            )
            .into()),
        };
    }
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = Vec::new();
    let mut body_cut = false;
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("reading {final_url}: {}", error_chain(&e)))?
    {
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            body_cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    let kind = Kind::of(&content_type, &body);
    if kind == Kind::Binary {
        return Err(format!(
            "{final_url} is not text (content type {}); web_fetch returns text only",
            if content_type.is_empty() {
                "unknown"
            } else {
                &content_type
            }
        )
        .into());
    }
    let text = if kind == Kind::Html {
        super::html::convert(body, tokio::time::Instant::now() + TIMEOUT)
            .await
            .map_err(|e| format!("converting {final_url}: {e}"))?
    } else {
        String::from_utf8_lossy(&body).into_owned()
    };
    if !status.is_success() {
        let (snippet, _) = cut_chars(text.trim(), 2000);
        return Err(format!(
            "{final_url} answered HTTP {} {}\n{snippet}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )
        .into());
    }
    let total = text.chars().count();
    if offset > 0 && offset >= total {
        return Err(format!("offset {offset} is past the end ({total} characters)").into());
    }
    let start = text.char_indices().nth(offset).map_or(text.len(), |c| c.0);
    let (window, _) = cut_chars(&text[start..], MAX_CHARS);
    let end = offset + window.chars().count();
    let mut meta = json!({
        "url": final_url.as_str(),
        "status": status.as_u16(),
        "contentType": content_type,
    });
    if end < total || offset > 0 {
        meta["total"] = json!(total);
        meta["truncated"] = json!(end < total);
        if end < total {
            meta["nextOffset"] = json!(end);
        }
    }
    if body_cut {
        meta["truncated"] = json!(true);
        meta["bodyCutAtBytes"] = json!(MAX_BODY_BYTES);
    }
    Ok(ToolOutput::text(window.to_string()).with_metadata(meta))
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

impl Kind {
    fn of(content_type: &str, body: &[u8]) -> Kind {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        if mime == "text/html" || mime == "application/xhtml+xml" {
            return Kind::Html;
        }
        let texty = mime.starts_with("text/")
            || mime.ends_with("+json")
            || mime.ends_with("+xml")
            || matches!(
                mime,
                "application/json"
                    | "application/xml"
                    | "application/javascript"
                    | "application/x-yaml"
                    | "application/yaml"
                    | "application/toml"
            );
        let probe = &body[..body.len().min(8192)];
        if texty {
            return Kind::Text;
        }
        if mime.is_empty() && !probe.contains(&0) {
            let head = String::from_utf8_lossy(&probe[..probe.len().min(512)]).to_lowercase();
            if head.contains("<html") || head.contains("<!doctype html") {
                return Kind::Html;
            }
            return Kind::Text;
        }
        Kind::Binary
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(inner) = cur {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        cur = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A tiny HTTP/1.1 server on 127.0.0.1 answering each path with a fixed response; stops
    /// when the test's runtime ends.
    async fn serve(routes: Vec<(&'static str, String)>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let routes = routes.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => got.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&got);
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let resp = routes
                        .iter()
                        .find(|(p, _)| *p == path)
                        .map(|(_, r)| r.clone())
                        .unwrap_or_else(|| {
                            "HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found"
                                .to_string()
                        });
                    let _ = sock.write_all(resp.as_bytes()).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        format!("http://127.0.0.1:{}", addr.port())
    }

    fn ok(content_type: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    fn redirect(to: &str) -> String {
        format!(
            "HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
    }

    async fn call(args: Value) -> Result<ToolOutput, ToolError> {
        WebFetch::new()
            .call(args, ToolContext::detached("/", "web_fetch"))
            .await
    }

    #[tokio::test]
    async fn html_becomes_markdown_and_redirects_are_handled() {
        let html = "<html><head><title>T</title><style>p{}</style></head><body>\
                    <h1>Hello</h1><p>Some <b>bold</b> text and a <a href=\"/x\">link</a>.</p>\
                    <script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>";
        let base = serve(vec![
            ("/page", ok("text/html; charset=utf-8", html)),
            ("/plain", ok("text/plain", "just text")),
            ("/bin", ok("application/octet-stream", "\u{0}\u{1}")),
            ("/same", redirect("/plain")),
            ("/away", redirect("http://localhost:9/elsewhere")),
        ])
        .await;
        let out = call(json!({"url": format!("{base}/page")})).await.unwrap();
        let text = out.content_text();
        assert!(text.contains("# Hello"), "{text}");
        assert!(text.contains("**bold**"), "{text}");
        assert!(text.contains("[link](/x)"), "{text}");
        assert!(text.contains("one") && text.contains("two"), "{text}");
        assert!(!text.contains("alert") && !text.contains("p{}"), "{text}");
        assert_eq!(out.metadata.unwrap()["status"], 200);
        let out = call(json!({"url": format!("{base}/plain")})).await.unwrap();
        assert_eq!(out.content_text(), "just text");
        // Same host: followed.
        let out = call(json!({"url": format!("{base}/same")})).await.unwrap();
        assert_eq!(out.content_text(), "just text");
        // Another host: reported.
        let out = call(json!({"url": format!("{base}/away")})).await.unwrap();
        assert!(out.content_text().contains("http://localhost:9/elsewhere"));
        assert_eq!(
            out.metadata.unwrap()["redirect"],
            "http://localhost:9/elsewhere"
        );
        let err = call(json!({"url": format!("{base}/bin")}))
            .await
            .unwrap_err();
        assert!(err.message.contains("not text"), "{}", err.message);
        let err = call(json!({"url": format!("{base}/missing")}))
            .await
            .unwrap_err();
        assert!(err.message.contains("HTTP 404"), "{}", err.message);
    }

    #[tokio::test]
    async fn long_pages_are_paged() {
        let body = "abcdefghij".repeat(15_000);
        let base = serve(vec![("/long", ok("text/plain", &body))]).await;
        let out = call(json!({"url": format!("{base}/long")})).await.unwrap();
        assert_eq!(out.content_text().len(), MAX_CHARS);
        let meta = out.metadata.unwrap();
        assert_eq!(meta["truncated"], true);
        assert_eq!(meta["total"], 150_000);
        assert_eq!(meta["nextOffset"], MAX_CHARS);
        let out = call(json!({"url": format!("{base}/long"), "offset": MAX_CHARS}))
            .await
            .unwrap();
        assert_eq!(out.content_text(), &body[MAX_CHARS..]);
        assert_eq!(out.metadata.unwrap()["truncated"], false);
    }

    #[tokio::test]
    async fn only_http_and_https() {
        for url in [
            "file:///etc/passwd",
            "ftp://127.0.0.1/x",
            "not a url",
            "data:text/plain,hi",
        ] {
            assert!(call(json!({"url": url})).await.is_err(), "{url}");
        }
        // Nothing listens on port 9 of the loopback: a clear error, no hang.
        let err = call(json!({"url": "http://127.0.0.1:9/"}))
            .await
            .unwrap_err();
        assert!(err.message.starts_with("cannot fetch"), "{}", err.message);
    }

    #[tokio::test]
    async fn hostile_pages_do_not_take_the_host_down() {
        let spans = format!(
            "<html><body>{}deep{}</body></html>",
            "<span>".repeat(100_000),
            "</span>".repeat(100_000)
        );
        assert!(spans.len() > 1_300_000);
        let tables = format!(
            "<html><body>{}cell</body></html>",
            "<table><tr><td>".repeat(50_000)
        );
        let line = format!(
            "<html><body><p>{}</p></body></html>",
            "word ".repeat(2 * 1024 * 1024)
        );
        let base = serve(vec![
            ("/spans", ok("text/html", &spans)),
            ("/tables", ok("text/html", &tables)),
            ("/line", ok("text/html", &line)),
        ])
        .await;
        let out = call(json!({"url": format!("{base}/spans")})).await.unwrap();
        assert!(
            out.content_text().contains("deep"),
            "{}",
            out.content_text()
        );
        let out = call(json!({"url": format!("{base}/tables")}))
            .await
            .unwrap();
        assert!(out.content_text().contains("cell"));
        let out = call(json!({"url": format!("{base}/line")})).await.unwrap();
        assert!(out.content_text().starts_with("word word"));
        let meta = out.metadata.unwrap();
        assert_eq!(meta["bodyCutAtBytes"], MAX_BODY_BYTES);
        assert_eq!(meta["truncated"], true);
    }
}
