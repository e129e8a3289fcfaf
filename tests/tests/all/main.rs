//! The integration tests of the conformance crate, in one test binary (each module was a binary
//! of its own, each linking the engine again). Run one module with
//! `cargo test -p contenox-conformance --test all remote::`.
//!
//! Add a test module here (`mod name;` and `tests/all/name.rs`), never as `tests/name.rs`:
//! scripts/check_house.py fails on a second test binary. A test that needs a process to itself
//! (it sets environment variables) runs through `alone`, which core's tests share.

#[path = "../../../core/tests/all/alone.rs"]
mod alone;

mod cli;
mod engine_http;
mod event_schema;
mod fake_server;
mod fallback;
mod json_depth;
mod prompt_cache;
mod recorded_streams;
mod remote;
mod remote_corpus;
mod remote_fastapi;
mod secrets;
mod settings;
