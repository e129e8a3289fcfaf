//! `Run`: the engine's run handle as a UniFFI object. The engine hands out events in batches and
//! lets any number of callers await the result, so this only translates.

use crate::convert::TurnResult;
use crate::error::ContenoxError;
use crate::event::Event;

/// A running turn: its events, its cancel, its result. Freeing it (Kotlin `close()`, or the
/// garbage collector) before the turn ended cancels the turn, as the engine's own handle does.
#[derive(uniffi::Object)]
pub struct Run {
    run: contenox::Run,
}

impl Run {
    pub(crate) fn new(run: contenox::Run) -> Run {
        Run { run }
    }
}

#[uniffi::export(async_runtime = "tokio")]
impl Run {
    /// The next events: every event ready now, or (when none is) the next one and those behind
    /// it; an empty list once the stream ended (after `TurnEnd`). See the Kotlin `Run.events()`
    /// Flow and the Swift `Run.events` AsyncStream.
    pub async fn next_batch(&self) -> Vec<Event> {
        let batch = self.run.next_batch().await;
        batch.iter().filter_map(Event::from_core).collect()
    }

    /// Cancel the turn. It ends with outcome `Cancelled` and a valid transcript.
    pub fn cancel(&self) {
        self.run.cancel();
    }

    /// Whether the turn has ended.
    pub fn is_finished(&self) -> bool {
        self.run.is_finished()
    }

    /// Wait for the turn to end and return its result. May be called any number of times, also
    /// while events are being read.
    pub async fn result(&self) -> Result<TurnResult, ContenoxError> {
        Ok(self.run.result().await?.into())
    }
}
