//! Reading a model server's response body within its bounds: the idle timeout between meaningful
//! pieces (keep-alives do not count), a cap on every buffer, and the rule that a failure is
//! retryable only while nothing but keep-alives had arrived.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::time::{Instant, Sleep};

use super::ndjson::Lines;
use super::sse::{human, Caps, Decoder, SseEvent};
use super::Failure;

/// The longest non-streamed answer accepted (a server that ignores `stream: true`, a model list).
pub(crate) const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;
/// How much of an error body is read (the message keeps less).
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// What one decoded piece of an answer meant to the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// A keep-alive: it does not restart the idle timer.
    KeepAlive,
    /// Part of the answer.
    Data,
    /// The answer's terminal marker: stop reading.
    Done,
}

/// Why reading a body stopped early.
pub(crate) enum Interrupt {
    /// Nothing arrived within the idle timeout.
    Idle,
    /// The connection failed (the reason, without URL).
    Broken(String),
}

/// A model server's response and the timer that bounded its request. The body's reads move that
/// same timer on to their idle deadlines (with the default timeouts always later, an atomic store
/// in tokio): one entry in tokio's timer wheel per request, where a `timeout` around the request
/// and a second timer for the body each registered an entry and took it out again under the
/// driver's lock.
pub(crate) struct Answer {
    /// The response: status and headers read, the body not yet.
    pub resp: reqwest::Response,
    timer: Pin<Box<Sleep>>,
}

impl Answer {
    /// A response and the (possibly elapsed) timer of its request.
    pub fn new(resp: reqwest::Response, timer: Pin<Box<Sleep>>) -> Answer {
        Answer { resp, timer }
    }
}

/// The chunks of a response body, each awaited until a deadline.
pub(crate) struct Chunks {
    stream: BoxStream<'static, reqwest::Result<Bytes>>,
    /// One idle timer for the whole body, moved to each read's deadline: a later deadline is an
    /// atomic store in tokio (`extend_expiration`), where a `timeout_at` per read registered a
    /// new entry in the timer wheel and removed it again under its lock.
    idle: Pin<Box<Sleep>>,
}

impl Chunks {
    pub fn new(answer: Answer) -> Chunks {
        Chunks {
            stream: answer.resp.bytes_stream().boxed(),
            idle: answer.timer,
        }
    }

    /// The next non-empty chunk, `None` at the end of the body.
    pub async fn next_by(&mut self, deadline: Instant) -> Result<Option<Bytes>, Interrupt> {
        // Also when the request's timer had elapsed: a reset re-arms it.
        if self.idle.deadline() != deadline {
            self.idle.as_mut().reset(deadline);
        }
        loop {
            // The body first, as `timeout_at` did: a chunk already there wins over a deadline
            // that has just passed.
            let next = tokio::select! {
                biased;
                next = self.stream.next() => next,
                () = &mut self.idle => return Err(Interrupt::Idle),
            };
            match next {
                None => return Ok(None),
                Some(Err(e)) => {
                    return Err(Interrupt::Broken(crate::error::chain(&e.without_url())))
                }
                Some(Ok(chunk)) if chunk.is_empty() => continue,
                Some(Ok(chunk)) => return Ok(Some(chunk)),
            }
        }
    }
}

/// The failure of an interrupted answer: retryable while it had not begun (`got_data` false),
/// fatal once it had (never duplicated deltas, never a silently truncated answer).
pub(crate) fn interrupted(got_data: bool, why: Interrupt, idle: Duration) -> Failure {
    let what = match why {
        Interrupt::Idle => format!(
            "nothing arrived for {} ms (idle_timeout_ms)",
            idle.as_millis()
        ),
        Interrupt::Broken(reason) => reason,
    };
    if got_data {
        Failure::Fatal(format!("the model's answer broke off: {what}"))
    } else {
        Failure::BeforeData {
            status: None,
            message: format!("the model server's answer did not begin: {what}"),
            retry_after: None,
            retryable: true,
        }
    }
}

