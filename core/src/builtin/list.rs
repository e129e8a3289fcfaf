//! `list`: a directory tree, .gitignore-aware, with extra ignore patterns, cut at 1000 entries.

use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::path::RootDir;
use super::walk::{overrides, walker, Beneath};
use super::{display_path, opt_str, opt_usize};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Entries shown at most.
pub const MAX_ENTRIES: usize = 1000;

pub(crate) struct List;

#[async_trait]
impl Tool for List {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "list",
            "List a directory as a tree (directories end with `/`), recursively. Hidden files \
             and files ignored by .gitignore are left out; `ignore` adds glob patterns to leave \
             out (e.g. `node_modules`, `*.log`). `depth` limits how deep it goes. At most 1000 \
             entries; when there are more, the metadata says so. Prefer `glob` and `grep` to \
             find specific files.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory to list (default: the working directory)."},
                    "ignore": {"type": "array", "items": {"type": "string"}, "description": "Glob patterns of entries to leave out."},
                    "depth": {"type": "integer", "minimum": 1, "description": "How many levels to descend (default: all)."}
                },
                "additionalProperties": false
            }),
        )
        .with_hints(Hints::read_only())
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let dir = opt_str(&args, "path").unwrap_or(".").to_string();
        let ignore: Vec<String> = match args.get("ignore") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| ToolError::new("`ignore` must be a list of strings"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`ignore` must be a list of strings".into()),
        };
        let depth = opt_usize(&args, "depth")?;
        let root = ctx.root.clone();
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || {
            let root = RootDir::for_call(&root)?;
            list(&root, &dir, &ignore, depth, &cancel)
        })
        .await
        .map_err(|e| format!("list failed: {e}"))?
    }
}

/// List the directory `given` (the model's path, resolved beneath `root`).
pub(crate) fn list(
    root: &RootDir,
    given: &str,
    ignore: &[String],
    depth: Option<usize>,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let (dir, meta) = root.existing(given)?;
    let dir = dir.as_path();
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", display_path(root.path(), dir)).into());
    }
    let mut beneath = Beneath::new(root);
    let mut w = walker(dir);
    w.sort_by_file_name(|a, b| a.cmp(b)).max_depth(depth);
    if !ignore.is_empty() {
        let globs: Vec<String> = ignore
            .iter()
            .map(|g| format!("!{}", g.trim_end_matches('/')))
            .collect();
        let refs: Vec<&str> = globs.iter().map(String::as_str).collect();
        w.overrides(overrides(dir, &refs)?);
    }
    let mut entries: Vec<(PathBuf, bool)> = Vec::new();
    let mut total = 0usize;
    for entry in w.build() {
        if cancel.is_cancelled() {
            return Err("cancelled".into());
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        // Looked up beneath the root: an entry the walk found outside it is not listed.
        let Some(st) = beneath.stat(entry.path()) else {
            continue;
        };
        total += 1;
        if entries.len() < MAX_ENTRIES {
            let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
            let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
            entries.push((rel.to_path_buf(), is_dir));
        }
    }
    let shown = super::path::shown(&display_path(root.path(), dir)).into_owned();
    let mut out = String::new();
    out.push_str(if shown == "." {
        "./"
    } else {
        shown.trim_end_matches('/')
    });
    if shown != "." {
        out.push('/');
    }
    out.push('\n');
    for (rel, is_dir) in &entries {
        let level = rel.components().count();
        for _ in 0..level {
            out.push_str("  ");
        }
        out.push_str("- ");
        out.push_str(
            &rel.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
        );
        if *is_dir {
            out.push('/');
        }
        out.push('\n');
    }
    if entries.is_empty() {
        out.push_str("  (empty)\n");
    }
    let mut output = ToolOutput::text(out);
    if total > entries.len() {
        output = output.with_metadata(json!({
            "truncated": true,
            "total": total,
            "shown": entries.len(),
        }));
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn run(root: &Path, dir: &str, ignore: &[&str], depth: Option<usize>) -> ToolOutput {
        try_run(root, dir).map(|_| ()).unwrap();
        let root = RootDir::open(root).unwrap();
        let ignore: Vec<String> = ignore.iter().map(|s| s.to_string()).collect();
        list(&root, dir, &ignore, depth, &CancellationToken::new()).unwrap()
    }

    fn try_run(root: &Path, dir: &str) -> Result<ToolOutput, ToolError> {
        let root = RootDir::open(root).unwrap();
        list(&root, dir, &[], None, &CancellationToken::new())
    }

    #[test]
    fn tree_with_ignores() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for f in [
            "b.txt",
            "a/x.rs",
            "a/y.log",
            "a/inner/z.rs",
            "node_modules/m/index.js",
            ".git/HEAD",
            "build/out.o",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        let out = run(&root, ".", &["node_modules", "*.log"], None);
        assert_eq!(
            out.content_text(),
            "./\n  - a/\n    - inner/\n      - z.rs\n    - x.rs\n  - b.txt\n"
        );
        assert!(out.metadata.is_none());
        let out = run(&root, "a", &[], Some(1));
        assert_eq!(out.content_text(), "a/\n  - inner/\n  - x.rs\n  - y.log\n");
    }

    #[test]
    fn capped_with_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for i in 0..(MAX_ENTRIES + 20) {
            std::fs::write(root.join(format!("f{i:04}")), "").unwrap();
        }
        let out = run(&root, ".", &[], None);
        assert_eq!(out.content_text().lines().count(), MAX_ENTRIES + 1);
        let meta = out.metadata.unwrap();
        assert_eq!(meta["truncated"], true);
        assert_eq!(meta["total"], MAX_ENTRIES + 20);
    }

    #[test]
    fn escapes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        for p in ["..", "/", "link", "link/"] {
            let err = try_run(&root, p).unwrap_err();
            assert!(err.message.contains("outside the root"), "{p}: {err:?}");
        }
        // Listed, but not followed.
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let out = run(&root, ".", &[], None);
        assert_eq!(out.content_text(), "./\n  - link\n");
    }
}
