//! web_fetch never goes through a proxy named in the environment: a proxy resolves the names
//! itself, past the internal-address checks, and would answer for any address. The test runs
//! alone in a process of its own (`crate::alone`) because it sets the proxy variables for the
//! whole process.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use contenox::{Client, Config, Message, Outcome};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// An HTTP server on 127.0.0.1 that answers every request with `body` and counts its
/// connections; it stops with the test's runtime.
async fn serve(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (port, connections)
}

#[test]
fn proxy_variables_in_the_environment_are_ignored() {
    crate::alone::run("web_fetch_proxy::proxy_variables_in_the_environment_are_ignored_alone");
}

#[tokio::test]
#[ignore = "run by proxy_variables_in_the_environment_are_ignored, alone in a process of its own (it sets environment variables)"]
async fn proxy_variables_in_the_environment_are_ignored_alone() {
    if !crate::alone::here("web_fetch_proxy::proxy_variables_in_the_environment_are_ignored_alone")
    {
        return;
    }
    let (page_port, _) = serve("<p>the page itself</p>").await;
    let (proxy_port, proxied) = serve("<p>an answer from the proxy</p>").await;
    let proxy = format!("http://127.0.0.1:{proxy_port}");
    for name in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        std::env::set_var(name, &proxy);
    }
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");

    // The page is on the loopback, so the opt-in: what is tried here is the proxy alone.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{page_port}/page");
    let config: Config = serde_json::from_value(json!({
        "style": "scripted",
        "builtins": ["web_fetch"],
        "web_fetch_allow_private": true,
        "root": dir.path(),
        "script": [
            {"tool_calls": [{"id": "c1", "name": "web_fetch", "arguments": {"url": url}}]},
            {"text": "done"}
        ],
    }))
    .unwrap();
    let client = Client::from_config(config).unwrap();
    let result = client.run("Read that page.").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    let content = result
        .transcript
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool { .. } => Some(m.text().into_owned()),
            _ => None,
        })
        .expect("a tool result");
    assert!(content.contains("the page itself"), "{content}");
    assert!(!content.contains("from the proxy"), "{content}");
    assert_eq!(proxied.load(Ordering::SeqCst), 0, "the proxy was asked");
    crate::alone::done();
}
