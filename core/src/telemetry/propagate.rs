//! `traceparent` on the engine's outgoing requests (telemetry on): a model request carries its
//! `chat` span's context, a remote or MCP tool call its `execute_tool` span's, so a server that
//! traces too continues the turn's trace.
//!
//! A model request is sent by the backend, several calls below the turn that knows the span: the
//! span's context travels in a task-local around the send instead of through every backend's
//! signature (the request is built and sent in the task that awaits it).

use std::future::Future;

tokio::task_local! {
    static OUTGOING: String;
}

/// Run `send` with `traceparent` as the header of the model requests it makes; `None` (telemetry
/// off, or no span open) adds nothing.
pub(crate) async fn with_traceparent<F: Future>(traceparent: Option<String>, send: F) -> F::Output {
    match traceparent {
        Some(value) => OUTGOING.scope(value, send).await,
        None => send.await,
    }
}

/// The `traceparent` a model request made now carries, if any.
pub(crate) fn outgoing_traceparent() -> Option<String> {
    OUTGOING.try_with(String::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_header_is_set_only_inside_the_scope() {
        assert_eq!(outgoing_traceparent(), None);
        let inside = with_traceparent(Some("00-ab-cd-01".into()), async { outgoing_traceparent() });
        assert_eq!(inside.await.as_deref(), Some("00-ab-cd-01"));
        assert_eq!(
            with_traceparent(None, async { outgoing_traceparent() }).await,
            None
        );
        assert_eq!(outgoing_traceparent(), None);
    }
}
