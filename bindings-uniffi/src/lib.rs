//! # contenox-uniffi
//!
//! The Kotlin and Swift binding of contenox, through UniFFI proc-macros. Thin: the engine
//! (crate `contenox`) decides; this crate translates types, errors, async and callbacks.
//!
//! The surface: [`Client`] (`Client(configJson, tools, hooks, waitFor, websearch, onCompact,
//! backgroundShells)`, each after the first optional; config is the engine's `Config` JSON, the
//! same keys in every binding) and its [`Run`] (`nextBatch()`, `cancel()`, `result()`); the
//! typed [`Event`] (a sealed class in Kotlin, an enum in Swift; `toJson()` is the engine's JSON);
//! a turn stepped by its host through `step(prompt, options)` -> [`Stepper`] ([`Action`] out,
//! [`ActionResult`] in); [`Transcript`], [`BackgroundShells`]; MCP through [`load_mcp`] -> [`McpSource`] and its
//! [`SourceTool`]s, remote tools through [`load_remote`] -> [`RemoteSource`]; host code as
//! foreign traits with async methods ([`HostTool`], [`Hooks`], [`LifecycleHooks`], [`WaitFor`],
//! [`WebSearchProvider`], `OnCompact`); errors as
//! [`ContenoxError`] (`ContenoxException` in Kotlin). Free-form values (tool arguments, results,
//! schemas) cross as JSON text, in fields named `…Json`. A host callback that throws becomes an
//! error result the model sees, never a panic.
//!
//! Async exports run on tokio (`async_runtime = "tokio"`): UniFFI enters a tokio runtime while it
//! polls them, so the engine's tasks (the turn, timers, HTTP) run there. The `uniffi-bindgen`
//! binary of this crate generates the foreign sources from the built library (library mode):
//! see `bindings-uniffi/README.md`.

#![warn(missing_docs)]

mod client;
mod convert;
mod error;
mod event;
mod hooks;
mod host;
mod mcp;
mod mcp_auth;
mod prompt;
mod remote;
mod run;
mod shells;
mod source;
mod step;

pub use client::{list_models, policy_preset, Client};
pub use convert::{
    outcome_name, Answer, ContentPart, Decision, Message, PendingRequest, ToolCallEvent,
    ToolOutput, ToolSpec, Transcript, TurnResult,
};
pub use error::ContenoxError;
pub use event::Event;
pub use hooks::{Hooks, LifecycleHooks};
pub use host::{HostTool, ToolContext, ToolReporter, WaitFor, WebSearchProvider};
pub use mcp::{elicitation_of, load_mcp, Elicitation, McpServer, McpServerListener, McpSource};
pub use mcp_auth::McpAuth;
pub use prompt::PromptPart;
pub use remote::{load_remote, RemoteHookListener, RemoteHookState, RemoteSource};
pub use run::Run;
pub use shells::BackgroundShells;
pub use source::SourceTool;
pub use step::{action_result_from_json, Action, ActionResult, Stepper, ToolCall};

uniffi::setup_scaffolding!("contenox");
