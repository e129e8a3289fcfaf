//! The bytes of a request body being written: constant pieces (keys, punctuation) pushed as the
//! bytes they are, strings escaped a word at a time, values of any other shape through
//! serde_json.
//!
//! serde_json's serializer escapes every key, constant or not, byte by byte through a table,
//! and writes the punctuation around it a byte at a time: for a fresh openai turn's two small
//! bodies that was most of the 16 k instructions they cost. The escaping here is serde_json's,
//! byte for byte (the body tests compare both renderings).

use serde::Serialize;

use super::RequestBody;

/// A fresh turn's bodies are a few hundred bytes: 1 KiB spares the reallocations (and copies)
/// of growing from `serde_json::to_vec`'s 128 bytes and stays within glibc's per-thread cache
/// (requests of up to 1,024 bytes); 2 KiB went through `_int_malloc` every time and cost more
/// than the copies it spared.
const BODY_START_CAPACITY: usize = 1024;

/// A body being written.
pub(crate) struct JsonBytes(Vec<u8>);

impl JsonBytes {
    /// An empty body.
    pub fn new() -> JsonBytes {
        JsonBytes(Vec::with_capacity(BODY_START_CAPACITY))
    }

    /// The bytes written.
    pub fn into_body(self) -> RequestBody {
        RequestBody::from(self.0)
    }

    /// Constant JSON text (keys, punctuation, literals), as it is.
    #[inline(always)]
    pub fn raw(&mut self, text: &str) {
        self.put(text.as_bytes());
    }

    /// Bytes that are JSON already (a value copied from another body).
    pub fn put_bytes(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    /// `text` as a JSON string.
    pub fn string(&mut self, text: &str) {
        self.0.push(b'"');
        self.contents(text);
        self.0.push(b'"');
    }

    /// `text` escaped as the inside of a JSON string (the quotes are the caller's), as
    /// serde_json escapes it: `"`, `\` and the control characters below U+0020 (with the short
    /// forms `\b \t \n \f \r`, else `\u00xx` in lowercase hex); nothing else.
    pub fn contents(&mut self, text: &str) {
        let mut rest = text.as_bytes();
        loop {
            let at = first_escape(rest);
            self.0.extend_from_slice(&rest[..at]);
            let Some(&byte) = rest.get(at) else {
                return;
            };
            self.escape(byte);
            rest = &rest[at + 1..];
        }
    }

    fn escape(&mut self, byte: u8) {
        let short: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let hex = [
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(byte >> 4)],
                    HEX[usize::from(byte & 0xf)],
                ];
                self.0.extend_from_slice(&hex);
                return;
            }
        };
        self.0.extend_from_slice(short);
    }

    /// Any serializable value (a JSON Schema, a number), as serde_json writes it.
    pub fn value<T: Serialize + ?Sized>(&mut self, value: &T) {
        // Cannot fail: writing to memory cannot fail, and a `Value` or a struct of plain fields always
        // serializes (no map with keys that are not strings).
        value
            .serialize(&mut serde_json::Serializer::new(&mut *self))
            .expect("request bodies serialize");
    }

    /// `Vec<u8>`'s own `io::Write` is not inlined into serde_json's writes, and most of those
    /// are one to a few bytes (`{`, `"`, `:`, `,`): each became a call to `extend_from_slice`
    /// and one to `memcpy`. Inlined, a constant piece is a store.
    #[inline(always)]
    fn put(&mut self, buf: &[u8]) {
        if buf.len() <= 4 {
            for &b in buf {
                self.0.push(b);
            }
        } else {
            self.0.extend_from_slice(buf);
        }
    }
}

impl std::io::Write for JsonBytes {
    #[inline(always)]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.put(buf);
        Ok(buf.len())
    }

    #[inline(always)]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.put(buf);
        Ok(())
    }

    #[inline(always)]
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether JSON escapes `byte` inside a string.
#[inline(always)]
fn escaped(byte: u8) -> bool {
    byte < 0x20 || byte == b'"' || byte == b'\\'
}

/// The index of the first byte of `bytes` that JSON escapes, or its length. Eight bytes at a
/// time (the test of serde_json's reader): a byte below 0x20, `"` or `\` sets the high bit of
/// its lane; a borrow can mark lanes above a true match, never below, so the lowest mark is
/// the first match.
#[inline]
fn first_escape(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        // Cannot fail: `chunks_exact(8)` yields eight bytes at a time.
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let control = w.wrapping_sub(ONES * 0x20) & !w;
        let quote = w ^ (ONES * u64::from(b'"'));
        let quote = quote.wrapping_sub(ONES) & !quote;
        let backslash = w ^ (ONES * u64::from(b'\\'));
        let backslash = backslash.wrapping_sub(ONES) & !backslash;
        let marks = (control | quote | backslash) & HIGH;
        if marks != 0 {
            return at + (marks.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let tail = words.remainder();
    at + tail.iter().position(|&b| escaped(b)).unwrap_or(tail.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(text: &str) -> Vec<u8> {
        let mut out = JsonBytes::new();
        out.string(text);
        out.0
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        // Every byte value that can stand alone in UTF-8, at every position of an eight-byte
        // word, beside multi-byte characters and bytes that only look close to the escapes.
        let mut cases: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        cases.extend(
            [
                "",
                "plain ascii text, longer than one word",
                "quote \" backslash \\ newline \n tab \t nul \u{0} é 😀 </script> \u{2028}",
                "\u{7f}\u{80}\u{ff}\u{100}ÿ!#[]^_`{|}~",
                "\u{1f}\u{1}\u{8}\u{c}\r\u{b}",
                "\"\"\"\"\"\"\"\"\"",
                "\\\\\\\\\\\\\\\\\\\\",
                "ÀÁÂ\u{a0}¡¢£¤¥¦§¨©ª«¬\u{ad}®¯°±²³´µ¶·¸¹º»¼½¾¿",
            ]
            .map(String::from),
        );
        for special in ["\"", "\\", "\n", "\u{1}", "\u{1f}", " ", "é"] {
            for at in 0..17 {
                let mut s = "a".repeat(at);
                s.push_str(special);
                s.push_str(&"b".repeat(20 - at));
                cases.push(s);
            }
        }
        for text in &cases {
            let want = serde_json::to_vec(text).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&ours(text)),
                String::from_utf8_lossy(&want),
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_first_escape_is_found_in_any_lane() {
        for len in 0..40 {
            for at in 0..len {
                for special in [b'"', b'\\', 0, 0x1f] {
                    // Bytes just above each special one and a high byte, never escaped.
                    let mut bytes: Vec<u8> =
                        (0..len).map(|i| [b'#', b']', b' ', 0xc3][i % 4]).collect();
                    bytes[at] = special;
                    assert_eq!(first_escape(&bytes), at, "{bytes:?}");
                }
            }
            let clean: Vec<u8> = (0..len).map(|i| [b'#', b']', b' ', 0xff][i % 4]).collect();
            assert_eq!(first_escape(&clean), len);
        }
    }
}
