//! The one error type of the crate.
//!
//! Errors are for misuse and configuration only: everything that happens *inside* a turn (a model
//! that fails, a tool that fails, a cancel) is reported through the turn's
//! [`Outcome`](crate::Outcome) and events, never as an `Err`.
//!
//! Each variant says who returns it and what the host should do. Bindings map each kind to an
//! exception / error class of their own, and keep [`std::error::Error::source`] as the cause
//! chain (Python `__cause__`, JavaScript `cause`, Kotlin `cause`).

use std::time::Duration;

use crate::spelling::Spelling;

/// Everything that can go wrong outside a turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option is invalid: an unknown option or key, a value of the wrong type or out of
    /// range, a style without its `model` or `script`, a `base_url` that is not a URL, a root
    /// that is not a directory, a bad allowlist pattern, an unknown builtin, a bad MCP config.
    ///
    /// Returned by [`Config::from_json`](crate::Config::from_json) and its siblings,
    /// [`ClientBuilder::build`](crate::ClientBuilder::build), [`list_models`](crate::list_models),
    /// [`RunOptions::allow`](crate::RunOptions::allow) and
    /// [`McpConfig::from_json`](crate::McpConfig::from_json). The host should fix the option the
    /// [`ConfigError`] names; trying again unchanged fails the same way.
    #[error("invalid configuration: {0}")]
    Config(ConfigError),
    /// A tool could not be registered: a name outside `^[A-Za-z0-9_-]{1,64}$`, a reserved name,
    /// an input schema that is not an object schema or does not compile.
    ///
    /// Returned by [`Client::register`](crate::Client::register) and the builder's `tool`. Fix
    /// the tool's spec.
    #[error("invalid tool: {0}")]
    Tool(String),
    /// The client was closed ([`Client::close`](crate::Client::close)); it runs no more turns.
    ///
    /// Returned by `run`, `stream` and their `_with` forms. Build a new client (its transcript
    /// can be carried over).
    #[error("the client is closed")]
    Closed,
    /// The operation needs the client idle, but a turn is running (for example
    /// [`Client::set_transcript`](crate::Client::set_transcript) during a turn).
    ///
    /// Wait for the turn to end (or cancel it), then try again.
    #[error("{0} while a turn runs")]
    Busy(&'static str),
    /// A transcript is not valid: a tool result without its call, a call without its result.
    ///
    /// Returned by [`Transcript::from_json`](crate::Transcript::from_json) and
    /// [`Client::set_transcript`](crate::Client::set_transcript). The transcript was not
    /// produced by this engine or was edited; fix or discard it. Also when it holds images and
    /// the client's model takes none (`images: false`): restore it elsewhere or remove them.
    #[error("invalid transcript: {0}")]
    Transcript(String),
    /// The model server answered with an HTTP error outside a turn (from
    /// [`list_models`](crate::list_models)).
    ///
    /// 401/403: check the API key; 404: check `base_url`; 429 and 5xx: try again later
    /// (`retry_after`, when the server sent one, says when).
    #[error("model server answered HTTP {status}: {body}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// The response body, cut to a sane length.
        body: String,
        /// The server's Retry-After, when it sent one.
        retry_after: Option<Duration>,
    },
    /// The model server could not be reached, or its answer broke off or could not be read,
    /// outside a turn (from [`list_models`](crate::list_models)).
    ///
    /// [`source`](std::error::Error::source) is the underlying error (reqwest's, and below it
    /// the I/O error) for hosts that walk causes. Check that the server runs and `base_url`
    /// points at it; the failure may be passing.
    #[error("{message}")]
    Transport {
        /// What failed, in a sentence.
        message: String,
        /// The error that caused it, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
    /// The engine failed where it should not: a turn's task panicked, or its runtime shut down
    /// before it ended (from [`Run::result`](crate::Run::result)).
    ///
    /// A bug (or a host that shut its runtime down mid-turn). The conversation is as of the
    /// turn's last complete step; report it.
    #[error("internal error: {0}")]
    Internal(String),
    /// `client.compact()` could not compact: the summary request or the host's compactor
    /// failed (the conversation is unchanged).
    #[error("{0}")]
    Compaction(String),
    /// A transcript or config could not be (de)serialized.
    #[error("serialization error: {0}")]
    Serde(#[from] serde_json::Error),
    /// A file system error outside any tool (for example reading the current directory).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A checkpoint cannot be resumed: it is not a checkpoint, it was written by a newer engine
    /// (its `version`), its content does not match its digest (edited or corrupted), it was
    /// already resumed on this client, or an answer names a call that is not waiting for one
    /// (a wrong call id, or one already answered).
    ///
    /// Returned by [`Client::resume`](crate::Client::resume) and its siblings before anything
    /// runs: the conversation is unchanged. Resume the checkpoint the suspended turn returned,
    /// once, with answers keyed by the call ids of its `pending` requests.
    #[error("checkpoint refused: {0}")]
    Checkpoint(String),
}

/// What is wrong with a configuration, in the words of the host that gave it: the option as
/// that host spells it, the bad value, and what is allowed.
///
/// Its text reads `style: "nope" is not one of openai, openai-responses, anthropic, ollama, scripted`, or
/// `script[0]: unknown key "txt"; the keys are text, tool_calls, ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The option at fault, spelled as the host spells it (`base_url` in Rust, Python and
    /// Kotlin, `baseUrl` in JavaScript), with the path into a nested value (`script[0]`,
    /// `retry.max_retries`). Empty when no single option is at fault.
    pub option: String,
    /// The bad value as JSON text, when one value is at fault.
    pub value: Option<String>,
    /// What is wrong, and what is allowed.
    pub reason: String,
}

