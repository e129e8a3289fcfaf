//! The shape of a chain file, as the Go runtime's `task-chain.schema.json` documents it, read
//! strictly: a key this engine does not know is an error naming it, so a typo never drops a
//! transition or an allowlist silently.

use serde::Deserialize;
use serde_json::{Map, Value};

/// A whole chain: `{id, tasks, ...}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChainDef {
    pub id: String,
    #[serde(default)]
    pub description: Option<String>,
    pub tasks: Vec<TaskDef>,
    /// Read and left unused (the engine's tools cap their own results).
    #[serde(default)]
    pub token_limit: Option<i64>,
    /// Read and left unused (events report every step anyway).
    #[serde(default)]
    pub debug: Option<bool>,
    /// Extension: the most tasks one run may execute (default [`super::DEFAULT_MAX_STEPS`]).
    #[serde(default)]
    pub max_steps: Option<i64>,
    /// Extension: the most bytes of one rendered text (default
    /// [`super::DEFAULT_MAX_TEMPLATE_BYTES`]).
    #[serde(default)]
    pub max_template_bytes: Option<i64>,
    /// Extension: the most bytes of one variable (default
    /// [`super::DEFAULT_MAX_VARIABLE_BYTES`]).
    #[serde(default)]
    pub max_variable_bytes: Option<i64>,
    /// Extension: the most bytes one run adds to the conversation (default
    /// [`super::DEFAULT_MAX_HISTORY_BYTES`]).
    #[serde(default)]
    pub max_history_bytes: Option<i64>,
}

/// One task.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskDef {
    pub id: String,
    /// Read so the key is known; it is for people.
    #[serde(default, rename = "description")]
    pub _description: Option<String>,
    pub handler: String,
    #[serde(default)]
    pub system_instruction: Option<String>,
    #[serde(default)]
    pub execute_config: Option<ExecuteConfig>,
    /// The direct call of a `tools` / `hook` task (`tools` in the schema, `hook` in older
    /// documents).
    #[serde(default)]
    pub tools: Option<ToolsCall>,
    #[serde(default)]
    pub hook: Option<ToolsCall>,
    #[serde(default)]
    pub print: Option<String>,
    #[serde(default)]
    pub prompt_template: Option<String>,
    #[serde(default)]
    pub output_template: Option<String>,
    #[serde(default)]
    pub input_var: Option<String>,
    #[serde(default)]
    pub input_max_bytes: Option<i64>,
    #[serde(default)]
    pub transition: Option<TransitionDef>,
    /// A Go duration (`"30s"`, `"2m"`, `"1h30m"`, `"500ms"`).
    #[serde(default)]
    pub timeout: Option<String>,
    #[serde(default)]
    pub retry_on_failure: Option<i64>,
}

/// `execute_config`: the model and the tools of a task.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExecuteConfig {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub models: Option<Vec<String>>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub providers: Option<Vec<String>>,
    #[serde(default)]
    pub temperature: Option<f64>,
    /// The allowlist of the task's tools (tool names or the names of their hooks / MCP servers).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The older name of `tools`, as the seed's documents write it (`"hooks": ["nws"]`).
    #[serde(default)]
    pub hooks: Option<Vec<String>>,
    #[serde(default)]
    pub hide_tools: Option<Vec<String>>,
    #[serde(default)]
    pub tools_policies: Option<Map<String, Value>>,
    #[serde(default)]
    pub pass_clients_tools: Option<bool>,
    #[serde(default)]
    pub think: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<Value>,
    #[serde(default)]
    pub shift: Option<bool>,
    #[serde(default)]
    pub retry_policy: Option<Value>,
}

/// The direct call of a `tools` task: one tool of one provider (a hook, an MCP server).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolsCall {
    pub name: String,
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The arguments: strings (the schema's rule), which may hold macros; a string given for a
    /// parameter the tool declares as a number or a boolean is passed as one.
    #[serde(default)]
    pub args: Map<String, Value>,
}

/// `transition`: where the chain goes after a task.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TransitionDef {
    #[serde(default)]
    pub on_failure: Option<String>,
    #[serde(default)]
    pub branches: Vec<BranchDef>,
}

/// One branch: `{operator, when, goto, edge?}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BranchDef {
    pub operator: String,
    #[serde(default)]
    pub when: String,
    #[serde(default)]
    pub goto: String,
    #[serde(default)]
    pub edge: Option<String>,
}
