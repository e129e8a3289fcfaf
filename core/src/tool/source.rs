//! Tool sources that want a word before each turn of a client they were registered into: a
//! remote hook that was unreachable is probed again there, so its tools are offered from the
//! turn's first model request once the service answers.

use std::sync::{Arc, Mutex, Weak};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

/// A source polled once at the start of every turn, before the first model request.
#[async_trait]
pub(crate) trait BeforeTurn: Send + Sync + 'static {
    /// Do what the source needs before the turn's first request (bounded by the source's own
    /// limits; the turn waits for it, or stops waiting when `cancel` fires).
    async fn before_turn(&self, cancel: &CancellationToken);
}

/// The sources a client polls before each turn. Held weakly: a source's life is its host's
/// business, and a dropped source is simply no longer polled.
#[derive(Default)]
pub(crate) struct BeforeTurnList {
    sources: Mutex<Vec<Weak<dyn BeforeTurn>>>,
}

impl BeforeTurnList {
    /// Poll `source` before every turn from now on (once, however often it is added).
    pub fn add(&self, source: Weak<dyn BeforeTurn>) {
        let mut sources = self.sources.lock().expect("before-turn lock");
        sources.retain(|s| s.strong_count() > 0);
        if !sources.iter().any(|s| Weak::ptr_eq(s, &source)) {
            sources.push(source);
        }
    }

    /// Poll every live source at once; returns when all are done or `cancel` fires.
    pub async fn run(&self, cancel: &CancellationToken) {
        let live: Vec<Arc<dyn BeforeTurn>> = {
            let sources = self.sources.lock().expect("before-turn lock");
            sources.iter().filter_map(Weak::upgrade).collect()
        };
        if live.is_empty() {
            return;
        }
        let all = futures::future::join_all(live.iter().map(|s| s.before_turn(cancel)));
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {}
            _ = all => {}
        }
    }
}
