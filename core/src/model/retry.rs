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
    /// The server refused the model's own reply as a malformed tool call (Groq's
    /// `tool_use_failed`): what to tell the model, which may write the call again.
    pub malformed_call: Option<String>,
    /// The failure is one another model may not have (an overload, a rate limit, a server
    /// error, a failed connection or a timeout, before any byte of an answer): a `fallback`
    /// model may be tried.
    pub fall_back: bool,
    /// The last attempt's HTTP status, when there was one.
    pub status: Option<u16>,
}

/// What to tell the model when the server refused its reply as a malformed tool call (Groq
/// answers HTTP 400 `{"error": {"code": "tool_use_failed", "failed_generation": ...}}`).
pub(crate) fn malformed_call(f: &Failure) -> Option<String> {
    let Failure::BeforeData {
        status: Some(400),
        message,
        ..
    } = f
    else {
        return None;
    };
    if !message.contains("tool_use_failed") {
        return None;
    }
    let body: Option<serde_json::Value> = message
        .find('{')
        .and_then(|at| serde_json::from_str(&message[at..]).ok());
    let error = body.as_ref().map(|b| &b["error"]);
    if error.is_some_and(|e| !e.is_null() && e["code"] != "tool_use_failed") {
        return None;
    }
    let generation = error
        .and_then(|e| e["failed_generation"].as_str())
        .filter(|g| !g.trim().is_empty());
    let mut note = String::from(
        "Your last reply tried to call a tool, but the call was malformed and the server \
         refused it",
    );
    if let Some(why) = error.and_then(|e| e["message"].as_str()) {
        note.push_str(&format!(" ({why})"));
    }
    if let Some(g) = generation {
        // Cut: the model's own malformed output goes back to it, not an unbounded copy.
        let g: String = g.chars().take(2000).collect();
        note.push_str(&format!(". What you wrote:\n{g}"));
    }
    note.push_str(
        "\nCall the tool again with its name and valid JSON arguments, as the tool's schema \
         asks, or answer without it.",
    );
    Some(note)
}

