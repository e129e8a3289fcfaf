//! `client.run()` and `client.run_chain()`: a turn whose events nobody reads.
//!
//! Such a turn runs without an event stream (the engine's `run_with`, whose sink drops events
//! where they are made) and hands its result over by value: going through `stream_with` would
//! queue every event for nobody and clone the whole result (transcript included) out of the
//! `Run`. The turn is spawned on the engine's runtime with an outside cancel token, so that
//! dropping the awaiting future (the asyncio future was cancelled) cancels the turn, which then
//! ends as `cancelled` with a valid transcript, as a dropped `Run` does, instead of being cut off
//! mid-step.

use std::any::Any;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use contenox::{CancellationToken, TurnResult};

use crate::runtime::runtime;

/// Spawn `turn`, which runs with `cancel` as its outside token, and return the future of its
/// result. Dropping that future (or its completion) cancels `cancel`: the engine's link from
/// the outside token to the turn's own then ends too. `running` counts the turn until its task
/// ends, also when nobody awaits it any more (see [`Running`]).
pub(crate) fn spawn<F>(
    turn: F,
    cancel: CancellationToken,
    running: &Running,
) -> impl Future<Output = contenox::Result<TurnResult>> + Send + 'static
where
    F: Future<Output = contenox::Result<TurnResult>> + Send + 'static,
{
    let counted = running.enter();
    let handle = runtime().spawn(async move {
        let _counted = counted;
        turn.await
    });
    // The guard is made here, not inside the future: a future dropped before its first poll
    // (an asyncio future cancelled before the runtime got to the task awaiting it) must cancel
    // the turn too, or the turn runs on with nobody to end it.
    let cancel_on_drop = cancel.drop_guard();
    async move {
        let _cancel_on_drop = cancel_on_drop;
        match handle.await {
            Ok(result) => result,
            Err(e) if e.is_panic() => Err(contenox::Error::Internal(panic_text(&*e.into_panic()))),
            Err(_) => Err(contenox::Error::Internal(
                "the turn's task ended without a result (its runtime shut down)".into(),
            )),
        }
    }
}

/// The message of a turn's panic, worded as the engine's `Run` words it.
fn panic_text(panic: &(dyn Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => format!("the turn panicked: {s}"),
        (_, Some(s)) => format!("the turn panicked: {s}"),
        _ => "the turn panicked".to_string(),
    }
}

/// How many quiet turns of one client are still running, counted from spawn to the end of the
/// turn's task. A cancelled `await client.run()` returns at once while its turn winds down
/// (tools told, commands killed, the transcript's `cancelled` results written); `run_sync` on
/// the asyncio path waits for that before re-raising Ctrl-C, as the native path does.
#[derive(Clone, Default)]
pub(crate) struct Running(Arc<AtomicUsize>);

/// One counted turn; uncounts on drop.
pub(crate) struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Running {
    fn enter(&self) -> Counted {
        self.0.fetch_add(1, Ordering::SeqCst);
        Counted(self.0.clone())
    }

    /// Wait (without the GIL) until no quiet turn runs, for at most `timeout`; true when none
    /// does. A signal handler's exception (a second Ctrl-C) ends the wait and is raised.
    pub(crate) fn wait_idle(&self, py: Python<'_>, timeout: Duration) -> PyResult<bool> {
        // None: a timeout too long to add to now, so no deadline.
        let deadline = Instant::now().checked_add(timeout);
        loop {
            if self.0.load(Ordering::SeqCst) == 0 {
                return Ok(true);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(false);
            }
            py.detach(|| std::thread::sleep(Duration::from_millis(5)));
            py.check_signals()?;
        }
    }
}
