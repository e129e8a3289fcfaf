//! A hostile HTTP/1.1 server for the network tests, on 127.0.0.1: each connection reads one
//! request and plays a list of steps (bytes, pauses, holding the connection open), so a test can
//! stall mid-body, send keep-alives only, send more than any cap, or redirect. The server's task
//! ends when it is dropped; a held connection is released then.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// One step of an answer.
#[derive(Clone, Debug)]
pub enum Step {
    /// Write these bytes as they are (the head, or raw body bytes).
    Raw(Vec<u8>),
    /// Write these bytes as one chunk of a chunked body.
    Chunk(Vec<u8>),
    /// Write `count` chunks of `chunk` bytes each (a large body without holding it in memory).
    Repeat { chunk: Vec<u8>, count: usize },
    /// Wait.
    Pause(Duration),
    /// Write this chunk every `every`, forever (keep-alives), until the client goes away.
    Every { chunk: Vec<u8>, every: Duration },
    /// Keep the connection open, sending nothing, until the server is dropped.
    Hold,
    /// End a chunked body cleanly.
    End,
}

/// The head of a streamed (chunked) answer.
pub fn chunked_head(status: u16, content_type: &str, extra: &[(&str, &str)]) -> Step {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n"
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    Step::Raw(head.into_bytes())
}

/// A whole answer with a Content-Length.
pub fn whole(status: u16, content_type: &str, extra: &[(&str, &str)], body: &str) -> Vec<Step> {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    vec![Step::Raw(head.into_bytes()), Step::Hold]
}

/// What a server answers to request `n` (its head and body as text).
type Answer = dyn Fn(usize, &str) -> Vec<Step> + Send + Sync;

/// A running server. Every connection gets `answer(n, request)` (n = 0-based request number,
/// request = its head and body as text).
pub struct RawServer {
    pub addr: SocketAddr,
    /// The requests received, head and body as text.
    pub requests: Arc<Mutex<Vec<String>>>,
    /// Body bytes written successfully over all connections.
    pub written: Arc<AtomicUsize>,
    /// Connections accepted and not ended yet (a held connection ends when the client closes it).
    pub open: Arc<AtomicUsize>,
    stop: CancellationToken,
}

impl RawServer {
    pub async fn start(
        answer: impl Fn(usize, &str) -> Vec<Step> + Send + Sync + 'static,
    ) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let written = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        let answer = Arc::new(answer);
        let (reqs, wr, st, op) = (
            requests.clone(),
            written.clone(),
            stop.clone(),
            open.clone(),
        );
        tokio::spawn(async move {
            loop {
                let conn = tokio::select! {
                    _ = st.cancelled() => return,
                    c = listener.accept() => c,
                };
                let Ok((sock, _)) = conn else { return };
                let (reqs, wr, st, answer) = (reqs.clone(), wr.clone(), st.clone(), answer.clone());
                let op = op.clone();
                op.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    tokio::select! {
                        _ = st.cancelled() => {}
                        _ = serve(sock, reqs, wr, answer) => {}
                    }
                    op.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        RawServer {
            addr,
            requests,
            written,
            open,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn hits(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// Connections still open.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    pub fn written(&self) -> usize {
        self.written.load(Ordering::Relaxed)
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn read_request(sock: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 1 << 20 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    Some(String::from_utf8_lossy(&buf).to_string())
}

fn chunk_bytes(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

async fn serve(
    mut sock: TcpStream,
    requests: Arc<Mutex<Vec<String>>>,
    written: Arc<AtomicUsize>,
    answer: Arc<Answer>,
) {
    let Some(request) = read_request(&mut sock).await else {
        return;
    };
    let n = {
        let mut r = requests.lock().unwrap();
        r.push(request.clone());
        r.len() - 1
    };
    for step in answer(n, &request) {
        let ok = match step {
            Step::Raw(b) => sock.write_all(&b).await.is_ok(),
            Step::Chunk(b) => {
                let ok = sock.write_all(&chunk_bytes(&b)).await.is_ok();
                if ok {
                    written.fetch_add(b.len(), Ordering::Relaxed);
                }
                ok
            }
            Step::Repeat { chunk, count } => {
                let framed = chunk_bytes(&chunk);
                let mut ok = true;
                for _ in 0..count {
                    if sock.write_all(&framed).await.is_err() {
                        ok = false;
                        break;
                    }
                    written.fetch_add(chunk.len(), Ordering::Relaxed);
                }
                ok
            }
            Step::Pause(d) => {
                tokio::time::sleep(d).await;
                true
            }
            Step::Every { chunk, every } => loop {
                if sock.write_all(&chunk_bytes(&chunk)).await.is_err() {
                    break false;
                }
                tokio::time::sleep(every).await;
            },
            Step::Hold => {
                // Until the client closes its side (a read of 0) or the server is dropped.
                let mut tmp = [0u8; 64];
                while let Ok(n) = sock.read(&mut tmp).await {
                    if n == 0 {
                        break;
                    }
                }
                false
            }
            Step::End => sock.write_all(b"0\r\n\r\n").await.is_ok(),
        };
        if !ok {
            return;
        }
    }
}
