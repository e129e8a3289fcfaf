//! `multi_edit`: several edits to one file, applied in order, all or none.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::edit::apply_edit;
use super::load::{load_text, MAX_LOAD_BYTES};
use super::path::RootDir;
use super::{atomic_write, str_arg, WriteOptions};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

pub(crate) struct MultiEdit;

/// Apply `edits` (each `{old_string, new_string, replace_all?}`) in order to `text`; the first
/// failing edit fails them all. Returns the new text and the replacements of each edit.
pub(crate) fn apply_edits(
    text: &str,
    edits: &[Value],
    shown: &str,
) -> Result<(String, Vec<usize>), ToolError> {
    if edits.is_empty() {
        return Err("edits is empty: give at least one edit".into());
    }
    let mut current = text.to_string();
    let mut counts = Vec::with_capacity(edits.len());
    for (i, edit) in edits.iter().enumerate() {
        let n = i + 1;
        let fail = |e: ToolError| -> ToolError {
            format!(
                "edit {n} of {}: {}; no edit was applied",
                edits.len(),
                e.message
            )
            .into()
        };
        let old = str_arg(edit, "old_string").map_err(fail)?;
        let new = str_arg(edit, "new_string").map_err(fail)?;
        let replace_all = edit
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let (next, count) = apply_edit(&current, old, new, replace_all, shown).map_err(fail)?;
        current = next;
        counts.push(count);
    }
    Ok((current, counts))
}

#[async_trait]
impl Tool for MultiEdit {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "multi_edit",
            "Make several edits to one file at once. Each edit is like `edit`: `old_string` \
             must match exactly and be unique unless `replace_all` is true. Edits apply in \
             order, each to the result of the ones before it. Either every edit applies or \
             none does (the file is left unchanged), and the write is atomic.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory or absolute inside it."},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "description": "The edits, applied in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "old_string": {"type": "string", "description": "The exact text to replace."},
                                "new_string": {"type": "string", "description": "The text to put in its place."},
                                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
                            },
                            "required": ["old_string", "new_string"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["path", "edits"],
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
        let edits = args
            .get("edits")
            .and_then(Value::as_array)
            .ok_or_else(|| ToolError::new("missing array argument `edits`"))?
            .clone();
        let root = ctx.root.clone();
        let (counts, shown) = tokio::task::spawn_blocking(move || {
            let root = RootDir::for_call(&root)?;
            let shown =
                super::path::shown(&root.relative(&given)?.display().to_string()).into_owned();
            let text = load_text(&root, &given, MAX_LOAD_BYTES)?;
            let (updated, counts) = apply_edits(&text, &edits, &shown)?;
            drop(text);
            let written = atomic_write(&root, &given, updated.as_bytes(), WriteOptions::default())?;
            Ok::<_, ToolError>((counts, written.shown))
        })
        .await
        .map_err(|e| format!("edit failed: {e}"))??;
        let total: usize = counts.iter().sum();
        let e = if counts.len() == 1 { "" } else { "s" };
        let r = if total == 1 { "" } else { "s" };
        Ok(ToolOutput::text(format!(
            "Edited {shown}: {} edit{e} applied, {total} replacement{r}",
            counts.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_or_none() {
        let edits = vec![
            json!({"old_string": "a", "new_string": "b", "replace_all": true}),
            json!({"old_string": "b b", "new_string": "c"}),
        ];
        // Edits see the result of the edits before them.
        assert_eq!(
            apply_edits("a a x", &edits, "f").unwrap(),
            ("c x".to_string(), vec![2, 1])
        );
        let bad = vec![
            json!({"old_string": "x", "new_string": "y"}),
            json!({"old_string": "missing", "new_string": "z"}),
        ];
        let err = apply_edits("x", &bad, "f").unwrap_err();
        assert!(err.message.starts_with("edit 2 of 2"), "{}", err.message);
        assert!(err.message.contains("no edit was applied"));
        let dup = vec![json!({"old_string": "x", "new_string": "y"})];
        assert!(apply_edits("x x", &dup, "f")
            .unwrap_err()
            .message
            .contains("2 times"));
        assert!(apply_edits("x", &[], "f").is_err());
        assert!(apply_edits("x", &[json!({"old_string": "x"})], "f").is_err());
    }

    #[tokio::test]
    async fn file_unchanged_on_failure_and_escapes_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("f.txt"), "one two three\n").unwrap();
        let ctx = || ToolContext::detached(&root, "multi_edit");
        let err = MultiEdit
            .call(
                json!({"path": "f.txt", "edits": [
                    {"old_string": "one", "new_string": "1"},
                    {"old_string": "four", "new_string": "4"}
                ]}),
                ctx(),
            )
            .await
            .unwrap_err();
        assert!(err.message.contains("edit 2"));
        assert_eq!(
            std::fs::read_to_string(root.join("f.txt")).unwrap(),
            "one two three\n"
        );
        let out = MultiEdit
            .call(
                json!({"path": "f.txt", "edits": [
                    {"old_string": "one", "new_string": "1"},
                    {"old_string": "three", "new_string": "3"}
                ]}),
                ctx(),
            )
            .await
            .unwrap();
        assert_eq!(
            out.content_text(),
            "Edited f.txt: 2 edits applied, 2 replacements"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("f.txt")).unwrap(),
            "1 two 3\n"
        );
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.txt"), "one").unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.txt"), root.join("link.txt")).unwrap();
        for p in [
            "../o.txt".to_string(),
            outside.path().join("o.txt").display().to_string(),
            "link.txt".to_string(),
        ] {
            let r = MultiEdit
                .call(
                    json!({"path": p, "edits": [{"old_string": "one", "new_string": "1"}]}),
                    ctx(),
                )
                .await;
            assert!(r.is_err(), "{p}");
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("o.txt")).unwrap(),
            "one"
        );
    }
}
