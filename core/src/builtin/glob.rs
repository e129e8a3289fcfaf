//! `glob`: find files by glob pattern (globset), walking the tree as fd does (`ignore`):
//! hidden and ignored files skipped, newest first, cut at `limit` (default 100) with metadata.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use parking_lot::Mutex;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::path::{dot, shown, RootDir};
use super::walk::{under, walker, Beneath, CancelCheck};
use super::{display_path, opt_str, opt_usize, str_arg};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Paths returned when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 100;

pub(crate) struct Glob;

#[async_trait]
impl Tool for Glob {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "glob",
            "Find files by name with a glob pattern, e.g. `**/*.rs`, `src/**/*.{ts,tsx}` or \
             `*.md` (`*` stays within one directory, `**` crosses directories). Returns matching \
             file paths relative to the working directory, most recently modified first. Hidden \
             files (unless the pattern names a hidden part, like `**/.env`) and files ignored by \
             .gitignore are skipped. At most `limit` paths (default \
             100, 0 for no limit); when there are more, the metadata gives `total` and \
             `nextOffset`.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The glob pattern to match file paths against."},
                    "path": {"type": "string", "description": "Directory to search in (default: the working directory); the pattern is matched against paths relative to it."},
                    "limit": {"type": "integer", "minimum": 0, "description": "Return at most this many paths (default 100; 0 = no limit)."},
                    "offset": {"type": "integer", "minimum": 0, "description": "Skip this many paths first (for paging)."}
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
        let pattern = str_arg(&args, "pattern")?.to_string();
        let dir = opt_str(&args, "path").unwrap_or(".").to_string();
        let limit = match opt_usize(&args, "limit")? {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(DEFAULT_LIMIT),
        };
        let offset = opt_usize(&args, "offset")?.unwrap_or(0);
        let root = ctx.root.clone();
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || {
            let root = RootDir::for_call(&root)?;
            glob(&root, &dir, &pattern, offset, limit, &cancel)
        })
        .await
        .map_err(|e| format!("glob failed: {e}"))?
    }
}

/// Split a pattern into its leading literal directories and the rest: `src/lib/**/*.rs` walks
/// only `src/lib`.
fn literal_prefix(pattern: &str) -> (PathBuf, String) {
    let mut prefix = PathBuf::new();
    let parts: Vec<&str> = pattern.split('/').collect();
    let mut i = 0;
    while i + 1 < parts.len() {
        let part = parts[i];
        if part
            .chars()
            .any(|c| matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\'))
        {
            break;
        }
        if part.is_empty() && i == 0 {
            prefix.push("/");
        } else if !part.is_empty() && part != "." {
            prefix.push(part);
        }
        i += 1;
    }
    (prefix, parts[i..].join("/"))
}

/// Find the files under the directory `dir` (the model's path) whose path relative to it
/// matches `pattern`.
pub(crate) fn glob(
    root: &RootDir,
    dir: &str,
    pattern: &str,
    offset: usize,
    limit: Option<usize>,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let (dir_path, meta) = root.existing(dir)?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", shown(dir)).into());
    }
    let (prefix, rest) = literal_prefix(pattern);
    // The walk starts at the literal prefix, which is resolved beneath the root too; a prefix
    // that does not exist matches nothing.
    let start = if prefix.as_os_str().is_empty() {
        Some(dir_path.clone())
    } else {
        let rel = if prefix.is_absolute() {
            prefix
                .strip_prefix(root.path())
                .map_err(|_| root.outside(pattern))?
                .to_path_buf()
        } else {
            under(root.path(), &dir_path).join(&prefix)
        };
        let at = root.locate_relative(&rel, pattern)?;
        let is_dir =
            at.missing.is_empty() && root.dir().metadata(dot(&at.real)).is_ok_and(|m| m.is_dir());
        is_dir.then(|| root.path().join(&at.real))
    };
    let glob = GlobBuilder::new(&rest)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("bad glob pattern {pattern:?}: {e}"))?;
    // A set of one glob: globset then matches `**/*.rs` by extension, `**/name` by file name,
    // without running a regex on every path.
    let matcher = GlobSetBuilder::new()
        .add(glob)
        .build()
        .map_err(|e| format!("bad glob pattern {pattern:?}: {e}"))?;
    let found: Mutex<Vec<(String, SystemTime)>> = Mutex::new(Vec::new());
    if let Some(start) = &start {
        let mut w = walker(start);
        // A pattern that names a hidden part (`**/.env`, `.github/**`) looks into hidden
        // directories; others skip them, as fd does.
        if rest
            .split('/')
            .any(|p| p.starts_with('.') && p != "." && p != "..")
        {
            w.hidden(false);
        }
        let mut builder = Collectors {
            root,
            start,
            matcher: &matcher,
            cancel,
            found: &found,
        };
        w.build_parallel().visit(&mut builder);
    }
    if cancel.is_cancelled() {
        return Err("cancelled".into());
    }
    let mut found = found.into_inner();
    if found.is_empty() {
        return Ok(ToolOutput::text(format!(
            "No files matched {pattern:?} in {}",
            shown(&display_path(root.path(), &dir_path))
        )));
    }
    // Ties (files written in one clock tick) by path bytes, so the order is stable.
    found.sort_unstable_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    let total = found.len();
    let page: Vec<String> = found
        .into_iter()
        .skip(offset)
        .take(limit.unwrap_or(usize::MAX))
        .map(|(p, _)| p)
        .collect();
    if page.is_empty() {
        return Ok(
            ToolOutput::text(format!("offset {offset} is past the last result"))
                .with_metadata(json!({"total": total, "truncated": false})),
        );
    }
    let end = offset.saturating_add(page.len());
    let mut out = ToolOutput::text(page.join("\n"));
    if end < total || offset > 0 {
        let mut meta = json!({"total": total, "truncated": end < total});
        if end < total {
            meta["nextOffset"] = json!(end);
        }
        out = out.with_metadata(meta);
    }
    Ok(out)
}

