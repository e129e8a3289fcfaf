//! `read`: a file's lines with numbers, a window at a time.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::load::{load_text, MAX_LOAD_BYTES};
use super::notebook::{render, Notebook};
use super::path::RootDir;
use super::{cut_chars, opt_usize, str_arg};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use crate::transcript::{sniff_media_type, Image, MAX_IMAGE_BYTES};

/// Lines returned when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 2000;
/// Bytes at the start of a file looked at for a NUL byte, the sign of a binary file.
const SNIFF_BYTES: usize = 8192;
/// Bytes read in all before the count of lines after the window stops (the metadata then says
/// `totalAtLeast` instead of `total`): 256 MiB. The window itself is always read.
pub const MAX_COUNT_BYTES: u64 = 256 << 20;
/// Bytes read at a time.
const CHUNK: usize = 64 << 10;

pub(crate) struct Read;

#[async_trait]
impl Tool for Read {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "read",
            "Read a text file. Returns its lines numbered from 1, like `cat -n`. By default up to \
             2000 lines from the start; use `offset` (1-based line to start at) and `limit` to read \
             a window of a long file. Lines longer than 2000 characters are cut. A PNG, JPEG, GIF or \
             WebP image (up to 3.75 MiB) is returned as the image itself; other binary files are \
             refused. Jupyter notebooks (.ipynb) are shown as cells with their ids and outputs \
             (there `offset` and `limit` count cells).",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory or absolute inside it."},
                    "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start at."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read (default 2000)."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints::read_only())
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let given = str_arg(&args, "path")?.to_string();
        let offset = opt_usize(&args, "offset")?.unwrap_or(1).max(1);
        let limit = opt_usize(&args, "limit")?.unwrap_or(DEFAULT_LIMIT).max(1);
        let root = ctx.root.clone();
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || read(&root, &given, offset, limit, &cancel))
            .await
            .map_err(|e| format!("read failed: {e}"))?
    }
}

/// Read the window `offset..offset+limit` of the file `given` beneath `root`.
fn read(
    root: &Path,
    given: &str,
    offset: usize,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let root = RootDir::for_call(root)?;
    let rel = root.relative(given)?;
    let shown_rel = super::path::shown(&rel.display().to_string()).into_owned();
    if rel.extension().and_then(|e| e.to_str()) == Some("ipynb") {
        let text = load_text(&root, given, MAX_LOAD_BYTES)?;
        let nb = Notebook::parse(&text, &shown_rel)?;
        let (rendered, meta) = render(&nb, offset, limit, &shown_rel)?;
        return Ok(ToolOutput::text(rendered).with_metadata(meta));
    }
    let (mut file, meta) = root.open_regular(given)?;
    // An image by its first bytes (never by its name) is returned as the image.
    let mut magic = Vec::with_capacity(12);
    (&mut file)
        .take(12)
        .read_to_end(&mut magic)
        .map_err(|e| root.error("read", given, e))?;
    if let Some(media_type) = sniff_media_type(&magic) {
        return read_image(file, magic, meta.len(), media_type, &shown_rel)
            .map_err(|e| e.or_io(|e| root.error("read", given, e)));
    }
    file.seek(SeekFrom::Start(0))
        .map_err(|e| root.error("read", given, e))?;
    let window = Window {
        offset,
        limit,
        max_chars: MAX_LINE_CHARS,
        count_bytes: MAX_COUNT_BYTES,
    };
    number_lines(file, meta.len(), window, &shown_rel, cancel)
        .map_err(|e| e.or_io(|e| root.error("read", given, e)))
}