/// Send `body` until it succeeds, fails for good, or the retries run out. Emits `request` before
/// each attempt and `retry` before each wait.
pub(crate) async fn complete_with_retry(
    backend: &dyn Backend,
    body: &super::RequestBody,
    policy: &RetryPolicy,
    sink: &EventSink,
    index: u32,
    on_call: Option<&(dyn Fn(&super::RawCall) + Send + Sync)>,
) -> Result<ModelResponse, RequestFailed> {
    let deltas = |delta: super::Delta<'_>| match delta {
        super::Delta::Call(call) => {
            if let Some(on_call) = on_call {
                on_call(call)
            }
        }
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
        let traceparent = sink.chat_traceparent();
        match crate::telemetry::with_traceparent(traceparent, backend.send(body, &deltas)).await {
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
                let malformed_call = malformed_call(&f).map(|note| backend.redact(&note));
                let (fall_back, status) = match &f {
                    Failure::BeforeData {
                        retryable, status, ..
                    } => (*retryable, *status),
                    Failure::Fatal(_) => (false, None),
                };
                return Err(RequestFailed {
                    fall_back,
                    status,
                    message: if tries > 1 {
                        format!("{msg} (after {tries} attempts)")
                    } else {
                        msg
                    },
                    context_overflow,
                    malformed_call,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::model::scripted::Scripted;
    use crate::model::RequestBody;
    use crate::script::{ScriptEntry, ScriptError};

    /// A 429 from the scripted server, with `Retry-After` when given (in milliseconds).
    fn too_many(retry_after_ms: Option<u64>) -> ScriptEntry {
        ScriptEntry {
            error: Some(ScriptError {
                status: 429,
                retry_after_s: retry_after_ms.map(|ms| ms as f64 / 1000.0),
                body: Some("slow down".into()),
            }),
            ..Default::default()
        }
    }

    /// Runs the retry loop over the scripted server (bounded: a wait that ignored the policy
    /// fails here instead of hanging): its result, the `retry` events' `wait_ms`, and how long
    /// it took (at least the waits: a sleep never ends early).
    async fn run(
        script: Vec<ScriptEntry>,
        policy: &RetryPolicy,
    ) -> (Result<ModelResponse, RequestFailed>, Vec<u64>, Duration) {
        let backend = Scripted::new(script);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = EventSink::new(tx);
        let started = Instant::now();
        let out = tokio::time::timeout(
            Duration::from_secs(20),
            complete_with_retry(&backend, &RequestBody::new(), policy, &sink, 0, None),
        )
        .await
        .expect("the retry loop kept waiting past its policy");
        let took = started.elapsed();
        drop(sink);
        let mut waits = Vec::new();
        while let Some(e) = rx.recv().await {
            if let Event::Retry { wait_ms, .. } = e {
                waits.push(wait_ms);
            }
        }
        (out, waits, took)
    }

    /// Backoff far from the Retry-After values below, so a wait that took one for the other
    /// shows.
    const POLICY: RetryPolicy = RetryPolicy {
        max_retries: 3,
        initial_backoff_ms: 5,
        max_backoff_ms: 5,
        max_retry_after_ms: 400,
    };

    #[tokio::test]
    async fn retry_after_is_the_wait() {
        let (out, waits, took) =
            run(vec![too_many(Some(250)), ScriptEntry::text("ok")], &POLICY).await;
        assert_eq!(out.unwrap().text, "ok");
        assert_eq!(waits, vec![250]);
        assert!(took >= Duration::from_millis(250), "{took:?}");
    }

    #[tokio::test]
    async fn retry_after_is_capped_at_max_retry_after_ms() {
        // A server asking for an hour gets `max_retry_after_ms`.
        let (out, waits, took) = run(
            vec![too_many(Some(3_600_000)), ScriptEntry::text("ok")],
            &POLICY,
        )
        .await;
        assert_eq!(out.unwrap().text, "ok");
        assert_eq!(waits, vec![400]);
        assert!(took >= Duration::from_millis(400), "{took:?}");
    }

    #[tokio::test]
    async fn without_retry_after_the_wait_is_the_backoff() {
        let policy = RetryPolicy {
            initial_backoff_ms: 100,
            max_backoff_ms: 150,
            ..POLICY
        };
        let script = vec![too_many(None), too_many(None), ScriptEntry::text("ok")];
        let (out, waits, took) = run(script, &policy).await;
        assert_eq!(out.unwrap().text, "ok");
        // 100 ms, then 200 ms capped at 150 ms, each ±20%.
        assert_eq!(waits.len(), 2, "{waits:?}");
        assert!((80..=120).contains(&waits[0]), "{waits:?}");
        assert!((120..=180).contains(&waits[1]), "{waits:?}");
        assert!(
            took >= Duration::from_millis(waits[0] + waits[1]),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn the_retries_run_out_and_say_how_many_attempts_were_made() {
        let policy = RetryPolicy {
            max_retries: 2,
            ..POLICY
        };
        let script = vec![
            too_many(Some(1)),
            too_many(Some(1)),
            too_many(Some(1)),
            ScriptEntry::text("ok"),
        ];
        let (out, waits, _) = run(script, &policy).await;
        let failed = out.unwrap_err();
        assert!(failed.message.contains("HTTP 429"), "{}", failed.message);
        assert!(
            failed.message.ends_with("(after 3 attempts)"),
            "{}",
            failed.message
        );
        assert_eq!(waits, vec![1, 1]);
    }

    fn refused(status: u16, body: &str) -> Failure {
        Failure::BeforeData {
            status: Some(status),
            message: format!("model server answered HTTP {status}: {body}"),
            retry_after: None,
            retryable: false,
        }
    }

    #[test]
    fn groq_tool_use_failed_is_told_to_the_model() {
        let groq = r#"{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=weather{\"city\": \"Oslo\"</function>"}}"#;
        let note = malformed_call(&refused(400, groq)).unwrap();
        assert!(note.contains("Failed to call a function"), "{note}");
        assert!(
            note.contains(r#"<function=weather{"city": "Oslo"</function>"#),
            "{note}"
        );
        // Another 400, another status, or another code is not a malformed call.
        assert_eq!(
            malformed_call(&refused(400, r#"{"error":{"code":"invalid_api_key"}}"#)),
            None
        );
        assert_eq!(malformed_call(&refused(500, groq)), None);
        assert_eq!(
            malformed_call(&refused(
                400,
                r#"{"error":{"code":"other","message":"tool_use_failed"}}"#
            )),
            None
        );
        // A body cut short still names the code: the model is told, without the generation.
        let cut = &groq[..groq.rfind("failed_generation").unwrap() + 5];
        assert!(malformed_call(&refused(400, cut)).is_some());
        assert_eq!(
            malformed_call(&Failure::Fatal("tool_use_failed".into())),
            None
        );
    }
}
