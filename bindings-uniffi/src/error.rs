//! The one error type every fallible call of the binding raises, and that host callbacks throw.

use contenox::HostError;

/// Everything that can go wrong outside a turn, plus what host code raises.
///
/// Kotlin sees it as `ContenoxException` (a sealed class, one subclass per variant), Swift as
/// `ContenoxError`. Inside a turn nothing is raised: failures are the outcome and events.
///
/// Host callbacks (tools, hooks, wait_for) may throw it; any other exception they throw arrives as
/// [`ContenoxError::Unexpected`] (through `From<UnexpectedUniFFICallbackError>`). Either way the
/// engine turns it into an error result the model sees; nothing panics.
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum ContenoxError {
    /// The configuration is invalid (bad JSON, unknown key, missing model, bad allowlist...).
    #[error("invalid configuration: {detail}")]
    Config {
        /// What is wrong.
        detail: String,
    },
    /// A tool could not be registered (bad name, bad schema...).
    #[error("invalid tool: {detail}")]
    Tool {
        /// What is wrong.
        detail: String,
    },
    /// The model server answered with an HTTP error (from `listModels`).
    #[error("model server answered HTTP {status}: {body}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// The response body, cut to a sane length.
        body: String,
    },
    /// The model server could not be reached, or its answer could not be read.
    #[error("model transport error: {detail}")]
    Transport {
        /// What went wrong.
        detail: String,
    },
    /// The operation was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// A value given as JSON text is not valid JSON, or does not have the expected shape.
    #[error("invalid JSON: {detail}")]
    Json {
        /// What is wrong.
        detail: String,
    },
    /// A file system error outside any tool.
    #[error("I/O error: {detail}")]
    Io {
        /// What went wrong.
        detail: String,
    },
    /// Raised by host code (a tool, a hook, a wait_for): the model sees `detail` as the error
    /// result of that call.
    #[error("{detail}")]
    Host {
        /// The message the model sees.
        detail: String,
    },
    /// A host callback threw something that is not a `ContenoxException` / `ContenoxError`
    /// (for example a Kotlin `RuntimeException`); `reason` is its text.
    #[error("{reason}")]
    Unexpected {
        /// The foreign exception, as text.
        reason: String,
    },
}

impl From<uniffi::UnexpectedUniFFICallbackError> for ContenoxError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        ContenoxError::Unexpected { reason: e.reason }
    }
}

impl From<contenox::Error> for ContenoxError {
    fn from(e: contenox::Error) -> Self {
        match e {
            contenox::Error::Config(detail) => ContenoxError::Config { detail },
            contenox::Error::Tool(detail) => ContenoxError::Tool { detail },
            contenox::Error::Http { status, body, .. } => ContenoxError::Http { status, body },
            contenox::Error::Transport(detail) => ContenoxError::Transport { detail },
            contenox::Error::Cancelled => ContenoxError::Cancelled,
            contenox::Error::Serde(e) => ContenoxError::Json {
                detail: e.to_string(),
            },
            contenox::Error::Io(e) => ContenoxError::Io {
                detail: e.to_string(),
            },
            // `contenox::Error` is non-exhaustive: a kind added later keeps its message.
            other => ContenoxError::Transport {
                detail: other.to_string(),
            },
        }
    }
}

impl From<ContenoxError> for HostError {
    /// What the model sees when a host callback fails: a `Host` error's own text, an unexpected
    /// exception's text, or the error's message.
    fn from(e: ContenoxError) -> Self {
        match e {
            ContenoxError::Host { detail } => HostError::new(detail),
            ContenoxError::Unexpected { reason } => HostError::new(reason),
            other => HostError::new(other.to_string()),
        }
    }
}

/// Parse JSON text the host gave; `what` names it in the error.
pub(crate) fn parse_json(what: &str, text: &str) -> Result<serde_json::Value, ContenoxError> {
    serde_json::from_str(text).map_err(|e| ContenoxError::Json {
        detail: format!("{what}: {e}"),
    })
}
