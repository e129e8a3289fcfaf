//! A root turn's durable state: its id, which of its calls suspended (and which were held
//! after the first: gated and asked, not run), and, for a resumed turn, the answers, kept
//! approvals and digests its checkpoint brought.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::checkpoint::{CallState, Checkpoint, RunRecord};
use super::digest;
use crate::gate::{Answer, PendingRequest};
use crate::tool::Entry;

/// Unix milliseconds now (the deadline of an ask is absolute, so that a resumed ask does not
/// restart its clock).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A fresh turn id: 128 random bits, hex.
pub(crate) fn new_turn_id() -> String {
    format!("turn_{:032x}", rand::random::<u128>())
}

/// The call whose ask answered suspend.
#[derive(Debug, Clone)]
pub(crate) struct Suspended {
    pub call_id: String,
    pub request: PendingRequest,
    pub deadline_ms: Option<u64>,
    pub level: usize,
    pub rule: Option<String>,
    pub tool_digest: String,
}

/// A call of a suspending reply after its first suspended call that the gate let through
/// (allowed, or every ask approved): it does not run before the suspended calls are answered
/// (it may depend on them). `approvals` are the asks approved now, each `(level, request
/// digest)`: kept in the checkpoint, they stand in for the human at resume while the gate
/// asks the same again.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub call_id: String,
    pub approvals: Vec<(usize, String)>,
    pub tool_digest: String,
}

/// What a suspending reply's calls left waiting: the asks answered suspend and the calls held
/// after the first, each in the model's order.
#[derive(Debug, Default)]
pub(crate) struct Suspension {
    pub suspended: Vec<Suspended>,
    pub held: Vec<Held>,
}

/// An ask of the checkpoint (or an approval it kept), at resume.
struct Asked {
    request_digest: String,
    deadline_ms: Option<u64>,
    answer: Option<Answer>,
}

/// What a resumed ask starts from.
pub(crate) enum Resumed {
    /// The same ask as before: its absolute deadline, and the host's answer when one came
    /// with the resume.
    Same {
        deadline_ms: Option<u64>,
        answer: Option<Answer>,
    },
    /// Not an ask of the checkpoint (another call, or the gate asks something else now): a
    /// new ask.
    New,
}

/// A root turn's durable state.
pub(crate) struct Durable {
    pub turn_id: String,
    /// The number the next checkpoint gets.
    pub seq: u32,
    pub prompt: String,
    pub run: RunRecord,
    suspension: Mutex<Suspension>,
    /// For a resumed turn: the checkpoint's asks and kept approvals by call id and gate level.
    asked: Mutex<BTreeMap<(String, usize), Asked>>,
    /// For a resumed turn: the reply's calls' tool digests by call id.
    tool_digests: BTreeMap<String, String>,
    /// For a resumed turn: the config digest differs from the checkpoint's.
    config_changed: bool,
}

impl Durable {
    /// A new turn's state.
    pub fn new(prompt: String, run: RunRecord) -> Self {
        Durable {
            turn_id: new_turn_id(),
            seq: 0,
            prompt,
            run,
            suspension: Mutex::default(),
            asked: Mutex::default(),
            tool_digests: BTreeMap::new(),
            config_changed: false,
        }
    }

    /// A resumed turn's state: `answers` were checked against the checkpoint.
    pub fn resumed(
        cp: &Checkpoint,
        answers: BTreeMap<String, Answer>,
        config_digest: &str,
    ) -> Self {
        let mut answers = answers;
        let mut asked = BTreeMap::new();
        let mut tool_digests = BTreeMap::new();
        for c in &cp.calls {
            match c {
                CallState::Asked {
                    call_id,
                    deadline_ms,
                    request_digest,
                    tool_digest,
                    level,
                    ..
                } => {
                    tool_digests.insert(call_id.clone(), tool_digest.clone());
                    asked.insert(
                        (call_id.clone(), *level),
                        Asked {
                            request_digest: request_digest.clone(),
                            deadline_ms: *deadline_ms,
                            answer: answers.remove(call_id),
                        },
                    );
                }
                CallState::Approved {
                    call_id,
                    approvals,
                    tool_digest,
                    ..
                } => {
                    tool_digests.insert(call_id.clone(), tool_digest.clone());
                    // Approved in time: no deadline can deny it any more.
                    for a in approvals {
                        asked.insert(
                            (call_id.clone(), a.level),
                            Asked {
                                request_digest: a.request_digest.clone(),
                                deadline_ms: None,
                                answer: Some(Answer::Approve),
                            },
                        );
                    }
                }
                CallState::Untaken {
                    call_id,
                    tool_digest: Some(d),
                    ..
                } => {
                    tool_digests.insert(call_id.clone(), d.clone());
                }
                _ => {}
            }
        }
        Durable {
            turn_id: cp.turn_id.clone(),
            seq: cp.seq.saturating_add(1),
            prompt: cp.prompt.clone(),
            run: cp.run.clone(),
            suspension: Mutex::default(),
            asked: Mutex::new(asked),
            tool_digests,
            config_changed: cp.config_digest != config_digest,
        }
    }

    /// Note that a call suspended: the reply's later calls are gated and asked, but none runs.
    pub fn suspend(&self, s: Suspended) {
        self.suspension.lock().suspended.push(s);
    }

    /// Note a call held after the first suspension (let through by the gate, not run).
    pub fn hold(&self, h: Held) {
        self.suspension.lock().held.push(h);
    }

    /// Whether a call suspended.
    pub fn suspending(&self) -> bool {
        !self.suspension.lock().suspended.is_empty()
    }

    /// The calls that suspended and the ones held after them, taken; `None` when none
    /// suspended.
    pub fn take_suspension(&self) -> Option<Suspension> {
        let mut s = self.suspension.lock();
        if s.suspended.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut *s))
    }

    /// Whether call `call_id` suspended or is held: it has no result in this reply.
    pub fn waits(&self, call_id: &str) -> bool {
        let s = self.suspension.lock();
        s.suspended.iter().any(|c| c.call_id == call_id)
            || s.held.iter().any(|c| c.call_id == call_id)
    }

    /// Why a call of the resumed reply must not run (fail closed), if it must not: the config
    /// changed since the checkpoint, or the call's tool did.
    pub fn fail_closed(&self, call_id: &str, entry: &Entry) -> Option<String> {
        let recorded = self.tool_digests.get(call_id)?;
        if self.config_changed {
            return Some(format!(
                "{} was not run: the client's config (model, system prompt, tools or schema) \
                 is not the one the turn was suspended with",
                entry.spec.name
            ));
        }
        if *recorded != digest::tool(&entry.spec) {
            return Some(format!(
                "{} was not run: the tool changed since the turn was suspended (its spec \
                 digest differs)",
                entry.spec.name
            ));
        }
        None
    }

    /// What the ask `request` (at gate `level`) starts from at resume. The checkpoint's answer
    /// (or kept approval) is handed out once, and only while the gate asks the same (same
    /// call, level and request digest).
    pub fn resumed_ask(&self, request: &PendingRequest, level: usize) -> Resumed {
        let mut asked = self.asked.lock();
        // Asked once: a second ask of the same call and level is a new one.
        let Some(a) = asked.remove(&(request.call_id.clone(), level)) else {
            return Resumed::New;
        };
        if a.request_digest != digest::request(request) {
            return Resumed::New;
        }
        Resumed::Same {
            deadline_ms: a.deadline_ms,
            answer: a.answer,
        }
    }
}
