//! Server-sent events, decoded with byte caps: the framing of the openai and anthropic streams and
//! of MCP's streamable HTTP answers.
//!
//! Hand-written rather than a crate: `eventsource-stream` rescans its whole buffer on every chunk
//! (quadratic on one long line) and buffers without limit; `sse-stream` is linear but also
//! unbounded and fails on lines the SSE spec says to ignore (llama.cpp's server writes `error:`
//! lines); rmcp's bounded wrapper is private to rmcp. The algorithm is the WHATWG one
//! (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>):
//! each byte is looked at once, a line is copied only when it spans chunks, and every buffer is
//! capped.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

/// One MiB.
const MIB: usize = 1024 * 1024;

/// The longest SSE event (and line) accepted from a model server: a whole tool call's arguments
/// may come in one event, so this is generous (rmcp's own default is the same).
pub(crate) const MAX_EVENT_BYTES: usize = 16 * MIB;
/// The longest streamed answer accepted from a model server, in bytes on the wire. A 128k-token
/// answer is about 25 MiB of openai chunks.
pub(crate) const MAX_STREAM_BYTES: usize = 256 * MIB;

/// The caps of one decoder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    /// Bytes of one event (the sum of its lines) and of one line, comments included.
    pub event: usize,
    /// Bytes of the whole body.
    pub body: usize,
}

impl Caps {
    /// The caps of model streams.
    pub const MODEL: Caps = Caps {
        event: MAX_EVENT_BYTES,
        body: MAX_STREAM_BYTES,
    };
}

/// One dispatched event. Unlike a browser's EventSource, an event without `data` is dispatched
/// too (MCP servers send `id`-only priming events for resumption); the model styles skip those.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event` field (the last one wins).
    pub event: Option<String>,
    /// The `data` fields joined with `\n`; `None` when there was none.
    pub data: Option<String>,
    /// The `id` field.
    pub id: Option<String>,
    /// The `retry` field, in milliseconds.
    pub retry: Option<u64>,
}

/// A cap was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CapError {
    /// One event (or line) was longer than the cap.
    Event(usize),
    /// The whole body was longer than the cap.
    Body(usize),
}

impl fmt::Display for CapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapError::Event(cap) => write!(
                f,
                "an SSE event is longer than the cap of {} ({cap} bytes per event)",
                human(*cap)
            ),
            CapError::Body(cap) => write!(
                f,
                "the stream is longer than the cap of {} ({cap} bytes per answer)",
                human(*cap)
            ),
        }
    }
}

impl std::error::Error for CapError {}

