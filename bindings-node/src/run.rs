//! A running turn as JavaScript sees it: batches of events, `cancel()`, and the result. The
//! engine's run hands out events in batches and lets any number of callers await its result, so
//! this only translates (a batch crosses as one JSON text: few crossings for a fast turn).

use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;

use crate::client::NativeTurnResult;
use crate::transcript::Snapshots;
use crate::{convert, error};

/// A running turn.
#[napi]
pub struct NativeRun {
    run: Arc<contenox::Run>,
    /// Its client's: the result's transcript shares messages with the client's other snapshots.
    snapshots: Arc<Snapshots>,
}

impl NativeRun {
    /// Take over core's run handle.
    pub(crate) fn new(run: contenox::Run, snapshots: Arc<Snapshots>) -> NativeRun {
        NativeRun {
            run: Arc::new(run),
            snapshots,
        }
    }
}

#[napi]
impl NativeRun {
    /// The next events as a JSON array (all that are there, at least one), or `null` after
    /// `turn_end`.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, Option<String>>> {
        let run = self.run.clone();
        env.spawn_future(async move {
            let batch = run.next_batch().await;
            Ok((!batch.is_empty()).then(|| convert::events(&batch)))
        })
    }

    /// Cancel the turn: it ends with outcome `cancelled` and a valid transcript.
    #[napi]
    pub fn cancel(&self) {
        self.run.cancel();
    }

    /// The turn's result, once it ended (any number of times).
    #[napi(ts_return_type = "Promise<NativeTurnResult>")]
    pub fn result<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, NativeTurnResult>> {
        let run = self.run.clone();
        let snapshots = self.snapshots.clone();
        env.spawn_future_with_callback(async move { Ok(run.result().await) }, move |env, r| {
            r.map(|r| NativeTurnResult::new(r, &snapshots))
                .map_err(|e| error::to_js(env, e))
        })
    }
}
