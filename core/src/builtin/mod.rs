//! The builtin tools. Each file holds one builtin; `path.rs` confines paths to the root (every
//! file operation goes through the opened root directory), `atomic.rs` writes files atomically,
//! `load.rs` loads a file whole for the editing tools (capped), `walk.rs` walks directories the
//! way ripgrep does,
//! `process.rs` runs shell commands in their own process group and `shells.rs` keeps the
//! opt-in background shells.
//!
//! Every builtin can also be run by hand, outside a turn:
//!
//! ```
//! use contenox::{builtin, ToolContext};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let root = std::fs::canonicalize(dir.path()).unwrap();
//! std::fs::write(root.join("a.txt"), "hello\n").unwrap();
//! let grep = builtin::builtin("grep").unwrap();
//! let out = grep
//!     .call(json!({"pattern": "hel+o"}), ToolContext::detached(&root, "grep"))
//!     .await
//!     .unwrap();
//! assert_eq!(out.content_text(), "a.txt");
//! # });
//! ```

mod atomic;
mod bash;
mod edit;
#[doc(hidden)]
pub mod fuzz;
mod glob;
mod grep;
mod html;
mod list;
pub(crate) mod load;
mod multi_edit;
mod notebook;
mod notebook_edit;
mod numbers;
mod path;
mod process;
mod read;
mod shared_spec;
mod shells;
mod todo_write;
mod walk;
mod web_address;
mod web_fetch;
mod web_resolver;
mod websearch;
mod write;

pub use atomic::{atomic_write, WriteOptions, Written};
// The pure edit functions, for the diff of an approval prompt (policy::diff).
pub(crate) use edit::apply_edit;
#[doc(hidden)]
pub use html::html_to_markdown;
pub(crate) use load::load_text;
pub use load::MAX_LOAD_BYTES;
pub(crate) use multi_edit::apply_edits;
pub(crate) use notebook_edit::edit_notebook;
pub(crate) use numbers::{opt_u64, opt_usize};
pub use path::{confine, display_path, Located, RootDir};
pub(crate) use process::{kill_group, shell};
pub use shells::BackgroundShells;
pub use websearch::{SearchRequest, SearchResult, WebSearchProvider};

use std::sync::Arc;

use serde_json::Value;

use crate::code::{js_execution, JS_EXECUTION};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::sandbox::Sandbox;
use crate::tool::{Tool, ToolError, ToolSpec};

/// The builtins offered when the config does not name any, in the order the model sees them.
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

/// The builtins [`builtin`] makes: the ten defaults and the opt-in `notebook_edit`. The other
/// opt-ins need state the client owns: `bash_output` and `kill_shell` come with
/// [`BackgroundShells`] (config `background`), `websearch` with a [`WebSearchProvider`].
pub const IMPLEMENTED_BUILTINS: &[&str] = &[
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
    "notebook_edit",
];

/// The builtin of that name (bash without background shells; web_fetch refusing internal
/// addresses).
pub fn builtin(name: &str) -> Option<Arc<dyn Tool>> {
    Some(match name {
        "read" => Arc::new(read::Read),
        "write" => Arc::new(write::Write),
        "edit" => Arc::new(edit::Edit),
        "multi_edit" => Arc::new(multi_edit::MultiEdit),
        "glob" => Arc::new(glob::Glob),
        "grep" => Arc::new(grep::Grep),
        "list" => Arc::new(list::List),
        "bash" => Arc::new(bash::Bash::new(None, Arc::default())),
        "web_fetch" => Arc::new(web_fetch::WebFetch::new(false)),
        "todo_write" => Arc::new(todo_write::TodoWrite),
        "notebook_edit" => Arc::new(notebook_edit::NotebookEdit),
        _ => return None,
    })
}

/// What the client holds for the opt-in builtins that need state.
#[derive(Default, Clone)]
pub(crate) struct OptIns {
    pub shells: Option<BackgroundShells>,
    pub websearch: Option<Arc<dyn WebSearchProvider>>,
}

/// A builtin ready to register: the tool and its shared spec.
pub(crate) type Builtin = (Arc<dyn Tool>, Arc<ToolSpec>);

