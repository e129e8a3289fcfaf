//! `read`: a file's lines with numbers, a window at a time.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::notebook::{render, Notebook};
use super::{confine, display_path, str_arg};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Lines returned when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 2000;

pub(crate) struct Read;

#[async_trait]
impl Tool for Read {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "read",
            "Read a text file. Returns its lines numbered from 1, like `cat -n`. By default up to \
             2000 lines from the start; use `offset` (1-based line to start at) and `limit` to read \
             a window of a long file. Lines longer than 2000 characters are cut. Binary files are \
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
        let given = str_arg(&args, "path")?;
        let path = confine(ctx.root(), given)?;
        let shown = display_path(ctx.root(), &path);
        let meta = tokio::fs::metadata(&path)
            .await
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if meta.is_dir() {
            return Err(format!("{shown} is a directory, not a file").into());
        }
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|e| format!("cannot read {shown}: {e}"))?;
        if bytes.is_empty() {
            return Ok(
                ToolOutput::text(format!("({shown} is empty)")).with_metadata(json!({"total": 0}))
            );
        }
        let probe = &bytes[..bytes.len().min(8192)];
        if probe.contains(&0) {
            return Err(format!(
                "{shown} is a binary file ({} bytes); read only reads text",
                bytes.len()
            )
            .into());
        }
        let text = String::from_utf8_lossy(&bytes);
        let offset = args
            .get("offset")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1) as usize;
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map(|l| l as usize)
            .unwrap_or(DEFAULT_LIMIT)
            .max(1);
        if path.extension().and_then(|e| e.to_str()) == Some("ipynb") {
            let nb = Notebook::parse(&text, &shown)?;
            let (rendered, meta) = render(&nb, offset, limit, &shown)?;
            return Ok(ToolOutput::text(rendered).with_metadata(meta));
        }
        Ok(number_lines(&text, offset, limit, &shown)?)
    }
}

/// The numbered window `offset..offset+limit` of `text`, with metadata when it is cut.
pub(crate) fn number_lines(
    text: &str,
    offset: usize,
    limit: usize,
    shown: &str,
) -> Result<ToolOutput, ToolError> {
    let total = text.lines().count();
    if offset > total {
        return Err(
            format!("offset {offset} is past the end of {shown}, which has {total} lines").into(),
        );
    }
    let mut out = String::with_capacity(text.len().min(1 << 20));
    let mut last = offset - 1;
    let mut cut_lines = 0;
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let shown_line = match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((end, _)) => {
                cut_lines += 1;
                &line[..end]
            }
            None => line,
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_metadata() {
        let text = "a\nb\nc\nd\n";
        let out = number_lines(text, 2, 2, "f").unwrap();
        assert_eq!(out.content_text(), "     2\tb\n     3\tc\n");
        let meta = out.metadata.unwrap();
        assert_eq!(meta["nextOffset"], 4);
        assert_eq!(meta["total"], 4);
        assert_eq!(meta["truncated"], true);
        let all = number_lines(text, 1, 10, "f").unwrap();
        assert!(all.metadata.is_none());
        assert!(number_lines(text, 9, 1, "f").is_err());
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        let out = number_lines(&long, 1, 10, "f").unwrap();
        assert_eq!(out.content_text().len(), 6 + 1 + MAX_LINE_CHARS + 1);
        assert_eq!(out.metadata.unwrap()["linesCut"], 1);
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
}
