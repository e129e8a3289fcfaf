//! The builtin tools. Each file holds one builtin; `path.rs` confines paths to the root and
//! `atomic.rs` writes files atomically.

mod atomic;
mod edit;
mod path;
mod read;
mod write;

pub use atomic::atomic_write;
pub use path::{confine, display_path};

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::tool::Tool;

/// The builtins offered when the config does not name any, in the order the model sees them.
/// (Builtins of this list that are not implemented yet are skipped.)
pub const DEFAULT_BUILTINS: &[&str] = &[
    "read",
    "write",
    "edit",
    "multi_edit",
    "glob",
    "grep",
    "list",
    "bash",
    "web_fetch",
    "todo_write",
];

/// The builtins this build implements.
pub const IMPLEMENTED_BUILTINS: &[&str] = &["read", "write", "edit"];

/// The builtin of that name.
pub fn builtin(name: &str) -> Option<Arc<dyn Tool>> {
    Some(match name {
        "read" => Arc::new(read::Read),
        "write" => Arc::new(write::Write),
        "edit" => Arc::new(edit::Edit),
        _ => return None,
    })
}

/// The builtins a config asks for (`None` = the defaults).
pub(crate) fn builtins_for(names: Option<&[String]>) -> Result<Vec<Arc<dyn Tool>>> {
    match names {
        None => Ok(DEFAULT_BUILTINS.iter().filter_map(|n| builtin(n)).collect()),
        Some(names) => names
            .iter()
            .map(|n| {
                builtin(n).ok_or_else(|| {
                    Error::Config(format!(
                        "unknown builtin {n:?} (available: {})",
                        IMPLEMENTED_BUILTINS.join(", ")
                    ))
                })
            })
            .collect(),
    }
}

/// Read a required string argument.
pub(crate) fn str_arg<'a>(
    args: &'a serde_json::Value,
    key: &str,
) -> std::result::Result<&'a str, crate::tool::ToolError> {
    args.get(key)
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("missing string argument `{key}`").into())
}
