//! `edit`: replace one exact string in a file (or every occurrence with `replace_all`).

use async_trait::async_trait;
use serde_json::{json, Value};

use super::load::{load_text, MAX_LOAD_BYTES};
use super::path::RootDir;
use super::{atomic_write, str_arg, WriteOptions};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

pub(crate) struct Edit;

/// Apply one edit to `text`; the error says how many matches were found.
pub(crate) fn apply_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    shown: &str,
) -> Result<(String, usize), ToolError> {
    if old.is_empty() {
        return Err("old_string must not be empty".into());
    }
    if old == new {
        return Err("old_string and new_string are the same; nothing to change".into());
    }
    let count = text.matches(old).count();
    match count {
        0 => Err(format!("old_string was not found in {shown} (0 matches)").into()),
        n if n > 1 && !replace_all => Err(format!(
            "old_string matches {n} times in {shown}; give more surrounding context to make it \
             unique, or set replace_all to replace every match"
        )
        .into()),
        n if replace_all => Ok((text.replace(old, new), n)),
        _ => Ok((text.replacen(old, new, 1), 1)),
    }
}

#[async_trait]
impl Tool for Edit {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "edit",
            "Replace an exact string in a file. `old_string` must match the file exactly \
             (whitespace and indentation included) and be unique in it, unless `replace_all` is \
             true, which replaces every occurrence. The write is atomic.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory or absolute inside it."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
                },
                "required": ["path", "old_string", "new_string"],
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
        let old = str_arg(&args, "old_string")?.to_string();
        let new = str_arg(&args, "new_string")?.to_string();
        let replace_all = args
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let root = ctx.root.clone();
        let (n, shown) = tokio::task::spawn_blocking(move || {
            let root = RootDir::for_call(&root)?;
            let shown =
                super::path::shown(&root.relative(&given)?.display().to_string()).into_owned();
            let text = load_text(&root, &given, MAX_LOAD_BYTES)?;
            let (updated, n) = apply_edit(&text, &old, &new, replace_all, &shown)?;
            drop(text);
            let written = atomic_write(&root, &given, updated.as_bytes(), WriteOptions::default())?;
            Ok::<_, ToolError>((n, written.shown))
        })
        .await
        .map_err(|e| format!("edit failed: {e}"))??;
        let s = if n == 1 { "" } else { "s" };
        Ok(ToolOutput::text(format!(
            "Edited {shown}: replaced {n} occurrence{s}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniqueness_rules() {
        assert_eq!(
            apply_edit("a b a", "b", "c", false, "f").unwrap().0,
            "a c a"
        );
        let err = apply_edit("a b a", "a", "c", false, "f").unwrap_err();
        assert!(err.message.contains("2 times"), "{}", err.message);
        assert_eq!(
            apply_edit("a b a", "a", "c", true, "f").unwrap(),
            ("c b c".into(), 2)
        );
        assert!(apply_edit("a", "z", "c", false, "f")
            .unwrap_err()
            .message
            .contains("0 matches"));
        assert!(apply_edit("a", "a", "a", false, "f").is_err());
        assert!(apply_edit("a", "", "b", false, "f").is_err());
    }

    #[tokio::test]
    async fn edits_in_place_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.txt"), "old").unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.txt"), root.join("link.txt")).unwrap();
        std::fs::write(root.join("f.txt"), "old old\n").unwrap();
        let ctx = || ToolContext::detached(&root, "edit");
        let o = outside.path().join("o.txt").display().to_string();
        for p in ["../o.txt", o.as_str(), "link.txt"] {
            let err = Edit
                .call(
                    json!({"path": p, "old_string": "old", "new_string": "new"}),
                    ctx(),
                )
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
            "old"
        );
        let err = Edit
            .call(
                json!({"path": "f.txt", "old_string": "old", "new_string": "new"}),
                ctx(),
            )
            .await
            .unwrap_err();
        assert!(err.message.contains("2 times"));
        assert_eq!(
            std::fs::read_to_string(root.join("f.txt")).unwrap(),
            "old old\n"
        );
        let out = Edit
            .call(
                json!({"path": "f.txt", "old_string": "old", "new_string": "new", "replace_all": true}),
                ctx(),
            )
            .await
            .unwrap();
        assert_eq!(out.content_text(), "Edited f.txt: replaced 2 occurrences");
        assert_eq!(
            std::fs::read_to_string(root.join("f.txt")).unwrap(),
            "new new\n"
        );
    }
}