fn cap_failure(what: impl std::fmt::Display) -> Failure {
    Failure::Fatal(format!("the model server's answer was refused: {what}"))
}

/// Read an SSE body, handing each event to `on_event` until it says [`Progress::Done`] or the
/// body ends. Keep-alive comments never reach `on_event`; events it calls keep-alives do not
/// restart the idle timer either.
pub(crate) async fn read_sse(
    answer: Answer,
    idle: Duration,
    mut on_event: impl FnMut(SseEvent) -> Result<Progress, Failure>,
) -> Result<(), Failure> {
    let mut chunks = Chunks::new(answer);
    let mut decoder = Decoder::new(Caps::MODEL);
    let mut deadline = Instant::now() + idle;
    loop {
        while let Some(event) = decoder.next_event() {
            match on_event(event)? {
                Progress::Done => return Ok(()),
                Progress::Data => deadline = Instant::now() + idle,
                Progress::KeepAlive => {}
            }
        }
        match chunks.next_by(deadline).await {
            Ok(Some(chunk)) => decoder.feed(&chunk).map_err(cap_failure)?,
            Ok(None) => return Ok(()),
            Err(why) => return Err(interrupted(decoder.got_data(), why, idle)),
        }
    }
}

/// Read an NDJSON body, handing each non-blank line to `on_line` until it says
/// [`Progress::Done`] or the body ends (a last line without newline included).
pub(crate) async fn read_lines(
    answer: Answer,
    idle: Duration,
    mut on_line: impl FnMut(&str) -> Result<Progress, Failure>,
) -> Result<(), Failure> {
    let mut chunks = Chunks::new(answer);
    let mut lines = Lines::for_model();
    let mut deadline = Instant::now() + idle;
    loop {
        while let Some(line) = lines.next_line().map_err(cap_failure)? {
            match on_line(&line)? {
                Progress::Done => return Ok(()),
                Progress::Data => deadline = Instant::now() + idle,
                Progress::KeepAlive => {}
            }
        }
        match chunks.next_by(deadline).await {
            Ok(Some(chunk)) => lines.feed(&chunk).map_err(cap_failure)?,
            Ok(None) => {
                if let Some(line) = lines.last_line().map_err(cap_failure)? {
                    on_line(&line)?;
                }
                return Ok(());
            }
            Err(why) => return Err(interrupted(lines.got_data(), why, idle)),
        }
    }
}

/// A whole body of at most `cap` bytes. Cap hits name the cap.
pub(crate) async fn read_whole(
    answer: Answer,
    cap: usize,
    idle: Duration,
) -> Result<Vec<u8>, Failure> {
    if answer.resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(cap_failure(too_long(cap)));
    }
    let mut chunks = Chunks::new(answer);
    let mut body = Vec::new();
    loop {
        match chunks.next_by(Instant::now() + idle).await {
            Ok(Some(chunk)) => {
                if chunk.len() > cap - body.len() {
                    return Err(cap_failure(too_long(cap)));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(why) => return Err(interrupted(!body.is_empty(), why, idle)),
        }
    }
}

/// The message of a body over its cap.
pub(crate) fn too_long(cap: usize) -> String {
    format!(
        "the body is longer than the cap of {} ({cap} bytes)",
        human(cap)
    )
}

/// The first `cap` bytes of a body (an error body: its start is what matters), reading no
/// further; a stall or a break ends it with what arrived.
pub(crate) async fn read_prefix(answer: Answer, cap: usize, idle: Duration) -> Vec<u8> {
    let mut chunks = Chunks::new(answer);
    let mut body = Vec::new();
    while body.len() < cap {
        match chunks.next_by(Instant::now() + idle).await {
            Ok(Some(chunk)) => {
                let n = chunk.len().min(cap - body.len());
                body.extend_from_slice(&chunk[..n]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    body
}
