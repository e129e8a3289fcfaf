//! The notebook parser, renderer and cell edits (`read` of an .ipynb, `notebook_edit`). The
//! first 17 bytes choose the window `read` shows (offset, limit as the model could send them)
//! and one edit; the rest is the notebook. Beyond "no panic", an edit the tool accepts must
//! leave a notebook that parses, with exactly the asked change: the edited cell has the new
//! source, every other cell is unchanged.
#![no_main]

use contenox::builtin::fuzz::{notebook_cells, notebook_edit, notebook_render};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const SOURCE: &str = "x = 1\nprint(\"ü\")";

fn id_of(cells: &[Value], i: usize) -> String {
    cells[i]
        .get("id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("cell-{i}"), str::to_string)
}

/// Which cell `cell_id` names, as nbformat ids work: the first with that id, else `cell-N`
/// for an id-less N-th cell.
fn index_of(cells: &[Value], id: &str) -> Option<usize> {
    cells
        .iter()
        .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
        .or_else(|| {
            let n: usize = id.strip_prefix("cell-")?.parse().ok()?;
            (n < cells.len() && cells[n].get("id").is_none()).then_some(n)
        })
}

fn source_of(cell: &Value) -> String {
    match cell.get("source") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 17 {
        return;
    }
    let (head, rest) = data.split_at(17);
    let offset = u64::from_le_bytes(head[0..8].try_into().unwrap()).max(1) as usize;
    let limit = u64::from_le_bytes(head[8..16].try_into().unwrap()).max(1) as usize;
    let pick = head[16];
    let text = String::from_utf8_lossy(rest);

    let _ = notebook_render(&text, offset, limit);
    let Ok(cells) = notebook_cells(&text) else {
        return;
    };
    let n = cells.len();
    let mode = ["replace", "insert", "delete"][usize::from(pick % 3)];
    let cell_type = ["code", "markdown", "raw"][usize::from(pick / 3 % 3)];
    // For insert, `None` = at the top; replace and delete need a cell.
    let target = match (n, mode) {
        (0, "insert") => None,
        (0, _) => return,
        (_, "insert") if pick / 9 % 2 == 0 => None,
        _ => Some(usize::from(pick / 18) % n),
    };
    let mut args = json!({"edit_mode": mode, "cell_type": cell_type, "new_source": SOURCE});
    if let Some(i) = target {
        args["cell_id"] = json!(id_of(&cells, i));
    }
    let Ok(edited) = notebook_edit(&text, &args) else {
        return;
    };
    let after = notebook_cells(&edited)
        .unwrap_or_else(|e| panic!("{mode} of {target:?} broke the notebook: {e}\n{edited}"));
    let at = target.map(|i| index_of(&cells, &id_of(&cells, i)).unwrap());
    match mode {
        "replace" => {
            let i = at.unwrap();
            assert_eq!(after.len(), n, "replace changed the number of cells");
            assert_eq!(
                source_of(&after[i]),
                SOURCE,
                "replace did not land in cell {i}"
            );
            for j in (0..n).filter(|&j| j != i) {
                assert_eq!(after[j], cells[j], "replace of cell {i} changed cell {j}");
            }
        }
        "insert" => {
            let new = at.map_or(0, |i| i + 1);
            assert_eq!(after.len(), n + 1, "insert did not add one cell");
            assert_eq!(
                source_of(&after[new]),
                SOURCE,
                "insert did not land at {new}"
            );
            assert_eq!(
                after[..new],
                cells[..new],
                "insert changed the cells before it"
            );
            assert_eq!(
                after[new + 1..],
                cells[new..],
                "insert changed the cells after it"
            );
        }
        _ => {
            let i = at.unwrap();
            assert_eq!(after.len(), n - 1, "delete did not remove one cell");
            assert_eq!(
                after[..i],
                cells[..i],
                "delete changed the cells before {i}"
            );
            assert_eq!(
                after[i..],
                cells[i + 1..],
                "delete changed the cells after {i}"
            );
        }
    }
});
