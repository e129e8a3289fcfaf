//! The one error type every fallible call of the binding raises, and that host callbacks throw.

use contenox::HostError;

/// Everything that can go wrong outside a turn (one variant per kind of the engine's error; see
/// `contenox::Error` for who raises each and what to do), plus what host code raises. Kotlin:
/// `ContenoxException`, a sealed class (a `Transport` error's causes are its `cause`, see
/// `gen.sh`); Swift: `ContenoxError`. Host callbacks may throw it; anything else they throw
/// arrives as [`ContenoxError::Unexpected`]. The engine turns either into an error result the
/// model sees; nothing panics.
#[derive(Debug, thiserror::Error, uniffi::Error)]
pub enum ContenoxError {
    /// An option is invalid. `option` is its name as in the config JSON (`base_url`,
    /// `script[0]`; empty when no single option is at fault), `value` the bad value as JSON
    /// text, `reason` what is wrong and what is allowed; `detail` all of it in a sentence.
    #[error("{detail}")]
    Config {
        /// The whole message.
        detail: String,
        /// The option at fault.
        option: String,
        /// The bad value, as JSON text.
        value: Option<String>,
        /// What is wrong, and what is allowed.
        reason: String,
    },
    /// A tool could not be registered (bad name, bad schema...).
    #[error("invalid tool: {detail}")]
    Tool {
        /// What is wrong.
        detail: String,
    },
    /// The client was shut down: it runs no more turns.
    #[error("the client is closed")]
    Closed,
    /// A turn is running and the operation needs the client idle (`setTranscript`).
    #[error("{detail}")]
    Busy {
        /// What was refused.
        detail: String,
    },
    /// A transcript is not valid (a result without its call, a call without its result).
    #[error("invalid transcript: {detail}")]
    Transcript {
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
    /// The model server could not be reached, or its answer could not be read (from
    /// `listModels`). `causes`: the messages of the underlying errors, outermost first.
    #[error("{detail}")]
    Transport {
        /// What went wrong.
        detail: String,
        /// The cause chain, outermost first.
        causes: Vec<String>,
    },
    /// The engine failed where it should not (a turn's task panicked); a bug.
    #[error("internal error: {detail}")]
    Internal {
        /// What failed.
        detail: String,
    },
    /// `compact()` could not compact: the summary request failed (the conversation is
    /// unchanged).
    #[error("{detail}")]
    Compaction {
        /// Why.
        detail: String,
    },
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
    /// A checkpoint cannot be resumed: not a checkpoint, written by a newer engine, edited (its
    /// digest does not match), already resumed on this client, or an answer for a call that is
    /// not waiting (a wrong call id, or one already answered). Raised before anything runs.
    #[error("checkpoint refused: {detail}")]
    Checkpoint {
        /// Why.
        detail: String,
    },
    /// A stepped turn (`Stepper`) refused a result, changing nothing: no action waits for one
    /// (call `next()` first; the turn may be done), it is for another action (kind, step or
    /// call id), or it does not read. Raised by `Stepper.feed` / `perform` / `next` and
    /// `actionResultFromJson`; the caller gives the waiting action its own result.
    #[error("{detail}")]
    Step {
        /// Why.
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

/// The messages of the sources of `e`, outermost first.
fn causes(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    std::iter::successors(e.source(), |c| c.source())
        .map(|c| c.to_string())
        .collect()
}

impl From<contenox::Error> for ContenoxError {
    /// The one mapping of the engine's error kinds to this binding's.
    fn from(e: contenox::Error) -> Self {
        let detail = e.to_string();
        match e {
            contenox::Error::Config(c) => ContenoxError::Config {
                detail,
                option: c.option,
                value: c.value,
                reason: c.reason,
            },
            contenox::Error::Tool(detail) => ContenoxError::Tool { detail },
            contenox::Error::Closed => ContenoxError::Closed,
            contenox::Error::Busy(_) => ContenoxError::Busy { detail },
            contenox::Error::Transcript(detail) => ContenoxError::Transcript { detail },
            contenox::Error::Http { status, body, .. } => ContenoxError::Http { status, body },
            contenox::Error::Internal(detail) => ContenoxError::Internal { detail },
            contenox::Error::Compaction(detail) => ContenoxError::Compaction { detail },
            contenox::Error::Serde(e) => ContenoxError::Json {
                detail: e.to_string(),
            },
            contenox::Error::Io(e) => ContenoxError::Io {
                detail: e.to_string(),
            },
            contenox::Error::Checkpoint(detail) => ContenoxError::Checkpoint { detail },
            // Transport, and a kind added later: the message and its causes.
            other => ContenoxError::Transport {
                causes: causes(&other),
                detail,
            },
        }
    }
}

impl From<contenox::step::StepError> for ContenoxError {
    /// A stepped turn's refusal (the engine's own error type for it) as this binding's kind.
    fn from(e: contenox::step::StepError) -> Self {
        ContenoxError::Step { detail: e.0 }
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
