//! stdout that may close: `contenox hook show NAME | head -1` closes it once `head` has its line.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe is an `EPIPE` error, and `println!` panics on
//! it. The CLI keeps SIGPIPE ignored while it works (a dead MCP server's stdin or a closed socket
//! must never kill it mid-run); writes go through [`line`] / [`write`], which report a closed
//! stdout as [`CliError`] code [`EXIT_CLOSED_STDOUT`], and [`exit`] ends the process as tools that
//! never ignored the signal end: killed by SIGPIPE (a shell shows 141), nothing on stderr.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{CliError, CliResult};

/// Exit code of a command whose stdout was closed (128 + SIGPIPE, as shells report it).
pub const EXIT_CLOSED_STDOUT: i32 = 141;

static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write found stdout closed.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// The error a closed stdout ends a command with (no message: nothing to tell anyone).
pub fn closed_error() -> CliError {
    CliError {
        code: EXIT_CLOSED_STDOUT,
        message: String::new(),
    }
}

/// Write `text` to stdout and flush. A closed stdout (`EPIPE`) is [`closed_error`]; another
/// failure (a full disk behind a redirect) is an error saying so.
pub fn write(text: &str) -> CliResult<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            CLOSED.store(true, Ordering::Relaxed);
            Err(closed_error())
        }
        Err(e) => Err(CliError::failed(format!("cannot write to stdout: {e}"))),
    }
}

/// [`write`] `text` and a newline.
pub fn line(text: &str) -> CliResult<()> {
    write(&format!("{text}\n"))
}

/// End the process with `code`; [`EXIT_CLOSED_STDOUT`] ends it by SIGPIPE, as the shell's other
/// tools end on a closed pipe.
pub fn exit(code: i32) -> ! {
    if code == EXIT_CLOSED_STDOUT {
        // SAFETY: restoring the default action of SIGPIPE and raising it in this thread.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
    }
    std::process::exit(code)
}
