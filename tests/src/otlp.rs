//! A minimal OTLP/HTTP receiver for tests: it keeps each request's path, headers and JSON body
//! and answers 200 (what a collector answers a full success). Loopback only; it lives as long
//! as the test process (one thread blocked in `accept`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One export request as received.
#[derive(Debug, Clone)]
pub struct Export {
    /// The request path (`/v1/traces`).
    pub path: String,
    /// The headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body, parsed.
    pub body: Value,
}

/// The receiver: its base URL and what it got.
pub struct OtlpReceiver {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    got: Arc<Mutex<Vec<Export>>>,
}

impl OtlpReceiver {
    /// Start one on a free loopback port.
    pub fn start() -> OtlpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let got = Arc::new(Mutex::new(Vec::new()));
        let seen = got.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                if let Some(export) = read_one(&stream) {
                    seen.lock().unwrap_or_else(|e| e.into_inner()).push(export);
                }
                let mut stream = stream;
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
                );
            }
        });
        OtlpReceiver { url, got }
    }

    /// Every export so far.
    pub fn exports(&self) -> Vec<Export> {
        self.got.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every span of every export so far (OTLP/JSON objects).
    pub fn spans(&self) -> Vec<Value> {
        self.exports()
            .iter()
            .flat_map(|e| spans_of(&e.body))
            .collect()
    }
}

/// The spans of an `ExportTraceServiceRequest` in its JSON form.
pub fn spans_of(body: &Value) -> Vec<Value> {
    let mut spans = Vec::new();
    for rs in body["resourceSpans"].as_array().into_iter().flatten() {
        for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
            spans.extend(ss["spans"].as_array().into_iter().flatten().cloned());
        }
    }
    spans
}

fn read_one(stream: &std::net::TcpStream) -> Option<Export> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split(' ').nth(1)?.to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_string();
        if name == "content-length" {
            length = value.parse().ok()?;
        }
        headers.push((name, value));
    }
    // Bounded: a test's exports are small.
    if length > 64 << 20 {
        return None;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Export {
        path,
        headers,
        body: serde_json::from_slice(&body).ok()?,
    })
}
