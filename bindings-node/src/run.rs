//! A running turn as JavaScript sees it: batches of events, `cancel()`, and the result. The
//! engine's run hands out events in batches and lets any number of callers await its result, so
//! this only translates (a batch crosses as one JSON text: few crossings for a fast turn).

use std::sync::Arc;

use contenox::{TurnResult, Usage};
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Result};
use napi_derive::napi;

use crate::transcript::{NativeTranscript, Snapshots};
use crate::{convert, error};

/// Token usage (`input_tokens` -> `inputTokens`).
#[napi(object, object_from_js = false)]
pub struct NativeUsage {
    /// Tokens the model read (the whole prompt, cached or not).
    pub input_tokens: i64,
    /// Tokens the model wrote.
    pub output_tokens: i64,
    /// Of `input_tokens`, those read from the server's prompt cache.
    pub cache_read_input_tokens: i64,
    /// Of `input_tokens`, those written to the server's prompt cache.
    pub cache_creation_input_tokens: i64,
    /// Of `output_tokens`, those the model spent reasoning.
    pub reasoning_tokens: i64,
}

impl From<Usage> for NativeUsage {
    fn from(u: Usage) -> Self {
        // Saturating: a count over i64 (a hostile server's) reads as the largest one.
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        NativeUsage {
            input_tokens: n(u.input_tokens),
            output_tokens: n(u.output_tokens),
            cache_read_input_tokens: n(u.cache_read_input_tokens),
            cache_creation_input_tokens: n(u.cache_creation_input_tokens),
            reasoning_tokens: n(u.reasoning_tokens),
        }
    }
}

/// What a finished turn returns.
#[napi(object, object_from_js = false)]
pub struct NativeTurnResult {
    /// `done` | `cancelled` | `max_turns` | `error` | `budget` | `output_invalid` | `suspended`.
    pub outcome: String,
    /// The text of the turn's last model response.
    pub final_text: String,
    /// Usage summed over the turn.
    pub usage: NativeUsage,
    /// What went wrong, for outcome `error`; which ceiling, for outcome `budget`.
    pub error: Option<String>,
    /// `refusal` | `content_filter` | `max_tokens`: why the last reply stopped short of a full
    /// answer, when it did.
    pub stop_reason: Option<String>,
    /// The validated answer of a turn with an `outputSchema`, as JSON text.
    pub output_json: Option<String>,
    /// The whole conversation after the turn.
    pub transcript: NativeTranscript,
    /// For outcome `suspended`: the checkpoint (JSON text) `resume` continues from.
    pub checkpoint: Option<String>,
    /// For outcome `suspended`: the requests waiting, as a JSON array in `waitFor`'s shape.
    pub pending_json: Option<String>,
}

impl NativeTurnResult {
    /// The engine's result, its transcript a snapshot of `snapshots` (its client's).
    pub(crate) fn new(r: TurnResult, snapshots: &Snapshots) -> Self {
        NativeTurnResult {
            outcome: r.outcome.as_str().to_string(),
            final_text: r.final_text,
            usage: r.usage.into(),
            error: r.error,
            stop_reason: r.stop_reason.map(|s| s.as_str().to_string()),
            output_json: r.output.map(|v| v.to_string()),
            transcript: NativeTranscript(snapshots.share(r.transcript)),
            checkpoint: r.checkpoint,
            pending_json: (!r.pending.is_empty()).then(|| {
                let each: Vec<String> = r
                    .pending
                    .iter()
                    .map(crate::convert::pending_request)
                    .collect();
                format!("[{}]", each.join(","))
            }),
        }
    }
}

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
