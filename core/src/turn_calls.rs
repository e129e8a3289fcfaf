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
//! of the next call (and beside the model's stream, for calls that start before the reply is
//! over), so cancelling the reply's token reaches each of them (each returns its cancelled
//! result), and a call that fails or panics (caught in [`Turn::execute`]) gives its own error
//! result and touches no other.

use std::sync::Arc;
use std::task::Poll;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};

use crate::config::ToolConcurrency;
use crate::event::Usage;
use crate::gate::ToolCallEvent;
use crate::tool::{Entry, ToolOutput, CANCELLED_RESULT};
use crate::transcript::ToolCall;

/// What the gate made of one call ([`CallRunner::admit`]).
pub(crate) enum Admission {
    /// The call's result, without running it.
    Settled(ToolOutput),
    /// Allowed: run it ([`CallRunner::run`]).
    Run {
        entry: Arc<Entry>,
        event: ToolCallEvent,
    },
}

/// What takes a reply's calls through the gate and runs them: the turn (`turn.rs`), under the
/// reply's cancel token.
pub(crate) trait CallRunner: Sync {
    /// The reply's token was cancelled.
    fn cancelled(&self) -> bool;
    /// `call` may run beside others under `mode`.
    fn runs_beside(&self, call: &ToolCall, mode: ToolConcurrency) -> bool;
    /// Check `call` and pass it through the gate (its asks answered).
    fn admit<'s>(&'s self, call: &'s ToolCall) -> BoxFuture<'s, Admission>;
    /// Check `call` and pass it through the gate without running it (an earlier call of the
    /// reply suspended, and a later call may depend on it): its result when the gate settled
    /// it (denied, answered with a result, not a call it may make), `None` when it waits for
    /// the resume (its ask suspended too, or the gate let it through).
    fn hold<'s>(&'s self, call: &'s ToolCall) -> BoxFuture<'s, Option<ToolOutput>>;
    /// Run an admitted call: its result and what it spent on models.
    fn run(&self, entry: Arc<Entry>, event: ToolCallEvent) -> BoxFuture<'_, (ToolOutput, Usage)>;
}

/// One call's end: its position in the reply, its result, what it spent on models.
type Ended = (usize, ToolOutput, Usage);

/// The calls of one reply, taken one after another in the model's order.
pub(crate) struct ReplyCalls<'t, R: CallRunner> {
    turn: &'t R,
    mode: ToolConcurrency,
    cap: usize,
    running: FuturesUnordered<BoxFuture<'t, Ended>>,
    /// One slot per call taken; filled when it ends.
    finished: Vec<Option<(ToolOutput, Usage)>>,
    /// The next result to hand on.
    next: usize,
}

impl<'t, R: CallRunner> ReplyCalls<'t, R> {
    /// The calls of one reply, run by `turn` (whose cancel token is the reply's) as `mode`
    /// allows, at most `cap` at once.
    pub(crate) fn new(turn: &'t R, mode: ToolConcurrency, cap: u32) -> Self {
        ReplyCalls {
            turn,
            mode,
            cap: cap.max(1) as usize,
            running: FuturesUnordered::new(),
            finished: Vec::new(),
            next: 0,
        }
    }

    /// How many calls were taken.
    pub(crate) fn taken(&self) -> usize {
        self.finished.len()
    }

    fn end(&mut self, (i, out, spent): Ended) {
        self.finished[i] = Some((out, spent));
    }

    /// Whether `call` may run beside others (else it runs alone, after the calls before it).
    pub(crate) fn runs_beside(&self, call: &ToolCall) -> bool {
        self.turn.runs_beside(call, self.mode)
    }

    /// Before taking `call`: when it must run alone, wait for the calls running now (then
    /// their results can be handed on before its gate, as when calls ran one at a time).
    pub(crate) async fn clear_for(&mut self, call: &ToolCall) {
        if !self.runs_beside(call) {
            while let Some(ended) = self.running.next().await {
                self.end(ended);
            }
        }
    }

    /// Take the reply's next call: `settled` is its result without running it (a ceiling
    /// reached); else it is gated and started as the module's rule allows. Returns once it
    /// started (or, when it may not run beside others, once it ended).
    pub(crate) async fn take(&mut self, call: &ToolCall, settled: Option<ToolOutput>) {
        let i = self.finished.len();
        self.finished.push(None);
        if let Some(out) = settled {
            self.end((i, out, Usage::default()));
            return;
        }
        let beside = self.runs_beside(call);
        // Alone: the calls before it finish first.
        self.clear_for(call).await;
        if self.turn.cancelled() {
            self.end((i, ToolOutput::error(CANCELLED_RESULT), Usage::default()));
            return;
        }
        // Gate this call while the ones already running go on.
        let turn = self.turn;
        let admission = self.beside(turn.admit(call)).await;
        let (entry, event) = match admission {
            Admission::Settled(out) => {
                self.end((i, out, Usage::default()));
                return;
            }
            Admission::Run { entry, event } => (entry, event),
        };
        let run = self.turn.run(entry, event);
        let run: BoxFuture<'t, Ended> = Box::pin(async move {
            let (out, spent) = run.await;
            (i, out, spent)
        });
        if !beside {
            let ended = run.await;
            self.end(ended);
            return;
        }
        while self.running.len() >= self.cap {
            if let Some(ended) = self.running.next().await {
                self.end(ended);
            }
        }
        self.running.push(run);
        // Start it now (up to its first wait), not when something next waits: its `tool_start`
        // comes before the next call's gate, and a host tool is on its way.
        while let Poll::Ready(Some(ended)) = futures::poll!(self.running.next()) {
            self.end(ended);
        }
    }

    /// Take the reply's next call after one of its calls suspended: gated and asked while the
    /// calls already running go on, never run. A call that waits for the resume gets
    /// `waiting` as its slot's result, which the turn does not hand on into the conversation
    /// (it knows which calls wait).
    pub(crate) async fn take_held(
        &mut self,
        call: &ToolCall,
        settled: Option<ToolOutput>,
        waiting: ToolOutput,
    ) {
        let i = self.finished.len();
        self.finished.push(None);
        let out = match settled {
            Some(out) => Some(out),
            None => {
                let turn = self.turn;
                self.beside(turn.hold(call)).await
            }
        };
        self.end((i, out.unwrap_or(waiting), Usage::default()));
    }

    /// Wait for `admit` while the calls already running go on.
    async fn beside<F: std::future::Future>(&mut self, admit: F) -> F::Output {
        tokio::pin!(admit);
        loop {
            tokio::select! {
                biased;
                a = &mut admit => break a,
                Some(ended) = self.running.next(), if !self.running.is_empty() => {
                    self.end(ended);
                }
            }
        }
    }

    /// Hand on the results that are in, in the model's order (`calls` are the reply's calls,
    /// the ones taken first).
    pub(crate) fn hand_on<'c>(
        &mut self,
        calls: &'c [ToolCall],
        done: &mut impl FnMut(&'c ToolCall, ToolOutput, Usage),
    ) {
        while let Some((out, spent)) = self.finished.get_mut(self.next).and_then(Option::take) {
            done(&calls[self.next], out, spent);
            self.next += 1;
        }
    }

    /// Wait for every running call, handing the results on in the model's order.
    pub(crate) async fn finish<'c>(
        mut self,
        calls: &'c [ToolCall],
        done: &mut impl FnMut(&'c ToolCall, ToolOutput, Usage),
    ) {
        self.hand_on(calls, done);
        while let Some(ended) = self.running.next().await {
            self.end(ended);
            self.hand_on(calls, done);
        }
    }
}