/// The image file `file` (whose first bytes, `head`, are read) as a result: a line saying what
/// it is and the cap, then the image. One over [`MAX_IMAGE_BYTES`] (as stat says, or as it
/// grows while read) is an error result; only the cap and one byte more are ever read.
fn read_image(
    file: impl std::io::Read,
    mut bytes: Vec<u8>,
    size: u64,
    media_type: &str,
    shown: &str,
) -> Result<ToolOutput, Failed> {
    let over = |size: u64| -> Failed {
        Failed::Tool(
            format!(
                "{shown}: {media_type}, {size} bytes, over the {MAX_IMAGE_BYTES} \
                 bytes (3.75 MiB) an image may have; make a smaller copy (bash: convert, \
                 magick) and read that"
            )
            .into(),
        )
    };
    if size > MAX_IMAGE_BYTES {
        return Err(over(size));
    }
    file.take(MAX_IMAGE_BYTES + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(over(bytes.len() as u64));
    }
    let image = Image::from_bytes(&bytes, Some(media_type))
        .map_err(|e| Failed::Tool(format!("{shown}: {e}").into()))?;
    Ok(ToolOutput::text(format!(
        "{shown}: {media_type}, {} bytes (images up to {MAX_IMAGE_BYTES} bytes are sent); the \
         image follows.",
        bytes.len()
    ))
    .with_image(image))
}

/// Which lines to show, and how much to read for them.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// The 1-based first line.
    offset: usize,
    limit: usize,
    /// Lines are cut to this many characters.
    max_chars: usize,
    /// Once the window is shown, lines are counted until this many bytes were read.
    count_bytes: u64,
}

/// A read that failed: an error result, or an I/O error still to be named.
#[derive(Debug)]
enum Failed {
    Tool(ToolError),
    Io(std::io::Error),
}

impl Failed {
    fn or_io(self, name: impl FnOnce(std::io::Error) -> ToolError) -> ToolError {
        match self {
            Failed::Tool(e) => e,
            Failed::Io(e) => name(e),
        }
    }
}

impl From<ToolError> for Failed {
    fn from(e: ToolError) -> Self {
        Failed::Tool(e)
    }
}

impl From<std::io::Error> for Failed {
    fn from(e: std::io::Error) -> Self {
        Failed::Io(e)
    }
}

/// The numbered window of the text `src` streams (`size` bytes, as stat says), with metadata
/// when it is cut. Only the window's lines are kept, each at most `4 * max_chars + 4` bytes of
/// it, so memory stays bounded whatever the file holds.
fn number_lines(
    mut src: impl std::io::Read,
    size: u64,
    window: Window,
    shown: &str,
    cancel: &CancellationToken,
) -> Result<ToolOutput, Failed> {
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut src).take(SNIFF_BYTES as u64).read_to_end(&mut head)?;
    if head.is_empty() {
        return Ok(
            ToolOutput::text(format!("({shown} is empty)")).with_metadata(json!({"total": 0}))
        );
    }
    if head.contains(&0) {
        let size = size.max(head.len() as u64);
        return Err(ToolError::new(format!(
            "{shown} is a binary file ({size} bytes); read only reads text"
        ))
        .into());
    }
    let mut lines = Lines::new(window);
    lines.feed(&head);
    let mut read = head.len() as u64;
    let mut buf = vec![0u8; CHUNK];
    let mut complete = true;
    loop {
        if cancel.is_cancelled() {
            return Err(ToolError::new("cancelled").into());
        }
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        // Over the budget with more to read: the count stops here.
        if lines.past_window() && read >= window.count_bytes {
            complete = false;
        }
        read += n as u64;
        lines.feed(&buf[..n]);
        if !complete {
            break;
        }
    }
    Ok(lines.finish(shown, complete)?)
}

/// Lines fed a chunk at a time: numbers and keeps the window's lines, counts the others.
struct Lines {
    window: Window,
    /// The 0-based index of the line being read (= lines completed so far).
    line: usize,
    /// Whether the line being read has any byte yet.
    partial: bool,
    /// The kept start of the current line (window lines only).
    kept: Vec<u8>,
    /// Whether the current line is longer than what is kept.
    overlong: bool,
    out: String,
    /// The 1-based number of the last line shown (`offset - 1` before any).
    last: usize,
    cut: usize,
}

