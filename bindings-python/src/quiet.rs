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

use contenox::{CancellationToken, TurnResult};

use crate::runtime::runtime;

/// Spawn `turn`, which runs with `cancel` as its outside token, and return the future of its
/// result. Dropping that future (or its completion) cancels `cancel`: the engine's link from
/// the outside token to the turn's own then ends too.
pub(crate) fn spawn<F>(
    turn: F,
    cancel: CancellationToken,
) -> impl Future<Output = contenox::Result<TurnResult>> + Send + 'static
where
    F: Future<Output = contenox::Result<TurnResult>> + Send + 'static,
{
    let handle = runtime().spawn(turn);
    async move {
        let _cancel_on_drop = cancel.drop_guard();
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
