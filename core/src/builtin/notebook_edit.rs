//! Opt-in `notebook_edit`: replace, insert or delete one cell of a Jupyter notebook. The file
//! stays valid nbformat 4, and every byte outside the edited cell stays as it was.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::load::{load_text, MAX_LOAD_BYTES};
use super::notebook::{new_cell, source_lines, Notebook};
use super::path::RootDir;
use super::{atomic_write, opt_str, str_arg, WriteOptions};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

pub(crate) struct NotebookEdit;

const CELL_TYPES: [&str; 3] = ["code", "markdown", "raw"];

/// A fresh cell id, unique in the notebook (8 hex digits, as Jupyter makes them).
fn fresh_id(nb: &Notebook<'_>) -> String {
    loop {
        let id = format!("{:08x}", rand::random::<u32>());
        if nb.find(&id).is_none() {
            return id;
        }
    }
}

/// The edited notebook text and a sentence about it.
pub(crate) fn edit_notebook(
    text: &str,
    args: &Value,
    shown: &str,
) -> Result<(String, String, Value), ToolError> {
    let nb = Notebook::parse(text, shown)?;
    let mode = opt_str(args, "edit_mode").unwrap_or("replace");
    let cell_type = opt_str(args, "cell_type");
    if let Some(t) = cell_type {
        if !CELL_TYPES.contains(&t) {
            return Err(format!("cell_type {t:?} is not one of code, markdown, raw").into());
        }
    }
    let cell_id = opt_str(args, "cell_id");
    let index = match cell_id {
        Some(id) => Some(nb.find(id).ok_or_else(|| {
            let ids: Vec<String> = nb
                .cells()
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    c.get("id").and_then(Value::as_str).map_or_else(
                        || format!("cell-{i}"),
                        |id| super::path::shown(id).into_owned(),
                    )
                })
                .take(50)
                .collect();
            ToolError::new(format!(
                "no cell {id:?} in {shown}; its cells are: {}",
                if ids.is_empty() {
                    "(none)".to_string()
                } else {
                    ids.join(", ")
                }
            ))
        })?),
        None => None,
    };
    let with_ids = nb.minor() >= 5;
    match mode {
        "replace" => {
            let i = index.ok_or_else(|| ToolError::new("replace needs a `cell_id`"))?;
            let source = str_arg(args, "new_source")?;
            let Value::Object(mut cell) = nb.cells()[i].clone() else {
                return Err(format!("cell {i} of {shown} is not an object").into());
            };
            let old_type = cell
                .get("cell_type")
                .and_then(Value::as_str)
                .unwrap_or("code")
                .to_string();
            let new_type = cell_type.unwrap_or(&old_type).to_string();
            cell.insert("cell_type".into(), json!(new_type));
            cell.insert("source".into(), source_lines(source));
            if new_type == "code" {
                // The source changed: old outputs no longer belong to it.
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), json!([]));
                cell.remove("attachments");
            } else {
                cell.remove("execution_count");
                cell.remove("outputs");
            }
            let id = cell
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("cell-{i}"), str::to_string);
            let new_text = nb.replace(i, &Value::Object(cell));
            Ok((
                new_text,
                format!(
                    "Replaced cell {} ({new_type}) in {shown}",
                    super::path::shown(&id)
                ),
                json!({"cellId": id, "cells": nb.cells().len()}),
            ))
        }
        "insert" => {
            let t = cell_type.ok_or_else(|| {
                ToolError::new("insert needs a `cell_type` (code, markdown or raw)")
            })?;
            let source = str_arg(args, "new_source")?;
            let id = with_ids.then(|| fresh_id(&nb));
            let cell = new_cell(t, source, id.clone());
            let new_text = nb.insert(index, &cell);
            let shown_id = id.unwrap_or_else(|| format!("cell-{}", index.map_or(0, |i| i + 1)));
            let place = match cell_id {
                Some(after) => format!("after cell {}", super::path::shown(after)),
                None => "at the top".to_string(),
            };
            Ok((
                new_text,
                format!(
                    "Inserted {t} cell {} {place} in {shown}",
                    super::path::shown(&shown_id)
                ),
                json!({"cellId": shown_id, "cells": nb.cells().len() + 1}),
            ))
        }
        "delete" => {
            let i = index.ok_or_else(|| ToolError::new("delete needs a `cell_id`"))?;
            let id = cell_id.unwrap_or_default().to_string();
            Ok((
                nb.delete(i),
                format!("Deleted cell {} from {shown}", super::path::shown(&id)),
                json!({"cellId": id, "cells": nb.cells().len() - 1}),
            ))
        }
        other => Err(format!("edit_mode {other:?} is not one of replace, insert, delete").into()),
    }
}