/// A byte count for messages: `16 MiB`, `64 KiB`, `300 bytes`.
pub(crate) fn human(n: usize) -> String {
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// The event being assembled.
#[derive(Default)]
struct Pending {
    event: Option<String>,
    data: Option<String>,
    id: Option<String>,
    retry: Option<u64>,
    /// Whether any field was set (an event with only comments is not dispatched).
    any: bool,
}

/// An incremental SSE decoder: feed it the body's chunks, take the events it completed.
pub(crate) struct Decoder {
    caps: Caps,
    /// The unfinished line, when it spans chunks.
    line: Vec<u8>,
    /// Whether `line` holds the start of a line already (it may be empty while a line started in
    /// an earlier chunk was a zero-length piece).
    in_line: bool,
    /// A CR ended the last chunk: a LF at the start of the next one belongs to it.
    skip_lf: bool,
    /// No line completed yet (a byte-order mark is stripped from the first line).
    first_line: bool,
    pending: Pending,
    /// Bytes of the event being assembled (its field lines, each counted with its end).
    event_bytes: usize,
    total: usize,
    /// Set once a byte of anything but a comment line arrived.
    got_data: bool,
    /// Completed events not yet taken.
    ready: VecDeque<SseEvent>,
}

impl Decoder {
    pub fn new(caps: Caps) -> Decoder {
        Decoder {
            caps,
            line: Vec::new(),
            in_line: false,
            skip_lf: false,
            first_line: true,
            pending: Pending::default(),
            event_bytes: 0,
            total: 0,
            got_data: false,
            ready: VecDeque::new(),
        }
    }

    /// Whether a byte of anything but keep-alive comments (and blank lines) arrived: from then on
    /// the answer has begun and a failure is no longer retried.
    pub fn got_data(&self) -> bool {
        self.got_data
    }

    /// The next completed event, if any.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Feed one chunk of the body. After an error the decoder must not be fed again.
    pub fn feed(&mut self, mut chunk: &[u8]) -> Result<(), CapError> {
        self.total = self.total.saturating_add(chunk.len());
        if self.total > self.caps.body {
            return Err(CapError::Body(self.caps.body));
        }
        if chunk.is_empty() {
            return Ok(());
        }
        if self.skip_lf {
            self.skip_lf = false;
            if chunk.first() == Some(&b'\n') {
                chunk = &chunk[1..];
            }
        }
        while !chunk.is_empty() {
            let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) else {
                self.partial(chunk)?;
                return Ok(());
            };
            let piece = &chunk[..end];
            if self.in_line {
                self.partial(piece)?;
                let line = std::mem::take(&mut self.line);
                self.in_line = false;
                self.complete(&line)?;
                // Keep the allocation for the next long line.
                self.line = line;
                self.line.clear();
            } else {
                self.start(piece);
                self.check(piece.len())?;
                self.complete(piece)?;
            }
            let cr = chunk[end] == b'\r';
            chunk = &chunk[end + 1..];
            if cr {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    None => self.skip_lf = true,
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    /// Part of a line that goes on in a later chunk.
    fn partial(&mut self, piece: &[u8]) -> Result<(), CapError> {
        if !self.in_line {
            self.start(piece);
            self.in_line = true;
        }
        self.check(self.line.len() + piece.len())?;
        self.line.extend_from_slice(piece);
        Ok(())
    }

    /// The first bytes of a line: anything but a comment means the answer has begun.
    fn start(&mut self, piece: &[u8]) {
        if !self.got_data && piece.first().is_some_and(|b| *b != b':') {
            self.got_data = true;
        }
    }

    /// A line of `len` bytes (so far) must fit the event cap with the event's earlier lines.
    fn check(&self, len: usize) -> Result<(), CapError> {
        if self.event_bytes.saturating_add(len) > self.caps.event {
            Err(CapError::Event(self.caps.event))
        } else {
            Ok(())
        }
    }

    fn complete(&mut self, mut line: &[u8]) -> Result<(), CapError> {
        if self.first_line {
            self.first_line = false;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch();
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        // A field line counts towards its event (comments do not: they are not kept).
        self.event_bytes = self.event_bytes.saturating_add(line.len() + 1);
        self.check(0)?;
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let kept = matches!(name, b"data" | b"event" | b"id");
        let text = if kept {
            self.decoded(value)?
        } else {
            Cow::Borrowed("")
        };
        let p = &mut self.pending;
        match name {
            b"data" => {
                p.any = true;
                match &mut p.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(&text);
                    }
                    None => p.data = Some(text.into_owned()),
                }
            }
            b"event" => {
                p.any = true;
                p.event = Some(text.into_owned());
            }
            b"id" if !value.contains(&0) => {
                p.any = true;
                p.id = Some(text.into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("").parse() {
                    p.any = true;
                    p.retry = Some(ms);
                }
            }
            // The spec: any other field is ignored.
            _ => {}
        }
        Ok(())
    }

    /// A field's value as text. Invalid UTF-8 becomes U+FFFD, three bytes for each bad byte, so
    /// the growth counts towards the event too: the cap bounds what is kept, not only what
    /// arrived (an event of bad bytes within the cap would otherwise hold three times it).
    fn decoded<'a>(&mut self, value: &'a [u8]) -> Result<Cow<'a, str>, CapError> {
        // `from_utf8` first: its ASCII fast path checks a word at a time, where
        // `from_utf8_lossy` walks the bytes one by one even when they are all valid (a tenth of
        // the client's instructions over the floor on a streamed turn).
        if let Ok(text) = std::str::from_utf8(value) {
            return Ok(Cow::Borrowed(text));
        }
        let text = String::from_utf8_lossy(value);
        if let Cow::Owned(grown) = &text {
            self.event_bytes = self
                .event_bytes
                .saturating_add(grown.len().saturating_sub(value.len()));
            self.check(0)?;
        }
        Ok(text)
    }

    fn dispatch(&mut self) {
        self.event_bytes = 0;
        let p = std::mem::take(&mut self.pending);
        if p.any {
            self.ready.push_back(SseEvent {
                event: p.event,
                data: p.data,
                id: p.id,
                retry: p.retry,
            });
        }
    }
}

/// Feed `data` through a decoder in chunks whose sizes come from the data itself (for fuzzing:
/// any input must end in events or a cap error, never a panic). Returns the events decoded.
pub(crate) fn fuzz_decode(data: &[u8]) -> usize {
    let Some((&split, rest)) = data.split_first() else {
        return 0;
    };
    let step = usize::from(split % 64) + 1;
    let mut decoder = Decoder::new(Caps {
        event: 4096,
        body: 1 << 20,
    });
    let mut events = 0;
    for chunk in rest.chunks(step) {
        if decoder.feed(chunk).is_err() {
            break;
        }
        while let Some(e) = decoder.next_event() {
            assert!(e.data.as_ref().is_none_or(|d| d.len() <= 4096));
            events += 1;
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(event: usize, body: usize) -> Caps {
        Caps { event, body }
    }

    /// Decode `chunks` in order; the events, or the first error.
    fn decode(chunks: &[&[u8]], caps: Caps) -> Result<Vec<SseEvent>, CapError> {
        let mut d = Decoder::new(caps);
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c)?;
            while let Some(e) = d.next_event() {
                out.push(e);
            }
        }
        Ok(out)
    }

    fn data(e: &SseEvent) -> &str {
        e.data.as_deref().unwrap_or("<none>")
    }

    #[test]
    fn fields_events_and_line_ends() {
        let body =
            b"\xEF\xBB\xBFevent: a\ndata: 1\ndata:2\r\n\r\n: ping\n\ndata\rid: 7\nretry: 30\n\n\
                     unknown: x\nerror: {\"bad\": 1}\nevent: x\nevent: y\ndata: z\n\n";
        let events = decode(&[body], Caps::MODEL).unwrap();
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(events[0].event.as_deref(), Some("a"));
        assert_eq!(data(&events[0]), "1\n2");
        // `data` alone is a data field with an empty value.
        assert_eq!(data(&events[1]), "");
        assert_eq!(events[1].id.as_deref(), Some("7"));
        assert_eq!(events[1].retry, Some(30));
        // Unknown fields are ignored, the last `event` wins.
        assert_eq!(events[2].event.as_deref(), Some("y"));
        assert_eq!(data(&events[2]), "z");
    }

    #[test]
    fn every_split_of_a_body_decodes_the_same() {
        let body: &[u8] = b"event: message_start\r\ndata: {\"a\": \"\xC3\xA9\"}\r\n\r\n: keep\r\n\r\ndata: b\rdata: c\n\n";
        let whole = decode(&[body], Caps::MODEL).unwrap();
        assert_eq!(whole.len(), 2);
        for i in 0..body.len() {
            for j in i..body.len() {
                let parts = [&body[..i], &body[i..j], &body[j..]];
                assert_eq!(decode(&parts, Caps::MODEL).unwrap(), whole, "split {i}/{j}");
            }
        }
    }

    #[test]
    fn keep_alive_comments_are_not_data() {
        let mut d = Decoder::new(Caps::MODEL);
        d.feed(b": ping\n\n:\n\r\n").unwrap();
        assert!(!d.got_data());
        assert!(d.next_event().is_none());
        d.feed(b"da").unwrap();
        assert!(d.got_data());
    }

    /// Found by the sse fuzz target: invalid UTF-8 in a field becomes U+FFFD, three bytes per
    /// bad byte, so an event of bad bytes within the byte cap held up to three times the cap
    /// (16 MiB on the wire, 48 MiB kept).
    #[test]
    fn bad_bytes_count_as_the_text_they_become() {
        let bad = [b"data: ".as_slice(), &[0xff; 60], b"\n\n"].concat();
        assert_eq!(
            decode(&[&bad], caps(100, 10_000)),
            Err(CapError::Event(100))
        );
        for field in ["event", "id"] {
            let bad = [field.as_bytes(), b": ", &[0xff; 60], b"\ndata: x\n\n"].concat();
            assert_eq!(
                decode(&[&bad], caps(100, 10_000)),
                Err(CapError::Event(100)),
                "{field}"
            );
        }
        // Within the cap once decoded: kept, each bad byte replaced.
        let fits = [b"data: ".as_slice(), &[0xff; 20], b"\n\n"].concat();
        let events = decode(&[&fits], caps(100, 10_000)).unwrap();
        assert_eq!(data(&events[0]), "\u{fffd}".repeat(20));
        // The fuzz input's shape, through the fuzz entry point (whose cap is 4096 and which
        // asserts that no event's data passes it): 2000 bad bytes in 30-byte chunks.
        let input = [b"\x1d".as_slice(), b"data: ", &[0x80; 2000], b"\n\n"].concat();
        assert_eq!(fuzz_decode(&input), 0);
    }

    #[test]
    fn caps_on_a_line_an_event_and_the_body() {
        // One line over the cap, arriving in many small chunks: an error once the cap is passed,
        // without waiting for the line's end.
        let mut d = Decoder::new(caps(100, 10_000));
        let mut err = None;
        for _ in 0..50 {
            if let Err(e) = d.feed(b"data: xxxxxxxx") {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(CapError::Event(100)));
        // A long comment line is capped too (it is buffered until its end).
        let long_comment = [b":".as_slice(), &[b'x'; 200]].concat();
        assert_eq!(
            decode(&[&long_comment], caps(100, 10_000)),
            Err(CapError::Event(100))
        );
        // Many short lines of one event add up.
        let many = "data: 0123456789\n".repeat(10);
        assert_eq!(
            decode(&[many.as_bytes()], caps(100, 10_000)),
            Err(CapError::Event(100))
        );
        // ... but the count starts again with every event, and comments do not count.
        let events = "data: 0123456789\n: a comment that is long enough\n\n".repeat(50);
        assert_eq!(
            decode(&[events.as_bytes()], caps(100, 10_000))
                .unwrap()
                .len(),
            50
        );
        // The whole body.
        assert_eq!(
            decode(&[events.as_bytes()], caps(100, 1_000)),
            Err(CapError::Body(1_000))
        );
        assert!(CapError::Event(16 * MIB).to_string().contains("16 MiB"));
    }

    /// Counts the allocations made on the current thread while `counting` is set: the lib's
    /// test binary allocates through it (a thin layer over the system allocator).
    mod counting {
        use std::alloc::{GlobalAlloc, Layout, System};
        use std::cell::Cell;

        pub struct Counting;

        thread_local! {
            static ON: Cell<bool> = const { Cell::new(false) };
            static CALLS: Cell<usize> = const { Cell::new(0) };
            static BYTES: Cell<usize> = const { Cell::new(0) };
        }

        fn note(size: usize) {
            // `try_with`: a thread being torn down has no counters, and allocates uncounted.
            if ON.try_with(Cell::get).unwrap_or(false) {
                let _ = CALLS.try_with(|c| c.set(c.get() + 1));
                let _ = BYTES.try_with(|b| b.set(b.get() + size));
            }
        }

        // SAFETY: every call goes straight to `System` with the caller's arguments.
        unsafe impl GlobalAlloc for Counting {
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                note(layout.size());
                unsafe { System.alloc(layout) }
            }
            unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
                unsafe { System.dealloc(ptr, layout) }
            }
            unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
                note(new_size);
                unsafe { System.realloc(ptr, layout, new_size) }
            }
        }

        #[global_allocator]
        static COUNTING: Counting = Counting;

        /// What `f` allocated on this thread: (allocations and reallocations, bytes asked for).
        pub fn allocations<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
            CALLS.with(|c| c.set(0));
            BYTES.with(|b| b.set(0));
            ON.with(|on| on.set(true));
            let out = f();
            ON.with(|on| on.set(false));
            (out, CALLS.with(Cell::get), BYTES.with(Cell::get))
        }
    }

    #[test]
    fn a_long_line_in_small_chunks_is_copied_once() {
        // A line spanning chunks is appended to one buffer that grows geometrically (its
        // allocations sum to under twice its final capacity, itself under twice the line), then
        // copied once into the event's text: a few dozen allocations, under six times the line
        // in all. A
        // decoder that copied its buffer for each chunk (or rebuilt it) would make one per
        // chunk and ask for the square of the line's size.
        const LINE: usize = 256 * 1024;
        let mut d = Decoder::new(Caps::MODEL);
        let ((), calls, bytes) = counting::allocations(|| {
            d.feed(b"data: ").unwrap();
            for _ in 0..LINE {
                d.feed(b"x").unwrap();
            }
            d.feed(b"\n\n").unwrap();
        });
        assert_eq!(d.next_event().unwrap().data.unwrap().len(), LINE);
        assert!(
            calls <= 40,
            "{calls} allocations for one line of {LINE} bytes"
        );
        assert!(
            bytes <= 6 * LINE,
            "{bytes} bytes allocated for one line of {LINE} bytes"
        );
    }

    #[test]
    fn fuzz_entry_point_survives_odd_input() {
        assert_eq!(fuzz_decode(b""), 0);
        assert!(fuzz_decode(b"\x03data: a\n\ndata: b\r\r") >= 1);
        let noise: Vec<u8> = (0..20_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        fuzz_decode(&noise);
    }
}
