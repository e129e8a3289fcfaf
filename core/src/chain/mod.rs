//! Task chains: the Go runtime's chain JSON, run on the client's own turn machinery.
//!
//! A chain is a state machine of tasks. Each task runs a handler, yields a value, and its
//! `transition` picks the next task by the first branch whose operator matches the value
//! (`goto: "end"` ends). One run of a chain is one turn of the client: it holds the turn lock,
//! emits `turn_start` … `turn_end` (plus `chain_task_start` / `chain_task_end` per task), keeps
//! the conversation, and ends with the same outcomes (`done`, `cancelled`, `max_turns`,
//! `error`). Every model call goes through the client's backend; every tool call through its
//! allowlists and its gate.
//!
//! ```
//! use contenox::{chain::Chain, Client, Outcome, ScriptEntry};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let chain = Chain::from_value(json!({
//!     "id": "summarise",
//!     "tasks": [
//!         {"id": "chat", "handler": "chat_completion",
//!          "system_instruction": "Be brief. Tools: {{hookservice:list}}.",
//!          "transition": {"branches": [
//!              {"operator": "equals", "when": "tool-call", "goto": "run_tools"},
//!              {"operator": "default", "when": "", "goto": "end"}]}},
//!         {"id": "run_tools", "handler": "execute_tool_calls", "input_var": "chat",
//!          "transition": {"branches": [{"operator": "default", "when": "", "goto": "chat"}]}}
//!     ]
//! })).unwrap();
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
//! let client = Client::builder()
//!     .script(vec![
//!         ScriptEntry::tool_call("call_1", "read", json!({"path": "notes.txt"})),
//!         ScriptEntry::text("It says hello."),
//!     ])
//!     .root(dir.path())
//!     .builtins(["read"])
//!     .build()
//!     .unwrap();
//! let result = client.run_chain(&chain, "What is in notes.txt?").await.unwrap();
//! assert_eq!(result.outcome, Outcome::Done);
//! assert_eq!(result.final_text, "It says hello.");
//! # });
//! ```
//!
//! # Tasks
//!
//! | handler | does | value |
//! |---|---|---|
//! | `chat_completion` | one model response, with the task's system instruction, tools and model | `tool-call` when the model asked for tools, else `stop` |
//! | `execute_tool_calls` | runs the calls of the chat task `input_var` names (else of the last one) through the gate | `tools_executed`, or `no_calls_found` |
//! | `tools` (older name `hook`) | calls one tool directly, no model: `tools: {name, tool_name, args}` | the tool's result text; an error result fails the task |
//! | `noop` | passes its input on | its input |
//! | `prompt_to_string` | renders `prompt_template` | the text |
//! | `raise_error` | ends the chain with outcome `error`, the message its `prompt_template` or input | — |
//!
//! - **Inputs and outputs.** Each task's output is kept under its id. A task's input is the
//!   task `input_var` names (`"input"` = the chain's input), else the previous task's output.
//!   A chat task sends its `prompt_template`, else its input when that is text (the chain's
//!   input, a tool's result) as a user message; an input that is the conversation (a chat
//!   reply, executed tool calls) continues it. Calls the model made wait for an
//!   `execute_tool_calls` task; calls nobody runs get the result [`NOT_EXECUTED_RESULT`], so
//!   the transcript never holds a call without a result.
//! - **Tools.** `execute_config.tools` (older name `hooks`) is an allowlist over tool names
//!   *and* the names of the hooks / MCP servers they come from (`["nws"]` = the tools of the
//!   `nws` hook), `hide_tools` removes more. It is intersected with the client's allowlist and
//!   the caller's ([`RunOptions`](crate::RunOptions)): a chain can only narrow. No allowlist =
//!   what the client and caller allow. A model call to a tool the task does not see is an
//!   unknown tool.
//! - **Transitions.** Operators `equals`, `contains`, `starts_with`, `ends_with`, `gt`, `lt`,
//!   `in_range` (`"1-5"` or `"1,5"`, inclusive), `edge_traversed_at_least` (with `edge:
//!   "a->b"`), `default`. No branches = the end; branches that all miss are an error. A task
//!   that fails goes to its `on_failure` task (whose input is the error message), else the
//!   chain ends with `error`. `retry_on_failure` and `timeout` (a Go duration) apply per task.
//! - **Limits.** A run executes at most `max_steps` tasks (default [`DEFAULT_MAX_STEPS`]; an
//!   extension key of the chain, or [`Chain::with_max_steps`]) and ends with `error` naming
//!   the loop; model responses count against the client's `max_turns` (outcome `max_turns`).
//!   A chain is hostile input, so what it computes is capped too ([`Limits`], extension keys
//!   beside `max_steps`, or [`Chain::with_limits`]): one rendered text `max_template_bytes`
//!   (default 1 MiB), one variable, a task's output or the chain's input,
//!   `max_variable_bytes` (4 MiB), and what one run adds to the conversation
//!   `max_history_bytes` (16 MiB). A run that would pass one ends with outcome `error` naming
//!   the task and the key (never routed to `on_failure` or retried: the same step would pass
//!   it again).
//! - **Macros** (see the `template` module): `{{.input}}`, `{{.TASK_ID}}`,
//!   `{{hookservice:list}}` (the tools the task sees), `{{hookservice:hooks}}`,
//!   `{{hookservice:tools NAME}}`, `{{now}}`, `{{now:LAYOUT}}`, `{{var:model}}`,
//!   `{{var:provider}}`, `{{var:chain}}`, `{{chain:id}}`.
//! - **Models.** `execute_config.model` names the model of the task's requests on the
//!   client's connection (`{{var:model}}` or absent = the client's model). `provider`, when
//!   given, must name the client's style (`openai`, `anthropic`, `ollama`): a chain written
//!   for another provider is refused when it starts, naming the task. The other execution keys
//!   are read and reported by [`Chain::ignored_fields`].
//!
//! A chain is checked when it is read ([`Chain::from_json`]): against the Go runtime's
//! `task-chain.schema.json`, then strictly (unknown keys, gotos and `input_var`s that name no
//! task, unknown handlers and operators, bad numbers, unsupported macros). The error names the
//! field; nothing has run.