#[async_trait]
impl Tool for NotebookEdit {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "notebook_edit",
            "Edit one cell of a Jupyter notebook (.ipynb). Cells are named by the ids `read` \
             shows. edit_mode `replace` (default) sets the source of cell `cell_id` (a code \
             cell's outputs are cleared; `cell_type` may change its type); `insert` adds a new \
             cell after `cell_id`, or at the top without one (`cell_type` required); `delete` \
             removes cell `cell_id`. The rest of the notebook is left exactly as it was.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The .ipynb file, relative to the working directory or absolute inside it."},
                    "cell_id": {"type": "string", "description": "The cell to replace or delete, or to insert after."},
                    "new_source": {"type": "string", "description": "The cell's new source (replace, insert)."},
                    "cell_type": {"type": "string", "enum": CELL_TYPES, "description": "The cell type: required for insert, optional for replace."},
                    "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "description": "What to do (default replace)."}
                },
                "required": ["path"],
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
        let root = ctx.root.clone();
        let (message, meta) = tokio::task::spawn_blocking(move || {
            let root = RootDir::for_call(&root)?;
            let rel = root.relative(&given)?;
            let shown = super::path::shown(&rel.display().to_string()).into_owned();
            if rel.extension().and_then(|e| e.to_str()) != Some("ipynb") {
                return Err(ToolError::new(format!(
                    "{} is not a notebook (.ipynb); use edit for other files",
                    super::path::shown(&given)
                )));
            }
            let text = load_text(&root, &given, MAX_LOAD_BYTES)?;
            let (updated, message, meta) = edit_notebook(&text, &args, &shown)?;
            // The edit must leave a notebook that parses with the same shape.
            Notebook::parse(&updated, &shown)
                .map_err(|e| format!("the edit would break {shown}: {e}"))?;
            drop(text);
            atomic_write(&root, &given, updated.as_bytes(), WriteOptions::default())?;
            Ok((message, meta))
        })
        .await
        .map_err(|e| format!("notebook_edit failed: {e}"))??;
        Ok(ToolOutput::text(message).with_metadata(meta))
    }
}

#[cfg(test)]
mod tests {
    use super::super::notebook::tests::NB;
    use super::*;

    fn edit(args: Value) -> Result<(String, String, Value), ToolError> {
        edit_notebook(NB, &args, "nb.ipynb")
    }