impl Lines {
    fn new(window: Window) -> Self {
        Lines {
            window,
            line: 0,
            partial: false,
            kept: Vec::new(),
            overlong: false,
            out: String::new(),
            last: window.offset - 1,
            cut: 0,
        }
    }

    /// Bytes of a line kept: enough for `max_chars` characters of any encoding, and to know
    /// that the line is longer.
    fn keep(&self) -> usize {
        self.window.max_chars.saturating_mul(4).saturating_add(4)
    }

    fn first(&self) -> usize {
        self.window.offset - 1
    }

    fn end(&self) -> usize {
        self.first().saturating_add(self.window.limit)
    }

    fn past_window(&self) -> bool {
        self.line >= self.end()
    }

    fn feed(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            if self.past_window() {
                // Past the window: count the lines, keep nothing.
                self.line += memchr::memchr_iter(b'\n', chunk).count();
                self.partial = chunk.last() != Some(&b'\n');
                return;
            }
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    self.take(&chunk[..i]);
                    self.end_line(true);
                    chunk = &chunk[i + 1..];
                }
                None => {
                    self.take(chunk);
                    return;
                }
            }
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.partial = true;
        if self.line < self.first() {
            return;
        }
        let room = self.keep().saturating_sub(self.kept.len());
        if bytes.len() > room {
            self.overlong = true;
        }
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn end_line(&mut self, newline: bool) {
        if self.line >= self.first() && self.line < self.end() {
            let mut bytes = &self.kept[..];
            if !self.overlong {
                // As `str::lines` then one more `\r`: a line ending `\r\n` loses its `\r`, and a
                // last `\r` goes too.
                if newline {
                    bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
                }
                bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
            }
            let text = String::from_utf8_lossy(bytes);
            let (text, was_cut) = cut_chars(&text, self.window.max_chars);
            if was_cut || self.overlong {
                self.cut += 1;
            }
            self.out
                .push_str(&format!("{:>6}\t{}\n", self.line + 1, text));
            self.last = self.line + 1;
        }
        self.kept.clear();
        self.overlong = false;
        self.partial = false;
        self.line += 1;
    }

    /// The output; `complete` is false when the count stopped before the end of the file.
    fn finish(mut self, shown: &str, complete: bool) -> Result<ToolOutput, ToolError> {
        if self.partial {
            if complete {
                self.end_line(false);
            } else {
                self.line += 1;
            }
        }
        let total = self.line;
        let offset = self.window.offset;
        if offset > total {
            return Err(format!(
                "offset {offset} is past the end of {shown}, which has {total} lines"
            )
            .into());
        }
        let last = self.last;
        let mut output = ToolOutput::text(self.out);
        if !complete {
            let mut meta =
                json!({"totalAtLeast": total, "truncated": true, "nextOffset": last + 1});
            if self.cut > 0 {
                meta["linesCut"] = json!(self.cut);
            }
            return Ok(output.with_metadata(meta));
        }
        if last < total || offset > 1 || self.cut > 0 {
            let mut meta = json!({"total": total, "truncated": last < total || self.cut > 0});
            if last < total {
                meta["nextOffset"] = json!(last + 1);
            }
            if self.cut > 0 {
                meta["linesCut"] = json!(self.cut);
            }
            output = output.with_metadata(meta);
        }
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window of `text` as `read` shows it, with the given line cut and count budget.
    fn window_of(
        text: &[u8],
        offset: usize,
        limit: usize,
        max_chars: usize,
        count_bytes: u64,
    ) -> Result<ToolOutput, ToolError> {
        let window = Window {
            offset,
            limit,
            max_chars,
            count_bytes,
        };
        number_lines(
            text,
            text.len() as u64,
            window,
            "f",
            &CancellationToken::new(),
        )
        .map_err(|e| e.or_io(|e| ToolError::new(e.to_string())))
    }

    /// `read` of the file `name` holding `bytes`, in a fresh root.
    fn read_file(name: &str, bytes: &[u8]) -> Result<ToolOutput, ToolError> {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join(name), bytes).unwrap();
        super::read(
            root.path(),
            name,
            1,
            DEFAULT_LIMIT,
            &CancellationToken::new(),
        )
    }

    #[test]
    fn an_image_is_returned_as_an_image_by_its_bytes_not_its_name() {
        let png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR rest of it";
        let jpeg = b"\xff\xd8\xff\xe0 jfif";
        let gif = b"GIF89a\x01\x00\x01\x00";
        let webp = b"RIFF\x10\x00\x00\x00WEBPVP8 ";
        for (name, bytes, media_type) in [
            ("a.txt", &png[..], "image/png"),
            ("b", &jpeg[..], "image/jpeg"),
            ("c.png", &gif[..], "image/gif"),
            ("d.webp", &webp[..], "image/webp"),
        ] {
            let out = read_file(name, bytes).unwrap();
            assert!(!out.is_error);
            let text = out.content_text();
            assert!(text.contains(media_type), "{text}");
            assert!(text.contains(&MAX_IMAGE_BYTES.to_string()), "{text}");
            assert_eq!(
                out.images,
                vec![Image::from_bytes(bytes, Some(media_type)).unwrap()],
                "{name}"
            );
        }
        // A short file and a text that merely names a type are still text.
        let out = read_file("e.png", b"GIF8").unwrap();
        assert!(out.images.is_empty());
        assert_eq!(out.content_text(), "     1\tGIF8\n");
        let out = read_file("f.png", b"RIFF1234WEBX").unwrap();
        assert!(out.images.is_empty());
        // Other binary files are still refused.
        let err = read_file("g.bin", b"\x00\x01\x02 binary").unwrap_err();
        assert!(err.message.contains("binary"), "{}", err.message);
    }

    #[test]
    fn an_image_over_the_cap_is_an_error_naming_the_cap() {
        let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
        big.resize(MAX_IMAGE_BYTES as usize + 1, 0);
        let err = read_file("big.png", &big).unwrap_err();
        assert!(
            err.message.contains("over the 3932160 bytes"),
            "{}",
            err.message
        );
        assert!(err.message.contains("image/png"), "{}", err.message);
        // Exactly the cap is sent.
        big.truncate(MAX_IMAGE_BYTES as usize);
        let out = read_file("max.png", &big).unwrap();
        assert_eq!(out.images.len(), 1);
    }

    fn lines_of(text: &str, offset: usize, limit: usize) -> Result<ToolOutput, ToolError> {
        window_of(text.as_bytes(), offset, limit, MAX_LINE_CHARS, u64::MAX)
    }

    /// What `read` showed when it loaded the whole file: the oracle for the streamed window.
    fn whole_file(
        bytes: &[u8],
        offset: usize,
        limit: usize,
        max_chars: usize,
    ) -> Result<ToolOutput, ToolError> {
        if bytes.is_empty() {
            return Ok(ToolOutput::text("(f is empty)").with_metadata(json!({"total": 0})));
        }
        let text = String::from_utf8_lossy(bytes);
        let total = text.lines().count();
        if offset > total {
            return Err(
                format!("offset {offset} is past the end of f, which has {total} lines").into(),
            );
        }
        let mut out = String::new();
        let mut last = offset - 1;
        let mut cut_lines = 0;
        for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let (shown_line, cut) = cut_chars(line, max_chars);
            if cut {
                cut_lines += 1;
            }
            out.push_str(&format!("{:>6}\t{}\n", i + 1, shown_line));
            last = i + 1;
        }
        let mut output = ToolOutput::text(out);
        if last < total || offset > 1 || cut_lines > 0 {
            let mut meta = json!({"total": total, "truncated": last < total || cut_lines > 0});
            if last < total {
                meta["nextOffset"] = json!(last + 1);
            }
            if cut_lines > 0 {
                meta["linesCut"] = json!(cut_lines);
            }
            output = output.with_metadata(meta);
        }
        Ok(output)
    }

    #[test]
    fn windows_and_metadata() {
        let text = "a\nb\nc\nd\n";
        let out = lines_of(text, 2, 2).unwrap();
        assert_eq!(out.content_text(), "     2\tb\n     3\tc\n");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["nextOffset"], 4);
        assert_eq!(meta["total"], 4);
        assert_eq!(meta["truncated"], true);
        let all = lines_of(text, 1, 10).unwrap();
        assert!(all.metadata.is_none());
        assert!(lines_of(text, 9, 1).is_err());
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        let out = lines_of(&long, 1, 10).unwrap();
        assert_eq!(out.content_text().len(), 6 + 1 + MAX_LINE_CHARS + 1);
        assert_eq!(out.metadata.unwrap()["linesCut"], 1);
    }

    #[test]
    fn the_streamed_window_is_what_the_whole_file_showed() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        // Pieces that meet at every boundary: line ends, CRs, multibyte and broken UTF-8.
        let pieces: [&[u8]; 9] = [
            b"a",
            b"bc",
            b"\n",
            b"\r",
            b"\r\n",
            "é".as_bytes(),
            "😀".as_bytes(),
            b"\xff",
            b"\xe2\x82",
        ];
        for case in 0..3000 {
            let n = rng.random_range(1..60);
            let mut text = Vec::new();
            for _ in 0..n {
                text.extend_from_slice(pieces[rng.random_range(0..pieces.len())]);
            }
            let max_chars = rng.random_range(1..6);
            let offset = rng.random_range(1..8);
            let limit = rng.random_range(1..8);
            let want = whole_file(&text, offset, limit, max_chars);
            let got = window_of(&text, offset, limit, max_chars, u64::MAX);
            match (want, got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "case {case}: {text:?} {offset} {limit}"),
                (Err(w), Err(g)) => assert_eq!(w.message, g.message, "case {case}"),
                (w, g) => panic!("case {case}: {text:?}: {w:?} vs {g:?}"),
            }
        }
    }

    #[test]
    fn long_lines_and_long_files_are_not_kept_whole() {
        // One line of 5 MB: only the start of it is kept.
        let mut lines = Lines::new(Window {
            offset: 1,
            limit: 10,
            max_chars: MAX_LINE_CHARS,
            count_bytes: u64::MAX,
        });
        let chunk = vec![b'y'; CHUNK];
        for _ in 0..80 {
            lines.feed(&chunk);
            assert!(lines.kept.len() <= lines.keep());
        }
        let out = lines.finish("f", true).unwrap();
        assert_eq!(out.content_text().len(), 6 + 1 + MAX_LINE_CHARS + 1);
        // Counting stops at the byte budget once the window is shown.
        let text = "line\n".repeat(40_000);
        let out = window_of(text.as_bytes(), 1, 3, MAX_LINE_CHARS, 10_000).unwrap();
        assert_eq!(
            out.content_text(),
            "     1\tline\n     2\tline\n     3\tline\n"
        );
        let meta = out.metadata.unwrap();
        assert_eq!(meta["truncated"], true);
        assert_eq!(meta["nextOffset"], 4);
        assert!(meta.get("total").is_none());
        let at_least = meta["totalAtLeast"].as_u64().unwrap();
        assert!((2_000..40_000).contains(&at_least), "{meta}");
        // A file that ends right at the budget is counted whole.
        let out = window_of(&text.as_bytes()[..50_000], 1, 3, MAX_LINE_CHARS, 50_000).unwrap();
        assert_eq!(out.metadata.unwrap()["total"], 10_000);
        // The window itself is always reached, whatever the budget.
        let out = window_of(text.as_bytes(), 9_000, 1, MAX_LINE_CHARS, 10).unwrap();
        assert_eq!(out.content_text(), "  9000\tline\n");
    }

    async fn read(root: &std::path::Path, args: Value) -> Result<ToolOutput, ToolError> {
        Read.call(args, ToolContext::detached(root, "read")).await
    }

    #[tokio::test]
    async fn edge_cases_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("link.txt"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linkdir")).unwrap();
        std::fs::write(root.join("empty.txt"), "").unwrap();
        std::fs::write(root.join("crlf.txt"), "a\r\nb\r\n").unwrap();
        std::fs::write(root.join("bin.dat"), b"\x7fELF\x00\x01").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let secret = outside.path().join("secret.txt").display().to_string();
        for p in [
            "../x",
            "sub/../../x",
            secret.as_str(),
            "link.txt",
            "linkdir/secret.txt",
        ] {
            let err = read(&root, json!({"path": p})).await.unwrap_err();
            assert!(
                err.message.contains("outside the root"),
                "{p}: {}",
                err.message
            );
        }
        let out = read(&root, json!({"path": "empty.txt"})).await.unwrap();
        assert_eq!(out.content_text(), "(empty.txt is empty)");
        let out = read(&root, json!({"path": "crlf.txt"})).await.unwrap();
        assert_eq!(out.content_text(), "     1\ta\n     2\tb\n");
        let err = read(&root, json!({"path": "crlf.txt", "offset": 3}))
            .await
            .unwrap_err();
        assert!(err.message.contains("past the end"), "{}", err.message);
        let err = read(&root, json!({"path": "bin.dat"})).await.unwrap_err();
        assert!(err.message.contains("binary"), "{}", err.message);
        let err = read(&root, json!({"path": "sub"})).await.unwrap_err();
        assert!(err.message.contains("directory"), "{}", err.message);
        assert!(read(&root, json!({"path": "missing.txt"})).await.is_err());
        // A FIFO is refused at once, with or without a writer.
        nix::unistd::mkfifo(
            &root.join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        let err = read(&root, json!({"path": "fifo"})).await.unwrap_err();
        assert!(err.message.contains("a FIFO"), "{}", err.message);
        let _listener = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
        let err = read(&root, json!({"path": "sock"})).await.unwrap_err();
        assert!(err.message.contains("a socket"), "{}", err.message);
        // Absolute inside the root is fine.
        let abs = root.join("crlf.txt").display().to_string();
        assert!(read(&root, json!({"path": abs})).await.is_ok());
    }

    #[tokio::test]
    async fn notebooks_render_as_cells() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("nb.ipynb"), super::super::notebook::tests::NB).unwrap();
        let out = read(&root, json!({"path": "nb.ipynb"})).await.unwrap();
        assert!(out
            .content_text()
            .starts_with("<cell id=\"intro\" cell_type=\"markdown\">\n"));
        assert_eq!(out.metadata.unwrap()["cells"], 2);
        std::fs::write(root.join("bad.ipynb"), "{not json").unwrap();
        assert!(read(&root, json!({"path": "bad.ipynb"})).await.is_err());
    }

    /// Seen while writing the notebook fuzz target (its window comes from the input):
    /// `offset - 1 + limit` overflowed for a limit near `u64::MAX` (a panic in debug builds, a
    /// wrapped, empty window in release).
    #[tokio::test]
    async fn a_notebook_window_of_any_limit_is_the_rest_of_the_cells() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("nb.ipynb"), super::super::notebook::tests::NB).unwrap();
        let out = read(
            &root,
            json!({"path": "nb.ipynb", "offset": 2, "limit": u64::MAX}),
        )
        .await
        .unwrap();
        assert!(
            out.content_text().starts_with("<cell id=\"calc\""),
            "{}",
            out.content_text()
        );
        let meta = out.metadata.unwrap();
        assert_eq!(meta["truncated"], false, "{meta}");
        assert!(meta.get("nextOffset").is_none(), "{meta}");
    }
}
