//! The integration tests of the `contenox` command, in one test binary (each module was a binary
//! of its own, each linking the engine again). Run one module with
//! `cargo test -p contenox-cli --test all terminal::`.
//!
//! Add a test module here (`mod name;` and `tests/all/name.rs`), never as `tests/name.rs`:
//! scripts/check_house.py fails on a second test binary.

mod common;

mod acp;
mod hook;
mod mcp_elicit;
mod mcp_oauth;
mod terminal;
mod walkthrough;