    #[test]
    fn replace_insert_delete() {
        let (text, msg, _) = edit(json!({"cell_id": "calc", "new_source": "print(42)\n"})).unwrap();
        assert_eq!(msg, "Replaced cell calc (code) in nb.ipynb");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["cells"][1]["source"], json!(["print(42)\n"]));
        assert_eq!(v["cells"][1]["outputs"], json!([]));
        assert_eq!(v["cells"][1]["execution_count"], Value::Null);
        assert_eq!(v["cells"][1]["metadata"], json!({"tags": []}));
        // Type change: a markdown cell has no outputs.
        let (text, _, _) =
            edit(json!({"cell_id": "calc", "new_source": "*x*", "cell_type": "markdown"})).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["cells"][1]["cell_type"], "markdown");
        assert!(v["cells"][1].get("outputs").is_none());
        let (text, msg, meta) =
            edit(json!({"edit_mode": "insert", "cell_type": "code", "new_source": "a = 1"}))
                .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let id = v["cells"][0]["id"].as_str().unwrap().to_string();
        assert_eq!(id.len(), 8);
        assert_eq!(
            msg,
            format!("Inserted code cell {id} at the top in nb.ipynb")
        );
        assert_eq!(meta["cells"], 3);
        let (text, _, _) = edit(json!({"edit_mode": "insert", "cell_id": "intro", "cell_type": "markdown", "new_source": "b"}))
            .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["cells"][1]["source"], json!(["b"]));
        let (text, _, _) = edit(json!({"edit_mode": "delete", "cell_id": "intro"})).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["cells"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn bad_edits_are_clear() {
        let e = edit(json!({"cell_id": "nope", "new_source": "x"})).unwrap_err();
        assert!(
            e.message.contains("its cells are: intro, calc"),
            "{}",
            e.message
        );
        assert!(edit(json!({"new_source": "x"})).is_err());
        assert!(edit(json!({"edit_mode": "insert", "new_source": "x"}))
            .unwrap_err()
            .message
            .contains("cell_type"));
        assert!(edit(json!({"edit_mode": "delete"})).is_err());
        assert!(edit(json!({"edit_mode": "move", "cell_id": "calc"})).is_err());
        assert!(edit(json!({"cell_id": "calc", "new_source": "x", "cell_type": "sql"})).is_err());
        assert!(edit(json!({"cell_id": "calc"})).is_err());
    }

    /// A `cells` key the byte scanner and the JSON parser would read differently (a duplicate,
    /// whose last copy is the one JSON parsers keep, or an escaped spelling) must never make
    /// an edit land in the copy nobody reads while the tool reports success.
    #[test]
    fn an_ambiguous_cells_key_is_refused_not_edited_in_the_wrong_place() {
        let cell = |s: &str| {
            format!(r#"{{"cell_type": "raw", "id": "a", "metadata": {{}}, "source": "{s}"}}"#)
        };
        let head = r#""nbformat": 4, "nbformat_minor": 5, "metadata": {}"#;
        for text in [
            format!(
                r#"{{"cells": [{}], {head}, "cells": [{}]}}"#,
                cell("hidden"),
                cell("live")
            ),
            format!(
                r#"{{"cells": [{}], {head}, "cells": [{}]}}"#,
                cell("hidden"),
                cell("live")
            ),
            format!(
                r#"{{"cells": [{}], {head}, "cells": [{}]}}"#,
                cell("live"),
                cell("hidden")
            ),
        ] {
            let args = json!({"cell_id": "a", "new_source": "new"});
            match edit_notebook(&text, &args, "nb.ipynb") {
                Err(e) => assert!(
                    e.message.contains("cannot locate the cells"),
                    "{}",
                    e.message
                ),
                Ok((edited, _, _)) => {
                    let v: Value = serde_json::from_str(&edited).unwrap();
                    assert_eq!(v["cells"][0]["source"], json!(["new"]), "{text}\n{edited}");
                }
            }
        }
    }

    #[tokio::test]
    async fn confined_to_notebooks_in_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.ipynb"), NB).unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.ipynb"), root.join("l.ipynb")).unwrap();
        std::fs::write(root.join("x.txt"), NB).unwrap();
        let ctx = || ToolContext::detached(&root, "notebook_edit");
        let args = |p: &str| json!({"path": p, "cell_id": "calc", "new_source": "x"});
        let o = outside.path().join("o.ipynb").display().to_string();
        for p in [
            "../o.ipynb",
            o.as_str(),
            "l.ipynb",
            "x.txt",
            "missing.ipynb",
        ] {
            assert!(NotebookEdit.call(args(p), ctx()).await.is_err(), "{p}");
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("o.ipynb")).unwrap(),
            NB
        );
        std::fs::write(root.join("n.ipynb"), NB).unwrap();
        let out = NotebookEdit.call(args("n.ipynb"), ctx()).await.unwrap();
        assert_eq!(out.content_text(), "Replaced cell calc (code) in n.ipynb");
    }
}
