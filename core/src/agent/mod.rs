//! Subagents: a client offered as a tool of another client, under both clients' gates.
//!
//! `child.as_tool_with(name, description, options)` makes a tool (source `subagent`) whose
//! input is `{prompt}` (or the host's own schema, whose arguments become the prompt as JSON
//! text). Each call runs one turn of the child and returns its final text; a child turn that
//! ends in `error`, `max_turns`, `budget` or `cancelled` is an error result saying so.
//!
//! - **Gates.** The call to the subagent passes the parent's gate first, as `source: subagent`.
//!   Every call the child makes then passes the child's gate (its policy, its `before_tool`),
//!   then the parent's, and so on outwards; each sees the call with its real source and
//!   `agent` naming the chain (`["researcher"]`). The stricter answer wins: a deny ends it,
//!   every gate that asks must be approved. An ask is answered by the asking client's
//!   `wait_for`, else by the nearest one further out, within the parent's turn. Every
//!   client's `after_tool` sees the result, the innermost first.
//! - **Cancellation.** The child's turn runs inside the parent's tool call, on a token derived
//!   from the parent turn's: cancelling the parent cancels the child's model request, its
//!   running tools and shells and its pending asks, and nothing of it runs once the parent's
//!   call returned.
//! - **Events and usage.** The child's events reach the parent's stream tagged with `agent`
//!   (its `turn_start` / `turn_end` stay out: the subagent call's `tool_start` and
//!   `tool_result` frame them). The child's usage is added to the parent turn's, as it is
//!   spent, and reported on the subagent call's `tool_result` (`usage`).
//! - **Recursion.** A subagent that would run inside a chain that already runs it (calling
//!   itself, directly or through another) gets an error result; so does a call deeper than
//!   `max_depth` (default [`DEFAULT_MAX_DEPTH`]).
//!
//! ```
//! use contenox::{Client, ScriptEntry, SubagentOptions};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let researcher = Client::builder()
//!     .script(vec![ScriptEntry::text("The answer is 42.")])
//!     .builtins(["read"])
//!     .build()
//!     .unwrap();
//! let lead = Client::builder()
//!     .script(vec![
//!         ScriptEntry::tool_call("c1", "researcher", json!({"prompt": "Find the answer."})),
//!         ScriptEntry::text("Researcher says 42."),
//!     ])
//!     .builtins(Vec::<String>::new())
//!     .build()
//!     .unwrap();
//! let tool = researcher
//!     .as_tool_with("researcher", "Looks things up.", SubagentOptions::default())
//!     .unwrap();
//! lead.register(tool).unwrap();
//! let result = lead.run("What is the answer?").await.unwrap();
//! assert_eq!(result.final_text, "Researcher says 42.");
//! # });
//! ```

mod tool;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::tool::{check_spec, Allowlist, Hints, Tool, ToolSpec};

pub use tool::SubagentTool;

/// How deep subagents may nest by default: a subagent of a subagent of a subagent.
pub const DEFAULT_MAX_DEPTH: u32 = 3;

/// Whether a subagent's calls share one conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Conversation {
    /// Every call starts from an empty conversation (the child client's conversation is
    /// cleared at the start of each call, and the background shells the call started are
    /// stopped at its end).
    #[default]
    Fresh,
    /// Calls continue the child client's conversation.
    Kept,
}

/// How a client behaves as a subagent (`options` of [`Client::as_tool_with`]). Every binding
/// passes the same names: `conversation`, `max_turns`, `allow`, `input_schema`, `hints`,
/// `max_depth`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubagentOptions {
    /// `fresh` (default) or `kept`.
    pub conversation: Conversation,
    /// Model responses per call, instead of the child's `max_turns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// The tools the child may use in these calls (allowlist grammar); intersected with the
    /// child's own allowlist, so it can only narrow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    /// The tool's input schema instead of `{prompt}`; the call's arguments, as JSON text, are
    /// the child's prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// The hints the parent's gate sees for the subagent call (absent: treated as mutating).
    pub hints: Hints,
    /// The deepest a call may nest (this subagent included); default [`DEFAULT_MAX_DEPTH`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
}

impl SubagentOptions {
    /// Parse options from JSON (what the bindings pass).
    pub fn from_json_value(value: Value) -> Result<Self> {
        if value.is_null() {
            return Ok(SubagentOptions::default());
        }
        serde_json::from_value(value).map_err(|e| Error::config(format!("subagent options: {e}")))
    }
}

/// The default input: one prompt.
fn prompt_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "The task for the subagent, with everything it needs to know."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    })
}

impl Client {
    /// This client as a tool of another client (see [`crate::agent`]): register the result
    /// there. Fails on a bad name, schema, allowlist or option.
    pub fn as_tool_with(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
        options: SubagentOptions,
    ) -> Result<Arc<dyn Tool>> {
        let spec = ToolSpec::new(
            name,
            description,
            options.input_schema.clone().unwrap_or_else(prompt_schema),
        )
        .with_hints(options.hints);
        check_spec(&spec)?;
        let allow = options
            .allow
            .as_ref()
            .map(|patterns| Allowlist::new(patterns))
            .transpose()?;
        if options.max_turns == Some(0) {
            return Err(Error::config(format!(
                "subagent {}: max_turns must be at least 1",
                spec.name
            )));
        }
        let max_depth = options.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
        if max_depth == 0 {
            return Err(Error::config(format!(
                "subagent {}: max_depth must be at least 1",
                spec.name
            )));
        }
        Ok(Arc::new(SubagentTool::new(
            self.clone(),
            spec,
            tool::Settings {
                fresh: options.conversation == Conversation::Fresh,
                max_turns: options.max_turns,
                allow,
                own_schema: options.input_schema.is_some(),
                max_depth,
            },
        )))
    }
}
