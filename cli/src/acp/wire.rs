//! JSON-RPC 2.0 over newline-delimited JSON on stdin/stdout, as ACP's stdio transport has it:
//! one message per line, UTF-8, no embedded newlines, nothing else on stdout.
//!
//! Reading is bounded: a line longer than [`MAX_LINE_BYTES`] is skipped to its end without being
//! held (and answered with a parse error), so a hostile client cannot grow the agent's memory.
//! Writing goes through one task that owns stdout, so messages from the prompt's event loop and
//! from permission requests never interleave within a line.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::Mutex;

use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The longest line read (32 MiB, the TypeScript SDK's own default message cap).
pub const MAX_LINE_BYTES: usize = 32 << 20;

/// JSON-RPC's "Parse error".
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request".
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's "Method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "Invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC's "Internal error".
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP's "Resource not found" (an unknown session).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code.
    pub code: i64,
    /// What went wrong, for a person.
    pub message: String,
}

impl RpcError {
    /// An error with this code and message.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// Invalid params.
    pub fn params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }

    fn to_value(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }

    fn from_value(v: &Value) -> RpcError {
        RpcError {
            code: v
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(INTERNAL_ERROR),
            message: v
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        }
    }
}

/// One message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: answer it with its `id`.
    Request {
        /// Its id (a number or a string), echoed in the answer.
        id: Value,
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// A notification: never answered.
    Notification {
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// The answer to one of the agent's requests.
    Response {
        /// The id of the agent's request.
        id: Value,
        /// Its result or error.
        result: Result<Value, RpcError>,
    },
    /// A line that is no valid message: answered with this error, with the line's id when it
    /// had a usable one, else `null`.
    Invalid {
        /// The id to answer with.
        id: Value,
        /// The error.
        error: RpcError,
    },
}

/// How much of an overlong line is kept: enough to find a request's id at its start.
const HEAD_BYTES: usize = 64 << 10;

/// One line as read: its bytes, or how long it was when it went over the cap.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// The line, without its newline.
    Text(Vec<u8>),
    /// A line longer than the cap: its length in bytes and its first [`HEAD_BYTES`] (the rest
    /// was dropped).
    TooLong(usize, Vec<u8>),
}

/// Read one line of at most `max` bytes; `None` at the end of the input.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long: Option<usize> = None;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match too_long {
                Some(n) => Some(Line::TooLong(n, line)),
                None if line.is_empty() => None,
                None => Some(Line::Text(line)),
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let piece = &available[..newline.unwrap_or(available.len())];
        match &mut too_long {
            Some(n) => {
                *n = n.saturating_add(piece.len());
                let more = HEAD_BYTES.saturating_sub(line.len()).min(piece.len());
                line.extend_from_slice(&piece[..more]);
            }
            None if line.len() + piece.len() > max => {
                too_long = Some(line.len() + piece.len());
                // Keep the head only (a new, small allocation: the old one is freed).
                let mut head = line[..line.len().min(HEAD_BYTES)].to_vec();
                let more = HEAD_BYTES.saturating_sub(head.len()).min(piece.len());
                head.extend_from_slice(&piece[..more]);
                line = head;
            }
            None => line.extend_from_slice(piece),
        }
        let used = newline.map_or(available.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(Some(match too_long {
                Some(n) => Line::TooLong(n, line),
                None => Line::Text(line),
            }));
        }
    }
}

/// What a line says; `None` for a blank line (skipped, as whitespace between messages).
pub fn parse_line(line: &Line) -> Option<Incoming> {
    let bytes = match line {
        Line::TooLong(n, head) => {
            let why = format!("a line of {n} bytes is longer than the {MAX_LINE_BYTES} bytes read");
            // A request whose id comes before its large params gets its answer under that id.
            return Some(match id_in_head(head) {
                Some(id) => Incoming::Invalid {
                    id,
                    error: RpcError::new(INVALID_REQUEST, why),
                },
                None => Incoming::Invalid {
                    id: Value::Null,
                    error: RpcError::new(PARSE_ERROR, why),
                },
            });
        }
        Line::Text(b) => b,
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some(invalid_line(PARSE_ERROR, "the line is not UTF-8"));
    };
    let text = text.trim_end_matches('\r');
    if text.trim().is_empty() {
        return None;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Some(invalid_line(PARSE_ERROR, format!("not JSON: {e}"))),
    };
    Some(classify(value))
}

