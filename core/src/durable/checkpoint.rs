//! The checkpoint of a suspended turn: versioned JSON, sealed by a digest over its content.
//!
//! It holds what the turn needs to go on and nothing of the config's secrets: the conversation
//! before the suspended reply, the reply (text, calls in model order, reasoning parts), each
//! call's state (its recorded result, its ask with the request, absolute deadline and digests,
//! or not taken yet), what the turn spent (usage, the budget's counters), its model-response
//! counter, the run's own options (allowlist narrowing, `max_turns`, settings, schema) and the
//! digests of the config and of the tools offered. API keys, headers, `secret_env`, injected
//! values and MCP auth live in the client's config, which the host gives again at resume.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::digest;
use crate::error::{Error, Result};
use crate::event::Usage;
use crate::gate::PendingRequest;
use crate::policy::{Budget, Exhausted};
use crate::settings::ModelSettings;
use crate::transcript::{Message, Part, ToolCall, Transcript};

/// The checkpoint format this engine writes, and the newest it reads. A checkpoint with a
/// higher `version` is refused ([`crate::Error::Checkpoint`]): a newer engine wrote it.
///
/// Version 2 added the call state `approved` (a call after the first suspended one whose ask
/// was approved before the turn suspended); version 1 checkpoints are still read.
pub const CHECKPOINT_VERSION: u32 = 2;

/// The largest checkpoint text a resume reads: 256 MiB. A longer text is refused
/// ([`crate::Error::Checkpoint`]) before it is parsed. A checkpoint grows by about 265 bytes
/// per model request of a plain tool loop (docs/benchmarks.md); what makes one large is the
/// conversation's images and long tool results, and a turn whose conversation passed this
/// size would be far past every model's context window.
pub const MAX_CHECKPOINT_BYTES: usize = 256 * 1024 * 1024;

/// A suspended turn, as written into [`crate::TurnResult::checkpoint`].
///
/// Unknown fields are refused (here, in [`Reply`], [`CallState`] and [`RunRecord`]): a field
/// this engine does not know is state it would drop, so a format that adds one is a new
/// `version`. The types it shares with the rest of the engine (the transcript, usage, a
/// pending request, model settings) read as they read everywhere.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Checkpoint {
    pub version: u32,
    /// The turn's id, the same through every suspension and resume of it: the first half of
    /// its calls' idempotency keys (`turn_id:call_id`).
    pub turn_id: String,
    /// How many times the turn suspended before this checkpoint: two checkpoints of one turn
    /// differ in it.
    pub seq: u32,
    /// The prompt that started the turn (for the resumed turn's `turn_start`).
    pub prompt: String,
    /// [`digest::config`] of the client that suspended.
    pub config_digest: String,
    /// The digest of the tools the turn offered when it suspended (sorted by name).
    pub tools_digest: String,
    /// The conversation before the suspended reply (the prompt in it).
    pub transcript: Transcript,
    /// The suspended reply.
    pub reply: Reply,
    /// One state per call of the reply, in the model's order.
    pub calls: Vec<CallState>,
    /// Model responses so far (the suspended reply counted).
    pub index: u32,
    /// Usage so far (the suspended reply's counted).
    pub usage: Usage,
    /// The budget's counters so far (the suspended reply's calls counted).
    pub budget: Budget,
    /// The ceiling the reply's step reached, when it did: the turn ends after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<Exhausted>,
    /// Answers sent back as not matching the output schema, so far.
    pub corrections: u32,
    /// The run's own options.
    pub run: RunRecord,
}

/// The suspended model reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Reply {
    pub text: String,
    pub calls: Vec<ToolCall>,
    /// Reasoning parts, each with the number of calls before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra: Vec<(usize, Part)>,
}

/// Where one call of the suspended reply stands.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum CallState {
    /// Its result is in: replayed at resume, never run again.
    Done { call_id: String, result: Message },
    /// Its ask answered suspend.
    Asked {
        call_id: String,
        /// The request as the host saw it (`timeout_ms` as the hook set it).
        request: Box<PendingRequest>,
        /// When the ask times out, Unix milliseconds; `None` = never.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deadline_ms: Option<u64>,
        /// [`digest::request`] of the request: an answer stands in for the ask only while the
        /// gate asks the same again.
        request_digest: String,
        /// [`digest::tool`] of the tool's spec, and of the call's name and arguments.
        tool_digest: String,
        call_digest: String,
        /// Which gate asked: 0 = the turn's own client.
        level: usize,
        /// The policy rule that decided, when a policy did (else the host's `before_tool`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<String>,
    },
    /// Gated and approved after an earlier call of the reply suspended, not run (it may depend
    /// on that call): gated again at resume, where each kept approval answers the gate's ask
    /// only while it asks the same (same level, same request digest). Since version 2.
    Approved {
        call_id: String,
        approvals: Vec<Approval>,
        tool_digest: String,
        call_digest: String,
    },
    /// Not taken yet (or let through by the gate without an ask after an earlier call
    /// suspended): gated at resume. `settled` is its result without running (a ceiling
    /// reached), when it has one (written by version 1 only).
    Untaken {
        call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_digest: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        settled: Option<String>,
    },
}

/// One approval an `approved` call keeps: which gate asked, and the digest of its request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Approval {
    pub level: usize,
    pub request_digest: String,
}

impl CallState {
    pub fn call_id(&self) -> &str {
        match self {
            CallState::Done { call_id, .. }
            | CallState::Asked { call_id, .. }
            | CallState::Approved { call_id, .. }
            | CallState::Untaken { call_id, .. } => call_id,
        }
    }
}

