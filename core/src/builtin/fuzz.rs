//! Entry points for fuzz targets (cargo-fuzz, `fuzz/` in the repository): the notebook parser,
//! renderer and cell edits the `read` and `notebook_edit` tools use, reachable from outside the
//! crate. Not part of the API.

use serde_json::Value;

use super::notebook::{render, Notebook};
use super::notebook_edit::edit_notebook;

/// The cells of `text` as the notebook parser reads them (parsed JSON and located spans
/// agreeing), or the error result `read` would give.
pub fn notebook_cells(text: &str) -> Result<Vec<Value>, String> {
    let nb = Notebook::parse(text, "nb.ipynb").map_err(|e| e.message)?;
    Ok(nb.cells().to_vec())
}

/// What `read` shows of the notebook `text`: cells `offset` (1-based) to `offset + limit - 1`.
pub fn notebook_render(text: &str, offset: usize, limit: usize) -> Result<String, String> {
    let nb = Notebook::parse(text, "nb.ipynb").map_err(|e| e.message)?;
    render(&nb, offset, limit, "nb.ipynb")
        .map(|(text, _)| text)
        .map_err(|e| e.message)
}

/// The text `notebook_edit` would write for `args` (`edit_mode`, `cell_id`, `cell_type`,
/// `new_source`), before the tool's own re-parse of the result.
pub fn notebook_edit(text: &str, args: &Value) -> Result<String, String> {
    edit_notebook(text, args, "nb.ipynb")
        .map(|(text, _, _)| text)
        .map_err(|e| e.message)
}