impl ConfigError {
    /// A problem with one option (`option` in the engine's snake_case spelling).
    pub fn new(option: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            option: option.into(),
            value: None,
            reason: reason.into(),
        }
    }

    /// The bad value, as JSON text.
    pub fn with_value(mut self, value: impl Into<String>) -> Self {
        self.value = Some(value.into());
        self
    }

    /// The same problem with the option's path spelled the host's way.
    pub fn spelled(mut self, spelling: Spelling) -> Self {
        self.option = spelling.path(&self.option);
        self
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.option.is_empty() {
            write!(f, "{}: ", self.option)?;
        }
        if let Some(value) = &self.value {
            write!(f, "{value} ")?;
        }
        f.write_str(&self.reason)
    }
}

impl Error {
    /// A configuration error no single option is at fault for (or whose option the caller adds
    /// with [`Error::for_option`]).
    pub fn config(reason: String) -> Self {
        Error::Config(ConfigError::new("", reason))
    }

    /// A transport error with its cause.
    pub fn transport(
        message: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Error::Transport {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// Name the option of a configuration error that names none yet.
    pub(crate) fn for_option(self, option: &str) -> Self {
        match self {
            Error::Config(mut e) if e.option.is_empty() => {
                e.option = option.to_string();
                Error::Config(e)
            }
            other => other,
        }
    }

    /// Spell the option of a configuration error the host's way.
    pub(crate) fn spelled(self, spelling: Spelling) -> Self {
        match self {
            Error::Config(e) => Error::Config(e.spelled(spelling)),
            other => other,
        }
    }
}

/// What kind of error an [`Error`] is, without its data: what a binding maps to its own error
/// class (one table per binding), and what a host can match on without naming every variant.
///
/// ```
/// use contenox::{Config, ErrorKind};
///
/// let err = Config::from_json(r#"{"no_such_option": true}"#).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::Config);
/// assert_eq!(err.kind().as_str(), "configuration");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::Config`].
    Config,
    /// [`Error::Tool`].
    Tool,
    /// [`Error::Closed`].
    Closed,
    /// [`Error::Busy`].
    Busy,
    /// [`Error::Transcript`].
    Transcript,
    /// [`Error::Http`].
    Http,
    /// [`Error::Transport`].
    Transport,
    /// [`Error::Internal`].
    Internal,
    /// [`Error::Compaction`].
    Compaction,
    /// [`Error::Serde`].
    Serialization,
    /// [`Error::Io`].
    Io,
    /// [`Error::Checkpoint`].
    Checkpoint,
}

impl ErrorKind {
    /// The kind's name, the same in every binding: `configuration`, `tool`, `closed`, `busy`,
    /// `transcript`, `http`, `transport`, `internal`, `compaction`, `serialization`, `io`,
    /// `checkpoint`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Config => "configuration",
            ErrorKind::Tool => "tool",
            ErrorKind::Closed => "closed",
            ErrorKind::Busy => "busy",
            ErrorKind::Transcript => "transcript",
            ErrorKind::Http => "http",
            ErrorKind::Transport => "transport",
            ErrorKind::Internal => "internal",
            ErrorKind::Compaction => "compaction",
            ErrorKind::Serialization => "serialization",
            ErrorKind::Io => "io",
            ErrorKind::Checkpoint => "checkpoint",
        }
    }
}

impl Error {
    /// The kind of this error (every variant has one; the match below has no catch-all, so a
    /// new variant cannot be added without its kind).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Config(_) => ErrorKind::Config,
            Error::Tool(_) => ErrorKind::Tool,
            Error::Closed => ErrorKind::Closed,
            Error::Busy(_) => ErrorKind::Busy,
            Error::Transcript(_) => ErrorKind::Transcript,
            Error::Http { .. } => ErrorKind::Http,
            Error::Transport { .. } => ErrorKind::Transport,
            Error::Internal(_) => ErrorKind::Internal,
            Error::Compaction(_) => ErrorKind::Compaction,
            Error::Serde(_) => ErrorKind::Serialization,
            Error::Io(_) => ErrorKind::Io,
            Error::Checkpoint(_) => ErrorKind::Checkpoint,
        }
    }
}

/// Shorthand for `Result<T, contenox::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error with its sources in one line, so "error sending request" says why (a source whose
/// text the line already holds is not repeated).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let msg = c.to_string();
        if !s.contains(&msg) {
            s.push_str(": ");
            s.push_str(&msg);
        }
        cur = c.source();
    }
    s
}

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
