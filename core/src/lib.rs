//! # contenox
//!
//! An embeddable agent SDK: one Rust engine runs the agent loop (model request, tool calls
//! through a gate, results, next request) and owns every behaviour; Python, Node and
//! Kotlin/Swift reach the same engine through thin bindings.
//!
//! ```
//! use contenox::{Client, ScriptEntry};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
//!
//! // The scripted model replays fixed responses: no network, same engine.
//! let client = Client::builder()
//!     .script(vec![
//!         ScriptEntry::tool_call("call_1", "read", json!({"path": "notes.txt"})),
//!         ScriptEntry::text("The file says hello."),
//!     ])
//!     .root(dir.path())
//!     .builtins(["read"])
//!     .build()
//!     .unwrap();
//!
//! let result = client.run("What does notes.txt say?").await.unwrap();
//! assert_eq!(result.outcome, contenox::Outcome::Done);
//! assert_eq!(result.final_text, "The file says hello.");
//! # });
//! ```
//!
//! The pieces:
//! - [`Client`] / [`ClientBuilder`] / [`Config`]: style, model, tools, gate, conversation.
//! - [`Run`]: a running turn's [`Event`]s, its cancel, its [`TurnResult`].
//! - [`Tool`], [`ToolSpec`], [`Hints`]: what the model can call.
//! - [`Hooks`] (`before_tool` / `after_tool`) and [`WaitFor`]: the gate every call passes.
//! - [`Transcript`]: the conversation, saved and restored as JSON.
//! - [`mcp`]: MCP servers as tool sources ([`load_mcp`], [`McpSource`]).
//! - [`remote`]: HTTP services as tool sources, from their OpenAPI document or one of five
//!   protocols ([`load_remote`], [`RemoteSource`]).
//! - [`chain`]: task chains (the Go runtime's chain JSON), run as a turn of the client
//!   ([`Chain`], [`Client::run_chain`]).
//! - [`policy`]: approval policies (hitl-policy-v1) as the first stage of the gate, presets,
//!   compute ceilings.
//! - [`durable`]: a turn suspended at an ask ([`Answer::Suspend`]) ends with a checkpoint;
//!   [`Client::resume`] continues it, in this process or another.
//! - [`agent`]: a client as a tool of another ([`Client::as_tool_with`]), under both gates.
//! - [`compact`]: compaction of a long conversation ([`CompactionConfig`], [`Compactor`],
//!   [`Client::compact`]).
//! - [`sandbox`]: how bash's commands are confined, and what this kernel offers ([`sandbox::status`]).
//! - [`telemetry`]: OpenTelemetry spans of each turn (GenAI semantic conventions), exported
//!   over OTLP/HTTP or handed to the host's tracer.
//! - [`settings`]: the model settings (temperature, top_p, top_k, stop, seed, tool_choice,
//!   parallel_tool_calls, reasoning, extra_body) of a client and of one run ([`ModelSettings`]).

#![warn(missing_docs)]

pub mod agent;
pub mod builtin;
pub mod chain;
mod client;
mod client_resume;
mod client_state;
mod client_step;
pub mod code;
pub mod compact;
mod config;
mod config_check;
mod config_read;
pub mod durable;
mod error;
mod event;
mod gate;
mod gate_chain;
pub mod hooks;
mod image_file;
mod lifecycle;
pub mod mcp;
mod model;
pub mod output;
pub mod policy;
mod prompt;
mod redact;
pub mod remote;
mod run;
pub mod sandbox;
#[cfg(feature = "schema")]
mod schema;
mod scope;
mod script;
pub mod settings;
mod shown;
mod sources;
mod spelling;
pub mod step;
mod style;
pub mod telemetry;
pub mod tool;
mod tool_output;
mod tool_spec;
mod transcript;
mod turn;
mod turn_calls;
mod turn_code;
mod turn_spans;
mod until_cancelled;

pub use agent::{Conversation, SubagentOptions, DEFAULT_MAX_DEPTH};
pub use async_trait::async_trait;
pub use builtin::{BackgroundShells, SearchRequest, SearchResult, WebSearchProvider};
pub use chain::Chain;
pub use client::{Client, ClientBuilder};
pub use code::JS_EXECUTION;
pub use compact::{CompactNotice, Compactor, OnCompact, SUMMARY_HEADER};
pub use config::{
    CodeExecutionConfig, CompactionConfig, Config, RetryPolicy, ToolConcurrency,
    DEFAULT_MAX_CONCURRENT_TOOLS,
};
pub use error::{ConfigError, Error, ErrorKind, Result};
pub use event::{CompactTrigger, Event, GateVerdict, Outcome, StopReason, TurnResult, Usage};
pub use gate::{
    Answer, Decision, Hooks, PendingRequest, ToolCallEvent, WaitFor, ASK_TIMEOUT_DENIAL,
    DEFAULT_DENIAL, SUSPEND_UNAVAILABLE,
};
pub use hooks::HooksFile;
pub use lifecycle::{
    CompactAction, CompactRequest, Notification, NotificationKind, PromptAction, StopAction,
    TurnEndInfo,
};
pub use mcp::{load_mcp, load_mcp_with, McpAuth, McpConfig, McpSource, ServerState};
#[doc(hidden)]
pub use model::fuzz;
pub use model::{list_models, ModelInfo};
pub use output::OutputSchema;
pub use policy::{Policy, PolicyError, BUDGET_RESULT};
pub use prompt::Prompt;
pub use remote::{load_remote, HookState, RemoteHook, RemoteSource};
pub use run::{Run, RunOptions};
pub use sandbox::{SandboxConfig, SandboxStatus};
pub use script::{ScriptCall, ScriptEntry, ScriptError};
pub use settings::{Effort, ModelSettings, ToolChoice};
pub use sources::{load_source, load_source_with, LoadedSource, SourceConfig};
pub use spelling::Spelling;
pub use style::Style;
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    tool_fn, Allowlist, EventSink, FnTool, Hints, HostError, Source, Tier, Tool, ToolContext,
    ToolError, ToolHost, ToolOutput, ToolSource, ToolSpec, Toolkit, CANCELLED_RESULT,
};
pub use transcript::{
    Image, Message, Part, ProviderBlock, Reasoning, ToolCall, Transcript, IMAGE_MEDIA_TYPES,
    MAX_IMAGE_BYTES, TRANSCRIPT_VERSION,
};
pub use turn::{MAX_TURNS_RESULT, STOPPED_REPLY_RESULT};
