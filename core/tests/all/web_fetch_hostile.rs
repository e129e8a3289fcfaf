//! web_fetch against hostile pages and internal addresses, through a whole turn. Run in debug
//! and once in release (`cargo test --release -p contenox --test all web_fetch_hostile::`): a page
//! that overflows the stack aborts the whole test process, so a process that survives is the
//! first assertion, the text kept the second.

use contenox::{Client, Config, Message, Outcome, Transcript};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A one-page HTTP server on 127.0.0.1; it stops with the test's runtime.
async fn serve_page(content_type: &'static str, body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let body = body.clone();
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
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    format!("http://127.0.0.1:{port}/page")
}

fn tool_results(t: &Transcript) -> Vec<(String, bool)> {
    t.messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { is_error, .. } => Some((m.text().into_owned(), *is_error)),
            _ => None,
        })
        .collect()
}

/// One turn whose scripted model fetches `url`; the tool results it got.
async fn fetch_in_a_turn(url: &str, allow_private: bool) -> Vec<(String, bool)> {
    let dir = tempfile::tempdir().unwrap();
    let config: Config = serde_json::from_value(json!({
        "style": "scripted",
        "builtins": ["web_fetch"],
        "web_fetch_allow_private": allow_private,
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
    tool_results(&result.transcript)
}

#[tokio::test]
async fn a_page_of_100000_nested_spans_is_read_not_fatal() {
    let page = format!(
        "<html><body><p>before</p>{}deep text{}<p>after</p></body></html>",
        "<span>".repeat(100_000),
        "</span>".repeat(100_000)
    );
    assert!(page.len() > 1_300_000);
    let url = serve_page("text/html; charset=utf-8", page).await;
    let results = fetch_in_a_turn(&url, true).await;
    let (text, is_error) = &results[0];
    assert!(!is_error, "{text}");
    for want in ["before", "deep text", "after"] {
        assert!(text.contains(want), "{want} missing from {text}");
    }
}

#[tokio::test]
async fn the_same_page_on_the_loopback_is_refused_without_the_opt_in() {
    let url = serve_page("text/html", "<p>internal</p>".to_string()).await;
    let results = fetch_in_a_turn(&url, false).await;
    let (text, is_error) = &results[0];
    assert!(is_error);
    assert!(
        text.contains("web_fetch refused") && text.contains("127.0.0.1 is a loopback address"),
        "{text}"
    );
    assert!(!text.contains("internal</p>"));
}

#[test]
fn nesting_that_converters_treat_specially_is_flattened() {
    for (open, close) in [
        ("<table><tr><td>", "</td></tr></table>"),
        ("<ul><li>", "</li></ul>"),
        ("<ol><li>", "</li></ol>"),
        ("<blockquote>", "</blockquote>"),
        ("<div>", "</div>"),
    ] {
        let page = format!("{}kept{}", open.repeat(20_000), close.repeat(20_000));
        let markdown = contenox::builtin::html_to_markdown(page.as_bytes()).unwrap();
        assert!(markdown.contains("kept"), "{open}");
        // Quotes stop nesting at a few levels: far fewer prefixes than elements.
        assert!(markdown.matches('>').count() < 100, "{open}");
    }
}

#[test]
fn ten_mib_of_one_line_converts() {
    let line = "0123456789".repeat(1024 * 1024);
    let markdown =
        contenox::builtin::html_to_markdown(format!("<p>{line}</p>").as_bytes()).unwrap();
    assert_eq!(markdown, line);
}