/// The builtins a config asks for: `builtins` (`None` = the defaults), then the opt-ins that are
/// on (`notebook_edit`; with background shells, bash gains `run_in_background` and
/// `bash_output` / `kill_shell` come along; `websearch` when the host gave a provider).
///
/// Each comes with its spec, shared with every other client of the process
/// ([`shared_spec::shared_spec`]).
pub(crate) fn builtins_for(config: &Config, opt_ins: &OptIns) -> Result<Vec<Builtin>> {
    let mut names: Vec<String> = match &config.builtins {
        None => DEFAULT_BUILTINS.iter().map(|n| n.to_string()).collect(),
        Some(names) => names.clone(),
    };
    if config.notebook_edit && !names.iter().any(|n| n == "notebook_edit") {
        names.push("notebook_edit".into());
    }
    if config.code_execution.is_some() && !names.iter().any(|n| n == JS_EXECUTION) {
        names.push(JS_EXECUTION.into());
    }
    let mut tools: Vec<Builtin> = Vec::with_capacity(names.len() + 3);
    let mut push = |key: &str, tool: Arc<dyn Tool>| -> Result<()> {
        let spec = shared_spec::shared_spec(key, tool.as_ref())?;
        tools.push((tool, spec));
        Ok(())
    };
    for name in &names {
        let (key, tool): (&str, Arc<dyn Tool>) = match (name.as_str(), &opt_ins.shells) {
            ("bash", shells) => {
                // The sandbox (and scratch directory) of the client's bash and background shells.
                let sandbox = Sandbox::new(config.sandbox.clone(), config.shell_env.clone());
                let bash = bash::Bash::new(shells.clone(), Arc::new(sandbox));
                push(&bash.spec_key(), Arc::new(bash))?;
                continue;
            }
            ("bash_output" | "kill_shell", Some(_)) => continue, // added below
            ("bash_output" | "kill_shell", None) => {
                return Err(Error::config(format!(
                    "builtin {name:?} needs background shells (config `background: true`)"
                )))
            }
            // Same spec either way: the key names the builtin, not the config.
            ("web_fetch", _) => (
                "web_fetch",
                Arc::new(web_fetch::WebFetch::new(config.web_fetch_allow_private)),
            ),
            // One spec whatever the limits: the key names the builtin.
            (JS_EXECUTION, _) => match &config.code_execution {
                Some(limits) => (JS_EXECUTION, js_execution(limits.clone())),
                None => {
                    return Err(Error::config(format!(
                        "builtin {JS_EXECUTION:?} needs the `code_execution` option (`{{}}` \
                         for the default limits)"
                    )))
                }
            },
            ("websearch", _) if opt_ins.websearch.is_some() => continue, // added below
            ("websearch", _) => {
                return Err(Error::config(
                    "builtin \"websearch\" needs a web search provider from the host".into(),
                ))
            }
            _ => (
                name.as_str(),
                builtin(name).ok_or_else(|| {
                    Error::config(format!(
                        "unknown builtin {name:?} (available: {})",
                        IMPLEMENTED_BUILTINS.join(", ")
                    ))
                })?,
            ),
        };
        push(key, tool)?;
    }
    if let Some(shells) = &opt_ins.shells {
        push("bash_output", Arc::new(shells::BashOutput(shells.clone())))?;
        push("kill_shell", Arc::new(shells::KillShell(shells.clone())))?;
    }
    if let Some(provider) = &opt_ins.websearch {
        push(
            "websearch",
            Arc::new(websearch::WebSearch::new(provider.clone())),
        )?;
    }
    Ok(tools)
}

/// Read a required string argument.
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> std::result::Result<&'a str, ToolError> {
    args.get(key)
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("missing string argument `{key}`").into())
}

/// Read an optional string argument (absent, null or empty = `None`).
pub(crate) fn opt_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Read an optional boolean argument.
pub(crate) fn opt_bool(args: &Value, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The first `max` characters of `s` (the whole of it when shorter), and whether it was cut.
pub(crate) fn cut_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((end, _)) => (&s[..end], true),
        None => (s, false),
    }
}