mod definition;
mod duration;
pub(crate) mod limits;
mod operator;
mod parse;
mod run;
mod template;
#[cfg(test)]
mod tests;
mod tools;

use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;

pub use limits::{
    Limits, DEFAULT_MAX_HISTORY_BYTES, DEFAULT_MAX_TEMPLATE_BYTES, DEFAULT_MAX_VARIABLE_BYTES,
};
pub use parse::{Chain, DEFAULT_MAX_STEPS};
pub use run::NOT_EXECUTED_RESULT;

use crate::client::Client;
use crate::error::Result;
use crate::event::TurnResult;
use crate::run::{Run, RunOptions};
use crate::tool::EventSink;
use crate::turn::TurnSetup;

impl Client {
    /// What a chain run starts with: the run's allowlist, `max_turns` and settings.
    fn chain_setup(&self, chain: &Chain, options: &RunOptions) -> Result<TurnSetup> {
        chain.check_providers(self.config().style)?;
        if options.output_schema.is_some() {
            // A chain's answer is its last task's text; a schema there would check nothing.
            return Err(crate::error::Error::Config(crate::error::ConfigError::new(
                "output_schema",
                "is not taken by a chain run (its answer is its last task's text)",
            )));
        }
        Ok(TurnSetup {
            allow: options.allow.clone(),
            max_turns: options.max_turns,
            settings: self.run_settings(options)?,
            trace_parent: crate::client::trace_parent(options),
            ..TurnSetup::default()
        })
    }

    /// Run a task chain with `input` to its end, as one turn of this client (see
    /// [`crate::chain`]). Resolves with the outcome, the output text of the last task that
    /// ran, usage and transcript; `Err` only when the client was closed.
    pub async fn run_chain(&self, chain: &Chain, input: impl Into<String>) -> Result<TurnResult> {
        self.run_chain_with(chain, input, RunOptions::default())
            .await
    }

    /// [`Client::run_chain`] with per-run options (a narrower allowlist, an outside cancel, a
    /// lower `max_turns` for the chain's model responses).
    pub async fn run_chain_with(
        &self,
        chain: &Chain,
        input: impl Into<String>,
        options: RunOptions,
    ) -> Result<TurnResult> {
        self.check_open()?;
        let setup = self.chain_setup(chain, &options)?;
        let (cancel, _link) = self.turn_token(&options);
        Ok(run::run_chain(
            self.state().clone(),
            Arc::new(chain.clone()),
            input.into(),
            setup,
            cancel,
            EventSink::discard(),
        )
        .await)
    }

    /// Start a chain and return its [`Run`] handle: events as they happen, `cancel()`, the
    /// result. Needs a tokio runtime.
    pub fn stream_chain(&self, chain: &Chain, input: impl Into<String>) -> Result<Run> {
        self.stream_chain_with(chain, input, RunOptions::default())
    }

    /// [`Client::stream_chain`] with per-run options.
    pub fn stream_chain_with(
        &self,
        chain: &Chain,
        input: impl Into<String>,
        options: RunOptions,
    ) -> Result<Run> {
        self.check_open()?;
        let setup = self.chain_setup(chain, &options)?;
        let (cancel, link) = self.turn_token(&options);
        let (tx, rx) = unbounded_channel();
        let chain = run::run_chain(
            self.state().clone(),
            Arc::new(chain.clone()),
            input.into(),
            setup,
            cancel.clone(),
            EventSink::new(tx),
        );
        let chain = async move {
            let _link = link;
            chain.await
        };
        Ok(Run::spawn(chain, rx, cancel))
    }
}
