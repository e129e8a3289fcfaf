//! A reply's tool calls: gated one after another in the model's order, run side by side where
//! `tool_concurrency` allows it, their results handed on in the model's order.
//!
//! The rule (`read_only`, the default): a call of a tool whose hints say read-only, or of a
//! subagent, starts as soon as the gate allows it (at most `max_concurrent_tools` at once); any
//! other call first waits for every call before it to finish, then runs alone, and the calls
//! after it are gated only once it has finished. So a write never races a read, and around a
//! write the events come exactly as when every call ran in turn. `all` treats every call as
//! read-only, `none` none.
//!
//! Everything runs in the turn's own task: the running calls are futures polled beside the gate
//! of the next call, so cancelling the turn reaches each of them through the turn's token (each
//! returns its cancelled result), and a call that fails or panics (caught in
//! [`Turn::execute`]) gives its own error result and touches no other.

use std::task::Poll;

use futures::stream::{FuturesUnordered, StreamExt};

use crate::config::ToolConcurrency;
use crate::event::Usage;
use crate::scope::UsageCell;
use crate::tool::{Source, ToolOutput, CALL_TOOL};
use crate::transcript::ToolCall;
use crate::turn::{Admission, Turn, CANCELLED_RESULT};

/// The results of a reply's calls as they come in, handed on in the model's order.
struct InOrder<'c, F> {
    calls: &'c [ToolCall],
    finished: Vec<Option<(ToolOutput, Usage)>>,
    next: usize,
    done: F,
}

impl<'c, F: FnMut(&'c ToolCall, ToolOutput, Usage)> InOrder<'c, F> {
    fn put(&mut self, i: usize, out: ToolOutput, spent: Usage) {
        self.finished[i] = Some((out, spent));
        while let Some((out, spent)) = self.finished.get_mut(self.next).and_then(Option::take) {
            (self.done)(&self.calls[self.next], out, spent);
            self.next += 1;
        }
    }
}

impl Turn<'_> {
    /// Run a reply's `calls`: a call for which `settled` gives a result (a ceiling reached) is
    /// not run; every other one is admitted through the gate in order and run as the module's
    /// rule allows. `done` gets each call's result and what it spent on models, in the model's
    /// order, as soon as the calls before it have theirs.
    pub(crate) async fn run_calls<'c>(
        &self,
        calls: &'c [ToolCall],
        settled: impl Fn(usize) -> Option<ToolOutput>,
        done: impl FnMut(&'c ToolCall, ToolOutput, Usage),
    ) {
        let config = self.inner.config();
        let cap = config.max_concurrent_tools.max(1) as usize;
        let mut results = InOrder {
            calls,
            finished: (0..calls.len()).map(|_| None).collect(),
            next: 0,
            done,
        };
        let mut running = FuturesUnordered::new();
        for (i, call) in calls.iter().enumerate() {
            if let Some(out) = settled(i) {
                results.put(i, out, Usage::default());
                continue;
            }
            let beside = self.runs_beside(call, config.tool_concurrency);
            if !beside {
                // Alone: the calls before it finish first.
                while let Some((j, out, spent)) = running.next().await {
                    results.put(j, out, spent);
                }
            }
            if self.cancel.is_cancelled() {
                results.put(i, ToolOutput::error(CANCELLED_RESULT), Usage::default());
                continue;
            }
            // Gate this call while the ones already running go on (and their results are
            // handed on as they finish).
            let admission = {
                let admit = self.admit(call);
                tokio::pin!(admit);
                loop {
                    tokio::select! {
                        biased;
                        a = &mut admit => break a,
                        Some((j, out, spent)) = running.next(), if !running.is_empty() => {
                            results.put(j, out, spent);
                        }
                    }
                }
            };
            let (entry, event) = match admission {
                Admission::Settled(out) => {
                    results.put(i, out, Usage::default());
                    continue;
                }
                Admission::Run { entry, event } => (entry, event),
            };
            let run = async move {
                let cell = UsageCell::default();
                let out = self.execute(&entry, &event, &cell).await;
                (i, out, cell.get())
            };
            if beside {
                while running.len() >= cap {
                    if let Some((j, out, spent)) = running.next().await {
                        results.put(j, out, spent);
                    }
                }
                running.push(run);
                // Start it now (up to its first wait), not when the next gate waits: its
                // `tool_start` comes before the next call's gate, and a host tool is on its way.
                while let Poll::Ready(Some((j, out, spent))) = futures::poll!(running.next()) {
                    results.put(j, out, spent);
                }
            } else {
                let (j, out, spent) = run.await;
                results.put(j, out, spent);
            }
        }
        while let Some((j, out, spent)) = running.next().await {
            results.put(j, out, spent);
        }
    }

    /// Whether `call` may run beside others under `mode`: read-only and subagent calls under
    /// `read_only`. A call that names no tool it may use gets its error at the gate and runs
    /// nothing, so it waits for nothing either.
    fn runs_beside(&self, call: &ToolCall, mode: ToolConcurrency) -> bool {
        match mode {
            ToolConcurrency::All => true,
            ToolConcurrency::Sequential => false,
            ToolConcurrency::ReadOnly => {
                if call.name == CALL_TOOL && call.via.is_none() {
                    return true;
                }
                let allowed = |n: &str| self.allowed(n);
                match self.inner.toolkit().lookup(&call.name, &allowed) {
                    None => true,
                    Some(entry) => {
                        entry.spec.hints.read_only == Some(true) || entry.source == Source::Subagent
                    }
                }
            }
        }
    }
}
