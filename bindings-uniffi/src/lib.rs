//! # contenox-uniffi
//!
//! The Kotlin and Swift binding of contenox, through UniFFI proc-macros. Thin: the engine
//! (crate `contenox`) decides; this crate translates types, errors, async and callbacks.
//!
//! The surface:
//! - [`Client`]: `Client(configJson, tools, hooks, waitFor)`, async `run`, async `stream` ->
//!   [`Run`] (`nextEvent()`, `cancel()`, `result()`), `cancel()`, `register` / `unregister`,
//!   `transcript()` / `setTranscript()`, `listModels()`, `backgroundShells()` ->
//!   [`BackgroundShells`] (`ids()`, `status(id)`, `closeAll()`; `null` when config
//!   `background` is off), `shutdown()`.
//! - Config crosses as the engine's `Config` JSON (the same keys in every binding).
//! - [`Event`]: a typed enum (a sealed class in Kotlin, an enum in Swift); `toJson()` gives the
//!   engine's own JSON of it. Free-form values (tool arguments, results, schemas) cross as JSON
//!   text, in fields named `…Json`.
//! - MCP: [`load_mcp`] (`loadMcp(configJson, onServer)`) -> [`McpSource`] (`tools()`,
//!   `resourceTools()`, `servers()`, `registerInto(client)`, `shutdown()`), its tools as
//!   [`SourceTool`] (`client.registerSourceTool(tool)`), server states to a
//!   [`McpServerListener`].
//! - Host code: [`HostTool`], [`Hooks`], [`WaitFor`], [`WebSearchProvider`], foreign traits
//!   with async methods (`suspend fun` / `async throws`).
//! - Errors: one type, [`ContenoxError`] (`ContenoxException` in Kotlin). A host callback that
//!   throws anything becomes an error result the model sees, never a panic.
//!
//! Async exports run on tokio (`async_runtime = "tokio"`): UniFFI enters a tokio runtime while it
//! polls them, so the engine's tasks (the turn, timers, HTTP) run there.
//!
//! The `uniffi-bindgen` binary of this crate generates the foreign sources from the built library
//! (library mode): see `bindings-uniffi/README.md`.

#![warn(missing_docs)]

mod callbacks;
mod client;
mod error;
mod mcp;
mod shells;
mod types;

pub use callbacks::{Hooks, HostTool, ToolContext, ToolReporter, WaitFor};
pub use client::{list_models, Client, Run};
pub use error::ContenoxError;
pub use mcp::{load_mcp, McpServer, McpServerListener, McpSource, ServerState, SourceTool};
pub use shells::BackgroundShells;
pub use types::{
    outcome_name, Answer, Decision, Event, GateVerdict, Hints, Message, ModelInfo, Outcome,
    PendingRequest, Source, Tier, ToolCall, ToolCallEvent, ToolOutput, ToolSpec, Transcript,
    TurnResult, Usage,
};

uniffi::setup_scaffolding!("contenox");
