//! `grep`: regex search with ripgrep's semantics, through ripgrep's own crates (`ignore` for the
//! walk, `grep-regex` for the matcher, `grep-searcher` for the search).
//!
//! Output is ripgrep's: `files_with_matches` lists paths (newest first, like the other file
//! finders), `count` gives `path:N` per file, `content` gives `path:line:text` for matches and
//! `path-line-text` for context, with `--` between groups that are not adjacent. Paths are
//! relative to the root. Results are cut to `head_limit` entries (default 250, 0 = no limit)
//! after skipping `offset`; a cut is reported in metadata (`truncated`, `total`, `nextOffset`).

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::time::SystemTime;

use parking_lot::Mutex;

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::WalkState;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::path::{shown, RootDir};
use super::read::MAX_LINE_CHARS;
use super::walk::{overrides, types, under, walker, Beneath};
use super::{display_path, opt_bool, opt_str, opt_usize, str_arg};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Entries returned when no `head_limit` is given.
pub const DEFAULT_HEAD_LIMIT: usize = 250;

/// The most context lines before or after a match: larger counts mean this many. The searcher
/// keeps the `before` lines of every position in memory, so `before: u64::MAX` would otherwise
/// hold a whole file up to its last match.
pub const MAX_CONTEXT_LINES: usize = 10_000;

pub(crate) struct Grep;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Files,
    Content,
    Count,
}

/// A parsed grep call.
#[derive(Debug, Clone)]
pub(crate) struct GrepArgs {
    pattern: String,
    mode: Mode,
    glob: Option<String>,
    file_type: Option<String>,
    before: usize,
    after: usize,
    case_insensitive: bool,
    multiline: bool,
    line_numbers: bool,
    head_limit: Option<usize>,
    offset: usize,
}

impl GrepArgs {
    fn parse(args: &Value) -> Result<Self, ToolError> {
        let mode = match opt_str(args, "output_mode").unwrap_or("files_with_matches") {
            "files_with_matches" => Mode::Files,
            "content" => Mode::Content,
            "count" => Mode::Count,
            other => {
                return Err(format!(
                    "output_mode {other:?} is not one of files_with_matches, content, count"
                )
                .into())
            }
        };
        let context = opt_usize(args, "context")?.unwrap_or(0);
        let context_of = |key: &str| -> Result<usize, ToolError> {
            Ok(opt_usize(args, key)?
                .unwrap_or(context)
                .min(MAX_CONTEXT_LINES))
        };
        let head_limit = match opt_usize(args, "head_limit")? {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(DEFAULT_HEAD_LIMIT),
        };
        Ok(GrepArgs {
            pattern: str_arg(args, "pattern")?.to_string(),
            mode,
            glob: opt_str(args, "glob").map(str::to_string),
            file_type: opt_str(args, "type").map(str::to_string),
            before: context_of("before")?,
            after: context_of("after")?,
            case_insensitive: opt_bool(args, "case_insensitive"),
            multiline: opt_bool(args, "multiline"),
            line_numbers: args
                .get("line_numbers")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            head_limit,
            offset: opt_usize(args, "offset")?.unwrap_or(0),
        })
    }
}

