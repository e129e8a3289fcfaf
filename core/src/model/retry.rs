//! Sending a model request with retries: 429, 5xx and broken connections, with exponential
//! backoff and jitter, honouring Retry-After, and only while no byte of the answer had arrived.

use std::time::Duration;

use rand::Rng;

use super::overflow::is_context_overflow;
use super::{Backend, Failure, ModelResponse};
use crate::config::RetryPolicy;
use crate::event::Event;
use crate::tool::EventSink;

/// The wait before retry number `attempt` (0-based): exponential, capped, ±20% jitter.
pub(crate) fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let base = policy
        .initial_backoff_ms
        .saturating_mul(1u64 << attempt.min(20))
        .min(policy.max_backoff_ms);
    let jitter = rand::rng().random_range(0.8..=1.2);
    Duration::from_millis((base as f64 * jitter) as u64)
}

/// A model request that failed for good.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RequestFailed {
    /// The message the turn ends with.
    pub message: String,
    /// The server refused the request as over the model's context length (see
    /// `model::overflow`): compacting the conversation and sending it again may succeed.
    pub context_overflow: bool,
}

/// Send `body` until it succeeds, fails for good, or the retries run out. Emits `request` before
/// each attempt and `retry` before each wait.
pub(crate) async fn complete_with_retry(
    backend: &dyn Backend,
    body: &super::RequestBody,
    policy: &RetryPolicy,
    sink: &EventSink,
    index: u32,
) -> Result<ModelResponse, RequestFailed> {
    let deltas = |delta: super::Delta<'_>| match delta {
        super::Delta::Text(text) => sink.emit_with(|| Event::TextDelta {
            text: text.to_string(),
            agent: Vec::new(),
        }),
        super::Delta::Reasoning(text) => sink.emit_with(|| Event::ReasoningDelta {
            text: text.to_string(),
            agent: Vec::new(),
        }),
    };
    let mut attempt = 0u32;
    loop {
        sink.emit(Event::Request {
            index,
            attempt,
            agent: Vec::new(),
        });
        match backend.send(body, &deltas).await {
            Ok(resp) => return Ok(resp),
            Err(Failure::BeforeData {
                status,
                message,
                retry_after,
                retryable: true,
            }) if attempt < policy.max_retries => {
                let wait = match retry_after {
                    Some(ra) => ra.min(Duration::from_millis(policy.max_retry_after_ms)),
                    None => backoff(policy, attempt),
                };
                sink.emit(Event::Retry {
                    attempt,
                    status,
                    error: backend.redact(&message),
                    wait_ms: wait.as_millis() as u64,
                    agent: Vec::new(),
                });
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(f) => {
                let tries = attempt + 1;
                let msg = backend.redact(f.message());
                let context_overflow = is_context_overflow(&f);
                return Err(RequestFailed {
                    message: if tries > 1 {
                        format!("{msg} (after {tries} attempts)")
                    } else {
                        msg
                    },
                    context_overflow,
                });
            }
        }
    }
}
