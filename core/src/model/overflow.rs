//! Recognising a server's refusal of a request as longer than the model's context: compacting
//! the conversation and sending the request again may then succeed (see `crate::compact`).
//!
//! What real servers answer (HTTP 400 unless said otherwise):
//! - OpenAI: `{"error": {"code": "context_length_exceeded", "message": "This model's maximum
//!   context length is 8192 tokens. However, your messages resulted in ..."}}`; vLLM and other
//!   OpenAI-compatible servers reuse the "maximum context length" message;
//! - Anthropic: `{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt
//!   is too long: 208310 tokens > 200000 maximum"}}`;
//! - llama.cpp's server, and Ollama asked not to truncate (`truncate: false`): `{"error":
//!   {"type": "exceed_context_size_error", "message": "request (8889 tokens) exceeds the
//!   available context size (4096 tokens), try increasing it", ...}}`;
//! - Ollama: `{"error": "the input length exceeds the context length"}`, or with `shift: false`
//!   "the prompt is longer than the context length currently available to the model".

use super::Failure;

/// Phrases that only a context-length refusal carries, lower case.
const OVERFLOW_PHRASES: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "exceed_context_size_error",
    "exceeds the available context size",
    "exceeds the context length",
    "longer than the context length",
    "exceeds the context window",
];

/// Whether `failure` is the server saying the request does not fit the model's context.
pub(crate) fn is_context_overflow(failure: &Failure) -> bool {
    let message = match failure {
        // A refusal is an error status before any answer; a 429 or 401 never is one.
        Failure::BeforeData {
            status: Some(status),
            message,
            ..
        } if (400..600).contains(status) && *status != 429 && *status != 401 => message,
        Failure::BeforeData { .. } => return false,
        // Some servers report it as an error event of an (empty) stream.
        Failure::Fatal(message) => message,
    };
    let lower = message.to_lowercase();
    OVERFLOW_PHRASES.iter().any(|p| lower.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, body: &str) -> Failure {
        Failure::BeforeData {
            status: Some(status),
            message: format!("model server answered HTTP {status}: {body}"),
            retry_after: None,
            retryable: false,
        }
    }

    #[test]
    fn the_real_refusals_are_recognised() {
        let refusals = [
            http(
                400,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            ),
            http(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#,
            ),
            http(
                400,
                r#"{"error":{"code":400,"message":"request (8889 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8889,"n_ctx":4096}}"#,
            ),
            http(
                500,
                r#"{"error":"the input length exceeds the context length"}"#,
            ),
            http(
                400,
                r#"{"error":"the prompt is longer than the context length currently available to the model"}"#,
            ),
            Failure::Fatal(
                r#"the model server sent an error: {"code":400,"message":"request exceeds the available context size"}"#
                    .into(),
            ),
        ];
        for r in &refusals {
            assert!(is_context_overflow(r), "{r:?}");
        }
    }

    #[test]
    fn other_failures_are_not() {
        for f in [
            http(
                400,
                r#"{"error":{"message":"Invalid value for 'tools'","code":null}}"#,
            ),
            http(
                429,
                r#"{"error":{"message":"maximum context length reached for this minute"}}"#,
            ),
            http(401, "prompt is too long"),
            http(500, "scripted error 500"),
            Failure::BeforeData {
                status: None,
                message: "could not reach the model server: prompt is too long".into(),
                retry_after: None,
                retryable: true,
            },
            Failure::Fatal("the model's answer broke off".into()),
        ] {
            assert!(!is_context_overflow(&f), "{f:?}");
        }
    }
}
