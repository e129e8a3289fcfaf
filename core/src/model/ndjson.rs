//! Newline-delimited JSON (ollama's stream), decoded with byte caps. The framing is tokio-util's
//! `LinesCodec`: it remembers how far it searched, so a long line arriving in many chunks is
//! scanned once, and it stops at a maximum line length.

use bytes::BytesMut;
use tokio_util::codec::{Decoder as _, LinesCodec, LinesCodecError};

use super::sse::{human, MAX_EVENT_BYTES, MAX_STREAM_BYTES};

/// Why a stream could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineError {
    /// One line was longer than the cap.
    Line(usize),
    /// The whole body was longer than the cap.
    Body(usize),
    /// A line is not UTF-8.
    Utf8,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Line(cap) => write!(
                f,
                "a stream line is longer than the cap of {} ({cap} bytes per line)",
                human(*cap)
            ),
            LineError::Body(cap) => write!(
                f,
                "the stream is longer than the cap of {} ({cap} bytes per answer)",
                human(*cap)
            ),
            LineError::Utf8 => f.write_str("a stream line is not valid UTF-8"),
        }
    }
}

/// An incremental NDJSON decoder: feed chunks, take complete non-blank lines.
pub(crate) struct Lines {
    codec: LinesCodec,
    buf: BytesMut,
    total: usize,
    body_cap: usize,
    line_cap: usize,
    got_data: bool,
}

impl Lines {
    /// The caps of model streams.
    pub fn for_model() -> Lines {
        Lines::with_caps(MAX_EVENT_BYTES, MAX_STREAM_BYTES)
    }

    pub fn with_caps(line_cap: usize, body_cap: usize) -> Lines {
        Lines {
            codec: LinesCodec::new_with_max_length(line_cap),
            buf: BytesMut::new(),
            total: 0,
            body_cap,
            line_cap,
            got_data: false,
        }
    }

    /// Whether anything but whitespace arrived (the answer has begun).
    pub fn got_data(&self) -> bool {
        self.got_data
    }

    /// Feed one chunk of the body.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), LineError> {
        self.total = self.total.saturating_add(chunk.len());
        if self.total > self.body_cap {
            return Err(LineError::Body(self.body_cap));
        }
        if !self.got_data {
            self.got_data = chunk.iter().any(|b| !b.is_ascii_whitespace());
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// The next complete line that is not blank (trimmed), if any.
    pub fn next_line(&mut self) -> Result<Option<String>, LineError> {
        loop {
            match self
                .codec
                .decode(&mut self.buf)
                .map_err(|e| self.error(e))?
            {
                Some(line) if line.trim().is_empty() => continue,
                other => return Ok(other),
            }
        }
    }

    /// At the end of the body: the last line, when it had no newline.
    pub fn last_line(&mut self) -> Result<Option<String>, LineError> {
        loop {
            match self
                .codec
                .decode_eof(&mut self.buf)
                .map_err(|e| self.error(e))?
            {
                Some(line) if line.trim().is_empty() => continue,
                other => return Ok(other),
            }
        }
    }

    fn error(&self, e: LinesCodecError) -> LineError {
        match e {
            LinesCodecError::MaxLineLengthExceeded => LineError::Line(self.line_cap),
            LinesCodecError::Io(_) => LineError::Utf8,
        }
    }
}

/// Feed `data` through a decoder in chunks whose sizes come from the data itself (for fuzzing).
/// Returns the lines decoded.
pub(crate) fn fuzz_decode(data: &[u8]) -> usize {
    let Some((&split, rest)) = data.split_first() else {
        return 0;
    };
    let step = usize::from(split % 64) + 1;
    let mut lines = Lines::with_caps(4096, 1 << 20);
    let mut count = 0;
    for chunk in rest.chunks(step) {
        if lines.feed(chunk).is_err() {
            return count;
        }
        loop {
            match lines.next_line() {
                Ok(Some(line)) => {
                    assert!(line.len() <= 4096);
                    count += 1;
                }
                Ok(None) => break,
                Err(_) => return count,
            }
        }
    }
    if let Ok(Some(_)) = lines.last_line() {
        count += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(lines: &mut Lines) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(l) = lines.next_line().unwrap() {
            out.push(l);
        }
        out
    }

    #[test]
    fn lines_across_chunks_blank_lines_and_the_last_line() {
        let mut l = Lines::for_model();
        l.feed(b"\n  \r\n").unwrap();
        assert!(!l.got_data());
        l.feed(b"{\"a\":").unwrap();
        assert!(l.got_data());
        assert!(all(&mut l).is_empty());
        l.feed(b"1}\r\n{\"b\"").unwrap();
        assert_eq!(all(&mut l), ["{\"a\":1}"]);
        l.feed(b":2}").unwrap();
        assert_eq!(l.last_line().unwrap().as_deref(), Some("{\"b\":2}"));
    }

    #[test]
    fn caps_on_a_line_and_the_body() {
        let mut l = Lines::with_caps(100, 10_000);
        let mut err = None;
        for _ in 0..20 {
            l.feed(&[b'x'; 10]).unwrap();
            if let Err(e) = l.next_line() {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(LineError::Line(100)));
        let mut l = Lines::with_caps(100, 1_000);
        let mut err = None;
        for _ in 0..500 {
            if let Err(e) = l.feed(b"{}\n") {
                err = Some(e);
                break;
            }
            all(&mut l);
        }
        assert_eq!(err, Some(LineError::Body(1_000)));
        let mut l = Lines::for_model();
        l.feed(b"\xff\xfe\n").unwrap();
        assert_eq!(l.next_line(), Err(LineError::Utf8));
        assert!(LineError::Line(16 << 20).to_string().contains("16 MiB"));
    }

    #[test]
    fn fuzz_entry_point_survives_odd_input() {
        assert_eq!(fuzz_decode(b""), 0);
        assert_eq!(fuzz_decode(b"\x01{}\n\n{}"), 2);
        let noise: Vec<u8> = (0..20_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        fuzz_decode(&noise);
    }
}