/// Makes one [`Collector`] per walker thread.
struct Collectors<'s> {
    root: &'s RootDir,
    start: &'s Path,
    matcher: &'s GlobSet,
    cancel: &'s CancellationToken,
    found: &'s Mutex<Vec<(String, SystemTime)>>,
}

impl<'s> ParallelVisitorBuilder<'s> for Collectors<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Collector {
            root: self.root,
            start: self.start,
            matcher: self.matcher,
            cancel: CancelCheck::new(self.cancel),
            found: self.found,
            local: Vec::new(),
            beneath: Beneath::new(self.root),
        })
    }
}

/// Collects one thread's matches, and hands them over when the thread is done.
struct Collector<'s> {
    root: &'s RootDir,
    start: &'s Path,
    matcher: &'s GlobSet,
    cancel: CancelCheck<'s>,
    found: &'s Mutex<Vec<(String, SystemTime)>>,
    local: Vec<(String, SystemTime)>,
    beneath: Beneath<'s>,
}

impl ParallelVisitor for Collector<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.cancel.cancelled() {
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let path = entry.path();
        if self.matcher.is_match(under(self.start, path)) {
            // Looked up beneath the root: an entry the walk found outside it is dropped here.
            let Some(mtime) = self.beneath.mtime(path) else {
                return WalkState::Continue;
            };
            // Made a string here, on the walker's thread, rather than after the walk.
            let shown = under(self.root.path(), path).to_string_lossy().into_owned();
            self.local.push((shown, mtime));
        }
        WalkState::Continue
    }
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        self.found.lock().append(&mut self.local);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for f in [
            "a.rs",
            "src/b.rs",
            "src/deep/c.rs",
            "src/d.txt",
            "docs/e.md",
            ".hidden/f.rs",
            "target/g.rs",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, f).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        (dir, root)
    }

    fn run(
        root: &Path,
        pattern: &str,
        dir: &str,
        offset: usize,
        limit: Option<usize>,
    ) -> ToolOutput {
        let root = RootDir::open(root).unwrap();
        glob(
            &root,
            dir,
            pattern,
            offset,
            limit,
            &CancellationToken::new(),
        )
        .unwrap()
    }

    fn sorted(out: &ToolOutput) -> Vec<String> {
        let mut v: Vec<String> = out.content_text().lines().map(String::from).collect();
        v.sort();
        v
    }

    #[test]
    fn patterns_match_like_globs() {
        let (_d, root) = tree();
        assert_eq!(
            sorted(&run(&root, "**/*.rs", ".", 0, None)),
            ["a.rs", "src/b.rs", "src/deep/c.rs"]
        );
        assert_eq!(sorted(&run(&root, "*.rs", ".", 0, None)), ["a.rs"]);
        assert_eq!(
            sorted(&run(&root, "src/**/*.rs", ".", 0, None)),
            ["src/b.rs", "src/deep/c.rs"]
        );
        assert_eq!(
            sorted(&run(&root, "**/*.{md,txt}", ".", 0, None)),
            ["docs/e.md", "src/d.txt"]
        );
        assert_eq!(sorted(&run(&root, "*.rs", "src", 0, None)), ["src/b.rs"]);
        // Hidden files only when the pattern names them.
        assert_eq!(
            sorted(&run(&root, "**/.hidden/*.rs", ".", 0, None)),
            [".hidden/f.rs"]
        );
        assert_eq!(
            sorted(&run(&root, ".hidden/*.rs", ".", 0, None)),
            [".hidden/f.rs"]
        );
        assert!(run(&root, "**/*.py", ".", 0, None)
            .content_text()
            .starts_with("No files matched"));
    }

    #[test]
    fn newest_first_and_paging() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for i in 0..150u64 {
            let p = root.join(format!("f{i:03}.txt"));
            std::fs::write(&p, "x").unwrap();
            let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i);
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        let out = run(&root, "*.txt", ".", 0, Some(DEFAULT_LIMIT));
        let lines: Vec<String> = out.content_text().lines().map(String::from).collect();
        assert_eq!(lines.len(), 100);
        assert_eq!(lines[0], "f149.txt");
        assert_eq!(lines[99], "f050.txt");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["total"], 150);
        assert_eq!(meta["truncated"], true);
        assert_eq!(meta["nextOffset"], 100);
        let out = run(&root, "*.txt", ".", 100, Some(100));
        assert_eq!(out.content_text().lines().count(), 50);
        assert_eq!(out.metadata.unwrap()["truncated"], false);
    }

    #[test]
    fn escapes_are_refused() {
        let (_d, root) = tree();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.rs"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let cancel = CancellationToken::new();
        let rd = RootDir::open(&root).unwrap();
        for (dir, pattern) in [
            (".", "../**/*.rs"),
            (".", "/etc/*"),
            (".", "link/*.rs"),
            (".", "nope/../link/*.rs"),
            ("..", "*"),
            ("link", "*"),
            ("nope/../link", "*"),
        ] {
            let err = glob(&rd, dir, pattern, 0, None, &cancel).unwrap_err();
            assert!(
                err.message.contains("outside the root") || err.message.contains("cannot"),
                "{dir} {pattern}: {err:?}"
            );
        }
        // The walk does not follow the symlink either.
        assert!(run(&root, "**/x.rs", ".", 0, None)
            .content_text()
            .starts_with("No files"));
        // A literal prefix that does not exist matches nothing.
        assert!(run(&root, "missing/*.rs", ".", 0, None)
            .content_text()
            .starts_with("No files"));
        // Symlinks that stay inside the root work, as the walk's start.
        std::os::unix::fs::symlink("src", root.join("alias")).unwrap();
        assert_eq!(sorted(&run(&root, "*.rs", "alias", 0, None)), ["src/b.rs"]);
        assert_eq!(
            sorted(&run(&root, "alias/*.rs", ".", 0, None)),
            ["src/b.rs"]
        );
    }

    #[test]
    fn literal_prefixes() {
        assert_eq!(
            literal_prefix("src/lib/**/*.rs"),
            (PathBuf::from("src/lib"), "**/*.rs".to_string())
        );
        assert_eq!(literal_prefix("*.rs"), (PathBuf::new(), "*.rs".to_string()));
        assert_eq!(
            literal_prefix("./a/*.rs"),
            (PathBuf::from("a"), "*.rs".to_string())
        );
        assert_eq!(
            literal_prefix("/etc/*"),
            (PathBuf::from("/etc"), "*".to_string())
        );
    }
}