/// A run's own options ([`crate::RunOptions`] less its cancel token).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<ModelSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_retries: Option<u32>,
}

/// The digest of a call's name and arguments.
pub(crate) fn call_digest(call: &ToolCall) -> String {
    digest::of(&serde_json::json!({"name": call.name, "arguments": call.arguments}))
}

impl Checkpoint {
    /// The JSON text, sealed: `digest` is the SHA-256 of the rest.
    pub fn seal(&self) -> String {
        // Cannot fail: every field is strings, numbers and `Value`s.
        let mut v = serde_json::to_value(self).expect("a checkpoint always serializes");
        let d = digest::sha256_hex(v.to_string().as_bytes());
        if let Value::Object(m) = &mut v {
            m.insert("digest".into(), Value::String(d));
        }
        v.to_string()
    }

    /// Read a sealed checkpoint: refused when it is larger than [`MAX_CHECKPOINT_BYTES`], when
    /// it is not one (not JSON, nested deeper than JSON's reader goes, a field of the wrong
    /// type, an unknown field), when a newer engine wrote it, or when its content does not
    /// match its digest.
    pub fn open(text: &str) -> Result<Checkpoint> {
        let refuse = |why: String| Error::Checkpoint(why);
        if text.len() > MAX_CHECKPOINT_BYTES {
            return Err(refuse(format!(
                "it is {} bytes, more than the {} MiB a checkpoint may be",
                text.len(),
                MAX_CHECKPOINT_BYTES >> 20
            )));
        }
        // serde_json's reader stops at 128 levels of nesting (an error, not a deep stack).
        let mut v: Value =
            serde_json::from_str(text).map_err(|e| refuse(format!("it is not JSON ({e})")))?;
        let Value::Object(m) = &mut v else {
            return Err(refuse("it is not a JSON object".into()));
        };
        match m.get("version").and_then(Value::as_u64) {
            None => return Err(refuse("it has no numeric `version`".into())),
            Some(n) if n > u64::from(CHECKPOINT_VERSION) => {
                return Err(refuse(format!(
                    "its version {n} is newer than this engine's ({CHECKPOINT_VERSION}); resume \
                     it with the engine that wrote it, or a newer one"
                )))
            }
            Some(0) => return Err(refuse("its version 0 is not a checkpoint version".into())),
            Some(_) => {}
        }
        let Some(Value::String(sealed)) = m.remove("digest") else {
            return Err(refuse("it has no `digest`".into()));
        };
        if digest::sha256_hex(v.to_string().as_bytes()) != sealed {
            return Err(refuse(
                "its content does not match its digest: it was edited or corrupted".into(),
            ));
        }
        let cp: Checkpoint = serde_json::from_value(v)
            .map_err(|e| refuse(format!("its content is not a checkpoint ({e})")))?;
        cp.check()?;
        Ok(cp)
    }

    /// What the digest cannot vouch for: that the pieces fit one another.
    fn check(&self) -> Result<()> {
        let refuse = |why: String| Err(Error::Checkpoint(why));
        // The key tools get is `turn_id:call_id`: only the ids this engine draws reach them.
        let id = self.turn_id.strip_prefix("turn_").unwrap_or_default();
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return refuse(format!(
                "its turn_id {:?} is not one this engine draws (turn_ and 32 hex digits)",
                self.turn_id.chars().take(80).collect::<String>()
            ));
        }
        if self.calls.len() != self.reply.calls.len()
            || self
                .calls
                .iter()
                .zip(&self.reply.calls)
                .any(|(s, c)| s.call_id() != c.id)
        {
            return refuse("its call states do not match its reply's calls".into());
        }
        if !self
            .calls
            .iter()
            .any(|c| matches!(c, CallState::Asked { .. }))
        {
            return refuse("no call in it is waiting for an answer".into());
        }
        for (state, call) in self.calls.iter().zip(&self.reply.calls) {
            match state {
                CallState::Done { result, .. } => match result {
                    Message::Tool { call_id, .. } if *call_id == call.id => {}
                    _ => return refuse(format!("the result of {} is not its result", call.id)),
                },
                CallState::Asked {
                    request,
                    call_digest: d,
                    ..
                } => {
                    if request.call_id != call.id || *d != call_digest(call) {
                        return refuse(format!(
                            "the ask of {} does not match the call (its digest differs)",
                            call.id
                        ));
                    }
                }
                CallState::Approved {
                    call_digest: d,
                    approvals,
                    ..
                } => {
                    if self.version < 2 {
                        return refuse(format!(
                            "its version {} has no approved calls, but {} is one",
                            self.version, call.id
                        ));
                    }
                    if approvals.is_empty() || *d != call_digest(call) {
                        return refuse(format!(
                            "the approval of {} does not match the call (its digest differs, \
                             or it holds none)",
                            call.id
                        ));
                    }
                }
                CallState::Untaken { .. } => {}
            }
        }
        self.transcript
            .validate()
            .map_err(|e| Error::Checkpoint(format!("its conversation is not valid ({e})")))?;
        Ok(())
    }

    /// The requests waiting for an answer, for the result's `pending`: each with its absolute
    /// deadline and what is left of its time at `now_ms`.
    pub fn pending(&self, now_ms: u64) -> Vec<PendingRequest> {
        self.calls
            .iter()
            .filter_map(|c| match c {
                CallState::Asked {
                    request,
                    deadline_ms,
                    ..
                } => {
                    let mut r = (**request).clone();
                    r.deadline_ms = *deadline_ms;
                    if let Some(d) = deadline_ms {
                        r.timeout_ms = Some(d.saturating_sub(now_ms));
                    }
                    Some(r)
                }
                _ => None,
            })
            .collect()
    }
}
