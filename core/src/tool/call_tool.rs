//! The `call_tool` meta-tool: how the model reaches deferred tools.
//!
//! It is not a registered tool: the engine offers its spec when some allowed tool is deferred and
//! unwraps `call_tool {name, arguments}` into the real call before the gate, so the gate, the
//! events and the transcript see the real tool. A call with only `query` searches the deferred
//! tools and returns their schemas.

use serde_json::{json, Value};

use super::{Hints, ToolSpec};

/// The meta-tool's name.
pub(crate) const CALL_TOOL: &str = "call_tool";

/// How many deferred tools the description lists by name.
const LISTED: usize = 40;

pub(crate) struct CallTool;

impl CallTool {
    /// The spec offered to the model, listing the deferred tools.
    pub fn spec(deferred: &[&ToolSpec]) -> ToolSpec {
        let mut description = String::from(
            "Call a tool that is not in your tool list. Give `name` and `arguments` to call it, \
             or only `query` to search the available tools and see their input schemas.\n\
             Available tools:\n",
        );
        for spec in deferred.iter().take(LISTED) {
            let line = spec.description.lines().next().unwrap_or("");
            description.push_str(&format!("- {}: {}\n", spec.name, line));
        }
        if deferred.len() > LISTED {
            description.push_str(&format!(
                "... and {} more (search with `query`).\n",
                deferred.len() - LISTED
            ));
        }
        ToolSpec::new(
            CALL_TOOL,
            description,
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool to call."},
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                    "query": {"type": "string", "description": "Search the available tools instead of calling one."}
                }
            }),
        )
        .with_hints(Hints::read_only())
    }

    /// Split a `call_tool` call into the real tool's name and arguments; `None` for a search.
    pub fn unwrap(args: &Value) -> Option<(String, Value)> {
        let name = args.get("name")?.as_str()?.to_string();
        let inner = match args.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
            Some(v) => v.clone(),
        };
        Some((name, inner))
    }

    /// The search result for a `query`.
    pub fn search_result(matches: &[ToolSpec]) -> Value {
        Value::Array(
            matches
                .iter()
                .map(|s| {
                    json!({"name": s.name, "description": s.description, "input_schema": s.input_schema})
                })
                .collect(),
        )
    }
}
