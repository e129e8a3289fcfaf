//! Durable turns: a turn that waits for a person survives its process.
//!
//! A host's [`WaitFor`](crate::WaitFor) may answer an ask [`Answer::Suspend`]
//! (`{"suspend": true}` on every wire). The turn stops there with outcome
//! [`Outcome::Suspended`](crate::Outcome::Suspended); its result's `checkpoint` is JSON text
//! (versioned, sealed by a digest, free of the config's secrets) and its `pending` the requests
//! waiting. [`Client::resume`](crate::Client::resume) continues the same turn, in this process
//! or another with the same config: the gate runs again first (a policy that now denies wins),
//! an answer stands in for the human's ask only when its call id and the re-issued request
//! match the checkpoint's, a deadline that passed denies with the timeout sentence, recorded
//! results replay (a tool that ran is never run again), and the turn goes on to the model.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use std::sync::Arc;
//! use contenox::{async_trait, Answer, Client, Decision, Hooks, HostError, Outcome,
//!                PendingRequest, ScriptEntry, ToolCallEvent, WaitFor};
//! use contenox::durable::Answers;
//! use tokio_util::sync::CancellationToken;
//!
//! struct AskBeforeWrite;
//! #[async_trait]
//! impl Hooks for AskBeforeWrite {
//!     async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
//!         Ok(if call.name == "write" {
//!             Decision::Ask(PendingRequest::new("approval", "write a file?"))
//!         } else {
//!             Decision::Allow
//!         })
//!     }
//! }
//! struct Later;
//! #[async_trait]
//! impl WaitFor for Later {
//!     async fn wait_for(&self, _: PendingRequest, _: CancellationToken)
//!         -> Result<Answer, HostError> {
//!         Ok(Answer::Suspend)
//!     }
//! }
//! let dir = tempfile::tempdir().unwrap();
//! let client = Client::builder()
//!     .script(vec![
//!         ScriptEntry::tool_call(
//!             "call_1", "write", serde_json::json!({"path": "a.txt", "content": "hi"})),
//!         ScriptEntry::text("written"),
//!     ])
//!     .root(dir.path())
//!     .builtins(["write"])
//!     .hooks(Arc::new(AskBeforeWrite))
//!     .wait_for(Arc::new(Later))
//!     .build()
//!     .unwrap();
//! let first = client.run("write a.txt").await.unwrap();
//! assert_eq!(first.outcome, Outcome::Suspended);
//! assert!(!dir.path().join("a.txt").exists());
//! let call_id = first.pending[0].call_id.clone();
//!
//! // Later (in this client, or one with the same config in another process): the
//! // checkpoint and the answer.
//! let answers = Answers::from([(call_id, Answer::Approve)]);
//! let done = client.resume(first.checkpoint.as_deref().unwrap(), answers).await.unwrap();
//! assert_eq!(done.outcome, Outcome::Done);
//! assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "hi");
//! # });
//! ```
//!
//! What is and is not exactly-once: docs/durable.md.

mod checkpoint;
mod digest;
mod suspension;

use std::collections::BTreeMap;

use crate::gate::Answer;

pub(crate) use checkpoint::{call_digest, Approval, CallState, Checkpoint, Reply, RunRecord};
pub use checkpoint::{CHECKPOINT_VERSION, MAX_CHECKPOINT_BYTES};
pub(crate) use digest::config as config_digest;
pub(crate) use suspension::{new_turn_id, now_ms, Durable, Held, Resumed, Suspended, Suspension};

/// The answers a resume brings, keyed by the call id of each pending request.
pub type Answers = BTreeMap<String, Answer>;

/// Read answers from JSON text: an object of call id to answer in the wire shape
/// (`{"call_1": {"approve": true}}`); what every binding passes its host's answers through.
///
/// `Err(`[`Error::Config`](crate::Error::Config)`)` naming `answers` when it is not such an
/// object.
pub fn answers_from_json(text: &str) -> crate::Result<Answers> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        crate::Error::Config(crate::ConfigError::new("answers", format!("not JSON: {e}")))
    })?;
    let serde_json::Value::Object(m) = v else {
        return Err(crate::Error::Config(crate::ConfigError::new(
            "answers",
            "must be an object of call id to answer",
        )));
    };
    m.into_iter()
        .map(|(id, a)| {
            Answer::from_value(&a)
                .map(|a| (id.clone(), a))
                .map_err(|e| {
                    crate::Error::Config(crate::ConfigError::new(format!("answers.{id}"), e))
                })
        })
        .collect()
}

/// Digests the turn records (of tools, requests, config).
pub(crate) mod digests {
    pub(crate) use super::digest::{config, of, request, tool};
}