/// The top-level `"id"` of a JSON object of which only `head` is known, when it comes before
/// the object is cut off and is a usable id.
fn id_in_head(head: &[u8]) -> Option<Value> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    use std::cell::RefCell;

    struct FindId<'a>(&'a RefCell<Option<Value>>);
    impl<'de> Visitor<'de> for FindId<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    *self.0.borrow_mut() = Some(map.next_value()?);
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let found = RefCell::new(None);
    // The object is cut off: the parse ends in an error, after the id was seen (or not).
    let _ = serde_json::Deserializer::from_slice(head).deserialize_map(FindId(&found));
    found.into_inner().filter(usable_id)
}

fn invalid_line(code: i64, message: impl Into<String>) -> Incoming {
    Incoming::Invalid {
        id: Value::Null,
        error: RpcError::new(code, message),
    }
}

/// A request id JSON-RPC allows: a string or an integer.
fn usable_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

fn classify(value: Value) -> Incoming {
    let Value::Object(mut m) = value else {
        let what = if value.is_array() {
            "a batch (ACP sends one message per line)"
        } else {
            "not a JSON object"
        };
        return invalid_line(INVALID_REQUEST, format!("the message is {what}"));
    };
    let id = m.remove("id");
    let answer_id = id.clone().filter(usable_id).unwrap_or(Value::Null);
    let bad = |message: &str| Incoming::Invalid {
        id: answer_id.clone(),
        error: RpcError::new(INVALID_REQUEST, message),
    };
    if m.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return bad("\"jsonrpc\" must be \"2.0\"");
    }
    if let Some(id) = &id {
        if !usable_id(id) {
            return bad("\"id\" must be a string or an integer");
        }
    }
    let params = m.remove("params").unwrap_or(Value::Null);
    if !(params.is_object() || params.is_array() || params.is_null()) {
        return bad("\"params\" must be an object or an array");
    }
    match (m.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request { id, method, params },
        (Some(Value::String(method)), None) => Incoming::Notification { method, params },
        (Some(_), _) => bad("\"method\" must be a string"),
        (None, Some(id)) => match (m.remove("result"), m.remove("error")) {
            (Some(result), None) => Incoming::Response {
                id,
                result: Ok(result),
            },
            (None, Some(error)) if error.is_object() => Incoming::Response {
                id,
                result: Err(RpcError::from_value(&error)),
            },
            _ => bad("a response has exactly one of \"result\" and \"error\""),
        },
        (None, None) => bad("a message needs a \"method\" or an \"id\""),
    }
}

/// The agent's side of the connection: sends messages (in order, one line each) and matches
/// the client's answers to the agent's requests.
pub struct Peer {
    lines: mpsc::Sender<Out>,
    next_id: AtomicI64,
    waiting: Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>,
    /// Cancelled when stdout can no longer be written (the client went away).
    gone: CancellationToken,
}

/// What the writer task is handed.
enum Out {
    /// A message, without its newline.
    Line(String),
    /// Answer once everything sent before is written.
    Flush(oneshot::Sender<()>),
}

/// How many messages may wait for stdout before senders wait (a client that stops reading
/// slows the agent down instead of growing its memory).
const QUEUE: usize = 256;

