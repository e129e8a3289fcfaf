//! Approval policies: a hitl-policy-v1 document as the first stage of the gate, failing closed.
//!
//! A policy is read whole and validated when the client is created ([`Policy::from_source`]:
//! a document, its JSON text or a file path); anything it does not understand is a
//! configuration error naming the rule and the field. For each call the first matching rule
//! decides (else `default_action`, `approve` when absent):
//! - `deny`: an error result the model sees, naming the rule; the turn goes on;
//! - `approve`: an ask (kind `approval`, a prompt with the tool, its arguments and, for the
//!   builtin file tools, a unified diff) answered by the host's `wait_for`, denied after the
//!   rule's `timeout_s`;
//! - `allow`: the host's `before_tool` still runs and may deny or ask; it cannot widen a deny.
//!
//! An evaluation that fails (a command line that cannot be read) denies that call.
//! The `compute` section and the options `max_tool_calls` / `max_turn_tokens` are per-turn
//! ceilings ([`Ceilings`]): crossing one ends the turn with outcome `budget`.
//!
//! ```
//! use contenox::policy::{Action, Policy, PolicyCall};
//! use contenox::{Hints, Source};
//! use serde_json::json;
//!
//! let policy = Policy::from_value(&json!({
//!     "default_action": "approve",
//!     "rules": [
//!         {"tool": "bash", "action": "allow",
//!          "when": [{"key": "command", "op": "command_prefix_allowlist", "value": "ls,cat"}]},
//!         {"tool": "read", "action": "deny",
//!          "when": [{"key": "path", "op": "glob", "value": "**/.ssh/**"}]}
//!     ]
//! })).unwrap();
//! let verdict = |name: &str, args: serde_json::Value| policy.evaluate(&PolicyCall {
//!     name, arguments: &args, source: Source::Builtin, server: None,
//!     hints: Hints::default(), root: None,
//! }).unwrap().action;
//! assert_eq!(verdict("bash", json!({"command": "ls -la"})), Action::Allow);
//! assert_eq!(verdict("bash", json!({"command": "ls; rm -rf /"})), Action::Approve);
//! assert_eq!(verdict("read", json!({"path": "a/../.ssh/id_rsa"})), Action::Deny);
//! ```

mod compute;
mod condition;
mod diff;
mod document;
mod evaluate;
mod gate;
mod glob;
pub mod presets;
pub mod shell;

pub use compute::{Budget, Ceilings, Exhausted, Spend, BUDGET_RESULT};
pub use condition::Op;
pub use diff::{unified_diff, MAX_DIFF_BYTES, MAX_DIFF_FILE_BYTES};
pub use document::{
    Action, ComputeBounds, HintsMatch, Policy, PolicyError, Rule, MAX_POLICY_FILE_BYTES,
    POLICY_VERSION,
};
pub use evaluate::{EvalError, PolicyCall, RuleRef, Verdict};
pub use gate::{PolicyGate, POLICY_DENIAL_TAIL};

pub(crate) use compute::check_backend;
pub(crate) use gate::judge;
