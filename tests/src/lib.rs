//! Conformance harness of contenox: scenario types, the fake model server, the checker and the
//! Rust runner. See `tests/conformance/README.md`.

pub mod check;
mod check_step;
pub mod fake;
pub mod mcp_support;
pub mod otlp;
pub mod recorded;
pub mod remote;
pub mod remote_support;
pub mod runner;
mod runner_step;
pub mod scenario;
pub mod suite;
pub mod texts;
