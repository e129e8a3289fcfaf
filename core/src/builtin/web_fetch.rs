//! `web_fetch`: fetch an http(s) URL and return it as text, HTML turned into Markdown
//! ([`super::html`]).
//!
//! Limits: 30 s for the whole call (every redirect and the conversion included), 10 MiB of body
//! (the rest is dropped and reported; no compression is negotiated, so these are the bytes
//! that arrive), 100000 characters of text per call (`offset` pages on). Redirects within the
//! same host are followed hop by hop (at most 10); a redirect to another host is reported, not
//! followed, so the model (and the gate) sees where it leads.
//!
//! Internal addresses (loopback, private, link-local, ...: [`super::web_address`]) are refused
//! unless the config sets `web_fetch_allow_private`: literal addresses before each request, and
//! names in the resolver, which hands the connection only the addresses it checked (no DNS
//! rebinding), and once more on the address each answer came from. Proxies from the
//! environment are not used: a proxy would resolve the names itself, past these checks.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::web_resolver::{check_peer, check_url_host, GuardedResolver, Refused};
use super::{cut_chars, opt_usize, str_arg};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The whole call: every request, every redirect, the body and the conversion.
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// Body bytes read at most.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Characters of text returned per call.
pub const MAX_CHARS: usize = 100_000;
/// Same-host redirects followed.
const MAX_REDIRECTS: usize = 10;

pub(crate) struct WebFetch {
    /// Whether internal addresses may be fetched (config `web_fetch_allow_private`).
    allow_private: bool,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl WebFetch {
    /// A web_fetch that refuses internal addresses unless `allow_private`.
    pub fn new(allow_private: bool) -> Self {
        WebFetch {
            allow_private,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, ToolError> {
        self.client
            .get_or_init(|| {
                client_builder(self.allow_private)
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ToolError::new(format!("cannot make an HTTP client: {e}")))
    }

    /// Refuse `url` when its host is an internal address literal.
    fn check_host(&self, url: &reqwest::Url) -> Result<(), ToolError> {
        match self.allow_private {
            true => Ok(()),
            false => check_url_host(url).map_err(|refused| refusal_error(url, &refused)),
        }
    }

    /// Refuse the answer to `url` when it came from an internal address.
    fn check_peer(
        &self,
        url: &reqwest::Url,
        peer: Option<std::net::SocketAddr>,
    ) -> Result<(), ToolError> {
        match self.allow_private {
            true => Ok(()),
            false => check_peer(url, peer).map_err(|refused| refusal_error(url, &refused)),
        }
    }
}

/// The HTTP client of a web_fetch: no redirects (followed by hand), no proxies, no
/// decompression, and unless `allow_private` the guarded resolver.
fn client_builder(allow_private: bool) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!(
            "contenox/",
            env!("CARGO_PKG_VERSION"),
            " (web_fetch)"
        ))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        // Nothing is decompressed, even if another crate of the build turns reqwest's
        // decoders on: the body cap counts the bytes that arrive, and nothing expands past it.
        .no_gzip()
        .no_brotli()
        .no_deflate()
        .no_zstd();
    if allow_private {
        builder
    } else {
        builder.dns_resolver(Arc::new(GuardedResolver))
    }
}

/// The error result of a refused URL: the host and why, nothing about how to get past it.
fn refusal_error(url: &reqwest::Url, refused: &Refused) -> ToolError {
    ToolError::new(format!(
        "web_fetch refused {url}: {refused}. web_fetch does not connect to loopback, private, \
         link-local or other internal addresses."
    ))
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
        let offset = opt_usize(&args, "offset")?.unwrap_or(0);
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        let fetched = tokio::time::timeout_at(deadline, self.fetch(url.clone(), offset, deadline));
        tokio::select! {
            r = fetched => r.unwrap_or_else(|_| Err(format!(
                "fetching {url} took longer than {} s", TIMEOUT.as_secs()
            ).into())),
            _ = ctx.cancel.cancelled() => Err("cancelled".into()),
        }
    }
}

impl WebFetch {
    async fn fetch(
        &self,
        first: reqwest::Url,
        offset: usize,
        deadline: tokio::time::Instant,
    ) -> Result<ToolOutput, ToolError> {
        let client = self.client()?;
        let mut url = first.clone();
        let mut hops = 0;
        loop {
            self.check_host(&url)?;
            let resp = client
                .get(url.clone())
                .header(
                    reqwest::header::ACCEPT,
                    "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,*/*;q=0.8",
                )
                .send()
                .await
                .map_err(|e| send_error(&url, &e))?;
            self.check_peer(&url, resp.remote_addr())?;
            let status = resp.status();
            if !status.is_redirection() {
                return read(resp, url, offset, deadline).await;
            }
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| url.join(l).ok());
            let Some(to) = location else {
                return Err(format!(
                    "{url} answered HTTP {} without a usable Location header",
                    status.as_u16()
                )
                .into());
            };
            let same_host =
                to.host_str() == first.host_str() && matches!(to.scheme(), "http" | "https");
            if !same_host {
                return Ok(ToolOutput::text(format!(
                    "{url} redirects (HTTP {}) to another host: {to}\nThe redirect was not \
                     followed; call web_fetch with that URL to fetch it.",
                    status.as_u16()
                ))
                .with_metadata(json!({"status": status.as_u16(), "redirect": to.as_str()})));
            }
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(format!("{first} redirects more than {MAX_REDIRECTS} times").into());
            }
            url = to;
        }
    }
}