impl Peer {
    /// A peer writing to `out` (a task owns it until the peer and its clones are dropped or a
    /// write fails).
    pub fn start<W: AsyncWrite + Unpin + Send + 'static>(mut stdout: W) -> std::sync::Arc<Peer> {
        let (tx, mut rx) = mpsc::channel::<Out>(QUEUE);
        let gone = CancellationToken::new();
        let peer = std::sync::Arc::new(Peer {
            lines: tx,
            next_id: AtomicI64::new(0),
            waiting: Mutex::new(HashMap::new()),
            gone: gone.clone(),
        });
        tokio::spawn(async move {
            while let Some(out) = rx.recv().await {
                let mut line = match out {
                    Out::Line(l) => l,
                    Out::Flush(done) => {
                        let _ = done.send(());
                        continue;
                    }
                };
                line.push('\n');
                let written = async {
                    stdout.write_all(line.as_bytes()).await?;
                    stdout.flush().await
                };
                if let Err(e) = written.await {
                    eprintln!("contenox acp: stdout closed ({e}); stopping");
                    gone.cancel();
                    return;
                }
            }
        });
        peer
    }

    /// Cancelled once stdout is gone.
    pub fn gone(&self) -> &CancellationToken {
        &self.gone
    }

    async fn send(&self, message: Value) {
        // serde_json escapes every control character in strings: the line has no newline.
        let line = message.to_string();
        if self.lines.send(Out::Line(line)).await.is_err() {
            self.gone.cancel();
        }
    }

    /// Wait until every message sent so far is written (or stdout is gone).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.lines.send(Out::Flush(tx)).await.is_ok() {
            tokio::select! {
                _ = rx => {}
                _ = self.gone.cancelled() => {}
            }
        }
    }

    /// Send a notification.
    pub async fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Answer the client's request `id`.
    pub async fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), json!("2.0"));
        m.insert("id".into(), id);
        match result {
            Ok(v) => m.insert("result".into(), v),
            Err(e) => m.insert("error".into(), e.to_value()),
        };
        self.send(Value::Object(m)).await;
    }

    /// Send a request to the client; returns its id and where the answer arrives. The sender
    /// is dropped (the receiver sees an error) when the answer is [`Peer::forget`]-ten.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
    ) -> (i64, oneshot::Receiver<Result<Value, RpcError>>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().insert(id, tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        (id, rx)
    }

    /// Stop waiting for the answer to request `id` (an answer arriving later is ignored).
    pub fn forget(&self, id: i64) {
        self.waiting.lock().remove(&id);
    }

    /// Hand the client's answer to the request it answers; false when no request of the agent
    /// has that id (never sent, already answered or forgotten).
    pub fn deliver(&self, id: &Value, result: Result<Value, RpcError>) -> bool {
        let Some(id) = id.as_i64() else {
            return false;
        };
        let waiting = self.waiting.lock().remove(&id);
        match waiting {
            Some(tx) => {
                let _ = tx.send(result);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Line {
        Line::Text(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn lines_are_bounded() {
        let input = format!("{}\nok\n{}", "x".repeat(100), "y".repeat(7));
        let mut r = tokio::io::BufReader::with_capacity(8, input.as_bytes());
        assert_eq!(
            read_line(&mut r, 10).await.unwrap(),
            Some(Line::TooLong(100, "x".repeat(100).into_bytes()))
        );
        assert_eq!(read_line(&mut r, 10).await.unwrap(), Some(text("ok")));
        assert_eq!(read_line(&mut r, 10).await.unwrap(), Some(text("yyyyyyy")));
        assert_eq!(read_line(&mut r, 10).await.unwrap(), None);
    }

    #[test]
    fn messages_are_classified() {
        let req = parse_line(&text(
            r#"{"jsonrpc":"2.0","id":3,"method":"x","params":{}}"#,
        ));
        assert!(matches!(req, Some(Incoming::Request { id, .. }) if id == json!(3)));
        let note = parse_line(&text(r#"{"jsonrpc":"2.0","method":"x"}"#));
        assert!(matches!(
            note,
            Some(Incoming::Notification {
                params: Value::Null,
                ..
            })
        ));
        let resp = parse_line(&text(
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}}"#,
        ));
        assert!(matches!(
            resp,
            Some(Incoming::Response { result: Err(_), .. })
        ));
        assert_eq!(parse_line(&text("   ")), None);
        let cases = [
            ("{nope", PARSE_ERROR, Value::Null),
            ("[1,2]", INVALID_REQUEST, Value::Null),
            (r#"{"id":1,"method":"x"}"#, INVALID_REQUEST, json!(1)),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
                INVALID_REQUEST,
                json!(1),
            ),
            (r#"{"jsonrpc":"2.0","id":2}"#, INVALID_REQUEST, json!(2)),
            (r#"{"jsonrpc":"2.0"}"#, INVALID_REQUEST, Value::Null),
        ];
        for (line, code, want_id) in cases {
            match parse_line(&text(line)) {
                Some(Incoming::Invalid { id, error }) => {
                    assert_eq!((error.code, id), (code, want_id), "{line}")
                }
                other => panic!("{line}: {other:?}"),
            }
        }
        // An overlong request is answered under its id when the id came first.
        let head = br#"{"jsonrpc":"2.0","id":"big","method":"session/prompt","params":{"x":"AAAA"#;
        match parse_line(&Line::TooLong(1 << 30, head.to_vec())) {
            Some(Incoming::Invalid { id, error }) => {
                assert_eq!((id, error.code), (json!("big"), INVALID_REQUEST))
            }
            other => panic!("{other:?}"),
        }
        let late = br#"{"jsonrpc":"2.0","method":"session/prompt","params":{"x":"AAAA"#;
        match parse_line(&Line::TooLong(1 << 30, late.to_vec())) {
            Some(Incoming::Invalid { id, error }) => {
                assert_eq!((id, error.code), (Value::Null, PARSE_ERROR))
            }
            other => panic!("{other:?}"),
        }
        let object_id = br#"{"id":{"a":1},"params":"#;
        assert!(matches!(
            parse_line(&Line::TooLong(1 << 30, object_id.to_vec())),
            Some(Incoming::Invalid {
                id: Value::Null,
                ..
            })
        ));
        let bad_utf8 = parse_line(&Line::Text(vec![b'{', 0xff, b'}']));
        assert!(
            matches!(bad_utf8, Some(Incoming::Invalid { error, .. }) if error.code == PARSE_ERROR)
        );
    }
}
