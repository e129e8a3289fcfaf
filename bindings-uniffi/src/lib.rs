//! # contenox-uniffi
//!
//! The Kotlin and Swift binding of contenox, through UniFFI proc-macros. Thin: the engine
//! (crate `contenox`) decides; this crate translates types, errors, async and callbacks.
//!
//! The surface:
//! - [`Client`]: `Client(configJson, tools, hooks, waitFor)`, async `run`, async `stream` ->
//!   [`Run`] (`nextBatch()`, `cancel()`, `result()`), `cancel()`, `register` / `unregister`,
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

mod client;
mod convert;
mod error;
mod event;
mod host;
mod mcp;
mod run;
mod shells;

pub use client::{list_models, Client};
pub use convert::{
    outcome_name, Answer, Decision, Message, PendingRequest, ToolCall, ToolCallEvent, ToolOutput,
    ToolSpec, Transcript, TurnResult,
};
pub use error::ContenoxError;
pub use event::Event;
pub use host::{
    Hooks, HostTool, SearchRequest, SearchResult, ToolContext, ToolReporter, WaitFor,
    WebSearchProvider,
};
pub use mcp::{load_mcp, McpServer, McpServerListener, McpSource, ServerState, SourceTool};
pub use run::Run;
pub use shells::BackgroundShells;

uniffi::setup_scaffolding!("contenox");