/// The error of a request that got no answer: a refusal by the resolver, or why it failed.
fn send_error(url: &reqwest::Url, e: &reqwest::Error) -> ToolError {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(refused) = err.downcast_ref::<Refused>() {
            return refusal_error(url, refused);
        }
        cur = err.source();
    }
    ToolError::new(format!("cannot fetch {url}: {}", crate::error::chain(e)))
}

/// Read an answer's body (up to the cap) and turn it into the tool's result.
async fn read(
    mut resp: reqwest::Response,
    final_url: reqwest::Url,
    offset: usize,
    deadline: tokio::time::Instant,
) -> Result<ToolOutput, ToolError> {
    let status = resp.status();
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
        .map_err(|e| format!("reading {final_url}: {}", crate::error::chain(&e)))?
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
        super::html::convert(body, deadline)
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
    let end = offset.saturating_add(window.chars().count());
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

    /// A web_fetch allowed to reach the test servers on the loopback.
    async fn call(args: Value) -> Result<ToolOutput, ToolError> {
        WebFetch::new(true)
            .call(args, ToolContext::detached("/", "web_fetch"))
            .await
    }

    /// The default web_fetch, which refuses internal addresses.
    async fn call_guarded(args: Value) -> Result<ToolOutput, ToolError> {
        WebFetch::new(false)
            .call(args, ToolContext::detached("/", "web_fetch"))
            .await
    }

    /// A loopback listener that counts the connections it accepts (and answers none).
    async fn counting_listener() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = count.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(sock);
            }
        });
        (port, count)
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

    #[test]
    fn hints_say_read_only_and_open_world() {
        let hints = WebFetch::new(false).spec().hints;
        assert_eq!(hints.read_only, Some(true));
        assert_eq!(hints.open_world, Some(true));
        assert_eq!(hints.destructive, Some(false));
    }

    #[tokio::test]
    async fn internal_addresses_are_refused_before_connecting() {
        let (port, connections) = counting_listener().await;
        for (url, why) in [
            (
                format!("http://127.0.0.1:{port}/"),
                "127.0.0.1 is a loopback address",
            ),
            (
                format!("http://localhost:{port}/x"),
                "localhost resolves only to internal addresses",
            ),
            (
                format!("http://2130706433:{port}/"),
                "127.0.0.1 is a loopback address",
            ),
            (
                format!("http://0x7f.1:{port}/"),
                "127.0.0.1 is a loopback address",
            ),
            (
                format!("http://127.1:{port}/"),
                "127.0.0.1 is a loopback address",
            ),
            (
                format!("http://0:{port}/"),
                "0.0.0.0 is a \"this network\" address",
            ),
            (
                format!("http://[::ffff:127.0.0.1]:{port}/"),
                "IPv4-mapped internal address",
            ),
            (
                format!("http://[::1]:{port}/"),
                "[::1] is a loopback address",
            ),
            (
                "http://169.254.169.254/latest/meta-data/".into(),
                "169.254.169.254 is a link-local address",
            ),
            ("http://10.1.2.3/".into(), "10.1.2.3 is a private address"),
            (
                "http://192.168.0.1:8080/admin".into(),
                "192.168.0.1 is a private address",
            ),
            (
                "https://[fd00::1]/".into(),
                "[fd00::1] is a unique local address",
            ),
        ] {
            let err = call_guarded(json!({"url": url})).await.unwrap_err();
            assert!(
                err.message.starts_with("web_fetch refused "),
                "{url}: {}",
                err.message
            );
            assert!(err.message.contains(why), "{url}: {}", err.message);
            assert!(
                err.message.contains("internal addresses"),
                "{}",
                err.message
            );
        }
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0);
        // With the opt-in the same URL is fetched (here: a connection closed without answer).
        let err = call(json!({"url": format!("http://127.0.0.1:{port}/")}))
            .await
            .unwrap_err();
        assert!(err.message.starts_with("cannot fetch"), "{}", err.message);
        assert!(connections.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    }

    #[tokio::test]
    async fn an_answer_from_an_internal_address_is_refused() {
        // A name pinned to the loopback outside the guarded resolver (as a reqwest override
        // would): the address the answer came from is checked too.
        let base = serve(vec![("/page", ok("text/plain", "secret"))]).await;
        let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
        let client = client_builder(false)
            .resolve("public.test", ([127, 0, 0, 1], port).into())
            .build()
            .unwrap();
        let fetch = WebFetch {
            allow_private: false,
            client: OnceLock::from(Ok(client)),
        };
        let err = fetch
            .call(
                json!({"url": format!("http://public.test:{port}/page")}),
                ToolContext::detached("/", "web_fetch"),
            )
            .await
            .unwrap_err();
        assert!(
            err.message
                .contains("public.test resolves only to internal addresses"),
            "{}",
            err.message
        );
        assert!(!err.message.contains("secret"));
    }

    #[tokio::test]
    async fn redirects_are_followed_hop_by_hop_and_capped() {
        let base = serve(vec![
            ("/a", redirect("/b")),
            ("/b", redirect("/plain")),
            ("/plain", ok("text/plain", "arrived")),
            ("/loop", redirect("/loop")),
            (
                "/meta",
                redirect("http://169.254.169.254/latest/meta-data/"),
            ),
            ("/file", redirect("file:///etc/passwd")),
        ])
        .await;
        let out = call(json!({"url": format!("{base}/a")})).await.unwrap();
        assert_eq!(out.content_text(), "arrived");
        assert!(out.metadata.unwrap()["url"]
            .as_str()
            .unwrap()
            .ends_with("/plain"));
        let err = call(json!({"url": format!("{base}/loop")}))
            .await
            .unwrap_err();
        assert!(err.message.contains("more than 10"), "{}", err.message);
        // Another host is reported, not followed; fetching it is checked like any URL.
        let out = call(json!({"url": format!("{base}/meta")})).await.unwrap();
        assert_eq!(
            out.metadata.unwrap()["redirect"],
            "http://169.254.169.254/latest/meta-data/"
        );
        let err = call_guarded(json!({"url": "http://169.254.169.254/latest/meta-data/"}))
            .await
            .unwrap_err();
        assert!(err.message.contains("link-local"), "{}", err.message);
        let out = call(json!({"url": format!("{base}/file")})).await.unwrap();
        assert!(
            out.content_text().contains("was not followed"),
            "{}",
            out.content_text()
        );
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

    #[tokio::test]
    async fn compressed_bodies_are_never_expanded() {
        // A "gzip" body that is not gzip at all: a decoding client would fail on it; web_fetch
        // hands over the bytes that arrived.
        let body = "not really gzip";
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let base = serve(vec![("/z", resp)]).await;
        let out = call(json!({"url": format!("{base}/z")})).await.unwrap();
        assert_eq!(out.content_text(), body);
    }
}
