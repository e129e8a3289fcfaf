//! A root turn's durable state: its id, whether one of its calls suspended, and, for a resumed
//! turn, the answers and digests its checkpoint brought.

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

/// An ask of the checkpoint, at resume.
struct Asked {
    request_digest: String,
    deadline_ms: Option<u64>,
    level: usize,
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
    suspended: Mutex<Option<Suspended>>,
    /// For a resumed turn: the checkpoint's asks by call id.
    asked: Mutex<BTreeMap<String, Asked>>,
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
            suspended: Mutex::new(None),
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
                        call_id.clone(),
                        Asked {
                            request_digest: request_digest.clone(),
                            deadline_ms: *deadline_ms,
                            level: *level,
                            answer: answers.remove(call_id),
                        },
                    );
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
            suspended: Mutex::new(None),
            asked: Mutex::new(asked),
            tool_digests,
            config_changed: cp.config_digest != config_digest,
        }
    }

    /// Note that a call suspended (the first one wins; the turn takes no call after it).
    pub fn suspend(&self, s: Suspended) {
        self.suspended.lock().get_or_insert(s);
    }

    /// Whether a call suspended.
    pub fn suspending(&self) -> bool {
        self.suspended.lock().is_some()
    }

    /// The call that suspended, taken.
    pub fn take_suspended(&self) -> Option<Suspended> {
        self.suspended.lock().take()
    }

    /// The call id that suspended, if one did.
    pub fn suspended_id(&self) -> Option<String> {
        self.suspended.lock().as_ref().map(|s| s.call_id.clone())
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
    /// is handed out once.
    pub fn resumed_ask(&self, request: &PendingRequest, level: usize) -> Resumed {
        let mut asked = self.asked.lock();
        let Some(a) = asked.get_mut(&request.call_id) else {
            return Resumed::New;
        };
        if a.level != level || a.request_digest != digest::request(request) {
            return Resumed::New;
        }
        let deadline_ms = a.deadline_ms;
        let answer = a.answer.take();
        // Asked once: a second ask of the same call (another level) is a new one.
        asked.remove(&request.call_id);
        Resumed::Same {
            deadline_ms,
            answer,
        }
    }
}
