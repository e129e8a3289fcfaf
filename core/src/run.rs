//! A running turn as the host holds it: [`Run`] (its events, its cancel, its result), and the
//! [`RunOptions`] a turn starts with.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::event::{Event, TurnResult};
use crate::tool::Allowlist;

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// An allowlist for this run only, intersected with the client's: it can only narrow.
    pub allow: Option<Allowlist>,
    /// An outside token that cancels the run.
    pub cancel: Option<CancellationToken>,
}

impl RunOptions {
    /// Narrow this run to the tools `patterns` allow (allowlist grammar).
    pub fn allow<S: AsRef<str>>(mut self, patterns: &[S]) -> Result<Self> {
        self.allow = Some(Allowlist::new(patterns)?);
        Ok(self)
    }

    /// Cancel the run when `token` is cancelled.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

/// A running turn: its events, its cancel, its result. Dropping it before the turn ended cancels
/// the turn.
pub struct Run {
    events: UnboundedReceiver<Event>,
    cancel: CancellationToken,
    handle: Option<JoinHandle<TurnResult>>,
    /// Set once `turn_end` was handed out: the stream ends there even if a tool kept a clone of
    /// the turn's event sink alive.
    ended: bool,
}

impl Run {
    pub(crate) fn new(
        events: UnboundedReceiver<Event>,
        cancel: CancellationToken,
        handle: JoinHandle<TurnResult>,
    ) -> Self {
        Run {
            events,
            cancel,
            handle: Some(handle),
            ended: false,
        }
    }

    /// The next event; `None` after `turn_end`.
    pub async fn next_event(&mut self) -> Option<Event> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let polled = self.events.poll_recv(cx);
        if let Poll::Ready(Some(Event::TurnEnd { .. })) = &polled {
            self.ended = true;
        }
        polled
    }

    /// Cancel the turn. It ends with outcome `cancelled` and a valid transcript.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The turn's cancel token.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Wait for the turn to end (events not read are dropped).
    pub async fn result(mut self) -> Result<TurnResult> {
        let handle = self.handle.take().expect("result is taken once");
        handle
            .await
            .map_err(|e| Error::Transport(format!("the turn's task failed: {e}")))
    }
}

impl Stream for Run {
    type Item = Event;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.poll_event(cx)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(h) = &self.handle {
            if !h.is_finished() {
                self.cancel.cancel();
            }
        }
    }
}
