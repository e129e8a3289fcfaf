//! Conformance harness of contenox: scenario types, the fake model server and the checker.
//! See `tests/conformance/README.md`.

pub mod check;
pub mod fake;
pub mod scenario;
