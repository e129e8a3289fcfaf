//! `write`: create or overwrite a file, atomically.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::path::RootDir;
use super::{atomic_write, str_arg, WriteOptions};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

pub(crate) struct Write;

#[async_trait]
impl Tool for Write {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "write",
            "Create a file, or overwrite it, with the given content. Parent directories are \
             created. The write is atomic: the file holds either the old or the new content. \
             Prefer `edit` for changing part of an existing file.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory or absolute inside it."},
                    "content": {"type": "string", "description": "The whole new content of the file."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        )
        .with_hints(Hints::destructive())
    }

    fn source(&self) -> Source {
        Source::Builtin
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let given = str_arg(&args, "path")?.to_string();
        let content = str_arg(&args, "content")?.to_string();
        let root = ctx.root.clone();
        let bytes = content.len();
        let written = tokio::task::spawn_blocking(move || {
            let root = RootDir::for_call(&root)?;
            atomic_write(&root, &given, content.as_bytes(), WriteOptions::default())
        })
        .await
        .map_err(|e| format!("write failed: {e}"))??;
        let verb = if written.existed {
            "Overwrote"
        } else {
            "Created"
        };
        Ok(ToolOutput::text(format!(
            "{verb} {} ({bytes} bytes)",
            written.shown
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn write(root: &std::path::Path, args: Value) -> Result<ToolOutput, ToolError> {
        Write.call(args, ToolContext::detached(root, "write")).await
    }

    #[tokio::test]
    async fn creates_overwrites_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.txt"), root.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linkdir")).unwrap();
        let out = write(&root, json!({"path": "a/b/c.txt", "content": "hi"}))
            .await
            .unwrap();
        assert_eq!(out.content_text(), "Created a/b/c.txt (2 bytes)");
        let out = write(&root, json!({"path": "a/b/c.txt", "content": "bye"}))
            .await
            .unwrap();
        assert_eq!(out.content_text(), "Overwrote a/b/c.txt (3 bytes)");
        assert_eq!(
            std::fs::read_to_string(root.join("a/b/c.txt")).unwrap(),
            "bye"
        );
        let o = outside.path().join("new.txt").display().to_string();
        for p in [
            "../new.txt",
            "a/../../new.txt",
            o.as_str(),
            "link.txt",
            "linkdir/new.txt",
        ] {
            let err = write(&root, json!({"path": p, "content": "x"}))
                .await
                .unwrap_err();
            assert!(
                err.message.contains("outside the root"),
                "{p}: {}",
                err.message
            );
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("o.txt")).unwrap(),
            "outside"
        );
        assert!(!outside.path().join("new.txt").exists());
        assert!(write(&root, json!({"path": "a", "content": "x"}))
            .await
            .is_err());
        assert!(write(&root, json!({"path": "x"})).await.is_err());
    }
}
