//! How the command fails: a message for stderr and an exit code.

/// Exit code of a run or command that could not do its work (a turn that ended in error).
pub const EXIT_FAILED: i32 = 1;
/// Exit code of bad input: a flag, a name, a file that is wrong. Nothing was changed.
pub const EXIT_USAGE: i32 = 2;
/// Exit code after Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: i32 = 130;

/// A failure of the command.
#[derive(Debug)]
pub struct CliError {
    /// The process's exit code.
    pub code: i32,
    /// What went wrong, for stderr. Never holds a header value or an injected value.
    pub message: String,
}

impl CliError {
    /// Bad input (exit 2).
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// The work failed (exit 1).
    pub fn failed(message: impl Into<String>) -> CliError {
        CliError {
            code: EXIT_FAILED,
            message: message.into(),
        }
    }
}

/// Shorthand.
pub type CliResult<T> = Result<T, CliError>;
