//! # contenox-node
//!
//! The native half of the npm package `contenox`: a napi-rs v3 module over the `contenox` engine.
//! The TypeScript layer (`index.ts`, `lib/`) gives it its JavaScript shape (`createClient`, `tool`,
//! `deny`, `pending`, AbortSignal, async iteration); this crate only translates:
//!
//! - options arrive as one JSON document as the host wrote them; [`convert`] renames them to
//!   core's vocabulary and core checks them, naming mistakes in JavaScript's spelling;
//! - events, gate calls, pending requests and results leave as JSON text with camelCase keys
//!   (`call_id` -> `callId`, `final_text` -> `finalText`, `arguments` -> `args`), see [`convert`]
//!   (the one place of the casing rule); JSON text is cheaper to cross the boundary than objects
//!   built property by property;
//! - engine errors become instances of the TypeScript layer's error classes, with the engine's
//!   cause chain as `cause` (see `error`);
//! - host callbacks (tools, `beforeTool`, `afterTool`, `waitFor`, the `websearch` provider) are
//!   weak ThreadsafeFunctions awaited with `call_async_catch`: they never keep the process alive
//!   and a throwing or rejecting callback becomes an error result, never a crash (see [`host`]);
//! - cancellation: a turn's cancel token and AbortSignals meet through [`client::NativeCancel`]
//!   and the per-call abort keys of [`host`].

mod client;
pub mod convert;
mod error;
mod hooks;
mod host;
mod mcp_auth;
mod run;
mod shells;
mod source;
mod step;
mod telemetry;
mod transcript;

pub use client::{js_name, list_models, policy_preset, NativeCancel, NativeClient};
pub use error::set_error_factory;
pub use run::{NativeRun, NativeTurnResult, NativeUsage};
pub use source::{load_source, NativeSource, NativeTool};
pub use step::{NativeAction, NativeStepper};
pub use transcript::NativeTranscript;
