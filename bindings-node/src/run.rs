//! A running turn as JavaScript sees it: batches of events, `cancel()`, and the result.
//!
//! Core's [`Run`] hands out events through `&mut self` and its result by value; JavaScript wants
//! both at once (`for await (const e of run)` while `run.result` is already a Promise). One task
//! per turn owns the `Run`: it forwards events until `turn_end`, then takes the result. The
//! JavaScript side reads events in batches (everything already there, at least one), so a fast
//! turn costs few crossings.

use std::sync::Arc;

use contenox::{CancellationToken, Event, Run};
use futures::future::{BoxFuture, FutureExt, Shared};
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::sync::{oneshot, Mutex};

use crate::client::{js_error, NativeTurnResult};
use crate::shape;

type TurnOutcome = std::result::Result<contenox::TurnResult, String>;

/// A running turn.
#[napi]
pub struct NativeRun {
    events: Arc<Mutex<UnboundedReceiver<Event>>>,
    cancel: CancellationToken,
    result: Shared<BoxFuture<'static, TurnOutcome>>,
}

impl NativeRun {
    /// Take over core's run handle. Needs the tokio runtime (napi's, entered for every call).
    pub(crate) fn start(mut run: Run) -> NativeRun {
        let cancel = run.cancel_token();
        let (tx, rx) = unbounded_channel();
        let (done, result) = oneshot::channel::<TurnOutcome>();
        tokio::spawn(async move {
            while let Some(event) = run.next_event().await {
                let end = matches!(event, Event::TurnEnd { .. });
                // A host that stopped reading only misses events.
                let _ = tx.send(event);
                if end {
                    break;
                }
            }
            let _ = done.send(run.result().await.map_err(|e| e.to_string()));
        });
        let result = async move {
            result
                .await
                .unwrap_or_else(|_| Err("the turn's task ended without a result".to_string()))
        }
        .boxed()
        .shared();
        NativeRun {
            events: Arc::new(Mutex::new(rx)),
            cancel,
            result,
        }
    }
}

#[napi]
impl NativeRun {
    /// The next events as a JSON array (all that are there, at least one), or `null` after
    /// `turn_end`.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<String>>> {
        let events = self.events.clone();
        env.spawn_future(async move {
            let mut rx = events.lock().await;
            let Some(first) = rx.recv().await else {
                return Ok(None);
            };
            let mut batch = vec![first];
            while let Ok(event) = rx.try_recv() {
                batch.push(event);
            }
            Ok(Some(shape::events(&batch)))
        })
    }

    /// Cancel the turn: it ends with outcome `cancelled` and a valid transcript.
    #[napi]
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The turn's result, once it ended.
    #[napi(ts_return_type = "Promise<NativeTurnResult>")]
    pub fn result<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, NativeTurnResult>> {
        let result = self.result.clone();
        env.spawn_future(async move { result.await.map(NativeTurnResult::from).map_err(js_error) })
    }
}
