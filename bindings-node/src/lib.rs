//! # contenox-node
//!
//! The native half of the npm package `contenox`: a napi-rs v3 module over the `contenox` engine.
//! The TypeScript layer (`index.ts`) gives it its JavaScript shape (`createClient`, `tool`,
//! `deny`, `pending`, AbortSignal, async iteration); this crate only translates:
//!
//! - options arrive as one JSON document in core's own vocabulary (the TypeScript layer renames
//!   camelCase to snake_case) and go to [`contenox::Config::from_json`] unchanged;
//! - events, gate calls, pending requests and results leave as JSON text with camelCase keys
//!   (`call_id` -> `callId`, `final_text` -> `finalText`, `arguments` -> `args`), see [`shape`];
//!   JSON text is cheaper to cross the boundary than objects built property by property;
//! - host callbacks (tools, `beforeTool`, `afterTool`, `waitFor`, the `websearch` provider) are
//!   weak ThreadsafeFunctions awaited with `call_async_catch`: they never keep the process alive
//!   and a throwing or rejecting callback becomes an error result, never a crash (see [`host`]);
//! - cancellation: a turn's cancel token and AbortSignals meet through [`client::NativeCancel`]
//!   and the per-call abort keys of [`host`].

mod client;
mod host;
mod mcp;
mod run;
pub mod shape;

pub use client::{
    list_models, NativeCancel, NativeClient, NativeTranscript, NativeTurnResult, NativeUsage,
};
pub use mcp::{load_mcp_source, NativeMcpSource, NativeTool};
pub use run::NativeRun;