#[async_trait]
impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "grep",
            "Search file contents with a regular expression (ripgrep: Rust regex syntax, so \
             escape literal braces and dots, e.g. `interface\\{\\}` or `foo\\.bar`). Searches the \
             working directory, or `path`, recursively; hidden files and files ignored by \
             .gitignore are skipped. Filter files with `glob` (e.g. `*.js`, `*.{ts,tsx}`) or \
             `type` (ripgrep type names: rust, py, js, go, ...).\n\
             output_mode: `files_with_matches` (default) lists matching files, newest first; \
             `content` shows matching lines as `path:line:text` (context lines as \
             `path-line-text`, groups separated by `--`); `count` shows `path:N` matching lines \
             per file.\n\
             `context` / `before` / `after` add lines around matches (content mode; at most \
             10000). \
             `multiline` lets a pattern span lines (`.` then matches newlines too). Results are \
             cut to `head_limit` entries (default 250; 0 for no limit) after skipping `offset`; \
             when results are cut, the metadata says so and gives `nextOffset`.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression to search for."},
                    "path": {"type": "string", "description": "File or directory to search (default: the working directory)."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs` or `src/**/*.{ts,tsx}`; `!glob` excludes."},
                    "type": {"type": "string", "description": "Only search files of this ripgrep type, e.g. `rust`, `py`, `js`."},
                    "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"], "description": "What to return (default files_with_matches)."},
                    "context": {"type": "integer", "minimum": 0, "description": "Lines of context before and after each match (content mode)."},
                    "before": {"type": "integer", "minimum": 0, "description": "Lines of context before each match (content mode)."},
                    "after": {"type": "integer", "minimum": 0, "description": "Lines of context after each match (content mode)."},
                    "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
                    "multiline": {"type": "boolean", "description": "Let the pattern match across lines (default false)."},
                    "line_numbers": {"type": "boolean", "description": "Show line numbers in content mode (default true)."},
                    "head_limit": {"type": "integer", "minimum": 0, "description": "Return at most this many lines / files / counts (default 250; 0 = no limit)."},
                    "offset": {"type": "integer", "minimum": 0, "description": "Skip this many lines / files / counts first (for paging)."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints::read_only())
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let parsed = GrepArgs::parse(&args)?;
        let path = opt_str(&args, "path").unwrap_or(".").to_string();
        let root = ctx.root.clone();
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || {
            let root = RootDir::for_call(&root)?;
            grep(&root, &path, &parsed, &cancel)
        })
        .await
        .map_err(|e| format!("grep failed: {e}"))?
    }
}

/// Build the matcher ripgrep would build for these options.
fn matcher(a: &GrepArgs) -> Result<RegexMatcher, ToolError> {
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(a.case_insensitive).multi_line(true);
    if a.multiline {
        b.dot_matches_new_line(true);
    } else {
        b.line_terminator(Some(b'\n'));
    }
    b.build(&a.pattern)
        .map_err(|e| format!("invalid regex {:?}: {e}", a.pattern).into())
}

fn searcher(a: &GrepArgs) -> Searcher {
    let mut b = SearcherBuilder::new();
    b.binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .multi_line(a.multiline);
    if a.mode == Mode::Content {
        b.before_context(a.before).after_context(a.after);
    }
    b.build()
}

/// Run a search: walk `path` (the model's file or directory, resolved beneath `root`) in
/// parallel and collect the results.
pub(crate) fn grep(
    root: &RootDir,
    path: &str,
    a: &GrepArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let matcher = matcher(a)?;
    let (target, meta) = root.existing(path)?;
    let single_file = meta.is_file();
    if !single_file && !meta.is_dir() {
        return Err(format!("{} is not a regular file or a directory", shown(path)).into());
    }
    let target = target.as_path();
    let mut w = walker(target);
    if let Some(g) = &a.glob {
        w.overrides(overrides(target, &[g.as_str()])?);
    }
    if let Some(t) = &a.file_type {
        w.types(types(t)?);
    }
    let need = a.head_limit.map(|h| h.saturating_add(a.offset));
    let files: Mutex<Vec<(PathBuf, SystemTime)>> = Mutex::new(Vec::new());
    let counts: Mutex<Vec<(PathBuf, u64)>> = Mutex::new(Vec::new());
    let content = Mutex::new(ContentStore::new(need));
    w.build_parallel().run(|| {
        let matcher = matcher.clone();
        let mut searcher = searcher(a);
        let mut beneath = Beneath::new(root);
        let (files, counts, content) = (&files, &counts, &content);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let path = entry.path();
            // Opened beneath the root: a file the walk found outside it is not read.
            let Some((file, meta)) = beneath.open_file(path) else {
                return WalkState::Continue;
            };
            let rel = || under(root.path(), path).to_path_buf();
            match a.mode {
                Mode::Files => {
                    let mut sink = FirstMatch(false);
                    if searcher.search_file(&matcher, &file, &mut sink).is_ok() && sink.0 {
                        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                        files.lock().push((rel(), mtime));
                    }
                }
                Mode::Count => {
                    let mut sink = CountLines(0);
                    if searcher.search_file(&matcher, &file, &mut sink).is_ok() && sink.0 > 0 {
                        counts.lock().push((rel(), sink.0));
                    }
                }
                Mode::Content => {
                    let prefix = if single_file {
                        None
                    } else {
                        Some(under(root.path(), path).to_string_lossy().into_owned())
                    };
                    let mut sink = ContentSink {
                        prefix: prefix.as_deref(),
                        line_numbers: a.line_numbers,
                        lines: Vec::new(),
                        total: 0,
                        keep: need,
                        cut: 0,
                    };
                    if searcher.search_file(&matcher, &file, &mut sink).is_ok() && sink.total > 0 {
                        content.lock().add(rel(), sink.lines, sink.total, sink.cut);
                    }
                }
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err("cancelled".into());
    }
    let shown_dir = shown(&display_path(root.path(), target)).into_owned();
    let (entries, total, cut_lines, extra) = match a.mode {
        Mode::Files => {
            let mut files = files.into_inner();
            files.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
            let total = files.len();
            let lines: Vec<String> = files
                .into_iter()
                .skip(a.offset)
                .take(a.head_limit.unwrap_or(usize::MAX))
                .map(|(p, _)| p.to_string_lossy().into_owned())
                .collect();
            (lines, total, 0, None)
        }
        Mode::Count => {
            let mut counts = counts.into_inner();
            counts.sort();
            let total = counts.len();
            let matches: u64 = counts.iter().map(|c| c.1).sum();
            let lines: Vec<String> = counts
                .into_iter()
                .skip(a.offset)
                .take(a.head_limit.unwrap_or(usize::MAX))
                .map(|(p, n)| format!("{}:{n}", p.to_string_lossy()))
                .collect();
            (lines, total, 0, Some(json!({"matches": matches})))
        }
        Mode::Content => {
            let store = content.into_inner();
            let separators = a.before > 0 || a.after > 0;
            let (lines, total, cut) = store.assemble(separators, a.offset, a.head_limit);
            (lines, total, cut, None)
        }
    };
    if total == 0 {
        let what = match a.mode {
            Mode::Files | Mode::Count => "No files",
            Mode::Content => "No lines",
        };
        return Ok(ToolOutput::text(format!(
            "{what} matched {:?} in {shown_dir}",
            a.pattern
        )));
    }
    if entries.is_empty() {
        return Ok(
            ToolOutput::text(format!("offset {} is past the last result", a.offset))
                .with_metadata(json!({"total": total, "truncated": false})),
        );
    }
    let shown_end = a.offset.saturating_add(entries.len());
    let mut out = ToolOutput::text(entries.join("\n"));
    if shown_end < total || a.offset > 0 || cut_lines > 0 || extra.is_some() {
        let mut meta = extra.unwrap_or_else(|| json!({}));
        meta["total"] = json!(total);
        meta["truncated"] = json!(shown_end < total || cut_lines > 0);
        if shown_end < total {
            meta["nextOffset"] = json!(shown_end);
        }
        if cut_lines > 0 {
            meta["linesCut"] = json!(cut_lines);
        }
        out = out.with_metadata(meta);
    }
    Ok(out)
}

/// Stops at the first match.
struct FirstMatch(bool);

impl Sink for FirstMatch {
    type Error = io::Error;
    fn matched(&mut self, _: &Searcher, _: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.0 = true;
        Ok(false)
    }
}

/// Counts matching lines.
struct CountLines(u64);

impl Sink for CountLines {
    type Error = io::Error;
    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.0 += m.lines().count() as u64;
        Ok(true)
    }
}

/// Formats lines as ripgrep does; keeps the first `keep` lines and counts them all.
struct ContentSink<'a> {
    prefix: Option<&'a str>,
    line_numbers: bool,
    lines: Vec<String>,
    total: usize,
    keep: Option<usize>,
    cut: usize,
}

impl ContentSink<'_> {
    fn push(&mut self, sep: char, line_number: Option<u64>, bytes: &[u8]) {
        self.total += 1;
        if self.keep.is_some_and(|k| self.lines.len() >= k) {
            return;
        }
        let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let text = String::from_utf8_lossy(bytes);
        let (text, was_cut) = super::cut_chars(&text, MAX_LINE_CHARS);
        if was_cut {
            self.cut += 1;
        }
        let mut line = String::with_capacity(text.len() + 32);
        if let Some(p) = self.prefix {
            line.push_str(p);
            line.push(sep);
        }
        if let (true, Some(n)) = (self.line_numbers, line_number) {
            line.push_str(&n.to_string());
            line.push(sep);
        }
        line.push_str(text);
        self.lines.push(line);
    }
}

impl Sink for ContentSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = m.line_number();
        for (i, line) in m.lines().enumerate() {
            self.push(':', first.map(|n| n + i as u64), line);
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        if matches!(c.kind(), SinkContextKind::Other) {
            return Ok(true);
        }
        self.push('-', c.line_number(), c.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        self.total += 1;
        if self.keep.is_none_or(|k| self.lines.len() < k) {
            self.lines.push("--".into());
        }
        Ok(true)
    }
}

/// The content lines of every file, in path order, holding only what the first `need` lines of
/// the output can come from: once the files before the last one hold `need` lines, the last one
/// is dropped (its lines still count in `total`).
struct ContentStore {
    need: Option<usize>,
    files: BTreeMap<PathBuf, Vec<String>>,
    stored: usize,
    total: usize,
    file_count: usize,
    cut: usize,
}

impl ContentStore {
    fn new(need: Option<usize>) -> Self {
        ContentStore {
            need,
            files: BTreeMap::new(),
            stored: 0,
            total: 0,
            file_count: 0,
            cut: 0,
        }
    }

    fn add(&mut self, path: PathBuf, lines: Vec<String>, total: usize, cut: usize) {
        self.total += total;
        self.file_count += 1;
        self.cut += cut;
        self.stored += lines.len();
        self.files.insert(path, lines);
        let Some(need) = self.need else { return };
        while let Some(last) = self.files.last_key_value().map(|(_, l)| l.len()) {
            if self.files.len() > 1 && self.stored - last >= need {
                self.stored -= last;
                self.files.pop_last();
            } else {
                break;
            }
        }
    }

    /// The output window and the total line count (separators included).
    fn assemble(
        self,
        separators: bool,
        offset: usize,
        limit: Option<usize>,
    ) -> (Vec<String>, usize, usize) {
        let total = self.total
            + if separators {
                self.file_count.saturating_sub(1)
            } else {
                0
            };
        let mut all = Vec::with_capacity(
            self.stored
                .min(offset.saturating_add(limit.unwrap_or(self.stored))),
        );
        for (i, (_, lines)) in self.files.into_iter().enumerate() {
            if separators && i > 0 {
                all.push("--".to_string());
            }
            all.extend(lines);
        }
        let window = all
            .into_iter()
            .skip(offset)
            .take(limit.unwrap_or(usize::MAX))
            .collect();
        (window, total, self.cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn main() {\n    hello();\n}\n").unwrap();
        std::fs::write(
            root.join("src/deep/b.rs"),
            "one\ntwo\nhello world\nthree\nfour\nfive\nHELLO again\n",
        )
        .unwrap();
        std::fs::write(root.join("notes.md"), "hello from markdown\n").unwrap();
        std::fs::write(root.join("bin.dat"), b"hello\x00\x01\x02").unwrap();
        std::fs::write(root.join(".hidden"), "hello hidden\n").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir(root.join("ignored")).unwrap();
        std::fs::write(root.join("ignored/x.rs"), "hello ignored\n").unwrap();
        (dir, root)
    }

    fn run(root: &Path, args: Value) -> ToolOutput {
        let a = GrepArgs::parse(&args).unwrap();
        let root = RootDir::open(root).unwrap();
        grep(&root, a_path(&args), &a, &CancellationToken::new()).unwrap()
    }

    fn a_path(args: &Value) -> &str {
        args.get("path").and_then(Value::as_str).unwrap_or(".")
    }

    fn sorted_lines(out: &ToolOutput) -> Vec<String> {
        let mut v: Vec<String> = out.content_text().lines().map(String::from).collect();
        v.sort();
        v
    }

    #[test]
    fn files_mode_skips_hidden_ignored_and_binary() {
        let (_d, root) = tree();
        let out = run(&root, json!({"pattern": "hello"}));
        assert_eq!(
            sorted_lines(&out),
            ["notes.md", "src/a.rs", "src/deep/b.rs"]
        );
        assert!(out.metadata.is_none());
    }

    #[test]
    fn content_mode_with_context_and_separators() {
        let (_d, root) = tree();
        let out = run(
            &root,
            json!({"pattern": "hello", "output_mode": "content", "case_insensitive": true,
                   "path": "src/deep", "before": 1}),
        );
        assert_eq!(
            out.content_text(),
            "src/deep/b.rs-2-two\nsrc/deep/b.rs:3:hello world\n--\nsrc/deep/b.rs-6-five\nsrc/deep/b.rs:7:HELLO again"
        );
        // A single file: no path prefix, as ripgrep prints it.
        let out = run(
            &root,
            json!({"pattern": "hello", "output_mode": "content", "path": "src/deep/b.rs"}),
        );
        assert_eq!(out.content_text(), "3:hello world");
        let out = run(
            &root,
            json!({"pattern": "hello", "output_mode": "content", "path": "src/deep/b.rs", "line_numbers": false}),
        );
        assert_eq!(out.content_text(), "hello world");
    }

    #[test]
    fn count_glob_and_type_filters() {
        let (_d, root) = tree();
        let out = run(
            &root,
            json!({"pattern": "hello", "output_mode": "count", "case_insensitive": true}),
        );
        assert_eq!(
            out.content_text(),
            "notes.md:1\nsrc/a.rs:1\nsrc/deep/b.rs:2"
        );
        assert_eq!(out.metadata.unwrap()["matches"], 4);
        let out = run(&root, json!({"pattern": "hello", "glob": "*.md"}));
        assert_eq!(out.content_text(), "notes.md");
        let out = run(&root, json!({"pattern": "hello", "glob": "!*.md"}));
        assert_eq!(sorted_lines(&out), ["src/a.rs", "src/deep/b.rs"]);
        let out = run(&root, json!({"pattern": "hello", "type": "rust"}));
        assert_eq!(sorted_lines(&out), ["src/a.rs", "src/deep/b.rs"]);
        let a = GrepArgs::parse(&json!({"pattern": "x", "type": "nonsense"})).unwrap();
        let rd = RootDir::open(&root).unwrap();
        assert!(grep(&rd, ".", &a, &CancellationToken::new()).is_err());
    }

    #[test]
    fn multiline_matches_span_lines() {
        let (_d, root) = tree();
        let out = run(
            &root,
            json!({"pattern": "fn main.*hello", "output_mode": "content", "multiline": true}),
        );
        assert_eq!(
            out.content_text(),
            "src/a.rs:1:fn main() {\nsrc/a.rs:2:    hello();"
        );
        let out = run(
            &root,
            json!({"pattern": "fn main.*hello", "output_mode": "content"}),
        );
        assert!(out.content_text().starts_with("No lines matched"));
    }

    #[test]
    fn context_counts_are_capped() {
        let a = GrepArgs::parse(&json!({"pattern": "x", "context": u64::MAX})).unwrap();
        assert_eq!((a.before, a.after), (MAX_CONTEXT_LINES, MAX_CONTEXT_LINES));
        let a = GrepArgs::parse(&json!({"pattern": "x", "context": 2, "before": 1e300})).unwrap();
        assert_eq!((a.before, a.after), (MAX_CONTEXT_LINES, 2));
        let a = GrepArgs::parse(&json!({"pattern": "x", "offset": u64::MAX})).unwrap();
        assert_eq!(
            (a.offset, a.head_limit),
            (usize::MAX, Some(DEFAULT_HEAD_LIMIT))
        );
    }

    #[test]
    fn head_limit_offset_and_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for i in 0..30 {
            let body: String = (0..10).map(|j| format!("match {i} {j}\n")).collect();
            std::fs::write(root.join(format!("f{i:02}.txt")), body).unwrap();
        }
        let out = run(
            &root,
            json!({"pattern": "match", "output_mode": "content", "head_limit": 15, "offset": 5}),
        );
        let lines: Vec<&str> = out.content_text().leak().lines().collect();
        assert_eq!(lines.len(), 15);
        assert_eq!(lines[0], "f00.txt:6:match 0 5");
        assert_eq!(lines[14], "f01.txt:10:match 1 9");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["total"], 300);
        assert_eq!(meta["truncated"], true);
        assert_eq!(meta["nextOffset"], 20);
        // Default head_limit is 250; 0 is no limit.
        let out = run(&root, json!({"pattern": "match", "output_mode": "content"}));
        assert_eq!(out.content_text().lines().count(), 250);
        let out = run(
            &root,
            json!({"pattern": "match", "output_mode": "content", "head_limit": 0}),
        );
        assert_eq!(out.content_text().lines().count(), 300);
        assert!(out.metadata.is_none());
        // The last page.
        let out = run(
            &root,
            json!({"pattern": "match", "output_mode": "files_with_matches", "head_limit": 10, "offset": 25}),
        );
        assert_eq!(out.content_text().lines().count(), 5);
        let meta = out.metadata.unwrap();
        assert_eq!(meta["truncated"], false);
        assert!(meta.get("nextOffset").is_none());
    }

    #[test]
    fn files_are_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for (name, age) in [("old.txt", 300), ("new.txt", 10), ("mid.txt", 100)] {
            std::fs::write(root.join(name), "x\n").unwrap();
            let t = SystemTime::now() - std::time::Duration::from_secs(age);
            let f = std::fs::File::options()
                .write(true)
                .open(root.join(name))
                .unwrap();
            f.set_modified(t).unwrap();
        }
        let out = run(&root, json!({"pattern": "x"}));
        assert_eq!(out.content_text(), "new.txt\nmid.txt\nold.txt");
    }

    #[test]
    fn content_store_keeps_only_what_is_needed() {
        let mut s = ContentStore::new(Some(3));
        for name in ["d", "b", "c", "a"] {
            s.add(
                PathBuf::from(name),
                vec![format!("{name}1"), format!("{name}2")],
                2,
                0,
            );
        }
        assert!(s.files.len() <= 3);
        let (lines, total, _) = s.assemble(false, 1, Some(2));
        assert_eq!(lines, ["a2", "b1"]);
        assert_eq!(total, 8);
    }

    #[test]
    fn paths_are_confined() {
        let (_d, root) = tree();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "hello secret\n").unwrap();
        symlink(outside.path(), root.join("link")).unwrap();
        symlink(
            outside.path().join("secret.txt"),
            root.join("src/secret-link.txt"),
        )
        .unwrap();
        let rd = RootDir::open(&root).unwrap();
        let a = GrepArgs::parse(&json!({"pattern": "secret"})).unwrap();
        for p in ["../", "/etc", "link", "src/secret-link.txt"] {
            let err = grep(&rd, p, &a, &CancellationToken::new()).unwrap_err();
            assert!(err.message.contains("outside the root"), "{p}: {err:?}");
        }
        // A walk does not follow symlinks out of the root.
        let out = run(&root, json!({"pattern": "secret"}));
        assert!(out.content_text().starts_with("No files"), "{out:?}");
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let (_d, root) = tree();
        let a = GrepArgs::parse(&json!({"pattern": "(unclosed"})).unwrap();
        let rd = RootDir::open(&root).unwrap();
        let err = grep(&rd, ".", &a, &CancellationToken::new()).unwrap_err();
        assert!(err.message.contains("invalid regex"), "{}", err.message);
        assert!(GrepArgs::parse(&json!({"pattern": "x", "output_mode": "lines"})).is_err());
        assert!(GrepArgs::parse(&json!({})).is_err());
    }
}
