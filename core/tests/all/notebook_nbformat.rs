//! Notebooks written by `notebook_edit` validate with the `nbformat` package (PyPI), the
//! reference implementation of the format.
//!
//! Needs `python3` with `nbformat` (`pip install nbformat`). Without it the test says so and
//! passes, unless `CONTENOX_REQUIRE_NBFORMAT=1` (CI sets it), where its absence fails.

use std::path::Path;
use std::process::Command;

use contenox::builtin::builtin;
use contenox::ToolContext;
use serde_json::{json, Value};

const VALIDATE: &str = r#"
import sys, nbformat
for p in sys.argv[1:]:
    nb = nbformat.read(p, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    print("valid", p, nb.nbformat, nb.nbformat_minor, len(nb.cells))
"#;

fn nbformat_available() -> bool {
    Command::new("python3")
        .args(["-c", "import nbformat"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A notebook as Jupyter writes it, with ids (4.5) or without (4.4).
fn notebook(minor: u64) -> String {
    let id = |s: &str| if minor >= 5 { json!(s) } else { Value::Null };
    let mut cells = vec![
        json!({"cell_type": "markdown", "id": id("intro"), "metadata": {}, "source": ["# Title\n", "Text with \"quotes\" and ]} brackets"]}),
        json!({"cell_type": "code", "execution_count": 2, "id": id("calc"), "metadata": {"tags": ["x"]},
               "outputs": [{"name": "stdout", "output_type": "stream", "text": ["4\n"]},
                           {"data": {"text/plain": ["4"], "image/png": "iVBORw0KGgo="}, "execution_count": 2, "metadata": {}, "output_type": "execute_result"}],
               "source": ["print(2 + 2)\n", "2 + 2"]}),
        json!({"attachments": {}, "cell_type": "markdown", "id": id("notes"), "metadata": {}, "source": "a string source"}),
    ];
    for c in &mut cells {
        if c["id"].is_null() {
            c.as_object_mut().unwrap().remove("id");
        }
    }
    let nb = json!({
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python", "version": "3.12.0"}},
        "nbformat": 4,
        "nbformat_minor": minor,
    });
    let mut text = serde_json::to_string_pretty(&nb).unwrap();
    text.push('\n');
    text
}

async fn edit(root: &Path, args: Value) -> String {
    let tool = builtin("notebook_edit").unwrap();
    let out = tool
        .call(args.clone(), ToolContext::detached(root, "notebook_edit"))
        .await
        .unwrap_or_else(|e| panic!("{args}: {e}"));
    assert!(!out.is_error, "{args}: {out:?}");
    out.content_text()
}

#[tokio::test]
async fn edited_notebooks_validate_with_nbformat() {
    let required = std::env::var("CONTENOX_REQUIRE_NBFORMAT").is_ok_and(|v| v == "1");
    if !nbformat_available() {
        assert!(
            !required,
            "CONTENOX_REQUIRE_NBFORMAT=1 but python3 cannot import nbformat"
        );
        eprintln!("skipped: python3 cannot import nbformat (pip install nbformat)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let mut files = Vec::new();
    for (minor, first, ids) in [(5, "intro", true), (4, "cell-0", false)] {
        let name = format!("nb{minor}.ipynb");
        std::fs::write(root.join(&name), notebook(minor)).unwrap();
        let calc = if ids { "calc" } else { "cell-1" };
        edit(
            &root,
            json!({"path": name, "cell_id": calc, "new_source": "x = 1\nprint(x)\n"}),
        )
        .await;
        edit(
            &root,
            json!({"path": name, "cell_id": first, "new_source": "import os", "cell_type": "code"}),
        )
        .await;
        let msg = edit(&root, json!({"path": name, "edit_mode": "insert", "cell_type": "markdown", "new_source": "## New\n\ntext"})).await;
        assert!(msg.contains("at the top"), "{msg}");
        edit(&root, json!({"path": name, "edit_mode": "insert", "cell_id": calc, "cell_type": "raw", "new_source": ""})).await;
        // Markdown with attachments becomes code: the attachments must go.
        let notes = if ids { "notes" } else { "cell-4" };
        edit(
            &root,
            json!({"path": name, "cell_id": notes, "new_source": "y = 2", "cell_type": "code"}),
        )
        .await;
        let delete = if ids {
            "calc".to_string()
        } else {
            "cell-2".to_string()
        };
        edit(
            &root,
            json!({"path": name, "edit_mode": "delete", "cell_id": delete}),
        )
        .await;
        let text = std::fs::read_to_string(root.join(&name)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["cells"].as_array().unwrap().len(), 4, "{text}");
        assert_eq!(v["nbformat_minor"], minor);
        assert_eq!(v["metadata"]["language_info"]["version"], "3.12.0");
        files.push(root.join(&name));
    }
    // Delete down to no cells, then insert into the empty list.
    let name = "empty.ipynb";
    std::fs::write(root.join(name), notebook(5)).unwrap();
    for id in ["intro", "calc", "notes"] {
        edit(
            &root,
            json!({"path": name, "edit_mode": "delete", "cell_id": id}),
        )
        .await;
    }
    files.push(root.join(name));
    let name2 = "refilled.ipynb";
    std::fs::copy(root.join(name), root.join(name2)).unwrap();
    edit(
        &root,
        json!({"path": name2, "edit_mode": "insert", "cell_type": "code", "new_source": "1"}),
    )
    .await;
    files.push(root.join(name2));

    let out = Command::new("python3")
        .arg("-c")
        .arg(VALIDATE)
        .args(&files)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "nbformat rejected a notebook:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("valid")).count(),
        files.len(),
        "{stdout}"
    );
}
