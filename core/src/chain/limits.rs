//! The size caps of a chain run: a chain is hostile input, and without them a task whose
//! template doubles its own output (`x{{.t1}}{{.t1}}`, looping to itself) reaches gigabytes
//! in about 30 steps, well inside the step limit. Each cap has a default and an extension key
//! of the chain document beside `max_steps`; a run that passes one ends with outcome `error`
//! and a message naming the task and the key.

use crate::compact::estimate_message;
use crate::transcript::Message;

/// The most bytes one rendered text (`system_instruction`, `prompt_template`, a string `args`
/// of a `tools` task) may have unless the chain says otherwise (`max_template_bytes`): 1 MiB.
pub const DEFAULT_MAX_TEMPLATE_BYTES: usize = 1 << 20;

/// The most bytes one variable may hold unless the chain says otherwise
/// (`max_variable_bytes`): a task's output (`{{.TASK_ID}}`, the next task's input) and the
/// chain's input (`{{.input}}`). 4 MiB, above what the builtins return in one result.
pub const DEFAULT_MAX_VARIABLE_BYTES: usize = 4 << 20;

/// The most bytes one run may add to the conversation unless the chain says otherwise
/// (`max_history_bytes`): prompts, replies, tool calls and results, counted as the context
/// estimate counts them (four bytes a token). 16 MiB.
pub const DEFAULT_MAX_HISTORY_BYTES: usize = 16 << 20;

/// The largest value a chain may give any of the caps: 1 GiB.
pub(crate) const CEILING: usize = 1 << 30;

/// The size caps of one chain (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes of one rendered text (`max_template_bytes`).
    pub template_bytes: usize,
    /// The most bytes of one variable: a task's output, the chain's input
    /// (`max_variable_bytes`).
    pub variable_bytes: usize,
    /// The most bytes one run adds to the conversation (`max_history_bytes`).
    pub history_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            template_bytes: DEFAULT_MAX_TEMPLATE_BYTES,
            variable_bytes: DEFAULT_MAX_VARIABLE_BYTES,
            history_bytes: DEFAULT_MAX_HISTORY_BYTES,
        }
    }
}

impl Limits {
    /// The same caps, each kept within `1..=1 GiB`.
    pub(crate) fn clamped(self) -> Limits {
        let keep = |n: usize| n.clamp(1, CEILING);
        Limits {
            template_bytes: keep(self.template_bytes),
            variable_bytes: keep(self.variable_bytes),
            history_bytes: keep(self.history_bytes),
        }
    }
}

/// The bytes `messages` add to the conversation, as the context estimate counts them.
pub(crate) fn history_bytes(messages: &[Message]) -> usize {
    let tokens: u64 = messages.iter().map(estimate_message).sum();
    usize::try_from(tokens.saturating_mul(4)).unwrap_or(usize::MAX)
}

/// A task's text of `len` bytes against `limit`: the error names the task, what passed the
/// cap and the chain key that sets it.
pub(crate) fn check(
    task: &str,
    what: &str,
    len: usize,
    limit: usize,
    key: &str,
) -> Result<(), String> {
    if len <= limit {
        return Ok(());
    }
    Err(format!(
        "task {task:?}: {what} is {len} bytes, over the chain's limit of {limit} \
         ({key}); a chain that grows its own text each step?"
    ))
}
