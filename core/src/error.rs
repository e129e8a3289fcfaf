//! The one error type of the crate.
//!
//! Errors are for misuse and configuration only: everything that happens *inside* a turn (a model
//! that fails, a tool that fails, a cancel) is reported through the turn's
//! [`Outcome`](crate::Outcome) and events, never as an `Err`.

use std::time::Duration;

/// Everything that can go wrong outside a turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is invalid (unknown style, missing model, bad allowlist pattern...).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A tool could not be registered (bad name, schema that does not compile...).
    #[error("invalid tool: {0}")]
    Tool(String),
    /// The model server answered with an HTTP error.
    #[error("model server answered HTTP {status}: {body}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// The response body, cut to a sane length.
        body: String,
        /// The server's Retry-After, when it sent one.
        retry_after: Option<Duration>,
    },
    /// The model server could not be reached, or its answer broke off or could not be read.
    #[error("model transport error: {0}")]
    Transport(String),
    /// The operation was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// `client.compact()` could not compact: the summary request or the host's compactor
    /// failed (the conversation is unchanged).
    #[error("{0}")]
    Compaction(String),
    /// A transcript or config could not be (de)serialized.
    #[error("serialization error: {0}")]
    Serde(#[from] serde_json::Error),
    /// A file system error outside any tool (for example saving a transcript).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// Shorthand for `Result<T, contenox::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Cut `s` to at most `max` bytes on a char boundary, marking the cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &s[..end], s.len() - end)
}
