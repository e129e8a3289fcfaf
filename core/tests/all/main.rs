//! The integration tests of the `contenox` crate, in one test binary: each module was a binary of
//! its own, and each linked the whole engine (reqwest, rmcp, html5ever) again. Run one module
//! with `cargo test -p contenox --test all web_fetch_hostile::`.
//!
//! Add a test module here (`mod name;` and `tests/all/name.rs`), never as `tests/name.rs`:
//! scripts/check_house.py fails on a second test binary. A test that needs a process to itself
//! (it sets environment variables) runs through `alone`.

mod alone;
mod mcp_util;
mod net_util;

mod builtin_processes;
mod chain_memory;
mod compaction;
mod concurrent_calls;
mod durable;
mod durable_hostile;
mod durable_multi;
mod errors;
mod file_confinement;
mod hooks_file;
mod js_execution;
mod lifecycle_hooks;
mod mcp_client_requests;
mod mcp_net;
mod mcp_oauth;
mod mcp_servers;
mod model_net;
mod notebook_nbformat;
mod policy_gate;
mod policy_properties;
mod run_handle;
mod sandbox;
mod stepped;
mod subagents;
mod telemetry;
mod tool_source;
mod traceparent_out;
mod turn_loop;
mod turn_queue;
mod web_fetch_hostile;
mod web_fetch_proxy;
